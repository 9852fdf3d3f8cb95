"""Measure an environment's noise floor and store it with its records.

The floor of each metric is NOISE_Z (1.96) × the coefficient of variation of runs of one
commit, pooled over every commit with two or more clean, finished runs of the
experiment in the results tree (bench.analysis.noise). With `--runs K` it first runs K
runs of this checkout's commit through `bench run`. The result goes to
`results/<env>/noise.json` (bench.analysis.noise_store), which the PR comment and the
report read: a change below the floor reads "within noise (±x %)". A damaged or stale
file is named in one line and recomputed. `--propose-bands` prints bands for
`clusters/<env>/expected.yaml` (median ∓ 3 CV) for a reviewer to commit; it never writes
clusters/.
"""

from __future__ import annotations

import argparse
import sys

from bench.commands.common_args import add_env, add_overrides, add_results
from bench.names import arg_type

HELP = "measure an environment's noise floor per metric (results/<env>/noise.json); propose expected bands"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_env(parser, "environment whose runs are measured (clusters/<env>/, results/<env>/)")
    parser.add_argument(
        "--experiment",
        type=arg_type("experiment"),
        default=None,
        help="workload preset to measure (default: every experiment with repeated runs; with --runs: smoke)",
    )
    parser.add_argument(
        "--runs",
        type=int,
        default=None,
        metavar="K",
        help="first run this commit K times on the environment (`bench run --runs K`), then measure",
    )
    parser.add_argument(
        "--propose-bands",
        action="store_true",
        help="print expected.yaml bands (median -/+ 3 CV) for clusters/<env>/expected.yaml; writes nothing there",
    )
    add_results(parser)
    add_overrides(parser)


def _run_first(args: argparse.Namespace) -> None:
    """K runs of this commit through the normal `bench run` path (validated, collected, indexed)."""
    from bench.commands import run as run_command
    from bench.errors import AtlasError

    argv = ["run", "--env", args.env, "--experiment", args.experiment, "--runs", str(args.runs)]
    argv += ["--results", str(args.results)] + [x for o in args.overrides for x in ("--set", o)]
    parser = argparse.ArgumentParser(prog="bench run")
    run_command.add_arguments(parser)
    rc = int(run_command.run(parser.parse_args(argv[1:])) or 0)
    if rc != 0:
        raise AtlasError(f"`bench {' '.join(argv)}` failed (exit {rc}): the noise floor was not measured")


def run(args: argparse.Namespace) -> int:
    from bench.analysis.noise import measure
    from bench.analysis.noise_store import noise_path, read, stale_reason, write
    from bench.analysis.regression import pr_family
    from bench.analysis.run_index import read_index
    from bench.errors import ConfigError

    target = noise_path(args.results, args.env)
    if target.is_dir() and not target.is_symlink():
        raise ConfigError(
            f"{target} is a folder, not the noise file: remove it, then run `bench noise --env {args.env}` again"
        )
    if args.runs is not None:
        if args.runs < 2:
            raise ConfigError(f"--runs must be at least 2 (a spread needs two runs of one commit), got {args.runs}")
        args.experiment = args.experiment or "smoke"
        _run_first(args)
    entries = [r.entry for r in read_index(args.results, [args.env], sys.stderr)]
    experiments = [args.experiment] if args.experiment else sorted({str(e.get("experiment")) for e in entries})
    metrics = list(pr_family())
    measured = [m for m in (measure(entries, args.env, x, metrics) for x in experiments) if m.floors]
    if not measured:
        what = f"experiment {args.experiment}" if args.experiment else "any experiment"
        dirty = sum(e.get("dirty") is True and e.get("experiment") in experiments for e in entries)
        if dirty:
            what += f" ({dirty} run(s) are of uncommitted code, which a floor never counts: commit, then rerun)"
        raise ConfigError(
            f"no commit of {args.env} has two or more clean, finished runs of {what} under {args.results} "
            f"(at least 3 such runs are needed): run `bench noise --env {args.env} --runs 3` to make them"
        )
    stored, problem = read(args.results, args.env)
    for m in measured:
        block = (stored or {}).get("experiments", {}).get(m.experiment)
        why = stale_reason(block, m) if block is not None else ""
        if why:
            problem = problem or f"{args.results / args.env / 'noise.json'} is stale ({why})"
    if problem:
        print(f"atlas: {problem}: recomputed", file=sys.stderr)
    kept = list(measured)
    if stored is not None:  # experiments measured before and not now are kept as they were
        from bench.analysis.noise_store import block_as_measured

        have = {m.experiment for m in measured}
        kept += [block_as_measured(args.env, x, b) for x, b in stored["experiments"].items() if x not in have]
    path = write(args.results, args.env, kept)
    from bench.analysis.noise import BAND_Z, NOISE_Z, propose_bands
    from bench.render.noise_words import floors_table, proposed_bands_yaml

    print(floors_table(measured, path, NOISE_Z))
    if args.propose_bands:
        bands = {m.experiment: propose_bands(m, metrics) for m in measured}
        print(proposed_bands_yaml(args.env, bands, measured, BAND_Z))
    return 0
