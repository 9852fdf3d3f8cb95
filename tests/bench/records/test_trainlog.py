"""train.jsonl reading: segments of a resumed run, warm-up, cut-off lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.records.trainlog import images_seen, outcome, read_train_log, steady_images_per_s, time_to_train


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
    assert total is None and "no run_stop" in problems[0]


def test_missing_empty_and_garbage(tmp_path: Path) -> None:
    assert "missing" in read_train_log(tmp_path / "none.jsonl").problems[0]
    (tmp_path / "e.jsonl").write_text("")
    assert "empty" in read_train_log(tmp_path / "e.jsonl").problems[0]
    write(tmp_path / "g.jsonl", seg(0, [1]), tail="[1, 2]\nnot json\n")
    log = read_train_log(tmp_path / "g.jsonl")
    assert "2 line(s) are not valid events (first: line 4)" in log.problems[0]
    assert len(log.events) == 3
