"""bench/analysis/run_index.py: one entry per run, written once, rebuilt when the record changed;
compare and report read whole records only for the runs they show."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.analysis import run_index
from bench.analysis.history import run_entry
from bench.analysis.run_index import index_entries, index_file, index_placed, read_index
from bench.analysis.select_compare import select_and_compare
from bench.errors import AtlasError
from bench.records.read import find_runs, load_run
from tests.synthetic_records import RunSpec, write_run

OLD, NEW = "a" * 40, "b" * 40


def tree(results: Path) -> list[Path]:
    """Two commits, two environments, two runs each; NEW is the newer commit."""
    dirs = []
    for c, sha in enumerate((OLD, NEW)):
        for i, env in enumerate(("bare", "cloud", "bare", "cloud")):
            spec = RunSpec(env, f"{sha[0]}{i}", sha=sha, start=1.79e9 + c * 10_000 + i * 100, seed=c * 10 + i)
            dirs.append(write_run(results, spec))
    return dirs


def test_a_missing_entry_is_rebuilt_from_the_record_quietly_then_read_as_kept(tmp_path: Path) -> None:
    results = tmp_path / "results"
    dirs = tree(results)
    said = io.StringIO()
    first = read_index(results, stream=said)
    assert said.getvalue() == ""  # a run placed without a line (by hand, an older bench) is no news
    kept = [json.loads(line)["run_id"] for env_dir in {d.parent for d in dirs} for line in index_file(env_dir).open()]
    assert sorted(kept) == sorted(d.name for d in dirs)
    by_id = {r.run_id: r.entry for r in first}
    for run in find_runs(results):  # the same definition as the results branch's entry
        assert by_id[run.run_id] == json.loads(json.dumps(run_entry(run)))
    again = io.StringIO()
    assert [r.entry for r in read_index(results, stream=again)] == [r.entry for r in first]
    assert again.getvalue() == ""  # nothing rebuilt the second time


def test_a_changed_record_makes_its_entry_stale_and_it_is_rebuilt(tmp_path: Path) -> None:
    results = tmp_path / "results"
    dirs = tree(results)
    index_placed(dirs)
    path = dirs[0] / "run.json"
    meta = json.loads(path.read_text())
    meta["experiment"] = "changed-by-hand"
    path.write_text(json.dumps(meta, indent=2))
    os.utime(path, ns=(1, 1))  # a different stamp even on a coarse clock
    said = io.StringIO()
    entries = {r.run_id: r.entry for r in read_index(results, stream=said)}
    assert "rebuilt 1 run index entry from the record: bare/a0 (stale)" in said.getvalue()
    assert entries["a0"]["experiment"] == "changed-by-hand"


def test_an_entry_of_another_version_or_a_damaged_line_is_rebuilt(tmp_path: Path) -> None:
    results = tmp_path / "results"
    index_placed(tree(results))
    path = index_file(results / "cloud")
    lines = path.read_text().splitlines()
    saved = json.loads(lines[0])
    saved["entry"]["version"] = -1
    lines[0] = json.dumps(saved)
    lines[1] = lines[1][: len(lines[1]) // 2]  # a line cut short (a kill while appending)
    path.write_text("\n".join(lines) + "\n")
    said = io.StringIO()
    read_index(results, stream=said)
    assert f"cloud/{saved['run_id']} (of another version)" in said.getvalue() and "rebuilt 2" in said.getvalue()
    again = io.StringIO()
    read_index(results, stream=again)
    assert again.getvalue() == ""  # the rebuilt lines were appended, and the last line of a run wins


def test_the_index_file_is_neither_an_environment_nor_a_run(tmp_path: Path) -> None:
    results = tmp_path / "results"
    index_placed(tree(results))
    assert sorted({r.env for r in find_runs(results)}) == ["bare", "cloud"]
    assert len(find_runs(results)) == 8


def test_compare_reads_only_the_runs_of_the_commit_it_shows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "results"
    index_placed(tree(results))
    log = tmp_path / "read.log"  # a file: the records may be read by forked children (bench.analysis.parallel)

    def counted(run_dir: Path, env: str):
        with log.open("a") as fh:
            fh.write(Path(run_dir).name + "\n")
        return load_run(run_dir, env)

    def read() -> list[str]:
        names = sorted(log.read_text().split())
        log.unlink()
        return names

    monkeypatch.setattr(run_index, "load_record", counted)
    selected = select_and_compare(results)
    assert selected.sha == NEW and read() == ["b0", "b1", "b2", "b3"]
    assert len(selected.index) == 8  # every run's entry stays available (the report's history chart)
    assert select_and_compare(results, commit="aaaa").sha == OLD and read() == ["a0", "a1", "a2", "a3"]


def test_history_of_a_folder_reads_the_index(tmp_path: Path) -> None:
    results = tmp_path / "results"
    tree(results)
    entries = index_entries(results, "cloud", stream=io.StringIO())
    assert sorted(e["run_id"] for e in entries) == ["a1", "a3", "b1", "b3"]
    assert not index_file(results / "bare").exists()  # only what was asked was read


def test_no_runs_of_an_environment_names_those_present(tmp_path: Path) -> None:
    results = tmp_path / "results"
    tree(results)
    with pytest.raises(AtlasError, match=r"no runs of environment nowhere .* it has runs of bare, cloud"):
        select_and_compare(results, envs=["nowhere"])


def test_an_index_that_cannot_be_written_still_gives_the_entries(tmp_path: Path) -> None:
    """The index is a cache: where it cannot be written (here a folder is in its way; a
    read-only tree or a full disk alike) the entries are computed and the command goes on."""
    results = tmp_path / "results"
    tree(results)
    index_file(results / "bare").mkdir()
    said = io.StringIO()
    assert len(read_index(results, stream=said)) == 8
    assert index_file(results / "cloud").is_file() and said.getvalue() == ""
    again = io.StringIO()
    assert len(read_index(results, stream=again)) == 8  # computed again from the records
    assert not index_file(results / "bare").is_file() and again.getvalue() == ""


def test_check_of_one_commit(tmp_path: Path) -> None:
    results = tmp_path / "results"
    tree(results)
    repo = Path(__file__).resolve().parents[3]

    def check(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "bench", "check", str(results), *args],
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=300,
        )

    one = check("--commit", "bbbb")
    assert "4 run record(s) checked" in one.stdout, one.stdout + one.stderr
    every = check()
    assert "8 run record(s) checked" in every.stdout, every.stdout + every.stderr
    unknown = check("--commit", "cccc")
    assert unknown.returncode == 2 and "no runs of commit 'cccc'" in unknown.stderr
    assert "Traceback" not in unknown.stderr
