"""Were the compared jobs identical? And how does throughput scale with GPUs?

Why: the report's claim "same job, two platforms" is only as good as the evidence. For
each environment this puts side by side what makes a job the same job: the shape that
ran (nodes × GPUs), the training config hash, the code sha, the image digest and the
training data's sha256, and says "identical" or shows the exact difference. Scaling
efficiency (N GPUs against 1) is computed when the results hold both. The tables and
the shape sentence are rendered (escaped) by `bench.render.tables`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.analysis.metrics import RunMetrics
from bench.analysis.stats import median
from bench.records.read import RunData
from bench.records.shape import Shape, recorded_shape


def _get(meta: dict[str, Any], *path: str) -> Any:
    node: Any = meta
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


SHAPE = "shape (nodes × GPUs)"
FIELDS: tuple[tuple[str, Callable[[dict[str, Any]], Any]], ...] = (
    (SHAPE, lambda m: recorded_shape(m).label if recorded_shape(m) else None),
    ("config sha256", lambda m: m.get("config_sha256")),
    ("code sha", lambda m: _get(m, "git", "sha")),
    ("image digest", lambda m: _get(m, "image", "digest")),
    ("data sha256", lambda m: _get(m, "data", "sha256")),
)


DERIVED = " (not recorded: from the GPUs and hosts in the record)"


def run_shape(meta: dict[str, Any], m: RunMetrics | None) -> str | None:
    """The shape a run had: run.json's, else the one its figures are normalised by (the GPUs and
    hosts in the record, as `tables.shape_note` reads them), marked as not recorded; None: unknown."""
    shape = recorded_shape(meta)
    if shape is not None:
        return shape.label
    if m is None or m.gpus_per_node is None:
        return None
    nodes = int(m.nodes or 1)
    return Shape(nodes, int(m.gpus_per_node)).label + DERIVED


def identity_rows(
    runs: list[RunData], envs: list[str], metrics: list[RunMetrics] | None = None
) -> list[tuple[str, str, list[str]]]:
    """(field, verdict, one cell per env): verdict `identical` or `differs` (or `not recorded`).
    With the runs' `metrics`, a shape run.json lacks is the one the figures were normalised by,
    so this row and the report's sentence on different shapes never contradict each other."""
    by_run = {(m.env, m.run_id): m for m in metrics or []}
    rows = []
    for label, get in FIELDS:
        per_env: list[list[str]] = []
        for env in envs:
            values: list[str] = []
            for r in runs:
                if r.env == env and r.meta:
                    v = get(r.meta) if label != SHAPE else run_shape(r.meta, by_run.get((r.env, r.run_id)))
                    text = "—" if v in (None, "") else str(v)
                    if text not in values:
                        values.append(text)
            per_env.append(values or ["—"])
        known = {v.removesuffix(DERIVED) for vs in per_env for v in vs if v != "—"}
        missing = any("—" in vs for vs in per_env)
        if not known:
            verdict = "not recorded"
        elif len(known) == 1 and not missing:
            verdict = "identical"
        elif len(known) == 1:
            verdict = "not recorded everywhere"
        else:
            verdict = "differs"
        cells = [", ".join(_short(label, v) for v in vs) for vs in per_env]
        rows.append((label, verdict, cells))
    return rows


def _short(label: str, value: str) -> str:
    return value[:12] if label != SHAPE and value != "—" and len(value) > 12 else value


def scaling_rows(metrics: list[RunMetrics]) -> list[tuple[str, int, float, float, float]]:
    """(env, GPUs, median images/s, per GPU, efficiency vs 1 GPU) where an env has 1 and N GPU runs."""
    from statistics import median

    out = []
    for env in sorted({m.env for m in metrics}):
        by_gpus: dict[int, list[float]] = {}
        for m in metrics:
            if m.env == env and m.images_per_s is not None and m.gpus:
                by_gpus.setdefault(int(m.gpus), []).append(m.images_per_s)
        if 1 not in by_gpus or len(by_gpus) < 2:
            continue
        one = median(by_gpus[1])
        for n in sorted(by_gpus):
            ips = median(by_gpus[n])
            out.append((env, n, ips, ips / n, ips / (n * one) if one else float("nan")))
    return out


def machine(runs: list[RunData], metrics: list[RunMetrics], env: str) -> dict[str, Any]:
    """What one environment's runs ran on, for the reports index: CPU model, logical cores,
    GPU names and the host's CPU load during the runs (median of the runs' means). Two
    reports of one environment on different machines are not a regression or a speed-up."""
    mine = [r for r in runs if r.env == env]

    def distinct(get: Callable[[dict[str, Any]], Any]) -> list[Any]:
        return sorted({v for r in mine if (v := get(r.meta)) not in (None, "", [])}, key=str)

    loads = [m.host_cpu_util_pct for m in metrics if m.env == env and m.host_cpu_util_pct is not None]
    return {
        "cpu": distinct(lambda meta: _get(meta, "hardware", "cpu_model")),
        "cores": distinct(lambda meta: _get(meta, "hardware", "cpu_cores_logical")),
        "gpus": distinct(
            lambda meta: ", ".join(
                sorted(str(g.get("name")) for g in _list(_get(meta, "hardware", "gpus")) if isinstance(g, dict))
            )
        ),
        "host_cpu_pct": None if (load := median(loads)) is None else round(load, 1),
    }
