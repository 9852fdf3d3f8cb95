"""Fuzz: hostile records through check, status, collect, compare and report.

Generated run.json, samples CSV, train.jsonl, submit.json, env.yaml and tar members
(hypothesis, seeded by its database-free default settings below). Over 1,000 examples in
all; every one must end without a traceback (an AtlasError is a clear refusal, allowed),
put no negative or non-finite number into a report, and write nothing outside the
results tree. Charts are drawn for a few reports only (matplotlib takes seconds each);
the Markdown and runs.csv of every report are checked.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import signal
import tarfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.analysis.compare import compare_runs
from bench.commands.report import write_report
from bench.environments.facts import environment_facts
from bench.environments.load import Environment
from bench.errors import AtlasError
from bench.records import jobfiles
from bench.records.check import samples_problems
from bench.records.place import place_run
from bench.records.read import find_runs, load_run, read_samples
from bench.records.schema import schema_problems
from bench.records.trainlog import images_seen, read_train_log, steady_images_per_s, time_to_train
from bench.render import charts
from tests.synthetic_records import RunSpec, write_run

FAST = settings(
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
HOSTILE_TEXT = ["<img src=https://x/beacon>", "**bold** | cell", "@octocat", "# heading", "`code`", "[l](http://e)"]
text = st.one_of(st.sampled_from(HOSTILE_TEXT), st.text(max_size=40))
weird_number = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from([0, -1, 1e308, -1e308, 10**400, 1.7976931348623157e308]),
)
leaf = st.one_of(st.none(), st.booleans(), weird_number, text)
json_value = st.recursive(
    leaf, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(text, kids, max_size=4), max_leaves=12
)


def dumps(value: object) -> str:
    """JSON as a job could write it: NaN/Infinity allowed, huge integers as digits."""
    return json.dumps(value, allow_nan=True)


# -- run.json ------------------------------------------------------------------------
RUN_KEYS = ["run_id", "env", "experiment", "start_time", "end_time", "exit", "git", "hardware", "software",
            "scheduler", "config_sha256", "samples_rows", "sample_interval_s", "environment", "hosts"]  # fmt: skip
run_json_patch = st.dictionaries(st.sampled_from(RUN_KEYS), json_value, max_size=6)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pristine")
    for i in range(2):
        write_run(root, RunSpec("a", f"a{i}", seed=i, duration_s=12))
        write_run(root, RunSpec("b", f"b{i}", seed=5 + i, duration_s=12, gpus=1))
    return root


def copy_tree(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def no_bad_numbers(folder: Path) -> None:
    """runs.csv: every number finite and >= 0; README: no nan/inf shown."""
    readme = (folder / "README.md").read_text()
    table_rows = "\n".join(line for line in readme.splitlines() if line.startswith("|"))
    assert not re.search(r"(?<![\w\\'])-?(nan|inf)(?![\w'])", table_rows, re.I), "non-finite number in a table"
    for row in csv.DictReader(io.StringIO((folder / "runs.csv").read_text())):
        for key, cell in row.items():
            try:
                value = float(cell)
            except (TypeError, ValueError):
                continue
            assert math.isfinite(value) and value >= 0, f"runs.csv {key} = {cell}"
    for line in readme.splitlines():  # a record never adds a raw HTML tag, heading or table cell
        assert "<img" not in line and "@octocat" not in line


def report_case(tmp: Path, pristine: Path, patches: list[dict], raw: bytes | None, draw: bool) -> None:
    results = copy_tree(pristine, tmp / "results")
    for run_dir, patch in zip(sorted(results.glob("*/*")), patches):
        meta = json.loads((run_dir / "run.json").read_text())
        meta.update(patch)
        (run_dir / "run.json").write_text(dumps(meta))
    if raw is not None:
        (results / "a" / "a0" / "run.json").write_bytes(raw)
    runs = find_runs(results)
    for run in runs:
        schema_problems(run.meta)
    try:
        compare_runs(runs, allow_different=True, allow_dirty=True)
        res = write_report(results, tmp / "reports", allow_different=True, allow_dirty=True)
    except AtlasError:
        return
    no_bad_numbers(res.folder)
    outside = {p for p in tmp.rglob("*")} - {p for p in tmp.rglob("*") if p.is_relative_to(results)}
    assert all(p.is_relative_to(tmp / "reports") for p in outside)


@settings(FAST, max_examples=40)
@given(patches=st.lists(run_json_patch, min_size=1, max_size=4), raw=st.none() | st.binary(max_size=200))
def test_fuzz_run_json_through_compare_and_report(pristine, tmp_path_factory, monkeypatch, patches, raw) -> None:
    for name in ("timeseries_chart", "summary_bars", "history_chart"):
        monkeypatch.setattr(charts, name, lambda *a, **k: False)
    report_case(tmp_path_factory.mktemp("r"), pristine, patches, raw, draw=False)


@settings(FAST, max_examples=2)
@given(patches=st.lists(run_json_patch, min_size=4, max_size=4))
def test_fuzz_run_json_report_with_charts(pristine, tmp_path_factory, patches) -> None:
    report_case(tmp_path_factory.mktemp("c"), pristine, patches, None, draw=True)


@settings(FAST, max_examples=300)
@given(record=json_value | st.dictionaries(st.sampled_from(RUN_KEYS), json_value), raw=st.binary(max_size=300))
def test_fuzz_run_json_check(tmp_path_factory, record, raw) -> None:
    folder = tmp_path_factory.mktemp("k") / "e" / "r"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(dumps(record))
    load_run(folder, "e")
    (folder / "run.json").write_bytes(raw)
    load_run(folder, "e")


# -- samples CSV, train.jsonl ----------------------------------------------------------
cell = st.one_of(st.sampled_from(["", "nan", "inf", "-inf", "1e400", "-5", "x", "1,2"]), weird_number.map(str))
samples_text = st.lists(st.lists(cell, min_size=1, max_size=6), max_size=8).map(
    lambda rows: "time,proc_cpu_percent,proc_rss_bytes,host_cpu_percent\n" + "\n".join(",".join(r) for r in rows)
)


@settings(FAST, max_examples=200)
@given(body=samples_text | st.binary(max_size=300).map(lambda b: b.decode("latin-1")))
def test_fuzz_samples_csv(tmp_path_factory, body) -> None:
    path = tmp_path_factory.mktemp("s") / "samples-h.csv"
    path.write_bytes(body.encode("utf-8", "surrogatepass"))
    df, _ = read_samples(path)
    if df is None:
        return
    samples_problems(path.name, df, {"hardware": {"cpu_cores_logical": 2}})
    for column in ("time", "proc_cpu_percent", "proc_rss_bytes", "host_cpu_percent"):
        if column in df.columns:
            values = df[column].dropna()
            assert ((values >= 0) & values.map(math.isfinite)).all(), (column, list(values))


event = st.fixed_dictionaries(
    {"event": st.sampled_from(["run_start", "train", "run_stop", "eval"]), "time": weird_number},
    optional={"images_per_s": weird_number, "images_seen": weird_number, "iteration": weird_number},
)


@settings(FAST, max_examples=200)
@given(events=st.lists(event | json_value, max_size=10), tail=st.binary(max_size=60))
def test_fuzz_train_jsonl(tmp_path_factory, events, tail) -> None:
    path = tmp_path_factory.mktemp("t") / "train.jsonl"
    path.write_bytes("".join(dumps(e) + "\n" for e in events).encode() + tail)
    log = read_train_log(path)
    total, _ = time_to_train(log)
    assert total is None or (math.isfinite(total) and total >= 0)
    rates = steady_images_per_s(log)
    assert all(math.isfinite(r) and r >= 0 for r in rates)
    seen = images_seen(log)
    assert seen is None or (math.isfinite(seen) and seen >= 0)


# -- submit.json: status and cancel of the local target ---------------------------------
@settings(FAST, max_examples=150)
@given(info=json_value | st.fixed_dictionaries({"pid": weird_number | text}), record=json_value)
def test_fuzz_submit_json_status_and_cancel(tmp_path_factory, monkeypatch, info, record) -> None:
    from bench.targets import target_class

    tmp = tmp_path_factory.mktemp("p")
    target = target_class("local")(Environment("loc", "local", tmp, {"kind": "local", "runs_dir": str(tmp / "runs")}))
    run_dir = tmp / "runs" / "loc" / "r1"
    run_dir.mkdir(parents=True)
    (run_dir / "submit.json").write_text(dumps(info))
    (run_dir / "run.json").write_text(dumps(record))
    signalled: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: signalled.append((pid, sig)))
    monkeypatch.setattr(signal, "pidfd_send_signal", lambda fd, sig: signalled.append((fd, sig)))
    target.status("r1")
    target.cancel("r1")
    assert all(pid > 1 for pid, _ in signalled)


# -- env.yaml ----------------------------------------------------------------------------
env_keys = st.sampled_from(["kind", "cost", "hardware", "local", "slurm", "runs_dir", "ansible_host", "image", "x"])
env_yaml = st.dictionaries(env_keys, json_value, max_size=5).map(
    lambda d: {"kind": st_kind(d.get("kind")), **{k: v for k, v in d.items() if k != "kind"}}
)


def st_kind(value: object) -> object:
    return value if not isinstance(value, str) else value[:1] and "local"


@settings(FAST, max_examples=150)
@given(data=env_yaml | json_value, raw=st.none() | st.binary(max_size=100))
def test_fuzz_env_yaml_validate(tmp_path_factory, data, raw) -> None:
    from bench.commands.validation import check_env

    clusters = tmp_path_factory.mktemp("clusters")
    (clusters / "e").mkdir()
    body = raw if raw is not None else yaml.safe_dump(data, allow_unicode=True).encode()
    (clusters / "e" / "env.yaml").write_bytes(body)
    problems = check_env("e", clusters)
    if isinstance(data, dict) and raw is None and any(str(k).startswith("ansible_") for k in data):
        assert problems


# -- tar members (the OpenShift copy) and collect's placement ------------------------------
member = st.tuples(
    st.sampled_from(["R/run.json", "R/x", "R/../evil", "/abs", "R/sub/y", "other/z", "R", "R/a/../../b"]),
    st.sampled_from(
        [tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.FIFOTYPE, tarfile.CHRTYPE]
    ),  # fmt: skip
    st.sampled_from(["../other/run.json", "/etc/passwd", "R/run.json", "/dev/zero", "x"]),
)


@settings(FAST, max_examples=150)
@given(members=st.lists(member, max_size=8))
def test_fuzz_tar_members(tmp_path_factory, members) -> None:
    tmp = tmp_path_factory.mktemp("tar")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, kind, link in members:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, link
            data = b"{}" if kind == tarfile.REGTYPE else b""
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    out = tmp / "out"
    with tarfile.open(fileobj=buf) as tar:
        try:
            keep, _ = jobfiles.tar_members(tar, "R")
        except ValueError:
            return
        try:
            tar.extractall(out, members=keep, filter="data")
        except (tarfile.TarError, OSError):
            pass
    for path in tmp.rglob("*"):
        assert path.is_relative_to(out) or path == out
        assert path.is_dir() or (os.path.isfile(path) and not os.path.islink(path)), path


planted = st.lists(
    st.tuples(
        st.sampled_from(["job.log", "train.jsonl", "samples-a.csv", "run.json", "x"]),
        st.sampled_from(["file", "link-out", "link-other", "fifo", "dev"]),
    ),
    max_size=5,
)


@settings(FAST, max_examples=100)
@given(files=planted, record=json_value)
def test_fuzz_collect_places_only_data(tmp_path_factory, files, record) -> None:
    tmp = tmp_path_factory.mktemp("place")
    secret = tmp / "secret"
    secret.write_text("secret")
    src = tmp / "job"
    src.mkdir()
    (src / "run.json").write_text(dumps(record))
    for name, kind in files:
        path = src / name
        if path.exists() or path.is_symlink():
            path.unlink()
        if kind == "file":
            path.write_text("data")
        elif kind == "link-out":
            path.symlink_to(secret)
        elif kind == "link-other":
            path.symlink_to(tmp / "results" / "e" / "other" / "run.json")
        elif kind == "fifo":
            os.mkfifo(path)
        else:
            path.symlink_to("/dev/zero")
    env = Environment("e", "local", tmp, {"kind": "local"})

    def fetch(into: Path) -> dict:
        return {"skipped_files": jobfiles.copy_record(src, into, extra_files=("job.log",))}

    before = {p: p.read_bytes() for p in [secret]}
    try:
        placed = place_run(tmp / "results", environment_facts(env), "r", fetch)
    except AtlasError:
        return
    assert {p: p.read_bytes() for p in before} == before
    for path in placed.path.rglob("*"):
        assert path.is_file() and not path.is_symlink(), path
    assert all(p.is_relative_to(tmp) for p in placed.path.rglob("*"))
