"""Each environment's noise floor on the results branch: `noise/<env>.json`.

`results/<env>/noise.json` (bench.analysis.noise_store) is measured from the runs of a
results folder; a CI collect job's folder is gone after the job, so `bench archive`
carries the file to the branch beside the records, and what reads the branch (`bench
report`, through `restore_noise`) finds it there. Unlike a record it is not append-only:
it is a summary that a later measurement replaces. The branch's copy is replaced only by
one that counted at least as many runs of every experiment the branch's copy holds
(`covers`): a collector whose folder holds fewer runs never takes a measurement away. A
damaged local file is never carried (it is named, with its fix); a damaged branch copy
is replaced by any sound one, and is never restored.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

NOISE = "noise"  # the branch's folder: noise/<env>.json


def branch_path(env: str) -> str:
    return f"{NOISE}/{env}.json"


def covers(mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> bool:
    """Whether `mine` counted at least as many runs of every experiment `theirs` holds."""
    ours = mine["experiments"]
    return all(x in ours and ours[x]["runs"] >= block["runs"] for x, block in theirs["experiments"].items())


def _on_branch(repo: Path, ref: str | None, envs: list[str]) -> dict[str, bytes | None]:
    """env -> the bytes of noise/<env>.json at `ref` (None: absent, or unreadable in this clone)."""
    from bench.gitops.results_branch import _cat, _git

    if not ref or not envs:
        return dict.fromkeys(envs)
    listing = _git(repo, "ls-tree", "--name-only", ref, "--", f"{NOISE}/").stdout.decode(errors="replace")
    there = [e for e in envs if branch_path(e) in listing.split("\n")]
    found = dict(zip(there, _cat(repo, [f"{ref}:{branch_path(e)}" for e in there])))
    return {e: found.get(e) for e in envs}


def _env_folders(results: Path, with_noise: bool) -> list[str]:
    """The environment folders of `results` (real folders, never links) that have a
    noise.json (`with_noise`) or lack one."""
    from bench.analysis.noise_store import noise_path
    from bench.gitops.results_branch import _NAME

    return sorted(
        p.name
        for p in Path(results).iterdir()
        if _NAME.fullmatch(p.name)
        and p.is_dir()
        and not p.is_symlink()
        and os.path.lexists(noise_path(results, p.name)) == with_noise
    )


def noise_to_keep(repo: Path, results: Path, tip: str | None, skipped: list[str]) -> list[tuple[str, bytes]]:
    """[(path on the branch, bytes)] of each environment's sound results/<env>/noise.json the
    branch at `tip` does not hold as it is and that `covers` the branch's copy; a damaged
    file, or one the branch's copy counts more runs than, is named in `skipped`."""
    from bench.analysis.noise_store import noise_path, parse, read

    envs = _env_folders(results, with_noise=True)
    theirs = _on_branch(repo, tip, envs)
    out = []
    for env in envs:
        mine, problem = read(results, env)
        if mine is None:
            skipped.append(f"{problem}: not kept on the branch; `bench noise --env {env}` measures it again")
            continue
        raw = noise_path(results, env).read_bytes()
        old = theirs[env]
        if old == raw:
            continue
        kept = parse(old, f"{tip}:{branch_path(env)}", env)[0] if old is not None else None
        if kept is not None and not covers(mine, kept):
            skipped.append(
                f"{noise_path(results, env)}: the branch's noise floor of {env} counts more runs; the branch's is kept"
            )
            continue
        out.append((branch_path(env), raw))
    return out


def restore_noise(repo: Path, ref: str, results: Path, skipped: list[str] | None = None) -> list[str]:
    """Write the branch's sound noise/<env>.json to results/<env>/noise.json for each
    environment folder of `results` that lacks one; the paths written. A damaged copy is
    named in `skipped`, never written."""
    from bench.analysis.noise_store import noise_path, parse
    from bench.atomic_files import write_bytes_atomic

    if not Path(results).is_dir():
        return []
    envs = _env_folders(results, with_noise=False)
    written = []
    for env, raw in _on_branch(repo, ref, envs).items():
        if raw is None:
            continue
        data, problem = parse(raw, f"{ref}:{branch_path(env)}", env)
        if data is None:
            if skipped is not None:
                skipped.append(f"{problem}: not restored")
            continue
        write_bytes_atomic(noise_path(results, env), raw)
        written.append(str(noise_path(results, env)))
    return written
