"""train.jsonl reading: segments of a resumed run, warm-up, cut-off lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.records.trainlog import (
    images_seen,
    lost_iterations,
    outcome,
    read_train_log,
    startup_s,
    steady_images_per_s,
    time_to_train,
)


def write(path: Path, events: list[dict], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events) + tail)
    return path


def seg(t0: float, rates: list[float], status: str = "success", stop: bool = True) -> list[dict]:
    ev = [{"event": "run_start", "time": t0, "iteration": 0, "config_sha256": "x"}]
    for i, r in enumerate(rates, 1):
        ev.append({"event": "train", "time": t0 + i, "iteration": i, "images_seen": i * 10, "images_per_s": r})
    if stop:
        ev.append(
            {"event": "run_stop", "time": t0 + len(rates) + 0.5, "status": status, "images_seen": len(rates) * 10}
        )
    return ev


def test_time_to_train_sums_segments_of_a_resumed_run(tmp_path: Path) -> None:
    log = read_train_log(write(tmp_path / "t.jsonl", seg(100, [1, 2, 3], "preempted") + seg(200, [4, 5])))
    total, problems = time_to_train(log)
    assert total == pytest.approx(3.5 + 2.5) and problems == []
    assert outcome(log) == "success" and images_seen(log) == 20


def test_warmup_is_dropped(tmp_path: Path) -> None:
    log = read_train_log(write(tmp_path / "t.jsonl", seg(0, [1, 100, 100, 100, 100])))
    assert list(steady_images_per_s(log)) == [100, 100, 100, 100]


def test_cut_off_line_and_missing_stop_are_named(tmp_path: Path) -> None:
    log = read_train_log(write(tmp_path / "t.jsonl", seg(0, [5, 5], stop=False), tail='{"event": "tra'))
    assert any("last line (4) is incomplete" in p for p in log.problems)
    total, problems = time_to_train(log)
    assert total == 2.0 and "no run_stop" in problems[0] and "counted up to its last train line" in problems[0]


def test_missing_empty_and_garbage(tmp_path: Path) -> None:
    assert "missing" in read_train_log(tmp_path / "none.jsonl").problems[0]
    (tmp_path / "e.jsonl").write_text("")
    assert "empty" in read_train_log(tmp_path / "e.jsonl").problems[0]
    write(tmp_path / "g.jsonl", seg(0, [1]), tail="[1, 2]\nnot json\n")
    log = read_train_log(tmp_path / "g.jsonl")
    assert "2 line(s) are not valid events (first: line 4)" in log.problems[0]
    assert len(log.events) == 3


def test_a_killed_segment_counts_up_to_its_last_line_and_its_redone_work_is_lost(tmp_path: Path) -> None:
    """Killed at iteration 3 (no run_stop), resumed from iteration 1: the 3 s spent in the
    killed segment count in time to train, and iterations 2..3 were trained twice."""
    killed = seg(100, [1, 2, 3], stop=False)
    resumed = seg(200, [4, 5])
    resumed[0]["iteration"] = 1
    for e in resumed[1:]:
        if "iteration" in e:
            e["iteration"] += 1
    log = read_train_log(write(tmp_path / "t.jsonl", killed + resumed))
    total, problems = time_to_train(log)
    assert total == pytest.approx(3.0 + 2.5)
    assert lost_iterations(log) == 2


def test_time_going_backwards_is_a_named_problem_and_those_events_are_excluded(tmp_path: Path) -> None:
    events = seg(10000, [1, 2, 3])
    events.insert(2, {"event": "train", "time": 10000 - 3600, "iteration": 9, "images_per_s": 5.0})
    events[-1]["time"] = 10.0  # a run_stop an hour before its run_start: time to train would be negative
    log = read_train_log(write(tmp_path / "t.jsonl", events))
    assert any(
        "2 event(s) earlier than a line before them (clock went backwards; first: line 3)" in p for p in log.problems
    )
    # The stop an hour too early is excluded, so the segment reads as killed: counted up to
    # its last train line that kept time (10003 - 10000 s), never negative, and named.
    total, problems = time_to_train(log)
    assert total == pytest.approx(3.0)
    assert problems == ["segment 1 has no run_stop (job killed?); counted up to its last train line"]
    assert 5.0 not in list(steady_images_per_s(log))


def test_start_up_first_start_and_restarts_are_kept_apart(tmp_path: Path) -> None:
    """The first start compiles cold; restarts find the cache warm, so they are reported separately."""
    first, second, third = seg(100.0, [5.0], stop=False), seg(200.0, [5.0], stop=False), seg(300.0, [5.0])
    first.insert(2, {"event": "warmup", "time": 101.0, "iteration": 1, "warmup_s": 150.0, "compile_cache": "cold"})
    second.insert(2, {"event": "warmup", "time": 201.0, "iteration": 2, "warmup_s": 20.0, "compile_cache": "warm"})
    third.insert(2, {"event": "warmup", "time": 301.0, "iteration": 3, "warmup_s": 30.0, "compile_cache": "warm"})
    log = read_train_log(write(tmp_path / "t.jsonl", first + second + third))
    assert startup_s(log) == 150.0 and startup_s(log, restarts=True) == 25.0
    log = read_train_log(write(tmp_path / "one.jsonl", first))
    assert startup_s(log) == 150.0 and startup_s(log, restarts=True) is None
    assert startup_s(read_train_log(write(tmp_path / "none.jsonl", seg(0.0, [1.0])))) is None
