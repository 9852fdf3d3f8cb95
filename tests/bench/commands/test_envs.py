"""`bench envs`: the environment list people read and CI's matrix is built from."""

from __future__ import annotations

import json

import pytest

from bench.cli import main


def test_json_lists_each_environment_with_what_ci_needs(capsys):
    assert main(["envs", "--json"]) == 0
    entries = {e["env"]: e for e in json.loads(capsys.readouterr().out)}
    assert {"local", "moc", "satori"} <= set(entries)
    assert entries["moc"]["ci_setup"] == "ci-kubeconfig" and entries["moc"]["extras"] == "openshift"
    assert entries["satori"]["runs_on"] == ["self-hosted", "satori"] and not entries["satori"]["local"]
    assert entries["local"]["local"] is True and entries["local"]["runs_on"] == ["ubuntu-24.04"]


def test_remote_only_field_and_host(capsys):
    assert main(["envs", "--remote", "--only", "satori,moc", "--field", "env"]) == 0
    assert capsys.readouterr().out.split() == ["moc", "satori"]
    assert main(["envs", "--remote", "--only", ""]) == 0 and capsys.readouterr().out == ""
    assert main(["envs", "--host", "satori"]) == 0
    assert capsys.readouterr().out.strip() == "satori-login-001.mit.edu"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--only", "nowhere"], "unknown environment(s) nowhere"),
        (["--host", "local"], "has no login host"),
        (["--field", "colour"], "--field colour: not a field"),
    ],
)
def test_mistakes_are_named(args, message, capsys):
    assert main(["envs", *args]) == 2
    assert message in capsys.readouterr().err
