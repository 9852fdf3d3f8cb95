"""The report's "Where the time goes": each environment's phases from the runs' timelines,
queue waits measured the same way on every kind, and a value at or below its clock's
resolution shown as "≤ 1 s" with no ratio or test against it."""

from __future__ import annotations

from pathlib import Path

from bench.analysis.compare import compare_runs
from bench.commands.comment import render_pr_body
from bench.commands.report import write_report
from bench.records.read import find_runs
from bench.render.tables import pairs_table, summary_table, verdicts
from bench.render.timeline_section import env_lines
from tests.synthetic_records import RunSpec, write_run

SHA = "a" * 40


def results_with_timelines(root: Path) -> Path:
    """`local` (a bare process: no scheduler) and `local-slurm` (Slurm's whole-second clock,
    no wait), three runs each, as collection writes them."""
    for i in range(3):
        write_run(root, RunSpec("local", f"l{i}", sha=SHA, seed=i, timeline=True, queue_resolution_s=None,
                                start=1.79e9 + i * 100))  # fmt: skip
        write_run(root, RunSpec("local-slurm", f"s{i}", sha=SHA, seed=5 + i, timeline=True, queue_wait_s=0.0,
                                queue_resolution_s=1.0, start=1.79e9 + i * 100 + 50))  # fmt: skip
    return root


def test_the_section_shows_every_phase_with_its_source_and_the_chart(tmp_path: Path) -> None:
    res = write_report(results_with_timelines(tmp_path / "results"), tmp_path / "out")
    text = res.readme.read_text()
    assert "## Where the time goes" in text and "![Where the time goes](timeline.png)" in text
    assert (res.folder / "timeline.png").is_file()
    section = text.split("## Where the time goes", 1)[1].split("\n## ", 1)[0]
    # a phase the kind does not have is named, not "—" (unknown) and not 0
    assert "| local | queue | no scheduler | — | the kind has none: the process starts at once |" in section
    assert "| local-slurm | queue | ≤ 1 s | ≤ 1 | slurmctld |" in section
    # precision follows the clock: a 1 s clock's spread is "≤ 1", not "1.00–1.00" or "0.500–0.500"
    assert "| local-slurm | deliver | ≤ 1 s | ≤ 1 | bench-host → slurmctld |" in section  # 1 s at 1 s
    assert "| local-slurm | launch | ≤ 1 s | ≤ 1 | slurmctld → job |" in section
    assert "| local | launch | 0.500 s | 0.500–0.500 | bench-host → job |" in section  # a 1 ms clock keeps its digits
    assert "| local | train |" in section and "| job |" in section
    assert "| local | **submit to result** |" in section
    assert "| local | stage | no staging step | — | the kind has none: the job reads this machine's files |" in section
    assert "| local | warmup | 7.00 s | 7.00–7.00 | job |" in section


def test_a_queue_wait_at_the_clocks_resolution_gets_no_ratio_and_no_test(tmp_path: Path) -> None:
    root = tmp_path / "results"
    for i in range(3):  # both under Slurm's whole seconds, all zero: the case that once gave ratio 0, p 0.064
        for env in ("a-slurm", "b-slurm"):
            write_run(root, RunSpec(env, f"{env}{i}", sha=SHA, seed=i, timeline=True, queue_wait_s=0.0,
                                    queue_resolution_s=1.0))  # fmt: skip
    result = compare_runs(find_runs(root))
    (pair,) = [p for p in result.pairs if p.metric == "queue_wait_s"]
    assert pair.at_resolution and pair.stats.ratio is None and pair.stats.p_value is None
    assert pair.stats.ci_low is None and not pair.clear
    assert "| queue wait † | b-slurm | a-slurm | — | — | — | — | 3 vs 3 |" in pairs_table(result)
    assert any(
        v.startswith("queue wait: b-slurm vs a-slurm: ≤ 1 s vs ≤ 1 s (median; at or below") for v in verdicts(result)
    )
    assert "| queue wait | s | ≤ 1 s | ≤ 1 s | ≤ 1 s | ≤ 1 s |" in summary_table(result)


def test_one_line_per_environment_for_the_pr_comment(tmp_path: Path) -> None:
    root = results_with_timelines(tmp_path / "results")
    result = compare_runs(find_runs(root))
    lines = env_lines(result.runs)
    assert [line.split(":", 1)[0] for line in lines] == ["local", "local-slurm"]
    assert lines[0].startswith("local: submit → result ") and "train " in lines[0] and "queue" not in lines[0]
    body = render_pr_body(root, SHA, "b" * 40)
    assert "**Where the time goes**" in body and "- local-slurm: submit → result" in body
