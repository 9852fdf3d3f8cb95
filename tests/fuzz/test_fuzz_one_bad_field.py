"""Fuzz (issue 22): a well-formed record with ONE bad number, through the functions and the
commands; imports of every format with one bad field; stage-data; the comment artifact.

Every numeric field the analysis reads is a target (run.json, train.jsonl, every samples
column). The properties can fail: no figure is non-finite, no cost or time is negative,
time to train never exceeds wall time, `bench check` exits 1 exactly when a record has a
problem, runs.csv holds only finite numbers, an import never writes a non-finite number nor
stretches a 1-minute file over hours, nothing is written outside the command's folder, and
the comment artifact is accepted only with a valid PR number and sha.
Derandomized (FAST settings): the same examples on every run.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.analysis.metrics import run_metrics
from bench.cli import main
from bench.errors import AtlasError
from bench.importers import ParseOptions, parse_file
from bench.importers.merge import merge
from bench.importers.writer import build_run_json
from bench.records.read import load_run
from tests.fuzz.test_fuzz_records import FAST, json_value
from tests.synthetic_records import RunSpec, write_run

BAD = [math.nan, math.inf, -math.inf, -1, -1e-9, 0, 1e308, -1e308, 1e-300, 10**30, 2**63, 4.2e9, True, "12", None]
bad_number = st.one_of(
    st.sampled_from(BAD), st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**20), 10**20)
)

META_PATHS = [
    ("start_time",), ("end_time",), ("sample_interval_s",), ("samples_rows",),
    ("scheduler", "submit_time"), ("scheduler", "start_time"), ("scheduler", "end_time"),
    ("scheduler", "queue_wait_s"), ("scheduler", "queue_wait_total_s"),
    ("hardware", "cpu_cores_logical"), ("hardware", "cpu_cores_physical"), ("hardware", "cpu_affinity_cores"),
    ("hardware", "memory_bytes"), ("hardware", "cgroup", "cpu_limit_cores"),
    ("hardware", "cgroup", "memory_limit_bytes"),
    ("shape", "nodes"), ("shape", "gpus_per_node"), ("shape", "gpus"), ("shape", "processes_per_node"),
    ("environment", "cost", "usd_per_gpu_hour"), ("environment", "cost", "usd_per_cpu_hour"),
    ("environment", "cost", "electricity_usd_per_kwh"), ("environment", "cost", "pue"),
    ("environment", "cost", "node_capex_usd"), ("environment", "cost", "node_life_years"),
    ("environment", "cost", "utilisation"), ("environment", "cost", "gpus_per_node"),
    ("environment", "collected_at"), ("previous_attempts", 0, "start_time"), ("previous_attempts", 0, "end_time"),
]  # fmt: skip
TRAIN_FIELDS = ["time", "images_per_s", "images_seen", "iteration"]
ONPREM = {"model": "onprem", "electricity_usd_per_kwh": 0.08, "pue": 1.2, "node_capex_usd": 50000,
          "node_life_years": 5, "utilisation": 1.0, "gpus_per_node": 4}  # fmt: skip
NONNEG = ("cost_usd", "cost_per_1000_images_usd", "wall_s", "time_to_train_s", "energy_wh", "gpu_hours",
          "queue_wait_s", "images_per_s", "peak_rss_gb", "cpu_mean_pct", "attempts", "gpus")  # fmt: skip


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Sound records: cloud with a GPU, on-prem with a GPU and an earlier attempt."""
    root = tmp_path_factory.mktemp("bases")
    cloud = write_run(root, RunSpec("cloud", "c0", gpus=1, duration_s=20, log_every_s=2))
    onprem = write_run(root, RunSpec("onprem", "o0", gpus=1, duration_s=20, log_every_s=2, cost=dict(ONPREM)))
    meta = json.loads((onprem / "run.json").read_text())
    meta["previous_attempts"] = [{"start_time": meta["start_time"] - 100, "end_time": meta["start_time"] - 60}]
    (onprem / "run.json").write_text(json.dumps(meta))
    for run in (cloud, onprem):
        assert load_run(run).problems == []
    return {"cloud": cloud, "onprem": onprem}


def put(node: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value


def one_bad_field(run_dir: Path, data: st.DataObject) -> str:
    """Change ONE number of the record in `run_dir`; returns what was changed."""
    where = data.draw(st.sampled_from(["run.json", "train.jsonl", "samples"]), "file")
    value = data.draw(bad_number, "value")
    if where == "run.json":
        path = data.draw(st.sampled_from(META_PATHS), "path")
        meta = json.loads((run_dir / "run.json").read_text())
        if path[0] == "previous_attempts" and not meta["previous_attempts"]:
            path = ("end_time",)
        put(meta, path, value)
        (run_dir / "run.json").write_text(json.dumps(meta, allow_nan=True))
        return f"run.json {path} = {value!r}"
    if where == "train.jsonl":
        events = [json.loads(line) for line in (run_dir / "train.jsonl").read_text().splitlines()]
        i = data.draw(st.integers(0, len(events) - 1), "event")
        key = data.draw(st.sampled_from(TRAIN_FIELDS), "field")
        events[i][key] = value
        (run_dir / "train.jsonl").write_text("".join(json.dumps(e, allow_nan=True) + "\n" for e in events))
        return f"train.jsonl line {i} {key} = {value!r}"
    path = next(run_dir.glob("samples-*.csv"))
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    row = data.draw(st.integers(1, len(lines) - 1), "row")
    col = data.draw(st.integers(0, len(header) - 1), "column")
    cells = lines[row].split(",")
    cells[col] = str(value if not isinstance(value, bool) else "true")
    lines[row] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    return f"{path.name} row {row} {header[col]} = {value!r}"


def sound_figures(run_dir: Path, env: str) -> None:
    run = load_run(run_dir, env)
    m = run_metrics(run)
    for key, value in m.values.items():
        assert value is None or (isinstance(value, float) and math.isfinite(value)), (key, value)
    for key in NONNEG:
        assert m.values[key] is None or m.values[key] >= 0, (key, m.values[key])
    if m.time_to_train_s is not None and m.wall_s is not None:
        assert m.time_to_train_s <= m.wall_s + 5, (m.time_to_train_s, m.wall_s)
    if m.cost_usd is None:
        assert m.cost_note, "an unknown cost says why"


@settings(FAST, max_examples=450)
@given(data=st.data())
def test_fuzz_one_bad_number_through_the_figures(bases, tmp_path_factory, data) -> None:
    env = data.draw(st.sampled_from(sorted(bases)), "env")
    run_dir = shutil.copytree(bases[env], tmp_path_factory.mktemp("one") / env / bases[env].name)
    one_bad_field(run_dir, data)
    sound_figures(run_dir, env)


@settings(FAST, max_examples=40)
@given(data=st.data())
def test_fuzz_one_bad_number_through_check_and_compare(bases, tmp_path_factory, capsys, data) -> None:
    tmp = tmp_path_factory.mktemp("cmd")
    results = tmp / "results"
    for env, src in bases.items():
        shutil.copytree(src, results / env / src.name)
    env = data.draw(st.sampled_from(sorted(bases)), "env")
    one_bad_field(results / env / bases[env].name, data)
    problems = any(load_run(p).problems for p in results.glob("*/*"))
    assert main(["check", str(results)]) == (1 if problems else 0)
    code = main(["compare", "--results", str(results), "--out", str(tmp / "out"), "--allow-different"])
    capsys.readouterr()
    assert code in (0, 2)
    if code == 0:
        for row in csv.DictReader(io.StringIO((tmp / "out" / "runs.csv").read_text())):
            for key in NONNEG:
                if row.get(key):
                    assert math.isfinite(float(row[key])) and float(row[key]) >= 0, (key, row[key])
    assert {p for p in tmp.rglob("*")} <= {
        p for p in tmp.rglob("*") if p.is_relative_to(results) or p.is_relative_to(tmp / "out")
    }


# -- imports of every format, one bad field -------------------------------------------
def _hms(s: int) -> str:
    return f"{s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d}"


def template(fmt: str, n: int = 12) -> list[list[str]]:
    """Rows of tokens (a row is a line; token 0 is its time where it has one)."""
    t0 = 14 * 3600
    if fmt == "sar":
        return [[_hms(t0 + 5 * i), "all", "5.00", "0.00", "5.00", "0.10", "0.00", "89.90"] for i in range(n)]
    if fmt == "nvidia-smi":
        return [[f"2024/03/14 {_hms(t0 + 5 * (i // 2))}.000", str(i % 2), "Tesla V100", f"{50 + i} %", "1000 MiB",
                 "32510 MiB", "200.00 W"] for i in range(n)]  # fmt: skip
    if fmt == "dcgmi-dmon":
        return [["GPU", str(i % 2), "55", "18230", "40960", "252.9", str(812598653 + 1000 * i)] for i in range(n)]
    if fmt == "dcgm-exporter":
        return [
            ["DCGM_FI_DEV_GPU_UTIL", str(i % 2), str(50 + i), str(1710943200000 + 5000 * (i // 2))] for i in range(n)
        ]
    return [[f"14.03.2024 {_hms(t0 + 5 * i)}", "11,1", "22,50", "0,307", "11,20", "189,8", "note"] for i in range(n)]


def render(fmt: str, rows: list[list[str]]) -> str:
    if fmt == "sar":
        head = "Linux 5.14.0 (node1) \t03/14/2024 \t_x86_64_\t(8 CPU)\n\n"
        head += "13:59:55     CPU     %user     %nice   %system   %iowait    %steal     %idle\n"
        return head + "".join("     ".join(r) + "\n" for r in rows)
    if fmt == "nvidia-smi":
        head = "timestamp, index, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB], power.draw [W]\n"
        return head + "".join(", ".join(r) + "\n" for r in rows)
    if fmt == "dcgmi-dmon":
        return "#Entity   GPUTL  FBUSD  FBTTL  POWER    TOTEC\nID\n" + "".join("  ".join(r) + "\n" for r in rows)
    if fmt == "dcgm-exporter":
        return "".join(f'{r[0]}{{gpu="{r[1]}",Hostname="h1"}} {r[2]} {r[3]}\n' for r in rows)
    head = "Timestamp;CPU busy (%);RAM used (GB);GPU util (0-1);GPU mem used (GB);GPU power (W);Notes\n"
    return head + "".join(";".join(r) + "\n" for r in rows)


BAD_TEXT = ["nan", "NaN", "inf", "-inf", "-1", "150", "1e308", "1e-300", "1e400", "-0", "", "N/A", "x" * 40,
            "99999999999999999999999", "0x10", "1,5", "23:59:59", "00:00:00", "2024/03/15 01:00:00.000",
            "13.03.2024 09:00:00", "1710900000000", "-5"]  # fmt: skip
MAP = Path(__file__).parent.parent / "bench" / "importers" / "samples" / "study-MAP.yaml"
FORMATS = ["sar", "nvidia-smi", "dcgmi-dmon", "dcgm-exporter", "csv"]


def hostile_import(tmp: Path, data: st.DataObject) -> tuple[str, Path, int]:
    fmt = data.draw(st.sampled_from(FORMATS), "format")
    rows = template(fmt)
    r = data.draw(st.integers(0, len(rows) - 1), "row")
    c = data.draw(st.integers(0, len(rows[r]) - 1), "token")
    rows[r][c] = data.draw(st.one_of(st.sampled_from(BAD_TEXT), st.text(max_size=12)), "text").replace("\n", " ")
    path = tmp / f"in.{fmt}"
    path.write_text(render(fmt, rows))
    return fmt, path, len(rows)


def opts_for(fmt: str) -> ParseOptions:
    import yaml

    return ParseOptions(interval_s=5.0, mapping=yaml.safe_load(MAP.read_text()) if fmt == "csv" else None, map_path=MAP)


@settings(FAST, max_examples=2600)
@given(data=st.data())
def test_fuzz_import_one_bad_field(tmp_path_factory, data) -> None:
    tmp = tmp_path_factory.mktemp("imp")
    fmt, path, n = hostile_import(tmp, data)
    try:
        merged = merge([parse_file(fmt, path, opts_for(fmt))], start=1_710_000_000.0)
        record = build_run_json(merged, "e", "r")
    except AtlasError:
        return
    for frame in merged.hosts.values():
        values = frame.to_numpy(dtype=float, na_value=np.nan)
        assert not np.isinf(values).any(), "an import never writes a non-finite number"
        assert len(frame) <= n
    start, end = record["start_time"], record["end_time"]
    if start is not None and end is not None:
        assert math.isfinite(start) and math.isfinite(end) and 0 <= end - start <= n * 300, (start, end)
    assert record["hardware"]["gpus"] is None or len(record["hardware"]["gpus"]) <= n


@settings(FAST, max_examples=60)
@given(data=st.data())
def test_fuzz_import_command_writes_only_its_record(tmp_path_factory, capsys, data) -> None:
    tmp = tmp_path_factory.mktemp("impcmd")
    fmt, path, _ = hostile_import(tmp, data)
    extra = ["--map", str(MAP)] if fmt == "csv" else []
    interval = data.draw(st.sampled_from(["5", "1e-300", "nan", "-1", "86400"]), "interval")
    before = set(tmp.rglob("*"))
    code = main(["import", "--format", fmt, "--env", "e", "--run-id", "r", "--results", str(tmp / "res"),
                 "--interval", interval, "--start", "2024-03-14T14:00:00", *extra, str(path)])  # fmt: skip
    err = capsys.readouterr().err
    assert code in (0, 2) and "Traceback" not in err
    new = set(tmp.rglob("*")) - before
    assert all(p.is_relative_to(tmp / "res") for p in new)
    if code == 0:
        assert interval in ("5", "86400")
        run = load_run(tmp / "res" / "e" / "r")
        assert run.problems == [] or all("sample" in p or "value" in p for p in run.problems), run.problems
        sound_figures(tmp / "res" / "e" / "r", "e")
    else:
        assert not (tmp / "res" / "e" / "r").exists()


# -- stage-data and the comment artifact ---------------------------------------------
segment = st.sampled_from(["a", "b", "..", "afile", "x.h5", ".", "dd" * 40])


@settings(FAST, max_examples=400)
@given(segs=st.lists(segment, min_size=1, max_size=4), good_sha=st.booleans(), sha=st.text(max_size=70),
       payload=st.binary(max_size=64))  # fmt: skip
def test_fuzz_stage_data_fetch(tmp_path_factory, capsys, segs, good_sha, sha, payload) -> None:
    from bench.stage_data import main as stage_main

    tmp = tmp_path_factory.mktemp("stage")
    box = tmp / "box" / "in"
    box.mkdir(parents=True)
    (box / "afile").write_text("x")
    source = tmp / "source.bin"
    source.write_bytes(payload)
    expected = hashlib.sha256(payload).hexdigest() if good_sha else sha
    dest = box.joinpath(*segs)
    before = set(tmp.rglob("*"))
    code = stage_main(["fetch", f"--source={source}", f"--dest={dest}", f"--sha256={expected}"])
    err = capsys.readouterr().err
    assert isinstance(code, int) and "Traceback" not in err
    new = {p.resolve() for p in set(tmp.rglob("*")) - before if p.is_file()}
    allowed = {dest.resolve(), dest.resolve().with_name(dest.resolve().name + ".sha256")}
    assert new <= allowed, new - allowed
    if code == 0:
        assert hashlib.sha256(dest.read_bytes()).hexdigest() == expected.lower()
    assert dest.resolve() == (box / "afile").resolve() or (box / "afile").read_text() == "x"


@settings(FAST, max_examples=50)
@given(timeout=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -1.0, 1e300])))
def test_fuzz_stage_data_timeout(capsys, timeout) -> None:
    code = main(["stage-data", "--env", "local", f"--timeout={timeout!r}"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if not (math.isfinite(timeout) and 0 < timeout <= 7 * 86400):
        assert code == 2 and "--timeout" in err


pr_json = st.one_of(
    json_value,
    st.fixed_dictionaries({"pr": st.one_of(st.integers(-5, 10**6), json_value),
                           "head_sha": st.one_of(st.text("0123456789abcdef", min_size=38, max_size=42), json_value),
                           "base_sha": st.one_of(st.just("b" * 40), st.text("0123456789abcdef", max_size=41),
                                                 json_value)}),
    st.integers(1, 200_000).map(lambda n: "[" * n + "]" * n),
    st.integers(1, 200_000).map(lambda n: '{"pr": ' * n),
)  # fmt: skip


@settings(FAST, max_examples=400)
@given(meta=pr_json, body=st.text(max_size=40))
def test_fuzz_comment_artifact(tmp_path_factory, capsys, meta, body) -> None:
    art = tmp_path_factory.mktemp("art")
    (art / "pr.json").write_text(meta if isinstance(meta, str) else json.dumps(meta, allow_nan=True))
    (art / "comment.md").write_text(body)
    code = main(["comment", "--artifact", str(art), "--dry-run"])
    out = capsys.readouterr()
    assert "Traceback" not in out.err

    def sha(value: object) -> bool:
        return isinstance(value, str) and len(value) == 40 and all(ch in "0123456789abcdef" for ch in value)

    valid = (
        isinstance(meta, dict)
        and isinstance(meta.get("pr"), int)
        and not isinstance(meta.get("pr"), bool)
        and meta["pr"] > 0
        and sha(meta.get("head_sha"))
        and sha(meta.get("base_sha"))
    )
    # Even a valid pr.json is refused here: the artifact has no run records to render from
    # (the comment is rendered from records, never from the fork's comment.md).
    assert code == 2, (code, out.err)
    if valid:
        assert "uploaded no run records" in out.err, out.err
    assert body not in out.out or not body.strip()  # the fork's text is never printed as the comment
    assert set(art.iterdir()) == {art / "pr.json", art / "comment.md"}
