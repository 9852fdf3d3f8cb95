"""The run record's schema and `bench check`: every damaged form is a named problem."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.cli import main
from bench.records.contract import RUN_JSON, RUN_JSON_KEYS
from bench.records.read import load_run
from bench.records.schema import run_schema, schema_problems
from tests.synthetic_records import RunSpec, write_run


def _run(tmp_path: Path, **kw) -> Path:
    return write_run(tmp_path / "results", RunSpec("local", "r1", gpus=1, **kw))


def _edit_json(run_dir: Path, fn: Callable[[dict], object]) -> None:
    path = run_dir / RUN_JSON
    meta = json.loads(path.read_text())
    new = fn(meta)
    path.write_text(json.dumps(meta if new is None else new))


def _edit_samples(run_dir: Path, column: str, fn: Callable[[list[float]], list[float]]) -> None:
    path = next(run_dir.glob("samples-*.csv"))
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    i = header.index(column)
    rows = [line.split(",") for line in lines[1:]]
    values = fn([float(r[i]) for r in rows])
    for r, v in zip(rows, values):
        r[i] = repr(v)
    path.write_text("\n".join([lines[0], *(",".join(r) for r in rows)]) + "\n")


DAMAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "only schema_version": (
        lambda d: _edit_json(d, lambda m: {"schema_version": 1}),
        "empty record (no key but schema_version)",
    ),
    "empty object": (lambda d: _edit_json(d, lambda m: {}), "empty record"),
    "a list": (lambda d: _edit_json(d, lambda m: [1, 2]), "not an object"),
    "newer version": (lambda d: _edit_json(d, lambda m: m.update(schema_version=2)), "schema_version 2"),
    "bad exit status": (
        lambda d: _edit_json(d, lambda m: m["exit"].update(status="great")),
        "exit.status: 'great' is not one of",
    ),
    "no exit": (lambda d: _edit_json(d, lambda m: m.pop("exit") and None), "'exit' is a required property"),
    "exit status unknown (not an import)": (
        lambda d: _edit_json(d, lambda m: m["exit"].update(status=None)),
        "exit.status: None is not of type 'string'",
    ),
    "no config hash": (lambda d: _edit_json(d, lambda m: m.update(config_sha256=None)), "config_sha256 is missing"),
    "bad config hash": (
        lambda d: _edit_json(d, lambda m: m.update(config_sha256="xyz")),
        "config_sha256: 'xyz' is not valid",
    ),
    "git sha from elsewhere": (
        lambda d: _edit_json(d, lambda m: m["git"].update(sha="not a sha")),
        "git.sha: 'not a sha' is not valid",
    ),
    "negative queue wait": (
        lambda d: _edit_json(d, lambda m: m["scheduler"].update(queue_wait_s=-3)),
        "scheduler.queue_wait_s: -3 is not valid",
    ),
    "end before start": (
        lambda d: _edit_json(d, lambda m: m.update(end_time=m["start_time"] - 100)),
        "end_time",
    ),
    "samples file named but missing": (
        lambda d: _edit_json(d, lambda m: m.update(samples_file="samples-gone.csv")),
        "names samples file 'samples-gone.csv', which is missing",
    ),
    "no environment facts": (
        lambda d: _edit_json(d, lambda m: m.pop("environment") and None),
        "no 'environment' facts",
    ),
    "train log missing": (lambda d: (d / "train.jsonl").unlink(), "train.jsonl is missing"),
    "time goes backwards": (
        lambda d: _edit_samples(d, "time", lambda t: [*t[:10], t[5], *t[11:]]),
        "sample time goes backwards",
    ),
    "GPU util over 100": (
        lambda d: _edit_samples(d, "gpu0_DCGM_FI_DEV_GPU_UTIL", lambda v: [x * 100 for x in v]),
        "gpu0_DCGM_FI_DEV_GPU_UTIL outside 0..100",
    ),
    "negative memory": (
        lambda d: _edit_samples(d, "proc_rss_bytes", lambda v: [-x for x in v]),
        "proc_rss_bytes outside >= 0",
    ),
    "CPU % as a fraction of all cores x 100": (
        lambda d: _edit_samples(d, "proc_cpu_percent", lambda v: [x * 100 for x in v]),
        "proc_cpu_percent outside",
    ),
    "GPU memory over its total": (
        lambda d: _edit_samples(d, "gpu0_DCGM_FI_DEV_FB_USED", lambda v: [x * 10 for x in v]),
        "gpu0 memory used exceeds its total",
    ),
}


def test_a_sound_tree_checks_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = _run(tmp_path)
    assert load_run(run_dir).problems == []
    assert main(["check", str(tmp_path / "results")]) == 0
    assert "1 run record(s) checked, 0 with problems" in capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(DAMAGES))
def test_each_damaged_form_is_a_named_problem(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    damage, needle = DAMAGES[name]
    run_dir = _run(tmp_path)
    damage(run_dir)
    assert main(["check", str(tmp_path / "results")]) == 1
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith(str(run_dir))]
    assert any(needle in line for line in lines), f"{needle!r} not in:\n{out}"
    assert "Traceback" not in out


def test_check_of_a_missing_tree_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not a folder" in err[0]


def test_schema_is_valid_and_covers_every_key_the_recorder_writes() -> None:
    schema = run_schema()
    assert schema["properties"]["schema_version"] == {"const": 1}
    assert set(RUN_JSON_KEYS) <= set(schema["properties"])
    assert schema_problems({"schema_version": 1}) == [
        "run.json is an empty record (no key but schema_version): no run facts at all"
    ]


IMPORT = {"by": "bench import", "sources": [{"file": "sar.txt", "format": "sar"}], "clock": "absolute"}


def test_only_an_import_may_leave_hosts_start_and_exit_status_unknown(tmp_path: Path) -> None:
    meta = json.loads((_run(tmp_path) / RUN_JSON).read_text())
    meta.update(hosts=None, start_time=None)
    meta["exit"].update(status=None, signals_forwarded=None)
    problems = schema_problems(meta)
    for key in ("hosts", "start_time", "exit.status", "exit.signals_forwarded"):
        assert any(p.startswith(f"run.json: {key}: None is not of type") for p in problems), (key, problems)
    meta["import"] = IMPORT
    assert any("'facts_unknown' is a dependency of 'import'" in p for p in schema_problems(meta))
    meta["facts_unknown"] = ["exit.signals_forwarded", "exit.status", "hosts", "start_time"]
    assert schema_problems(meta) == []
    meta["import"] = {**IMPORT, "by": "a script"}
    assert schema_problems(meta) == ["run.json: import.by: 'bench import' was expected"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from([*RUN_JSON_KEYS, "environment"]), value=json_values)
def test_any_value_under_any_key_reads_without_a_traceback(tmp_path: Path, key: str, value: object) -> None:
    run_dir = tmp_path / "results" / "local" / "r1"
    if not run_dir.exists():
        write_run(tmp_path / "results", RunSpec("local", "r1", duration_s=10))
    path = run_dir / RUN_JSON
    original = path.read_text()
    try:
        meta = json.loads(original)
        meta[key] = value
        path.write_text(json.dumps(meta))
        run = load_run(run_dir)  # never raises
        assert set(run.schema_problems) <= set(run.problems)
        from bench.analysis.compare import compare_runs

        compare_runs([run], allow_different=True)  # nor does the analysis of what was read
    finally:
        path.write_text(original)
