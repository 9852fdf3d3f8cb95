"""Expected performance per environment: `clusters/<env>/expected.yaml`, a band per metric.

As ReFrame's references (https://reframe-hpc.readthedocs.io/en/stable/regression_test_api.html,
`reference`: value, lower and upper thresholds as fractions of it), each metric of an
experiment gets a reference value and how far below and above it a run may land:

    smoke:                      # experiment
      images_per_s: {value: 40, lower: -0.3, upper: 0.5}   # 28 .. 60 images/s
      time_to_train_s: {value: 90, upper: 0.25}            # no lower bound

The file lives in the repository, so a new band is a reviewed pull request like any code
change (and the band a run was held to is in the history of that file). A run outside
its band is flagged in the report and in the PR comment; it does not fail anything by
itself, since a band says what is expected, the regression verdicts what changed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.errors import AtlasError, ConfigError
from bench.finite_schema import problems
from bench.strict_yaml import load_strict

FILE = "expected.yaml"
SCHEMA_FILE = Path(__file__).with_name("expected.schema.json")
MAX_EXPECTED_BYTES = 256 * 1024  # bands for a few experiments: a page of YAML
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")


@dataclass(frozen=True)
class Band:
    value: float
    lower: float | None  # fraction of value, <= 0; None: no bound below
    upper: float | None  # fraction of value, >= 0; None: no bound above

    @property
    def low(self) -> float:
        return -math.inf if self.lower is None else self.value * (1 + self.lower)

    @property
    def high(self) -> float:
        return math.inf if self.upper is None else self.value * (1 + self.upper)

    def holds(self, x: float) -> bool:
        return self.low <= x <= self.high


@dataclass(frozen=True)
class Outside:
    env: str
    run_id: str
    metric: str
    value: float
    band: Band

    def describe(self) -> str:
        lo = "" if self.band.lower is None else f"{self.band.low:.4g}"
        hi = "" if self.band.upper is None else f"{self.band.high:.4g}"
        side = "below" if self.value < self.band.low else "above"
        return (
            f"{self.env}/{self.run_id}: {self.metric} {self.value:.4g} is {side} its expected band "
            f"[{lo or '-inf'}, {hi or 'inf'}] (reference {self.band.value:.4g}, clusters/{self.env}/{FILE})"
        )


def _fraction(path: Path, where: str, value: Any, sign: int) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"{path}: {where} must be a number (a fraction of value), got {value!r}")
    if value * sign < 0:
        raise ConfigError(f"{path}: {where} must be {'>=' if sign > 0 else '<='} 0 (a fraction of value), got {value}")
    return float(value)


def parse(path: Path, data: Any) -> dict[str, dict[str, Band]]:
    """experiment -> metric -> band, checked: one ConfigError naming the file and key."""
    from bench.analysis.metrics import METRIC_BY_KEY

    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of experiment -> metric -> {{value, lower, upper}}")
    bands: dict[str, dict[str, Band]] = {}
    for experiment, metrics in data.items():
        if not isinstance(metrics, dict):
            raise ConfigError(f"{path}: {experiment} must map metric keys to {{value, lower, upper}}")
        for key, spec in metrics.items():
            where = f"{experiment}.{key}"
            if key not in METRIC_BY_KEY:
                raise ConfigError(f"{path}: {where}: unknown metric (keys: bench/analysis/metrics.py METRICS)")
            if not isinstance(spec, dict) or set(spec) - {"value", "lower", "upper"}:
                raise ConfigError(f"{path}: {where} must be {{value, lower, upper}}")
            value = spec.get("value")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ConfigError(f"{path}: {where}.value must be a number, got {value!r}")
            lower = _fraction(path, f"{where}.lower", spec.get("lower"), -1)
            upper = _fraction(path, f"{where}.upper", spec.get("upper"), +1)
            bands.setdefault(str(experiment), {})[str(key)] = Band(float(value), lower, upper)
    found = problems(SCHEMA_FILE, data)  # the last net: whatever the checks above let through
    if found:
        raise ConfigError(f"{path}: {found[0][0]}: {found[0][1]} (bench/analysis/expected.schema.json)")
    return bands


def load_expected(env: str, clusters_dir: Path | None = None) -> dict[str, dict[str, Band]]:
    """The bands of `clusters/<env>/expected.yaml`; {} when the environment has none."""
    from bench.environments.load import CLUSTERS_DIR

    if not _NAME.fullmatch(env):  # never a path made of a run's env name
        return {}
    path = Path(clusters_dir or CLUSTERS_DIR) / env / FILE
    if not path.is_file():
        return {}
    try:  # a metric given twice is refused (strict_yaml), as are 10^5 nesting and bytes that are not UTF-8
        data = load_strict(path, MAX_EXPECTED_BYTES, "an expected.yaml")
    except AtlasError as exc:
        raise ConfigError(str(exc)) from None
    return parse(path, data)


def outside(
    runs: list[tuple[str, str, str | None, dict[str, float | None]]], clusters_dir: Path | None = None
) -> list[Outside]:
    """Every (env, run_id, experiment, figures) figure outside its environment's band."""
    flags, cache = [], {}
    for env, run_id, experiment, values in runs:
        if env not in cache:
            cache[env] = load_expected(env, clusters_dir)
        for key, band in sorted(cache[env].get(experiment or "", {}).items()):
            v = values.get(key)
            if v is not None and math.isfinite(v) and not band.holds(v):
                flags.append(Outside(env, run_id, key, float(v), band))
    return flags
