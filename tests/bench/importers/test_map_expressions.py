"""A map's `derived:` expressions run no code (bench.importers.expression).

pandas' DataFrame.eval, which evaluated them before, let `@name` reach bench's own
variables and call methods: `@pd.io.common.os.system('id > F')` ran `id`. Each escape
below must be refused naming the map key, with no file written in the scratch folder
and no process started (a process would have written its marker); one import runs in
a separate process under `unshare -n` (no network) where the machine allows it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench.importers.expression import ExpressionError, parse_expression
from tests.bench.importers.conftest import assert_valid_record, one_error_line

REPO = Path(__file__).resolve().parents[3]

# Each writes or runs something if evaluated; MARK is replaced by a path in the scratch folder.
ESCAPES = [
    "@pd.io.common.os.system('id > MARK') * 0 + 100 - `%idle`",
    "@Path('MARK').write_text('x') * 0 + 100 - `%idle`",
    "@source.to_csv('MARK') * 0 + `%idle`",
    "@np.save('MARK', 1) * 0 + `%idle`",
    "`%idle` + @x",
    "__import__('os').system('id > MARK') * 0 + `%idle`",
    "open('MARK', 'w').write('x') * 0 + `%idle`",
    "eval(\"open('MARK','w')\") * 0 + `%idle`",
    "exec(\"open('MARK','w')\") * 0 + `%idle`",
    "getattr(`%idle`, 'to_csv')('MARK')",
    "`%idle`.to_csv('MARK')",
    "idle.to_csv('MARK')",
    "`%idle`.__class__.__mro__[-1].__subclasses__()",
    "().__class__.__bases__[0].__subclasses__()",
    "`%idle`[0]",
    "(lambda: open('MARK', 'w'))() * 0 + `%idle`",
    "[open('MARK', 'w') for _ in (1,)]",
    "{open('MARK', 'w'): 1}",
    "(open('MARK', 'w') if `%idle` else 0)",
    "(f := open('MARK', 'w'))",
    'f\'{open("MARK", "w")}\'',
    "'MARK'",
    "`%idle` and 1",
    "`%idle` @ `%idle`",
    "~`%idle`",
    "`%idle` % 2",
    "`%idle` // 2",
    "`%idle` << 2",
    "`%idle` is None",
    "`%idle` in (1, 2)",
    "sum(`%idle`)",
    "abs(x=`%idle`)",
    "max(*`%idle`)",
    "True + `%idle`",
    "clip(`%idle`, 0)",
    "`%idle",
    "``",
    "(" * 500 + "`%idle`" + ")" * 500,
    "(" * 300 + "idle" + ")" * 300,
    "-" * 999 + "idle",
    "idle+" * 150 + "1",
    "-" * 400 + "idle",
]


def test_every_escape_is_refused_by_the_parser() -> None:
    for text in ESCAPES:
        with pytest.raises(ExpressionError):
            parse_expression(text)


def _scratch(tmp_path: Path) -> tuple[Path, Path]:
    """(scratch folder holding only cpu.csv, the import's results folder outside it)."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "cpu.csv").write_text("t,%idle,idle\n0,90,90\n1,80,80\n2,70,70\n")
    return scratch, tmp_path / "res"


def _map(scratch: Path, expression: str) -> str:
    quoted = expression.replace("MARK", str(scratch / "MARK")).replace("\\", "\\\\").replace('"', '\\"')
    return f'time: {{column: t, format: unix}}\nderived: {{host_cpu_percent: "{quoted}"}}\n'


@pytest.mark.parametrize("expression", ESCAPES)
def test_an_escape_is_refused_naming_the_key_and_writes_nothing(
    tmp_path: Path, bench, monkeypatch: pytest.MonkeyPatch, expression: str
) -> None:
    scratch, results = _scratch(tmp_path)
    map_path = tmp_path / "MAP.yaml"
    map_path.write_text(_map(scratch, expression))
    monkeypatch.chdir(scratch)  # a relative 'MARK' would land here
    code, out, err = bench("import", "--map", map_path, "--env", "e", "--run-id", "r", "--results", results, "cpu.csv")
    assert code == 2, (out, err)
    one_error_line(err, "derived.host_cpu_percent:")
    assert sorted(p.name for p in scratch.iterdir()) == ["cpu.csv"]  # no MARK: nothing written, nothing ran
    assert not results.exists()


def test_the_issues_escape_runs_nothing_in_a_process_without_network(tmp_path: Path) -> None:
    """The import as a user runs it, in its own process; under `unshare -n` when allowed."""
    scratch, results = _scratch(tmp_path)
    map_path = tmp_path / "MAP.yaml"
    map_path.write_text(_map(scratch, ESCAPES[0]))
    argv = [sys.executable, "-m", "bench", "import", "--map", str(map_path), "--env", "e", "--run-id", "r"]
    argv += ["--results", str(results), "cpu.csv"]
    isolated = (
        shutil.which("unshare") and subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0
    )
    if not isolated:
        pytest.skip("unshare -n is not allowed here (needs root or user namespaces): ran no isolated import")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(["unshare", "-n", *argv], cwd=scratch, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "derived.host_cpu_percent:" in done.stderr and "'@'" in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in scratch.iterdir()) == ["cpu.csv"]
    assert not results.exists()


@pytest.mark.parametrize(
    "expression, expected",
    [
        ("100 - `%idle`", [10, 20, 30]),
        ("100 - idle", [10, 20, 30]),
        ("where(`%idle` > 75, 1, 2) * 10", [10, 10, 20]),
        ("clip(100 - idle, 15, 25)", [15, 20, 25]),
        ("max(100 - idle, 25) + min(idle, 0)", [25, 25, 30]),
        ("abs(idle - 100) ** 1", [10, 20, 30]),
        ("(idle >= 80) * 50 + (idle != 80) * 1", [51, 50, 1]),
        ("-(-idle) / 10 + 0.5e1 * 2 - 10", [9, 8, 7]),
    ],
)
def test_the_grammar_computes_per_row(tmp_path: Path, bench, expression: str, expected: list[float]) -> None:
    scratch, results = _scratch(tmp_path)
    map_path = tmp_path / "MAP.yaml"
    map_path.write_text(_map(scratch, expression))
    code, _, err = bench(
        "import", "--map", map_path, "--env", "e", "--run-id", "r", "--results", results, scratch / "cpu.csv"
    )
    assert code == 0, err
    record = assert_valid_record(results / "e" / "r")
    rows = (results / "e" / "r" / record["samples_file"]).read_text().splitlines()[1:]
    assert [float(r.split(",")[1]) for r in rows] == expected


def test_bounds_are_named_and_a_deep_formula_within_them_computes() -> None:
    with pytest.raises(ExpressionError, match="above the bound of 1,000"):
        parse_expression("idle + " * 200 + "1")
    with pytest.raises(ExpressionError, match="more than 200 parts"):
        parse_expression("idle+" * 150 + "1")
    deep = parse_expression("abs(" * 150 + "idle" + ")" * 150)
    assert deep.evaluate({"idle": np.array([-2.0])}, 1).tolist() == [2.0]


def test_a_missing_cell_stays_missing_through_every_function() -> None:
    values = {"a": np.array([1.0, np.nan]), "b": np.array([np.nan, 2.0])}
    for text in (
        "max(a, b)",
        "min(a, b)",
        "a > b",
        "where(a > b, 1, 2)",
        "where(b > 0, a, 2)",
        "clip(a, 0, b)",
        "abs(a) + b",
    ):
        out = parse_expression(text).evaluate(values, 2)
        assert np.isnan(out).all(), text


def test_a_name_that_is_not_a_column_is_refused_naming_it(tmp_path: Path, bench) -> None:
    scratch, results = _scratch(tmp_path)
    map_path = tmp_path / "MAP.yaml"
    map_path.write_text(_map(scratch, "100 - busy"))
    code, _, err = bench(
        "import", "--map", map_path, "--env", "e", "--run-id", "r", "--results", results, scratch / "cpu.csv"
    )
    assert code == 2
    one_error_line(err, "derived.host_cpu_percent:", "'busy', not a column of cpu.csv", "(its columns: t, %idle, idle)")
