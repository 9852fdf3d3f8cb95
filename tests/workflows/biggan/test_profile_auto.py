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
from workflows.biggan.profile_window import AUTO_ITERS, steady_lines, train_lines, window_fit


def test_auto_is_the_default_and_null_or_a_count_can_be_asked_for() -> None:
    assert resolve("smoke")["train.profile_iters"] is None
    assert resolve("smoke", ["train.profile_iters=0"])["train.profile_iters"] == 0
    assert resolve("cifar")["train.profile_iters"] is None


@pytest.mark.parametrize(
    ("max_iters", "log_every", "fits"),
    [
        (20, 5, False),  # smoke: lines 5..20, steady 10..20; the window marks 5 and 10
        (8, 1, False),  # steady lines 2..8, the window marks 2..6
        (12, 1, False),  # 6 of 10 steady lines kept: under 80 %
        (40, 5, True),  # 6 of 7 kept
        (30, 1, True),
        (125_000, 100, True),  # cifar: the window lies inside the first (warm-up) line
        (150_000, 20, True),  # imagenet128
    ],
)
def test_the_window_fits_only_where_steady_images_per_s_keeps_its_lines(max_iters, log_every, fits) -> None:
    why = window_fit(0, max_iters, log_every)
    assert (why is None) == fits, why
    if not fits:
        assert why.startswith(f"too short: the window ({AUTO_ITERS} iterations) would leave ")


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
    assert doc["skipped"].startswith("too short: the window (5 iterations) would leave 2 of the 7 timed")
    assert doc["modules"] == {} and doc["top_operators"] == [] and doc["iterations"]["count"] == 0
    assert "profile window skipped: too short" in proc.stdout + proc.stderr
    assert not any(e.get("profiled") for e in events(run_dir))
    log = load_run(run_dir, "local", collected=False)
    assert log.profile is not None and log.profile["skipped"] == doc["skipped"]
    assert not [p for p in log.problems if "profile" in p]
    assert len(steady_images_per_s(log.train)) == 7  # every steady line timed (the first is warm-up)
