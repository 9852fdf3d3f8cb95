"""`make chaos`'s closing line from ATLAS_CHAOS_LOG: trials run, kills landed, resumes seen.

Usage: python -m tests.chaos.summary LOG.jsonl
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path


def summary(path: Path) -> str:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    kinds = Counter(r["kind"] for r in rows)
    landed = sum(bool(r.get("landed")) for r in rows)
    redrawn = sum(r.get("draws", 1) - 1 for r in rows)
    resumes = [r for r in rows if "resumed_from" in r]
    from_ckpt = sum(r["resumed_from"] is not None for r in resumes)
    lost = sum(r.get("lost_iterations", 0) for r in resumes)
    lost_s = sum(r.get("lost_s", 0.0) for r in resumes)
    by_kind = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    return (
        f"chaos: {len(rows)} trials passed ({by_kind}); kills landed {landed}/{len(rows)} ({redrawn} redrawn); "
        f"resumes seen {len(resumes)} ({from_ckpt} from a checkpoint, {len(resumes) - from_ckpt} from the start; "
        f"work lost and redone: {lost} logged iterations, {lost_s:.1f} s of training in all)"
    )


if __name__ == "__main__":
    print(summary(Path(sys.argv[1])))
