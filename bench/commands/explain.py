"""Why two commits' runs of one environment differ: `bench explain --env E BASE HEAD`.

Reads the runs of both commits from a results folder (their whole records: timelines,
profiles, configs), cuts the difference in end-to-end time into phases, the phase that
moved into modules and operators where both commits' runs have a profile, and joins it
with what changed: config, provenance, host load, and the files changed between the
commits (`git diff` in --repo-dir, where both commits are there). Prints one sentence
and a small table (bench.analysis.explain decides, bench.render.explain words).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.commands.common_args import add_env, add_results

if TYPE_CHECKING:
    from bench.analysis.explain import Explanation, PhaseMove

HELP = "which phase, which layer and what changed between two commits' runs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_env(parser, "the environment whose runs are compared")
    parser.add_argument("base", metavar="BASE", help="the earlier commit (a prefix of its sha)")
    parser.add_argument("head", metavar="HEAD", help="the later commit (a prefix of its sha)")
    add_results(parser)
    parser.add_argument(
        "--experiment", default=None, help="only runs of this experiment (needed when both ran several)"
    )
    parser.add_argument(
        "--repo-dir", type=Path, default=Path("."), help="the clone whose `git diff` lists the files (default: .)"
    )
    parser.add_argument("--json", action="store_true", help="print the explanation as one JSON object")


def run(args: argparse.Namespace) -> int:
    from bench.analysis.explain import ExplainError, explain
    from bench.analysis.explain_groups import commit_groups
    from bench.errors import ConfigError
    from bench.gitops.code_changes import code_change
    from bench.gitops.results_branch import toplevel
    from bench.render.explain import sentence, table

    root = toplevel(args.repo_dir) if args.repo_dir.exists() else None
    try:
        base_sha, head_sha, base, head = commit_groups(args.results, args.env, args.base, args.head, args.experiment)
        found = explain(args.env, base_sha, head_sha, base, head, code_change(root, base_sha, head_sha))
    except ExplainError as exc:
        raise ConfigError(str(exc)) from None
    if args.json:
        print(json.dumps(as_json(found), sort_keys=True))
        return 0
    print(
        f"# {args.env}: {head_sha[:12]} ({found.n_head} run(s)) against {base_sha[:12]} ({found.n_base} run(s))\n\n"
        f"{sentence(found)}\n\n{table(found)}"
    )
    return 0


def as_json(e: Explanation) -> dict[str, Any]:
    """The explanation's decisions as plain values (the sentence included)."""
    from bench.render.explain import sentence

    return {
        "env": e.env,
        "base": e.base,
        "head": e.head,
        "runs": [e.n_base, e.n_head],
        "sentence": sentence(e),
        "total": None if e.total is None else _move(e.total),
        "phase": None if e.phase is None else e.phase.key,
        "phases": [_move(m) for m in e.phases],
        "module": None if e.layers is None or e.layers.top is None else e.layers.top.name,
        "operator": None if e.layers is None or e.layers.operator is None else e.layers.operator.name,
        "config": e.config,
        "causes": [{"kind": c.kind, "text": c.text} for c in e.causes],
        "files": [f[0] for f in e.code.files],
        "files_unknown": e.code.unknown or None,
    }


def _move(m: PhaseMove) -> dict[str, Any]:
    return {
        "key": m.key,
        "base_s": m.base_s,
        "head_s": m.head_s,
        "ratio": m.cmp.ratio,
        "ci95": [m.cmp.ci_low, m.cmp.ci_high],
        "p": m.cmp.p_value,
        "clear": m.clear,
    }
