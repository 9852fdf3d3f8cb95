"""Each run's timeline as a trace (`timeline.trace.json`) that opens in Perfetto
(https://ui.perfetto.dev) and chrome://tracing.

Trace Event Format (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU):
an object with `traceEvents`; one process per environment and one thread per run, named
by metadata events (`ph: "M"`, process_name / thread_name); one complete event (`ph: "X"`,
`ts` and `dur` in microseconds) per known phase, its clock(s) and resolution in `args`.
Times count from the earliest phase start of the report (`otherData.origin_unix_s`), so
a day of runs stays a readable scale. A phase that is unknown has no slice: its reason is
in the record and the report's table.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.records.read import RunData

TRACE_FILE = "timeline.trace.json"


def _slices(run: RunData) -> list[dict[str, Any]]:
    timeline = run.meta.get("timeline")
    phases = timeline.get("phases") if isinstance(timeline, dict) else None
    return [
        p
        for p in phases or ()
        if isinstance(p, dict)
        and isinstance(p.get("start"), (int, float))
        and isinstance(p.get("seconds"), (int, float))
        and p["seconds"] >= 0
    ]


def trace(runs: list[RunData]) -> dict[str, Any] | None:
    """The trace of these runs' timelines, or None when none has a known phase."""
    known = {(r.env, r.run_id): s for r in runs if (s := _slices(r))}
    if not known:
        return None
    origin = min(p["start"] for s in known.values() for p in s)
    envs = sorted({env for env, _ in known})
    events: list[dict[str, Any]] = []
    for pid, env in enumerate(envs, start=1):
        events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": env}})
        for tid, (_, run_id) in enumerate(sorted(k for k in known if k[0] == env), start=1):
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": run_id}})
            for p in known[(env, run_id)]:
                events.append(
                    {
                        "name": p["phase"],
                        "cat": "phase",
                        "ph": "X",
                        "ts": round((p["start"] - origin) * 1e6, 3),
                        "dur": round(p["seconds"] * 1e6, 3),
                        "pid": pid,
                        "tid": tid,
                        "args": {
                            "seconds": p["seconds"],
                            "source": p.get("source"),
                            "resolution_s": p.get("resolution_s"),
                            **({"attempts": p["attempts"]} if "attempts" in p else {}),
                        },
                    }
                )
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": {"origin_unix_s": origin}}


def write_trace(runs: list[RunData], folder: Path) -> bool:
    """Write `timeline.trace.json` into the report folder; False when no run has a known phase."""
    data = trace(runs)
    if data is None:
        return False
    (folder / TRACE_FILE).write_text(json.dumps(data, sort_keys=True) + "\n")
    return True
