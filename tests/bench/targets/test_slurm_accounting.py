"""Slurm's accounting as a second source (bench/targets/slurm_accounting.py), over sacct text
shaped as `sacct --parsable2 --noconvert -o SACCT_FIELDS` prints it: a job line, its batch and
extern steps. A figure the site does not account is absent with the reason, never 0.
(The real test Slurm has no accounting storage: tests/bench/targets/test_slurm.py checks
that path end to end.)"""

from __future__ import annotations

import pytest

from bench.targets.slurm_accounting import SACCT_FIELDS, from_sacct, parse_sacct, parse_tres, tres_amount

GIB = 1024**3
# A 1-GPU job on a site with AccountingStorageTRES=gres/gpu,gres/gpumem,gres/gpuutil and
# AcctGatherEnergyType=acct_gather_energy/gpu.
GPU_SITE = f"""{SACCT_FIELDS.replace(",", "|")}
81723|atlas-r7f9c2|gpu017|3605|billing=16,cpu=16,gres/gpu:h100=1,gres/gpu=1,mem=128G,node=1|||2318450
81723.batch|batch|gpu017|3603|cpu=16,gres/gpu:h100=1,gres/gpu=1,mem=128G,node=1|cpu=14:02:11,energy=2318400,fs/disk=8423219,gres/gpumem=64424509440,gres/gpuutil=87,mem=23622320128,pages=3,vmem=30064771072|cpu=14:02:11,energy=2318400,fs/disk=8423219,gres/gpumem=71940702208,gres/gpuutil=100,mem=25769803776,pages=17,vmem=32212254720|2318400
81723.extern|extern|gpu017|3605|billing=16,cpu=16,gres/gpu:h100=1,gres/gpu=1,mem=128G,node=1|cpu=00:00:00,energy=0,fs/disk=5273,gres/gpumem=0,gres/gpuutil=0,mem=0,pages=0,vmem=0|cpu=00:00:00,energy=0,fs/disk=5273,gres/gpumem=0,gres/gpuutil=0,mem=0,pages=0,vmem=0|0
"""  # noqa: E501
# The same job on a site that accounts neither GPU TRES nor energy (the defaults).
PLAIN_SITE = f"""{SACCT_FIELDS.replace(",", "|")}
5521|atlas-a1|cn03|610|billing=4,cpu=4,mem=16G,node=1|||0
5521.batch|batch|cn03|609|cpu=4,mem=16G,node=1|cpu=00:38:01,energy=0,fs/disk=120042,mem=3221225472,pages=0,vmem=4294967296|cpu=00:38:01,energy=0,fs/disk=120042,mem=3355443200,pages=2,vmem=4294967296|0
5521.extern|extern|cn03|610|billing=4,cpu=4,mem=16G,node=1|cpu=00:00:00,energy=0,fs/disk=0,mem=0,pages=0,vmem=0|cpu=00:00:00,energy=0,fs/disk=0,mem=0,pages=0,vmem=0|0
"""  # noqa: E501


def ok(text: str) -> dict:
    return from_sacct({"rc": 0, "stdout": text, "stderr": ""})


def test_gpu_site_gives_utilisation_memory_and_energy() -> None:
    acct = ok(GPU_SITE)
    assert acct["source"] == "sacct" and acct["absent"] == {}
    assert acct["gpu_util_mean_pct"] == 87 and acct["gpu_util_max_pct"] == 100
    assert acct["gpu_mem_mean_bytes"] == 60 * GIB and acct["gpu_mem_max_bytes"] == 67 * GIB
    assert acct["energy_j"] == 2318450  # the job line's ConsumedEnergyRaw, not the extern step's 0


def test_site_without_gpu_tres_or_energy_gives_reasons_not_zeros() -> None:
    acct = ok(PLAIN_SITE)
    assert acct["gpu_util_mean_pct"] is None and acct["gpu_mem_max_bytes"] is None and acct["energy_j"] is None
    assert "gres/gpuutil" in acct["absent"]["gpu_util"] and "AccountingStorageTRES" in acct["absent"]["gpu_util"]
    assert "AcctGatherEnergyType" in acct["absent"]["energy"]


def test_accounting_storage_none_is_one_reason_for_every_figure() -> None:
    acct = from_sacct({"rc": 1, "stdout": "", "stderr": "sacct: error: Slurm accounting storage is disabled\n"})
    assert {k: acct[k] for k in ("gpu_util_mean_pct", "gpu_mem_mean_bytes", "energy_j")} == dict.fromkeys(
        ("gpu_util_mean_pct", "gpu_mem_mean_bytes", "energy_j")
    )
    assert set(acct["absent"]) == {"gpu_util", "gpu_mem", "energy"}
    assert all("accounting storage is disabled" in r for r in acct["absent"].values())


def test_a_chain_of_jobs_weights_utilisation_by_elapsed_and_sums_energy() -> None:
    second = (
        "81990|atlas-r7f9c2|gpu021|1200|billing=16,cpu=16,gres/gpu=1,mem=128G,node=1|||700000\n"
        "81990.batch|batch|gpu021|1199|cpu=16,gres/gpu=1,mem=128G,node=1|gres/gpumem=32G,gres/gpuutil=41|"
        "gres/gpumem=40G,gres/gpuutil=77|700000\n"
    )
    acct = ok(GPU_SITE + second)
    assert acct["gpu_util_mean_pct"] == pytest.approx((87 * 3603 + 41 * 1199) / (3603 + 1199), abs=1e-3)
    assert acct["gpu_mem_max_bytes"] == 67 * GIB  # the max over both jobs; `40G` read as Slurm writes it (1024^3)
    assert acct["energy_j"] == 2318450 + 700000


def test_never_read_energy_is_absent() -> None:
    text = GPU_SITE.replace("|||2318450", "|||18446744073709551614")  # NO_VAL64: the plugin never answered
    assert ok(text)["energy_j"] is None and "energy" in ok(text)["absent"]


@pytest.mark.parametrize(
    "result, words",
    [
        (None, "not run at collection"),
        ({}, "not run at collection"),
        ({"rc": 0, "stdout": "", "stderr": ""}, "lists none of the run's jobs"),
        ({"rc": 0, "stdout": "81723|batch\n", "stderr": ""}, "no JobID header"),
        ({"rc": 0, "stdout": "JobID|JobName\n81723|a|b\n", "stderr": ""}, "3 fields where the header has 2"),
    ],
)
def test_unusable_sacct_answers_leave_every_figure_absent(result, words: str) -> None:
    acct = from_sacct(result)
    assert acct["gpu_util_mean_pct"] is None and acct["energy_j"] is None
    assert all(words in reason for reason in acct["absent"].values()), acct["absent"]


def test_tres_values() -> None:
    assert parse_tres("cpu=00:01:02,gres/gpuutil=85,mem=1000K,fs/disk=0") == {
        "cpu": None,
        "gres/gpuutil": 85.0,
        "mem": 1000 * 1024.0,
        "fs/disk": 0.0,
    }
    assert tres_amount("2.5G") == 2.5 * GIB and tres_amount("") is None
    assert parse_sacct("JobID|State\n1|COMPLETED\n") == [{"JobID": "1", "State": "COMPLETED"}]
