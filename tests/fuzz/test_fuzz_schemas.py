"""Fuzz generated from the declared schemas (issue 31): every field of every surface, hostile.

`bench.records.surfaces.SURFACES` lists each input surface with its JSON Schema file. For
each, this suite takes a sound instance, walks it together with its schema to find every
declared field (containers included), and puts one hostile value there, at the byte
level: NaN, +-Infinity, 1e308, 1e400, negative numbers, a wrong type, nesting 10^5 deep,
bytes that are not UTF-8, control characters. The result goes through what reads that
surface, and the properties must hold: no exception but the surface's own refusal, no
non-finite or negative time, cost or energy, no MFU above 100 %, no file written outside
the command's folder.

A surface added to SURFACES is fuzzed without a line here: the generic driver holds its
schema's `examples[0]` (its sound instance) to `surfaces.refuse`, the one reader path every
surface shares. The surfaces below get their own readers too. Derandomized: the same
examples on every run.
"""

from __future__ import annotations

import io
import json
import lzma
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.analysis.changepoints import change_points
from bench.analysis.history import run_entry, series
from bench.analysis.metrics import run_metrics
from bench.cli import main
from bench.gitops.branch_entries import checked_entry
from bench.gitops.pack import decode_columns, decompress, encode_columns
from bench.records import surfaces
from bench.records.read import load_run
from bench.targets.slurm_accounting import SACCT_FIELDS, from_sacct
from tests.fuzz.test_fuzz_records import FAST
from tests.synthetic_records import RunSpec, write_run

DEEP = b"[" * 100_000 + b"]" * 100_000
HOSTILE: list[bytes] = [
    b"NaN", b"Infinity", b"-Infinity", b"1e308", b"-1e308", b"1e400", b"-5", b"-1", b"0", b"1e9",
    b"123456789012345678901234567890", b'"\\u001b[2J\\u001b]0;owned\\u0007"', b'"\xff\xfe\xfd"',
    b'"\\r\\nspoofed: line"', DEEP, b'{"a": [1]}', b"[1, 2]", b'"12"', b"true", b"null", b'""',
]  # fmt: skip
hostile = st.one_of(
    st.sampled_from(HOSTILE),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: repr(f).encode()),
    st.integers(-(10**25), 10**25).map(lambda i: str(i).encode()),
    st.text(max_size=12).map(lambda t: json.dumps(t).encode()),
)
NONNEG = ("cost_usd", "cost_per_1000_images_usd", "wall_s", "time_to_train_s", "energy_wh", "gpu_hours",
          "queue_wait_s", "images_per_s", "achieved_tflops", "energy_per_image_j", "submit_to_result_s",
          "push_to_result_s", *(f"phase_{p}_s" for p in ("deliver", "queue", "launch", "warmup", "train",
                                                        "finish", "collect")))  # fmt: skip
MARK = "\u0000HOSTILE\u0000"


# -- walking an instance with its schema ----------------------------------------------
def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while isinstance(schema, dict) and "$ref" in schema:
        node: Any = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = node
    merged = dict(schema) if isinstance(schema, dict) else {}
    for alt in [*merged.get("oneOf", ()), *merged.get("anyOf", ())]:
        alt = _resolve(alt, root)
        for key in ("properties", "additionalProperties", "items"):
            if key in alt and key not in merged:
                merged[key] = alt[key]
    return merged


def declared_paths(instance: Any, schema: dict[str, Any], root: dict[str, Any], path: tuple = ()) -> list[tuple]:
    """Every path of `instance` its schema declares (the containers too), in document order."""
    schema = _resolve(schema, root)
    out = [path] if path else []
    if isinstance(instance, dict):
        for key, value in instance.items():
            sub = schema.get("properties", {}).get(key)
            if sub is None and isinstance(schema.get("additionalProperties"), dict):
                sub = schema["additionalProperties"]
            if sub is not None:
                out += declared_paths(value, sub, root, (*path, key))
    elif isinstance(instance, list) and isinstance(schema.get("items"), dict):
        for i, value in enumerate(instance[:2]):
            out += declared_paths(value, schema["items"], root, (*path, i))
    return out


def with_hostile(instance: Any, path: tuple, bad: bytes) -> bytes:
    """`instance` as JSON bytes with `bad` (raw JSON text, maybe not UTF-8) at `path`."""
    copy = json.loads(json.dumps(instance))
    node = copy
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = MARK
    return json.dumps(copy).encode().replace(json.dumps(MARK).encode(), bad)


def _finite_nonneg(values: dict[str, Any], keys: tuple[str, ...]) -> None:
    for key in keys:
        v = values.get(key)
        if v is not None:
            assert isinstance(v, (int, float)) and math.isfinite(v) and v >= 0, (key, v)


# -- sound instances ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def sound_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A GPU run with a timeline, a compile section and Slurm's accounting block."""
    root = tmp_path_factory.mktemp("schemas") / "results"
    run = write_run(root, RunSpec("gpu", "r1", gpus=1, duration_s=20, log_every_s=2, timeline=True))
    meta = json.loads((run / "run.json").read_text())
    meta["compile"] = {"compile": True, "compile_requested": True, "compile_guard": "passed", "graph_breaks": 0,
                       "recompiles": 0, "compiled_graphs": 2, "compile_mode": "default", "precision": "float32",
                       "flops_per_g_iteration": 10**9, "images_per_g_iteration": 8}  # fmt: skip
    meta["scheduler"]["accounting"] = from_sacct({"rc": 0, "stdout": SACCT, "stderr": ""})
    (run / "run.json").write_text(json.dumps(meta))
    assert load_run(run).problems == []
    return run, meta


SACCT = f"""{SACCT_FIELDS.replace(",", "|")}
81723|atlas-r1|gpu017|3605|billing=16,cpu=16,gres/gpu=1,mem=128G,node=1|||2318450
81723.batch|batch|gpu017|3603|cpu=16,gres/gpu=1|gres/gpumem=60G,gres/gpuutil=87|gres/gpumem=67G,gres/gpuutil=100|2318400
81723.extern|extern|gpu017|3605|cpu=16|cpu=00:00:00|cpu=00:00:00|0
"""


def _sacct_rows() -> list[dict[str, str]]:
    lines = SACCT.strip().split("\n")
    header = lines[0].split("|")
    return [dict(zip(header, line.split("|"))) for line in lines[1:]]


def test_every_declared_surface_has_a_sound_instance_to_fuzz() -> None:
    """The registry and this suite agree: a surface without a driver here needs `examples` in its schema."""
    for surface in surfaces.SURFACES:
        has_example = bool(surfaces.schema(surface.name).get("examples"))
        assert surface.name in DRIVEN or has_example, f"{surface.name}: add `examples` to {surface.schema_file}"


# -- run.json: timeline, compile, accounting and every other declared field -----------------
RUN_SECTIONS = ("timeline", "compile", "scheduler", "hardware", "environment", "shape", "start_time", "end_time")


@settings(FAST, max_examples=150)
@given(data=st.data())
def test_fuzz_run_json_fields_through_the_figures(sound_run, data) -> None:
    run, meta = sound_run
    root = surfaces.schema("run")
    paths = [p for p in declared_paths(meta, root, root) if p[0] in RUN_SECTIONS]
    path = data.draw(st.sampled_from(paths), "path")
    (run / "run.json").write_bytes(with_hostile(meta, path, data.draw(hostile, "value")))
    try:
        m = run_metrics(load_run(run))
    finally:
        (run / "run.json").write_text(json.dumps(meta))
    _finite_nonneg(m.values, NONNEG)
    assert m.mfu_pct is None or 0 < m.mfu_pct <= 100.0


@settings(FAST, max_examples=10)
@given(data=st.data())
def test_fuzz_run_json_fields_through_check_compare_and_report(sound_run, tmp_path_factory, capsys, data) -> None:
    run, meta = sound_run
    root = surfaces.schema("run")
    paths = [p for p in declared_paths(meta, root, root) if p[0] in ("timeline", "compile", "scheduler")]
    tmp = tmp_path_factory.mktemp("cmd")
    results = tmp / "results"
    copy = shutil.copytree(run, results / "gpu" / "r1")
    path = data.draw(st.sampled_from(paths), "path")
    (copy / "run.json").write_bytes(with_hostile(meta, path, data.draw(hostile, "value")))
    assert main(["check", str(results)]) in (0, 1)
    assert main(["compare", "--results", str(results), "--out", str(tmp / "cmp"), "--allow-different"]) in (0, 2)
    assert main(["report", "--results", str(results), "--out", str(tmp / "rep")]) in (0, 2)
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err and "\x1b" not in out.out + out.err
    assert all(p.is_relative_to(results) or p.is_relative_to(tmp / "cmp") or p.is_relative_to(tmp / "rep")
               for p in tmp.rglob("*"))  # fmt: skip


# -- results branch index entries ---------------------------------------------------------
@pytest.fixture(scope="module")
def sound_entry(sound_run) -> dict[str, Any]:
    run, _ = sound_run
    entry = run_entry(load_run(run))
    entry["files"] = {"run.json": {"stored": "run.json", "sha256": "0" * 64, "bytes": 10}}
    assert checked_entry(json.dumps(entry).encode(), "e.json") == (entry, [])
    return entry


@settings(FAST, max_examples=1200)
@given(data=st.data())
def test_fuzz_history_entry_fields_through_history(sound_entry, data) -> None:
    root = surfaces.schema("history_entry")
    path = data.draw(st.sampled_from(declared_paths(sound_entry, root, root)), "path")
    raw = with_hostile(sound_entry, path, data.draw(hostile, "value"))
    entry, problems = checked_entry(raw, "index/e.json")
    if entry is None:
        assert problems
        return
    assert not surfaces.problems("history_entry", entry, "e")  # nothing refused is left to be used
    assert "\x1b" not in json.dumps(entry, ensure_ascii=False)
    others = [dict(sound_entry, run_id=f"r{i}", commit=f"{i:x}" * 40, start=1e9 + i) for i in range(1, 6)]
    for key, points in series([*others, entry]).items():
        assert all(math.isfinite(v) for p in points for v in p.values)
        if key[2] == "images_per_s":  # the detector once per example: the history's own figure
            for cp in change_points(key, points):
                assert math.isfinite(cp.before) and math.isfinite(cp.after)


# -- packed samples headers -----------------------------------------------------------------
@pytest.fixture(scope="module")
def sound_packed() -> tuple[dict[str, Any], bytes, bytes]:
    raw = b"time,gpu0_util,host\n" + b"".join(f"{1.5 + i},{i % 100},n{i}\n".encode() for i in range(50))
    data = decompress(encode_columns(raw))
    size = int.from_bytes(data[:8], "little")
    return json.loads(data[8 : 8 + size]), data[8 + size :], raw


@settings(FAST, max_examples=2200)
@given(data=st.data())
def test_fuzz_packed_header_fields_through_the_decoder(sound_packed, data) -> None:
    header, blocks, raw = sound_packed
    root = surfaces.schema("packed_samples")
    path = data.draw(st.sampled_from(declared_paths(header, root, root)), "path")
    head = with_hostile(header, path, data.draw(hostile, "value"))
    packed = lzma.compress(len(head).to_bytes(8, "little") + head + blocks, preset=0)
    try:
        out = decode_columns(packed)
    except (ValueError, lzma.LZMAError):
        return  # refused, named: restore turns it into one error and writes nothing
    assert isinstance(out, bytes)


# -- sacct lines ------------------------------------------------------------------------------
ACCOUNTING_SCHEMA = {
    "$defs": surfaces.schema("run")["$defs"],
    **surfaces.schema("run")["properties"]["scheduler"]["properties"]["accounting"],
}


@settings(FAST, max_examples=2000)
@given(data=st.data())
def test_fuzz_sacct_fields_through_the_accounting_block(data) -> None:
    rows = _sacct_rows()
    root = surfaces.schema("sacct")
    row = data.draw(st.sampled_from(range(len(rows))), "row")
    field = data.draw(st.sampled_from([p[0] for p in declared_paths(rows[row], root, root)]), "field")
    bad = data.draw(hostile, "value").decode("utf-8", "replace").replace("|", "/").replace("\n", " ")
    rows[row][field] = data.draw(st.sampled_from([bad, f"gres/gpuutil={bad}", f"gres/gpumem={bad},gres/gpu={bad}"]))
    text = "\n".join([SACCT_FIELDS.replace(",", "|"), *("|".join(r.values()) for r in rows)])
    block = from_sacct({"rc": 0, "stdout": text, "stderr": ""})
    from jsonschema import Draft202012Validator

    assert not list(Draft202012Validator(ACCOUNTING_SCHEMA).iter_errors(block))  # what run.json's reader accepts
    _finite_nonneg(block, tuple(k for k in block if k.endswith(("_pct", "_bytes", "_j"))))


# -- any other surface: its schema's example through the shared reader path ----------------
DRIVEN = {
    "run",
    "history_entry",
    "packed_samples",
    "sacct",
    "import_map",
    "expected",
    "env_numbers",
    "noise",
}  # user files: test_fuzz_user_files.py; noise.json: test_fuzz_noise.py
OTHERS = [s.name for s in surfaces.SURFACES if s.name not in DRIVEN]


@pytest.mark.skipif(not OTHERS, reason="every declared surface has its own driver above")
@settings(FAST, max_examples=max(1, 300 * len(OTHERS)))
@given(data=st.data())
def test_fuzz_every_other_declared_schema_through_refuse(data) -> None:
    name = data.draw(st.sampled_from(OTHERS), "surface")
    root = surfaces.schema(name)
    example = root["examples"][0]
    path = data.draw(st.sampled_from(declared_paths(example, root, root)), "path")
    from bench.records import strict_numbers

    try:
        value = strict_numbers.loads(with_hostile(example, path, data.draw(hostile, "value")))
    except (ValueError, UnicodeDecodeError):
        return
    if isinstance(value, dict):
        surfaces.refuse(name, value, name)
        left = [p for p, _ in surfaces.problems(name, value, name) if p]
        assert not left, left


def test_the_walk_finds_the_fields_the_issue_names(sound_run) -> None:
    _, meta = sound_run
    root = surfaces.schema("run")
    paths = set(declared_paths(meta, root, root))
    assert ("compile", "flops_per_g_iteration") in paths and ("timeline", "phases", 0, "seconds") in paths
    assert ("timeline", "marks", "submitted", "resolution_s") in paths
    assert ("scheduler", "accounting", "gpu_util_mean_pct") in paths
    assert io.BytesIO(with_hostile({"a": 1}, ("a",), b"NaN")).read() == b'{"a": NaN}'
