"""Every collected run of an environment, per metric and commit, and its change points.

Reads the history entries of the `results` branch (bench archive writes them; no
checkout needed) or, with `--results DIR`, of a results folder, and prints each
confirmed change point: environment, metric, the commit where it starts, the median
before -> after, the p-value, what changed in the runs' provenance there, and the
explanation of the runs on its two sides (`bench explain`'s sentence, bench.analysis.explain).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from bench.commands import common_args
from bench.errors import ConfigError

HELP = "change points across every collected commit (results branch or folder)"


def _fraction(text: str) -> float:
    try:
        value = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction (e.g. 5% or 0.05)") from None
    if not 0 <= value < 10:
        raise argparse.ArgumentTypeError(f"{text!r} is out of range")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", type=Path, default=None, help="read this results folder instead of the branch")
    common_args.add_env(parser, "only this environment (default: all)", required=False)
    parser.add_argument("--metric", action="append", default=None, help="only this metric key (repeatable)")
    parser.add_argument("--repo-dir", type=Path, default=Path("."), help="the repository clone (default: .)")
    parser.add_argument("--branch", default="results", help="the results branch (default: results)")
    parser.add_argument(
        "--min-change", type=_fraction, default=0.05, help="smallest change of the median reported (default 5%%)"
    )
    parser.add_argument("--alpha", type=_fraction, default=0.05, help="largest p-value reported (default 0.05)")
    parser.add_argument("--json", action="store_true", help="print the change points as JSON lines")


def load(args: argparse.Namespace) -> tuple[list[dict], str]:
    """(entries, where they came from)."""
    from bench.analysis.run_index import index_entries
    from bench.gitops.results_branch import read_entries, results_ref, toplevel

    if args.results is not None:
        if not args.results.is_dir():
            raise ConfigError(
                f"no results folder {args.results}: pass --results DIR, or leave it out to read the branch"
            )
        return index_entries(args.results, args.env), str(args.results)
    root = toplevel(args.repo_dir)
    ref = results_ref(root, args.branch) if root else None
    if ref is None:
        from bench.gitops.results_local import no_branch_advice

        raise ConfigError(no_branch_advice(args.repo_dir, args.branch))
    problems: list[str] = []
    entries = read_entries(root, ref, args.env, problems)
    for line in problems[:20]:  # named, never used: the figures they held are unknown
        print(f"history: {ref}: {line}", file=sys.stderr)
    if len(problems) > 20:
        print(f"history: {ref}: {len(problems) - 20} more problem(s) in its entries", file=sys.stderr)
    return entries, ref


def explanations(args: argparse.Namespace, found: list, all_series: dict, entries: list[dict]) -> list[str]:
    """One sentence per change point (bench.analysis.explain over the runs on its two sides;
    change points with the same sides share one). Profiles are read where the records are
    at hand (--results); the files changed come from `git diff` in --repo-dir."""
    from bench.analysis.explain import explain
    from bench.analysis.explain_groups import change_point_sides, entry_views
    from bench.gitops.code_changes import code_change
    from bench.gitops.results_branch import toplevel
    from bench.render.explain import sentence

    root = toplevel(args.repo_dir) if args.repo_dir.exists() else None
    done: dict[tuple, str] = {}
    out = []
    for cp in found:
        key = (cp.env, cp.experiment, cp.start, cp.index, cp.end)
        if key not in done:
            points = all_series[(cp.env, cp.experiment, cp.metric)]
            before, after = change_point_sides(cp, points, entries)
            base, head = points[cp.index - 1].commit, points[cp.index].commit
            views = entry_views(before, args.results), entry_views(after, args.results)
            done[key] = sentence(explain(cp.env, base, head, *views, code_change(root, base, head)))
        out.append(done[key])
    return out


def run(args: argparse.Namespace) -> int:
    from bench.analysis.changepoints import change_points
    from bench.analysis.history import series, usable

    entries, source = load(args)
    all_series = series(entries)
    wanted = set(args.metric or [])
    found = []
    for key in sorted(all_series):
        if wanted and key[2] not in wanted:
            continue
        found += change_points(key, all_series[key], alpha=args.alpha, min_change=args.min_change)
    commits = {e["commit"] for e in entries if usable(e)}
    why = explanations(args, found, all_series, entries)
    out = sys.stdout
    if args.json:
        for cp, text in zip(found, why, strict=True):
            change = cp.change if math.isfinite(cp.change) else None  # JSON has no Infinity: from 0 is null
            print(json.dumps({**cp.__dict__, "change": change, "explanation": text}, sort_keys=True), file=out)
        return 0
    print(
        f"history: {len(entries)} run(s), {len(commits)} commit(s), {len(all_series)} series from {source}; "
        f"{len(found)} change point(s) (p <= {args.alpha:g}, change >= {args.min_change:.0%})",
        file=out,
    )
    if found:
        from bench.analysis.metrics import fmt  # with pandas: paid only when there is something to print

        print("environment\tmetric\tcommit\tbefore -> after\tp-value\twhat changed\texplanation", file=out)
    for cp, text in zip(found, why, strict=True):
        env = cp.env if len({k[1] for k in all_series if k[0] == cp.env}) == 1 else f"{cp.env} ({cp.experiment})"
        print(
            f"{env}\t{cp.metric}\t{cp.commit[:7]}\t{fmt(cp.before)} -> {fmt(cp.after)} ({cp.change_text})\t"
            f"{cp.p_value:.2g}\t{cp.changed}\t{text}",
            file=out,
        )
    return 0
