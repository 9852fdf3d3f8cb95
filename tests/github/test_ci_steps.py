"""The make targets that carry secrets into CI jobs: files written, values never printed."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "sha256~CItokenVALUE0123456789abcdefSECRET"
KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAsecretKEYbody\n-----END OPENSSH PRIVATE KEY-----"


def make(target: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENSHIFT_", "SSH_")) and k not in ("RUNNER_TEMP", "GITHUB_ENV", "KUBECONFIG")
    }
    return subprocess.run(
        ["make", "--no-print-directory", target, *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_ci_kubeconfig_is_usable_by_the_kubernetes_client_and_silent(tmp_path: Path):
    from kubernetes import client, config

    out = tmp_path / "kube" / "config"
    p = make(
        "ci-kubeconfig",
        f"KUBECONFIG_OUT={out}",
        env={"OPENSHIFT_SERVER": "https://api.moc.example:6443", "OPENSHIFT_TOKEN": TOKEN},
    )
    assert p.returncode == 0, p.stderr
    assert TOKEN not in p.stdout + p.stderr and "CItoken" not in p.stdout + p.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(out), client_configuration=cfg, persist_config=False)
    assert cfg.host == "https://api.moc.example:6443"
    assert f"Bearer {TOKEN}" in cfg.api_key.values()


def test_ci_kubeconfig_names_what_is_missing(tmp_path: Path):
    p = make("ci-kubeconfig", f"KUBECONFIG_OUT={tmp_path / 'k'}", env={"OPENSHIFT_SERVER": "https://x:6443"})
    assert p.returncode != 0 and "set OPENSHIFT_TOKEN" in p.stderr
    assert not (tmp_path / "k").exists()


def test_ci_ssh_pins_the_host_key_and_keeps_the_key_private(tmp_path: Path):
    env = {
        "SSH_KEY": KEY,
        "SSH_KNOWN_HOSTS": "satori-login-001.mit.edu ssh-ed25519 AAAAC3Nza",
        "SSH_USER": "atlasci",
    }
    for _ in range(2):  # twice: the ssh config entry is written once
        p = make("ci-ssh", "ENV=satori", f"HOME={tmp_path}", env=env)
        assert p.returncode == 0, p.stderr
        assert "secretKEYbody" not in p.stdout + p.stderr
    ssh = tmp_path / ".ssh"
    assert (ssh / "atlas_satori").read_text().strip() == KEY
    for name in ("atlas_satori", "atlas_known_hosts_satori", "config"):
        assert stat.S_IMODE((ssh / name).stat().st_mode) == 0o600, name
    conf = (ssh / "config").read_text()
    assert conf.count("Host satori-login-001.mit.edu") == 1  # the host comes from clusters/satori/inventory.yml
    assert "StrictHostKeyChecking yes" in conf and "User atlasci" in conf
    assert f"UserKnownHostsFile {ssh / 'atlas_known_hosts_satori'}" in conf
    p = make("ci-ssh", "ENV=satori", f"HOME={tmp_path / 'other'}", env={"SSH_KEY": KEY, "SSH_USER": "u"})
    assert p.returncode != 0 and "SSH_KNOWN_HOSTS" in p.stderr
    p = make("ci-ssh", f"HOME={tmp_path / 'other'}", env=env)
    assert p.returncode != 0 and "ENV=<env>" in p.stderr


def test_ci_ssh_without_a_key_uses_the_runners_own_set_up(tmp_path: Path):
    p = make("ci-ssh", "ENV=satori", f"HOME={tmp_path}", env={})
    assert p.returncode == 0 and "own SSH set-up" in p.stdout
    assert not (tmp_path / ".ssh").exists()


def test_ci_matrix_lists_the_switched_on_remote_environments(tmp_path: Path):
    import json

    out = tmp_path / "github_output"
    p = make("ci-matrix", env={"GITHUB_OUTPUT": str(out), "DEPLOY_ENVS": "satori moc"})
    assert p.returncode == 0, p.stderr
    (line,) = out.read_text().splitlines()
    matrix = json.loads(line.removeprefix("matrix="))
    assert [(e["env"], e["ci_setup"]) for e in matrix] == [("moc", "ci-kubeconfig"), ("satori", "ci-ssh")]
    out.unlink()
    assert make("ci-matrix", env={"GITHUB_OUTPUT": str(out), "DEPLOY_ENVS": ""}).returncode == 0
    assert out.read_text() == "matrix=[]\n"
    p = make("ci-matrix", env={"GITHUB_OUTPUT": str(out), "DEPLOY_ENVS": "nowhere"})
    assert p.returncode != 0 and "unknown environment(s) nowhere" in p.stderr


def test_in_ci_credentials_live_under_runner_temp_and_ci_clean_removes_them(tmp_path: Path):
    """RUNNER_TEMP set (a CI job): nothing is written to HOME; the next steps find the
    files through GITHUB_ENV; `make ci-clean` (the always() step) removes them."""
    temp, home, github_env = tmp_path / "runner-temp", tmp_path / "home", tmp_path / "github-env"
    temp.mkdir()
    home.mkdir()
    ci = {"RUNNER_TEMP": str(temp), "GITHUB_ENV": str(github_env), "HOME": str(home)}
    ssh_env = {"SSH_KEY": KEY, "SSH_KNOWN_HOSTS": "satori-login-001.mit.edu ssh-ed25519 AAAAC3Nza", "SSH_USER": "u"}
    assert make("ci-ssh", "ENV=satori", env={**ci, **ssh_env}).returncode == 0
    kube_env = {"OPENSHIFT_SERVER": "https://api.example:6443", "OPENSHIFT_TOKEN": TOKEN}
    assert make("ci-kubeconfig", env={**ci, **kube_env}).returncode == 0
    creds = temp / "atlas-ci"
    assert (creds / "ssh" / "atlas_satori").read_text().strip() == KEY
    assert TOKEN in (creds / "kubeconfig").read_text()
    assert list(home.iterdir()) == []
    exported = github_env.read_text()
    assert f"KUBECONFIG={creds / 'kubeconfig'}" in exported
    assert f"ANSIBLE_SSH_ARGS=-F {creds / 'ssh' / 'config'}" in exported
    p = make("ci-clean", env=ci)
    assert p.returncode == 0 and not creds.exists()
    assert make("ci-clean", env={"HOME": str(home)}).returncode != 0  # outside CI it refuses


def test_injected_secrets_are_refused_before_any_file_is_written(tmp_path: Path):
    """A newline in SSH_USER would add a ProxyCommand to the ssh config; a quote and a
    newline in OPENSHIFT_SERVER would add insecure-skip-tls-verify to the kubeconfig."""
    hosts = "satori-login-001.mit.edu ssh-ed25519 AAAAC3Nza"
    bad_ssh = [
        {"SSH_USER": "atlasci\nProxyCommand sh -c 'touch /tmp/pwned'"},
        {"SSH_USER": "atlasci", "SSH_KNOWN_HOSTS": hosts + "\r\nHost *\n"},
    ]
    for extra in bad_ssh:
        env = {"SSH_KEY": KEY, "SSH_KNOWN_HOSTS": hosts, **extra}
        p = make("ci-ssh", "ENV=satori", f"HOME={tmp_path}", env=env)
        assert p.returncode != 0 and "ci-values:" in p.stderr, p.stderr
        assert "ProxyCommand" not in p.stderr  # the value is never echoed
        assert not (tmp_path / ".ssh" / "config").exists() and not (tmp_path / ".ssh" / "atlas_satori").exists()
    server = 'https://api.moc.example:6443"\n    insecure-skip-tls-verify: true\n    x: "'
    for extra in (
        {"OPENSHIFT_SERVER": server},
        {"OPENSHIFT_SERVER": "https://api.moc.example:6443", "OPENSHIFT_TOKEN": 'a"\nb'},
    ):
        p = make("ci-kubeconfig", f"KUBECONFIG_OUT={tmp_path / 'k'}", env={"OPENSHIFT_TOKEN": TOKEN, **extra})
        assert p.returncode != 0 and "ci-values:" in p.stderr and "OPENSHIFT_" in p.stderr
        assert not (tmp_path / "k").exists()
