"""`bench`: one module per command under `bench/commands/`, listed in workflow order.

Each command module defines `HELP` (one line), `add_arguments(parser)` and
`run(args) -> int`. A module that is not there yet is simply not offered.
"""

from __future__ import annotations

import argparse
import importlib
import keyword
import os
import sys
from types import ModuleType

from bench.errors import AtlasError, DiskFullError

# The user's workflow, in order: this is also the order `bench --help` lists them.
COMMAND_ORDER = [
    "demo",  # everything below, on the local environments
    "validate",  # check env folders and experiment files
    "envs",  # list the environments (CI builds its deploy/collect matrix from this)
    "stage_data",  # put the training data where an environment's jobs read it
    "record",  # wrap a command and write its run record (runs inside the job)
    "run",  # submit to an environment (wait and collect, or --no-wait)
    "status",  # how are the runs of an environment doing
    "cancel",  # stop runs for good (marked: never resubmitted)
    "collect",  # copy finished run records into the results tree
    "import",  # or bring in measurements from sar / nvidia-smi / DCGM / CSV as run records
    "archive",  # keep the raw run records on the results branch of the repository
    "check",  # validate a results tree (schema and plausibility of every record)
    "noise",  # an environment's noise floor per metric (results/<env>/noise.json); proposed bands
    "compare",  # tables across environments
    "report",  # Markdown + charts under reports/
    "history",  # change points across every collected commit (results branch or folder)
    "explain",  # which phase, which layer and what changed between two commits
    "publish",  # commit reports/ back to the repository
    "pr",  # a pull request: run its head and merge-base, write the comment
    "comment",  # upsert the pull-request comment
    "hooks",  # local GitOps: install the git hook
]


def module_name(command: str) -> str:
    """`bench.commands.<command>`; a Python keyword gets a trailing underscore (import -> import_)."""
    return f"bench.commands.{command}_" if keyword.iskeyword(command) else f"bench.commands.{command}"


def _load(name: str) -> ModuleType | None:
    module = module_name(name)
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return None
        raise


def _chosen(argv: list[str] | None) -> str | None:
    """The command named on the command line (its first word), None when there is none."""
    words = sys.argv[1:] if argv is None else argv
    return words[0].replace("-", "_") if words and not words[0].startswith("-") else None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every command's sub-parser; with `only`, the arguments of that command alone.

    `bench --help` lists each command's one-line HELP and needs none of their arguments:
    declaring them imports what they offer (importers, environments), which a command
    that is not run should not pay for at start-up.
    """
    parser = argparse.ArgumentParser(
        allow_abbrev=False,
        prog="bench",
        description="Record, collect, compare and report BigGAN training runs across environments.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_ORDER:
        module = _load(name)
        if module is None:
            continue
        p = sub.add_parser(
            name.replace("_", "-"),
            help=module.HELP,
            description=getattr(module, "__doc__", None) or module.HELP,
            allow_abbrev=False,
        )
        if only is None or only == name:
            module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    chosen = _chosen(argv)
    parser = build_parser(chosen if chosen in COMMAND_ORDER else None)
    args = parser.parse_args(argv)
    from bench.oserrors import writable_caches
    from bench.terminal import escaping

    writable_caches()
    try:
        with escaping():  # no control character from a record or an entry reaches the terminal
            code = _run(args)
            sys.stdout.flush()  # a reader gone (`bench ... | head`) is met here, not at exit
        return code
    except BrokenPipeError:
        # As Python's docs advise (https://docs.python.org/3/library/signal.html#note-on-sigpipe):
        # no traceback, and nothing more written to the closed pipe at exit.
        from bench.records.contract import EXIT_CLOSED_PIPE

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_CLOSED_PIPE


def _run(args: argparse.Namespace) -> int:
    from bench.atomic_files import disk_full_error, is_disk_full
    from bench.oserrors import is_refused_write, refused_write_line
    from bench.records.contract import EXIT_DISK_FULL, EXIT_USER_ERROR

    try:
        return int(args._run(args) or 0)
    except DiskFullError as exc:
        print(f"bench {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_DISK_FULL
    except AtlasError as exc:
        print(f"bench {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except OSError as exc:  # ENOSPC/EDQUOT, EROFS/EACCES anywhere: named, never a traceback
        if is_refused_write(exc):
            print(f"bench {args.command}: error: {refused_write_line(exc)}", file=sys.stderr)
            return EXIT_USER_ERROR
        if not is_disk_full(exc):
            raise
        print(f"bench {args.command}: error: {disk_full_error(exc)}", file=sys.stderr)
        return EXIT_DISK_FULL
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
