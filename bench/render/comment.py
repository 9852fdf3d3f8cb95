"""The pull-request comment's Markdown: per environment, the PR's runs against the merge-base's.

Content only; `bench.gitops.github` posts it. What it shows is decided in
bench.analysis.pr_data (a `PrData`): each environment against its own runs at the base
commit.
"""

from __future__ import annotations

from bench.analysis.explain import Explanation
from bench.analysis.metrics import METRIC_BY_KEY, fmt
from bench.analysis.pr_data import REGRESSION, EnvVerdicts, PrData
from bench.render.escape import code, md
from bench.render.explain import sentence
from bench.render.noise_words import detectable_sentence, floor_sentence
from bench.render.timeline_section import env_lines


def _env_section(env: EnvVerdicts, explained: Explanation | None = None) -> tuple[list[str], list[str]]:
    """(Markdown lines of one environment's table and notes, its regressions)."""
    lines = [
        f"### {md(env.env)}",
        "",
        f"{env.head_runs} run(s) of the PR, {env.base_runs} of the merge-base.",
        "",
        *([f"**Explained** (`bench explain`): {sentence(explained, markdown=True)}", ""] if explained else []),
        "| metric | merge-base (median) | PR (median) | change | verdict |",
        "|---|---:|---:|---:|---|",
    ]
    notes, regressions = [], []
    for v in env.verdicts:
        metric = METRIC_BY_KEY[v.metric]
        change = "—" if v.change is None else f"{v.change:+.1%}"
        verdict = f"**{v.status}**" if v.status == REGRESSION else v.status
        if v.noise is not None:
            verdict += f" — within noise (±{v.noise:.1%})"
        lines.append(
            f"| {metric.label} ({metric.unit}) | {fmt(v.baseline_median)} | {fmt(v.candidate_median)} "
            f"| {change} | {verdict} |"
        )
        if v.status == REGRESSION:
            regressions.append(md(v.describe(), 600))
        elif v.note:
            notes.append(md(v.note, 600))
    lines.append("")
    noise = [
        floor_sentence(env.floors, env.floor_source),
        detectable_sentence(env.detectable, min_runs(env), env.power, bool(env.floors)),
    ]
    notes += [n for n in noise if n]
    lines += [f"- {n}" for n in dict.fromkeys(notes)]
    if notes:
        lines.append("")
    return lines, regressions


def min_runs(env: EnvVerdicts) -> int:
    return min(env.head_runs, env.base_runs)


def _no_regression_line(data: PrData) -> str:
    """The headline when no regression was shown: "No regression found" only where the runs
    could have shown one (a rank test's runs a side, no inconclusive verdict)."""
    thin, unsure = data.thin, data.unsure
    if not thin and not unsure:
        return "No regression found (each environment is compared with its own merge-base runs only)."
    sides = [
        f"{e.head_runs} run{'s' if e.head_runs != 1 else ''} a side on {md(e.env)}"
        if e.head_runs == e.base_runs
        else f"{e.head_runs} run(s) of the PR vs {e.base_runs} of the merge-base on {md(e.env)}"
        for e in thin + unsure
    ]
    return (
        f"**Not enough runs to judge**: {'; '.join(sides)} (a Mann-Whitney test needs {data.min_runs} "
        f"a side; {data.family_runs} for one changed figure among the environment's, adjusted together). "
        "No regression was shown, and none can be ruled out: `bench pr` without `--runs` sizes the runs "
        f"from the environment's spread, `--runs {data.family_runs}` at least."
    )


def _outside_band_lines(data: PrData) -> list[str]:
    """The PR's runs outside their environment's expected band (clusters/<env>/expected.yaml)."""
    if not data.outside:
        return []
    return (
        ["**Outside the expected band** (`clusters/<env>/expected.yaml`):", ""]
        + [f"- {md(f.describe(), 600)}" for f in data.outside]
        + [""]
    )


def _timeline_lines(data: PrData) -> list[str]:
    """Where the PR's runs spent their time: one line per environment (median per phase)."""
    found = env_lines(data.head_metrics)
    if not found:
        return []
    return ["**Where the time goes** (the PR's runs, median seconds per phase):", ""] + [f"- {x}" for x in found] + [""]


def draw_pr_body(data: PrData, report_url: str | None = None, runs_note: str = "") -> str:
    """Markdown: per environment, the PR's runs vs the merge-base's runs, with verdicts.

    Verdicts compare each environment with its own runs at the base commit only.
    `runs_note`: why `bench pr` ran as many runs as it did (bench.analysis.sample_size).
    """
    body: list[str] = []
    regressions: list[str] = []
    head, base = data.head, data.base
    for env in data.judged:
        lines, found = _env_section(env, data.explained.get(env.env))
        body += lines
        regressions += found
    if regressions:
        head_line = f"**{len(regressions)} regression(s)**: " + "; ".join(regressions)
    else:
        head_line = _no_regression_line(data)
    lines = [f"## Benchmark: `{code(head[:12])}` vs merge-base `{code(base[:12])}`", "", head_line, "", *body]
    lines += _outside_band_lines(data)
    lines += _timeline_lines(data)
    custom = ", ".join(f"{k} {v:.0%}" for k, v in sorted(data.thresholds.items()))
    lines.append(
        f"A regression is a change past the threshold (5 %{'; ' + custom if custom else ''}) that is also "
        "significant (Mann-Whitney U with >= 3 runs a side, its p adjusted by Benjamini–Hochberg over the "
        "environment's metrics, at most 0.05 two-sided; else a bootstrap interval excluding zero)."
    )
    if any(v.noise is not None for e in data.judged for v in e.verdicts):
        lines += [
            "",
            "Within noise (±x %): a change smaller than the environment's noise floor (1.96 × the coefficient "
            "of variation of its runs of one commit, from results/<env>/noise.json or pooled over the commits "
            "with two or more runs here): unchanged, whatever its p.",
        ]
    lines += [f"- {md(p, 600)}" for p in data.noise_problems]
    if runs_note:
        lines += ["", f"Runs: {md(runs_note, 600)}."]
    if report_url:
        lines += ["", f"Full report, charts and run records: {report_url}"]
    return "\n".join(lines).rstrip() + "\n"
