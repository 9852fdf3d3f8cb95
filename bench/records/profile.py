"""Reading `profile.json`: the workload's profile window (contract: workflows/biggan/README.md).

Why a reader of its own: the profile says where a run's time went (per module of G and D,
per operator), and a later comparison joins it with the phases of the timeline. A file
that is damaged must not stop anything that reads the record: it is named in one line
(`bench check`, the report's data problems) and read as absent. A run without the file
(profiling off, an older workload, an imported record) has no problem at all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.records.contract import PROFILE_JSON
from bench.records.jobfiles import read_bytes
from bench.records.strict_numbers import loads
from bench.records.surfaces import problems as schema_problems

MAX_PROFILE_BYTES = 4 << 20  # a profile is a few KB; anything near this is not one


def read_profile(run_dir: Path) -> tuple[dict[str, Any] | None, list[str]]:
    """(the profile, or None when absent or unusable; one line per problem)."""
    path = Path(run_dir) / PROFILE_JSON
    try:
        data = read_bytes(path, MAX_PROFILE_BYTES)
    except FileNotFoundError:
        return None, []
    except OSError as exc:
        return None, [f"{PROFILE_JSON} unreadable ({exc}); the layer profile is unknown"]
    try:
        doc = loads(data)
    except ValueError as exc:
        return None, [f"{PROFILE_JSON} is not JSON ({str(exc)[:120]}); the layer profile is unknown"]
    if not isinstance(doc, dict):
        return None, [f"{PROFILE_JSON} is not a JSON object (a {type(doc).__name__}); the layer profile is unknown"]
    found = schema_problems("profile", doc, PROFILE_JSON)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        return None, [f"{found[0][1]}{more}; the layer profile is unknown"]
    return doc, []
