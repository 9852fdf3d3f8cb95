"""A smoke run writes train.jsonl exactly as the contract in workflows/biggan/README.md says."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch

from tests.workflows.biggan.conftest import events, last, run_workload
from workflows.biggan.config import config_sha256, resolve

pytestmark = pytest.mark.slow  # each test trains the smoke job in a subprocess

RUN_START = {"iteration", "resumed_from", "experiment", "config", "config_sha256", "device", "world_size", "seed"}
TRAIN = {"iteration", "images_seen", "images_per_s", "g_loss", "d_loss_real", "d_loss_fake", "wall_s"}
CHECKPOINT = {"iteration", "path", "seconds"}
RUN_STOP = {"iteration", "status", "g_sha256", "images_seen"}
WARMUP = {
    "iteration",
    "warmup_s",
    "setup_s",
    "first_iteration_s",
    "compile",
    "compile_mode",
    "compile_cache",
    "compile_s",
    "deterministic",
}


def _g_digest(bundle: Path) -> str:
    """SHA-256 of the bundle's G tensors, byte by byte in sorted-key order."""
    state = torch.load(bundle, map_location="cpu", weights_only=True)["G"]
    h = hashlib.sha256()
    for key in sorted(state):
        h.update(state[key].contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _check_types(evts: list[dict]) -> None:
    for e in evts:
        assert isinstance(e["time"], float)
        if e["event"] == "train":
            assert TRAIN <= e.keys(), e
            assert isinstance(e["iteration"], int) and isinstance(e["images_seen"], int)
            assert e["images_per_s"] > 0 and e["wall_s"] >= 0
            for k in ("g_loss", "d_loss_real", "d_loss_fake"):
                assert isinstance(e[k], float)


def test_smoke_run_writes_the_contract(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc = run_workload(run_dir, "train.sample_grid=true", "eval.at_end=true")
    assert proc.returncode == 0, proc.stderr
    evts = events(run_dir)
    names = [e["event"] for e in evts]
    assert names[0] == "run_start" and names[-1] == "run_stop"
    assert names.count("run_start") == names.count("run_stop") == 1

    start = evts[0]
    assert RUN_START <= start.keys()
    assert start["iteration"] == 0 and start["resumed_from"] is None
    assert start["experiment"] == "smoke" and start["world_size"] == 1 and start["device"] == "cpu"
    flat = resolve("smoke", ["train.sample_grid=true", "eval.at_end=true"])
    assert start["config_sha256"] == config_sha256(flat)
    assert start["config"]["train"]["max_iters"] == 20 and start["config"]["model"]["resolution"] == 32

    warm = last(evts, "warmup")  # start-up: process start -> first finished iteration
    assert names.count("warmup") == 1 and names.index("warmup") == 1 and warm["iteration"] == 1
    assert WARMUP <= warm.keys()
    assert 0 <= warm["setup_s"] <= warm["warmup_s"] and warm["first_iteration_s"] >= 0
    assert warm["time"] - warm["warmup_s"] < start["time"]  # counted from before run_start
    assert warm["compile"] is False and warm["compile_cache"] is None and warm["deterministic"] is True

    trains = [e for e in evts if e["event"] == "train"]
    assert [e["iteration"] for e in trains] == [5, 10, 15, 20]  # log_every 5
    # images_seen = iterations x d_steps x batch (real images fed to D)
    assert [e["images_seen"] for e in trains] == [i * 2 * 8 for i in (5, 10, 15, 20)]
    _check_types(evts)

    ckpts = [e for e in evts if e["event"] == "checkpoint"]
    assert [c["iteration"] for c in ckpts] == [10, 20]
    for c in ckpts:
        assert CHECKPOINT <= c.keys() and c["seconds"] >= 0
    # each bundle with its digest beside it (checked on load)
    kept = sorted(p.name for p in (run_dir / "checkpoints").iterdir())
    assert kept == ["ckpt-00000010.pt", "ckpt-00000010.pt.sha256", "ckpt-00000020.pt", "ckpt-00000020.pt.sha256"]
    assert (run_dir / ckpts[-1]["path"]).is_file()

    ev = last(evts, "eval")
    assert ev["iteration"] == 20 and "inception_weights" in ev["skipped"]

    stop = evts[-1]
    assert RUN_STOP <= stop.keys()
    assert stop["status"] == "success" and stop["iteration"] == 20 and stop["images_seen"] == 320
    # g_sha256 is the digest of the G weights saved at that iteration (README: raw bytes of
    # G's state_dict tensors in sorted-key order), computed here independently of the workload
    assert stop["g_sha256"] == _g_digest(run_dir / ckpts[-1]["path"])
    assert _g_digest(run_dir / ckpts[0]["path"]) != stop["g_sha256"]  # it changes with the weights
    assert stop["time"] >= start["time"]
    assert (run_dir / "samples.png").stat().st_size > 0
    assert "run_stop success" in proc.stderr  # plain lines when stderr is not a terminal

    # Same command again in the same DIR: resumes at the end, trains nothing, same weights.
    again = run_workload(run_dir, "train.sample_grid=true", "eval.at_end=true")
    assert again.returncode == 0, again.stderr
    evts2 = events(run_dir)
    assert [e["event"] for e in evts2].count("run_start") == 2
    second_start = [e for e in evts2 if e["event"] == "run_start"][1]
    assert second_start["iteration"] == 20 and second_start["resumed_from"] == "ckpt-00000020.pt"
    assert evts2[-1]["g_sha256"] == stop["g_sha256"] and evts2[-1]["status"] == "success"


def test_same_job_twice_gives_the_same_weights(tmp_path: Path) -> None:
    """Determinism on CPU: the base of comparing environments by g_sha256."""
    a = run_workload(tmp_path / "a", "train.max_iters=6", "train.sample_grid=false")
    b = run_workload(
        tmp_path / "b", "train.max_iters=6", "train.sample_grid=false", "data.workers=1", "train.log_every=2"
    )
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    sa, sb = events(tmp_path / "a")[-1], events(tmp_path / "b")[-1]
    assert sa["g_sha256"] == sb["g_sha256"]
    # runtime-only keys (workers, log cadence) do not change the job's identity
    assert events(tmp_path / "a")[0]["config_sha256"] == events(tmp_path / "b")[0]["config_sha256"]


def test_max_seconds_stops_early_and_resumably(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc = run_workload(run_dir, "train.max_iters=100000", "train.max_seconds=1.0")
    assert proc.returncode == 0, proc.stderr
    stop = events(run_dir)[-1]
    assert stop["status"] == "max_seconds" and 0 < stop["iteration"] < 100000
    ckpts = [e for e in events(run_dir) if e["event"] == "checkpoint"]
    assert ckpts[-1]["iteration"] == stop["iteration"]


def test_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    """On a terminal (a real pseudo-terminal here) stderr shows a tqdm bar, not plain lines."""
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import termios

    from tests.workflows.biggan.conftest import REPO, env, workload_cmd

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(
        workload_cmd(tmp_path / "run", "train.max_iters=4", "train.log_every=2"),
        cwd=REPO,
        env=env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=slave,
    )
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the terminal closes when the process ends
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(timeout=120) == 0
    text = out.decode(errors="replace")
    assert "4/4 [" in text and "it/s" in text  # tqdm's counter and rate
    assert "biggan: iter " not in text  # the plain lines are for non-terminals
