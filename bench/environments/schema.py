"""What an `env.yaml` may hold, per kind: a JSON Schema with an allow-list of keys.

The keys every environment has are here (COMMON); each kind declares its own keys on its
target class (`Target.settings_properties`, in bench/targets/<kind>.py), so a new kind adds
its keys in its own module. The value fragments below (STR, POSITIVE, ...) are for them.

Environment folders are data. A key no schema names is refused, not passed on: every
Slurm setting used to become an Ansible extra variable, so `ansible_ssh_common_args:
-o ProxyCommand=...` in an env.yaml ran a command on the CI runner. No key anywhere in
an env.yaml may start with `ansible_` (Ansible's connection and privilege variables,
https://docs.ansible.com/ansible/latest/reference_appendices/special_variables.html).
`bench validate` and `bench run` both check this (bench.environments.check.folder_problems,
from bench.commands.validation.check_env).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator

from bench.records.shape import SHAPE_KEYS
from bench.stage_data import DATA_KEYS

STR = {"type": "string"}
OPT_STR = {"type": ["string", "null"]}
POSITIVE = {"type": "number", "exclusiveMinimum": 0}
NON_NEG_INT = {"type": "integer", "minimum": 0}
QUANTITY = {"type": ["string", "number"]}

# shape: and data: are allow-lists of keys here; their values are checked (and worded) by
# bench.environments.shape.check_shape and bench.stage_data.check_data, so one bad value is one line.
_SHAPE = {"additionalProperties": False, "properties": dict.fromkeys(SHAPE_KEYS, {})}
_DATA = {"additionalProperties": False, "properties": dict.fromkeys(DATA_KEYS, {})}

COMMON: dict[str, Any] = {
    "kind": STR,
    "description": OPT_STR,
    "local": {"type": "boolean"},
    "hardware": {"type": "object"},  # informational; bench.environments.check.check_common checks its values
    "cost": {"type": ["object", "null"]},  # bench.environments.cost_rates.check_cost checks it
    "shape": _SHAPE,
    "data": _DATA,
    "ci": {  # how CI reaches the environment (bench envs --json)
        "type": "object",
        "additionalProperties": False,
        "properties": {"runs_on": {"type": ["string", "array"], "items": STR}},
    },
}

# Refuses any mapping key starting with `ansible_`, at any depth (objects and arrays).
_CLEAN = {
    "if": {"type": "object"},
    "then": {"propertyNames": {"not": {"pattern": "^ansible_"}}, "additionalProperties": {"$ref": "#/$defs/clean"}},
    "else": {"if": {"type": "array"}, "then": {"items": {"$ref": "#/$defs/clean"}}},
}


def settings_schema(kind: str, properties: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of one kind's env.yaml: the common keys and the kind's own `properties`."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["kind"],
        "additionalProperties": False,
        "properties": {**COMMON, **properties},
        "$defs": {"clean": _CLEAN},
        "allOf": [{"$ref": "#/$defs/clean"}],
    }


@cache
def _validator(kind: str, properties_json: str) -> Draft202012Validator:
    # every kind's schema is checked against the meta-schema by tests/bench/targets/test_kind_contract.py
    return Draft202012Validator(settings_schema(kind, json.loads(properties_json)))


def settings_problems(settings: Any, kind: str, properties: dict[str, Any], keys_only: bool = False) -> list[str]:
    """One line per way `settings` breaks its kind's schema (COMMON + the kind's `properties`,
    its target's `settings_properties`), naming the key; [] when clean.

    `keys_only`: only unknown and `ansible_*` keys (a target's check_settings words the
    value problems itself).
    """
    problems = []
    validator = _validator(kind, json.dumps(properties, sort_keys=True))
    for err in sorted(validator.iter_errors(settings), key=lambda e: list(map(str, e.absolute_path))):
        where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        if err.validator == "additionalProperties" and err.validator_value is False:
            allowed = ", ".join(sorted(err.schema.get("properties", {})))
            extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
            problems.append(f"{where}: unknown key(s) {', '.join(extra)} for kind {kind} (allowed: {allowed})")
        elif err.validator == "not" and str(err.instance).startswith("ansible_"):
            problems.append(
                f"{where}: key {err.instance!r} is refused: ansible_* variables may not come from env.yaml "
                "(they choose how Ansible connects and what it runs; set them in the inventory)"
            )
        elif not keys_only:
            problems.append(f"{where}: {err.message}")
    return problems
