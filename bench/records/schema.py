"""The run record's JSON Schema (`run.schema.json`, shipped with the package).

One schema, used by every writer (the recorder, collection's placement) and every
reader (`load_run`, `bench check`), so a record that one side accepts the other reads.
Validation never raises: it returns one line per problem, naming the key's path.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator

from bench.records.contract import RUN_JSON, SCHEMA_VERSION

SCHEMA_FILE = "run.schema.json"


@lru_cache(maxsize=1)
def run_schema() -> dict[str, Any]:
    return json.loads(resources.files("bench.records").joinpath(SCHEMA_FILE).read_text())


@lru_cache(maxsize=1)
def _validator() -> Draft202012Validator:
    # checked against the meta-schema by tests/bench/test_shipped_schemas.py, not in every
    # process that reads a record (0.09 s of CPU each time)
    return Draft202012Validator(run_schema())


def _where(path: Any) -> str:
    parts = [str(p) for p in path]
    return ".".join(parts) if parts else "(top level)"


def schema_check(record: Any) -> tuple[list[str], list[tuple[Any, ...]]]:
    """(`schema_problems`, `refused_paths`) of `record` from ONE validation pass: a reader
    needs both, and validating a record is most of what reading its run.json costs."""
    if not isinstance(record, dict):
        return [f"{RUN_JSON}: top level is {type(record).__name__}, not an object"], []
    if set(record) <= {"schema_version"}:
        return [f"{RUN_JSON} is an empty record (no key but schema_version): no run facts at all"], []
    if record.get("schema_version") != SCHEMA_VERSION:
        return [
            f"{RUN_JSON} has schema_version {record.get('schema_version')!r}; this bench reads {SCHEMA_VERSION} "
            "(upgrade bench to read it)"
        ], []
    errors = list(_validator().iter_errors(record))
    out = []
    for err in sorted(errors, key=lambda e: list(map(str, e.absolute_path))):
        message = err.message if len(err.message) <= 160 else err.message[:157] + "..."
        out.append(f"{RUN_JSON}: {_where(err.absolute_path)}: {message}")
    refused = [
        tuple(err.absolute_path)
        for err in errors
        if err.validator not in ("required", "additionalProperties", "dependentRequired") and err.absolute_path
    ]
    return out, refused


def schema_problems(record: Any) -> list[str]:
    """Every way `record` breaks the schema, one line each; [] when it conforms.

    A record holding nothing but `schema_version` is named as such (an empty record),
    not as a dozen missing keys.
    """
    return schema_check(record)[0]


def refused_paths(record: Any) -> list[tuple[Any, ...]]:
    """The path of every value the schema refuses (wrong type, out of range, not finite).

    `load_run` removes these values (`bench.records.strict_numbers.excluded`), so a report says
    "unknown" instead of showing them. A missing or an extra key is a problem of the
    object, not of a value: nothing is removed for it.
    """
    if not isinstance(record, dict) or record.get("schema_version") != SCHEMA_VERSION:
        return []
    return schema_check(record)[1]
