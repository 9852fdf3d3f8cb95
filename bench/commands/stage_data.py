"""Put the training data file where an environment's jobs read it, verified by sha256.

OpenShift: a Job copies it onto the data PVC from `data.source` (an https:// URL, an
S3-compatible `s3://bucket/key` with `data.s3_endpoint` and a `data.credentials_secret`
holding AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, or `pvc:CLAIM/path`), verifies its
sha256 and leaves an already staged file alone. Slurm: checks that the pre-staged file
(`data_path`/`data.file`) is there with that sha256. A wrong checksum fails with one line
and leaves the old file. The fetch uses https only (`--allow-http` for a trusted network),
sends ATLAS_SOURCE_AUTHORIZATION only to the source's origin, reads at most `data.size`
bytes, and keeps data.file and a pvc: path inside their volumes.
Settings come from `data:` in clusters/<env>/env.yaml.
"""

from __future__ import annotations

import argparse
import math

from bench.commands.common_args import add_env

MAX_TIMEOUT_S = 7 * 86400.0  # a week: no copy is awaited longer

HELP = "stage the data file for an environment's jobs (sha256-verified)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_env(parser, "environment (clusters/<env>/)")
    parser.add_argument("--file", default=None, help="data file name on the data volume / under data_path (data.file)")
    parser.add_argument("--sha256", default=None, help="the file's sha256, as `sha256sum` prints it (data.sha256)")
    parser.add_argument("--source", default=None, help="OpenShift: https://..., s3://bucket/key or pvc:CLAIM/path")
    parser.add_argument(
        "--allow-http", action="store_true", help="let the fetch use plain http:// (a trusted network only)"
    )
    parser.add_argument("--timeout", type=float, default=3600, metavar="SECONDS", help="give up after (default 3600)")


def run(args: argparse.Namespace) -> int:
    from bench.errors import AtlasError
    from bench.stage_data import StageError, data_spec
    from bench.targets import target_for

    if not math.isfinite(args.timeout) or not 0 < args.timeout <= MAX_TIMEOUT_S:
        raise AtlasError(f"--timeout {args.timeout:g}: give seconds, more than 0 and at most {MAX_TIMEOUT_S:g}")
    target = target_for(args.env)
    try:
        spec = data_spec(
            target.env.settings,
            args.env,
            on_volume=target.data_on_volume,
            file=args.file,
            sha256=args.sha256,
            source=args.source,
            allow_http=args.allow_http,
        )
    except StageError as exc:
        raise AtlasError(str(exc)) from None
    print(target.stage_data(spec, args.timeout))
    return 0
