"""`bench import`'s own arguments: listed in the workflow, formats per file, checked options."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.cli import build_parser
from tests.bench.importers.conftest import SAMPLES, bench, one_error_line  # noqa: F401 (bench: fixture)


def test_listed_after_collect_in_help() -> None:
    text = build_parser().format_help()
    names = [line.split()[0] for line in text.splitlines() if line.startswith("    ") and line[4] != " "]
    assert names.index("collect") + 1 == names.index("import") == names.index("compare") - 1


@pytest.mark.parametrize(
    "args, words",
    [
        ([str(SAMPLES / "sar-u-r-12h.txt")], "no format; pass --format"),
        (["--format", "sar", "--gpus", "a,b", str(SAMPLES / "sar-u-r-12h.txt")], "--gpus 'a,b'"),
        (["--format", "sar", "--date", "14/03/2024", str(SAMPLES / "sar-u-r-12h.txt")], "--date '14/03/2024'"),
        (
            ["--format", "sar", "--timezone", "Mars/Olympus", str(SAMPLES / "sar-u-r-12h.txt")],
            "--timezone 'Mars/Olympus'",
        ),
        (["--format", "sar", "--interval", "0", str(SAMPLES / "sar-u-r-12h.txt")], "--interval 0"),
        (
            ["--format", "nvidia-smi", "--run-id", "../escape", str(SAMPLES / "nvidia-smi-units.csv")],
            "--run-id '../escape'",
        ),
    ],
)
def test_bad_options_are_one_line(tmp_path: Path, bench, args: list[str], words: str) -> None:
    base = ["import", "--env", "e", "--results", str(tmp_path / "res")]
    if "--run-id" not in args:
        base += ["--run-id", "r"]
    code, _, err = bench(*base, *args)
    assert code == 2
    one_error_line(err, words)
    assert not (tmp_path / "res").exists()


def test_per_file_formats(tmp_path: Path, bench) -> None:
    code, out, err = bench(
        "import",
        "--env",
        "e",
        "--run-id",
        "r",
        "--results",
        tmp_path / "res",
        f"sar:{SAMPLES / 'sar-u-r-12h.txt'}",
        f"nvidia-smi:{SAMPLES / 'nvidia-smi-units.csv'}",
    )
    assert code == 0, err
    assert "sar-u-r-12h.txt (sar)" in out and "nvidia-smi-units.csv (nvidia-smi)" in out
