"""The environment's facts a record keeps, computed from env.yaml by bench.environments.facts
and handed to the record's layer (records/place.py reads no env.yaml)."""

from __future__ import annotations

from pathlib import Path

from bench.environments.facts import environment_facts
from bench.environments.load import Environment


def test_gpus_per_node_defaults_to_the_hardware_fact(tmp_path: Path) -> None:
    onprem = {"model": "onprem", "electricity_usd_per_kwh": 0.1, "pue": 1.5, "node_capex_usd": 1, "node_life_years": 1}
    settings = {"kind": "local", "hardware": {"gpus_per_node": 8}, "cost": onprem}
    env = Environment("e", "local", tmp_path / "e", settings)
    assert environment_facts(env)["cost"]["gpus_per_node"] == 8
    settings["cost"] = {**onprem, "gpus_per_node": 2}  # stated in cost: it wins
    assert environment_facts(env)["cost"]["gpus_per_node"] == 2
