"""bench/analysis/cost.py: the two cost models and their checks.

(gpus_per_node defaulting to hardware: is frozen at collection: tests/bench/records/test_place.py.)
"""

from __future__ import annotations

import pytest

from bench.analysis.cost import record_cost, run_cost
from bench.environments.cost_rates import check_cost

ONPREM = {"model": "onprem", "electricity_usd_per_kwh": 0.1, "pue": 1.5, "node_capex_usd": 8760, "node_life_years": 1}
SATORI = {
    "model": "onprem",
    "electricity_usd_per_kwh": 0.0839,
    "pue": 1.2,
    "node_capex_usd": 50000,
    "node_life_years": 5,
    "gpus_per_node": 4,
}


def test_onprem_charges_the_gpu_share_of_a_node_and_the_energy():
    cost = run_cost({**ONPREM, "gpus_per_node": 4}, wall_s=3600.0, gpus=1, nodes=1, energy_wh=1000.0)
    assert cost.usd == pytest.approx(0.25 + 1.0 * 1.5 * 0.1)  # $1/node-h x 1/4 node + 1 kWh x PUE x price
    assert "GPU energy" in cost.note
    no_energy = run_cost(ONPREM, wall_s=3600.0, gpus=0, nodes=2, energy_wh=None)
    assert no_energy.usd == pytest.approx(2.0) and "electricity not included" in no_energy.note


def test_cloud_and_no_model():
    cloud = {"model": "cloud", "usd_per_gpu_hour": 2.0, "usd_per_cpu_hour": 0.5}
    assert run_cost(cloud, 1800.0, gpus=2, nodes=1, energy_wh=None, cpu_cores=4).usd == pytest.approx(2.0 + 1.0)
    assert run_cost(None, 10.0, 1, 1, None).usd is None
    assert run_cost(cloud, None, 1, 1, None).note == "wall time unknown"


def test_onprem_cost_by_hand() -> None:
    # 1 of 4 GPUs for 2 h: capex 50000 / (5 * 8760) per node-hour x 0.25 x 2 h,
    # plus 1 kWh GPU energy x PUE 1.2 x $0.0839.
    cost = run_cost(SATORI, 7200.0, gpus=1, nodes=1, energy_wh=1000.0)
    assert cost.usd == pytest.approx(50000 / (5 * 8760) * 0.25 * 2 + 1.2 * 0.0839)
    cloud = run_cost({"model": "cloud", "usd_per_gpu_hour": 3.0, "usd_per_cpu_hour": 0.05}, 3600.0, 2, 1, None, 8)
    assert cloud.usd == pytest.approx(6.0 + 0.4)
    assert run_cost({"model": "none"}, 10.0, 1, 1, None).usd is None
    no_energy = run_cost(SATORI, 3600.0, 0, 1, None)
    assert "electricity not included" in no_energy.note


@pytest.mark.parametrize(
    "cfg, needle",
    [
        ({"model": "onprem", "pue": 1.2, "node_capex_usd": 1}, "cost.electricity_usd_per_kwh is required"),
        ({"model": "onprem", "electricity_usd_per_kwh": 0.1, "pue": 0.5, "node_capex_usd": 1}, "cost.pue must be >= 1"),
        ({"model": "cloud", "usd_per_gpu_hour": "cheap"}, "cost.usd_per_gpu_hour must be a number"),
        ({"model": "aws"}, "cost.model is 'aws'"),
        ({"model": "cloud", "usd_per_gpu_hour": 1, "usd_per_tpu_hour": 2}, "cost.usd_per_tpu_hour is not a key"),
    ],
)
def test_cost_validation_names_file_and_key(cfg: dict, needle: str) -> None:
    errors = check_cost(cfg, "clusters/x/env.yaml")
    assert errors and all(e.startswith("clusters/x/env.yaml: ") for e in errors)
    assert any(needle in e for e in errors), errors


def test_a_record_is_priced_from_its_frozen_rates_only():
    meta = {"environment": {"cost": {"model": "cloud", "usd_per_gpu_hour": 2.0}, "price_source": "env.yaml (sha256 x)"}}
    cost = record_cost(meta, 3600.0, 1, 1, None, None)
    assert cost.usd == pytest.approx(2.0) and "rates of env.yaml (sha256 x)" in cost.note
    assert record_cost({}, 3600.0, 1, 1, None, None).usd is None  # collected by an older bench: unknown, not $0
