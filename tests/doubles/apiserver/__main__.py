"""`python -m tests.doubles.apiserver [--dir DIR] [--namespace NS] [--empty] [OPTIONS]`

Starts the API double on 127.0.0.1 (a free port), writes DIR/kubeconfig and prints it, then
serves until Ctrl-C. Time follows the wall clock; Jobs run a pod that succeeds after
--job-seconds and Builds complete at once, or, with --kubelet REPO, Builds export (or
podman-build) REPO at the pushed commit and pods really run here (kubelet.py); --kueue
adds Kueue's admission of queued Jobs (kueue.py).
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import threading
from pathlib import Path

from tests.doubles.apiserver.tool import run_by_hand, start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.doubles.apiserver", description=__doc__.split("\n\n")[1])
    parser.add_argument("--dir", type=Path, help="folder for the kubeconfig, TLS files and the results volume")
    parser.add_argument("--namespace", default="atlas-biggan")
    parser.add_argument("--token", default="test-token")
    parser.add_argument(
        "--empty", action="store_true", help="no namespace yet (as before `kubectl apply -k clusters/moc`)"
    )
    parser.add_argument("--job-seconds", type=float, default=30.0, help="how long each Job's pod runs")
    parser.add_argument("--kubelet", type=Path, metavar="REPO", help="run pods here, building from this git repository")
    parser.add_argument(
        "--kueue",
        metavar="QUEUE=QUOTA",
        action="append",
        default=[],
        help="a LocalQueue and its ClusterQueue's quota, e.g. cpu-localqueue=cpu:1,memory:4Gi (repeatable)",
    )
    args = parser.parse_args(argv)
    folder = args.dir or Path(tempfile.mkdtemp(prefix="atlas-api-double-"))
    double, kubeconfig = start(folder, args.namespace, args.token, args.empty)
    if args.kueue:
        from tests.doubles.apiserver.kueue import Kueue

        queues = dict(q.split("=", 1) for q in args.kueue)
        quotas = {f"{n}-cq": dict(item.split(":", 1) for item in quota.split(",")) for n, quota in queues.items()}
        Kueue(double, quotas, {n: f"{n}-cq" for n in queues})
    if args.kubelet:
        from tests.doubles.apiserver.kubelet import Kubelet

        Kubelet(double, folder / "node", source=args.kubelet.resolve())
    else:
        run_by_hand(double, args.job_seconds)
    print(
        f"API double serving {double.url} (namespace {args.namespace}): a TEST DOUBLE of the OpenShift API "
        "server, not a cluster; what it does not model: clusters/moc/README.md, section "
        "'Trying it without a cluster: the API server double'",
        flush=True,
    )
    print(f"kubeconfig: {kubeconfig}", flush=True)
    print(f"  export KUBECONFIG={kubeconfig}", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    double.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
