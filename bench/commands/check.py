"""Check every run record under a results tree: the run.json schema, sample time that
only moves forward, the config hash, the files a record names, plausible units, and an
MFU above 100 % of the GPUs' peak (the compile section's counts are then wrong).

Prints one line per problem (`results/<env>/<run_id>: problem`) and exits 1 when there
is any, 0 when every record is sound. A sound record of a run whose host was busy with
other work (bench.analysis.contention) gets a `warning:` line, which is not a problem.
Records are read one at a time, so a tree of any size is checked in constant memory;
`--env` and `--commit` check a part of it. Each environment's `noise.json` (its stored
noise floor, `bench noise`) is checked too: a damaged or stale one is one line with the
command that measures it again (`--env` narrows that to its environments). Where this
repository holds a results branch, each history entry whose git object is missing or
corrupt in this clone is listed too (`bench history` and `bench report` leave that entry
out and go on). `bench report` runs the same checks and lists the problems in the report.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.commands.common_args import add_envs

HELP = "validate a results tree (schema, sample times, config hash, files, units)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "results", type=Path, nargs="?", default=Path("results"), help="results tree (default results/)"
    )
    add_envs(parser, "only this environment (repeatable)")
    parser.add_argument(
        "--commit", default=None, help="only the runs of this commit (a prefix of its sha; found by the run index)"
    )


def run(args: argparse.Namespace) -> int:
    from bench.analysis.contention import contended_run
    from bench.analysis.fastpath import mfu_over_limit
    from bench.errors import AtlasError
    from bench.records.read import iter_runs

    if not args.results.is_dir():
        raise AtlasError(f"{args.results} is not a folder (give the results tree that `bench collect` fills)")
    if args.commit:
        from bench.analysis.run_index import read_index
        from bench.records.select import choose_commit

        index = read_index(args.results, args.envs or None)
        sha = choose_commit(index, args.commit)  # one clear error naming the commits present
        runs = (r.load() for r in index if r.git_sha == sha)
    else:
        runs = iter_runs(args.results, args.envs or None)
    checked = bad = problems = 0
    for run in runs:  # one record at a time: nothing kept but the counts
        checked += 1
        mfu = mfu_over_limit(run)  # the figures' own physical limit: the report says it too
        found = [*run.problems, *([f"run.json compile: {mfu}"] if mfu else [])]
        bad += bool(found)
        for problem in found:
            print(f"{run.path}: {problem}")
            problems += 1
        busy = None if found else contended_run(run)  # a sound record of a run that shared its host
        if busy:
            print(f"{run.path}: warning: {busy}")
    print(f"{checked} run record(s) checked, {bad} with problems ({problems} problem(s))")
    noise = noise_problems(args.results, args.envs or None)
    for line in noise:
        print(line)
    branch = branch_problems(Path("."))
    for line in branch:
        print(line)
    return 1 if problems or noise or branch else 0


def noise_problems(results: Path, envs: list[str] | None) -> list[str]:
    """One line per environment whose results/<env>/noise.json is damaged (does not parse,
    leaves its schema, disagrees with itself, is a link) or stale (its run index holds
    repeated runs the file did not count), with the fix (bench.analysis.noise_store.check)."""
    from bench.analysis.noise_store import check, noise_path
    from bench.analysis.run_index import read_index

    names = envs or sorted(d.name for d in results.iterdir() if d.is_dir() and not d.name.startswith("."))
    have = [e for e in names if noise_path(results, e).is_symlink() or noise_path(results, e).exists()]
    if not have:
        return []
    entries = [r.entry for r in read_index(results, have)]
    return [line for env in have if (line := check(results, env, [e for e in entries if e.get("env") == env]))]


def branch_problems(repo: Path) -> list[str]:
    """The results branch of the repository `bench report` reads (the one here), if any: each
    history entry whose object is missing or corrupt in this clone (history and report leave it out)."""
    from bench.gitops.results_branch import read_entries, results_ref, toplevel

    root = toplevel(repo)
    ref = results_ref(root) if root else None
    problems: list[str] = []
    if ref is not None:
        read_entries(root, ref, None, problems)
    return problems
