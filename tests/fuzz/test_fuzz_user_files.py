"""Fuzz generated from the schemas of the files people write (issue 31): import maps,
expected.yaml, env.yaml numbers. Each is a surface of `bench.records.surfaces.SURFACES`
with its schema shipped beside its reader; every field its schema declares gets one
hostile value (the suite's HOSTILE list and strategies of test_fuzz_schemas.py, plus
YAML's own spellings of NaN, infinity and floats too large) and the real command reads it:

- an import map: `bench import --map` on a small CSV the importer tests use;
- expected.yaml: `bench validate` and the bands `bench report` reads (expected.outside);
- env.yaml: `bench validate`, and `load_env` as every other command loads it.

The properties: no exception escapes (a refusal is exit 1 or 2 with one clear line), no
non-finite or negative time, cost or energy is written, nothing is written outside the
command's folder. The files are YAML, so the mutated instance is written as JSON text
(JSON is YAML). Derandomized, in-process: the same examples on every run.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.analysis.expected import MAX_EXPECTED_BYTES, Band, outside
from bench.cli import main
from bench.environments.load import CLUSTERS_DIR, load_env
from bench.errors import AtlasError
from bench.importers.csv_map import load_map
from bench.records import surfaces
from bench.strict_yaml import load_strict
from tests.fuzz.test_fuzz_one_bad_field import sound_figures
from tests.fuzz.test_fuzz_records import FAST
from tests.fuzz.test_fuzz_schemas import declared_paths, hostile, with_hostile

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "bench" / "importers" / "samples"
# PyYAML reads "NaN" and "1e308" as strings; these are its floats that are not finite or too large
YAML_NUMBERS = [b".nan", b".NaN", b".inf", b"-.inf", b"1.0e+308", b"-1.0e+308", b"1.0e+400", b"-5.0", b"0x7fffffff"]
yaml_hostile = st.one_of(hostile, st.sampled_from(YAML_NUMBERS))


def _paths(name: str, instance: Any) -> list[tuple]:
    root = surfaces.schema(name)
    paths = declared_paths(instance, root, root)
    assert paths, name
    return paths


def _outcome(code: int, capsys: pytest.CaptureFixture[str]) -> str:
    """The command's output; a refusal is exit 1 or 2 with a line naming it, never a traceback."""
    out = capsys.readouterr()
    text = out.out + out.err
    assert code in (0, 1, 2), (code, text[-2000:])
    assert "Traceback" not in text and "\x1b" not in text, text[-2000:]
    if code == 2:
        assert [line for line in out.err.splitlines() if line.strip()], "a refusal names its problem"
    return text


def _written_inside(tmp: Path, before: set[Path], *folders: Path) -> None:
    new = set(tmp.rglob("*")) - before
    stray = [p for p in new if not any(p == f or p.is_relative_to(f) for f in folders)]
    assert not stray, stray


def test_the_user_file_surfaces_are_declared_and_their_instances_sound(tmp_path: Path) -> None:
    """The control: each sound instance passes its schema, so what the drivers see refused is the hostile value."""
    for name, instance in (("import_map", sound_map()), ("expected", SOUND_EXPECTED), ("env_numbers", sound_env())):
        assert name in surfaces.BY_NAME and surfaces.problems(name, instance, name) == [], name
        assert len(_paths(name, instance)) >= 8, name
    assert set(_paths("import_map", sound_map())) >= {("csv", "delimiter"), ("derived", "host_cpu_percent")}
    assert ("cost", "pue") in _paths("env_numbers", sound_env())


# -- bench import --map ---------------------------------------------------------------------
def sound_map() -> dict[str, Any]:
    """study-MAP.yaml (the importer tests' map of study-export.csv), its CPU column derived."""
    mapping = yaml.safe_load((SAMPLES / "study-MAP.yaml").read_text())
    cpu = mapping["columns"].pop("CPU busy (%)")["to"]
    mapping["derived"] = {cpu: "`CPU busy (%)` * 1", "host_mem_total_bytes": {"expr": "`RAM used (GB)` * 2",
                                                                           "unit": "GB_SI", "scale": 1}}  # fmt: skip
    mapping["columns"]["GPU power (W)"]["scale"] = 1
    return mapping


def test_the_sound_map_imports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, run = _import(tmp_path, json.dumps(sound_map()).encode())
    assert code == 0, capsys.readouterr().err
    sound_figures(run, "e")


def _import(tmp: Path, map_bytes: bytes) -> tuple[int, Path]:
    (tmp / "MAP.yaml").write_bytes(map_bytes)
    data = shutil.copy(SAMPLES / "study-export.csv", tmp / "study-export.csv")
    results = tmp / "res"
    args = ["import", "--map", str(tmp / "MAP.yaml"), "--env", "e", "--run-id", "r", "--results", str(results)]
    return main([*args, str(data)]), results / "e" / "r"


@settings(FAST, max_examples=60)
@given(data=st.data())
def test_fuzz_import_map_fields_through_bench_import(tmp_path_factory, capsys, data) -> None:
    tmp = tmp_path_factory.mktemp("map")
    mapping = sound_map()
    path = data.draw(st.sampled_from(_paths("import_map", mapping)), "path")
    raw = with_hostile(mapping, path, data.draw(yaml_hostile, "value"))
    before = set(tmp.rglob("*"))
    code, run = _import(tmp, raw)
    before |= {tmp / "MAP.yaml", tmp / "study-export.csv"}
    _outcome(code, capsys)
    _written_inside(tmp, before, tmp / "res")
    if code == 0:
        sound_figures(run, "e")
        read = load_map(tmp / "MAP.yaml")
        assert not surfaces.problems("import_map", read, "MAP.yaml"), "a map outside its schema was used"
    else:
        assert not run.exists(), "a refused map writes no record"


# -- expected.yaml ------------------------------------------------------------------------------
# The example band of clusters/satori/expected.yaml's comment, for the experiment the tests run
SOUND_EXPECTED = {
    "smoke": {
        "images_per_s": {"value": 1200, "lower": -0.10, "upper": None},
        "cost_per_1000_images_usd": {"value": 0.05, "upper": 0.20},
    }
}
FIGURES = {"images_per_s": 1000.0, "cost_per_1000_images_usd": 0.07, "wall_s": 60.0}


@pytest.fixture(scope="module")
def local_clusters(tmp_path_factory: pytest.TempPathFactory) -> Path:
    clusters = tmp_path_factory.mktemp("clusters") / "clusters"
    (clusters / "local").mkdir(parents=True)
    shutil.copy(CLUSTERS_DIR / "local" / "env.yaml", clusters / "local" / "env.yaml")
    return clusters


@settings(FAST, max_examples=90)
@given(data=st.data())
def test_fuzz_expected_fields_through_validate_and_the_report_bands(local_clusters, capsys, data) -> None:
    path = data.draw(st.sampled_from(_paths("expected", SOUND_EXPECTED)), "path")
    (local_clusters / "local" / "expected.yaml").write_bytes(
        with_hostile(SOUND_EXPECTED, path, data.draw(yaml_hostile, "value"))
    )
    before = set(local_clusters.parent.rglob("*"))
    text = _outcome(main(["validate", "--clusters", str(local_clusters), "local", "--no-experiments"]), capsys)
    try:  # what bench report and the PR comment read: every figure outside its band
        found = outside([("local", "r1", "smoke", dict(FIGURES))], local_clusters)
    except AtlasError as exc:
        assert "expected.yaml" in str(exc) and "\n" not in str(exc) and "expected.yaml" in text
        found = []
    else:
        assert "expected.yaml" not in text, "validate refused what the report's reader accepts"
        read = load_strict(local_clusters / "local" / "expected.yaml", MAX_EXPECTED_BYTES, "an expected.yaml")
        assert not surfaces.problems("expected", read, "expected.yaml"), "a band outside its schema was used"
    for o in found:
        band: Band = o.band
        assert all(x is None or math.isfinite(x) for x in (band.value, band.lower, band.upper, o.value))
        assert band.low <= band.high
    _written_inside(local_clusters.parent, before)


# -- env.yaml numbers ---------------------------------------------------------------------------
def sound_env() -> dict[str, Any]:
    """clusters/local/env.yaml (the embedded default) with the job shape the validate tests give it."""
    env = yaml.safe_load((CLUSTERS_DIR / "local" / "env.yaml").read_text())
    env["shape"] = {"nodes": 1, "gpus_per_node": 0, "cpus_per_gpu": 2, "memory_gib_per_gpu": 8}
    env["cost"]["gpus_per_node"] = 0
    return env


@settings(FAST, max_examples=60)
@given(data=st.data())
def test_fuzz_env_numbers_through_validate_and_load_env(local_clusters, capsys, data) -> None:
    env = sound_env()
    path = data.draw(st.sampled_from(_paths("env_numbers", env)), "path")
    (local_clusters / "local" / "env.yaml").write_bytes(with_hostile(env, path, data.draw(yaml_hostile, "value")))
    (local_clusters / "local" / "expected.yaml").unlink(missing_ok=True)
    before = set(local_clusters.parent.rglob("*"))
    try:
        code = main(["validate", "--clusters", str(local_clusters), "local", "--no-experiments"])
        _outcome(code, capsys)
        try:  # every other command: the numbers are checked at load, not only by validate
            loaded = load_env("local", local_clusters)
        except AtlasError as exc:
            assert "\n" not in str(exc).strip()
            assert code != 0, "load_env refused what validate passed"
        else:  # a section of the wrong type (`hardware: 5`) is validate's to word; a number is refused at load
            kept = [p for p, _ in surfaces.problems("env_numbers", loaded.settings, "env.yaml") if len(p) >= 2]
            assert not kept, f"a number outside its schema was kept: {kept}"
    finally:
        shutil.copy(CLUSTERS_DIR / "local" / "env.yaml", local_clusters / "local" / "env.yaml")
    _written_inside(local_clusters.parent, before)
