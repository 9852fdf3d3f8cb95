"""tests/cpu_log.py counts each test's CPU, its children's included, and sums it up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.cpu_log import summary

REPO = Path(__file__).resolve().parents[1]

SUITE = """
import subprocess, sys, time


def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_own():
    burn(0.4)


def test_child():
    subprocess.run([sys.executable, "-c", "import time\\nend = time.process_time() + 0.4\\n"
                    "while time.process_time() < end: pass"], check=True)


def test_waits():
    time.sleep(0.4)
"""


def test_each_test_gets_its_own_and_its_childrens_cpu(tmp_path: Path) -> None:
    (tmp_path / "test_suite.py").write_text(SUITE)
    log = tmp_path / "cpu.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATLAS_TEST_CPU_LOG")}
    env.update(PYTHONPATH=str(REPO), ATLAS_TEST_CPU_LOG=str(log))
    args = ["-p", "tests.cpu_log", "-p", "no:cacheprovider", "-p", "no:xdist", "-q", "-o", "addopts="]
    proc = subprocess.run([sys.executable, "-m", "pytest", *args, "--rootdir", str(tmp_path), str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {r["test"].split("::")[1]: r for r in map(json.loads, log.read_text().splitlines())}
    assert set(rows) == {"test_own", "test_child", "test_waits"}
    assert rows["test_own"]["cpu_s"] >= 0.38 and rows["test_child"]["cpu_s"] >= 0.38  # a child's CPU counts
    assert rows["test_waits"]["cpu_s"] < 0.2 and rows["test_waits"]["wall_s"] >= 0.38  # waiting is not CPU
    text = summary(list(rows.values()), top=2)
    assert text.startswith("3 tests, ") and text.count("test_suite.py::") == 2 and text.endswith("test_suite.py")


def test_nothing_is_written_without_the_variable(tmp_path: Path) -> None:
    (tmp_path / "test_suite.py").write_text("def test_one():\n    pass\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATLAS_TEST_CPU_LOG")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.cpu_log", "-p", "no:cacheprovider", "-q",
                           "-o", "addopts=", "--rootdir", str(tmp_path), str(tmp_path)],
                          cwd=tmp_path, env={**env, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0 and sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["test_suite.py"]
