"""The job command, generated in one place: `bench record` wrapped around the workload.

Every launcher runs exactly this: the local target builds it with `job_command`; the
training image's entrypoint (Dockerfile, hence the container and OpenShift/Kubernetes
Jobs) and the Slurm batch script run `python -m bench.in_job.command`, which reads the run
from ATLAS_ENV, ATLAS_EXPERIMENT and ATLAS_RUN_DIR and execs the same command. So
"identical jobs" holds by construction: only paths and the launcher differ.

    python -m bench.in_job.command [--print] [--launcher "ARGS"] [-- WORKLOAD_ARGS ...]

`--launcher` goes between the workload's Python and its module (e.g. `-m
torch.distributed.run --standalone --nproc-per-node=4` for several GPUs); arguments
after `--` go to the workload (e.g. `--set train.max_iters=100`); `--print` prints the
command as JSON instead of running it.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Sequence

WORKLOAD_MODULE = "workflows.biggan"
JOB_VARIABLES = ("ATLAS_ENV", "ATLAS_EXPERIMENT", "ATLAS_RUN_DIR")


def workload_args(experiment: str, run_dir: str, overrides: Sequence[str] = ()) -> list[str]:
    """`-m workflows.biggan --experiment X --run-dir DIR [--set KEY=VALUE ...]`."""
    args = ["-m", WORKLOAD_MODULE, "--experiment", experiment, "--run-dir", run_dir]
    for item in overrides:
        args += ["--set", item]
    return args


def workload_command(
    experiment: str,
    run_dir: str,
    overrides: Sequence[str] = (),
    python: str = "python",
    launcher: Sequence[str] = (),
    extra: Sequence[str] = (),
) -> list[str]:
    """The workload under its launcher: `python [LAUNCHER] -m workflows.biggan ...`."""
    return [python, *launcher, *workload_args(experiment, run_dir, overrides), *extra]


def recorder_command(
    workload: Sequence[str], env_name: str, run_dir: str, python: str = "python", options: Sequence[str] = ()
) -> list[str]:
    """`python -m bench record [OPTIONS] --run-dir DIR --env ENV -- WORKLOAD...`: the recorder around it."""
    return [python, "-m", "bench", "record", *options, "--run-dir", run_dir, "--env", env_name, "--", *workload]


def job_command(
    env_name: str,
    experiment: str,
    run_dir: str,
    overrides: Sequence[str] = (),
    python: str = "python",
    launcher: Sequence[str] = (),
    extra: Sequence[str] = (),
    recorder_options: Sequence[str] = (),
    recorder_python: str | None = None,
) -> list[str]:
    """The one job command: workload -> launcher -> recorder, each wrapping the one inside.

    `recorder_python` (default: `python`) is what starts the recorder when that is not the
    workload's own Python: on Slurm with Singularity, `singularity exec ... python`."""
    workload = workload_command(experiment, run_dir, overrides, python, launcher, extra)
    return recorder_command(workload, env_name, run_dir, recorder_python or python, recorder_options)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    options = argv[: argv.index("--")] if "--" in argv else argv
    show = "--print" in options
    launcher: list[str] = []
    if "--launcher" in options:
        i = options.index("--launcher")
        if i + 1 >= len(options):
            print("bench.in_job.command: --launcher needs its arguments as one word", file=sys.stderr)
            return 2
        launcher = shlex.split(options[i + 1])
    missing = [name for name in JOB_VARIABLES if not os.environ.get(name)]
    if missing:
        print(f"bench.in_job.command: set {', '.join(missing)} (the job's environment, run folder)", file=sys.stderr)
        return 2
    env = os.environ
    cmd = job_command(
        env["ATLAS_ENV"], env["ATLAS_EXPERIMENT"], env["ATLAS_RUN_DIR"], (), sys.executable, launcher, extra
    )
    if show:
        print(json.dumps(cmd))
        return 0
    sys.stdout.flush()
    os.execv(cmd[0], cmd)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
