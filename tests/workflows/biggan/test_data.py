"""The batch plan is resumable and splits global batches over processes; synthetic data is deterministic."""

from __future__ import annotations

from itertools import islice

import pytest
import torch

from workflows.biggan.data import BatchPlan, SyntheticImages
from workflows.biggan.errors import WorkloadConfigError


def test_resuming_the_plan_continues_the_same_batches() -> None:
    whole = list(islice(iter(BatchPlan(50, 8, seed=3, rank=0, world_size=1)), 20))  # crosses epochs (6 per epoch)
    resumed = list(islice(iter(BatchPlan(50, 8, seed=3, rank=0, world_size=1, start=13)), 7))
    assert resumed == whole[13:]
    epoch0 = [i for b in whole[:6] for i in b]
    assert len(set(epoch0)) == 48  # no repeats within an epoch; 2 dropped
    assert whole[:6] != whole[6:12]  # a new permutation each epoch


def test_ranks_share_each_global_batch() -> None:
    one = list(islice(iter(BatchPlan(40, 8, seed=1, rank=0, world_size=1)), 5))
    r0 = list(islice(iter(BatchPlan(40, 8, seed=1, rank=0, world_size=2)), 5))
    r1 = list(islice(iter(BatchPlan(40, 8, seed=1, rank=1, world_size=2)), 5))
    assert [a + b for a, b in zip(r0, r1)] == one


def test_too_small_data_set_is_an_error() -> None:
    with pytest.raises(WorkloadConfigError, match="fewer than train.batch_size=64"):
        BatchPlan(10, 64, seed=0, rank=0, world_size=1)


def test_synthetic_images_are_deterministic_and_class_dependent() -> None:
    a, b = SyntheticImages(20, 32, 4, seed=5), SyntheticImages(20, 32, 4, seed=5)
    x1, y1 = a[7]
    x2, y2 = b[7]
    assert torch.equal(x1, x2) and y1 == y2 == 3
    assert x1.shape == (3, 32, 32) and x1.min() >= -1 and x1.max() <= 1
    means = torch.stack([torch.stack([a[i][0].mean((1, 2)) for i in range(c, 20, 4)]).mean(0) for c in range(4)])
    assert torch.cdist(means, means).max() > 0.05  # classes differ in colour
    assert not torch.equal(SyntheticImages(20, 32, 4, seed=6)[7][0], x1)
