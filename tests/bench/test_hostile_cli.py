"""Issue 22: each traceback of the audit is one line naming the problem and the fix, and
errors say what is actually wrong. Through the CLI's main, in-process."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench.cli import main
from bench.errors import AtlasError
from tests.synthetic_records import RunSpec, write_run


@pytest.fixture
def bench(capsys: pytest.CaptureFixture[str]):
    def call(*argv: str | Path) -> tuple[int, str, str]:
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:  # argparse's usage errors
            code = int(exc.code or 0)
        out = capsys.readouterr()
        return code, out.out, out.err

    return call


def one_line(err: str, *parts: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    for part in parts:
        assert part in lines[0], (part, lines[0])


@pytest.fixture
def runs_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "runs"
    (root / "local").mkdir(parents=True)
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(root))
    return root / "local"


def test_status_with_a_submit_json_commit_that_is_an_int(bench, runs_dir: Path) -> None:
    (runs_dir / "r1").mkdir()
    (runs_dir / "r1" / "submit.json").write_text(json.dumps({"pid": 2**22 + 7, "commit": 12345}))
    code, out, err = bench("status", "--env", "local")
    assert code == 0 and "Traceback" not in err
    assert "r1" in out
    code, out, err = bench("status", "--env", "local", "--commit", "123")
    assert code == 0 and "Traceback" not in err


def test_collect_skips_a_symlinked_run_folder(bench, runs_dir: Path, tmp_path: Path) -> None:
    real = write_run(tmp_path / "elsewhere", RunSpec("local", "r1"))
    (runs_dir / "r1").symlink_to(real, target_is_directory=True)
    code, out, err = bench("collect", "--env", "local", "--results", tmp_path / "results")
    assert "Traceback" not in err
    assert not (tmp_path / "results" / "local" / "r1").exists()


def test_a_planted_cancelled_link_is_one_line(runs_dir: Path) -> None:
    from bench.targets import target_for

    (runs_dir / "r2").mkdir()
    (runs_dir / "r2" / "CANCELLED").symlink_to("CANCELLED")  # a loop: ELOOP
    with pytest.raises(AtlasError, match="link"):
        target_for("local").mark_cancelled("r2")


def test_report_out_a_file(bench, tmp_path: Path) -> None:
    write_run(tmp_path / "results", RunSpec("a", "a0"))
    (tmp_path / "afile").write_text("x")
    code, _, err = bench("report", "--results", tmp_path / "results", "--out", tmp_path / "afile")
    assert code == 2
    one_line(err, "--out", "is a file")
    assert (tmp_path / "afile").read_text() == "x"


def test_a_prefix_of_an_option_is_not_that_option(bench, tmp_path: Path) -> None:
    """`--result results` once overwrote a report as `--results`: abbreviations are refused."""
    code, _, err = bench("report", "--result", tmp_path / "results", "--out", tmp_path / "reports")
    assert code == 2 and "unrecognized arguments: --result" in err
    assert not (tmp_path / "reports").exists()


def test_compare_env_nosuch_names_the_envs_that_have_runs(bench, tmp_path: Path) -> None:
    write_run(tmp_path / "results", RunSpec("a", "a0"))
    code, _, err = bench("compare", "--results", tmp_path / "results", "--env", "nosuch")
    assert code == 2
    one_line(err, "nosuch", "has runs of a")
    assert "bench run` first" not in err or "--env nosuch" in err


def test_comment_artifact_nested_100000_deep(bench, tmp_path: Path) -> None:
    art = tmp_path / "art"
    art.mkdir()
    (art / "pr.json").write_text("[" * 100_000 + "]" * 100_000)
    (art / "comment.md").write_text("hi")
    code, _, err = bench("comment", "--artifact", art, "--no-post")
    assert code == 2
    one_line(err, "pr.json", "nested deeper")


@pytest.mark.parametrize("timeout", ["nan", "inf", "-1"])
def test_stage_data_timeout_not_a_time(bench, timeout: str) -> None:
    code, _, err = bench("stage-data", "--env", "local", "--timeout", timeout)
    assert code == 2
    one_line(err, "--timeout")


def test_stage_data_dest_under_a_file(tmp_path: Path, capsys) -> None:
    from bench.stage_data import main as stage_main

    (tmp_path / "afile").write_text("x")
    code = stage_main(
        [
            "fetch",
            "--source",
            "https://example.invalid/x",
            "--dest",
            str(tmp_path / "afile" / "x.h5"),
            "--sha256",
            "0" * 64,
        ]
    )
    err = capsys.readouterr().err
    assert code == 1
    one_line(err, "--dest", "under a folder")
    assert (tmp_path / "afile").read_text() == "x"


def test_every_report_file_and_the_index_are_0644(bench, tmp_path: Path) -> None:
    write_run(tmp_path / "results", RunSpec("a", "a0"))
    old = os.umask(0o022)
    try:
        assert bench("report", "--results", tmp_path / "results", "--out", tmp_path / "reports")[0] == 0
    finally:
        os.umask(old)
    files = [p for p in (tmp_path / "reports").rglob("*") if p.is_file() and not p.name.startswith(".")]
    assert tmp_path / "reports" / "README.md" in files
    assert {oct(p.stat().st_mode & 0o777) for p in files} == {"0o644"}
