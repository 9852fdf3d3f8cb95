"""The index of reports (`reports/README.md`) and what the reports already cover.

Every report folder carries `summary.json` (what the index needs) and `runs.csv` (the
runs it covers); the index and `bench collect --unreported` read only those.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import jinja2

from bench.analysis.metrics import fmt
from bench.render.escape import code, md

SUMMARY_JSON = "summary.json"


def write_index(out: Path) -> Path:
    """Regenerate `<out>/README.md` from every report folder's summary.json."""
    from bench.render.templates import INDEX

    out = Path(out)
    entries = []
    for folder in sorted((p for p in out.iterdir() if (p / SUMMARY_JSON).is_file()), reverse=True):
        try:
            s = json.loads((folder / SUMMARY_JSON).read_text())
        except (OSError, ValueError):
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
            }
        )
    latest = next((f"{e['folder']}/history.png" for e in entries if e["has_history"]), None)
    text = (
        jinja2.Environment(keep_trailing_newline=True).from_string(INDEX).render(reports=entries, latest_history=latest)
    )
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    path = out / "README.md"
    path.write_text(text.rstrip() + "\n")
    return path


def reported_runs(reports: Path) -> set[tuple[str, str]]:
    """(env, run_id) of every run some report already covers (its `runs.csv`)."""
    seen: set[tuple[str, str]] = set()
    for table in Path(reports).glob("*/runs.csv"):
        try:
            with table.open(newline="") as f:
                for row in csv.DictReader(f):
                    if row.get("env") and row.get("run_id"):
                        seen.add((row["env"], row["run_id"]))
        except (OSError, csv.Error):
            continue
    return seen
