"""Environments are data: `clusters/<name>/env.yaml`, one folder per environment.

An env folder holds facts and settings of one environment only; which code drives
it is chosen by its `kind` (see `bench.targets`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench.bounded_read import TooLarge, read_bounded
from bench.errors import ConfigError
from bench.names import check_name

REPO_ROOT = Path(__file__).resolve().parents[2]
CLUSTERS_DIR = REPO_ROOT / "clusters"
MAX_ENV_BYTES = 256 * 1024  # an env.yaml is a page of settings; more is not one


@dataclass(frozen=True)
class Environment:
    """One `clusters/<name>/` folder, parsed."""

    name: str
    kind: str
    folder: Path
    settings: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        return self.settings.get(key, default)


def known_envs(clusters_dir: Path = CLUSTERS_DIR) -> list[str]:
    return sorted(p.parent.name for p in clusters_dir.glob("*/env.yaml"))


def load_env(name: str, clusters_dir: Path = CLUSTERS_DIR, check_numbers: bool = True) -> Environment:
    """Read and minimally check one env; kind-specific checks belong to its target. Its numbers
    are checked here against numbers.schema.json (bench.environments.numbers) for every command that
    loads it; `check_numbers=False` is for bench validate, which lists them among all its problems."""
    check_name(name, "environment")  # before any path is made of it: `../clusters/local` never resolves
    folder = clusters_dir / name
    path = folder / "env.yaml"
    if not path.is_file():
        known = ", ".join(known_envs(clusters_dir)) or "none"
        raise ConfigError(f"unknown environment {name!r}: {path} does not exist (known: {known})")
    try:
        raw = read_bounded(path, MAX_ENV_BYTES, "an env.yaml")
    except TooLarge as exc:
        raise ConfigError(str(exc)) from None
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except (yaml.YAMLError, RecursionError) as exc:
        raise ConfigError(f"{path}: not valid YAML: {str(exc)[:300]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    kind = data.get("kind")
    if not isinstance(kind, str) or not kind:
        raise ConfigError(
            f"{path}: missing required key 'kind' (one of the target kinds, e.g. local, slurm, openshift)"
        )
    if check_numbers:
        from bench.environments.numbers import number_problems

        problems = number_problems(data, str(path))
        if problems:
            raise ConfigError("; ".join(problems[:5]) + " (bench validate lists every problem)")
    return Environment(name=name, kind=kind, folder=folder, settings=data)
