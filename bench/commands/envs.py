"""List the environments under clusters/: name, kind, whether it is local, description.

`--json` prints them as a JSON list; CI's deploy and collect workflows build their job
matrix from `bench envs --json --remote`, so a new environment folder needs no workflow
edit. Each entry also names the target's Python extra and the `make` step that sets up
its credentials in CI (`ci_setup`: empty when none is needed).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HELP = "list the environments (CI builds its deploy/collect matrix from --json)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print a JSON list (one object per environment)")
    parser.add_argument("--remote", action="store_true", help="only environments that are not local: true")
    parser.add_argument("--clusters", type=Path, default=None, help="clusters folder (default: the repository's)")


def describe(clusters: Path, remote_only: bool = False) -> list[dict[str, object]]:
    """One entry per environment folder; an unreadable env.yaml is an error naming it."""
    from bench.envs import known_envs, load_env
    from bench.targets import target_class

    out = []
    for name in known_envs(clusters):
        env = load_env(name, clusters)
        local = env.get("local") is True
        if remote_only and local:
            continue
        cls = target_class(env.kind)
        out.append(
            {
                "env": name,
                "kind": env.kind,
                "local": local,
                "extras": cls.extras,
                "ci_setup": cls.ci_setup,
                "description": str(env.get("description") or ""),
            }
        )
    return out


def run(args: argparse.Namespace) -> int:
    from bench.envs import CLUSTERS_DIR

    entries = describe(args.clusters or CLUSTERS_DIR, args.remote)
    if args.json:
        print(json.dumps(entries))
        return 0
    for e in entries:
        print(f"{e['env']:<16} {e['kind']:<10} {'local' if e['local'] else 'remote':<7} {e['description']}")
    return 0
