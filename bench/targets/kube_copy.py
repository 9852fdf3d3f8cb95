"""Copying a run record off a results volume: a collector pod, `tar` over exec, a checksum.

The record lives on a PersistentVolumeClaim that only pods can read. A short-lived pod
mounts it read-only; `bench` execs `tar` in it, reads the stream frame by frame and
checks it against the sha256 the pod computed, so a broken stream is an error, never a
damaged record.
"""

from __future__ import annotations

import hashlib
import os
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.errors import AtlasError
from bench.records.jobfiles import tar_members
from bench.targets.kube_status import COMPONENT, LABEL_RUN


class NoRecord(AtlasError):
    """The results volume holds no record of the run (no folder, or no run.json in it)."""


class RecordCopier:
    """Mixin for Job-based targets (uses `env`, `namespace`, `poll_s`, `cli`, `_call`, `_core`, `_validate`)."""

    def collector_manifest(self, name: str, image: str, run_id: str) -> dict[str, Any]:
        """A pod that only mounts the results PVC read-only and waits to be exec'd."""
        s = self.env.settings
        small = {"cpu": "100m", "memory": "256Mi"}
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {COMPONENT: "collector", LABEL_RUN: run_id},
            },
            "spec": {
                "restartPolicy": "Never",
                "activeDeadlineSeconds": int(s.get("collect_timeout_s", 1800)),
                "automountServiceAccountToken": False,
                "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [
                    {
                        "name": "collect",
                        "image": image,
                        "command": ["sleep", "infinity"],
                        "resources": {"requests": small, "limits": small},
                        "volumeMounts": [{"name": "results", "mountPath": s["results_mount"], "readOnly": True}],
                        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                    }
                ],
                "volumes": [
                    {"name": "results", "persistentVolumeClaim": {"claimName": s["results_pvc"], "readOnly": True}}
                ],
            },
        }
        self._validate(pod)
        return pod

    def copy_with_collector(self, run_id: str, image: str, dest: Path, job_pods: list[Any]) -> list[str]:
        """Copy the run's folder off the results volume through a short-lived collector pod.

        Any kind whose pods write to the shared results volume (a Job, a PyTorchJob, a
        TrainJob) is collected the same way; `image` is the run's own (any with sh and tar
        will do once the run is gone). The pod is deleted however the copy ends.
        """
        pod_name = f"atlas-collect-{run_id}"[:63].rstrip("-")
        core = self._core()
        self._call(
            "creating the collector pod",
            core.create_namespaced_pod,
            namespace=self.namespace,
            body=self.collector_manifest(pod_name, image, run_id),
        )
        try:
            self._wait_running(pod_name)
            return self._copy_out_or_explain(pod_name, run_id, dest, job_pods)
        finally:
            from kubernetes.client.exceptions import ApiException

            try:
                core.delete_namespaced_pod(pod_name, self.namespace, grace_period_seconds=0)
            except (ApiException, OSError):
                pass  # it deletes itself at activeDeadlineSeconds

    def _wait_running(self, name: str) -> None:
        deadline = time.monotonic() + float(self.env.get("collect_timeout_s", 1800)) / 6
        while True:
            pod = self._call("reading the collector pod", self._core().read_namespaced_pod, name, self.namespace)
            if pod.status and pod.status.phase == "Running":
                return
            stuck = self._stuck(pod)
            if stuck or (pod.status and pod.status.phase in ("Failed", "Succeeded")):
                raise AtlasError(f"{self.env.name}: collector pod {name} cannot run: {stuck or pod.status.phase}")
            if time.monotonic() > deadline:
                raise AtlasError(
                    f"{self.env.name}: collector pod {name} did not start in time; "
                    f"see `{self.cli} -n {self.namespace} describe pod {name}`"
                )
            time.sleep(min(self.poll_s, 2.0))

    # `sh -c SCRIPT collect MOUNT RUN_ID`: stdout = tar of MOUNT/RUN_ID, stderr = its sha256.
    TAR_SCRIPT = (
        'set -e; t=$(mktemp); trap \'rm -f "$t"\' EXIT; tar -C "$1" -cf "$t" "$2"; sha256sum "$t" >&2; cat "$t"'
    )

    def _read_exec(self, ws: Any, sink: Any) -> tuple[Any, bytes, int]:
        """Drain an exec WebSocket frame by frame: stdout to `sink`, stderr, exit code.

        WSClient's own buffering concatenates every waiting frame into one bytes object,
        which is quadratic for a record of tens of MB; reading frames here is linear.
        """
        from websocket import ABNF, WebSocketException

        digest, err, status = hashlib.sha256(), bytearray(), b""
        sock = ws.sock
        sock.settimeout(float(self.env.get("collect_timeout_s", 1800)))
        try:
            while True:
                opcode, frame = sock.recv_data_frame(True)
                if opcode == ABNF.OPCODE_CLOSE:
                    break
                if opcode not in (ABNF.OPCODE_BINARY, ABNF.OPCODE_TEXT) or not frame.data:
                    continue
                data = frame.data if isinstance(frame.data, bytes) else frame.data.encode()
                channel, payload = data[0], data[1:]
                if channel == 1:
                    sink.write(payload)
                    digest.update(payload)
                elif channel == 2:
                    err += payload
                elif channel == 3:
                    status += payload
        except (WebSocketException, OSError) as exc:
            if not status:
                raise AtlasError(
                    f"{self.env.name}: the exec stream broke while copying the record: {exc}; collect again"
                ) from None
        finally:
            ws.close()
        code = 0
        if status:
            parsed = yaml.safe_load(status.decode("utf-8", "replace")) or {}
            if parsed.get("status") != "Success":
                causes = (parsed.get("details") or {}).get("causes") or [{}]
                try:
                    code = int(causes[0].get("message", 1))
                except ValueError:
                    code = 1
        return digest, bytes(err), code

    def _copy_out_or_explain(self, pod: str, run_id: str, dest: Path, job_pods: list[Any]) -> list[str]:
        """`_copy_out`; where the volume holds no record, say what the training pod did instead."""
        try:
            return self._copy_out(pod, run_id, dest)
        except NoRecord as exc:
            if not job_pods:
                raise
            raise AtlasError(self._pod_account(run_id, job_pods[-1]) + f" (collection said: {exc})") from None

    def _pod_account(self, run_id: str, pod: Any) -> str:
        """One line: the pod's exit (code, reason) and the tail of its log."""
        from kubernetes.client.exceptions import ApiException

        name = pod.metadata.name
        statuses = (pod.status.container_statuses if pod.status else None) or []
        ended = statuses[0].state.terminated if statuses and statuses[0].state else None
        exit_text = f"exited {ended.exit_code} ({ended.reason})" if ended else "never finished a container"
        try:
            log = self._core().read_namespaced_pod_log(name, self.namespace, tail_lines=8)
        except (ApiException, OSError) as exc:
            log = f"(its log cannot be read: {exc})"
        tail = " | ".join(line.strip() for line in str(log or "").splitlines() if line.strip())[-600:]
        return (
            f"{self.env.name}: run {run_id} left no record on the results volume: its pod {name} {exit_text}; "
            f"last log lines: {tail or '(empty)'}; see `{self.cli} -n {self.namespace} logs {name}`"
        )

    def _copy_out(self, pod: str, run_id: str, dest: Path) -> list[str]:
        """Unpack the run's tar into `dest`: its regular files only (jobfiles.tar_members); returns what was skipped."""
        from kubernetes.stream import stream

        command = ["sh", "-c", self.TAR_SCRIPT, "collect", self.env.settings["results_mount"], run_id]
        ws = self._call(
            "starting tar in the collector pod",
            stream,
            self._core().connect_get_namespaced_pod_exec,
            pod,
            self.namespace,
            command=command,
            stderr=True,
            stdin=False,
            stdout=True,
            tty=False,
            binary=True,
            _preload_content=False,
        )
        dest.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f".{run_id}.", dir=dest.parent) as tmp:
            tar_path = Path(tmp) / "record.tar"
            with open(tar_path, "wb") as fh:
                digest, err, code = self._read_exec(ws, fh)
            text = err.decode("utf-8", "replace").strip()
            if code != 0:
                raise (NoRecord if "Cannot stat" in text else AtlasError)(
                    f"{self.env.name}: reading {run_id} from the results volume failed (exit {code}): "
                    f"{text[-300:] or 'no message'}"
                )
            expected = text.splitlines()[-1].split()[0] if text else ""
            if expected != digest.hexdigest():
                raise AtlasError(
                    f"{self.env.name}: the run record of {run_id} arrived damaged "
                    f"(sha256 {digest.hexdigest()[:12]} != {expected[:12] or 'none'}); collect again"
                )
            out = Path(tmp) / "out"
            try:
                with tarfile.open(tar_path) as tar:
                    members, skipped = tar_members(tar, run_id)
                    tar.extractall(out, members=members, filter="data")
            except (tarfile.TarError, ValueError) as exc:
                raise AtlasError(f"{self.env.name}: the record tar of {run_id} is refused: {exc}") from None
            if not (out / run_id / "run.json").is_file():
                raise NoRecord(
                    f"{self.env.name}: run {run_id} has no run.json on the results volume "
                    f"(the job did not start `bench record`; see `{self.cli} logs job/...`)"
                )
            dest.mkdir(parents=True, exist_ok=True)
            for f in (out / run_id).iterdir():
                os.replace(f, dest / f.name)
        return skipped
