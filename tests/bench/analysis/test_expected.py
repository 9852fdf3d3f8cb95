"""Expected performance bands (clusters/<env>/expected.yaml): parsed strictly, flagged in
the report and the PR comment."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import bench.environments.load
from bench.analysis.expected import Band, load_expected, outside
from bench.errors import ConfigError
from tests.synthetic_records import RunSpec, write_run

ROOT = Path(__file__).resolve().parents[3]


def clusters(tmp_path: Path, expected: str) -> Path:
    folder = tmp_path / "clusters" / "local"
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "clusters" / "local" / "env.yaml", folder / "env.yaml")
    (folder / "expected.yaml").write_text(expected)
    return tmp_path / "clusters"


def test_bands_are_fractions_of_the_reference_as_in_reframe():
    band = Band(100.0, -0.1, None)
    assert band.low == pytest.approx(90.0) and band.high == float("inf")
    assert band.holds(90.0) and band.holds(1e9) and not band.holds(89.9)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("smoke:\n  no_such_metric: {value: 1}\n", "smoke.no_such_metric: unknown metric"),
        ("smoke:\n  images_per_s: {value: 100, lower: 0.1}\n", "smoke.images_per_s.lower must be <= 0"),
        ("smoke:\n  images_per_s: {value: fast}\n", "smoke.images_per_s.value must be a number"),
        ("smoke:\n  images_per_s: {value: 1, typo: 2}\n", "smoke.images_per_s must be {value, lower, upper}"),
        ("smoke: [\n", "not valid YAML"),
    ],
)
def test_a_bad_file_is_one_error_naming_file_and_key(tmp_path: Path, text: str, message: str):
    where = clusters(tmp_path, text)
    with pytest.raises(ConfigError, match="expected.yaml") as err:
        load_expected("local", where)
    assert message in str(err.value)
    from bench.commands.validation import check_env

    assert any(message in p for p in check_env("local", where))  # bench validate says so too


@pytest.mark.slow
def test_the_report_and_the_pr_comment_flag_a_run_outside_its_band(tmp_path: Path, monkeypatch):
    from bench.commands.comment import render_pr_body
    from bench.commands.report import write_report

    where = clusters(tmp_path, "smoke:\n  images_per_s: {value: 200, lower: -0.1, upper: 0.1}\n")
    monkeypatch.setattr(bench.environments.load, "CLUSTERS_DIR", where)
    head, base = "a" * 40, "b" * 40
    for i, sha in enumerate((base, head)):
        write_run(tmp_path / "results", RunSpec(env="local", run_id=f"r{i}", sha=sha, start=1_790_000_000 + i))
    readme = write_report(tmp_path / "results", tmp_path / "reports", commit=head).readme.read_text()
    readme = readme.replace("\\", "")  # Markdown escapes
    assert "## Outside the expected band" in readme
    assert "local/r1: images_per_s 98" in readme and "is below its expected band [180, 220]" in readme
    body = render_pr_body(tmp_path / "results", head, base).replace("\\", "")
    assert "Outside the expected band" in body and "local/r1: images_per_s" in body and "local/r0" not in body

    (where / "local" / "expected.yaml").write_text("smoke:\n  images_per_s: {value: 100, lower: -0.5}\n")
    readme = write_report(tmp_path / "results", tmp_path / "reports", commit=head).readme.read_text()
    assert "expected band" not in readme


def test_no_file_no_bands_and_odd_names_are_never_paths(tmp_path: Path):
    assert load_expected("local", tmp_path) == {}
    assert load_expected("../etc", tmp_path) == {}
    assert outside([("local", "r", "smoke", {"images_per_s": 1.0})], tmp_path) == []
