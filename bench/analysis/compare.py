"""Compare environments: per-run figures, per-environment summaries, and the test of
whether one environment really differs from another. Numbers only: `bench.render.tables`
turns them into Markdown and sentences.

Runs are only comparable when they trained the same thing: the config hashes must
match (the workload writes `config_sha256` into `run_start`); otherwise we refuse,
unless the user says `--allow-different`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from bench.analysis.cost import env_cost_config
from bench.analysis.metrics import HEADLINE, METRICS, RunMetrics, run_metrics
from bench.analysis.stats import Comparison, compare_samples, median, olympic_mean
from bench.errors import AtlasError
from bench.records.read import RunData

# A difference is called clear when the 95 % bootstrap CI of the ratio excludes 1 and the
# Mann-Whitney p is at most 0.10: the smallest p an exact test can reach with 3 vs 3 runs
# is 0.10, so a stricter cut would never call a winner with the default 3 runs.
SIGNIFICANT_P = 0.10


@dataclass
class EnvSummary:
    env: str
    runs: int
    statuses: dict[str, int]
    median: dict[str, float | None] = field(default_factory=dict)
    olympic: dict[str, float | None] = field(default_factory=dict)


@dataclass
class PairResult:
    env_a: str
    env_b: str
    metric: str
    stats: Comparison


@dataclass
class CompareResult:
    runs: list[RunMetrics]
    envs: list[str]
    summaries: dict[str, EnvSummary]
    pairs: list[PairResult]
    config_hashes: dict[str, list[str]]
    baseline: str | None

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame([r.as_dict() for r in self.runs])


def check_same_config(runs: list[RunData], allow_different: bool) -> dict[str, list[str]]:
    """env -> distinct config hashes; raise when they differ and that is not allowed."""
    by_env: dict[str, list[str]] = {}
    for r in runs:
        h = r.config_sha256
        if h and h not in by_env.setdefault(r.env, []):
            by_env[r.env].append(h)
        by_env.setdefault(r.env, [])
    distinct = sorted({h for hs in by_env.values() for h in hs})
    if len(distinct) > 1 and not allow_different:
        lines = [f"  {env}: {', '.join(h[:12] for h in hs) or 'unknown'}" for env, hs in sorted(by_env.items())]
        raise AtlasError(
            "refusing to compare runs that trained different configurations "
            f"({len(distinct)} config hashes):\n"
            + "\n".join(lines)
            + "\nrun the same experiment everywhere, pick runs with --commit/--env, "
            "or pass --allow-different to compare anyway"
        )
    return {env: sorted(hs) for env, hs in sorted(by_env.items())}


def compare_runs(
    runs: list[RunData],
    allow_different: bool = False,
    baseline: str | None = None,
    cost_for: Callable[[str], dict[str, Any] | None] = env_cost_config,
) -> CompareResult:
    hashes = check_same_config(runs, allow_different)
    envs = sorted({r.env for r in runs})
    costs = {env: cost_for(env) for env in envs}
    metrics = sorted((run_metrics(r, costs[r.env]) for r in runs), key=lambda m: (m.env, m.run_id))
    summaries: dict[str, EnvSummary] = {}
    for env in envs:
        mine = [m for m in metrics if m.env == env]
        statuses = Counter(m.status or "unknown" for m in mine)
        s = EnvSummary(env, len(mine), dict(sorted(statuses.items())))
        for metric in METRICS:
            values = [getattr(m, metric.key) for m in mine]
            s.median[metric.key] = median(values)
            s.olympic[metric.key] = olympic_mean(values)
        summaries[env] = s
    if baseline is not None and baseline not in envs:
        raise AtlasError(f"--baseline {baseline!r} has no runs (environments with runs: {', '.join(envs) or 'none'})")
    base = baseline or (envs[0] if envs else None)
    pairs: list[PairResult] = []
    for env in envs:
        if env == base:
            continue
        for key in HEADLINE:
            a = [getattr(m, key) for m in metrics if m.env == env]
            b = [getattr(m, key) for m in metrics if m.env == base]
            pairs.append(PairResult(env, base, key, compare_samples(a, b)))
    return CompareResult(metrics, envs, summaries, pairs, hashes, base)


def is_clear(st: Comparison) -> bool:
    """A difference is clear when the 95 % CI of the ratio excludes 1 and p <= SIGNIFICANT_P."""
    return (
        st.p_value is not None
        and st.p_value <= SIGNIFICANT_P
        and st.ci_low is not None
        and st.ci_high is not None
        and (st.ci_low > 1 or st.ci_high < 1)
    )
