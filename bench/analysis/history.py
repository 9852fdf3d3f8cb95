"""One small entry per run, the unit of every history: its figures and its provenance.

The results branch keeps each run's whole record, but a history over a thousand runs
cannot afford to re-read a thousand samples files. So when a run is archived its entry
is written beside it (`index/<env>/<run_id>.json`): every catalogue figure, the facts
that say what ran (code, image, torch/CUDA/driver, kernel, node, env.yaml hash, shape),
and the record's file names with their sha256. `bench history` and the report's history
chart read only these entries; a results folder keeps them in its run index
(bench.analysis.run_index).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from bench.records.contract import FINISHED_OK
from bench.records.strict_numbers import finite

if TYPE_CHECKING:
    from bench.records.read import RunData

ENTRY_VERSION = 1
# Provenance fields, in the order "what changed" names them, with their labels.
PROVENANCE = (
    ("driver", "driver"),
    ("cuda", "CUDA"),
    ("torch", "torch"),
    ("image", "image"),
    ("kernel", "kernel"),
    ("node", "node"),
    ("env_yaml", "env.yaml"),
    ("shape", "shape"),
    ("config", "config"),
    ("code", "code"),
)
_ENV_YAML_SHA = re.compile(r"sha256 ([0-9a-f]{6,64})")


def _section(meta: dict[str, Any], key: str) -> dict[str, Any]:
    value = meta.get(key)
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "", []) else None


def provenance(meta: dict[str, Any]) -> dict[str, str | None]:
    """What ran, from run.json: the fields a change point's "what changed" compares."""
    software, hardware = _section(meta, "software"), _section(meta, "hardware")
    gpus = hardware.get("gpus") if isinstance(hardware.get("gpus"), list) else []
    drivers = sorted({str(g.get("driver")) for g in gpus if isinstance(g, dict) and g.get("driver")})
    shape = _section(meta, "shape")
    hosts = meta.get("hosts") if isinstance(meta.get("hosts"), list) else []
    env_yaml = _ENV_YAML_SHA.search(str(_section(meta, "environment").get("price_source") or ""))
    image = _section(meta, "image")
    nodes, per_node = shape.get("nodes"), shape.get("gpus_per_node")
    return {
        "code": _text(_section(meta, "git").get("sha")),
        "image": _text(image.get("digest") or image.get("ref")),
        "torch": _text(software.get("torch")),
        "cuda": _text(software.get("cuda")),
        "driver": _text(",".join(drivers)),
        "kernel": _text(software.get("platform")),
        "node": _text(",".join(sorted(str(h) for h in hosts))),
        "env_yaml": env_yaml.group(1)[:12] if env_yaml else None,
        "shape": f"{nodes}x{per_node}" if nodes is not None and per_node is not None else None,
        "config": _text(str(meta.get("config_sha256") or "")[:12]),
    }


def run_entry(run: RunData) -> dict[str, Any]:
    """The history entry of one run (figures rounded to 6 significant digits)."""
    from bench.analysis.metrics import run_metrics  # here: reading entries needs no pandas

    m = run_metrics(run)
    git = _section(run.meta, "git")
    return {
        "version": ENTRY_VERSION,
        "env": run.env,
        "run_id": run.run_id,
        "commit": run.git_sha,
        "dirty": git.get("dirty") is True,
        "start": run.start_time,
        "status": m.status,
        "experiment": _text(run.meta.get("experiment")),
        "metrics": {k: float(f"{v:.6g}") for k, v in m.values.items() if finite(v) is not None},
        "provenance": provenance(run.meta),
    }


@dataclass
class CommitPoint:
    """One commit of one environment's history: its runs' values of one metric."""

    commit: str
    start: float
    values: list[float]
    provenance: list[dict[str, str | None]] = field(default_factory=list)
    key: tuple[str, ...] = ()  # point_key of its entries: which runs it holds


def usable(entry: dict[str, Any]) -> bool:
    """Runs that count in a history: finished as asked, committed code, a commit."""
    return bool(entry.get("commit")) and not entry.get("dirty") and entry.get("status") in FINISHED_OK


# What splits one commit's runs into two points: the same code run again on a changed
# platform (a new driver, image, kernel, ...). The node a run landed on does not.
_PLATFORM = tuple(key for key, _ in PROVENANCE if key not in ("code", "node"))


def point_key(entry: dict[str, Any]) -> tuple[str, ...]:
    """The point an entry's run belongs to: its commit and its platform's provenance."""
    prov = entry.get("provenance") or {}
    return (entry["commit"], *(str(prov.get(k)) for k in _PLATFORM))


def series(entries: Iterable[dict[str, Any]]) -> dict[tuple[str, str, str], list[CommitPoint]]:
    """(env, experiment, metric) -> points in the order they were first run. A point is one
    commit's runs on one platform: the same commit re-run after a driver update is two
    points, so a change there reads "driver 535 → 550; same code"."""
    by_key: dict[tuple[str, str, str], dict[tuple, CommitPoint]] = {}
    for e in entries:
        if not usable(e):
            continue
        start = finite(e.get("start")) or 0.0
        prov = e.get("provenance") or {}
        key = point_key(e)
        for metric, value in (e.get("metrics") or {}).items():
            v = finite(value)
            if v is None:
                continue
            points = by_key.setdefault((e["env"], e.get("experiment") or "?", metric), {})
            p = points.get(key)
            if p is None:
                p = points[key] = CommitPoint(e["commit"], start, [], key=key)
            p.start = min(p.start, start)
            p.values.append(v)
            p.provenance.append(prov)
    return {key: sorted(points.values(), key=lambda p: (p.start, p.commit)) for key, points in by_key.items()}


def dominant(provs: list[dict[str, str | None]], key: str) -> str | None:
    """The value most runs of a commit recorded for one provenance field."""
    values = Counter(p.get(key) for p in provs)
    return sorted(values.items(), key=lambda kv: (-kv[1], str(kv[0])))[0][0] if values else None


def merge(*sources: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per (env, run_id); the first source that has a run wins."""
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for source in sources:
        for e in source:
            seen.setdefault((e["env"], e["run_id"]), e)
    return [seen[k] for k in sorted(seen)]


def chart_points(entries: Iterable[dict[str, Any]], envs: Iterable[str], metric: str = "images_per_s"):
    """(env, commit position, short sha, median) for the report's history chart: every commit
    any of the entries ran, in the order commits were first run (every run with a value
    counts, as in the report's own tables of one commit)."""
    wanted = set(envs)
    first_seen: dict[str, float] = {}
    by_key: dict[tuple[str, str], list[float]] = {}
    for e in entries:
        if e.get("env") not in wanted or not e.get("commit"):
            continue
        sha = e["commit"]
        first_seen[sha] = min(first_seen.get(sha, math.inf), finite(e.get("start")) or 0.0)
        v = finite((e.get("metrics") or {}).get(metric))
        if v is not None:
            by_key.setdefault((e["env"], sha), []).append(v)
    order = {sha: i for i, sha in enumerate(sorted(first_seen, key=lambda s: (first_seen[s], s)))}
    return [(env, order[sha], sha[:7], float(np.median(v))) for (env, sha), v in sorted(by_key.items())]
