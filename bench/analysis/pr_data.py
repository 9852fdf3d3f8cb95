"""Everything a pull request's comment shows that is a decision, built in one place:
`read_pr_data`. Per environment its runs at the PR head judged against its own runs at the
merge-base (bench.analysis.select_compare.compare_pr), which environments had too few runs
to judge, the PR's figures outside their expected band and its runs' timeline figures.
bench/render/comment.py only words them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bench.analysis.expected import Outside, outside
from bench.analysis.explain import Explanation, explain, view_of_record
from bench.analysis.explain_causes import CodeChange
from bench.analysis.metrics import RunMetrics, run_metrics
from bench.analysis.regression import INCONCLUSIVE, MIN_RUNS_FOR_RANK_TEST, REGRESSION, pr_family
from bench.analysis.sample_size import ALPHA, fewest_runs
from bench.analysis.select_compare import EnvVerdicts, compare_pr, pr_sides, read_pr_runs
from bench.records.select import same_commit

__all__ = ["REGRESSION", "EnvVerdicts", "PrData", "read_pr_data"]  # what render/comment.py draws


@dataclass(frozen=True)
class PrData:
    head: str
    base: str
    judged: list[EnvVerdicts]
    thin: list[EnvVerdicts]  # fewer runs a side than a rank test needs
    unsure: list[EnvVerdicts]  # enough runs, yet a verdict is inconclusive
    min_runs: int  # runs a side a Mann-Whitney test needs
    family_runs: int  # runs a side a lone changed metric needs among the family BH adjusts over
    outside: list[Outside]  # the PR's figures outside their environment's expected band
    head_metrics: list[RunMetrics]  # the PR's runs, for where the time goes
    thresholds: dict[str, float]
    explained: dict[str, Explanation] = field(default_factory=dict)  # env -> bench explain's explanation
    noise_problems: list[str] = field(default_factory=list)  # a damaged or stale noise.json, one line each


def _explain(runs: list, judged: list[EnvVerdicts], head: str, base: str, code: CodeChange) -> dict[str, Explanation]:
    """Each judged environment's explanation (bench.analysis.explain), where both sides have runs."""
    out = {}
    for env in judged:
        sides = pr_sides(runs, env.env, head, base)
        if sides["base"] and sides["head"]:
            views = [view_of_record(r) for r in sides["base"]], [view_of_record(r) for r in sides["head"]]
            out[env.env] = explain(env.env, base, head, *views, code)
    return out


def read_pr_data(
    results: Path,
    head: str,
    base: str,
    envs: list[str] | None = None,
    thresholds: dict[str, float] | None = None,
    code: CodeChange | None = None,
) -> PrData:
    """Read the PR's and the merge-base's runs once and decide the comment's figures.
    `code`: the files changed base -> head (bench.gitops.code_changes), where known."""
    runs = read_pr_runs(results, envs)
    noise_problems: list[str] = []
    judged = compare_pr(runs, head, base, thresholds, results, noise_problems)  # select and judge: not in render/
    thin = [e for e in judged if min(e.head_runs, e.base_runs) < MIN_RUNS_FOR_RANK_TEST]
    unsure = [e for e in judged if e not in thin and any(v.status == INCONCLUSIVE for v in e.verdicts)]
    mine = [r for r in runs if same_commit(r.git_sha, head)]
    metrics = [run_metrics(r) for r in mine]
    flags = outside([(r.env, r.run_id, r.meta.get("experiment"), m.values) for r, m in zip(mine, metrics, strict=True)])
    return PrData(
        head,
        base,
        judged,
        thin,
        unsure,
        min_runs=MIN_RUNS_FOR_RANK_TEST,
        family_runs=fewest_runs(ALPHA / len(pr_family())),
        outside=flags,
        head_metrics=metrics,
        thresholds=dict(thresholds or {}),
        explained=_explain(runs, judged, head, base, code or CodeChange(base, head, unknown="not looked up")),
        noise_problems=noise_problems,
    )
