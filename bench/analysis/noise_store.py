"""`results/<env>/noise.json`: an environment's measured noise floor, stored with its records.

`bench noise` writes it (bench.analysis.noise measures it); the PR comment and the report
read it. What it was made from is in the file (per experiment: the commits and how many
runs of each, and the date), so a reader can tell when it no longer says what the
history says: a file that does not parse or leaves noise.schema.json is *damaged*, one
whose history now holds repeated runs it did not count is *stale*. Either is named in
one line and the floor recomputed from the history; never a traceback. A file is not
stale because runs it counted are absent here (a CI checkout holding only the PR's
runs): it is then the only measurement there is.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.analysis.noise import NOISE_Z, Floor, Measured, measure
from bench.atomic_files import write_json_atomic
from bench.errors import AtlasError
from bench.finite_schema import problems

FILE = "noise.json"
FORMAT = "atlas-noise/1"
SCHEMA_FILE = Path(__file__).with_name("noise.schema.json")
MAX_NOISE_BYTES = 4 * 1024 * 1024


def noise_path(results: Path, env: str) -> Path:
    return Path(results) / env / FILE


def to_json(env: str, measured: Iterable[Measured], now: dt.datetime | None = None) -> dict[str, Any]:
    """The file's content for `env`: one block per experiment measured."""
    when = (now or dt.datetime.now(dt.timezone.utc)).isoformat(timespec="seconds")
    experiments = {}
    for m in measured:
        experiments[m.experiment] = {
            "commits": dict(m.commits),
            "runs": sum(m.commits.values()),
            "metrics": {k: _floor_json(f) for k, f in sorted(m.floors.items())},
        }
    return {"format": FORMAT, "env": env, "date": when, "noise_z": NOISE_Z, "experiments": experiments}


def _floor_json(f: Floor) -> dict[str, Any]:
    return {"cv": round(f.cv, 6), "floor": round(f.floor, 6), "runs": f.runs, "median": float(f"{f.median:.6g}")}


def write(results: Path, env: str, measured: Iterable[Measured], now: dt.datetime | None = None) -> Path:
    path = noise_path(results, env)
    data = to_json(env, measured, now)
    found = problems(SCHEMA_FILE, data)
    if found:  # our own writer: a bug, said plainly rather than stored
        raise ValueError(f"noise.json for {env} leaves its schema at {found[0][0]}: {found[0][1]}")
    if path.is_dir() and not path.is_symlink():
        raise AtlasError(f"{path} is a folder, not the noise file: remove it, then run `bench noise --env {env}` again")
    write_json_atomic(path, data)
    return path


def read(results: Path, env: str) -> tuple[dict[str, Any] | None, str]:
    """(the stored file, "") or (None, why it cannot be used: one line), (None, "") when absent."""
    path = noise_path(results, env)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        return None, f"{path} is damaged (not a regular file; a link is never followed)"
    if not path.is_file():
        return None, ""
    try:
        if path.stat().st_size > MAX_NOISE_BYTES:
            return None, f"{path} is damaged (over {MAX_NOISE_BYTES} bytes)"
        raw = path.read_bytes()
    except OSError as exc:
        return None, f"{path} is damaged ({_shown(str(exc))[:160] or type(exc).__name__})"
    return parse(raw, str(path), env)


def parse(raw: bytes, path: str, env: str) -> tuple[dict[str, Any] | None, str]:
    """`read` of bytes from anywhere (`path` names them: the file, or the results branch's
    copy, bench.gitops.branch_noise): (the data, "") or (None, "<path> is damaged (...)")."""
    if len(raw) > MAX_NOISE_BYTES:
        return None, f"{path} is damaged (over {MAX_NOISE_BYTES} bytes)"
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_refuse)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return None, f"{path} is damaged ({_shown(str(exc).splitlines()[0])[:160] if str(exc) else type(exc).__name__})"
    found = problems(SCHEMA_FILE, data)
    if found:  # a key the file names may be anything: shown escaped, one line
        return None, f"{path} is damaged ({_shown(found[0][0] or 'top level')[:160]}: {_shown(found[0][1])})"
    if data["env"] != env:
        return None, f"{path} is damaged (it is the noise floor of {data['env']!r}, not {env!r})"
    if data["noise_z"] != NOISE_Z:
        return None, f"{path} is stale (its floors are {data['noise_z']:g} × the CV; bench now uses {NOISE_Z:g})"
    wrong = inconsistent(data)
    if wrong:
        return None, f"{path} is damaged ({wrong})"
    return data, ""


FLOOR_SLACK = 5e-6  # cv and floor are each rounded to 6 decimals when written


def inconsistent(data: Mapping[str, Any]) -> str:
    """What a schema cannot say about a file that fits it ("" when nothing): each block's
    runs are its commits' runs, a metric's runs are among them, and each floor is noise_z ×
    its CV (the reader uses the CV: a floor edited apart from it would be a number nobody
    measured)."""
    for name, block in data["experiments"].items():
        if block["runs"] != sum(block["commits"].values()):
            return f"experiments.{name}.runs is {block['runs']}, its commits hold {sum(block['commits'].values())}"
        for key, m in block["metrics"].items():
            where = f"experiments.{name}.metrics.{key}"
            if m["runs"] > block["runs"]:
                return f"{where}.runs is {m['runs']}, more than the {block['runs']} runs the block was made from"
            if abs(m["floor"] - data["noise_z"] * m["cv"]) > FLOOR_SLACK:
                return f"{where}.floor is {m['floor']:g}, not {data['noise_z']:g} × its cv {m['cv']:g}"
    return ""


def check(results: Path, env: str, entries: Iterable[Mapping[str, Any]]) -> str:
    """`bench check`'s line for `env`'s noise.json ("" when it is sound and current, or
    absent): damaged (read) or stale against `entries` (the run index's history entries
    of `env`: stale_reason per experiment the file holds), with the fix."""
    stored, problem = read(results, env)
    if stored is not None:
        entries = list(entries)
        for experiment, block in sorted(stored["experiments"].items()):
            stale = stale_reason(block, measure(entries, env, experiment, ()))
            if stale:
                problem = f"{noise_path(results, env)} is stale ({experiment}: {stale})"
                break
    return f"{problem}: run `bench noise --env {env}` to measure it again" if problem else ""


def _shown(text: str) -> str:
    """`text` with every character that is not printable escaped (a key from the file
    could carry a terminal's control sequence or a line break)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _refuse(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def stale_reason(stored: Mapping[str, Any], now: Measured) -> str:
    """Why the stored block no longer matches the history ("" when it does): the history
    has a commit's repeated runs the file did not count."""
    counted = stored.get("commits", {})
    new = [sha for sha, n in now.commits.items() if counted.get(sha, 0) < n]
    if not new:
        return ""
    return (
        f"made from {stored.get('runs')} runs of {len(counted)} commit(s); the history now has "
        f"{sum(now.commits.values())} runs of {len(now.commits)}"
    )


def block_as_measured(env: str, experiment: str, block: Mapping[str, Any]) -> Measured:
    """A stored experiment's block read back (a file rewritten keeps what it did not re-measure)."""
    floors = {k: Floor(k, float(v["cv"]), int(v["runs"]), float(v["median"])) for k, v in block["metrics"].items()}
    return Measured(env, experiment, {str(k): int(n) for k, n in block["commits"].items()}, floors)


@dataclass(frozen=True)
class Floors:
    """One environment's floors for one experiment, as a verdict uses them."""

    floors: dict[str, Floor]  # metric -> floor
    source: str  # "results/<env>/noise.json (date)" or "the history (N runs of M commits)"
    problem: str = ""  # one line: the file was damaged or stale and the floor was recomputed


def floors_of(
    results: Path | None,
    env: str,
    experiment: str,
    entries: Iterable[Mapping[str, Any]],
    metrics: Iterable[str],
    judged: Iterable[str] = (),
) -> Floors:
    """The floors a verdict on `env` uses: the stored file where it is sound and current,
    else measured from `entries` (history entries of the runs at hand), saying why.
    `judged`: the commits being compared (a PR's head and merge-base); their own repeated
    runs do not make the file stale, or every PR, which runs both several times, would
    find it so."""
    from bench.records.select import same_commit

    metrics, entries, judged = list(metrics), list(entries), list(judged)
    now = measure(entries, env, experiment, metrics)
    stored, problem = read(results, env) if results is not None else (None, "")
    block = (stored or {}).get("experiments", {}).get(experiment)
    if stored is not None and block is not None:
        others = [e for e in entries if not any(same_commit(str(e.get("commit") or ""), sha) for sha in judged)]
        stale = stale_reason(block, measure(others, env, experiment, metrics))
        if not stale:
            got = block_as_measured(env, experiment, block).floors
            got = {k: f for k, f in got.items() if k in metrics and math.isfinite(f.cv)}
            return Floors(got, f"{noise_path(results, env)} ({stored['date']})")  # type: ignore[arg-type]
        problem = f"{noise_path(results, env)} is stale ({stale})"  # type: ignore[arg-type]
    if problem:
        problem += f": recomputed from the history; `bench noise --env {env}` stores it again"
    runs = sum(now.commits.values())
    return Floors(now.floors, f"the history ({runs} runs of {len(now.commits)} commits)", problem)


@dataclass(frozen=True)
class EnvNoise:
    """One environment's noise for a report: its floors, where they came from, what the
    runs at hand can find (noise.detectable) and a damaged or stale file, if any."""

    env: str
    floors: dict[str, Floor]
    source: str
    problem: str
    runs: int  # the runs of this environment the report compares
    detectable: dict[str, float]  # metric -> minimum detectable effect of `runs` against as many
    power: float  # the power that effect is found with (sample_size.POWER)


def env_noise(
    results: Path, entries: list[Mapping[str, Any]], runs: Mapping[str, int], experiment: str, metrics: list[str]
) -> list[EnvNoise]:
    """Per environment of `runs` (env -> runs compared), its floors (floors_of) and the
    minimum detectable effect of that many runs a side, at BH's level over `metrics`."""
    from bench.analysis.noise import detectable
    from bench.analysis.sample_size import POWER

    out = []
    for env, n in runs.items():
        found = floors_of(results, env, experiment, [e for e in entries if e.get("env") == env], metrics)
        mde = {k: d for k, f in found.floors.items() if (d := detectable(f.cv, n, len(metrics))) is not None}
        out.append(EnvNoise(env, found.floors, found.source, found.problem, n, mde, POWER))
    return out
