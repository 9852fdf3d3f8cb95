"""What `bench validate` checks, and `bench run` before it submits: an env folder whole, and
the workload's experiment presets.

The env.yaml rules are bench.environments' (bench.environments.check.folder_problems); what
only the layers above it know is added here: the kind's own checks (its target class's keys,
`check_settings()` and files), the expected-performance bands beside the folder (their
metric keys are the metric catalogue's, bench.analysis.expected) and the experiments (the
workload's config). Each problem is one line naming the file, the key and the fix.
"""

from __future__ import annotations

from pathlib import Path

from bench.environments.check import check_common, folder_problems
from bench.environments.load import CLUSTERS_DIR, Environment, load_env
from bench.errors import AtlasError


def check_env(name: str | Environment, clusters_dir: Path = CLUSTERS_DIR) -> list[str]:
    """All problems of one env folder (empty list: valid); `name` may be the environment
    already read (`bench run` reads env.yaml once), with its numbers unchecked."""
    from bench.analysis.expected import load_expected
    from bench.targets import target_class

    if isinstance(name, str):
        try:
            env = load_env(name, clusters_dir, check_numbers=False)  # its numbers are listed with the rest
        except AtlasError as exc:
            return [str(exc)]
    else:
        env, name, clusters_dir = name, name.name, name.folder.parent
    where = str(clusters_dir / name / "env.yaml")
    try:
        cls = target_class(env.kind)
    except AtlasError as exc:
        return check_common(env.settings, where) + [f"{where}: kind: {exc}"]
    found = folder_problems(env, where, cls.settings_properties, cls.data_on_volume)
    if not found.usable:
        return found.lines
    errors = list(found.lines)
    try:
        cls(env).check_files()  # the constructor runs check_settings()
    except AtlasError as exc:
        errors.append(str(exc) if where in str(exc) else f"{where}: {exc}")
    try:  # the expected-performance bands beside it, if any
        load_expected(name, clusters_dir)
    except AtlasError as exc:
        errors.append(str(exc))
    return errors


def env_note(name: str, clusters_dir: Path = CLUSTERS_DIR) -> str:
    """The one line the kind of a valid env has to say of it (its `validate_note`), else ""."""
    from bench.targets import target_class

    try:
        return target_class(load_env(name, clusters_dir, check_numbers=False).kind).validate_note
    except AtlasError:
        return ""


def check_experiments(names: list[str] | None = None) -> tuple[list[str], list[str]]:
    """(checked names, problems) for the workload's experiment presets."""
    try:
        from workflows.biggan import config as wconfig
        from workflows.biggan.errors import WorkloadConfigError
    except ImportError as exc:
        return [], [f"cannot import the workload's config module to check experiments: {exc}"]
    names = names or wconfig.known_experiments()
    problems: list[str] = []
    for name in names:
        try:
            wconfig.resolve(name)
        except WorkloadConfigError as exc:
            problems.append(f"experiment {name!r}: {exc}")
    return names, problems
