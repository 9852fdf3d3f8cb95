"""`python -m workflows.biggan`: train (default) or `prepare-data`. Exit codes: README.md."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from workflows.biggan.errors import WorkloadConfigError

EPILOG = """\
settings: every key has a dotted name, e.g. --set model.g_ch=32 --set train.batch_size=64
  --set train.max_seconds=null; values are parsed as YAML. --list-keys prints them all.
other command:
  python -m workflows.biggan prepare-data SRC OUT.h5 --resolution R
      image folder (one sub-folder per class) -> HDF5 for data.source=hdf5
exit codes: 0 finished (max_iters or max_seconds), 2 bad configuration or input,
  74 disk full (no room for a checkpoint; the previous one is kept, rerun to resume),
  75 preempted (SIGTERM/SIGUSR1/SIGINT: checkpoint saved, rerun to resume), 1 other failure.
"""


def build_parser() -> argparse.ArgumentParser:
    from workflows.biggan.config import known_experiments

    p = argparse.ArgumentParser(
        allow_abbrev=False,
        prog="python -m workflows.biggan",
        description="Train BigGAN / BigGAN-deep. Writes DIR/train.jsonl, DIR/checkpoints/ and "
        "DIR/samples.png; resumes from DIR/checkpoints/ when present.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--experiment",
        metavar="NAME",
        help=f"preset under workflows/biggan/experiments/ ({', '.join(known_experiments())}) or a .yaml path",
    )
    p.add_argument("--run-dir", type=Path, metavar="DIR", help="where the log and checkpoints go")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one setting (repeatable)",
    )
    p.add_argument(
        "--print-config", action="store_true", help="print the resolved config and its config_sha256 as JSON, then exit"
    )
    p.add_argument(
        "--list-keys",
        action="store_true",
        help="list every setting with its default (with --experiment: that experiment's value), then exit",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["prepare-data"]:
            from workflows.biggan.prepare_data import main as prepare

            return prepare(argv[1:])
        return _train(argv)
    except WorkloadConfigError as exc:
        print(f"biggan: error: {exc}", file=sys.stderr)
        return exc.exit_code


def _train(argv: list[str]) -> int:
    from workflows.biggan import config

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.list_keys:  # with --experiment: that experiment's values
        values = config.resolve(args.experiment, args.overrides) if args.experiment else None
        print(config.describe_keys(values))
        return 0
    if not args.experiment:
        parser.error("--experiment is required (known: " + ", ".join(config.known_experiments()) + ")")
    flat = config.resolve(args.experiment, args.overrides)
    if args.print_config:
        print(
            json.dumps(
                {
                    "experiment": args.experiment,
                    "config_sha256": config.config_sha256(flat),
                    "config": config.nested(flat),
                },
                indent=2,
            )
        )
        return 0
    if args.run_dir is None:
        parser.error("--run-dir is required")
    from workflows.biggan.train import train

    return train(flat, args.run_dir, args.experiment).exit_code


if __name__ == "__main__":
    sys.exit(main())
