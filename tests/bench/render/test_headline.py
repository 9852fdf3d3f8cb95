"""The Summary's headline (bench/render/headline.py): the whole trip with its ratio's interval
and the runs a side, the phases that differ most, and the energy per result where measured."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.analysis.compare import PhaseGap, compare_runs
from bench.analysis.metrics import fmt
from bench.analysis.report_data import headline
from bench.records.read import find_runs
from bench.render.headline import end_to_end_lines, most_different
from bench.render.tables import verdicts
from tests.synthetic_records import RunSpec, write_run


def _pair(res, key: str):
    (pair,) = [p for p in res.pairs if p.metric == key]
    return pair.stats


def test_the_summary_opens_with_the_whole_trip_its_interval_and_the_phase_that_differs_most(tmp_path: Path):
    for env, queue in (("a", 0.0), ("b", 30.0)):
        for i in range(4):
            write_run(tmp_path, RunSpec(env=env, run_id=f"{env}{i}", queue_wait_s=queue, seed=i, timeline=True))
    res = compare_runs(find_runs(tmp_path))
    (line,) = end_to_end_lines(headline(res))
    a, b = res.summaries["a"].median["submit_to_result_s"], res.summaries["b"].median["submit_to_result_s"]
    assert b - a == pytest.approx(30.0, abs=0.01)
    st = _pair(res, "submit_to_result_s")
    assert st.ci_low <= b / a <= st.ci_high  # equal: the synthetic runs of a side take the same time
    assert line == (
        f"End to end (submit → result; medians of 4 vs 4 runs): b {fmt(b)} s, a {fmt(a)} s: b spends 30.0 s more "
        f"in queue, {fmt(b / a)}× the end-to-end time (95 % CI {fmt(st.ci_low)}–{fmt(st.ci_high)})."
    )
    assert "Energy per result" not in line  # no GPUs: no energy measured
    # the differences follow, largest and clearest first: the whole trip leads, images/s (equal) trails
    lines = verdicts(res)
    assert lines[0].startswith("platform overhead: b vs a: 182 % longer") and "a wins" in lines[0]
    assert lines[1].startswith("submit to result: b vs a") and "a wins" in lines[1]
    assert [x.split(":")[0] for x in lines].index("images/s, whole job (steady, median)") > 0


def test_energy_per_result_joins_the_headline_where_both_sides_measured_it(tmp_path: Path):
    for env, ips in (("a", 100.0), ("b", 50.0)):  # the same GPU power, half the images: twice the J/image
        for i in range(3):
            write_run(tmp_path, RunSpec(env=env, run_id=f"{env}{i}", images_per_s=ips, gpus=1, seed=i, timeline=True))
    write_run(tmp_path / "cpu", RunSpec(env="c", run_id="c0", timeline=True))
    res = compare_runs(find_runs(tmp_path))
    (line,) = end_to_end_lines(headline(res))
    ea, eb = (res.summaries[e].median["energy_per_image_j"] for e in ("a", "b"))
    st = _pair(res, "energy_per_image_j")
    assert st.ratio == pytest.approx(2.0, rel=0.05) and eb == pytest.approx(2 * ea, rel=0.05)
    assert line.endswith(
        f" Energy per result: b {fmt(eb)} J/img, a {fmt(ea)} J/img ({fmt(st.ratio)}×, 95 % CI "
        f"{fmt(st.ci_low)}–{fmt(st.ci_high)}; GPU energy per image, medians)."
    )
    assert "medians of 3 vs 3 runs" in line  # the runs a side, in the line itself
    # a side without GPUs has no energy: the line says nothing of it
    both = compare_runs(find_runs(tmp_path) + find_runs(tmp_path / "cpu"), baseline="c")
    assert all("Energy per result" not in x for x in end_to_end_lines(headline(both)))


def test_the_phases_named_are_the_largest_gap_and_the_next_when_it_goes_the_same_way():
    # the case: local-slurm 42 s more in collect, 19 s more in deliver, 3 s less in launch
    gaps = [PhaseGap("collect", 42.0), PhaseGap("deliver", 19.0), PhaseGap("launch", -3.0)]
    assert [g.phase for g in most_different(gaps)] == ["collect", "deliver"]
    # the next one going the other way is not added to it
    assert [g.phase for g in most_different([PhaseGap("queue", 30.0), PhaseGap("train", -2.0)])] == ["queue"]
    assert most_different([PhaseGap("queue", 0.0004)]) == []  # under a millisecond: nothing to name
