"""Injected changes for `bench explain`, as synthetic records (issue 37, item 5).

Each case writes two groups of runs with the project's own record writer
(tests/synthetic_records.py), seeded noise on every phase and on the profile, and one
change injected into the head group: a slower phase, a slower G block, a config or
provenance change, a busy host. Its expected phase and expected top cause (the kind of
bench.analysis.explain_causes.Cause) are what `bench explain` must name. Controls inject
nothing and expect no phase.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from bench.analysis.explain_causes import CodeChange
from tests.synthetic_records import CONFIG, RunSpec, synthetic_profile, write_run

BASE, HEAD = "b" * 40, "c" * 40
RUNS = 5  # a side: an exact Mann-Whitney p can reach 0.008, under the explanation's gate (0.01)
STEPS = 10  # logged intervals of training in every run
DELIVER_FILE = ("ansible/roles/deliver/tasks/main.yml", 3, 0)
LAYER_FILE = ("workflows/biggan/layers.py", 4, 1)


@dataclass(frozen=True)
class Case:
    """One injected change: what the head runs do differently, and what must be named."""

    name: str
    phase: str | None  # the phase `bench explain` must name (None: none moved)
    cause: str | None  # the top cause's kind (None: none)
    spec: dict = field(default_factory=dict)  # RunSpec fields of the head runs
    slow: float = 1.0  # training slower by this factor (log interval longer)
    blocks: dict = field(default_factory=dict)  # profile ms per module of the head runs
    meta: Callable[[dict], None] | None = None  # an edit of the head runs' run.json
    files: tuple = ()  # files changed between the commits


def _config(**changes) -> Callable[[dict], None]:
    def edit(meta: dict) -> None:
        meta["config"] = {**CONFIG, **changes}

    return edit


def _driver(meta: dict) -> None:
    for gpu in meta["hardware"]["gpus"]:
        gpu["driver"] = "550.54"


def _image(meta: dict) -> None:
    meta["image"] = {"ref": "atlas:latest", "digest": "sha256:" + "e" * 64}


def _allowance(meta: dict) -> None:
    meta["hardware"]["cgroup"]["cpu_limit_cores"] = 2.0


CASES = (
    Case("sleep in delivery (Ansible task)", "deliver", "code", {"deliver_s": 4.0}, files=(DELIVER_FILE,)),
    Case("sleep before the first iteration", "warmup", "code", {"setup_s": 6.0}, files=(LAYER_FILE,)),
    Case("slower G block", "train", "code", slow=1.2, blocks={"G.blocks.3": 20.0}, files=(LAYER_FILE,)),
    Case("fewer CPU threads", "train", "config", slow=1.4, meta=_config(threads=2), files=(LAYER_FILE,)),
    Case("bigger batch", "train", "config", slow=1.5, meta=_config(batch_size=16)),
    Case("config change (channels)", "train", "config", slow=1.3, meta=_config(ch=32)),
    Case("driver change", "train", "platform", slow=1.1, meta=_driver, files=(LAYER_FILE,)),
    Case("image digest change", "train", "platform", slow=1.1, meta=_image),
    Case("busy host", "train", "host load", {"host_cpu_pct": 97.0}, slow=1.15, files=(LAYER_FILE,)),
    Case("smaller CPU allowance", "train", "CPU allowance", slow=1.3, meta=_allowance),
    Case("slower collection", "collect", "code", {"collect_s": 9.0}, files=(DELIVER_FILE,)),
)


def write_group(
    results: Path, case: Case, side: str, seed: int, sha: str | None = None, runs: int = RUNS, slot: int = 0
) -> list[Path]:
    """`runs` runs of one side of `case` (the head side carries the injected change), of
    commit `sha` (default BASE or HEAD), started from `slot` (runs 10 minutes apart)."""
    rng = np.random.default_rng(seed)
    head = side == "head"
    out = []
    for k in range(runs):
        every = 5.0 * (1 + rng.normal(0, 0.01)) * (case.slow if head else 1.0)
        spec = RunSpec(
            env="moc",
            run_id=f"{side}{slot + k}",
            sha=sha or (HEAD if head else BASE),
            start=1_790_000_000 + (slot + k + (RUNS if head else 0)) * 600,
            gpus=1,
            timeline=True,
            log_every_s=every,
            seed=seed * 100 + k,
            deliver_s=1.0 + abs(rng.normal(0, 0.05)),
            setup_s=2.0 + abs(rng.normal(0, 0.05)),
            collect_s=5.0 + abs(rng.normal(0, 0.1)),
            profile=synthetic_profile(
                case.blocks if head else {}, seed=seed * 100 + k, slower=10.0 if head and case.blocks else 0.0
            ),
        )
        if head:
            spec = replace(spec, **case.spec)
        spec = replace(spec, duration_s=spec.setup_s + 2.5 + STEPS * spec.log_every_s)
        run_dir = write_run(results, spec)
        if head and case.meta is not None:
            meta = json.loads((run_dir / "run.json").read_text())
            case.meta(meta)
            (run_dir / "run.json").write_text(json.dumps(meta))
        out.append(run_dir)
    return out


def code_of(case: Case) -> CodeChange:
    """The files changed between the case's commits (what `git diff` would list)."""
    return CodeChange(BASE, HEAD, list(case.files))
