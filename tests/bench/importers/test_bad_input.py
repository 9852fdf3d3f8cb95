"""Whatever the file, a bad one is one line naming it, exit 2, and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench.importers.conftest import SAMPLES, one_error_line

FORMATS = ["sar", "nvidia-smi", "dcgmi-dmon", "dcgm-exporter", "csv"]
CONTENTS = {"binary": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", "empty": b""}
SAMPLE = {
    "sar": "sar-u-r-12h.txt",
    "nvidia-smi": "nvidia-smi-units.csv",
    "dcgmi-dmon": "dcgmi-dmon.txt",
    "dcgm-exporter": "dcgm-exporter.prom",
    "csv": "study-export.csv",
}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind", ["binary", "empty", "missing"])
def test_unreadable_files(tmp_path: Path, bench, fmt: str, kind: str) -> None:
    path = tmp_path / f"input-{fmt}"
    if kind != "missing":
        path.write_bytes(CONTENTS[kind])
    code, _, err = bench(
        "import",
        "--format",
        fmt,
        "--map",
        SAMPLES / "study-MAP.yaml",
        "--interval",
        "1",
        "--env",
        "e",
        "--run-id",
        "r",
        "--results",
        tmp_path / "res",
        path,
    )
    assert code == 2
    one_error_line(err, str(path))
    assert not (tmp_path / "res").exists()


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_file_cut_mid_line_fails_on_that_line(tmp_path: Path, bench, fmt: str) -> None:
    data = (SAMPLES / SAMPLE[fmt]).read_bytes()
    cut = data[: int(len(data) * 0.4)]  # each sample's 40 % mark falls inside a row
    path = tmp_path / SAMPLE[fmt]
    path.write_bytes(cut)
    code, out, err = bench(
        "import",
        "--format",
        fmt,
        "--map",
        SAMPLES / "study-MAP.yaml",
        "--interval",
        "1",
        "--env",
        "e",
        "--run-id",
        "r",
        "--results",
        tmp_path / "res",
        path,
    )
    assert code == 2
    line = cut.count(b"\n") + 1
    one_error_line(err, f"{path}:{line}:")
    assert not (tmp_path / "res").exists()
