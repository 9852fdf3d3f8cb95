"""The files changed between two commits (`git diff --numstat`), for an explanation of a change.

Why: a slower phase with the same platform and the same config points at the code, and
the code that changed is the list of files between the two commits. Where a commit is not
in the repository at hand (a shallow CI clone, a fork's head, records from elsewhere) the
files are unknown, and the explanation says so rather than guessing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from bench.analysis.explain_causes import CodeChange

_SHA = re.compile(r"[0-9a-fA-F]{4,64}")


def _resolve(repo: Path, sha: str) -> str | None:
    proc = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{sha}^{{commit}}"], cwd=repo, capture_output=True, text=True
    )
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def code_change(repo: Path | None, base: str, head: str) -> CodeChange:
    """What `git diff --numstat base head` says in `repo` (None: no repository to ask)."""
    if base == head:
        return CodeChange(base, head)
    if repo is None or shutil.which("git") is None or not Path(repo).is_dir():
        return CodeChange(base, head, unknown="no git repository here to list the files")
    missing = [
        role for role, s in (("base", base), ("head", head)) if not _SHA.fullmatch(s) or _resolve(Path(repo), s) is None
    ]
    if missing:
        which = "neither commit is" if len(missing) == 2 else f"the {missing[0]} commit is not"
        return CodeChange(base, head, unknown=f"{which} in this repository")
    proc = subprocess.run(
        ["git", "diff", "--numstat", "--no-renames", base, head], cwd=repo, capture_output=True, text=True
    )
    if proc.returncode != 0:
        return CodeChange(base, head, unknown=f"`git diff` failed: {proc.stderr.strip()[:200]}")
    files = []
    for line in proc.stdout.splitlines():
        added, removed, path = (line.split("\t", 2) + ["", "", ""])[:3]
        if path:
            files.append((path, int(added) if added.isdigit() else None, int(removed) if removed.isdigit() else None))
    return CodeChange(base, head, files)
