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

from typing import Any

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
    """One TRES value as a number: `85`, `1024M` (x 1024^2), `2.50G`; None for a time or blank."""
    text = text.strip()
    if not text:
        return None
    factor = SUFFIX.get(text[-1].upper(), 1)
    number = text[:-1] if factor != 1 else text
    try:
        return float(number) * factor
    except ValueError:
        return None  # cpu=00:01:02 and the like: not a figure compared here


def parse_tres(text: str) -> dict[str, float | None]:
    """A TRES list `cpu=00:00:10,gres/gpuutil=85,mem=1000K` as {name: amount}."""
    out: dict[str, float | None] = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        if sep:
            out[name.strip()] = tres_amount(value)
    return out


def _energy(value: str) -> float | None:
    amount = tres_amount(value)
    return None if amount is None or amount <= 0 or amount >= NO_VALUE else amount


def _usage_steps(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """The job steps that ran the workload: any step with usage, but not the `extern` step."""
    return [r for r in rows if "." in r["JobID"] and not r["JobID"].endswith(".extern") and r.get("TRESUsageInAve")]


def accounting(rows: list[dict[str, str]]) -> dict[str, Any]:
    """The `scheduler.accounting` block from sacct's lines of one run's jobs.

    GPU figures come from the longest usage step of each job (the batch step, where
    `bench record` runs), weighted by its elapsed time over the run's jobs; energy is each
    job allocation line's ConsumedEnergyRaw, summed over the run's jobs."""
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
    jobs = sorted({r["JobID"].split(".")[0] for r in rows})
    util_parts: list[tuple[float, float]] = []
    mem_parts: list[tuple[float, float]] = []
    maxima: dict[str, list[float]] = {"gres/gpuutil": [], "gres/gpumem": []}
    energies: list[float] = []
    energy_seen: list[str] = []
    for job in jobs:
        mine = [r for r in rows if r["JobID"].split(".")[0] == job]
        steps = _usage_steps(mine)
        if steps:
            step = max(steps, key=lambda r: tres_amount(r.get("ElapsedRaw", "")) or 0.0)
            weight = tres_amount(step.get("ElapsedRaw", "")) or 1.0
            ave, top = parse_tres(step.get("TRESUsageInAve", "")), parse_tres(step.get("TRESUsageInMax", ""))
            if ave.get("gres/gpuutil") is not None:
                util_parts.append((ave["gres/gpuutil"], weight))  # type: ignore[arg-type]
            if ave.get("gres/gpumem") is not None:
                mem_parts.append((ave["gres/gpumem"], weight))  # type: ignore[arg-type]
            for name, values in maxima.items():
                if top.get(name) is not None:
                    values.append(top[name])  # type: ignore[arg-type]
        for line in (r for r in mine if r["JobID"] == job):
            energy_seen.append(line.get("ConsumedEnergyRaw", ""))
            if (joules := _energy(line.get("ConsumedEnergyRaw", ""))) is not None:
                energies.append(joules)
    if util_parts:
        total = sum(w for _, w in util_parts)
        block["gpu_util_mean_pct"] = round(sum(v * w for v, w in util_parts) / total, 3)
    else:
        block["absent"]["gpu_util"] = NO_GPU_TRES.format(tres="gres/gpuutil")
    if mem_parts:
        total = sum(w for _, w in mem_parts)
        block["gpu_mem_mean_bytes"] = round(sum(v * w for v, w in mem_parts) / total, 1)
    else:
        block["absent"]["gpu_mem"] = NO_GPU_TRES.format(tres="gres/gpumem")
    block["gpu_util_max_pct"] = max(maxima["gres/gpuutil"], default=None)
    block["gpu_mem_max_bytes"] = max(maxima["gres/gpumem"], default=None)
    if energies:
        block["energy_j"] = sum(energies)
    else:
        block["absent"]["energy"] = NO_ENERGY.format(value=(energy_seen[0] or "empty") if energy_seen else "missing")
    return block


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
