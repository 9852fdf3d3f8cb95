"""Raw run records kept in git, on a `results` branch of the same repository.

CI artifacts expire; a question asked months later ("was that drop the data loader or
the GPU?") needs the records themselves. `archive` adds every run of a results folder
that the branch does not hold yet, as one commit per collect:

    runs/<env>/<run_id>/<file>     each record file as `bench collect` placed it; samples
                                   and other large files compressed (bench/gitops/pack.py)
    index/<env>/<run_id>.json      the run's history entry (figures, provenance, and the
                                   record's files with their sha256)
    noise/<env>.json               the environment's noise floor, results/<env>/noise.json
                                   (replaced by a later one: bench/gitops/branch_noise.py)

The branch is append-only: a run already there is never rewritten, and no commit is
ever forced. It is written with git plumbing only (`hash-object`, a temporary index via
GIT_INDEX_FILE, `write-tree`, `commit-tree`, `push`), so the user's work tree, index and
checked-out branch are never touched. When the push is rejected because another
collector got there first, the commit is rebuilt on the new tip and pushed again, as
`bench publish` does (bench/gitops/publish.py). Every commit's tree holds every record,
so a clone of the branch's tip alone (`git fetch --depth=1 origin results`) is enough to
archive, restore or draw the history.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import random
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.atomic_files import LOCK_NAME
from bench.errors import AtlasError, ConfigError, DiskFullError
from bench.gitops.branch_noise import NOISE, noise_to_keep
from bench.gitops.publish import _REJECTED, _redact, bot_env, commit_message
from bench.records.inside_tree import outside_why, own_files, require_inside

BRANCH = "results"
RUNS = "runs"
INDEX = "index"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
_NO_SPACE = re.compile(r"No space left on device|Disk quota exceeded", re.IGNORECASE)


@dataclass(frozen=True)
class ArchiveResult:
    status: str  # "pushed" | "committed" (no remote) | "nothing"
    commit: str | None
    added: tuple[str, ...]  # env/run_id of the runs this commit added
    attempts: int
    rebases: int
    skipped: tuple[str, ...] = ()  # what was not taken from the results tree, and why (links, ...)
    noise: tuple[str, ...] = ()  # the environments whose noise.json this commit carried


def _git(repo: Path, *args: str, data: bytes | None = None, env: dict[str, str] | None = None, check: bool = True):
    proc = subprocess.run(["git", *args], cwd=repo, input=data, capture_output=True, env={**os.environ, **(env or {})})
    if check and proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip()
        if _NO_SPACE.search(err):
            raise DiskFullError(
                f"disk full: `git {' '.join(args[:2])}` could not write to {repo}/.git ({_redact(err)[:200]}); "
                "free space and run the command again (nothing already kept on the branch was changed)"
            )
        raise AtlasError(f"`git {' '.join(args[:3])}` failed in {repo}: {_redact(err)[:400]}")
    return proc


def toplevel(path: Path) -> Path | None:
    """The git work tree (or bare repository) that holds `path`, None outside one."""
    path = Path(path).resolve()
    while not path.exists():
        path = path.parent
    if shutil.which("git") is None:  # no git here: no results branch either
        return None
    proc = _git(path if path.is_dir() else path.parent, "rev-parse", "--show-toplevel", check=False)
    if proc.returncode == 0 and proc.stdout.strip():
        return Path(proc.stdout.decode().strip())
    bare = _git(path if path.is_dir() else path.parent, "rev-parse", "--is-bare-repository", check=False)
    return path if bare.returncode == 0 and bare.stdout.strip() == b"true" else None


def _rev(repo: Path, ref: str) -> str | None:
    proc = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def results_ref(repo: Path, branch: str = BRANCH, remote: str = "origin") -> str | None:
    """The ref that holds the results branch here: the local branch, else the remote's."""
    for ref in (f"refs/heads/{branch}", f"refs/remotes/{remote}/{branch}"):
        if _rev(repo, ref):
            return ref
    return None


def fetch(repo: Path, remote: str, branch: str = BRANCH, depth: int | None = None) -> str | None:
    """Fetch the remote's results branch into refs/remotes/<remote>/<branch>; its tip or None."""
    args = ["fetch", "--quiet", "--no-tags"] + ([f"--depth={depth}"] if depth else [])
    proc = _git(repo, *args, remote, f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}", check=False)
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace")
        if "couldn't find remote ref" in err or "could not find remote ref" in err.lower():
            return None
        raise AtlasError(f"could not fetch {branch} from {remote}: {_redact(err.strip())[:400]}")
    return _rev(repo, f"refs/remotes/{remote}/{branch}")


def _held(repo: Path, tip: str | None) -> set[str]:
    """env/run_id of every run the tree of `tip` holds."""
    if not tip:
        return set()
    out = _git(repo, "ls-tree", "-r", "--name-only", tip, "--", f"{INDEX}/").stdout.decode()
    return {line[len(INDEX) + 1 : -len(".json")] for line in out.splitlines() if line.endswith(".json")}


def _run_dirs(results: Path, skipped: list[str]) -> list[tuple[str, str, Path]]:
    """Every run folder of the tree: real folders only, never a link out of it (named in `skipped`)."""
    found = []
    for env_dir in sorted(p for p in Path(results).iterdir() if _NAME.fullmatch(p.name)):
        for run_dir in sorted(env_dir.iterdir()) if env_dir.is_dir() else []:
            if not _NAME.fullmatch(run_dir.name):
                continue
            why = outside_why(Path(results), run_dir)
            if why:
                skipped.append(f"{env_dir.name}/{run_dir.name}: {why}")
            elif run_dir.is_dir() and (run_dir / "run.json").is_file():
                found.append((env_dir.name, run_dir.name, run_dir))
    return found


def _blob(repo: Path, data: bytes) -> str:
    return _git(repo, "hash-object", "-w", "--stdin", data=data).stdout.decode().strip()


def _stage_run(repo: Path, env: str, run_id: str, run_dir: Path, skipped: list[str]) -> list[tuple[str, str]]:
    """Write one run's blobs; [(path in the tree, blob sha)], its index entry last. Only the
    files the run folder owns are taken (bench.records.inside_tree); the others are named in `skipped`."""
    from bench.analysis.history import run_entry
    from bench.gitops.pack import pack
    from bench.records.read import load_run

    entry = run_entry(load_run(run_dir, env))
    files, staged = {}, []
    owned, refused = own_files(run_dir, lambda name: name != LOCK_NAME and bool(_NAME.fullmatch(name)))
    skipped.extend(f"{env}/{why}" for why in refused)
    for name, raw in owned.items():
        stored, data = pack(name, raw)
        files[name] = {"stored": stored, "sha256": hashlib.sha256(raw).hexdigest(), "bytes": len(raw)}
        staged.append((f"{RUNS}/{env}/{run_id}/{stored}", _blob(repo, data)))
    entry["files"] = files
    text = json.dumps(entry, sort_keys=True, indent=1) + "\n"
    staged.append((f"{INDEX}/{env}/{run_id}.json", _blob(repo, text.encode())))
    return staged


def _commit(repo: Path, tip: str | None, blobs: list[tuple[str, str]], message: str) -> str:
    """A commit of tip's tree plus `blobs`, built in a temporary index (work tree untouched)."""
    with tempfile.TemporaryDirectory(prefix="atlas-results-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        if tip:
            _git(repo, "read-tree", tip, env=env)
        info = "".join(f"100644 {sha}\t{path}\n" for path, sha in blobs).encode()
        _git(repo, "update-index", "--add", "--index-info", data=info, env=env)
        tree = _git(repo, "write-tree", env=env).stdout.decode().strip()
    parents = ["-p", tip] if tip else []
    return _git(repo, "commit-tree", tree, *parents, "-m", message, env=bot_env()).stdout.decode().strip()


def _is_ancestor(repo: Path, older: str, newer: str) -> bool:
    return _git(repo, "merge-base", "--is-ancestor", older, newer, check=False).returncode == 0


def _not_results(repo: Path, tip: str | None) -> list[str]:
    """Top-level names of `tip`'s tree that a results commit never holds ([] for a results commit)."""
    if not tip:
        return []
    names = _git(repo, "ls-tree", "--name-only", tip).stdout.decode().split("\n")
    return [n for n in names if n and n not in (RUNS, INDEX, NOISE)]


def _refuse_foreign(repo: Path, where: str, tip: str | None) -> None:
    foreign = _not_results(repo, tip)
    if foreign and tip:
        raise AtlasError(
            f"{where} ({tip[:12]}) is not a results commit (it holds {', '.join(foreign[:3])}); nothing was "
            f"written: point {where} back at the last results commit (`git log {where}` shows the bot's) "
            "or pass another --branch"
        )


def _tree_entries(repo: Path, commit: str, runs: list[str]) -> list[tuple[str, str]]:
    """[(path, blob)] of the given env/run_id records in `commit`'s tree (files and index entry)."""
    out = []
    for key in runs:
        env, run_id = key.split("/", 1)
        listing = _git(repo, "ls-tree", "-r", commit, "--", f"{RUNS}/{env}/{run_id}/", f"{INDEX}/{env}/{run_id}.json")
        for line in listing.stdout.decode().splitlines():
            meta, _, path = line.partition("\t")
            out.append((path, meta.split()[2]))
    return out


def _set_local_branch(repo: Path, branch: str, sha: str) -> None:
    """Move refs/heads/<branch> to `sha`, unless it is checked out (its work tree is the
    user's), and only where no run it holds is lost: a fast-forward, or onto a rebuild that
    holds every one of its runs. The move is compare-and-swap: a branch moved meanwhile stays."""
    head = _git(repo, "symbolic-ref", "--quiet", "HEAD", check=False).stdout.decode().strip()
    if head == f"refs/heads/{branch}":
        return
    old = _rev(repo, f"refs/heads/{branch}")
    if old == sha:
        return
    if old and not _is_ancestor(repo, old, sha) and (_held(repo, old) - _held(repo, sha)):
        return  # it holds runs `sha` lacks: it stays where it is (archive rebuilt them onto the tip)
    _git(repo, "update-ref", f"refs/heads/{branch}", sha, old or "0" * 40, check=False)


def archive(
    repo: Path,
    results: Path,
    *,
    remote: str | None = "origin",
    branch: str = BRANCH,
    attempts: int = 5,
    depth: int | None = None,
    pause_s: float = 0.5,
) -> ArchiveResult:
    """Add the runs of `results` the branch lacks, as one bot commit; push it (rebuild and
    retry when the branch moved, never force). `remote=None` commits to the local branch."""
    root = toplevel(repo)
    if root is None:
        raise ConfigError(f"{repo} is not inside a git repository: run `bench archive` in the repository clone")
    if not re.fullmatch(r"[A-Za-z0-9._/-]{1,100}", branch) or ".." in branch:
        raise ConfigError(f"branch {branch[:80]!r} is not a plain branch name")
    if remote is not None and _git(root, "remote", "get-url", remote, check=False).returncode != 0:
        raise ConfigError(f"git remote {remote!r} does not exist in {root}: pass --remote NAME")
    if not Path(results).is_dir():
        raise ConfigError(f"no results folder {results}: run `bench collect` first")
    skipped: list[str] = []
    candidates = _run_dirs(Path(results), skipped)
    staged: dict[str, list[tuple[str, str]]] = {}
    rebases = 0
    local = _rev(root, f"refs/heads/{branch}")  # this clone's branch: `--local` commits live here
    seen = _rev(root, f"refs/remotes/{remote}/{branch}") if remote is not None else None
    _refuse_foreign(root, branch, local)
    for attempt in range(1, max(1, attempts) + 1):
        tip = fetch(root, remote, branch, depth) if remote is not None else _rev(root, f"refs/heads/{branch}")
        if remote is not None:
            _refuse_foreign(root, f"{remote}/{branch}", tip)
            _refuse_lost(root, f"{remote}/{branch}", seen, tip)
        else:
            _refuse_foreign(root, branch, tip)
        held = _held(root, tip)
        # runs only this clone's branch holds (archived with --local): rebuilt onto the tip, never dropped
        carried = sorted(_held(root, local) - held) if remote is not None and local and local != tip else []
        new = [(env, run_id, d) for env, run_id, d in candidates if f"{env}/{run_id}" not in held]
        new = [(env, run_id, d) for env, run_id, d in new if f"{env}/{run_id}" not in carried]
        noise_skipped: list[str] = []  # said once, from the attempt that commits
        noise = noise_to_keep(root, Path(results), tip, noise_skipped)
        if not new and not carried and not noise:
            if tip:
                _set_local_branch(root, branch, tip)
            return ArchiveResult("nothing", tip, (), attempt - 1, rebases, tuple(skipped + noise_skipped))
        for env, run_id, d in new:
            if f"{env}/{run_id}" not in staged:
                staged[f"{env}/{run_id}"] = _stage_run(root, env, run_id, d, skipped)
        added = tuple(f"{env}/{run_id}" for env, run_id, _ in new) + tuple(carried)
        kept = tuple(p.split("/")[1].removesuffix(".json") for p, _ in noise)
        envs = sorted({a.split("/")[0] for a in added})
        said = [f"{len(added)} run(s) of {', '.join(envs)}"] if added else []
        said += [f"noise floor of {', '.join(kept)}"] if kept else []
        subject = commit_message(f"results: {'; '.join(said)}")
        blobs = [b for env, run_id, _ in new for b in staged[f"{env}/{run_id}"]]
        blobs += _tree_entries(root, local, carried) if carried and local else []
        blobs += [(path, _blob(root, raw)) for path, raw in noise]
        done = tuple(skipped + noise_skipped)
        commit = _commit(root, tip, blobs, subject)
        if remote is None:
            moved = _git(root, "update-ref", f"refs/heads/{branch}", commit, tip or "0" * 40, check=False)
            if moved.returncode == 0:
                return ArchiveResult("committed", commit, added, attempt, rebases, done, kept)
            # another `--local` archive moved the branch meanwhile: rebuild on its new tip
        else:
            push = _git(root, "push", "--porcelain", remote, f"{commit}:refs/heads/{branch}", check=False)
            if push.returncode == 0:
                _git(root, "update-ref", f"refs/remotes/{remote}/{branch}", commit)
                _set_local_branch(root, branch, commit)
                return ArchiveResult("pushed", commit, added, attempt, rebases, done, kept)
            output = (push.stdout + push.stderr).decode(errors="replace")
            if _NO_SPACE.search(output):
                raise DiskFullError(
                    f"disk full: git push of {branch} to {remote} failed ({_redact(output)[:200]}); free space "
                    "and run `bench archive` again (the records are still in the results folder)"
                )
            if not _REJECTED.search(output):
                raise AtlasError(
                    f"git push of {branch} to {remote} failed (not a moved branch): {_redact(output)[:400]}"
                )
            seen = tip  # what this clone now knows the remote held
        if attempt < attempts:
            time.sleep(pause_s * attempt * (0.5 + random.random()))
            rebases += 1
    where = f"{remote}/{branch}" if remote is not None else f"the local branch {branch}"
    raise AtlasError(
        f"{where} kept moving: {attempts} tries to add the runs were overtaken. Nothing was forced; "
        "the records are still in the results folder: run `bench archive` again"
    )


def _refuse_lost(repo: Path, where: str, seen: str | None, tip: str | None) -> None:
    """The remote's branch no longer holds runs this clone saw on it (someone rewrote it):
    refuse, naming the commit that still has them, rather than build on what is left."""
    if not seen or seen == tip or (tip and _is_ancestor(repo, seen, tip)):
        return
    if not _rev(repo, seen):
        return  # not in this clone (a shallow fetch): nothing to compare
    lost = sorted(_held(repo, seen) - _held(repo, tip))
    if lost:
        raise AtlasError(
            f"{where} lost {len(lost)} run(s) this clone saw on it (e.g. {lost[0]}; it was rewritten"
            f"{' to ' + tip[:12] if tip else ' or deleted'}); nothing was written: commit {seen[:12]} still has "
            f"them (`git push {where.split('/')[0]} {seen}:refs/heads/{where.split('/', 1)[1]}` after checking "
            "with `git log`, then archive again)"
        )


def _cat(repo: Path, specs: list[str]) -> list[bytes | None]:
    """`git cat-file --batch` for many objects at once (one process, not one per file).

    An object git cannot read (missing, or corrupt: git then stops the whole batch) is None,
    and the batch goes on after it in a new process: one bad object is one missing entry."""
    blobs: list[bytes | None] = []
    while len(blobs) < len(specs):
        rest = specs[len(blobs) :]
        proc = _git(repo, "cat-file", "--batch", data="".join(s + "\n" for s in rest).encode(), check=False)
        got = _parse_batch(proc.stdout, len(rest))
        blobs.extend(got)
        if len(blobs) < len(specs) and (proc.returncode != 0 or len(got) < len(rest)):
            blobs.append(None)  # the object the batch died on
    return blobs


def _parse_batch(out: bytes, count: int) -> list[bytes | None]:
    """The complete objects of a `cat-file --batch` output, in order (stops at a cut-off one)."""
    blobs: list[bytes | None] = []
    pos = 0
    for _ in range(count):
        end = out.find(b"\n", pos)
        if end < 0:
            break
        header = out[pos:end].split()
        if len(header) == 2 and header[1] == b"missing":
            blobs.append(None)
            pos = end + 1
            continue
        if len(header) != 3 or not header[2].isdigit() or len(out) < end + 1 + int(header[2]) + 1:
            break
        size = int(header[2])
        blobs.append(out[end + 1 : end + 1 + size])
        pos = end + 1 + size + 1
    return blobs


def read_entries(
    repo: Path, ref: str, env: str | None = None, problems: list[str] | None = None
) -> list[dict[str, Any]]:
    """Every history entry on the branch (of one environment), read without a checkout, each
    held to its schema (bench.gitops.branch_entries); `problems` gets what was refused, and
    each entry whose object is missing or corrupt in this clone (left out, one line each)."""
    from bench.gitops.branch_entries import checked_entry

    where = f"{INDEX}/{env}/" if env else f"{INDEX}/"
    names = _git(repo, "ls-tree", "-r", "--name-only", ref, "--", where).stdout.decode(errors="replace").split("\n")
    names = [n for n in names if n.endswith(".json")]
    entries = []
    for name, blob in zip(names, _cat(repo, [f"{ref}:{n}" for n in names])):
        if blob is None:
            if problems is not None:
                problems.append(
                    f"{ref}: {name} is missing or corrupt in this clone; left out "
                    "(`git fsck` names the object; fetch the branch again to repair)"
                )
            continue
        entry, found = checked_entry(blob, name)
        if problems is not None:
            problems.extend(found)
        if entry is not None:  # an entry that cannot be read is no history (the record is still there)
            entries.append(entry)
    return entries


def restore(repo: Path, ref: str, results: Path, env: str | None = None, skipped: list[str] | None = None) -> list[str]:
    """Write every record of the branch (of one environment) the results folder lacks back
    into it, byte for byte as collected (sha256 checked); env/run_id of those written. A
    record with a missing or corrupt object is not written and is named in `skipped`."""
    from bench.gitops.pack import unpack

    written = []
    for entry in read_entries(repo, ref, env, skipped):
        e, run_id = entry["env"], entry["run_id"]
        if not (_NAME.fullmatch(e) and _NAME.fullmatch(run_id)):
            continue
        dest = Path(results) / e / run_id
        if os.path.lexists(dest):
            continue
        require_inside(Path(results), dest, f"restore of {e}/{run_id}")  # results/<env> a link: never written through
        files = entry.get("files")
        if not isinstance(files, dict) or not files:
            continue  # no file list the schema accepts: nothing is restored, rather than a part
        names = sorted(n for n in files if _NAME.fullmatch(n) and _NAME.fullmatch(str(files[n].get("stored"))))
        blobs = _cat(repo, [f"{ref}:{RUNS}/{e}/{run_id}/{files[n]['stored']}" for n in names])
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{run_id}.", dir=dest.parent))  # renamed into place whole
        try:
            problem = _restore_files(ref, f"{e}/{run_id}", files, names, blobs, tmp, unpack)
            if problem is not None:
                if skipped is None:
                    raise AtlasError(problem)
                skipped.append(problem)
                continue
            tmp.chmod(0o755)
            os.replace(tmp, dest)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        written.append(f"{e}/{run_id}")
    return written


def _restore_files(
    ref: str, key: str, files: dict, names: list[str], blobs: list, tmp: Path, unpack: Any
) -> str | None:
    """Write one record's files into `tmp`; the reason it cannot be restored, or None."""
    for name, blob in zip(names, blobs):
        if blob is None:
            return f"{ref}: {key}/{name} is missing or corrupt in this clone; the run was not restored"
        try:
            raw = unpack(name, str(files[name].get("stored")), blob)
        except (ValueError, KeyError, lzma.LZMAError) as exc:
            return f"{ref}: {key}/{name} cannot be unpacked ({exc}); it was not restored"
        if hashlib.sha256(raw).hexdigest() != files[name]["sha256"]:
            return f"{ref}: {key}/{name} does not match its sha256; it was not restored"
        (tmp / name).write_bytes(raw)
    return None
