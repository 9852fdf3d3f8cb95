"""Issue 31: a results branch whose index entries or packed files break their schema.

Real git repositories in tmp folders: runs archived with `bench archive --local`, one
index entry or stored file then changed by a commit on the branch, read back by
`bench history` and `bench report` (in process, as a user runs them)."""

from __future__ import annotations

import json
import lzma
import shutil
from pathlib import Path
from typing import Any

import pytest

from bench.cli import main
from bench.gitops.branch_entries import checked_entry
from bench.gitops.pack import decode_columns, encode_columns
from tests.gitrepo import git
from tests.synthetic_records import RunSpec, write_run


@pytest.fixture(scope="module")
def archived(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("branch") / "repo"
    work.mkdir()
    git(work, "init", "--quiet", "-b", "main")
    git(work, "commit", "--quiet", "--allow-empty", "-m", "start")
    for i in range(2):
        write_run(work / "results", RunSpec("moc", f"r{i}", sha=f"{i + 1}" * 40, gpus=1, duration_s=30))
    assert main(["archive", "--local", "--repo-dir", str(work), "--results", str(work / "results")]) == 0
    return work


def _tamper(archived: Path, tmp_path: Path, path: str, change) -> Path:
    """A copy of the repository whose results branch has `path` changed by one commit."""
    work = shutil.copytree(archived, tmp_path / "repo", symlinks=True)
    shutil.rmtree(work / "results")
    side = tmp_path / "side"
    git(work, "worktree", "add", "--quiet", str(side), "results")
    target = side / path
    target.write_bytes(change(target.read_bytes()))
    git(side, "commit", "--quiet", "-am", "tamper")
    git(work, "worktree", "remove", "--force", str(side))
    return work


def _entry(change_entry) -> Any:
    def change(raw: bytes) -> bytes:
        entry = json.loads(raw)
        out = change_entry(entry)
        return out if isinstance(out, bytes) else json.dumps(entry).encode()

    return change


ENTRY_CASES = {
    "metrics-list": (lambda e: e.__setitem__("metrics", [1, 2]), "metrics"),
    "commit-list": (lambda e: e.__setitem__("commit", ["a" * 40]), "commit"),
    "env-object": (lambda e: e.__setitem__("env", {"x": 1}), "env"),
    "provenance-list": (lambda e: e.__setitem__("provenance", ["x"]), "provenance"),
    "nested": (lambda e: b"[" * 100_000 + b"]" * 100_000, "nested deeper"),
    "files-string": (lambda e: e.__setitem__("files", "run.json"), "files"),
    "files-list": (lambda e: e.__setitem__("files", ["run.json"]), "files"),
    "no-sha256": (lambda e: e["files"]["run.json"].pop("sha256"), "sha256"),
    "escapes": (lambda e: e["provenance"].__setitem__("torch", "2.4\x1b]0;owned\x07\x1b[2J"), "provenance.torch"),
}


@pytest.mark.parametrize("case", sorted(ENTRY_CASES))
def test_history_and_report_read_a_damaged_index_entry_without_a_traceback(
    archived: Path, tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    change, named = ENTRY_CASES[case]
    work = _tamper(archived, tmp_path, "index/moc/r0.json", _entry(change))
    assert main(["history", "--repo-dir", str(work)]) == 0
    out = capsys.readouterr()
    assert named in out.err and "index/moc/r0.json" in out.err, out.err
    assert "\x1b" not in out.out + out.err
    monkeypatch.chdir(work)
    assert main(["report", "--results", str(work / "results"), "--out", str(tmp_path / "rep")]) == 0
    out = capsys.readouterr()
    assert "\x1b" not in out.out + out.err
    restored = sorted(p.name for p in (work / "results" / "moc").iterdir())
    assert "r1" in restored  # the sound run comes back
    if case in ("files-string", "files-list", "no-sha256"):
        assert "r0" not in restored  # never restored in part, never from a file list that breaks the schema
    assert {p.parent.name for p in (work / "results").rglob("run.json")} <= {"r0", "r1"}


def test_an_entry_is_held_to_its_schema_field_by_field() -> None:
    raw = json.dumps({"env": "moc", "run_id": "r1", "commit": "a" * 40, "metrics": {"wall_s": 5, "x": "NaN"},
                      "provenance": {"torch": "2.4\x1b[31m", "cuda": "12.4"}}).encode()  # fmt: skip
    entry, problems = checked_entry(raw, "index/moc/r1.json")
    assert entry is not None and entry["metrics"] == {"wall_s": 5} and entry["provenance"] == {"cuda": "12.4"}
    assert len(problems) == 2 and all("removed (unknown)" in p for p in problems)
    assert checked_entry(b"\xff\xfe", "e.json")[0] is None
    assert checked_entry(json.dumps({"env": "moc"}).encode(), "e.json")[0] is None


def _packed(header: Any) -> bytes:
    head = json.dumps(header).encode()
    return lzma.compress(len(head).to_bytes(8, "little") + head + b"1\n2")


@pytest.mark.parametrize(
    ("header", "named"),
    [
        (["not", "an", "object"], "is not of type 'object'"),
        ({"format": "atlas-columns/1", "rows": 2, "header": "time", "trailing_newline": False, "columns": []},
         "should be non-empty"),
        ({"format": "atlas-columns/1", "rows": 2, "header": "time", "trailing_newline": False,
          "columns": [{"kind": "decimal", "dtype": "object", "sizes": [1, 2]}]}, "'object' is not one of"),
    ],
    ids=["list", "no-columns", "dtype-object"],
)  # fmt: skip
def test_a_packed_header_outside_its_schema_is_one_value_error(header: Any, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        decode_columns(_packed(header))


def test_a_sound_samples_file_still_round_trips() -> None:
    raw = b"time,a\n1.5,2\n2.5,3\n"
    assert decode_columns(encode_columns(raw)) == raw
