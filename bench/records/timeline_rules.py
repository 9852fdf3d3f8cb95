"""The physical rules of run.json's `timeline` that its JSON Schema cannot say, applied on read.

The schema (run.schema.json) gives each mark and phase its types and ranges (a clock
resolution of at most `MAX_RESOLUTION_S`); these rules relate the values to each other:

- a phase's `seconds` is its `end` - `start`, within its resolution; a phase cut from
  two marks starts and ends at those marks;
- a known phase has finite `start`, `end` and `resolution_s` (a value the schema refused
  and `load_run` removed leaves it unknown, not read as 0 or raised on);
- no mark lies after `collected` (the result cannot exist before the run), and the push,
  the submission and the collection lie within `MAX_SPAN_S` of each other.

A value that breaks a rule is named (one line for `bench check`) and made unknown in
place: the phase becomes null with that reason, the mark becomes absent with it, so every
reader (compare, report, the timeline section) shows "—", never a wrong or negative span.
"""

from __future__ import annotations

import re
from typing import Any

from bench.records.contract import RUN_JSON
from bench.records.strict_numbers import finite
from bench.records.timeline import ALL_PHASES, MARKS, SPANS

MAX_RESOLUTION_S = 60.0  # the coarsest clock a mark is read from (Slurm: 1 s); beyond it nothing is timed
MAX_SPAN_S = 90 * 86400.0  # push, submit and collect of one run lie within 90 days of each other
LAST_MARKS = ("collected", "exit")  # the end a plausible window is measured to (the first known)
FIRST_MARKS = ("pushed", "submitted")
# A kind adds marks of its own (sbatch_returned, build_created, container_started, Kueue's,
# a resumed attempt's submitted_again ...): a mark's name is an open set, held to a plain form.
MARK_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")


def _null_phase(entry: dict[str, Any], reason: str) -> None:
    entry.update(start=None, end=None, seconds=None, reason=reason)
    for key in ("resolution_s", "clocks_meet", "source"):
        entry.pop(key, None)


def _refuse_mark(marks: dict[str, Any], name: str, reason: str) -> None:
    marks[name] = {"time": None, "reason": reason}


def _mark_problems(marks: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for name in list(marks):
        entry = marks[name]
        if not isinstance(name, str) or not MARK_NAME.fullmatch(name) or not isinstance(entry, dict):
            del marks[name]
            out.append(f"{RUN_JSON}: timeline mark {str(name)[:40]!r} is not a mark's name and time; dropped")
            continue
        if entry.get("time") is None:
            continue
        t, res = finite(entry.get("time")), finite(entry.get("resolution_s"))
        if t is None or t <= 0 or res is None or not 0 <= res <= MAX_RESOLUTION_S:
            why = "its time" if t is None or t <= 0 else f"its resolution (at most {MAX_RESOLUTION_S:g} s)"
            _refuse_mark(marks, name, f"refused: {why} is not valid")
            out.append(f"{RUN_JSON}: timeline mark {name}: {why} is not valid; the mark is unknown")
    known = {n: float(m["time"]) for n, m in marks.items() if m.get("time") is not None}
    last = next((n for n in LAST_MARKS if n in known), None)
    if last is None:
        return out
    for name, t in known.items():
        res = max(float(marks[name]["resolution_s"]), float(marks[last]["resolution_s"]))
        before_last = name in MARKS and MARKS.index(name) < MARKS.index(last)  # a kind's own: before collected
        if name != last and (before_last or (name not in MARKS and last == "collected")) and t > known[last] + res:
            span = known[last] - t
            why = f"is {-span:.6g} s after {last} (a negative span: the clocks or the mark are wrong)"
            _refuse_mark(marks, name, f"refused: {why}")
            out.append(f"{RUN_JSON}: timeline mark {name} {why}; it is unknown")
    for name in FIRST_MARKS:
        if name in known and marks[name].get("time") is not None and known[last] - known[name] > MAX_SPAN_S:
            days = (known[last] - known[name]) / 86400.0
            why = f"is {days:.6g} days before {last}, beyond the plausible {MAX_SPAN_S / 86400:g} days"
            _refuse_mark(marks, name, f"refused: {why}")
            out.append(f"{RUN_JSON}: timeline mark {name} {why}; it is unknown")
    return out


def _phase_problem(entry: dict[str, Any], marks: dict[str, Any]) -> str | None:
    """Why a known phase cannot be believed, or None."""
    start, end, seconds = (finite(entry.get(k)) for k in ("start", "end", "seconds"))
    res = finite(entry.get("resolution_s"))
    if start is None or end is None or seconds is None:
        return "its start, end or seconds is not a finite number"
    if res is None or not 0 <= res <= MAX_RESOLUTION_S:
        return f"its clock resolution is not a number from 0 to {MAX_RESOLUTION_S:g} s"
    slack = res + 1e-6
    if abs(seconds - (end - start)) > slack:
        return f"its seconds {seconds:.6g} are not end - start = {end - start:.6g} (within {res:g} s)"
    if seconds < -slack:
        return (
            f"it ends {-seconds:.3f} s before it starts (clocks {entry.get('source')}: they disagree beyond "
            f"their resolution {res} s)"
        )
    # stage and launch are cut from a kind's marks; an attempt's phases from that attempt's own marks
    own_cut = entry["phase"] not in ("stage", "launch") and "attempt" not in entry
    cut = SPANS.get(str(entry["phase"])) if own_cut else None
    if cut is not None:
        for key, mark_name, t in (("start", cut[0], start), ("end", cut[1], end)):
            m = marks.get(mark_name)
            if not isinstance(m, dict):
                continue  # a record that kept phases without marks: nothing to hold them to
            mt = finite(m.get("time"))
            if mt is None and str(m.get("reason", "")).startswith("refused"):
                return f"its {mark_name} mark was refused ({m['reason']})"
            if mt is not None and abs(mt - t) > slack:
                return f"its {key} {t:.6g} is not its {mark_name} mark's time {mt:.6g}"
    return None


def refuse_bad_timeline(meta: dict[str, Any]) -> list[str]:
    """Apply the rules to meta['timeline'] in place; one line per value made unknown."""
    timeline = meta.get("timeline")
    if not isinstance(timeline, dict):
        return []
    marks = timeline.get("marks")
    if not isinstance(marks, dict):
        marks = timeline["marks"] = {}
    out = _mark_problems(marks)
    phases = timeline.get("phases")
    if not isinstance(phases, list):
        timeline["phases"] = []
        return out
    kept = []
    for entry in phases:
        if not isinstance(entry, dict) or entry.get("phase") not in ALL_PHASES:
            name = entry.get("phase") if isinstance(entry, dict) else entry
            out.append(f"{RUN_JSON}: timeline phase {str(name)[:40]!r} is not a phase bench knows; dropped")
            continue
        kept.append(entry)
        if entry.get("seconds") is None and entry.get("start") is None and entry.get("end") is None:
            continue
        why = _phase_problem(entry, marks)
        if why:
            _null_phase(entry, f"refused: {why}")
            if why.startswith("it ends"):  # the wording timeline_problems used: the clocks are named
                out.append(f"timeline: phase {entry['phase']} {why[3:]}; it is unknown")
            else:
                out.append(f"{RUN_JSON}: timeline phase {entry['phase']}: {why}; it is unknown")
    timeline["phases"] = kept
    return out
