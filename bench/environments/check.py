"""The env.yaml rules of one environment folder: its kind's schema, the shared keys' values, its numbers.

Each problem is one line naming the file, the key and the fix, so a CI log says exactly
what is wrong. First each kind's schema (bench.environments.schema: an allow-list of keys,
no `ansible_*` key anywhere), then the values of keys shared by all kinds (cost rates,
shape, data, ci) and the numbers' ranges. What only the layers above know (the kind's own
`check_settings()` and files, the expected bands, the experiments) is added by
bench.commands.validation, which `bench validate` and `bench run` share.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.environments.cost_rates import check_cost
from bench.environments.load import CLUSTERS_DIR, Environment, load_env
from bench.environments.numbers import number_problems
from bench.environments.schema import settings_problems
from bench.environments.shape import check_shape, declared_shape, shape_warnings
from bench.errors import AtlasError
from bench.records.shape import Shape
from bench.stage_data import check_data

HARDWARE_TYPES: dict[str, tuple[type, ...]] = {
    "cpu_model": (str,),
    "cores_per_node": (int,),
    "memory_gb": (int, float),
    "gpus_per_node": (int,),
    "gpu_model": (str, type(None)),
}


def check_common(settings: dict[str, Any], where: str, *, on_volume: bool = False) -> list[str]:
    """The values of the keys every kind shares. `on_volume`: the kind's
    `Target.data_on_volume` (how `data.file` is checked); False when the kind is unknown."""
    errors: list[str] = []
    desc = settings.get("description")
    if desc is not None and not isinstance(desc, str):
        errors.append(f"{where}: description must be a string, got {type(desc).__name__}")
    local = settings.get("local")
    if local is not None and not isinstance(local, bool):
        errors.append(f"{where}: local must be true or false (marks an env `bench demo` runs), got {local!r}")
    hw = settings.get("hardware")
    if hw is not None:
        if not isinstance(hw, dict):
            errors.append(f"{where}: hardware must be a mapping ({', '.join(HARDWARE_TYPES)})")
        else:
            for key, types in HARDWARE_TYPES.items():
                if key in hw and (isinstance(hw[key], bool) or not isinstance(hw[key], types)):
                    want = " or ".join("null" if t is type(None) else t.__name__ for t in types)
                    errors.append(f"{where}: hardware.{key} must be {want}, got {hw[key]!r}")
            for key in ("cores_per_node", "gpus_per_node", "memory_gb"):
                value = hw.get(key)
                if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
                    errors.append(f"{where}: hardware.{key} must be >= 0, got {value!r}")
    errors.extend(check_cost(settings.get("cost"), where))
    errors.extend(check_ci(settings.get("ci"), where))
    errors.extend(check_shape(settings, where))
    errors.extend(check_data(settings, where, on_volume=on_volume))
    return errors


def check_ci(ci: Any, where: str) -> list[str]:
    """`ci: {runs_on: ...}`: the GitHub runner labels CI's deploy and collect jobs use."""
    if ci is None:
        return []
    if not isinstance(ci, dict) or set(ci) - {"runs_on"}:
        return [f"{where}: ci must be a mapping with runs_on (a runner label or a list of labels)"]
    runs_on = ci.get("runs_on")
    labels = [runs_on] if isinstance(runs_on, str) else runs_on
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) and x for x in labels):
        return [f"{where}: ci.runs_on must be a runner label or a list of labels, got {runs_on!r}"]
    return []


def comparison_shape_warnings(names: list[str], clusters_dir: Path = CLUSTERS_DIR) -> list[str]:
    """Warnings for envs compared with each other but declaring different shapes.

    Local envs (`local: true`) are compared with each other by `bench demo`; the cluster
    envs are compared with each other (the Satori vs MOC question): each group is checked.
    """
    groups: dict[bool, dict[str, Shape | None]] = {True: {}, False: {}}
    for name in names:
        try:
            env = load_env(name, clusters_dir)
        except AtlasError:
            continue  # already reported as a problem
        if check_shape(env.settings, name):
            continue  # a shape no scheduler grants: reported as a problem, not compared
        groups[bool(env.get("local"))][name] = declared_shape(env.settings)
    return [w for group in (groups[False], groups[True]) for w in shape_warnings(group)]


@dataclass(frozen=True)
class FolderProblems:
    lines: list[str]  # one per problem, naming the file and the key
    usable: bool  # the kind may build from these settings (schema and shape sound)


def folder_problems(env: Environment, where: str, properties: dict[str, Any], on_volume: bool) -> FolderProblems:
    """Every env.yaml rule this package holds, over one loaded folder (`env`, loaded without
    its numbers checked: they are listed here, with the rest). `properties` and `on_volume`:
    what the kind declares (its target's `settings_properties` and `data_on_volume`)."""
    numbers = number_problems(env.settings, where)
    schema = [f"{where}: {p}" for p in settings_problems(env.settings, env.kind, properties)]
    errors = check_common(env.settings, where, on_volume=on_volume)
    worded = " ".join(errors)  # a number validate's own checks already named is not listed twice
    errors += [p for p in numbers if f"{p.split(': ')[1].split(' must')[0]} " not in worded]
    if schema:  # unknown or dangerous keys, wrong types: the target never sees these settings
        return FolderProblems(schema + [e for e in errors if e not in schema], False)
    # the target builds its manifests from the shape: not from a bad one
    return FolderProblems(errors, not check_shape(env.settings, where))
