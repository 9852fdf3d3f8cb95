"""The numbers of an env.yaml, checked by one JSON Schema wherever an environment is loaded.

`bench validate` used to be the only reader that checked them, so `shape.cpus_per_gpu:
.nan` was refused there while `bench import --env` froze a NaN into a record. The ranges
live in `numbers.schema.json` (shipped beside this module; a fuzzer can walk it),
and `bench.environments.load.load_env` enforces it for every command: a value outside its range is
one line naming the key, its range and the value. A "number" here is finite
(bench.finite_schema.FiniteValidator): JSON Schema's own bounds let NaN through, since NaN compares false
with everything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.finite_schema import validator

SCHEMA_FILE = Path(__file__).with_name("numbers.schema.json")


def _range(rule: dict[str, Any]) -> str:
    kinds = rule.get("type")
    kind = "an integer" if kinds == "integer" else "a number"
    low = f">= {rule['minimum']:g}" if "minimum" in rule else ""
    low = f"> {rule['exclusiveMinimum']:g}" if "exclusiveMinimum" in rule else low
    high = f"<= {rule['maximum']:g}" if "maximum" in rule else ""
    return " ".join(x for x in (kind, low, "and" if low and high else "", high) if x)


def number_problems(settings: dict[str, Any], where: str) -> list[str]:
    """One line per number of `settings` outside its range (empty: all fine). Sections that are
    not mappings are left to bench validate's own checks, which word them."""
    problems = []
    for error in sorted(validator(SCHEMA_FILE).iter_errors(settings), key=lambda e: list(map(str, e.absolute_path))):
        if len(error.absolute_path) < 2:
            continue  # `shape: 5`: a section of the wrong type, worded by validate's checks
        key = ".".join(map(str, error.absolute_path))
        rule = error.schema if isinstance(error.schema, dict) else {}
        problems.append(f"{where}: {key} must be {_range(rule)}, got {error.instance!r}")
    return problems
