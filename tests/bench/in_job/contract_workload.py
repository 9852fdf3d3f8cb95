"""A stand-in workload for recorder tests: writes train.jsonl per the workload contract
(workflows/biggan/README.md) and reacts to signals like the real one (exit 75).

Usage: python contract_workload.py RUN_DIR [--iters N] [--sleep S] [--exit CODE]
       [--ready FILE] [--burn] [--hold FILE]
On SIGTERM/SIGUSR1/SIGINT it writes the signal's name to RUN_DIR/got-signal, logs
run_stop status "preempted" and exits 75. With --hold it waits, after its last line, until
FILE exists before it exits (a test can then hold the recorder still first).
"""

import argparse
import hashlib
import json
import os
import signal
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("run_dir")
p.add_argument("--iters", type=int, default=5)
p.add_argument("--sleep", type=float, default=0.05)
p.add_argument("--exit", type=int, default=0)
p.add_argument("--ready", default=None)
p.add_argument("--burn", action="store_true", help="spin the CPU instead of sleeping")
p.add_argument("--hold", default=None)
a = p.parse_args()
os.makedirs(a.run_dir, exist_ok=True)
log = open(os.path.join(a.run_dir, "train.jsonl"), "a")
config = {"experiment": "contract", "iters": a.iters}
sha = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()
state = {"it": 0, "seen": 0}


def emit(**event):
    event.setdefault("time", time.time())
    log.write(json.dumps(event) + "\n")
    log.flush()


def on_signal(signum, _frame):
    with open(os.path.join(a.run_dir, "got-signal"), "a") as fh:
        fh.write(signal.Signals(signum).name + "\n")
    emit(event="run_stop", iteration=state["it"], status="preempted", g_sha256="0" * 64, images_seen=state["seen"])
    sys.exit(75)


for s in (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT):
    signal.signal(s, on_signal)
t0 = time.time()
emit(
    event="run_start",
    iteration=0,
    resumed_from=None,
    experiment="contract",
    config=config,
    config_sha256=sha,
    device="cpu",
    world_size=1,
    seed=0,
)
if a.ready:
    open(a.ready, "w").close()
for i in range(1, a.iters + 1):
    start = time.time()
    if a.burn:
        while time.time() - start < a.sleep:
            sum(range(1000))
    else:
        time.sleep(a.sleep)
    state["it"], state["seen"] = i, i * 8
    emit(
        event="train",
        iteration=i,
        images_seen=i * 8,
        images_per_s=8 / max(time.time() - start, 1e-6),
        g_loss=1.0,
        d_loss_real=0.5,
        d_loss_fake=0.5,
        wall_s=time.time() - t0,
    )
status = "success" if a.exit == 0 else "failed"
emit(event="run_stop", iteration=a.iters, status=status, g_sha256="0" * 64, images_seen=a.iters * 8)
while a.hold and not os.path.exists(a.hold):
    time.sleep(0.02)
sys.exit(a.exit)
