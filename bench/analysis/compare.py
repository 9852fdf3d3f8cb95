"""Compare environments: per-run figures, per-environment summaries, and the test of
whether one environment really differs from another.

Runs are only comparable when they trained the same thing: the config hashes must
match (the workload writes `config_sha256` into `run_start`); otherwise we refuse,
unless the user says `--allow-different`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from bench.analysis.metrics import RunMetrics, run_metrics
from bench.analysis.stats import Comparison, compare_samples, median, olympic_mean
from bench.envs import CLUSTERS_DIR, load_env
from bench.errors import AtlasError
from bench.records.read import RunData


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    higher_is_better: bool | None  # None: neither (a fact, not a score)
    digits: int = 3  # significant digits shown


METRICS: tuple[Metric, ...] = (
    Metric("time_to_train_s", "time to train", "s", False),
    Metric("images_per_s", "images/s (steady, median)", "img/s", True),
    Metric("images_per_s_iqr", "images/s IQR", "img/s", None),
    Metric("cpu_mean_pct", "CPU mean", "% of a core", None),
    Metric("cpu_p95_pct", "CPU p95", "% of a core", None),
    Metric("peak_rss_gb", "peak RSS", "GB", False),
    Metric("gpu_util_mean_pct", "GPU utilisation mean", "%", True),
    Metric("gpu_mem_peak_gb", "peak GPU memory", "GiB", None),
    Metric("energy_wh", "GPU energy", "Wh", False),
    Metric("cost_usd", "cost per run", "$", False, 3),
    Metric("cost_per_1000_images_usd", "cost per 1,000 images", "$", False, 3),
    Metric("queue_wait_s", "queue wait", "s", False),
    Metric("wall_s", "job wall time", "s", False),
)
METRIC_BY_KEY = {m.key: m for m in METRICS}
# The metrics the plain-language summary and the statistical tests cover.
# A difference is called clear when the 95 % bootstrap CI of the ratio excludes 1 and the
# Mann-Whitney p is at most 0.10: the smallest p an exact test can reach with 3 vs 3 runs
# is 0.10, so a stricter cut would never call a winner with the default 3 runs.
SIGNIFICANT_P = 0.10
HEADLINE = (
    "time_to_train_s",
    "images_per_s",
    "gpu_util_mean_pct",
    "energy_wh",
    "cost_usd",
    "cost_per_1000_images_usd",
    "queue_wait_s",
)


def fmt(value: float | None, digits: int = 3) -> str:
    """Stable rounding for Markdown: fixed significant digits, no exponent for normal sizes."""
    if value is None or value != value:
        return "—"
    if value == 0:
        return "0"
    mag = abs(value)
    if mag >= 10**digits:
        return f"{value:,.0f}"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(mag))))
    decimals = min(decimals, 6)
    text = f"{value:,.{decimals}f}"
    return "0" if float(text.replace(",", "")) == 0 and mag < 5e-7 else text


def env_cost_config(env: str, clusters_dir: Path = CLUSTERS_DIR) -> dict[str, Any] | None:
    try:
        cost = load_env(env, clusters_dir).get("cost")
    except AtlasError:
        return None
    return cost if isinstance(cost, dict) else None


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


def _ratio_words(metric: Metric, ratio: float) -> tuple[str, float]:
    """('faster'/'slower'..., factor >= 1) for `env_a` relative to `env_b`."""
    factor = ratio if ratio >= 1 else 1 / ratio
    if metric.key in ("time_to_train_s", "queue_wait_s", "wall_s"):
        word = "longer" if ratio > 1 else "shorter"
    elif metric.key == "images_per_s":
        word = "faster" if ratio > 1 else "slower"
    else:
        word = "higher" if ratio > 1 else "lower"
    return word, factor


def verdicts(result: CompareResult) -> list[str]:
    """Plain-language sentences: who won on what, by how much, and how sure we are."""
    out: list[str] = []
    for p in result.pairs:
        metric = METRIC_BY_KEY[p.metric]
        st = p.stats
        va = result.summaries[p.env_a].median[p.metric]
        vb = result.summaries[p.env_b].median[p.metric]
        if va is None or vb is None:
            continue
        if st.ratio is None or st.ratio <= 0 or not math.isfinite(st.ratio):
            out.append(
                f"{metric.label}: {p.env_a} {fmt(va, metric.digits)} {metric.unit} vs "
                f"{p.env_b} {fmt(vb, metric.digits)} {metric.unit} (median; no ratio with a zero)."
            )
            continue
        if abs(st.ratio - 1) < 1e-9:
            out.append(f"{metric.label}: {p.env_a} and {p.env_b} are the same (median).")
            continue
        word, factor = _ratio_words(metric, st.ratio)
        better = None
        if metric.higher_is_better is not None:
            better = p.env_a if (st.ratio > 1) == metric.higher_is_better else p.env_b
        sure = []
        if st.ci_low is not None and st.ci_high is not None:
            sure.append(f"95% CI of the ratio {fmt(st.ci_low)}–{fmt(st.ci_high)}")
        if st.p_value is not None:
            sure.append(f"Mann–Whitney p = {fmt(st.p_value, 2)}")
        else:
            sure.append(f"too few runs for a test ({st.n_a} vs {st.n_b}; need 3 each)")
        significant = (
            st.p_value is not None
            and st.p_value <= SIGNIFICANT_P
            and st.ci_low is not None
            and st.ci_high is not None
            and (st.ci_low > 1 or st.ci_high < 1)
        )
        verdict = (
            f" — {better} wins"
            if better and significant
            else (" — not a clear difference" if st.p_value is not None else "")
        )
        out.append(f"{metric.label}: {p.env_a} is {fmt(factor)}× {word} than {p.env_b} ({'; '.join(sure)}){verdict}.")
    return out


def summary_table(result: CompareResult) -> str:
    """Markdown: one row per metric, per environment median and olympic mean."""
    head = "| metric | unit | " + " | ".join(f"{e} median | {e} olympic" for e in result.envs) + " |"
    sep = "|---|---|" + "---:|---:|" * len(result.envs)
    rows = [head, sep, "| runs |  | " + " | ".join(f"{result.summaries[e].runs} | " for e in result.envs) + "|"]
    for m in METRICS:
        cells = []
        for e in result.envs:
            s = result.summaries[e]
            cells.append(f"{fmt(s.median[m.key], m.digits)} | {fmt(s.olympic[m.key], m.digits)}")
        rows.append(f"| {m.label} | {m.unit} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def runs_table(result: CompareResult) -> str:
    cols = (
        "time_to_train_s",
        "images_per_s",
        "cpu_mean_pct",
        "peak_rss_gb",
        "gpu_util_mean_pct",
        "energy_wh",
        "cost_usd",
        "queue_wait_s",
    )
    head = "| env | run | status | " + " | ".join(METRIC_BY_KEY[c].label for c in cols) + " |"
    rows = [head, "|---|---|---|" + "---:|" * len(cols)]
    for r in result.runs:
        vals = " | ".join(fmt(getattr(r, c), METRIC_BY_KEY[c].digits) for c in cols)
        rows.append(f"| {r.env} | {r.run_id} | {r.status or '—'} | {vals} |")
    return "\n".join(rows)


def pairs_table(result: CompareResult) -> str:
    if not result.pairs:
        return ""
    rows = [
        "| metric | env | vs | ratio of medians | 95% CI | Mann–Whitney p | runs |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    for p in result.pairs:
        st = p.stats
        ci = f"{fmt(st.ci_low)}–{fmt(st.ci_high)}" if st.ci_low is not None else "—"
        rows.append(
            f"| {METRIC_BY_KEY[p.metric].label} | {p.env_a} | {p.env_b} | {fmt(st.ratio)} | {ci} | "
            f"{fmt(st.p_value, 2)} | {st.n_a} vs {st.n_b} |"
        )
    return "\n".join(rows)
