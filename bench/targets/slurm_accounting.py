"""Slurm's own accounting of a run: a second source for GPU utilisation, GPU memory and energy.

The recorder samples the GPUs itself; Slurm can account them too, per job step, from the
node's GPU plugin (`AccountingStorageTRES=gres/gpu,gres/gpuutil,gres/gpumem` with
`AutoDetect=nvml`) and energy from its energy plugin (`AcctGatherEnergyType`):
https://slurm.schedmd.com/gres.html#GPU_Management, https://slurm.schedmd.com/tres.html,
https://slurm.schedmd.com/sacct.html (TRESUsageInAve, TRESUsageInMax, ConsumedEnergyRaw).

`ansible/roles/atlas/library/atlas_slurm_jobs.py` runs `SACCT_FIELDS` through
`sacct --parsable2 --noconvert` on the login host at collection; this module turns that
text into the run record's `scheduler.accounting` block. A figure the site does not
account is absent (None) with the reason in `absent`, never 0: a test cluster with
`AccountingStorageType=accounting_storage/none` gives no figure, and says so.

Units, as sacct prints them with --noconvert: gres/gpuutil in percent (Slurm's gpu/nvml
plugin adds the job's processes' utilisation over its GPUs, so a 2-GPU job may show up to
200), gres/gpumem and mem in bytes, ConsumedEnergyRaw in joules (of the whole node, as the
energy plugin measures it, not of the GPUs alone). Sizes with a unit suffix (`1024M`,
without --noconvert) are read as Slurm writes them: powers of 1024.
"""

from __future__ import annotations

import math
import re
from typing import Any

from bench.records.surfaces import schema

SACCT_FIELDS = "JobID,JobName,NodeList,ElapsedRaw,AllocTRES,TRESUsageInAve,TRESUsageInMax,ConsumedEnergyRaw"
SUFFIX = {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}
NO_VALUE = 2**63  # Slurm prints NO_VAL64 (18446744073709551614) for an energy it never read
UTIL_RESOLUTION_PCT = 1.0  # gres/gpuutil is an integer percent
ENERGY_RESOLUTION_J = 1.0  # ConsumedEnergyRaw is whole joules
NOT_STORED = (
    "Slurm keeps no job accounting here (AccountingStorageType=accounting_storage/none, or sacct "
    "cannot reach slurmdbd): {detail}"
)
NO_GPU_TRES = (
    "the site does not account {tres} (add gres/gpuutil,gres/gpumem to AccountingStorageTRES and "
    "use a GPU plugin such as AutoDetect=nvml in gres.conf)"
)
NO_ENERGY = "the site gathers no energy for jobs (ConsumedEnergy is {value}; AcctGatherEnergyType is none or unset)"


def parse_sacct(text: str) -> list[dict[str, str]]:
    """`sacct --parsable2` output (with its header line) as one dict per job or step line."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = lines[0].split("|")
    if "JobID" not in header:
        raise ValueError(f"sacct output has no JobID header line (first line: {lines[0][:80]!r})")
    rows = []
    for line in lines[1:]:
        cells = line.split("|")
        if len(cells) != len(header):
            raise ValueError(f"sacct line has {len(cells)} fields where the header has {len(header)}: {line[:80]!r}")
        rows.append(dict(zip(header, cells)))
    return rows


def tres_amount(text: str) -> float | None:
    """One TRES value as a number: `85`, `1024M` (x 1024^2), `2.50G`; None for a time, a blank, or a
    value that is no finite number (`nan`, `1e400`)."""
    try:  # the usual case first: a plain number (this runs for every value of every line)
        value = float(text)
    except ValueError:
        pass
    else:
        return value if math.isfinite(value) and len(text) <= 40 else None
    text = text.strip()
    if not text or len(text) > 40:
        return None
    factor = SUFFIX.get(text[-1].upper(), 1)
    number = text[:-1] if factor != 1 else text
    try:
        value = float(number) * factor
    except ValueError:
        return None  # cpu=00:01:02 and the like: not a figure compared here
    return value if math.isfinite(value) else None


def parse_tres(text: str) -> dict[str, float | None]:
    """A TRES list `cpu=00:00:10,gres/gpuutil=85,mem=1000K` as {name: amount}."""
    out: dict[str, float | None] = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        if sep:
            out[name.strip()] = tres_amount(value)
    return out


# The physical range of each accounted figure, declared once in sacct.schema.json (x-limits);
# a value outside it is refused (named in `absent`).
_LIMITS = schema("sacct")["x-limits"]
MAX_GPU_MEM_BYTES = float(_LIMITS["gres/gpumem"]["high"])
MAX_ENERGY_J = float(_LIMITS["ConsumedEnergyRaw"]["high"])
MAX_ELAPSED_S = float(_LIMITS["ElapsedRaw"]["high"])
UTIL_PER_GPU_PCT = float(_LIMITS["gres/gpuutil"]["high_per_gpu"])
GPU_COUNT = re.compile(r"(?:^|,)gres/gpu=([^,]*)")


def _util_high(alloc: str) -> float:
    """gres/gpuutil adds the job's GPUs: up to 100 % per allocated GPU (at least one)."""
    found = GPU_COUNT.search(alloc)
    gpus = tres_amount(found.group(1)) if found else None
    return UTIL_PER_GPU_PCT * (gpus if gpus is not None and 1 <= gpus <= 1024 else 1.0)


def _energy(value: str) -> float | None:
    amount = tres_amount(value)
    return None if amount is None or amount <= 0 or amount >= NO_VALUE else amount


def _usage_steps(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """The job steps that ran the workload: any step with usage, but not the `extern` step."""
    return [r for r in rows if "." in r["JobID"] and not r["JobID"].endswith(".extern") and r.get("TRESUsageInAve")]


def _elapsed(row: dict[str, str]) -> float | None:
    value = tres_amount(row.get("ElapsedRaw", ""))
    return value if value is not None and 0 <= value <= MAX_ELAPSED_S else None


class _Refusals:
    """What was refused, per figure of the block, as one reason each."""

    def __init__(self) -> None:
        self.seen: dict[str, list[str]] = {}

    def check(self, figure: str, name: str, value: float | None, raw: str, low: float, high: float) -> float | None:
        if value is not None and low <= value <= high:
            return value
        if raw.strip():
            self.seen.setdefault(figure, []).append(f"{name}={raw.strip()[:24]}")
        return None

    def reason(self, figure: str, what: str) -> str | None:
        bad = self.seen.get(figure)
        if not bad:
            return None
        return f"refused: sacct gave {', '.join(bad[:3])}, not {what}; the figure is unknown"


def _raw_tres(text: str) -> dict[str, str]:
    return {n.strip(): v for n, sep, v in (item.partition("=") for item in text.split(",")) if sep}


def accounting(rows: list[dict[str, str]]) -> dict[str, Any]:
    """The `scheduler.accounting` block from sacct's lines of one run's jobs.

    GPU figures come from the longest usage step of each job (the batch step, where
    `bench record` runs), weighted by its elapsed time over the run's jobs; energy is each
    job allocation line's ConsumedEnergyRaw, summed over the run's jobs. Every value is
    held to its physical range (utilisation 0-100 % per GPU, sizes and energy finite and
    not negative, ElapsedRaw a time): one outside it is refused, its figure unknown and
    `absent` says why. Linear in the lines (one pass groups them by job)."""
    block: dict[str, Any] = {
        "source": "sacct",
        "gpu_util_mean_pct": None,
        "gpu_util_max_pct": None,
        "gpu_mem_mean_bytes": None,
        "gpu_mem_max_bytes": None,
        "energy_j": None,
        "gpu_util_resolution_pct": UTIL_RESOLUTION_PCT,
        "energy_resolution_j": ENERGY_RESOLUTION_J,
        "absent": {},
    }
    by_job: dict[str, list[dict[str, str]]] = {}
    for r in rows:
        by_job.setdefault(r["JobID"].split(".")[0], []).append(r)
    refused = _Refusals()
    util_parts: list[tuple[float, float]] = []
    mem_parts: list[tuple[float, float]] = []
    maxima: dict[str, list[float]] = {"gres/gpuutil": [], "gres/gpumem": []}
    energies: list[float] = []
    energy_seen: list[str] = []
    for job in sorted(by_job):
        mine = by_job[job]
        alloc = next((r.get("AllocTRES", "") for r in mine if r["JobID"] == job), "")
        _step_usage(_usage_steps(mine), alloc, refused, util_parts, mem_parts, maxima)
        for line in (r for r in mine if r["JobID"] == job):
            raw = line.get("ConsumedEnergyRaw", "")
            energy_seen.append(raw)
            amount = tres_amount(raw)
            if amount is not None and (amount == 0 or amount >= NO_VALUE):
                continue  # the energy plugin never read it: not accounted, said below
            if raw.strip():
                joules = refused.check("energy", "ConsumedEnergyRaw", amount, raw, 0.0, MAX_ENERGY_J)
                if joules is not None:
                    energies.append(joules)
    _fill(block, refused, util_parts, mem_parts, maxima, energies, energy_seen)
    return block


def _step_usage(
    steps: list[dict[str, str]],
    alloc: str,
    refused: _Refusals,
    util_parts: list[tuple[float, float]],
    mem_parts: list[tuple[float, float]],
    maxima: dict[str, list[float]],
) -> None:
    """The GPU usage of one job's longest step, each value held to its range, weighted by its time."""
    if not steps:
        return
    ranges = {"gres/gpuutil": ("gpu_util", 0.0, _util_high(alloc)), "gres/gpumem": ("gpu_mem", 0.0, MAX_GPU_MEM_BYTES)}
    timed = [(_elapsed(r), r) for r in steps]
    weight, step = max(timed, key=lambda pair: pair[0] or 0.0)
    if weight is None:  # no time to weight by (nan, negative): the usage cannot be averaged
        for figure in ("gpu_util", "gpu_mem"):
            refused.check(figure, "ElapsedRaw", None, step.get("ElapsedRaw", "") or "(empty)", 0.0, 0.0)
        return
    for column in ("TRESUsageInAve", "TRESUsageInMax"):
        raw = _raw_tres(step.get(column, ""))
        for name, (figure, low, high) in ranges.items():
            if name not in raw:
                continue
            value = refused.check(figure, name, tres_amount(raw[name]), raw[name], low, high)
            if value is None:
                continue
            if column == "TRESUsageInMax":
                maxima[name].append(value)
            else:  # a step of 0 s still counts, barely: the weights never sum to 0
                (util_parts if name == "gres/gpuutil" else mem_parts).append((value, max(weight, 1e-9)))


def _mean(parts: list[tuple[float, float]]) -> float:
    return sum(v * w for v, w in parts) / sum(w for _, w in parts)


def _fill(
    block: dict[str, Any],
    refused: _Refusals,
    util_parts: list[tuple[float, float]],
    mem_parts: list[tuple[float, float]],
    maxima: dict[str, list[float]],
    energies: list[float],
    energy_seen: list[str],
) -> None:
    """The block's figures, or each one's reason in `absent` (refused values beat "not accounted")."""
    util_why = refused.reason("gpu_util", "a utilisation of 0 to 100 % per GPU over a valid ElapsedRaw")
    mem_why = refused.reason("gpu_mem", "a GPU memory size (bytes, not negative) over a valid ElapsedRaw")
    energy_why = refused.reason("energy", f"joules from 0 to {MAX_ENERGY_J:g}")
    if util_why:
        block["absent"]["gpu_util"] = util_why
    elif util_parts:
        block["gpu_util_mean_pct"] = round(_mean(util_parts), 3)
    else:
        block["absent"]["gpu_util"] = NO_GPU_TRES.format(tres="gres/gpuutil")
    if mem_why:
        block["absent"]["gpu_mem"] = mem_why
    elif mem_parts:
        block["gpu_mem_mean_bytes"] = round(_mean(mem_parts), 1)
    else:
        block["absent"]["gpu_mem"] = NO_GPU_TRES.format(tres="gres/gpumem")
    if not util_why:
        block["gpu_util_max_pct"] = max(maxima["gres/gpuutil"], default=None)
    if not mem_why:
        block["gpu_mem_max_bytes"] = max(maxima["gres/gpumem"], default=None)
    if energy_why:
        block["absent"]["energy"] = energy_why
    elif energies:
        block["energy_j"] = sum(energies)
    else:
        block["absent"]["energy"] = NO_ENERGY.format(value=(energy_seen[0] or "empty") if energy_seen else "missing")


def from_sacct(result: dict[str, Any] | None) -> dict[str, Any]:
    """The accounting block from the collection's sacct call ({rc, stdout, stderr}); when
    sacct failed or was not run, every figure absent with the reason."""
    empty = accounting([])
    if not isinstance(result, dict) or "rc" not in result:
        reason = "sacct was not run at collection (a record collected before bench read Slurm accounting)"
        empty["absent"] = dict.fromkeys(("gpu_util", "gpu_mem", "energy"), reason)
        return empty
    if result.get("rc") != 0:
        detail = str(result.get("stderr") or result.get("stdout") or f"exit {result.get('rc')}").strip()
        reason = NOT_STORED.format(detail=detail.splitlines()[0][:200] if detail else "no message")
        empty["absent"] = dict.fromkeys(("gpu_util", "gpu_mem", "energy"), reason)
        return empty
    try:
        rows = parse_sacct(str(result.get("stdout") or ""))
    except ValueError as exc:
        empty["absent"] = dict.fromkeys(("gpu_util", "gpu_mem", "energy"), f"unreadable sacct output: {exc}")
        return empty
    if not rows:
        empty["absent"] = dict.fromkeys(
            ("gpu_util", "gpu_mem", "energy"), "Slurm's accounting lists none of the run's jobs (sacct -j)"
        )
        return empty
    return accounting(rows)
