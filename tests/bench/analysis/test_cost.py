"""bench/analysis/cost.py: the two cost models, their checks, and defaults from hardware:."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bench.analysis.cost import check_cost, record_cost, run_cost
from bench.envs import load_env
from bench.records.place import environment_facts

ONPREM = {"model": "onprem", "electricity_usd_per_kwh": 0.1, "pue": 1.5, "node_capex_usd": 8760, "node_life_years": 1}


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


def test_bad_cost_settings_are_named():
    problems = check_cost({**ONPREM, "pue": 0.5}, "x/env.yaml")
    assert problems and all("x/env.yaml" in p for p in problems) and any("pue" in p for p in problems)
    assert check_cost(ONPREM, "x/env.yaml") == []


def test_gpus_per_node_defaults_to_the_hardware_fact(tmp_path: Path):
    """Frozen at collection (bench.records.place.environment_facts): the node's GPUs are
    written once, under hardware:, and the on-premises cost share reads them."""
    folder = tmp_path / "e"
    folder.mkdir()
    env = {"kind": "local", "hardware": {"gpus_per_node": 8}, "cost": ONPREM}
    (folder / "env.yaml").write_text(yaml.safe_dump(env))
    assert environment_facts(load_env("e", tmp_path))["cost"]["gpus_per_node"] == 8
    env["cost"] = {**ONPREM, "gpus_per_node": 2}  # stated in cost: it wins
    (folder / "env.yaml").write_text(yaml.safe_dump(env))
    assert environment_facts(load_env("e", tmp_path))["cost"]["gpus_per_node"] == 2


def test_a_record_is_priced_from_its_frozen_rates_only():
    meta = {"environment": {"cost": {"model": "cloud", "usd_per_gpu_hour": 2.0}, "price_source": "env.yaml (sha256 x)"}}
    cost = record_cost(meta, 3600.0, 1, 1, None, None)
    assert cost.usd == pytest.approx(2.0) and "rates of env.yaml (sha256 x)" in cost.note
    assert record_cost({}, 3600.0, 1, 1, None, None).usd is None  # collected by an older bench: unknown, not $0
