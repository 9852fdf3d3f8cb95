"""List the environments under clusters/: name, kind, whether it is local, description.

`--json` prints them as a JSON list; CI's deploy and collect workflows build their job
matrix from `bench envs --json --remote --only "$DEPLOY_ENVS"` (`make ci-matrix`), so a
new environment folder needs no workflow edit. Each entry also names the target's
Python extra (`extras`), the `make` step that writes its CI credentials (`ci_setup`, ""
when none) and the runner labels (`runs_on`: env.yaml `ci.runs_on`, default
ubuntu-24.04). `--host ENV` prints the login host of a Slurm environment, read from
its inventory (what `make ci-ssh ENV=...` trusts).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from bench.errors import ConfigError

HELP = "list the environments (CI builds its deploy/collect matrix from --json)"
DEFAULT_RUNNER = ["ubuntu-24.04"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print a JSON list (one object per environment)")
    parser.add_argument("--remote", action="store_true", help="only environments that are not local: true")
    parser.add_argument(
        "--only", default=None, metavar="NAMES", help="only these environments (space- or comma-separated)"
    )
    parser.add_argument("--field", metavar="KEY", default=None, help="print only this field, one line per environment")
    parser.add_argument("--host", metavar="ENV", default=None, help="print the login host of a Slurm environment")
    parser.add_argument("--clusters", type=Path, default=None, help="clusters folder (default: the repository's)")


def describe(clusters: Path, remote_only: bool = False, only: list[str] | None = None) -> list[dict[str, object]]:
    """One entry per environment folder; an unreadable env.yaml is an error naming it."""
    from bench.environments.load import known_envs, load_env
    from bench.targets import target_class

    known = known_envs(clusters)
    unknown = sorted(set(only or []) - set(known))
    if unknown:
        raise ConfigError(f"unknown environment(s) {', '.join(unknown)} (known: {', '.join(known) or 'none'})")
    out = []
    for name in known:
        env = load_env(name, clusters)
        local = env.get("local") is True
        if (remote_only and local) or (only is not None and name not in only):
            continue
        cls = target_class(env.kind)
        runs_on = (env.get("ci") or {}).get("runs_on") or DEFAULT_RUNNER
        out.append(
            {
                "env": name,
                "kind": env.kind,
                "local": local,
                "extras": cls.extras,
                "ci_setup": cls.ci_setup,
                "runs_on": [runs_on] if isinstance(runs_on, str) else list(runs_on),
                "description": str(env.get("description") or ""),
            }
        )
    return out


def run(args: argparse.Namespace) -> int:
    from bench.environments.load import CLUSTERS_DIR, load_env
    from bench.targets import target_for

    clusters = args.clusters or CLUSTERS_DIR
    if args.host:
        target = target_for(load_env(args.host, clusters))
        host = target.login_host()
        if host is None:
            raise ConfigError(f"environment {args.host} (kind {target.kind}) has no login host")
        print(host)
        return 0
    only = [n for n in re.split(r"[\s,]+", args.only) if n] if args.only is not None else None
    entries = describe(clusters, args.remote, only)
    if args.json:
        print(json.dumps(entries))
        return 0
    if args.field:
        if entries and args.field not in entries[0]:
            raise ConfigError(f"--field {args.field}: not a field (fields: {', '.join(entries[0])})")
        for e in entries:
            print(e[args.field])
        return 0
    for e in entries:
        print(f"{e['env']:<16} {e['kind']:<10} {'local' if e['local'] else 'remote':<7} {e['description']}")
    return 0
