"""The results branch where a clone has none yet: what to do, and the demo's local branch.

A fresh clone has no local `results` branch, and a clone made with `--single-branch` (as
CI checks out) has no `origin/results` either; a new project's origin has none at all until
the first `bench archive`. "Fetch it" is the right advice only in the first case, so
`no_branch_advice` asks origin which case this is (`git ls-remote`, one call) and names the
one step that works. `keep_locally` is what `bench demo` does with its runs: it commits them
to the local `results` branch (`bench archive --local`, bench/gitops/results_branch.py), so
`bench history` and the report's history chart have a branch to read after `make demo`.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.gitops.results_branch import BRANCH, archive, read_entries, toplevel

_LS_REMOTE_TIMEOUT_S = 30


def _origin_has(root: Path, remote: str, branch: str) -> bool | str:
    """True / False: whether `remote` has the branch; a string: why it could not be asked."""
    try:
        proc = subprocess.run(
            ["git", "ls-remote", "--heads", remote, f"refs/heads/{branch}"],
            cwd=root,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env={  # never a password or host-key prompt for a hint
                "GIT_SSH_COMMAND": "ssh -o BatchMode=yes",
                **os.environ,
                "GIT_TERMINAL_PROMPT": "0",
            },
            timeout=_LS_REMOTE_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return f"no answer in {_LS_REMOTE_TIMEOUT_S} s"
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        return err[0].removeprefix("fatal: ")[:200] if err else f"git ls-remote exited {proc.returncode}"
    return bool(proc.stdout.strip())


def no_branch_advice(repo: Path, branch: str = BRANCH, remote: str = "origin") -> str:
    """One line for a clone without the results branch: the step that gives it one here."""
    root = toplevel(repo)
    folder = "or read a results folder with `bench history --results DIR`"
    if root is None:
        return f"no {branch} branch: {repo} is not inside a git repository; run this in the project's clone, {folder}"
    results = root / "results"
    if any(results.glob("*/*/run.json")):
        folder = "or read this clone's results folder with `bench history --results results`"
    keep = (
        f"`bench archive --local` commits a results folder's runs to a local {branch} branch "
        f"(`make demo` does so with its runs), {folder}"
    )
    has_remote = subprocess.run(["git", "remote", "get-url", remote], cwd=root, capture_output=True).returncode == 0
    if not has_remote:
        return f"no {branch} branch in this clone, and no remote {remote!r} to fetch one from: {keep}"
    found = _origin_has(root, remote, branch)
    if found is True:
        return (
            f"no {branch} branch in this clone, but {remote} has one: fetch it with "
            f"`git fetch {remote} {branch}:{branch}` and run this again, {folder}"
        )
    if found is False:
        return (
            f"no {branch} branch in this clone or on {remote} (no run has been archived yet; CI's "
            f"collection pushes it with `bench archive`): {keep}"
        )
    return (
        f"no {branch} branch in this clone, and {remote} could not be asked ({found}): when it answers, "
        f"`git fetch {remote} {branch}:{branch}` if it has one; else {keep}"
    )


@dataclass(frozen=True)
class Kept:
    """What `keep_locally` did: one line to print, and the branch's history entries (None: none)."""

    line: str
    entries: list[dict[str, Any]] | None


def keep_locally(results: Path, branch: str = BRANCH, remote: str = "origin") -> Kept:
    """Commit every run of `results` the local branch lacks to it (never pushed), in the git
    repository that holds the results folder (the clone's `results/`; a folder outside any
    repository keeps nothing), and read the branch back. A clone that has only `origin/<branch>`
    first gets a local branch at its tip, so the local one holds origin's runs too (its own are
    pushed by the next `bench archive`).
    Never raises for a clone that cannot keep them: the demo still reports, and says why."""
    from bench.errors import AtlasError

    root = toplevel(results)
    if root is None:
        return Kept(f"runs not kept on a {branch} branch: {results} is not inside a git repository", None)
    local = f"refs/heads/{branch}"
    has = subprocess.run(["git", "rev-parse", "--verify", "--quiet", local], cwd=root, capture_output=True)
    if has.returncode != 0:
        theirs = subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"refs/remotes/{remote}/{branch}^{{commit}}"],
            cwd=root,
            capture_output=True,
        )
        if theirs.returncode == 0:
            tip = theirs.stdout.decode().strip()
            subprocess.run(["git", "update-ref", local, tip, "0" * 40], cwd=root, capture_output=True)
    try:
        res = archive(root, results, remote=None, branch=branch)
    except AtlasError as exc:
        return Kept(f"runs not kept on the {branch} branch: {exc}", None)
    problems: list[str] = []
    entries = read_entries(root, local, None, problems)
    if res.status == "nothing":
        line = f"the local {branch} branch already holds every run of {results}"
    else:
        line = (
            f"kept {len(res.added)} run(s) on the local {branch} branch as {res.commit[:12]} (`bench history` reads it)"
        )
    return Kept(line, entries)
