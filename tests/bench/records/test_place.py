"""The record's write side: atomic run.json updates that targets use after collection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.records.contract import samples_name
from bench.records.place import update_run_json, write_json_atomic


def test_update_merges_sections_and_computes_queue_wait(tmp_path: Path) -> None:
    write_json_atomic(
        tmp_path / "run.json",
        {
            "schema_version": 1,
            "scheduler": {
                "kind": "slurm",
                "job_id": "42",
                "submit_time": None,
                "start_time": 1000.0,
                "end_time": 1100.0,
                "queue_wait_s": None,
            },
            "hosts": ["a"],
        },
    )
    record = update_run_json(tmp_path, scheduler={"submit_time": 940.0}, hosts=["a", "b"])
    assert record["scheduler"]["job_id"] == "42"  # kept
    assert record["scheduler"]["queue_wait_s"] == 60.0
    assert record["hosts"] == ["a", "b"]
    assert json.loads((tmp_path / "run.json").read_text()) == record
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temporary left behind


def test_update_creates_a_record_when_none(tmp_path: Path) -> None:
    assert update_run_json(tmp_path, scheduler={"job_id": "x"})["schema_version"] == 1


def test_samples_name_is_a_safe_file_name() -> None:
    assert samples_name("node-1.mit.edu") == "samples-node-1.mit.edu.csv"
    assert samples_name("a/b c") == "samples-a_b_c.csv"


def test_copy_record_is_all_or_nothing(tmp_path: Path) -> None:
    from bench.records.place import copy_record

    src = tmp_path / "src"
    src.mkdir()
    (src / "run.json").write_text('{"schema_version": 1}\n')
    (src / "train.jsonl").write_text('{"event": "run_start", "time": 1}\n')
    (src / "samples-h1.csv").write_text("time\n1\n")
    (src / "checkpoints").mkdir()  # never part of the record
    results = tmp_path / "results" / "env"

    def fail(_tmp: Path) -> None:
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        copy_record(src, results / "r1", edit=fail)
    assert list(results.iterdir()) == []  # no half record, no leftover temp folder
    dest = copy_record(src, results / "r1", edit=lambda tmp: (tmp / "run.json").write_text('{"edited": 1}\n'))
    assert sorted(p.name for p in dest.iterdir()) == ["run.json", "samples-h1.csv", "train.jsonl"]
    assert (dest / "run.json").read_text() == '{"edited": 1}\n'
