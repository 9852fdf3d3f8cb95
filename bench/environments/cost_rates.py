"""env.yaml's `cost:` rates, checked: one rule for the file and for the copy a record keeps.

`bench validate` checks `clusters/<env>/env.yaml`'s `cost:` with it, and analysis
(bench.analysis.cost.run_cost) checks the rates frozen into a record with the same rule
before pricing anything, so a rate validate refuses never prices a run.
"""

from __future__ import annotations

import math
from typing import Any

from bench.errors import ConfigError

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
