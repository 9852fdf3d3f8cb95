"""Commit generated reports and push them, surviving a branch that moved meanwhile.

CI jobs (collect, the local post-receive hook) publish into the same branch, possibly at
the same moment. A rejected push is never forced: fetch, rebase our commit on the new
tip, push again, a bounded number of times. The reports index (`reports/README.md`) is
generated from the report folders, so when both sides changed it, it is regenerated from
the union of folders and the rebase goes on: two reports written at once both land. How to
regenerate a generated file is the caller's (`regenerate`; `bench publish` passes the index's,
bench/commands/publish.py): this package receives rendered files and never renders. Any
other conflict stops with a message, the remote untouched.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from bench.atomic_files import LOCK_NAME, locked
from bench.errors import AtlasError, ConfigError

BOT_NAME = "atlas-bench[bot]"
BOT_EMAIL = "atlas-bench-bot@users.noreply.github.com"
SKIP_CI = "[skip ci]"
DEFAULT_PATHS = ("reports",)


DEFAULT_ATTEMPTS = 5

_REJECTED = re.compile(
    r"\[rejected\]|non-fast-forward|fetch first|failed to update ref|cannot lock ref|"
    r"incorrect old value",
    re.I,
)
_CREDENTIALS = re.compile(r"(https?://)[^/@\s]+@")


@dataclass(frozen=True)
class PublishResult:
    status: str  # "pushed" | "nothing"
    commit: str | None
    attempts: int  # pushes tried
    rebases: int  # times the branch had moved and our commit was replayed


def _redact(text: str) -> str:
    return _CREDENTIALS.sub(r"\1***@", text)


def _git(repo: Path, *args: str, check: bool = True, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if check and proc.returncode != 0:
        raise AtlasError(
            f"`git {' '.join(args)}` failed in {repo}: {_redact(proc.stderr.strip() or proc.stdout.strip())}"
        )
    return proc


def bot_env() -> dict[str, str]:
    """The bot identity for author and committer, whatever the machine's git config says."""
    return {
        "GIT_AUTHOR_NAME": BOT_NAME,
        "GIT_AUTHOR_EMAIL": BOT_EMAIL,
        "GIT_COMMITTER_NAME": BOT_NAME,
        "GIT_COMMITTER_EMAIL": BOT_EMAIL,
    }


def commit_message(subject: str) -> str:
    """`[skip ci]` in the subject, so the push that publishes reports starts no workflow."""
    return subject if SKIP_CI in subject else f"{subject} {SKIP_CI}"


def publish(
    repo: Path,
    paths: Sequence[str] = DEFAULT_PATHS,
    *,
    message: str = "reports: update",
    remote: str = "origin",
    branch: str | None = None,
    attempts: int = DEFAULT_ATTEMPTS,
    regenerate: Mapping[str, Callable[[Path], None]] | None = None,
    pause_s: float = 0.5,
) -> PublishResult:
    """Commit `paths` as the bot and push to `remote`/`branch`, rebasing and retrying.
    `regenerate`: generated files that may conflict on a rebase -> how to write them again
    from the tree (none given: any conflict stops the publish)."""
    repo = Path(repo)
    if attempts < 1:
        raise ConfigError(f"attempts must be >= 1, got {attempts}")
    top = _git(repo, "rev-parse", "--show-toplevel", check=False)
    if top.returncode != 0:
        raise ConfigError(f"{repo} is not a git working tree: run `bench publish` inside the repository clone")
    repo = Path(top.stdout.strip())
    if branch is None:
        head = _git(repo, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
        if head.returncode != 0:
            raise ConfigError("HEAD is detached: pass --branch NAME (the branch to publish to, e.g. main)")
        branch = head.stdout.strip()
    if _git(repo, "remote", "get-url", remote, check=False).returncode != 0:
        raise ConfigError(f"git remote {remote!r} does not exist in {repo}: pass --remote NAME")
    present = [p for p in paths if (repo / p).exists()]
    if not present:
        raise ConfigError(f"nothing to publish: none of {', '.join(paths)} exists in {repo} (run `bench report` first)")

    with ExitStack() as held:  # `bench report` swaps folders under this lock: never stage half a swap
        for folder in present:
            if (repo / folder).is_dir():
                held.enter_context(locked(repo / folder))
        return _commit_and_push(repo, present, message, remote, branch, attempts, regenerate, pause_s)


def _commit_and_push(
    repo: Path,
    present: list[str],
    message: str,
    remote: str,
    branch: str,
    attempts: int,
    regenerate: Mapping[str, Callable[[Path], None]] | None,
    pause_s: float,
) -> PublishResult:
    _git(repo, "add", "--all", "--", *present, f":(exclude,glob)**/{LOCK_NAME}")  # our lock file is never data
    staged = _git(repo, "diff", "--cached", "--quiet", "--", *present, check=False).returncode != 0
    if staged:
        _git(repo, "commit", "--quiet", "--no-verify", "-m", commit_message(message), "--", *present, env=bot_env())
    elif not _ahead_of_remote(repo, remote, branch):
        return PublishResult("nothing", None, 0, 0)

    rebases = 0
    for attempt in range(1, attempts + 1):
        push = _git(repo, "push", "--porcelain", remote, f"HEAD:refs/heads/{branch}", check=False)
        if push.returncode == 0:
            sha = _git(repo, "rev-parse", "HEAD").stdout.strip()
            return PublishResult("pushed", sha, attempt, rebases)
        output = push.stdout + push.stderr
        if not _REJECTED.search(output):
            raise AtlasError(
                f"git push to {remote} {branch} failed (not a moved branch, so not retried): {_redact(output.strip())}"
            )
        if attempt == attempts:
            break
        time.sleep(pause_s * attempt * (0.5 + random.random()))
        _git(repo, "fetch", "--quiet", remote, branch)
        _rebase_onto_fetched(repo, regenerate or {})
        rebases += 1
    raise AtlasError(
        f"{remote}/{branch} kept moving: {attempts} pushes were rejected. Nothing was forced; "
        f"your report commit is still in {repo}: run `bench publish` again"
    )


def _ahead_of_remote(repo: Path, remote: str, branch: str) -> bool:
    """True when an earlier publish committed but did not get to push."""
    _git(repo, "fetch", "--quiet", remote, branch, check=False)
    ahead = _git(repo, "rev-list", "--count", "FETCH_HEAD..HEAD", check=False)
    return ahead.returncode == 0 and int(ahead.stdout.strip() or 0) > 0


def _conflicts(repo: Path) -> list[str]:
    return _git(repo, "diff", "--name-only", "--diff-filter=U", check=False).stdout.split()


def _rebase_onto_fetched(repo: Path, regenerate: Mapping[str, Callable[[Path], None]]) -> None:
    """Replay our commit(s) on the fetched tip, regenerating conflicted generated files."""
    step = _git(repo, "rebase", "--autostash", "FETCH_HEAD", check=False, env=bot_env())
    for _ in range(100):  # one round per replayed commit at most
        if step.returncode == 0:
            return
        conflicted = _conflicts(repo)
        if not conflicted or any(path not in regenerate for path in conflicted):
            _git(repo, "rebase", "--abort", check=False)
            others = [p for p in conflicted if p not in regenerate]
            raise AtlasError(
                "the branch moved and its new reports conflict with ours in "
                f"{', '.join(others) or 'some files'}; nothing was pushed or forced. "
                "Run `bench report` on the updated branch and `bench publish` again"
            )
        for path in conflicted:
            regenerate[path](repo)
        _git(repo, "add", "--", *conflicted)
        step = _git(repo, "-c", "core.editor=true", "rebase", "--continue", check=False, env=bot_env())
    _git(repo, "rebase", "--abort", check=False)
    raise AtlasError("rebase did not finish; nothing was pushed or forced")
