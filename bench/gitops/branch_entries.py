"""A results-branch index entry, read as untrusted data: its schema, applied before any use.

The `results` branch is pushed to by CI and by anyone with write access, so an entry may
hold anything: `metrics` as a list, `commit` as a list, `env` as an object, provenance
with terminal escapes, nesting 10^5 deep. Each entry is parsed with a size and depth
limit (bench.records.strict_numbers) and held to `history_entry.schema.json`
(bench.records.surfaces): a refused value is removed and named (a metric missing is an
unknown figure, never a wrong one); an entry without a valid env and run_id is skipped;
an entry whose `files` break the schema keeps its figures but is never restored.
"""

from __future__ import annotations

import re
from typing import Any

from bench.records import strict_numbers
from bench.records.surfaces import refuse

MAX_ENTRY_BYTES = 4 << 20  # one run's entry is a few kB; more is not an entry
SURFACE = "history_entry"


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
_METRIC = re.compile(r"[a-z0-9_]{1,80}")
_PROV_KEY = re.compile(r"[a-z_]{1,40}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SHA = re.compile(r"[0-9a-f]{7,64}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_KNOWN = {"version", "env", "run_id", "commit", "dirty", "start", "status", "experiment", "metrics", "provenance",
          "files"}  # fmt: skip


def _number(v: Any, low: float, high: float) -> bool:
    return strict_numbers.finite(v, low, high) is not None


def _plainly_sound(e: dict[str, Any]) -> bool:
    """The shape `bench archive` writes, checked by hand in a few microseconds (jsonschema takes
    milliseconds an entry, seconds for a branch of 1,000 runs). True only where the schema would
    accept the entry (the fuzz suite holds the two together); anything else goes to the schema."""
    if not set(e) <= _KNOWN or not all(isinstance(e.get(k), str) and _NAME.fullmatch(e[k]) for k in ("env", "run_id")):
        return False
    if not (e.get("commit") is None or (isinstance(e["commit"], str) and _SHA.fullmatch(e["commit"]))):
        return False
    if "dirty" in e and not isinstance(e["dirty"], bool):
        return False
    if "version" in e and not (isinstance(e["version"], int) and _number(e["version"], 0, 1000)):
        return False
    if "start" in e and not (e["start"] is None or _number(e["start"], 0, strict_numbers.LATEST_TIME)):
        return False
    for key, most in (("status", 40), ("experiment", 200)):
        if key in e and not (e[key] is None or (isinstance(e[key], str) and len(e[key]) <= most)):
            return False
    metrics, prov, files = e.get("metrics", {}), e.get("provenance", {}), e.get("files", {})
    if not (isinstance(metrics, dict) and isinstance(prov, dict) and isinstance(files, dict)):
        return False
    if not all(_METRIC.fullmatch(k) and _number(v, -1e15, 1e15) for k, v in metrics.items()):
        return False
    sound_prov = (v is None or (isinstance(v, str) and len(v) <= 400 and not _CONTROL.search(v)) for v in prov.values())
    if not all(_PROV_KEY.fullmatch(k) for k in prov) or not all(sound_prov):
        return False
    for name, f in files.items():
        if not (_NAME.fullmatch(name) and isinstance(f, dict) and set(f) <= {"stored", "sha256", "bytes"}):
            return False
        if not (isinstance(f.get("stored"), str) and _NAME.fullmatch(f["stored"])):
            return False
        if not (isinstance(f.get("sha256"), str) and _SHA256.fullmatch(f["sha256"])):
            return False
        if "bytes" in f and not (isinstance(f["bytes"], int) and _number(f["bytes"], 0, 1e12)):
            return False
    return True


def checked_entry(raw: bytes | None, where: str) -> tuple[dict[str, Any] | None, list[str]]:
    """(the entry with every refused value removed, or None when it is unusable; the problems named)."""
    try:
        entry = strict_numbers.loads(raw or b"", max_bytes=MAX_ENTRY_BYTES)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        return None, [f"{where}: unreadable ({str(exc)[:120]}); skipped"]
    if not isinstance(entry, dict):
        return None, [f"{where}: top level is {type(entry).__name__}, not an object; skipped"]
    problems = [] if _plainly_sound(entry) else refuse(SURFACE, entry, where)
    if any(f"{where}: files" in p for p in problems) and "files" in entry:
        del entry["files"]  # a run whose file list is damaged is not restored, not restored in part
        problems.append(f"{where}: its files list breaks the schema: the run is not restored from the branch")
    if not isinstance(entry.get("env"), str) or not isinstance(entry.get("run_id"), str):
        return None, [*problems, f"{where}: no valid env and run_id; skipped"]
    return entry, problems
