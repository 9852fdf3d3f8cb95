"""Property: whatever damage a record suffers (killed job, half copy, newer bench), the
report is still written and names, for that run, the file that is missing or broken."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from bench.commands.report import write_report
from bench.records.read import load_run
from bench.render.escape import md
from tests.synthetic_records import RunSpec, write_run

RUNS = [("envA", "a0"), ("envA", "a1"), ("envB", "b0"), ("envB", "b1")]
FILES = ["run.json", "samples-node1.csv", "train.jsonl"]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pristine")
    for i, (env, run) in enumerate(RUNS):
        write_run(root, RunSpec(env, run, seed=i, duration_s=30, start=1.79e9 + i * 60, gpus=i % 2))
    return root


damage = st.tuples(
    st.sampled_from(range(len(RUNS))),
    st.sampled_from(["truncate", "delete", "empty", "schema", "wipe", "garbage"]),
    st.sampled_from(FILES),
    st.floats(min_value=0.0, max_value=1.0),
)


def apply(root: Path, item: tuple[int, str, str, float], expect: dict[tuple[str, str], str | None]) -> None:
    """Damage one run; record in `expect` what the report must say about (run, file)
    (the last change to a file decides; None: nothing detectable, e.g. a CSV cut
    exactly at a line end is just a shorter valid file)."""
    index, kind, name, frac = item
    env, run = RUNS[index]
    run_dir = root / env / run
    path = run_dir / name
    label = f"{env}/{run}"
    if kind == "wipe":
        for f in run_dir.iterdir():
            f.unlink()
        for f in FILES:
            expect[(label, f)] = None
        expect[(label, "run.json")] = "run.json is missing"
        return
    if not path.exists():
        return  # removed by an earlier damage, which still stands
    data = path.read_bytes()
    if kind == "delete":
        path.unlink()
        expect[(label, name)] = "no samples-<host>.csv" if name.startswith("samples") else f"{name} is missing"
    elif kind == "empty":
        path.write_bytes(b"")
        expect[(label, name)] = name
    elif kind == "schema":
        try:
            meta = json.loads(data)
        except ValueError:
            return
        if name != "run.json" or not isinstance(meta, dict):
            return
        meta["schema_version"] = 99
        path.write_text(json.dumps(meta))
        expect[(label, name)] = "schema_version 99"
    elif kind == "garbage":
        path.write_bytes(data + b"\x00\xff{not json,,\n")
        expect[(label, name)] = name
    else:
        cut = int(len(data) * frac)
        if cut >= len(data):
            return
        path.write_bytes(data[:cut])
        at_line_end = cut > 0 and data[cut - 1 : cut] == b"\n"
        expect[(label, name)] = None if (at_line_end and name.startswith("samples")) else name


# No shrinking phase: each example writes a whole report (charts included), and a failing
# example is already small (at most 4 damages, each printed by hypothesis).
@settings(
    max_examples=10,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@pytest.mark.slow
@given(st.lists(damage, min_size=1, max_size=4))
@example([(0, "truncate", "train.jsonl", 0.5)])
@example([(1, "truncate", "samples-node1.csv", 0.37)])
@example([(2, "schema", "run.json", 0.0)])
@example([(3, "wipe", "run.json", 0.0)])
@example([(0, "delete", "samples-node1.csv", 0.0), (1, "empty", "train.jsonl", 0.0)])
def test_report_survives_damage(pristine: Path, tmp_path_factory: pytest.TempPathFactory, damages) -> None:
    root = tmp_path_factory.mktemp("damaged") / "results"
    shutil.copytree(pristine, root)
    expect: dict[tuple[str, str], str | None] = {}
    for d in damages:
        apply(root, d, expect)
    out = root.parent / "reports"
    res = write_report(root, out, allow_different=True)
    text = res.readme.read_text()
    problems = text.split("## Data problems", 1)[1]
    lines = {line.split("`")[1]: line for line in problems.splitlines() if line.startswith("- `")}
    for (label, _), needle in sorted(expect.items()):
        if needle is None:
            continue
        assert label in lines, f"{label} not named in Data problems:\n{problems}"
        assert md(needle) in lines[label], f"{needle!r} not named for {label}: {lines[label]}"
    assert (out / "README.md").is_file()


def test_each_kind_of_damage_is_named(tmp_path: Path) -> None:
    write_run(tmp_path, RunSpec("e", "r", duration_s=20))
    run_dir = tmp_path / "e" / "r"
    jsonl = run_dir / "train.jsonl"
    jsonl.write_bytes(jsonl.read_bytes()[:-20])  # cut inside the run_stop line
    csv = run_dir / "samples-node1.csv"
    csv.write_bytes(csv.read_bytes()[:-3])
    run = load_run(run_dir)
    text = " | ".join(run.problems)
    assert "train.jsonl: last line" in text and "incomplete" in text
    assert "no run_stop" in text
    assert "samples-node1.csv: last row is incomplete" in text
    assert len(run.samples["node1"]) == 20  # 21 rows written, the cut one dropped


def test_samples_whose_clock_went_backwards_are_dropped_and_named(tmp_path: Path) -> None:
    write_run(tmp_path, RunSpec("e", "r", duration_s=20))
    csv = tmp_path / "e" / "r" / "samples-node1.csv"
    lines = csv.read_text().splitlines()
    header, rows = lines[0], lines[1:]
    cells = rows[5].split(",")
    cells[0] = str(float(cells[0]) - 3600)  # one row an hour in the past
    rows[5] = ",".join(cells)
    csv.write_text("\n".join([header, *rows]) + "\n")
    run = load_run(tmp_path / "e" / "r")
    named = "samples-node1.csv: sample time goes backwards: 1 row(s) earlier than a row before them"
    assert any(named in p for p in run.problems), run.problems
    assert len(run.samples["node1"]) == len(rows) - 1
    assert run.samples["node1"]["time"].is_monotonic_increasing
