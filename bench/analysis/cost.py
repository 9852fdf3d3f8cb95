"""Dollars per run from the rates frozen into the run record at collection.

The rates come from `clusters/<env>/env.yaml` `cost:`, copied into `run.json`
`environment.cost` when the run is collected (bench.environments.facts), so editing a rate
later never reprices an old run. The rates are checked by bench.environments.cost_rates.

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

from bench.environments.cost_rates import check_cost

HOURS_PER_YEAR = 8760.0


@dataclass(frozen=True)
class Cost:
    usd: float | None
    note: str  # how it was computed, or why it could not be


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
