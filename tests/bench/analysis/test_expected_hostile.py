"""Issue 31's expected.yaml cases: a metric given twice is refused naming it (YAML kept the
second band silently); 10^5 nesting and a byte that is not UTF-8 are one clear error in
`bench validate` and `bench report`, not a traceback. The bands' schema
(bench/analysis/expected.schema.json) refuses what the hand checks would let through."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.analysis.expected import load_expected
from bench.cli import main
from bench.environments import load as bench_envs
from bench.errors import ConfigError
from tests.synthetic_records import RunSpec, write_run

ROOT = Path(__file__).resolve().parents[3]

HOSTILE = [
    (
        b"smoke:\n  images_per_s: {value: 100, lower: -0.1}\n  images_per_s: {value: 5, lower: -0.9}\n",
        "key 'images_per_s' appears twice",
    ),
    (b"smoke:\n  images_per_s: " + b"[" * 100_000 + b"]" * 100_000 + b"\n", "expected.yaml: nested too deeply"),
    (b"smoke:\n  images_per_s: {value: 100}\n# caf\xff\n", "expected.yaml: not UTF-8 text (byte 0xff at offset"),
    (b"smoke:\n  images_per_s: {value: 100}\n" + b"#" * (300 * 1024) + b"\n", "larger than 256 KiB, the bound"),
]


def clusters(tmp_path: Path, expected: bytes) -> Path:
    folder = tmp_path / "clusters" / "local"
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "clusters" / "local" / "env.yaml", folder / "env.yaml")
    (folder / "expected.yaml").write_bytes(expected)
    return tmp_path / "clusters"


@pytest.mark.parametrize("text, message", HOSTILE)
def test_loading_a_hostile_file_is_one_error(tmp_path: Path, text: bytes, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_expected("local", clusters(tmp_path, text))
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("text, message", HOSTILE)
def test_validate_and_report_name_it_without_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], text: bytes, message: str
) -> None:
    where = clusters(tmp_path, text)
    monkeypatch.setattr(bench_envs, "CLUSTERS_DIR", where)
    assert main(["validate", str(where / "local")]) != 0
    out = capsys.readouterr()
    assert message in out.out + out.err and "Traceback" not in out.out + out.err
    write_run(tmp_path / "results", RunSpec(env="local", run_id="r1", sha="a" * 40))
    code = main(["report", "--results", str(tmp_path / "results"), "--out", str(tmp_path / "reports")])
    out = capsys.readouterr()
    assert code == 2 and "Traceback" not in out.err
    lines = [line for line in out.err.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], out.err


@pytest.mark.parametrize(
    "text, message",
    [
        ("smoke:\n  images_per_s: {value: 1.0e+301}\n", "smoke.images_per_s.value: 1e+301 is greater than the maximum"),
        ("smoke:\n  images_per_s: {value: 1, lower: -1.0e+301}\n", "smoke.images_per_s.lower: -1e+301 is less than"),
    ],
)
def test_the_schema_refuses_what_the_hand_checks_let_through(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_expected("local", clusters(tmp_path, text.encode()))
    assert message in str(err.value) and "expected.schema.json" in str(err.value)
