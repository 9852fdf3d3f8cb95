"""The profile window on by default (train.profile_iters null = auto): it runs only where the
run keeps enough timed train lines for steady images/s, and says so where it does not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.records.read import load_run
from bench.records.trainlog import steady_images_per_s
from tests.workflows.biggan.conftest import events, run_workload
from workflows.biggan.config import resolve
from workflows.biggan.profile_window import steady_lines, train_lines, window_fit


def test_auto_is_the_default_and_null_or_a_count_can_be_asked_for() -> None:
    assert resolve("smoke")["train.profile_iters"] is None
    assert resolve("smoke", ["train.profile_iters=0"])["train.profile_iters"] == 0
    assert resolve("cifar")["train.profile_iters"] is None


@pytest.mark.parametrize(
    ("max_iters", "log_every", "fits"),
    [
        (20, 5, False),  # smoke: 5 iterations are a quarter of it
        (499, 1, False),  # 5 iterations are over 1 % of 499
        (500, 1, True),  # 1 %; the window marks lines 2..6, inside the first fifth (warm-up)
        (500, 100, True),  # it marks line 100, the warm-up line; 200..500 stay timed
        (500, 250, False),  # two lines: the first is marked, one timed line would be left
        (125_000, 100, True),  # cifar: the window lies inside the first (warm-up) line
        (150_000, 20, True),  # imagenet128
    ],
)
def test_the_window_fits_only_where_it_is_cheap_and_steady_images_per_s_keeps_its_lines(
    max_iters: int, log_every: int, fits: bool
) -> None:
    why = window_fit(0, max_iters, log_every)
    assert (why is None) == fits, why
    if not fits:
        assert why.startswith("too short: ")


def test_a_late_resumed_segment_is_judged_on_what_is_left_of_it() -> None:
    assert window_fit(0, 1000, 1, iters=10) is None
    why = window_fit(990, 1000, 1, iters=10)
    assert why == "too short: 10 profiled iterations would be more than 1% of its 10 iterations"


def test_a_run_bounded_by_time_is_not_profiled_by_auto() -> None:
    why = window_fit(0, 100_000, 5, max_seconds=600.0)
    assert why == "bounded by train.max_seconds: how many train lines it will write is not known ahead"


def test_the_fit_reads_the_lines_steady_images_per_s_reads() -> None:
    """steady_lines mirrors bench.records.trainlog.steady_images_per_s on the same lines."""
    from bench.records.trainlog import TrainLog

    for max_iters, log_every in ((20, 5), (8, 1), (40, 5), (3, 1), (2, 1)):
        lines = train_lines(0, max_iters, log_every)
        log = TrainLog(
            events=[{"event": "run_start", "time": 0.0, "iteration": 0}]
            + [{"event": "train", "time": float(i), "iteration": i, "images_per_s": float(i)} for i in lines]
        )
        assert sorted(steady_images_per_s(log).tolist()) == [float(i) for i in steady_lines(lines)]


@pytest.mark.slow
def test_a_short_default_run_skips_the_window_and_says_so(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc = run_workload(run_dir, "train.max_iters=8", "train.log_every=1", "train.sample_grid=false",
                        "train.checkpoint_every=0")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((run_dir / "profile.json").read_text())
    assert doc["skipped"] == "too short: 5 profiled iterations would be more than 1% of its 8 iterations"
    assert doc["modules"] == {} and doc["top_operators"] == [] and doc["iterations"]["count"] == 0
    assert "profile window skipped: too short" in proc.stdout + proc.stderr
    assert not any(e.get("profiled") for e in events(run_dir))
    log = load_run(run_dir, "local", collected=False)
    assert log.profile is not None and log.profile["skipped"] == doc["skipped"]
    assert not [p for p in log.problems if "profile" in p]
    assert len(steady_images_per_s(log.train)) == 7  # every steady line timed (the first is warm-up)
