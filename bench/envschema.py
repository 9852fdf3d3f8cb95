"""What an `env.yaml` may hold, per kind: a JSON Schema with an allow-list of keys.

Environment folders are data. A key no schema names is refused, not passed on: every
Slurm setting used to become an Ansible extra variable, so `ansible_ssh_common_args:
-o ProxyCommand=...` in an env.yaml ran a command on the CI runner. No key anywhere in
an env.yaml may start with `ansible_` (Ansible's connection and privilege variables,
https://docs.ansible.com/ansible/latest/reference_appendices/special_variables.html).
`bench validate` and `bench run` both check this (bench.envcheck.check_env).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jsonschema import Draft202012Validator

from bench.shape import SHAPE_KEYS
from bench.stage_data import DATA_KEYS

_STR = {"type": "string"}
_OPT_STR = {"type": ["string", "null"]}
_POS = {"type": "number", "exclusiveMinimum": 0}
_NON_NEG_INT = {"type": "integer", "minimum": 0}
_QUANTITY = {"type": ["string", "number"]}

# shape: and data: are allow-lists of keys here; their values are checked (and worded) by
# bench.shape.check_shape and bench.stage_data.check_data, so one bad value is one line.
_SHAPE = {"additionalProperties": False, "properties": dict.fromkeys(SHAPE_KEYS, {})}
_DATA = {"additionalProperties": False, "properties": dict.fromkeys(DATA_KEYS, {})}

COMMON: dict[str, Any] = {
    "kind": _STR,
    "description": _OPT_STR,
    "local": {"type": "boolean"},
    "hardware": {"type": "object"},  # informational; bench.envcheck.check_common checks its values
    "cost": {"type": ["object", "null"]},  # bench.analysis.cost.check_cost checks it
    "shape": _SHAPE,
    "data": _DATA,
    "ci": {  # how CI reaches the environment (bench envs --json)
        "type": "object",
        "additionalProperties": False,
        "properties": {"runs_on": {"type": ["string", "array"], "items": _STR}},
    },
}

_SLURM_SECTION = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "partition": _STR,
        "nodes": _NON_NEG_INT,
        "gpus_per_node": _NON_NEG_INT,
        "ntasks_per_node": _NON_NEG_INT,
        "cpus_per_task": _NON_NEG_INT,
        "exclusive": {"type": "boolean"},
        "time_limit": _STR,
        "mem": _STR,
        "signal": _STR,
        "max_segments": _NON_NEG_INT,
        "rdzv_port": {"type": "integer", "minimum": 1, "maximum": 65535},
    },
}
_RUNTIME_SECTION = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "mode": {"enum": ["venv", "conda", "singularity"]},
        "python": _STR,
        "modules": {"type": "array", "items": _STR},
        "conda_setup": _STR,
        "conda_env": _STR,
        "singularity_image": _STR,
        "singularity_binds": {"type": "array", "items": _STR},
    },
}

_KUBE = {
    "namespace": _STR,
    "context": _OPT_STR,
    "kubeconfig": _OPT_STR,
    "job_template": _STR,
    "job_prefix": _STR,
    "results_pvc": _STR,
    "results_mount": _STR,
    "poll_interval_s": _POS,
    "collect_timeout_s": _POS,
}

KIND_PROPERTIES: dict[str, dict[str, Any]] = {
    "local": {"runs_dir": _STR, "interval_s": _POS},
    "container": {
        "image": _STR,
        "build_command": _STR,
        "user": _STR,
        "limits": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"cpu": _QUANTITY, "memory": _QUANTITY},
        },
        "shm_size": _QUANTITY,
        "runs_dir": _STR,
        "results_mount": _STR,
        "podman": _STR,
    },
    "slurm": {
        "login_host": _STR,
        "inventory": _STR,
        "data_path": _STR,
        "slurm": _SLURM_SECTION,
        "runtime": _RUNTIME_SECTION,
    },
    "kubernetes": {**_KUBE, "image": _STR},
    "openshift": {**_KUBE, "buildconfig": _STR, "imagestream": _OPT_STR, "build_timeout_s": _POS},
}


# Refuses any mapping key starting with `ansible_`, at any depth (objects and arrays).
_CLEAN = {
    "if": {"type": "object"},
    "then": {"propertyNames": {"not": {"pattern": "^ansible_"}}, "additionalProperties": {"$ref": "#/$defs/clean"}},
    "else": {"if": {"type": "array"}, "then": {"items": {"$ref": "#/$defs/clean"}}},
}


def settings_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of one kind's env.yaml (unknown kinds: the common keys only)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["kind"],
        "additionalProperties": False,
        "properties": {**COMMON, **KIND_PROPERTIES.get(kind, {})},
        "$defs": {"clean": _CLEAN},
        "allOf": [{"$ref": "#/$defs/clean"}],
    }


@cache
def _validator(kind: str) -> Draft202012Validator:
    schema = settings_schema(kind)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def settings_problems(settings: Any, kind: str, keys_only: bool = False) -> list[str]:
    """One line per way `settings` breaks its kind's schema, naming the key; [] when clean.

    `keys_only`: only unknown and `ansible_*` keys (a target's check_settings words the
    value problems itself).
    """
    problems = []
    for err in sorted(_validator(kind).iter_errors(settings), key=lambda e: list(map(str, e.absolute_path))):
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
