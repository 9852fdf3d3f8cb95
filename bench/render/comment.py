"""The pull-request comment's Markdown: per environment, the PR's runs against the merge-base's.

Content only; `bench.gitops.github` posts it. Verdicts compare each environment with
its own runs at the base commit (`bench.analysis.regression`).
"""

from __future__ import annotations

from pathlib import Path

from bench.errors import AtlasError
from bench.render.escape import code, md


def _sha_matches(run_sha: str | None, wanted: str) -> bool:
    return bool(run_sha) and (run_sha.startswith(wanted) or wanted.startswith(run_sha))


def _env_section(
    env: str, runs: list, head: str, base: str, thresholds: dict[str, float]
) -> tuple[list[str], list[str]]:
    """(Markdown lines of one environment's table and notes, its regressions)."""
    from bench.analysis.comparable import own_reason
    from bench.analysis.metrics import HEADLINE, METRIC_BY_KEY, fmt, run_metrics
    from bench.analysis.regression import HIGHER_IS_BETTER, REGRESSION, judge

    rows: dict[str, list[dict]] = {"base": [], "head": []}
    for r in runs:
        side = "head" if _sha_matches(r.git_sha, head) else "base" if _sha_matches(r.git_sha, base) else None
        if r.env == env and side and not own_reason(r, allow_dirty=False):  # successful, clean, intact
            rows[side].append(run_metrics(r).as_dict())
    lines = [
        f"### {md(env)}",
        "",
        f"{len(rows['head'])} run(s) of the PR, {len(rows['base'])} of the merge-base.",
        "",
        "| metric | merge-base (median) | PR (median) | change | verdict |",
        "|---|---:|---:|---:|---|",
    ]
    notes, regressions = [], []
    for key in (m for m in HEADLINE if m in HIGHER_IS_BETTER):
        base_vals, head_vals = [row[key] for row in rows["base"]], [row[key] for row in rows["head"]]
        if all(v is None for v in base_vals + head_vals):
            continue  # nobody measured it here (e.g. GPU figures on a CPU runner)
        v = judge(env, key, base_vals, head_vals, threshold=thresholds.get(key, 0.05))
        metric = METRIC_BY_KEY[key]
        change = "—" if v.change is None else f"{v.change:+.1%}"
        verdict = f"**{v.status}**" if v.status == REGRESSION else v.status
        lines.append(
            f"| {metric.label} ({metric.unit}) | {fmt(v.baseline_median)} | {fmt(v.candidate_median)} "
            f"| {change} | {verdict} |"
        )
        if v.status == REGRESSION:
            regressions.append(md(v.describe(), 600))
        elif v.note:
            notes.append(md(v.note, 600))
    lines.append("")
    lines += [f"- {n}" for n in dict.fromkeys(notes)]
    if notes:
        lines.append("")
    return lines, regressions


def _outside_band_lines(runs: list, head: str) -> list[str]:
    """The PR's runs outside their environment's expected band (clusters/<env>/expected.yaml)."""
    from bench.analysis.expected import outside
    from bench.analysis.metrics import run_metrics

    mine = [r for r in runs if _sha_matches(r.git_sha, head)]
    flags = outside([(r.env, r.run_id, r.meta.get("experiment"), run_metrics(r).values) for r in mine])
    if not flags:
        return []
    return (
        ["**Outside the expected band** (`clusters/<env>/expected.yaml`):", ""]
        + [f"- {md(f.describe(), 600)}" for f in flags]
        + [""]
    )


def render_pr_body(
    results: Path,
    head: str,
    base: str,
    envs: list[str] | None = None,
    thresholds: dict[str, float] | None = None,
    report_url: str | None = None,
) -> str:
    """Markdown: per environment, the PR's runs vs the merge-base's runs, with verdicts.

    Verdicts compare each environment with its own runs at the base commit only.
    """
    from bench.records.read import find_runs

    runs = find_runs(results, envs or None)
    if not runs:
        raise AtlasError(f"no runs under {results}: run `bench run` at the PR head and at the merge-base first")
    body: list[str] = []
    regressions: list[str] = []
    for env in sorted({r.env for r in runs}):
        lines, found = _env_section(env, runs, head, base, thresholds or {})
        body += lines
        regressions += found
    head_line = (
        (f"**{len(regressions)} regression(s)**: " + "; ".join(regressions))
        if regressions
        else "No regression found (each environment is compared with its own merge-base runs only)."
    )
    lines = [f"## Benchmark: `{code(head[:12])}` vs merge-base `{code(base[:12])}`", "", head_line, "", *body]
    lines += _outside_band_lines(runs, head)
    custom = ", ".join(f"{k} {v:.0%}" for k, v in sorted((thresholds or {}).items()))
    lines.append(
        f"A regression is a change past the threshold (5 %{'; ' + custom if custom else ''}) that is also "
        "significant (Mann-Whitney U with >= 3 runs a side, else a bootstrap interval excluding zero)."
    )
    if report_url:
        lines += ["", f"Full report, charts and run records: {report_url}"]
    return "\n".join(lines).rstrip() + "\n"
