"""Scratch checkouts of one commit, and `bench` run inside them with that commit's code.

The git hook and `bench pr` both measure a commit by cloning it into a scratch folder
and running `python -m bench run` there, so the code that runs is the commit's, never
the installed one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TextIO

from bench.errors import AtlasError

DEFAULT_ENVS = ("local",)


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise AtlasError(f"`git {' '.join(args)}` failed: {proc.stderr.strip()}")
    return proc.stdout


def bench_in(work: Path, *args: str, out: TextIO, ok: tuple[int, ...] = (0,)) -> int:
    """`python -m bench ARGS` in the pushed checkout, so the pushed code is what runs."""
    print(f"$ bench {' '.join(args)}", file=out, flush=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    proc = subprocess.run(
        [sys.executable, "-m", "bench", *args],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    out.write(proc.stdout)
    out.flush()
    if proc.returncode not in ok:
        raise AtlasError(f"`bench {' '.join(args)}` failed with exit code {proc.returncode} (output above)")
    return proc.returncode


def checkout_at(source: Path, sha: str, branch: str | None, out: TextIO) -> Path:
    """A scratch clone of `source` at `sha` (on `branch` when given, so publish can push it)."""
    work = Path(tempfile.mkdtemp(prefix=f"atlas-{sha[:12]}-"))
    try:
        git(work, "clone", "--quiet", "--no-hardlinks", str(source), ".")
        if branch:
            git(work, "checkout", "--quiet", "-B", branch, sha)
        else:
            git(work, "checkout", "--quiet", "--detach", sha)
    except AtlasError:
        shutil.rmtree(work, ignore_errors=True)
        raise
    print(f"atlas: commit {sha[:12]} checked out in {work}", file=out, flush=True)
    return work


def run_envs(
    work: Path,
    envs: tuple[str, ...],
    experiment: str,
    overrides: tuple[str, ...],
    results: Path,
    out: TextIO,
    runs: int = 1,
) -> bool:
    """`bench run` on each environment inside the checkout `work`, records into `results`.

    False when a run did not complete (`bench run` exit 1): its record is collected all
    the same and belongs in the report. Any other failure raises.
    """
    all_ok = True
    for env in envs:
        args = ["run", "--env", env, "--experiment", experiment, "--results", str(Path(results).resolve())]
        args += ["--runs", str(runs)]
        for item in overrides:
            args += ["--set", item]
        all_ok &= bench_in(work, *args, out=out, ok=(0, 1)) == 0
    return all_ok
