"""Check environment folders (clusters/<env>/env.yaml) and the workload's experiment
presets; print every problem with its file and key. Exit 0 when all are valid, 1 when not.
Environments compared with each other that declare different shapes get a warning line
(not a failure: a deliberate scaling study compares different shapes)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.names import arg_type

HELP = "check env folders and experiment files"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "envs", nargs="*", metavar="ENV", help="environments to check, by name or folder (clusters/moc); default: all"
    )
    parser.add_argument("--clusters", type=Path, default=None, help="clusters folder (default: the repository's)")
    parser.add_argument(
        "--experiment",
        type=arg_type("experiment"),
        dest="experiments",
        action="append",
        default=[],
        metavar="NAME",
        help="experiment preset to check (repeatable; default: all)",
    )
    parser.add_argument("--no-experiments", action="store_true", help="check env folders only")


def run(args: argparse.Namespace) -> int:
    from bench.commands.validation import check_env, check_experiments, env_note
    from bench.environments.check import comparison_shape_warnings
    from bench.environments.load import CLUSTERS_DIR, known_envs

    clusters = args.clusters or CLUSTERS_DIR
    names = []
    for arg in args.envs:
        folder = Path(arg)
        if ("/" in arg or arg in (".", "..")) and (folder / "env.yaml").is_file():
            clusters, arg = folder.resolve().parent, folder.resolve().name  # a folder: its parent holds it
        names.append(arg)
    names = names or known_envs(clusters)
    failed = 0
    if not names:
        print(f"no environments under {clusters} (expected {clusters}/<env>/env.yaml)")
        failed += 1
    for name in names:
        problems = check_env(name, clusters)
        if problems:
            failed += 1
            print(f"FAIL env {name}")
            for p in problems:
                print(f"  {p}")
        else:
            print(f"ok   env {name}")
            note = env_note(name, clusters)
            if note:
                print(f"  note: {note}")
    for warning in comparison_shape_warnings(names, clusters):
        print(f"warning: {warning}")
    if not args.no_experiments:
        checked, problems = check_experiments(args.experiments or None)
        bad = {p.split("'")[1] for p in problems if p.startswith("experiment '")}
        for name in checked:
            print(f"{'FAIL' if name in bad else 'ok  '} experiment {name}")
        for p in problems:
            print(f"  {p}")
        failed += len(problems)
    return 1 if failed else 0
