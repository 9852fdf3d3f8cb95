"""Helpers for the import tests: run `bench import` / `bench compare` through the CLI,
check the record against the run-record contract, read back the per-run figures."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from bench.cli import main
from bench.records.contract import RUN_JSON_KEYS, SCHEMA_VERSION, read_run_json
from bench.records.read import find_runs, load_run
from bench.records.schema import schema_problems

SAMPLES = Path(__file__).parent / "samples"


def null_keys(record: dict[str, Any], prefix: str = "") -> set[str]:
    out: set[str] = set()
    for key, value in record.items():
        if value is None:
            out.add(prefix + key)
        elif isinstance(value, dict) and key not in ("import", "environment"):
            out |= null_keys(value, f"{prefix}{key}.")
    return out


def assert_valid_record(run_dir: Path) -> dict[str, Any]:
    """The record meets the contract bench/README.md states (the run-record JSON Schema,
    `bench check`'s checks), was placed as collection places one, and names what it lacks."""
    record = read_run_json(run_dir)
    assert schema_problems(record) == []
    assert record["schema_version"] == SCHEMA_VERSION
    assert record["environment"]["name"] == run_dir.parent.name  # frozen at placement (records.place)
    assert set(RUN_JSON_KEYS) <= set(record), set(RUN_JSON_KEYS) - set(record)
    assert record["run_id"] == run_dir.name and record["env"] == run_dir.parent.name
    assert set(record["facts_unknown"]) == null_keys(record)  # every null named, nothing else
    assert {"git.sha", "config_sha256", "exit.status"} <= set(record["facts_unknown"])  # never invented
    assert (run_dir / record["samples_file"]).is_file()
    run = load_run(run_dir)
    assert run.problems == []  # what `bench check` prints for this record: nothing
    assert [r.run_id for r in find_runs(run_dir.parent.parent) if r.problems] == []
    assert len(run.samples[next(iter(run.samples))]) == record["samples_rows"]
    return record


@pytest.fixture
def bench(capsys: pytest.CaptureFixture[str]):
    """bench(*argv) -> (exit code, stdout, stderr)."""

    def call(*argv: str | Path) -> tuple[int, str, str]:
        code = main([str(a) for a in argv])
        out = capsys.readouterr()
        return code, out.out, out.err

    return call


def compared(bench, results: Path, out: Path) -> dict[str, dict[str, str]]:
    """`bench compare --out`'s runs.csv, by run id (the figures the tables show)."""
    code, _, err = bench("compare", "--results", results, "--allow-different", "--out", out)
    assert code == 0, err
    with (out / "runs.csv").open() as fh:
        return {row["run_id"]: row for row in csv.DictReader(fh)}


def one_error_line(err: str, *parts: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("bench import: error: ")
    for part in parts:
        assert part in lines[0], (part, lines[0])
    assert "Traceback" not in err


def sources(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["file"]: s for s in record["import"]["sources"]}


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=1, default=str)
