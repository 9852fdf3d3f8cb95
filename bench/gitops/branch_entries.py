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

from typing import Any

from bench.records import strict_numbers
from bench.records.surfaces import refuse

MAX_ENTRY_BYTES = 4 << 20  # one run's entry is a few kB; more is not an entry
SURFACE = "history_entry"


def checked_entry(raw: bytes | None, where: str) -> tuple[dict[str, Any] | None, list[str]]:
    """(the entry with every refused value removed, or None when it is unusable; the problems named)."""
    try:
        entry = strict_numbers.loads(raw or b"", max_bytes=MAX_ENTRY_BYTES)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        return None, [f"{where}: unreadable ({str(exc)[:120]}); skipped"]
    if not isinstance(entry, dict):
        return None, [f"{where}: top level is {type(entry).__name__}, not an object; skipped"]
    problems = refuse(SURFACE, entry, where)
    if any(f"{where}: files" in p for p in problems) and "files" in entry:
        del entry["files"]  # a run whose file list is damaged is not restored, not restored in part
        problems.append(f"{where}: its files list breaks the schema: the run is not restored from the branch")
    if not isinstance(entry.get("env"), str) or not isinstance(entry.get("run_id"), str):
        return None, [*problems, f"{where}: no valid env and run_id; skipped"]
    return entry, problems
