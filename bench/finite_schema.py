"""JSON Schemas for the files users write (import maps, expected.yaml, env.yaml numbers), checked
with "number" meaning a finite number.

JSON Schema's bounds let NaN through (NaN compares false with every bound), and YAML
writes NaN and infinity as `.nan` and `.inf`, so a schema alone would pass them.
`FiniteValidator` is Draft 2020-12 whose "number" excludes NaN and +-infinity. Each
surface's schema is a `*.schema.json` file beside the module that enforces it, so a
fuzzer can walk them all and feed every field hostile values.
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, validators


def _finite_number(checker: Any, instance: Any) -> bool:
    return Draft202012Validator.TYPE_CHECKER.is_type(instance, "number") and math.isfinite(instance)


FiniteValidator = validators.extend(
    Draft202012Validator, type_checker=Draft202012Validator.TYPE_CHECKER.redefine("number", _finite_number)
)


@cache
def validator(schema_file: Path) -> Any:
    """The FiniteValidator of a schema file shipped with the package (each is checked against the
    meta-schema by tests/bench/test_shipped_schemas.py, not in every process: 0.01-0.09 s each)."""
    schema = json.loads(Path(schema_file).read_text(encoding="utf-8"))
    return FiniteValidator(schema)


def key_path(error: Any) -> str:
    """`files[2].columns.cpu.scale`: where in the document a schema error is."""
    out = ""
    for part in error.absolute_path:
        out += f"[{part + 1}]" if isinstance(part, int) else f"{'.' if out else ''}{part}"
    return out


def problems(schema_file: Path, data: Any) -> list[tuple[str, str]]:
    """(key path, why) for each place `data` leaves the schema, shallowest first; empty: it fits."""
    errors = sorted(validator(schema_file).iter_errors(data), key=lambda e: (len(e.absolute_path), key_path(e)))
    out = []
    for error in errors:
        why = error.message if len(error.message) <= 160 else error.message[:157] + "..."
        if isinstance(error.instance, float) and not math.isfinite(error.instance):
            why = f"{error.instance} is not a finite number"
        out.append((key_path(error), why))
    return out
