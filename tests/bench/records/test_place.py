"""Collection's one writer: `place_run` places a run once, atomically, with the
environment's facts frozen in; nothing rewrites a placed record."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.atomic_files import write_json_atomic
from bench.environments.facts import environment_facts
from bench.environments.load import CLUSTERS_DIR, load_env
from bench.errors import AtlasError
from bench.records.contract import samples_name
from bench.records.place import place_run


def _source(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    write_json_atomic(
        src / "run.json",
        {
            "schema_version": 1,
            "run_id": "r1",
            "env": "local",
            "exit": {"status": "success", "code": 0, "signal": None},
            "start_time": 1000.0,
            "end_time": 1100.0,
            "scheduler": {"kind": "local", "job_id": None, "submit_time": None, "start_time": 1000.0},
        },
    )
    (src / "train.jsonl").write_text('{"event": "run_start", "time": 1000.5}\n')
    (src / "samples-h1.csv").write_text("time\n1000\n")
    (src / "checkpoints").mkdir()  # never part of the record
    return src


def _clusters(tmp_path: Path) -> Path:
    clusters = tmp_path / "clusters"
    shutil.copytree(CLUSTERS_DIR / "local", clusters / "local")
    return clusters


def _fetcher(src: Path, facts: dict):
    def fetch(into: Path) -> dict:
        for name in ("run.json", "train.jsonl", "samples-h1.csv"):
            shutil.copy2(src / name, into / name)
        return facts

    return fetch


def test_placing_freezes_the_scheduler_and_environment_facts_once(tmp_path: Path) -> None:
    env = load_env("local", _clusters(tmp_path))
    results = tmp_path / "results"
    placed = place_run(
        results, environment_facts(env), "r1", _fetcher(_source(tmp_path), {"submit_time": 940.0, "job_id": "7"})
    )
    assert placed.new and placed.path == results / "local" / "r1" and placed.problems == ()
    record = json.loads((placed.path / "run.json").read_text())
    assert record["scheduler"]["job_id"] == "7" and record["scheduler"]["queue_wait_s"] == 60.0
    facts = record["environment"]
    assert facts["kind"] == "local" and facts["cost"] == env.get("cost") and facts["hardware"] == env.get("hardware")
    assert facts["price_source"].startswith("clusters/local/env.yaml (sha256 ")
    assert sorted(p.name for p in placed.path.iterdir()) == ["run.json", "samples-h1.csv", "train.jsonl"]
    assert [p.name for p in (results / "local").iterdir()] == ["r1"]  # no temporary left behind

    before = (placed.path / "run.json").read_bytes()
    again = place_run(
        results, environment_facts(env), "r1", lambda into: pytest.fail("a placed run is never fetched again")
    )
    assert not again.new and (placed.path / "run.json").read_bytes() == before


def test_an_interrupted_fetch_leaves_nothing(tmp_path: Path) -> None:
    env = load_env("local", _clusters(tmp_path))
    src = _source(tmp_path)

    def broken(into: Path) -> dict:
        shutil.copy2(src / "train.jsonl", into / "train.jsonl")
        raise AtlasError("connection lost")

    with pytest.raises(AtlasError, match="connection lost"):
        place_run(tmp_path / "results", environment_facts(env), "r1", broken)
    assert list((tmp_path / "results" / "local").iterdir()) == []
    with pytest.raises(AtlasError, match="left no run.json"):
        place_run(tmp_path / "results", environment_facts(env), "r1", lambda into: {})
    assert list((tmp_path / "results" / "local").iterdir()) == []


def test_a_folder_in_the_way_is_named(tmp_path: Path) -> None:
    env = load_env("local", _clusters(tmp_path))
    (tmp_path / "results" / "local" / "r1").mkdir(parents=True)
    (tmp_path / "results" / "local" / "r1" / "notes.txt").write_text("mine")
    with pytest.raises(AtlasError, match="holds no run.json"):
        place_run(tmp_path / "results", environment_facts(env), "r1", _fetcher(_source(tmp_path), {}))


def test_editing_env_yaml_after_collection_changes_no_number(tmp_path: Path) -> None:
    """The acceptance check: rates are read from the record, never from clusters/."""
    from bench.analysis.compare import compare_runs
    from bench.records.read import find_runs
    from tests.synthetic_records import RunSpec, write_run

    clusters = _clusters(tmp_path)
    env = load_env("local", clusters)
    made = write_run(tmp_path / "made", RunSpec("local", "r1", environment=False))

    def fetch(into: Path) -> dict:
        for f in made.iterdir():
            shutil.copy2(f, into / f.name)
        return {}

    place_run(tmp_path / "results", environment_facts(env), "r1", fetch)
    before = compare_runs(find_runs(tmp_path / "results")).runs[0]
    assert before.cost_usd and before.cost_usd > 0
    path = clusters / "local" / "env.yaml"
    path.write_text(path.read_text().replace("node_capex_usd: 3000", "node_capex_usd: 900000"))
    after = compare_runs(find_runs(tmp_path / "results")).runs[0]
    assert after.cost_usd == before.cost_usd and after.cost_note == before.cost_note


def test_samples_name_is_a_safe_file_name() -> None:
    assert samples_name("node-1.mit.edu") == "samples-node-1.mit.edu.csv"
    assert samples_name("a/b c") == "samples-a_b_c.csv"
