"""The report's "Noise floor" section reads results/<env>/noise.json where it is sound,
falls back to the history (naming a damaged file), and states the minimum detectable
effect of the runs it compares. Synthetic records; no charts drawn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.analysis.report_data import read_report_data
from bench.cli import main
from bench.render.noise_words import report_lines
from tests.bench.commands.test_noise import COMMITS, history
from tests.synthetic_records import RunSpec, write_run


def test_the_report_states_the_stored_floor_and_what_its_runs_can_find(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    history(results)  # local: 3 commits x 3 runs
    for i in range(2):  # a second environment of the last commit: two runs, too few for a spread
        write_run(results, RunSpec("moc", f"m{i}", sha=COMMITS[-1], start=1_789_500_000 + i * 100, seed=i))
    assert main(["noise", "--env", "local", "--results", str(results)]) == 0
    capsys.readouterr()
    stored = json.loads((results / "local" / "noise.json").read_text())
    date, stored_cv = stored["date"], stored["experiments"]["smoke"]["metrics"]["images_per_s"]["cv"]
    data = read_report_data(results, commit=COMMITS[-1])
    by_env = {n.env: n for n in data.noise}
    local, moc = by_env["local"], by_env["moc"]
    assert local.source == f"{results / 'local' / 'noise.json'} ({date})" and local.problem == "" and local.runs == 3
    # 3 runs a side cannot reach the level a lone change among the report's metrics is judged at
    # (the smallest two-sided p of 3 vs 3 is 0.1): nothing is detectable, and the line says so
    assert local.floors and local.detectable == {}
    lines = report_lines(data.noise)
    local_line = next(x for x in lines if x.startswith("local: "))
    assert "Noise floor (1.96 × the CV of one commit's runs, from " in local_line
    assert "Minimum detectable effect with 3 runs a side: none (too few runs" in local_line
    assert moc.floors == {} and any(x.startswith("moc: no noise floor") for x in lines)
    # the Differences (moc against local) are held to the one floor there is, local's
    ips = next(p for p in data.result.pairs if p.metric == "images_per_s")
    assert ips.noise is not None and ips.noise.env == "local"
    assert ips.noise.floor == pytest.approx(local.floors["images_per_s"].floor)
    # a damaged file: named in one line, the history's floor used instead
    (results / "local" / "noise.json").write_text("{")
    data = read_report_data(results, commit=COMMITS[-1])
    local = next(n for n in data.noise if n.env == "local")
    assert "noise.json is damaged (" in local.problem and local.source == "the history (9 runs of 3 commits)"
    assert local.floors["images_per_s"].cv == pytest.approx(stored_cv, abs=1e-6)  # the same runs, recomputed
