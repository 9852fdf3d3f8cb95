"""clusters/satori and clusters/local-slurm: facts and settings that the slurm target and
the playbooks accept, and an inventory that Ansible itself parses."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.environments.load import Environment, load_env
from bench.errors import ConfigError
from bench.targets import target_for
from bench.targets.slurm import SlurmTarget

REPO = Path(__file__).resolve().parents[2]


def test_satori_env_holds_the_cluster_facts() -> None:
    env = load_env("satori")
    assert env.kind == "slurm" and not env.get("local")
    assert target_for(env).login_host() == "satori-login-001.mit.edu"  # from inventory.yml, its one place
    assert env.get("data_path") == "/data/ImageNet/ILSVRC2012"
    slurm = env.get("slurm")
    assert slurm["partition"] == "sched_system_all" and "gpus_per_node" not in slurm  # hardware: says it once
    assert slurm["exclusive"] is True and slurm["time_limit"] == "12:00:00"
    assert slurm["signal"].startswith("B:USR1@")
    assert env.get("runtime")["mode"] in ("conda", "singularity")
    assert env.get("runtime")["conda_env"] and env.get("runtime")["singularity_image"].endswith(".sif")
    assert env.get("hardware")["gpus_per_node"] == 4 and env.get("hardware")["gpu_model"].startswith("Tesla V100")
    cost = env.get("cost")
    assert cost == {
        "model": "onprem",
        "electricity_usd_per_kwh": 0.0839,
        "pue": 1.2,
        "node_capex_usd": 50000,
        "node_life_years": 5,
        "utilisation": 0.9,
    }
    from bench.environments.facts import environment_facts

    # frozen into run.json at collection: a 1-GPU job pays a quarter node
    assert environment_facts(env)["cost"]["gpus_per_node"] == 4


def test_both_slurm_envs_build_a_slurm_target() -> None:
    for name in ("satori", "local-slurm"):
        target = target_for(name)
        assert isinstance(target, SlurmTarget) and target.inventory.is_file()
    assert load_env("local-slurm").get("local") is True


@pytest.mark.parametrize(
    "name, host_var",
    [
        ("satori", {"ansible_host": "satori-login-001.mit.edu"}),
        ("local-slurm", {"ansible_connection": "local"}),
    ],
)
def test_inventory_and_group_vars_parse_with_ansible(name: str, host_var: dict) -> None:
    inventory = REPO / "clusters" / name / "inventory.yml"
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(inventory), "--list"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    (host,) = data["slurm_login"]["hosts"]
    hostvars = data["_meta"]["hostvars"][host]
    assert host_var.items() <= hostvars.items()
    assert "atlas_root" in hostvars and "atlas_slurm_env" in hostvars  # group_vars beside the inventory


@pytest.mark.parametrize(
    "change, message",
    [
        ({"slurm": {"nodes": "two"}}, "slurm.nodes"),
        ({"slurm": {"exclusive": "yes"}}, "slurm.exclusive"),
        ({"runtime": {"mode": "docker"}}, "runtime.mode"),
        ({"runtime": {"mode": "conda"}}, "conda_setup"),
        ({"runtime": {"mode": "singularity"}}, "singularity_image"),
        ({"inventory": "missing.yml"}, "missing.yml does not exist"),
    ],
)
def test_bad_settings_are_config_errors_naming_the_key(change: dict, message: str) -> None:
    base = load_env("satori")
    settings = copy.deepcopy(base.settings)
    for key, value in change.items():
        settings[key] = value
    with pytest.raises(ConfigError, match=message):
        SlurmTarget(Environment(name="satori", kind="slurm", folder=base.folder, settings=settings))


def test_satori_is_offered_without_a_local_check() -> None:
    # A remote cluster is reached with the user's own SSH set-up: nothing to check here.
    assert target_for("satori").available() is None
