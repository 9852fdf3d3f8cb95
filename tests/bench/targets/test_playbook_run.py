"""Children die with `bench`: a SIGKILLed bench takes its real ansible-playbook (and what the
playbook started) along, its private folder goes at the next call, and a hung Slurm command
ends in one line that names the timeout and the fix."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from bench.errors import ConfigError
from bench.targets.playbook_run import PRIVATE_PREFIX, command_timeout_s, private_dir, sweep_private_dirs
from tests.killed_parent import alive

REPO = Path(__file__).resolve().parents[3]
MODULE = REPO / "ansible" / "roles" / "atlas" / "library" / "atlas_slurm_jobs.py"


def _descendants(pid: int) -> set[int]:
    found: set[int] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                kids = {int(k) for k in (task / "children").read_text().split()}
            except OSError:
                continue
            todo.extend(kids - found)
            found |= kids
    return found


def _wait_for(predicate, deadline_s: float, what: str) -> None:
    deadline = time.monotonic() + deadline_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {deadline_s} s: {what}")
        time.sleep(0.1)


def test_a_killed_bench_takes_its_playbook_and_its_tasks_along(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    pidfile = tmp_path / "task.pid"
    (project / "sleep.yml").write_text(
        textwrap.dedent(
            f"""\
            - hosts: localhost
              gather_facts: false
              tasks:
                - name: A task that outlives any collect
                  ansible.builtin.shell: echo $$ > {pidfile}; exec sleep 300
            """
        )
    )
    (project / "hosts").write_text(f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    root = tmp_path / "tmp"
    root.mkdir()
    script = textwrap.dedent(
        f"""\
        import os, sys
        from pathlib import Path
        from bench.targets.playbook_run import run_playbook
        env = {{"PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"], "ANSIBLE_NOCOLOR": "1"}}
        run_playbook(Path({str(project)!r}), "sleep.yml", {str(project / "hosts")!r}, env, "{{}}\\n", 600,
                     root=Path({str(root)!r}))
        """
    )
    bench = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.DEVNULL)
    try:
        started = lambda: bench.poll() is not None or (pidfile.exists() and pidfile.read_text().strip())  # noqa: E731
        _wait_for(started, 180, "the playbook's task started")
        assert bench.poll() is None, "the playbook ended before its task started"
        task_pid = int(pidfile.read_text())
        children = _descendants(bench.pid)
        assert task_pid in children, "the task runs under bench's playbook"
        assert any(b"ansible-playbook" in Path(f"/proc/{p}/cmdline").read_bytes() for p in children if alive(p))
        os.kill(bench.pid, signal.SIGKILL)
        bench.wait()
        _wait_for(lambda: not any(alive(p) for p in children), 30, f"every child of bench gone ({children})")
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()
    left = [p for p in root.iterdir() if p.name.startswith(PRIVATE_PREFIX)]
    assert len(left) == 1, "the killed bench's private folder is still there"
    assert sweep_private_dirs(root) == left
    assert not left[0].exists()


def test_a_live_private_folder_is_kept_and_removed_after_use(tmp_path: Path) -> None:
    with private_dir(tmp_path) as folder:
        assert sweep_private_dirs(tmp_path) == [], "a folder whose bench lives stays"
        assert folder.exists()
    assert not folder.exists()


def _module(tmp_path: Path, sacct_body: str, timeout_s: int) -> dict:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "slurm-jobs.tsv").write_text("101\t1700000000\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "squeue").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "sacct").write_text(f"#!/bin/sh\n{sacct_body}\n")
    for tool in ("squeue", "sacct"):
        (bin_dir / tool).chmod(0o755)
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"run_dir": str(run_dir), "timeout_s": timeout_s}}))
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    command = [sys.executable, str(MODULE), str(args)]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    return json.loads(proc.stdout)


def test_a_hung_sacct_ends_in_one_line_naming_the_timeout(tmp_path: Path) -> None:
    out = _module(tmp_path, "exec sleep 300", timeout_s=1)
    assert out.get("failed") is True
    assert out["msg"].startswith("sacct did not answer in 1 s")
    assert "ATLAS_SLURM_TIMEOUT_S" in out["msg"] and "\n" not in out["msg"]


def test_a_quick_sacct_is_read_as_before(tmp_path: Path) -> None:
    out = _module(tmp_path, "echo '101|COMPLETED|0:0|1700000001|1700000002|1700000060|node1'", timeout_s=30)
    assert not out.get("failed"), out
    assert out["state"] == "COMPLETED" and out["finished"] is True


@pytest.mark.parametrize("text", ["0", "-3", "soon", "1e9"])
def test_a_bad_timeout_setting_is_one_clear_error(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setenv("ATLAS_SLURM_TIMEOUT_S", text)
    with pytest.raises(ConfigError, match="ATLAS_SLURM_TIMEOUT_S=.*set it to seconds"):
        command_timeout_s("ATLAS_SLURM_TIMEOUT_S", 60)
    monkeypatch.setenv("ATLAS_SLURM_TIMEOUT_S", "12")
    assert command_timeout_s("ATLAS_SLURM_TIMEOUT_S", 60) == 12.0


def test_a_hung_kubernetes_api_ends_in_one_line_naming_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("kubernetes")
    import socket

    import yaml

    from bench.environments.load import Environment
    from bench.errors import AtlasError
    from bench.targets import target_class
    from tests.bench.targets.test_kubernetes import env_folder

    silent = socket.socket()  # accepts connections (the kernel's backlog) and never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    try:
        kubeconfig = tmp_path / "kubeconfig"
        server = f"http://127.0.0.1:{silent.getsockname()[1]}"
        kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "hung",
                    "clusters": [{"name": "hung", "cluster": {"server": server}}],
                    "users": [{"name": "u", "user": {"token": "t"}}],
                    "contexts": [{"name": "hung", "context": {"cluster": "hung", "user": "u"}}],
                }
            )
        )
        folder = env_folder(tmp_path / "clusters")
        data = {**yaml.safe_load((folder / "env.yaml").read_text()), "kubeconfig": str(kubeconfig)}
        monkeypatch.setenv("ATLAS_KUBE_TIMEOUT_S", "1")
        target = target_class("kubernetes")(Environment("k8s", "kubernetes", folder, data))
        with pytest.raises(AtlasError) as caught:
            target.status("20261122t030000-01234567-k8s1")
    finally:
        silent.close()
    message = str(caught.value)
    assert message.startswith("k8s: the Kubernetes API did not answer GET /apis/batch/v1/namespaces/")
    assert "in 1 s" in message and "ATLAS_KUBE_TIMEOUT_S" in message and "\n" not in message


@pytest.fixture
def read_only(tmp_path: Path):
    where = tmp_path / "ro"
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a read-only tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_a_read_only_home_is_named_before_ansible_starts(
    tmp_path: Path, read_only: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bench.errors import AtlasError
    from bench.targets.playbook_run import run_playbook

    monkeypatch.setenv("HOME", str(read_only))
    monkeypatch.delenv("ANSIBLE_LOCAL_TEMP", raising=False)
    (tmp_path / "p.yml").write_text("- hosts: localhost\n  gather_facts: false\n  tasks: []\n")
    with pytest.raises(AtlasError) as caught:
        run_playbook(tmp_path, "p.yml", "localhost,", {}, "{}\n", 60, root=tmp_path)
    message = str(caught.value)
    assert message.startswith(f"HOME ({read_only}) is not writable (Read-only file system)")
    assert "ANSIBLE_LOCAL_TEMP" in message and "Slurm" not in message and "\n" not in message
    assert not list(tmp_path.glob("atlas-ansible-*")), "nothing started, no private folder"
    monkeypatch.setenv("ANSIBLE_LOCAL_TEMP", str(tmp_path / "ansible-tmp"))
    path = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    status, _ = run_playbook(tmp_path, "p.yml", "localhost,", path, "{}\n", 120, root=tmp_path)
    assert status == "successful", "with ANSIBLE_LOCAL_TEMP set, the playbook runs"
