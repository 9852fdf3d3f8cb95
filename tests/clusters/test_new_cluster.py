"""A second Slurm cluster is one new folder under clusters/ and nothing else: no code,
workflow or Makefile edit. The test copies clusters/satori, changes only facts inside the
copy, and drives every command that reads environments."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def new_cluster(tmp_path: Path) -> Path:
    clusters = tmp_path / "clusters"
    folder = clusters / "othercluster"
    shutil.copytree(REPO / "clusters" / "satori", folder)
    inventory = folder / "inventory.yml"
    inventory.write_text(inventory.read_text().replace("satori-login-001.mit.edu", "login.other.example.org"))
    env = yaml.safe_load((folder / "env.yaml").read_text())
    env["description"] = "Another Slurm cluster"
    env["hardware"]["gpus_per_node"] = 8
    (folder / "env.yaml").write_text(yaml.safe_dump(env))
    return clusters


def bench(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bench", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_a_copied_slurm_folder_validates_and_joins_ci(tmp_path: Path):
    clusters = new_cluster(tmp_path)
    p = bench("validate", str(clusters / "othercluster"), "--no-experiments")  # by path
    assert p.returncode == 0 and "ok   env othercluster" in p.stdout, p.stdout + p.stderr
    p = bench("envs", "--json", "--remote", "--clusters", str(clusters))
    (entry,) = json.loads(p.stdout)
    assert entry["env"] == "othercluster" and entry["kind"] == "slurm" and entry["ci_setup"] == "ci-ssh"
    assert bench("envs", "--host", "othercluster", "--clusters", str(clusters)).stdout.strip() == (
        "login.other.example.org"
    )


def test_ci_ssh_reads_the_new_clusters_host_from_its_inventory(tmp_path: Path):
    clusters = new_cluster(tmp_path)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SSH_")},
        "SSH_KEY": "-----BEGIN OPENSSH PRIVATE KEY-----\nx\n-----END OPENSSH PRIVATE KEY-----",
        "SSH_KNOWN_HOSTS": "login.other.example.org ssh-ed25519 AAAAC3Nza",
        "SSH_USER": "ci",
    }
    p = subprocess.run(
        ["make", "--no-print-directory", "ci-setup", "ENV=othercluster", f"CLUSTERS={clusters}", f"HOME={tmp_path}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Host login.other.example.org" in (tmp_path / ".ssh" / "config").read_text()


def test_the_new_clusters_facts_reach_the_cost_and_the_login_host(tmp_path: Path):
    from bench.environments.facts import environment_facts
    from bench.environments.load import load_env
    from bench.targets import target_for

    clusters = new_cluster(tmp_path)
    assert environment_facts(load_env("othercluster", clusters))["cost"]["gpus_per_node"] == 8
    target = target_for(load_env("othercluster", clusters))
    assert target.login_host() == "login.other.example.org"
