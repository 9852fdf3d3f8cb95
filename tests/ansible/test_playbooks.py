"""The playbooks as plain `ansible-playbook` runs them: render the batch script (no Slurm
needed) for Satori's settings (conda, Singularity, multi-node) and check it with `bash -n`
and by running it with a stand-in Python that prints the command it was given."""

from __future__ import annotations

import copy
import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bench.errors import ConfigError
from bench.targets.base import JobSpec
from bench.targets.launch import recorded_launch
from bench.targets.slurm import ansible_variables, extravars_yaml
from bench.targets.slurm_command import job_variables

REPO = Path(__file__).resolve().parents[2]
SATORI = yaml.safe_load((REPO / "clusters" / "satori" / "env.yaml").read_text())
COMMIT = "0123456789abcdef0123456789abcdef01234567"
OPTIONS = ("--kind", "slurm", "--scheduler", "slurm")  # SlurmTarget.recorder_options()


def render(tmp_path: Path, env: dict, **run: object) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run ansible/render.yml against this machine; return the process and the script path."""
    root = tmp_path / "cluster"
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(
        yaml.safe_dump(
            {
                "slurm_login": {
                    "hosts": {"here": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}
                }
            }
        )
    )
    variables = ansible_variables("satori", env)  # exactly what the slurm target passes: atlas_* only
    variables.update(
        {
            "atlas_env_name": "satori",
            "atlas_run_id": "r1",
            "atlas_commit": COMMIT,
            "atlas_experiment": "smoke",
            "atlas_overrides": [],
            "atlas_root": str(root),
        }
    )
    sections = {"slurm": "atlas_env_slurm", "runtime": "atlas_env_runtime"}
    variables.update({sections.get(k, k): v for k, v in run.items()})
    if isinstance(variables["atlas_env_slurm"], dict):  # the job's command, as the slurm target renders it
        try:
            job = JobSpec(str(variables["atlas_run_id"]), "smoke", COMMIT, tuple(variables["atlas_overrides"]))
        except ConfigError:  # bench refuses it first; the playbook must refuse it on its own too
            job = JobSpec("r1", "smoke", COMMIT, tuple(variables["atlas_overrides"]))
        slurm, hardware = variables["atlas_env_slurm"], variables["atlas_env_hardware"]
        variables.update(job_variables(str(variables["atlas_env_name"]), job, slurm, hardware, OPTIONS))
    extra = tmp_path / "extravars.yml"
    extra.write_text(extravars_yaml(variables))  # exactly what the slurm target hands ansible-runner
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            str(inventory),
            "-e",
            f"@{extra}",
            str(REPO / "ansible" / "render.yml"),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "ANSIBLE_NOCOLOR": "1", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"},
    )
    return proc, root / "runs" / str(variables["atlas_run_id"]) / "job.sbatch"


def satori(**changes: object) -> dict:
    env = copy.deepcopy(SATORI)
    for key, value in changes.items():
        section, _, name = key.partition("__")
        env[section][name] = value
    return env


@pytest.mark.slow
def test_satori_single_node_conda_script(tmp_path: Path) -> None:
    proc, script = render(tmp_path, satori())
    assert proc.returncode == 0, proc.stdout
    text = script.read_text()
    for line in (
        "#SBATCH --partition=sched_system_all",
        "#SBATCH --gres=gpu:4",
        "#SBATCH --exclusive",
        "#SBATCH --time=12:00:00",
        "#SBATCH --mem=0",
        "#SBATCH --signal=B:USR1@120",
        "#SBATCH --nodes=1",
        "module load cuda/10.1",
        "conda activate atlas-opence",
        "export ATLAS_DATA_DIR=/data/ImageNet/ILSVRC2012",
        f"export ATLAS_GIT_SHA={COMMIT}",
        "--standalone --nproc-per-node=4",
        '--dependency="afterany:$SLURM_JOB_ID"',
    ):
        assert line in text, line
    assert "srun" not in text
    subprocess.run(["bash", "-n", str(script)], check=True)
    source = json.loads((script.parent / "source.json").read_text())
    assert source["commit"] == COMMIT and source["method"] == "git archive"


def test_satori_multi_node_script_runs_one_torchrun_and_sampler_per_node(tmp_path: Path) -> None:
    proc, script = render(tmp_path, satori(slurm__nodes=4))
    assert proc.returncode == 0, proc.stdout
    text = script.read_text()
    assert "#SBATCH --nodes=4" in text and "#SBATCH --ntasks-per-node=1" in text
    assert 'HEAD_NODE="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)"' in text
    assert "RDZV_PORT=29500" in text
    launch = text[text.index("srun ") : text.index("child=$!")]
    assert "srun --nodes=4 --ntasks-per-node=1" in launch
    # The job command (bench record, the sampler) runs inside srun, so once on every node,
    # around torchrun: the line bench/targets/slurm_command.py rendered, as it is.
    assert launch.index('"${PY[@]}" -m bench record') < launch.index("-m torch.distributed.run")
    assert "--nnodes=4 --nproc-per-node=4" in launch
    assert '--rdzv-endpoint="$HEAD_NODE":"$RDZV_PORT"' in launch and '--rdzv-id="$SLURM_JOB_ID"' in launch
    subprocess.run(["bash", "-n", str(script)], check=True)


@pytest.mark.slow
def test_satori_singularity_runtime(tmp_path: Path) -> None:
    proc, script = render(tmp_path, satori(runtime__mode="singularity"))
    assert proc.returncode == 0, proc.stdout
    text = script.read_text()
    assert (
        'PY=(singularity exec --nv --bind /data/ImageNet/ILSVRC2012 --bind "$RUN_DIR" '
        '/nobackup/users/atlas/atlas-ppc64le.sif "$PYTHON")'
    ) in text
    assert "PYTHON=python" in text  # the image's Python runs the workload too
    assert "conda activate" not in text
    subprocess.run(["bash", "-n", str(script)], check=True)


@pytest.mark.slow
def test_rendered_command_is_recorded_command_and_hostile_values_stay_text(tmp_path: Path) -> None:
    """Run the rendered script (outside Slurm) with a Python that prints its argv."""
    tag = secrets.token_hex(4)
    canaries = [Path(f"/tmp/atlas-pwned-{tag}-{i}") for i in range(5)]
    env_name = f"satori; touch {canaries[0]} $(touch {canaries[1]})"
    overrides = [
        f"a=x; touch {canaries[2]}",
        f"b=$(touch {canaries[3]})`id`",
        f"c={{{{ lookup('pipe', 'touch {canaries[4]}') }}}}",
        'd=it\'s "q"\n#SBATCH --wrap=x\\',
    ]
    printer = tmp_path / "print-argv"
    # A Python that prints the job command it was started with (anything else it runs).
    printer.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        "if sys.argv[1:4] != ['-m', 'bench', 'record']:\n"
        f"    os.chdir({str(REPO)!r}); os.execv(sys.executable, [sys.executable, *sys.argv[1:]])\n"
        "print('ARGV ' + json.dumps(sys.argv))\n"
    )
    printer.chmod(0o755)
    env = satori(runtime__mode="venv", runtime__python=str(printer), runtime__modules=[], slurm__gpus_per_node=0)
    proc, script = render(tmp_path, env, atlas_env_name=env_name, atlas_overrides=overrides)
    assert proc.returncode == 0, proc.stdout
    text = script.read_text()
    assert not [line for line in text.splitlines() if line.startswith("#SBATCH --wrap")]
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    for tool in ("scontrol", "sbatch", "srun"):  # no Slurm here: these must not be needed
        (fake_bin / tool).write_text("#!/bin/sh\nexit 0\n")
        (fake_bin / tool).chmod(0o755)
    run = subprocess.run(
        ["bash", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": f"{fake_bin}:/usr/bin:/bin", "SLURM_JOB_ID": "7", "SLURM_JOB_NUM_NODES": "1"},
    )
    assert run.returncode == 0, run.stderr
    argv = json.loads(next(line for line in run.stdout.splitlines() if line.startswith("ARGV "))[5:])
    run_dir = str(tmp_path / "cluster" / "runs" / "r1")
    job = JobSpec(run_id="r1", experiment="smoke", commit=COMMIT, overrides=tuple(overrides))
    assert argv == recorded_launch(env_name, job, run_dir, python=str(printer), recorder_options=OPTIONS)
    assert [c for c in canaries if c.exists()] == []


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"atlas_run_id": "r1; touch /tmp/x"}, "atlas_run_id"),
        ({"atlas_commit": "main"}, "atlas_commit"),
        ({"atlas_experiment": "$(id)"}, "atlas_experiment"),
        ({"slurm": {**SATORI["slurm"], "partition": "a b"}}, "bad `slurm:` settings"),
        ({"slurm": {**SATORI["slurm"], "time_limit": "12:00:00\n#SBATCH --wrap=id"}}, "bad `slurm:` settings"),
        ({"runtime": {"mode": "docker"}}, "bad `runtime:` settings"),
    ],
)
def test_bad_values_are_refused_before_anything_is_rendered(tmp_path: Path, bad: dict, message: str) -> None:
    proc, script = render(tmp_path, satori(), **bad)
    assert proc.returncode != 0
    assert message in proc.stdout
    assert not script.exists()


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("ansible-lint", path=str(Path(sys.executable).parent)) is None,
    reason="ansible-lint is not installed in this venv (pip install ansible-lint, dev extra)",
)
def test_ansible_lint_is_clean() -> None:
    lint = str(Path(sys.executable).parent / "ansible-lint")
    proc = subprocess.run(
        [lint, "--offline", "--nocolor", "ansible/"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "status, age_s, launcher_exit, script_exit, resubmits",
    [
        ("preempted", 0, 1, 75, True),  # torchrun exits 1 after its workers checkpointed
        ("success", 0, 138, 0, False),  # a late signal hit the recorder after the work was done
        ("preempted", 3600, 1, 1, False),  # a stale line from an earlier job decides nothing
    ],
)
def test_the_workloads_last_word_decides_the_outcome(
    tmp_path: Path, status: str, age_s: int, launcher_exit: int, script_exit: int, resubmits: bool
) -> None:
    """Several processes per node go through torchrun, which passes TERM (not USR1) on; the
    launcher's exit code can hide the workload's outcome, which train.jsonl states."""
    stand_in = tmp_path / "python-stand-in"
    stand_in.write_text(
        f"#!{sys.executable}\n"
        + f'''import json, os, sys, time
if sys.argv[1:3] == ["-m", "bench.in_job.job_exit"]:  # the exit rule runs for real
    os.chdir({str(REPO)!r}); os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
run_dir = sys.argv[sys.argv.index("--run-dir") + 1]  # the job command's run folder
with open(run_dir + "/train.jsonl", "a") as fh:
    fh.write(json.dumps({{"event": "run_stop", "time": time.time() - {age_s}, "iteration": 5,
                         "status": "{status}"}}) + "\\n")
sys.exit({launcher_exit})
'''
    )
    stand_in.chmod(0o755)
    env = satori(runtime__mode="venv", runtime__python=str(stand_in), runtime__modules=[], slurm__gpus_per_node=2)
    proc, script = render(tmp_path, env)
    assert proc.returncode == 0, proc.stdout
    text = script.read_text()
    assert "WARN_SIGNAL=TERM" in text and "--standalone --nproc-per-node=2" in text
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    calls = tmp_path / "sbatch-calls"
    (fake_bin / "sbatch").write_text(f'#!/bin/sh\necho "$@" >> {calls}\necho 8\n')
    (fake_bin / "scontrol").write_text("#!/bin/sh\nexit 0\n")
    for tool in ("sbatch", "scontrol"):
        (fake_bin / tool).chmod(0o755)
    run = subprocess.run(
        ["bash", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": f"{fake_bin}:/usr/bin:/bin", "SLURM_JOB_ID": "7", "SLURM_JOB_NUM_NODES": "1"},
    )
    assert run.returncode == script_exit, run.stdout + run.stderr
    assert calls.exists() == resubmits
    if resubmits:
        assert "--dependency=afterany:7" in calls.read_text()


@pytest.mark.slow
def test_one_process_per_node_gets_the_warning_as_usr1(tmp_path: Path) -> None:
    proc, script = render(tmp_path, satori(slurm__gpus_per_node=1))
    assert proc.returncode == 0, proc.stdout
    assert "WARN_SIGNAL=USR1" in script.read_text()
