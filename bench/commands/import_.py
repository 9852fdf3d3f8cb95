"""Import measurements taken with other tools (sar, nvidia-smi, DCGM, a spreadsheet
CSV with a mapping file) as a run record in RESULTS/ENV/RUN_ID, ready for `bench
compare` and `bench report`. Files of one run are merged on time; what they do not say
stays null and is listed in run.json `facts_unknown`. A file that cannot be read is
named with its line and nothing is written. The record is placed as `bench collect`
places one (`records.place.place_run`), with the environment's facts frozen in: those of
clusters/ENV/env.yaml when ENV is defined there (its cost rates price the run), else
none (kind `imported`: cost unknown)."""

from __future__ import annotations

import argparse
import re
from datetime import date, datetime
from pathlib import Path

from bench.commands.common_args import add_env
from bench.names import arg_type

HELP = "bring sar / nvidia-smi / DCGM / CSV measurements in as a run record"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bench.importers import FORMATS

    parser.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="files of one run; FORMAT:FILE gives one file its own format (none: the files --map names)",
    )
    parser.add_argument(
        "--format",
        choices=sorted(FORMATS),
        default=None,
        help="format of every FILE without a FORMAT: prefix (default with --map: csv)",
    )
    add_env(parser, "environment the run belongs to (a results folder; clusters/ENV/env.yaml's facts when it exists)")
    parser.add_argument("--run-id", type=arg_type("run id"), required=True, help="the run's id (its folder name)")
    parser.add_argument("--results", type=Path, default=Path("results"), help="results tree (default results/)")
    parser.add_argument(
        "--map", type=Path, default=None, help="MAP.yaml for the csv format; its files: list names a run's sheets"
    )
    parser.add_argument(
        "--gpus",
        default=None,
        metavar="0,1",
        help="the job's GPUs among those sampled (host indices); default: every sampled GPU",
    )
    parser.add_argument(
        "--interval",
        type=float,
        default=None,
        metavar="S",
        help="seconds between samples of files without a time column",
    )
    parser.add_argument("--timezone", default="UTC", help="time zone the tools printed local times in (default UTC)")
    parser.add_argument(
        "--date",
        default=None,
        metavar="YYYY-MM-DD",
        help="date of the first sample of files that print only the time of day (sar without its header, "
        "a CSV time column like %%H:%%M:%%S)",
    )
    parser.add_argument(
        "--start",
        default=None,
        metavar="'YYYY-MM-DD HH:MM:SS'",
        help="first sample's time for files without a time column, when no file has one",
    )
    parser.add_argument("--host", default=None, help="host the files were taken on (overrides what files say)")
    parser.add_argument(
        "--experiment", type=arg_type("experiment"), default=None, help="experiment the run trained, if known"
    )
    parser.add_argument("--commit", default=None, metavar="SHA", help="git sha of the measured code, if known")


def _split(item: str, default: str | None, known: dict) -> tuple[str, Path]:
    head, sep, rest = item.partition(":")
    if sep and head in known:
        return head, Path(rest)
    if default is None:
        from bench.errors import AtlasError

        raise AtlasError(f"{item}: no format; pass --format ({', '.join(known)}) or write FORMAT:{item}")
    return default, Path(item)


def _jobs(args: argparse.Namespace, opts):  # -> list[tuple[str, Path, ParseOptions]]
    """(format, file, its options) of every file of the run: the command line's, and those the map names."""
    from bench.errors import AtlasError
    from bench.importers import FORMATS
    from bench.importers.csv_map import file_maps

    default = args.format or ("csv" if opts.mapping is not None else None)
    jobs = [(*_split(item, default, FORMATS), opts) for item in args.files]
    parts = file_maps(opts.mapping, opts) if opts.mapping is not None else []
    named = [(path, o) for path, o in parts if path is not None]
    if named and any(fmt == "csv" for fmt, _, _ in jobs):
        raise AtlasError(
            f"{args.map} names its files (files:); give no csv FILE on the command line "
            "(other formats' files, e.g. sar:FILE, may join them)"
        )
    if not named and parts:
        jobs = [(fmt, path, parts[0][1] if fmt == "csv" else o) for fmt, path, o in jobs]
    jobs += [("csv", path, o) for path, o in named]
    if not jobs:
        raise AtlasError("no files: give FILE(s), or a --map whose files: list names the run's sheets")
    return jobs


def _gpus(text: str | None) -> list[int] | None:
    from bench.errors import AtlasError

    if text is None:
        return None
    try:
        gpus = sorted({int(t) for t in text.split(",") if t.strip()})
    except ValueError:
        raise AtlasError(f"--gpus {text!r}: give GPU indices separated by commas, e.g. --gpus 0,1") from None
    if not gpus:
        raise AtlasError("--gpus is empty: give GPU indices, e.g. --gpus 0,1")
    return gpus


def _options(args: argparse.Namespace):  # -> ParseOptions
    from bench.errors import AtlasError
    from bench.importers import ParseOptions
    from bench.importers.csv_map import load_map
    from bench.importers.sanitize import check_interval
    from bench.importers.series import local_to_unix, zone

    mapping = load_map(args.map) if args.map is not None else None
    if args.interval is not None and args.interval <= 0:
        raise AtlasError(f"--interval {args.interval:g}: must be more than 0 seconds")
    check_interval(args.interval)
    for flag, value, parse in (
        ("--date", args.date, date.fromisoformat),
        ("--start", args.start, datetime.fromisoformat),
    ):
        if value is not None:
            try:
                parse(value)
            except ValueError:
                raise AtlasError(f"{flag} {value!r} is not an ISO date/time") from None
    if args.commit is not None and not re.fullmatch(r"[0-9a-f]{7,40}", args.commit):
        raise AtlasError(f"--commit {args.commit[:80]!r}: give the git sha as 7 to 40 lowercase hex digits")
    zone(args.timezone)
    start = local_to_unix(datetime.fromisoformat(args.start), zone(args.timezone)) if args.start else None
    return ParseOptions(
        timezone=args.timezone, date=args.date, interval_s=args.interval, mapping=mapping, map_path=args.map
    ), start


def import_env(name: str):  # -> Environment
    """The environment the run is placed under: clusters/<name>/ when it is defined there
    (its facts are frozen into the record as collection freezes them), else a bare one
    of kind `imported` whose hardware and cost are unknown."""
    from bench.environments.load import CLUSTERS_DIR, Environment, load_env

    if (CLUSTERS_DIR / name / "env.yaml").is_file():
        return load_env(name, CLUSTERS_DIR)  # its numbers checked as validate checks them (bench.environments.numbers)
    return Environment(name, "imported", CLUSTERS_DIR / name, {})


def run(args: argparse.Namespace) -> int:
    from bench.environments.facts import environment_facts
    from bench.importers import parse_file
    from bench.importers.merge import merge
    from bench.importers.writer import build_run_json, write_record

    opts, start = _options(args)
    env = import_env(args.env)
    series = [parse_file(fmt, path, o) for fmt, path, o in _jobs(args, opts)]  # all read before anything is written
    merged = merge(series, host=args.host, gpus=_gpus(args.gpus), start=start)
    record = build_run_json(
        merged,
        args.env,
        args.run_id,
        experiment=args.experiment,
        git_sha=args.commit,
        timezone=args.timezone,
    )
    dest = write_record(args.results, environment_facts(env), args.run_id, merged, record)
    from bench.analysis.run_index import index_placed

    index_placed([dest])
    rows = sum(len(f) for f in merged.hosts.values())
    print(f"imported {len(series)} file(s) into {dest}: {rows} sample row(s) on {len(merged.hosts)} host(s)")
    for src in merged.sources:
        print(f"  {src['file']} ({src['format']}): {src['rows']} rows, time {src['time']}")
        for note in src["notes"]:
            print(f"    {note}")
        if src["ignored"]:
            print(f"    ignored (not in the map or not read): {', '.join(map(str, src['ignored']))}")
    if merged.gpus_sampled:
        job = merged.gpus_job if merged.gpus_job is not None else merged.gpus_sampled
        print(f"  GPUs sampled: {', '.join(map(str, merged.gpus_sampled))}; the job's: {', '.join(map(str, job))}")
        if merged.gpus_job is None and len(merged.gpus_sampled) > 1:
            print(
                "  note: --gpus not given, so every sampled GPU counts as the job's; "
                "pass --gpus to average only the job's GPUs"
            )
    unknown = record["facts_unknown"]
    key = [k for k in ("git.sha", "config_sha256", "experiment", "exit.status", "start_time") if k in unknown]
    print(
        f"  {len(unknown)} facts not known: null in run.json and listed in its facts_unknown "
        f"(among them {', '.join(key)})"
    )
    return 0
