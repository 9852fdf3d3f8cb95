"""What each environment's compared runs ran on and with (hosts, hardware, software, git,
image, scheduler, config hash): the report's Provenance table, decided here as plain
values so that render/ only escapes and joins them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from bench.analysis.metrics import fmt


def _gpus(meta: dict[str, Any]) -> str | None:
    gs = meta["hardware"]["gpus"]
    if gs is None:
        return None  # not recorded (an import without GPU files): unknown, not "none"
    if not gs:
        return "none"
    models = Counter(str(g.get("model") or "unknown model") for g in gs)
    return ", ".join(f"{n} × {m}" for m, n in sorted(models.items()))


def _memory_limit(m: dict[str, Any]) -> str | None:
    limit = m["hardware"]["cgroup"]["memory_limit_bytes"]
    return fmt(limit / 1e9) if limit else None


def _cuda(m: dict[str, Any]) -> str | None:
    return f"{m['software'].get('cuda')} / {m['software'].get('cudnn')}" if m["software"].get("cuda") else None


ROWS: list[tuple[str, Callable[[dict[str, Any]], Any]]] = [
    ("hosts", lambda m: ", ".join(m["hosts"])),
    ("CPU model", lambda m: m["hardware"]["cpu_model"]),
    ("logical cores", lambda m: m["hardware"]["cpu_cores_logical"]),
    ("memory (GB)", lambda m: fmt(m["hardware"]["memory_bytes"] / 1e9)),
    ("cgroup CPU limit (cores)", lambda m: m["hardware"]["cgroup"]["cpu_limit_cores"]),
    ("cgroup memory limit (GB)", _memory_limit),
    ("GPUs", _gpus),
    ("GPU driver", lambda m: m["hardware"]["gpus"][0]["driver"]),
    ("python", lambda m: m["software"]["python"]),
    ("torch", lambda m: m["software"].get("torch")),
    ("CUDA / cuDNN", _cuda),
    ("git sha (dirty)", lambda m: f"{m['git']['sha'][:12]} ({'dirty' if m['git']['dirty'] else 'clean'})"),
    ("image", lambda m: m["image"]["digest"] or m["image"]["ref"]),
    ("scheduler", lambda m: m["scheduler"]["kind"]),
    ("config sha256", lambda m: m["config_sha256"][:16]),
]


def _distinct(metas: list[dict[str, Any]], get: Callable[[dict[str, Any]], Any]) -> list[str | None]:
    """The values one row takes over an environment's records, first seen first; None where a
    record lacks it (an import, an older record), so the reader sees "unknown", not a guess."""
    values: list[str | None] = []
    for meta in metas:
        try:
            v = get(meta)
        except (KeyError, TypeError, AttributeError, IndexError):
            v = None
        text = None if v in (None, "", []) else str(v)
        if text not in values:
            values.append(text)
    return values


def provenance(runs: list[Any], envs: list[str]) -> list[tuple[str, list[list[str | None]]]]:
    """(row label, per environment the distinct values its runs recorded) for every row of
    ROWS; an environment whose runs carry no metadata has an empty list."""
    metas = {env: [r.meta for r in runs if r.env == env and r.meta] for env in envs}
    return [(label, [_distinct(metas[env], get) for env in envs]) for label, get in ROWS]
