"""The index of reports (`reports/README.md`) and what the reports already cover.

Every report folder carries `summary.json` (what the index needs) and `runs.csv` (the
runs it covers); the index and `bench collect --unreported` read only those.
"""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path

import jinja2

from bench.analysis.metrics import fmt
from bench.atomic_files import write_text_atomic
from bench.render.escape import code, md

SUMMARY_JSON = "summary.json"
REPORT_FILES = ("README.md", SUMMARY_JSON, "runs.csv")
REPORT_NAME = re.compile(r"^(\d{4}-\d{2}-\d{2}|undated)-[A-Za-z0-9]+$")  # <date>-<short sha> (analysis/report_data.py)


def write_index(out: Path) -> Path:
    """Regenerate `<out>/README.md` from every report folder's summary.json."""
    from bench.render.templates import INDEX

    out = Path(out)
    entries = []
    for folder in sorted(report_folders(out), reverse=True):
        try:
            s = json.loads((folder / SUMMARY_JSON).read_text())
            if not isinstance(s, dict):
                raise ValueError("not an object")
        except (OSError, ValueError) as exc:  # listed, never dropped silently
            reason = "missing" if isinstance(exc, FileNotFoundError) else "unreadable"
            entries.append(
                {
                    "folder": folder.name,
                    "commit": code("unknown"),
                    "envs": [],
                    "runs": "?",
                    "problems": md(f"{SUMMARY_JSON} {reason}: run bench report for this commit again"),
                    "images_per_s": [],
                    "has_history": False,
                    "machines": {},
                }
            )
            continue
        entries.append(
            {
                "folder": folder.name,
                "commit": code(str(s.get("commit") or "unknown")[:12]),
                "envs": [md(e) for e in s.get("envs") or []],
                "runs": md(s.get("runs", 0)),
                "problems": md(s.get("problems", 0)),
                "images_per_s": [
                    (md(e), fmt(v) if isinstance(v, (int, float)) else "—")
                    for e, v in sorted((s.get("images_per_s") or {}).items())
                ],
                "has_history": (folder / "history.png").is_file(),
                "machines": s.get("machines") if isinstance(s.get("machines"), dict) else {},
            }
        )
    _describe_machines(entries)
    latest = next((f"{e['folder']}/history.png" for e in entries if e["has_history"]), None)
    text = (
        jinja2.Environment(keep_trailing_newline=True).from_string(INDEX).render(reports=entries, latest_history=latest)
    )
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    path = out / "README.md"
    write_text_atomic(path, text.rstrip() + "\n")
    os.chmod(path, 0o644)  # like every report file: for everyone to read (mkstemp makes 0600)
    return path


def _identity(m: object) -> tuple[str, ...] | None:
    """What makes a machine the same machine: CPU model, logical cores, GPUs (not its load)."""
    if not isinstance(m, dict):
        return None
    return tuple(str(m.get(k)) for k in ("cpu", "cores", "gpus"))


def _describe_machines(entries: list[dict]) -> None:
    """Each entry's `machine` cell: per environment its CPU, cores, GPUs and host load during
    the runs, marked where it differs from the next older report's machine for that
    environment (newest first: a change of machine is no regression, nor a speed-up)."""
    for i, entry in enumerate(entries):
        older = next((e["machines"] for e in entries[i + 1 :] if e["machines"]), {})
        cells = []
        for env, m in sorted(entry["machines"].items()):
            if not isinstance(m, dict):
                continue
            cpu = ", ".join(map(str, m.get("cpu") or [])) or "CPU unknown"
            cores = "/".join(map(str, m.get("cores") or [])) or "?"
            gpus = "; ".join(map(str, m.get("gpus") or [])) or "no GPU"
            load = m.get("host_cpu_pct")
            text = f"{env}: {cpu}, {cores} cores, {gpus}" + (f", host CPU {fmt(load)} %" if load is not None else "")
            changed = env in older and _identity(older[env]) != _identity(m)
            cells.append(md(text, 300) + (" (**another machine** than the report below)" if changed else ""))
        entry["machine"] = "<br>".join(cells) or "—"


def report_folders(out: Path) -> list[Path]:
    """Every report folder: one with a summary.json, or named like a report and holding
    any of a report's files (a hidden one is a report still being written, or left by a
    killed one, and is not a report)."""

    def looks_like_report(p: Path) -> bool:
        return bool(REPORT_NAME.match(p.name)) and any((p / f).exists() for f in REPORT_FILES)

    return [
        p
        for p in Path(out).iterdir()
        if p.is_dir() and not p.name.startswith(".") and ((p / SUMMARY_JSON).is_file() or looks_like_report(p))
    ]


def reported_runs(reports: Path) -> set[tuple[str, str]]:
    """(env, run_id) of every run some report already covers: compared (`runs.csv`) or
    listed as excluded with its reason (`excluded.csv`)."""
    seen: set[tuple[str, str]] = set()
    for table in [*Path(reports).glob("*/runs.csv"), *Path(reports).glob("*/excluded.csv")]:
        try:
            with table.open(newline="") as f:
                for row in csv.DictReader(f):
                    if row.get("env") and row.get("run_id"):
                        seen.add((row["env"], row["run_id"]))
        except (OSError, csv.Error):
            continue
    return seen
