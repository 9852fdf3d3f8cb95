"""Issue 31: sacct values outside their physical range never reach run.json; bad ElapsedRaw
never divides by zero; many lines are read in linear time (benchmarks/sacct_parse.py times it)."""

from __future__ import annotations

import math

import pytest

from bench.targets.slurm_accounting import SACCT_FIELDS, accounting, from_sacct, parse_sacct
from tests.bench.targets.test_slurm_accounting import GPU_SITE


def ok(text: str) -> dict:
    return from_sacct({"rc": 0, "stdout": text, "stderr": ""})


def _numbers_are_sound(acct: dict) -> None:
    for key, value in acct.items():
        if isinstance(value, float):
            assert math.isfinite(value) and value >= 0, (key, value)


@pytest.mark.parametrize("bad", ["nan", "-5", "500", "1e400", "inf"])
def test_a_gpu_utilisation_outside_0_to_100_per_gpu_is_refused_and_named(bad: str) -> None:
    acct = ok(GPU_SITE.replace("gres/gpuutil=87", f"gres/gpuutil={bad}"))
    assert acct["gpu_util_mean_pct"] is None
    assert acct["absent"]["gpu_util"].startswith("refused: sacct gave gres/gpuutil=" + bad)
    assert acct["gpu_mem_mean_bytes"] == 64424509440  # the other figures stand
    _numbers_are_sound(acct)


def test_two_gpus_may_add_up_to_200_percent() -> None:
    two = GPU_SITE.replace("gres/gpu=1", "gres/gpu=2").replace("gres/gpuutil=87", "gres/gpuutil=180")
    assert ok(two)["gpu_util_mean_pct"] == 180


@pytest.mark.parametrize(
    ("old", "new", "figure"),
    [
        ("|||2318450", "|||nan", "energy"),
        ("|||2318450", "|||-7", "energy"),
        ("gres/gpumem=64424509440", "gres/gpumem=-1G", "gpu_mem"),
        ("gpu017|3603|", "gpu017|nan|", "gpu_util"),
        ("gpu017|3603|", "gpu017|-10|", "gpu_mem"),
    ],
)
def test_energy_memory_and_elapsed_outside_their_range_are_refused(old: str, new: str, figure: str) -> None:
    acct = ok(GPU_SITE.replace(old, new))
    assert acct["absent"][figure].startswith("refused: sacct gave"), acct["absent"]
    _numbers_are_sound(acct)


def test_elapsed_10_and_minus_10_do_not_divide_by_zero() -> None:
    header = SACCT_FIELDS.replace(",", "|")
    lines = [header]
    for job, elapsed in ((1, "10"), (2, "-10"), (3, "0")):
        lines.append(f"{job}|a|n|{elapsed}|gres/gpu=1|||5")
        lines.append(f"{job}.batch|batch|n|{elapsed}|gres/gpu=1|gres/gpuutil=50|gres/gpuutil=60|5")
    acct = accounting(parse_sacct("\n".join(lines)))
    assert acct["gpu_util_mean_pct"] is None and "ElapsedRaw=-10" in acct["absent"]["gpu_util"]
    _numbers_are_sound(acct)
    lines = [line for line in lines if not line.startswith("2")]
    assert accounting(parse_sacct("\n".join(lines)))["gpu_util_mean_pct"] == pytest.approx(50.0)
