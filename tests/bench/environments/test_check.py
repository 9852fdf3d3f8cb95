"""bench/environments/check.py: the keys every kind shares, checked with file and key named."""

from __future__ import annotations

from bench.environments.check import check_ci, check_common


def test_common_keys():
    assert check_common({"kind": "local", "local": True, "hardware": {"gpus_per_node": 4}}, "f") == []
    problems = check_common({"local": "yes", "hardware": {"gpus_per_node": -1, "memory_gb": "lots"}}, "f")
    assert any("local must be true or false" in p for p in problems)
    assert any("hardware.gpus_per_node must be >= 0" in p for p in problems)
    assert any("hardware.memory_gb must be" in p for p in problems)


def test_ci_runner_labels():
    assert check_ci(None, "f") == [] and check_ci({"runs_on": "ubuntu-24.04"}, "f") == []
    assert check_ci({"runs_on": ["self-hosted", "satori"]}, "f") == []
    assert "ci.runs_on must be" in check_ci({"runs_on": []}, "f")[0]
    assert "ci must be a mapping" in check_ci({"runner": "x"}, "f")[0]
