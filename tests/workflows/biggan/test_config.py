"""Bad experiments, keys and values are errors that name them; the CLI exits 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.workflows.biggan.conftest import REPO, env
from workflows.biggan import config
from workflows.biggan.__main__ import main
from workflows.biggan.errors import WorkloadConfigError


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["train.batchsize=8"], "unknown key 'train.batchsize' (did you mean 'train.batch_size'?)"),
        (["batch_size=8"], "did you mean 'train.batch_size'?"),
        (["model.gch=8"], "did you mean 'model.g_ch'?"),
        (["train.batch_size=-4"], "train.batch_size=-4 must be > 0"),
        (["model.resolution=48"], "model.resolution=48 is not supported (choose one of: 32, 64, 128)"),
        (["model.g_ch=wide"], "model.g_ch must be an integer, got 'wide'"),
        (["train.ema=maybe"], "train.ema must be true or false"),
        (["model.arch=stylegan"], "model.arch='stylegan' is not supported"),
        (["model.attention=48"], "model.attention=48 must be 0 or a power-of-two resolution"),
        (["data.source=hdf5"], "data.source=hdf5 needs data.path"),
        (["train.max_iters"], "expected KEY=VALUE"),
        (["train.seed=null"], "train.seed may not be null"),
    ],
)
def test_bad_overrides_name_the_key(overrides: list[str], message: str) -> None:
    with pytest.raises(WorkloadConfigError) as info:
        config.resolve("smoke", overrides)
    assert message in str(info.value)


def test_unknown_experiment_lists_the_known_ones() -> None:
    with pytest.raises(
        WorkloadConfigError,
        match=r"unknown experiment 'smok' \(known: cifar, imagenet128, "
        r"imagenet128-deep, smoke",
    ):
        config.resolve("smok")


def test_presets_resolve_and_carry_the_reference_settings() -> None:
    cifar = config.resolve("cifar")
    assert (
        cifar["train.batch_size"],
        cifar["train.d_steps"],
        cifar["model.g_ch"],
        cifar["model.attention"],
        cifar["train.g_lr"],
        cifar["train.d_lr"],
        cifar["train.ema_start"],
    ) == (50, 4, 64, 0, 2e-4, 2e-4, 1000)
    big = config.resolve("imagenet128")
    assert (
        big["train.batch_size"],
        big["train.accumulate"],
        big["model.g_ch"],
        big["model.attention"],
        big["train.g_lr"],
        big["train.d_lr"],
    ) == (256, 8, 96, 64, 1e-4, 4e-4)
    deep = config.resolve("imagenet128-deep")
    assert deep["model.arch"] == "biggan-deep" and deep["model.g_ch"] == 128
    assert config.resolve("smoke", ["train.max_seconds=2.5"])["train.max_seconds"] == 2.5
    assert config.resolve("smoke", ["train.g_lr=1e-4"])["train.g_lr"] == 1e-4  # YAML 1.1 reads this as a string


def test_hash_ignores_runtime_keys_only() -> None:
    base = config.config_sha256(config.resolve("smoke"))
    runtime = config.resolve(
        "smoke",
        [
            "runtime.device=cpu",
            "data.workers=4",
            "train.log_every=1",
            "train.checkpoint_every=7",
            "runtime.compile=true",
            "train.max_seconds=60",
        ],
    )
    assert config.config_sha256(runtime) == base
    assert config.config_sha256(config.resolve("smoke", ["model.g_ch=8"])) != base
    assert config.config_sha256(config.resolve("smoke", ["train.max_iters=21"])) != base
    assert config.RUNTIME_KEYS <= config.SETTINGS.keys()


def test_preset_file_with_a_bad_key_names_file_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "mine.yaml"
    bad.write_text("model:\n  resolutoin: 64\n")
    with pytest.raises(
        WorkloadConfigError, match=r"mine.yaml.*unknown key 'model.resolutoin' \(did you mean 'model.resolution'\?\)"
    ):
        config.resolve(str(bad))


def test_cli_prints_the_error_and_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["--experiment", "nope", "--run-dir", str(tmp_path)]) == 2
    assert "unknown experiment 'nope'" in capsys.readouterr().err
    assert main(["--experiment", "smoke", "--run-dir", str(tmp_path), "--set", "train.batch_size=-1"]) == 2
    assert "train.batch_size=-1 must be > 0" in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA; the error is for machines without")
def test_asking_for_cuda_without_a_gpu_is_a_config_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["--experiment", "smoke", "--run-dir", str(tmp_path), "--set", "runtime.device=cuda"]) == 2
    assert "runtime.device=cuda but PyTorch sees no CUDA device" in capsys.readouterr().err


def test_real_process_exit_code_2_and_no_traceback(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "workflows.biggan",
            "--experiment",
            "smoke",
            "--run-dir",
            str(tmp_path),
            "--set",
            "model.resolution=256",
        ],
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "model.resolution=256 is not supported" in proc.stderr and "Traceback" not in proc.stderr


def test_help_and_key_listing(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "--experiment NAME" in out and "prepare-data" in out and "75 preempted" in out
    assert main(["--list-keys"]) == 0
    listing = capsys.readouterr().out
    assert "train.batch_size = 50" in listing and "[runtime-only]" in listing


def test_run_dir_that_is_a_file_is_a_config_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    assert main(["--experiment", "smoke", "--run-dir", str(not_a_dir)]) == 2
    assert "is not a writable directory" in capsys.readouterr().err


def test_list_keys_with_an_experiment_shows_its_values() -> None:
    """`--list-keys --experiment X` shows X's values, with the default where X changes it."""
    import subprocess
    import sys

    p = subprocess.run(
        [sys.executable, "-m", "workflows.biggan", "--list-keys", "--experiment", "imagenet128"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert "model.resolution = 128 (default 32)" in p.stdout
    plain = subprocess.run(
        [sys.executable, "-m", "workflows.biggan", "--list-keys"], capture_output=True, text=True, timeout=120
    ).stdout
    assert "model.resolution = 32 {32, 64, 128}" in plain and "(default" not in plain
