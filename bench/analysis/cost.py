"""Dollars per run from the rates frozen into the run record at collection.

The rates come from `clusters/<env>/env.yaml` `cost:`, copied into `run.json`
`environment.cost` when the run is collected (bench.records.place), so editing a rate
later never reprices an old run.

Two models, both transparent enough to check by hand:
- onprem: capital amortised per node-hour (capex / (life x 8760 h x utilisation)),
  charged for the share of a node the job held (its GPUs / gpus_per_node, by default
  env.yaml's hardware.gpus_per_node, else whole
  nodes), plus measured energy x PUE x electricity price.
- cloud: GPU-hours x price (+ CPU core-hours x price when given).
Time charged is the job's wall time (start to end of `bench record`), not just time
to train: set-up is paid for too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from bench.errors import ConfigError

HOURS_PER_YEAR = 8760.0
COST_MODELS = ("onprem", "cloud", "none")
ONPREM_KEYS = {
    "model",
    "electricity_usd_per_kwh",
    "pue",
    "node_capex_usd",
    "node_life_years",
    "utilisation",
    "gpus_per_node",
}
CLOUD_KEYS = {"model", "usd_per_gpu_hour", "usd_per_cpu_hour"}


@dataclass(frozen=True)
class Cost:
    usd: float | None
    note: str  # how it was computed, or why it could not be


# No price, PUE or node count is this large: a bigger number is a typo or an overflow (1e308).
MAX_RATE = 1e9


def _num(
    cfg: dict[str, Any],
    key: str,
    where: str,
    default: float | None = None,
    positive: bool = True,
    required: bool = True,
) -> float | None:
    if key not in cfg or cfg[key] is None:
        if default is not None or not required:
            return default
        raise ConfigError(f"{where}: cost.{key} is required for model {cfg.get('model')!r}")
    value = cfg[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: cost.{key} must be a number, got {value!r}")
    if not math.isfinite(value) or abs(value) > MAX_RATE:
        raise ConfigError(f"{where}: cost.{key} must be a finite number below {MAX_RATE:g}, got {value!r}")
    if value < 0 or (positive and value == 0):
        raise ConfigError(f"{where}: cost.{key} must be {'> 0' if positive else '>= 0'}, got {value!r}")
    return float(value)


def check_cost(cfg: Any, where: str) -> list[str]:
    """Every problem with a `cost:` mapping, each naming file and key (empty: fine)."""
    if cfg is None:
        return []
    if not isinstance(cfg, dict):
        return [f"{where}: cost must be a mapping with a 'model' key ({', '.join(COST_MODELS)})"]
    model = cfg.get("model")
    if model not in COST_MODELS:
        return [f"{where}: cost.model is {model!r}; use one of {', '.join(COST_MODELS)}"]
    allowed = {"onprem": ONPREM_KEYS, "cloud": CLOUD_KEYS, "none": {"model"}}[model]
    errors = [
        f"{where}: cost.{k} is not a key of cost model {model!r} (allowed: {', '.join(sorted(allowed))})"
        for k in sorted(set(cfg) - allowed)
    ]
    checks: list[tuple[str, bool, bool]] = []
    if model == "onprem":
        checks = [
            ("electricity_usd_per_kwh", True, False),
            ("pue", True, True),
            ("node_capex_usd", True, False),
            ("node_life_years", False, True),
            ("utilisation", False, True),
            ("gpus_per_node", False, False),
        ]
    elif model == "cloud":
        checks = [("usd_per_gpu_hour", True, False), ("usd_per_cpu_hour", False, False)]
    for key, required, positive in checks:
        try:
            _num(cfg, key, where, positive=positive, required=required)
        except ConfigError as exc:
            errors.append(str(exc))
    if model == "onprem":
        pue = cfg.get("pue")
        if isinstance(pue, (int, float)) and not isinstance(pue, bool) and 0 < pue < 1:
            errors.append(f"{where}: cost.pue must be >= 1 (power usage effectiveness), got {pue!r}")
        util = cfg.get("utilisation")
        if isinstance(util, (int, float)) and not isinstance(util, bool) and util > 1:
            errors.append(f"{where}: cost.utilisation is a fraction (0 < u <= 1), got {util!r}")
    return errors


def run_cost(
    cfg: dict[str, Any] | None,
    wall_s: float | None,
    gpus: int | None,
    nodes: int,
    energy_wh: float | None,
    cpu_cores: float | None = None,
) -> Cost:
    if not cfg or cfg.get("model") in (None, "none"):
        return Cost(None, "no cost model for this environment")
    refused = check_cost(cfg, "run.json environment")
    if refused:  # a rate bench check refuses (negative, NaN, 1e308, missing) prices nothing
        return Cost(None, f"{refused[0]}: cost unknown")
    if wall_s is None or not math.isfinite(wall_s) or wall_s < 0:
        return Cost(None, "wall time unknown")
    per_node_gpus = cfg.get("gpus_per_node")
    if gpus is None and (cfg.get("model") == "cloud" or per_node_gpus):
        return Cost(None, "GPU count unknown (run.json hardware.gpus is null): cost unknown, not $0")
    hours = wall_s / 3600.0
    model = cfg["model"]
    if model == "cloud":
        usd = float(cfg["usd_per_gpu_hour"]) * max(gpus or 0, 0) * hours
        note = f"cloud: {gpus} GPU x job hours x ${cfg['usd_per_gpu_hour']}/GPU-h"
        if cfg.get("usd_per_cpu_hour") and not cpu_cores:
            return Cost(
                None,
                "CPU cores unknown (run.json hardware missing or refused) for the per-core price: cost unknown, not $0",
            )
        if cfg.get("usd_per_cpu_hour") and cpu_cores:
            usd += float(cfg["usd_per_cpu_hour"]) * cpu_cores * hours
            note += f" + {cpu_cores:g} cores x job hours x ${cfg['usd_per_cpu_hour']}/core-h"
        return Cost(usd, note)
    life = float(cfg.get("node_life_years") or 5)
    util = float(cfg.get("utilisation") or 1.0)
    per_node_hour = float(cfg["node_capex_usd"]) / (life * HOURS_PER_YEAR * util)
    share = gpus / float(per_node_gpus) if per_node_gpus and gpus else float(max(nodes, 1))
    usd = per_node_hour * share * hours
    note = (
        f"on-prem: capex ${per_node_hour:.3f}/node-h (${cfg['node_capex_usd']:,} / {life:g} y / "
        f"utilisation {util:g}) x {share:g} node x job hours"
    )
    if energy_wh is not None:
        usd += energy_wh / 1000.0 * float(cfg["pue"]) * float(cfg["electricity_usd_per_kwh"])
        note += " + GPU energy x PUE x $/kWh"
    else:
        note += " (no energy measured: electricity not included)"
    return Cost(usd, note)


def record_cost(
    meta: dict[str, Any], wall: float | None, gpus: int | None, nodes: int, energy_wh: float | None, cores: float | None
) -> Cost:
    """Cost from the rates frozen into the record at collection; unknown without them."""
    env = meta.get("environment")
    if not isinstance(env, dict):
        return Cost(None, "no environment facts in run.json (collected by an older bench): cost unknown")
    cfg = env.get("cost")
    if cfg is not None and not isinstance(cfg, dict):
        return Cost(None, "environment.cost in run.json is not a mapping: cost unknown")
    cost = run_cost(cfg, wall, gpus, nodes, energy_wh, cores)
    source = env.get("price_source")
    return Cost(cost.usd, f"{cost.note} (rates of {source})" if source and cost.usd is not None else cost.note)
