"""Issue 36 items 4 and 5: the report's time figures are phases or named sums of them, the
identities are printed once with numbers that add up, a phase a kind does not have is
named, the timeline chart draws each environment's median run with its spread, and
times are rounded to their clock.

Reports written by `bench report`'s own code from synthetic records in the on-disk
format (`tests/synthetic_records.py`, timelines as collection builds them).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from bench.analysis.compare import compare_runs
from bench.analysis.metrics import fmt
from bench.analysis.time_sums import SUMS
from bench.commands.report import write_report
from bench.records.read import find_runs
from bench.render import charts
from bench.render.tables import runs_table, summary_table
from bench.render.time_words import seconds_text
from bench.render.timeline_section import env_lines, median_bar
from tests.synthetic_records import RunSpec, write_run

SHA = "a" * 40
# (duration_s, queue wait) of three Slurm runs: the phase medians (train of one run, queue
# of another) add up to more than any run's total, as in the demo (31.2 vs 30.6 s)
SLURM_RUNS = ((60, 30.0), (90, 2.0), (75, 14.0))


def _results(root: Path) -> Path:
    for i, (duration, wait) in enumerate(SLURM_RUNS):
        write_run(root, RunSpec("local", f"l{i}", sha=SHA, seed=i, timeline=True, queue_resolution_s=None,
                                duration_s=50 + 10 * i, start=1.79e9 + i * 100))  # fmt: skip
        write_run(root, RunSpec("local-slurm", f"s{i}", sha=SHA, seed=5 + i, timeline=True, queue_wait_s=wait,
                                queue_resolution_s=1.0, duration_s=duration, start=1.79e9 + i * 100 + 50))  # fmt: skip
    return root


def _interval(text: str) -> tuple[float, float]:
    """The values a shown number stands for: "≤ 1" is 0..1, "12.3" is 12.25..12.35."""
    text = text.replace(",", "").removesuffix(" s").strip()
    if text.startswith("≤"):
        return 0.0, float(text[1:])
    half = 0.5 * 10 ** -len(text.split(".")[1]) if "." in text else 0.5
    return float(text) - half, float(text) + half


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, pd.DataFrame, Path]:
    root = tmp_path_factory.mktemp("vocab")
    res = write_report(_results(root / "results"), root / "out")
    return res.readme.read_text(), pd.read_csv(res.folder / "runs.csv"), res.folder


def test_each_identity_is_printed_once_and_its_numbers_add_up(report) -> None:
    text, runs, _ = report
    checked = 0
    for phase_sum in SUMS[1:]:  # no run here came from a push
        (line,) = [ln for ln in text.splitlines() if ln.startswith(f"- **{phase_sum.label} = ")]
        for env, run_id, total, terms in re.findall(r"(\S+) `(\w+)`: ([^=]+) = ([^(·]+)", line):
            row = runs[(runs.env == env) & (runs.run_id == run_id)].iloc[0]
            low, high = _interval(total)
            assert low <= row[phase_sum.key] <= high  # the run's own figure, at its precision
            parts = [_interval(t.strip().split(" ", 1)[1]) for t in terms.split(" + ")]
            assert sum(p[0] for p in parts) <= high and low <= sum(p[1] for p in parts), line
            for term in terms.split(" + "):  # each term is that run's phase
                phase, shown = term.strip().split(" ", 1)
                lo, hi = _interval(shown)
                assert lo - 1e-9 <= row[f"phase_{phase}_s"] <= hi + 1e-9, (term, row[f"phase_{phase}_s"])
            checked += 1
        assert text.count(f"**{phase_sum.label} = ") == 1
    assert checked == 8  # 4 sums x 2 environments
    assert "start-up = launch + warmup" in text and "time to train = warmup + train" in text


def test_figures_that_are_not_phase_sums_are_not_in_the_report(report) -> None:
    text, runs, _ = report
    for gone in ("start-up (first start)", "start-up (restarts)", "job wall time", "(all but train)"):
        assert gone not in text
    assert (runs.time_to_train_s - runs.phase_warmup_s - runs.phase_train_s).abs().max() < 1e-6
    assert "wall_s" in runs.columns  # the cost basis stays in runs.csv


def test_a_phase_the_kind_does_not_have_is_named_in_every_table(report) -> None:
    text, _, folder = report
    result = compare_runs(find_runs(folder.parent.parent / "results"))
    assert "| queue wait | s | no scheduler | no scheduler |" in summary_table(result)
    local_rows = [r for r in runs_table(result).splitlines() if r.startswith("| local |")]
    assert local_rows and all("| no scheduler |" in r for r in local_rows)
    assert "| local | queue | no scheduler | — | the kind has none: the process starts at once |" in text
    # and in the charts: summary.png's empty slot is written on
    bars = {"queue_wait_s": {"local": [], "local-slurm": [1.0, 2.0]}}
    plain, named = folder.parent / "plain.png", folder.parent / "named.png"
    charts.summary_bars(bars, {"queue_wait_s": "queue wait (s)"}, plain)
    charts.summary_bars(
        bars, {"queue_wait_s": "queue wait (s)"}, named, None, {"queue_wait_s": {"local": "no scheduler"}}
    )
    assert plain.read_bytes() != named.read_bytes()


def test_the_timeline_chart_draws_the_median_run_and_says_its_spread(report) -> None:
    text, runs, folder = report
    records = find_runs(folder.parent.parent / "results")
    result = compare_runs(records)
    slurm = runs[runs.env == "local-slurm"].sort_values("submit_to_result_s")
    median = slurm.iloc[1]
    label, drawn, lacking = median_bar(result, records, "local-slurm")
    assert median.run_id in label and sum(s for _, s in drawn) == pytest.approx(median.submit_to_result_s, abs=1e-5)
    assert lacking == ["no staging step", "no image"]
    _, _, local_lacking = median_bar(result, records, "local")
    assert local_lacking[0] == "no scheduler"
    low, high = slurm.submit_to_result_s.min(), slurm.submit_to_result_s.max()
    assert (
        f"local-slurm: run `{median.run_id}`, submit to result {seconds_text(median.submit_to_result_s, 0.002)}" in text
    )
    assert f"min–max {seconds_text(low, 0.002, False)}–{seconds_text(high, 0.002, False)} s" in text
    # the phase medians, taken one by one, add up to something else: said, with both numbers
    medians = [slurm[f"phase_{p}_s"].median() for p in SUMS[1].phases]
    phase_medians = sum(v for v in medians if pd.notna(v))
    assert abs(phase_medians - median.submit_to_result_s) >= 1
    (note,) = [ln for ln in text.splitlines() if ln.startswith("local-slurm: the medians of its phases add up to")]
    assert (
        f"add up to {fmt(phase_medians)} s, its median submit to result is {fmt(median.submit_to_result_s)} s" in note
    )
    assert not any(ln.startswith("local: the medians of its phases") for ln in text.splitlines())  # they add up


@pytest.mark.parametrize(
    ("value", "resolution", "shown"),
    [
        (0.00294, 0.01, "≤ 0.01 s"),  # no "0.00294 s" from a 10 ms clock
        (0.0294, 0.01, "0.03 s"),
        (12.345, 1.0, "12 s"),  # whole seconds from a 1 s clock
        (12.345, 0.001, "12.3 s"),  # three significant digits from a finer one
        (1.0, 1.0, "≤ 1 s"),
        (1234.5, 0.001, "1,234 s"),
    ],
)
def test_precision_follows_the_clock(value: float, resolution: float, shown: str) -> None:
    assert seconds_text(value, resolution) == shown


def test_a_queue_wait_on_a_whole_second_clock_is_whole_seconds_in_the_tables(report) -> None:
    _, _, folder = report
    result = compare_runs(find_runs(folder.parent.parent / "results"))
    rows = [r for r in runs_table(result).splitlines() if r.startswith("| local-slurm |")]
    cells = {r.split(" | ")[1]: r for r in rows}
    assert "| 30 |" in cells["s0"] and "| 14 |" in cells["s2"]  # not "30.0" or "14.0" from a 1 s clock


def test_the_pr_comments_phase_line_follows_the_clock(report) -> None:
    _, _, folder = report
    result = compare_runs(find_runs(folder.parent.parent / "results"))
    (line,) = [ln for ln in env_lines(result.runs) if ln.startswith("local-slurm:")]
    assert "queue 14 s" in line and "queue 14.0" not in line  # the median of 30, 2 and 14 s, read in whole seconds
    assert "deliver ≤ 1 s" in line
