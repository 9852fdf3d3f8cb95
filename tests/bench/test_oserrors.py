"""A file system that refuses a write is one line, not a traceback (issue 24): a read-only
results or report folder (a real read-only tmpfs), an unwritable HOME, and EACCES / EDQUOT
raised from inside a command."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench import cli
from tests.synthetic_records import RunSpec, write_run

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "ro"
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a read-only tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def bench(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in {**os.environ, **env}.items() if k != "MPLCONFIGDIR"},
    )


def results(tmp_path: Path) -> Path:
    for env in ("a", "b"):
        write_run(tmp_path / "results", RunSpec(env, f"r-{env}"))
    return tmp_path / "results"


def test_a_read_only_report_folder_is_one_line(tmp_path: Path, read_only: Path) -> None:
    done = bench("report", "--results", str(results(tmp_path)), "--out", str(read_only / "reports"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "read-only (EROFS)" in lines[0] and str(read_only / "reports") in lines[0]


def test_an_unwritable_home_still_reports_without_a_warning(tmp_path: Path, read_only: Path) -> None:
    done = bench("report", "--results", str(results(tmp_path)), "--out", str(tmp_path / "out"), HOME=str(read_only))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Matplotlib" not in done.stderr
    assert (tmp_path / "out" / "README.md").is_file()


@pytest.mark.parametrize(
    "code, rc, needle",
    [
        (errno.EACCES, 2, "permission denied (EACCES)"),
        (errno.EROFS, 2, "read-only (EROFS)"),
        (errno.EDQUOT, 74, "Disk quota exceeded"),
    ],
)
def test_each_refusal_is_one_line_with_its_path(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], code: int, rc: int, needle: str
) -> None:
    from bench.commands import check

    def refuse(_args: object) -> int:
        raise OSError(code, os.strerror(code), "/srv/results/a/run.json")

    monkeypatch.setattr(check, "run", refuse)
    assert cli.main(["check", "/srv/results"]) == rc
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0] and "/srv/results/a/run.json" in err[0], err


def test_a_refusal_under_home_names_home(monkeypatch: pytest.MonkeyPatch, capsys, tmp_path: Path) -> None:
    from bench.commands import check

    monkeypatch.setenv("HOME", str(tmp_path))

    def refuse(_args: object) -> int:
        raise OSError(errno.EACCES, "Permission denied", str(tmp_path / ".cache" / "x"))

    monkeypatch.setattr(check, "run", refuse)
    assert cli.main(["check", "/srv/results"]) == 2
    assert f"HOME ({tmp_path}) is not writable" in capsys.readouterr().err


def test_collect_into_a_read_only_results_folder_is_one_line(tmp_path: Path, read_only: Path) -> None:
    import json

    run_dir = tmp_path / "runs" / "local" / "20261123t030000-01234567-abcd"
    run_dir.mkdir(parents=True)
    record = {"schema_version": 1, "run_id": run_dir.name, "env": "local", "exit": {"status": "success", "code": 0}}
    (run_dir / "run.json").write_text(json.dumps(record))
    (run_dir / "submit.json").write_text(json.dumps({"pid": None}))
    done = bench(
        "collect", "--env", "local", "--results", str(read_only / "results"), ATLAS_RUNS_DIR=str(tmp_path / "runs")
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "read-only (EROFS)" in lines[0], lines
    assert (run_dir / "run.json").read_text() == json.dumps(record)  # nothing recorded is touched
