"""Write OUT/<date>-<shortsha>/README.md (tables, charts, advisor, provenance, data
problems) for one commit's runs and regenerate OUT/README.md, the index with history.
Same results in, same bytes out: date and sha come from the runs, not the clock.

`--each-commit` writes one report per commit in the results tree (CI's scheduled
collection, after `bench collect --unreported`).

Where the repository holds a `results` branch (`bench archive`), the history chart covers
every commit it keeps, and a results folder that is missing or empty is first restored
from it, byte for byte: a deleted results folder gives back the same report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from bench.commands.common_args import add_reports, add_selection

if TYPE_CHECKING:
    from bench.analysis.run_index import IndexedRun
    from bench.render.report import ReportResult

HELP = "Markdown + charts under reports/"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_selection(parser)
    add_reports(parser, dest="out", flag="--out")
    parser.add_argument(
        "--each-commit", action="store_true", help="one report per commit in the results tree (ignores --commit)"
    )


def write_report(
    results: Path,
    out: Path,
    commit: str | None = None,
    envs: list[str] | None = None,
    allow_different: bool = False,
    baseline: str | None = None,
    only: set[Path] | None = None,
    allow_dirty: bool = False,
    history: list[dict] | None = None,
    index: list[IndexedRun] | None = None,
) -> ReportResult:
    """Report one commit's runs (or exactly the run folders in `only`, as `bench demo`
    does for the runs it just made): bench.analysis.report_data decides what the report
    shows (`index`: the run index, already read; `history`: the results branch's entries),
    bench.render.report draws it into `out`."""
    from bench.analysis.report_data import read_report_data
    from bench.commands.preload import import_quietly
    from bench.gitops.code_changes import code_change
    from bench.gitops.results_branch import toplevel

    root = toplevel(Path("."))  # the checkout the report is written in: the change points' files changed
    data = read_report_data(
        results, envs, commit, only, allow_different, baseline, allow_dirty, index, history,
        lambda base, head: code_change(root, base, head),
        lambda: import_quietly("scipy.stats", "bench.render.report"),  # the bootstrap's and the charts' libraries
    )  # fmt: skip
    from bench.render.report import draw_report

    return draw_report(data, out)


def report_each_commit(results: Path, out: Path, stream: TextIO | None = None, **options) -> list[Path]:
    """`bench report` for every commit in the results tree; [] (and a note) when there is none."""
    stream = stream or sys.stdout
    from bench.analysis.run_index import read_index

    index = read_index(results, options.get("envs"))  # read once for every commit's report
    shas = sorted({r.git_sha for r in index if r.git_sha})
    written = []
    for sha in shas:
        result = write_report(results, out, commit=sha, index=index, **options)
        print(f"report: {result.readme}", file=stream)
        written.append(result.readme)
    if not shas:
        print(f"no collected run with a commit in {results}: no report written", file=stream)
    return written


def kept_history(results: Path, restore_empty: bool = True, stream: TextIO | None = None) -> list[dict] | None:
    """The results branch's history entries (None without one); restore an empty `results` from it
    (not for --each-commit, which would then write a report for every commit ever kept), and
    each environment folder's noise.json the folder lacks (bench.gitops.branch_noise)."""
    from bench.gitops.branch_noise import restore_noise
    from bench.gitops.results_branch import read_entries, restore, results_ref, toplevel

    root = toplevel(Path("."))
    ref = results_ref(root) if root else None
    if ref is None:
        return None
    skipped: list[str] = []
    if restore_empty and not any(Path(results).glob("*/*/run.json")):
        restored = restore(root, ref, results, skipped=skipped)
        if restored:
            print(f"restored {len(restored)} run record(s) from {ref} into {results}", file=stream or sys.stdout)
    for path in restore_noise(root, ref, Path(results), skipped):  # each environment's floor, where the folder has none
        print(f"restored {path} from {ref}", file=stream or sys.stdout)
    entries = read_entries(root, ref, None, skipped)
    for line in dict.fromkeys(skipped):  # each bad object named once
        print(f"bench report: warning: {line}", file=sys.stderr)
    return entries


def run(args: argparse.Namespace) -> int:
    from bench.errors import AtlasError

    if args.out.exists() and not args.out.is_dir():
        raise AtlasError(f"--out {args.out} is a file, not a folder: give the reports folder (default reports/)")

    options = {
        "history": kept_history(args.results, restore_empty=not args.each_commit),
        "envs": args.envs or None,
        "allow_different": args.allow_different,
        "baseline": args.baseline,
        "allow_dirty": args.allow_dirty,
    }
    if args.each_commit:
        report_each_commit(args.results, args.out, **options)
        return 0
    res = write_report(args.results, args.out, commit=args.commit, **options)
    print(f"report: {res.readme}")
    print(f"index:  {res.index}")
    return 0
