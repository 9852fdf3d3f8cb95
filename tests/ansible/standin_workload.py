"""TEST DOUBLE of the BigGAN workload (`python -m workflows.biggan`), stdlib only.

Copied as `workflows/biggan/__main__.py` into a throw-away git repository so the Slurm
and Ansible mechanics (submit, fail, cancel, checkpoint on USR1 and resume) can be
tested in seconds. It keeps the workload's contract (workflows/biggan/README.md):
train.jsonl events (run_start, warmup, train, checkpoint, run_stop; the run timeline's
marks come from them), exit 0 / 1 / 2 / 75, SIGUSR1 or SIGTERM -> checkpoint + exit 75,
a second start in the same --run-dir resumes. Knobs come as --set standin.KEY=VALUE:
  standin.iters   iterations to reach (one every 0.1 s; default 20)
  standin.exit    exit with this code at the end instead of 0
"""

import argparse
import hashlib
import json
import os
import signal
import sys
import time

parser = argparse.ArgumentParser()
parser.add_argument("--experiment", required=True)
parser.add_argument("--run-dir", required=True)
parser.add_argument("--set", action="append", default=[])
args = parser.parse_args()
knobs = dict(item.split("=", 1) for item in args.set if "=" in item)
iters = int(knobs.get("standin.iters", 20))
exit_code = int(knobs.get("standin.exit", 0))
os.makedirs(args.run_dir, exist_ok=True)
log_path = os.path.join(args.run_dir, "train.jsonl")
ckpt = os.path.join(args.run_dir, "checkpoint.json")


def log(event, **fields):
    with open(log_path, "a") as fh:
        fh.write(json.dumps({"event": event, "time": time.time(), **fields}) + "\n")


process_start = time.time()
start = json.load(open(ckpt))["iteration"] if os.path.exists(ckpt) else 0
stop = {"signal": None}
for sig in (signal.SIGUSR1, signal.SIGTERM):
    signal.signal(sig, lambda s, _f: stop.update(signal=s))
config = {"experiment": args.experiment, "overrides": sorted(args.set)}  # what the workload resolves
log(
    "run_start",
    iteration=start,
    resumed_from="checkpoint.json" if start else None,
    experiment=args.experiment,
    config=config,
    config_sha256=hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest(),
    overrides=args.set,
    world_size=1,
    gpus={k: os.environ.get(k) for k in ("CUDA_VISIBLE_DEVICES", "SLURM_JOB_GPUS")},
)
run_start = time.time()
i = start
last_line = (run_start, start)


def train_line():
    """A `train` line as the workload writes one (every 10 iterations and at the segment's end)."""
    global last_line
    now = time.time()
    rate = (i - last_line[1]) / max(now - last_line[0], 1e-6)
    log("train", iteration=i, images_seen=i, images_per_s=round(rate, 3), g_loss=None, d_loss_real=None,
        d_loss_fake=None, wall_s=round(now - run_start, 3))  # fmt: skip
    last_line = (now, i)


while i < iters:
    if stop["signal"] is not None:
        if i > last_line[1]:
            train_line()
        with open(ckpt + ".tmp", "w") as fh:
            json.dump({"iteration": i}, fh)
        os.replace(ckpt + ".tmp", ckpt)
        log("checkpoint", iteration=i, path="checkpoint.json", seconds=0.0)
        log("run_stop", iteration=i, status="preempted", g_sha256=None, images_seen=i)
        sys.exit(75)
    time.sleep(0.1)
    i += 1
    if i == start + 1:  # the first iteration of this process finished
        now = time.time()
        log("warmup", iteration=i, warmup_s=round(now - process_start, 3), setup_s=round(run_start - process_start, 3))
    if i % 10 == 0:  # progress a test can wait for (bench ignores events it does not know)
        train_line()
        log("heartbeat", iteration=i)
if i > last_line[1]:
    train_line()
g = hashlib.sha256(f"standin-{iters}".encode()).hexdigest()
status = "success" if exit_code == 0 else "failed"
log("run_stop", iteration=i, status=status, g_sha256=g, images_seen=i)
print(f"standin: {status} at iteration {i}", flush=True)
sys.exit(exit_code)
