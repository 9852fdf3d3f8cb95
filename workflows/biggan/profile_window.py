"""The profile window: a few G iterations after warm-up under `torch.profiler` -> `DIR/profile.json`.

Why: a change in images/s says how much, not where. A short window in every run records
the time per top-level module of G and D (forward and backward) and the operators that
took the most self time, so two runs can be compared layer by layer without profiling by
hand. The window is short (`train.profile_iters`: null = auto, 0 = off, N = N iterations)
and its iterations are marked in train.jsonl (`"profiled": true` on the `train` line whose
interval holds them) so that steady images/s never counts a profiled iteration.

Auto (the default) profiles AUTO_ITERS iterations only where they are at most 1 % of the
run's iterations (MAX_SHARE) and the run keeps its steady images/s: of the `train` lines
steady images/s reads (bench.records.trainlog drops the first line and the first fifth of
a segment's lines as warm-up), the window may mark at most a fifth, and at least
MIN_STEADY_LINES must stay unmarked (`window_fit`). A run bounded by time
(`train.max_seconds`) is not profiled by auto: its count of lines is not known ahead. A long
run's window falls inside its first, warm-up line and costs no timed line at all; a short
run (the smoke experiment, a PR's runs) skips it, and `profile.json` says why (`skipped`).

Module times come from `record_function` ranges opened and closed by module hooks: a
forward pre-hook/hook pair and a full backward pre-hook/hook pair on each top-level child
(`G.blocks.3`, `D.out`; a ModuleList or Sequential is opened one level down) and on G and
D as wholes. The hooks exist only during the window. A compiled model is not hooked (a
hook added to a compiled module recompiles it, and the window would time the compiler):
its entry then says so and only the operators are recorded.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

PROFILE_JSON = "profile.json"
FORMAT = "atlas-profile/1"
TOP_OPERATORS = 15
AUTO_ITERS = 5  # the window's length where train.profile_iters is null (auto)
MIN_STEADY_LINES = 3  # unmarked train lines steady images/s keeps at least
KEEP_STEADY = 0.8  # and this share of the lines it would read without the window
MAX_SHARE = 0.01  # of the segment's iterations the window may take (its cost: at most 1 % of the run)
WARMUP_FRACTION = 0.2  # bench.records.trainlog.steady_images_per_s: the first fifth of a segment's lines


def train_lines(start: int, max_iters: int, log_every: int) -> list[int]:
    """The iterations at which a segment starting after `start` writes its `train` lines."""
    return [i for i in range(start + 1, max_iters + 1) if i % log_every == 0 or i == max_iters]


def steady_lines(lines: list[int]) -> list[int]:
    """The lines steady images/s reads: the first and the first fifth dropped (as bench.records.trainlog)."""
    skip = max(1, int(len(lines) * WARMUP_FRACTION)) if len(lines) >= 3 else 0
    return lines[skip:]


def window_fit(
    start: int, max_iters: int, log_every: int, iters: int = AUTO_ITERS, max_seconds: float | None = None
) -> str | None:
    """None when a window of `iters` G iterations after this segment's first takes at most
    MAX_SHARE of its iterations and leaves steady images/s enough timed lines; else why not,
    in words for profile.json and the run log. A run bounded by time (`max_seconds`) has no
    known count of lines ahead: auto does not profile it."""
    if max_seconds is not None:
        return "bounded by train.max_seconds: how many train lines it will write is not known ahead"
    if iters > MAX_SHARE * (max_iters - start):
        return (
            f"too short: {iters} profiled iterations would be more than {MAX_SHARE:.0%} of its "
            f"{max_iters - start} iterations"
        )
    lines = train_lines(start, max_iters, log_every)
    first, last = start + 2, min(start + 1 + iters, max_iters)  # the first iteration is warm-up
    marked, previous = set(), start
    for line in lines:
        if line >= first and previous < last:
            marked.add(line)
        previous = line
    steady = steady_lines(lines)
    kept = [line for line in steady if line not in marked]
    if len(kept) >= MIN_STEADY_LINES and len(kept) >= KEEP_STEADY * len(steady):
        return None
    return (
        f"too short: the window ({iters} iterations) would leave {len(kept)} of the {len(steady)} timed train "
        f"lines steady images/s reads ({max_iters} iterations, a line every {log_every}); it needs "
        f"{MIN_STEADY_LINES} at least and {KEEP_STEADY:.0%} of them"
    )


def skipped_profile(why: str, device: torch.device, start: int) -> dict[str, Any]:
    """The profile.json of a window that did not run: no modules, no operators, and why."""
    return {
        "format": FORMAT,
        "iterations": {"first": start + 1, "last": start + 1, "count": 0},
        "device": str(device),
        "torch": torch.__version__,
        "modules": {},
        "top_operators": [],
        "skipped": why,
    }


def module_names(model: nn.Module, prefix: str) -> list[tuple[str, nn.Module]]:
    """(label, module) for the model and each top-level child; containers are opened one level."""
    out: list[tuple[str, nn.Module]] = [(prefix, model)]
    for name, child in model.named_children():
        if isinstance(child, (nn.ModuleList, nn.Sequential)):
            out.extend((f"{prefix}.{name}.{sub}", m) for sub, m in child.named_children())
        else:
            out.append((f"{prefix}.{name}", child))
    return out


class _Ranges:
    """Hooks that wrap a module's forward in a `record_function` range."""

    def __init__(self) -> None:
        self.handles: list[Any] = []

    def add(self, label: str, module: nn.Module) -> None:
        open_ranges: dict[str, Any] = {}

        def enter(kind: str) -> Any:
            def hook(*_: Any) -> None:
                rf = torch.autograd.profiler.record_function(f"{label} {kind}")
                rf.__enter__()
                open_ranges.setdefault(kind, []).append(rf)

            return hook

        def leave(kind: str) -> Any:
            def hook(*_: Any) -> None:
                stack = open_ranges.get(kind)
                if stack:
                    stack.pop().__exit__(None, None, None)

            return hook

        self.handles += [
            module.register_forward_pre_hook(enter("forward")),
            module.register_forward_hook(leave("forward")),
        ]

    def remove(self) -> None:
        for h in self.handles:
            h.remove()
        self.handles = []


class ProfileWindow:
    """Profiles `iters` G iterations, starting after the first iteration of this process."""

    def __init__(self, iters: int, run_dir: Path, device: torch.device, models: dict[str, tuple[nn.Module, bool]]):
        """`models`: name -> (module, compiled)."""
        self.iters, self.run_dir, self.device, self.models = iters, run_dir, device, models
        self.first: int | None = None
        self.done = iters <= 0
        self.prof: Any = None
        self._ranges = _Ranges()
        self.t0 = 0.0

    @property
    def running(self) -> bool:
        return self.prof is not None

    def start(self, iteration: int) -> None:
        """Hooks on and the profiler started, before G iteration `iteration + 1`."""
        from torch.profiler import ProfilerActivity, profile

        for name, (model, compiled) in self.models.items():
            if not compiled:
                for label, module in module_names(model, name):
                    self._ranges.add(label, module)
        activities = [ProfilerActivity.CPU]
        if self.device.type == "cuda":
            activities.append(ProfilerActivity.CUDA)
        self.first = iteration + 1
        self.t0 = time.perf_counter()
        self.prof = profile(activities=activities)
        self.prof.start()

    def due_to_stop(self, iteration: int, last: bool) -> bool:
        return self.running and (last or iteration - (self.first or 0) + 1 >= self.iters)

    def stop(self, iteration: int) -> dict[str, Any]:
        """Profiler stopped, hooks removed, `profile.json` written; returns what was written."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        window_s = time.perf_counter() - self.t0
        self.prof.stop()
        self._ranges.remove()
        t_summary = time.perf_counter()
        raw = self.prof.profiler.kineto_results.events()
        self.prof, self.done = None, True
        compiled = sorted(name for name, (_, c) in self.models.items() if c)
        labels = [f"{label} forward" for name, (m, c) in self.models.items() if not c
                  for label, _ in module_names(m, name)]  # fmt: skip
        doc = summarise(raw, labels, compiled, self.device, self.first or 0, iteration, window_s)
        doc["summary_s"] = round(time.perf_counter() - t_summary, 4)
        write_profile(self.run_dir / PROFILE_JSON, doc)
        return doc


def _tree(events: list[Any]) -> tuple[list[int], list[int]]:
    """(parent index or -1, self ns) of each host event: nesting per thread by start and end."""
    parent = [-1] * len(events)
    self_ns = [e.duration_ns() for e in events]
    order = sorted(range(len(events)), key=lambda i: (events[i].start_thread_id(), events[i].start_ns(),
                                                     -events[i].duration_ns()))  # fmt: skip
    stack: list[int] = []
    thread = None
    for i in order:
        e = events[i]
        if e.start_thread_id() != thread:
            thread, stack = e.start_thread_id(), []
        start = e.start_ns()
        while stack and events[stack[-1]].end_ns() <= start:
            stack.pop()
        if stack:
            parent[i] = stack[-1]
            self_ns[stack[-1]] -= e.duration_ns()
        stack.append(i)
    return parent, self_ns


def summarise(
    raw: list[Any],
    labels: list[str],
    compiled: list[str],
    device: torch.device,
    first: int,
    last: int,
    window_s: float,
) -> dict[str, Any]:
    """profile.json's content from the profiler's raw events (microseconds, summed over the window).

    Read from the raw events rather than `key_averages()`, which builds a Python object per
    event and took 13 s for 5 `smoke` iterations (the sweep here: a fraction of a second).
    Device time (CUDA) is a kernel's duration, charged to the innermost operator and to every
    module range around the host call that launched it (matched by correlation id).
    """
    from torch.autograd import DeviceType

    host = [e for e in raw if e.device_type() == DeviceType.CPU and not e.is_async()]
    kernels: dict[int, int] = {}
    for e in raw:
        if e.device_type() == DeviceType.CUDA:
            kernels[e.correlation_id()] = kernels.get(e.correlation_id(), 0) + e.duration_ns()
    parent, self_ns = _tree(host)
    order = {m: k for k, m in enumerate(labels)}
    labels = set(labels)  # type: ignore[assignment]
    names = [e.name() for e in host]
    is_op = [not (n in labels or n.startswith(("cuda", "cu", "ProfilerStep"))) for n in names]
    ops: dict[str, list[float]] = {}  # name -> [calls, self cpu ns, self device ns]
    modules: dict[str, list[float]] = {}  # "G.blocks.3 forward" -> [calls, cpu ns, device ns]
    backward = "autograd::engine::evaluate_function: "
    owner: dict[tuple[int, int], int] = {}  # (thread, sequence nr) -> the last forward op that had it
    for i in sorted(range(len(host)), key=lambda i: host[i].start_ns()):
        e, n = host[i], names[i]
        if n in labels:
            row = modules.setdefault(n, [0, 0, 0])
            row[0] += 1
            row[1] += e.duration_ns()
        elif is_op[i]:
            row = ops.setdefault(n, [0, 0, 0])
            row[0] += 1
            row[1] += self_ns[i]
            if e.sequence_nr() >= 0 and not e.fwd_thread_id():  # a forward op (backward ones name their forward thread)
                owner[(e.start_thread_id(), e.sequence_nr())] = i

    def ranges_around(j: int) -> list[str]:
        out = []
        while j >= 0:
            if names[j] in labels:
                out.append(names[j])
            j = parent[j]
        return out

    # a backward node's time goes to the modules whose forward created it (sequence numbers)
    grad_of: dict[int, list[str]] = {}
    for i, n in enumerate(names):
        if n.startswith(backward):
            fwd = owner.get((host[i].fwd_thread_id(), host[i].sequence_nr()))
            mods = [f"{m.rsplit(' ', 1)[0]} backward" for m in ranges_around(fwd)] if fwd is not None else []
            grad_of[i] = mods
            for m in mods:
                row = modules.setdefault(m, [0, 0, 0])
                row[0] += 1
                row[1] += host[i].duration_ns()
    for i, e in enumerate(host):
        ns = kernels.get(e.correlation_id()) if e.correlation_id() else None
        if not ns:
            continue
        charged, j = False, parent[i]
        while j >= 0:
            if names[j] in labels:
                modules[names[j]][2] += ns
            elif j in grad_of:
                for m in grad_of[j]:
                    modules[m][2] += ns
            if not charged and is_op[j] and not names[j].startswith(backward):
                ops[names[j]][2] += ns
                charged = True
            j = parent[j]
    cuda = device.type == "cuda"
    by = 2 if cuda else 1
    top = []
    for name, (calls, cpu_ns, dev_ns) in sorted(ops.items(), key=lambda kv: kv[1][by], reverse=True)[:TOP_OPERATORS]:
        row: dict[str, Any] = {"name": name, "calls": int(calls), "self_cpu_us": round(cpu_ns / 1000, 1)}
        if cuda:
            row["self_device_us"] = round(dev_ns / 1000, 1)
        top.append(row)
    out_modules: dict[str, dict[str, Any]] = {}
    for label in sorted(
        modules, key=lambda m: (order.get(m.rsplit(" ", 1)[0] + " forward", 0), m.endswith("backward"))
    ):
        calls, cpu_ns, dev_ns = modules[label]
        module, kind = label.rsplit(" ", 1)
        entry: dict[str, Any] = {"calls": int(calls), "cpu_us": round(cpu_ns / 1000, 1)}
        if cuda:
            entry["device_us"] = round(dev_ns / 1000, 1)
        out_modules.setdefault(module, {})[kind] = entry
    return {
        "format": FORMAT,
        "iterations": {"first": first, "last": last, "count": max(0, last - first + 1)},
        "device": str(device),
        "torch": torch.__version__,
        "activities": ["cpu", "cuda"] if cuda else ["cpu"],
        "window_s": round(window_s, 4),
        "compiled": compiled,
        "modules": out_modules,
        "top_operators": top,
        "top_by": "self_device_us" if cuda else "self_cpu_us",
    }


def write_profile(path: Path, doc: dict[str, Any]) -> None:
    """Written whole under a temporary name, then renamed: a killed job leaves none or all of it."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)
