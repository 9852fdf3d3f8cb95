"""A kubelet (and the build and job controllers) for the API double: pods really run here.

With a Kubelet attached, the double's clock follows the wall clock and:

- a Build (webhook, ConfigChange or instantiate) goes New -> Running -> Complete for real:
  the BuildConfig's git source (a local repository; else the kubelet's `source`) is
  exported at `spec.revision.git.commit` into a folder, its "image" (a `file://` URI names
  a repository on this machine). With `ATLAS_DOUBLE_PODMAN_BUILD=1` and podman on the
  PATH it also runs `podman build` of that folder's Dockerfile (opt-in: the Dockerfile's
  default base image comes from a registry, which a machine without network, like CI's,
  cannot reach; `scripts/podman-image.sh` builds a local one); otherwise the Build says
  (an Event) that the checkout is the image.
- a Job that is not suspended gets a pod (the job controller), retried up to backoffLimit
  and stopped by a podFailurePolicy FailJob exit code; a JobSet's Indexed Job (a
  TrainJob's, trainer.py) gets all its pods at once, which run side by side; `run_pod` runs any pod, whatever
  owns it: init containers first, one after another, then the first container, each as a
  local process of the image's folder with the container's command, args, env and
  workingDir (`python` is this checkout's interpreter). Paths under a volume's mountPath
  are rewritten to that volume's folder: a PVC is `root/claims/<claim>` (subPath kept), an
  emptyDir `root/pods/<pod>/<volume>`.
- what the pod's status, Events and logs say comes from what ran: Pulling/Pulled with the
  time the image took to be there (its Build), Started, the exit code, startedAt /
  finishedAt; an image no Build produced is Failed + BackOff (ImagePullBackOff).
- the container's environment is the pod's: HOSTNAME, downward-API fieldRefs (name,
  namespace, labels['k'], annotations['k']), and $(VAR) expanded in the command, args and
  env; the cluster DNS name of a pod under a headless Service (`<hostname>.<subdomain>`, a
  TrainJob's PET_MASTER_ADDR) is this machine, 127.0.0.1, where every pod runs;
- `exec` in a pod (the collector's `tar`) runs with the same rewriting (`map_argv`); a pod
  deleted while it runs (its Job cancelled) has its process terminated.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.doubles.apiserver.lifecycle import go_duration
from tests.doubles.apiserver.trainer import LABEL_JOBSET


class Kubelet:
    """Runs what the double admits; `stop()` ends its processes and threads."""

    def __init__(self, double: Any, root: Path, source: Path, python: str = sys.executable) -> None:
        self.double, self.root, self.source, self.python = double, Path(root).resolve(), Path(source).resolve(), python
        self.podman = shutil.which("podman") if os.environ.get("ATLAS_DOUBLE_PODMAN_BUILD") == "1" else None
        self.images: dict[str, Path] = {}  # image digest -> the folder the Build exported
        self.building: dict[str, threading.Event] = {}  # digest -> set once its Build ended
        self.procs: dict[str, subprocess.Popen] = {}
        self.jobs_seen: set[str] = set()
        self.stopping = False
        self.errors: list[str] = []  # what went wrong inside the kubelet's own threads
        (self.root / "claims").mkdir(parents=True, exist_ok=True)
        double.clock.follow_wall_clock()
        double.kubelet = self
        double.on_build = self.on_build
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stopping = True
        for proc in list(self.procs.values()):
            if proc.poll() is None:
                proc.kill()

    # -- builds -----------------------------------------------------------------------
    def on_build(self, build: dict[str, Any]) -> None:
        """The build controller: the Build stays New here and runs in its own thread."""
        name = build["metadata"]["name"]
        digest = "sha256:" + hashlib.sha256(name.encode()).hexdigest()  # what set_build_phase publishes
        self.building[digest] = threading.Event()
        threading.Thread(target=self._guard, args=(self._build, name, digest), daemon=True).start()

    def _build(self, name: str, digest: str) -> None:
        time.sleep(0.05)  # the controller sees the new Build on its next sync
        double = self.double
        while name not in double.builds and not self.stopping:
            time.sleep(0.05)
        build = double.builds[name]
        commit = ((build["spec"].get("revision") or {}).get("git") or {}).get("commit", "")
        uri = ((build["spec"].get("source") or {}).get("git") or {}).get("uri", "")
        local = Path(uri.removeprefix("file://")) if uri.startswith(("file://", "/")) else None
        repo = local if local is not None and local.is_dir() else self.source
        double.set_build_phase(name, "Pending")
        double.set_build_phase(name, "Running")
        tree = self.root / "images" / name
        tree.mkdir(parents=True, exist_ok=True)
        rev = commit or "HEAD"
        started = time.monotonic()
        archive = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", rev], capture_output=True)
        if archive.returncode == 0:
            subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
        fetch_s = time.monotonic() - started
        if archive.returncode != 0:
            message = archive.stderr.decode(errors="replace").strip()[-300:]
            double.set_build_phase(name, "Failed", "FetchSourceFailed", f"Failed to fetch the input source: {message}")
            self.building[digest].set()
            return
        stages = [("FetchInputs", fetch_s)]
        if self.podman and (tree / "Dockerfile").is_file():
            started = time.monotonic()
            proc = subprocess.run(
                [self.podman, "build", "-q", "-t", f"localhost/{name}", str(tree)], capture_output=True
            )
            stages.append(("Build", time.monotonic() - started))
            if proc.returncode != 0:
                out = proc.stderr.decode(errors="replace").strip()[-300:]
                double.set_build_phase(name, "Failed", "DockerBuildFailed", f"Docker build strategy has failed: {out}")
                self.building[digest].set()
                return
            note = f"podman built localhost/{name} from {rev}"
        else:
            note = f"no podman here: the image of this build is the checkout of {rev} in {tree}"
        self.images[digest] = tree
        double.event(build, "BuildNote", note, component="build-controller")
        double.set_build_phase(name, "Complete", stages=tuple(stages))
        self.building[digest].set()

    # -- the job controller -------------------------------------------------------------
    def _loop(self) -> None:
        while not self.stopping and not self.double.stopping:
            with self.double.changed:
                ready = [
                    n
                    for n, j in self.double.jobs.items()
                    if n not in self.jobs_seen and not (j.get("spec") or {}).get("suspend")
                ]
                self.jobs_seen.update(ready)
            for name in ready:
                indexed = LABEL_JOBSET in (self.double.jobs[name]["metadata"].get("labels") or {})
                run = self._run_indexed if indexed else self._run_job
                threading.Thread(target=self._guard, args=(run, name), daemon=True).start()
            self.double.tick()
            time.sleep(0.1)

    def _guard(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception as exc:  # recorded for the test, never a silent dead thread
            self.errors.append(f"{fn.__name__}{args}: {type(exc).__name__}: {exc}")

    def _run_job(self, job_name: str) -> None:
        """Pods one after another until the Job is Complete or Failed (restartPolicy Never)."""
        double = self.double
        while not self.stopping:
            job = double.jobs.get(job_name)
            if job is None or (job.get("status") or {}).get("conditions"):
                return
            pod = double.schedule_pod(job_name)
            code = self.run_pod(pod["metadata"]["name"])
            fail_codes = {
                v
                for rule in ((job["spec"].get("podFailurePolicy") or {}).get("rules") or [])
                if rule.get("action") == "FailJob"
                for v in (rule.get("onExitCodes") or {}).get("values") or []
            }
            if code in fail_codes and job_name in double.jobs and not double.jobs[job_name]["status"].get("conditions"):
                with double.changed:
                    double.finish_job(
                        job_name,
                        "Failed",
                        "PodFailurePolicy",
                        failed=double.jobs[job_name]["status"].get("failed", 1),
                        message=f"Container train for pod {double.namespace}/{pod['metadata']['name']} failed with "
                        f"exit code {code} matching FailJob rule at index 0",
                    )
            if code is None:
                return

    def _run_indexed(self, job_name: str) -> None:
        """A JobSet's Indexed Job (trainer.py): all its pods at once, each in its own thread."""
        threads = [
            threading.Thread(target=self._guard, args=(self.run_pod, name), daemon=True)
            for name in self.double.indexed_pods(job_name)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    # -- one pod --------------------------------------------------------------------------
    def run_pod(self, pod_name: str) -> int | None:
        """Run a bound pod's containers; its exit code (None: it never started)."""
        double = self.double
        pod = double.pods[pod_name]
        spec = pod["spec"]
        main = spec["containers"][0]
        tree = self._pull(pod, main if not spec.get("initContainers") else spec["initContainers"][0])
        if tree is None:
            return None
        for i, c in enumerate(spec.get("initContainers") or []):
            where = f"spec.initContainers{{{c['name']}}}"
            if i:
                double.event(
                    pod, "Pulled", f'Container image "{c["image"]}" already present on machine', field_path=where
                )
            with double.changed:
                double.event(pod, "Created", f"Created container: {c['name']}", field_path=where)
                double.event(pod, "Started", f"Started container {c['name']}", field_path=where)
                started = double.clock.stamp()
                pod["status"]["initContainerStatuses"][i] = double._status_of(c, {"running": {"startedAt": started}})
                double.record("pods", pod)
            code = self._run(pod, c, tree, f"{pod_name}.{c['name']}")
            if pod_name not in double.pods:
                return None
            with double.changed:
                reason = "Completed" if code == 0 else "Error"
                done = {"exitCode": code, "reason": reason, "startedAt": started, "finishedAt": double.clock.stamp()}
                pod["status"]["initContainerStatuses"][i] = double._status_of(c, {"terminated": done})
                double.record("pods", pod)
            if code != 0:
                double.finish_container(pod_name, code, "Init:Error")
                return code
        if spec.get("initContainers"):
            with double.changed:
                double._condition(pod, "Initialized", "True")
                double._container(pod, {"waiting": {"reason": "ContainerCreating"}})
                double.record("pods", pod)
            where = f"spec.containers{{{main['name']}}}"
            double.event(
                pod, "Pulled", f'Container image "{main["image"]}" already present on machine', field_path=where
            )
        # Running only once its process exists: a reader that sees "running" finds it in `procs`.
        code = self._run(pod, main, tree, pod_name, on_start=lambda: double.start_container(pod_name))
        if pod_name not in double.pods:
            return None  # deleted while it ran: nothing left to report on
        double.finish_container(pod_name, code)
        return code

    def _pull(self, pod: dict[str, Any], c: dict[str, Any]) -> Path | None:
        """Pulling, then Pulled once the image's Build has exported it (the real wait), else BackOff."""
        double, where = self.double, _field_path(pod, c)
        double.event(pod, "Pulling", f'Pulling image "{c["image"]}"', field_path=where)
        started = time.monotonic()
        digest = _digest(c["image"])
        done = self.building.get(digest)
        if done is not None:
            done.wait(timeout=3600)
        tree = self.images.get(digest) if digest else self.source
        took = go_duration(time.monotonic() - started)
        if tree is None:
            with double.changed:
                double.event(
                    pod, "Failed", f'Failed to pull image "{c["image"]}": not built here', "Warning", field_path=where
                )
                double.event(pod, "Failed", "Error: ErrImagePull", "Warning", field_path=where)
                double.event(pod, "BackOff", f'Back-off pulling image "{c["image"]}"', field_path=where)
                waiting = {"reason": "ImagePullBackOff", "message": f'Back-off pulling image "{c["image"]}"'}
                double._container(pod, {"waiting": waiting})
                double.record("pods", pod)
            return None
        size = sum(f.stat().st_size for f in tree.rglob("*") if f.is_file()) if tree != self.source else 0
        double.event(
            pod,
            "Pulled",
            f'Successfully pulled image "{c["image"]}" in {took} ({took} including waiting). Image size: {size} bytes.',
            field_path=where,
        )
        return tree

    def _run(self, pod: dict[str, Any], c: dict[str, Any], tree: Path, log_key: str, on_start: Any = None) -> int:
        argv = [*(c.get("command") or []), *(c.get("args") or [])]
        if not argv:
            argv = ["python", "-m", "bench.in_job.command", "--"]  # the Dockerfile's ENTRYPOINT
        env = self._env(pod, c, tree)
        argv = [self.cluster_dns(expand(a, env)) for a in argv]
        argv = self.map_argv(pod, argv, c)
        if argv[0] in ("python", "python3"):
            argv[0] = self.python
        cwd = self.map_argv(pod, [c["workingDir"]], c)[0] if c.get("workingDir") else str(tree)
        log = self.root / "logs" / f"{log_key}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "wb") as out:
            try:
                proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
            except OSError as exc:
                out.write(f"{exc}\n".encode())
                self.double.pod_logs[log_key] = f"{exc}\n"
                if on_start:
                    on_start()
                return 128
            self.procs[log_key] = proc
            if on_start:
                on_start()
            while proc.poll() is None:
                self.double.pod_logs[log_key] = log.read_text(errors="replace")
                if pod["metadata"]["name"] not in self.double.pods:  # deleted (its Job cancelled): stop it
                    proc.terminate()
                    try:
                        proc.wait(timeout=int(pod["spec"].get("terminationGracePeriodSeconds", 30)))
                    except subprocess.TimeoutExpired:
                        proc.kill()
                time.sleep(0.2)
        self.double.pod_logs[log_key] = log.read_text(errors="replace")
        return proc.returncode

    def _env(self, pod: dict[str, Any], c: dict[str, Any], tree: Path) -> dict[str, str]:
        """The image's ENV (Dockerfile), then the container's; paths rewritten to the pod's folders."""
        base = {
            # The image's venv first (Dockerfile: PATH=${APP_ROOT}/venv/bin:$PATH): this checkout's
            "PATH": f"{Path(self.python).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": "/home/atlas",
            "TORCH_HOME": "/home/atlas/.cache/torch",
            "XDG_CACHE_HOME": "/home/atlas/.cache",
            "MPLCONFIGDIR": "/home/atlas/.cache/matplotlib",
            "TMPDIR": "/tmp",
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": str(tree),
            "OMP_NUM_THREADS": "1",
        }
        meta = pod["metadata"]
        base["HOSTNAME"] = pod["spec"].get("hostname") or meta["name"]  # the container's hostname, as in a pod
        for e in c.get("env") or []:
            if "value" in e:
                base[e["name"]] = self.cluster_dns(expand(str(e["value"]), base))
            field = ((e.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath", "")
            if field:
                base[e["name"]] = field_value(meta, field)
        return {k: self.map_argv(pod, [v], c)[0] for k, v in base.items()}

    def cluster_dns(self, text: str) -> str:
        """The cluster DNS for pods this kubelet runs: `<hostname>.<subdomain>[.<ns>.svc[.cluster.local]]`
        of a pod under a headless Service (a JobSet's) resolves to this machine, where they all run."""
        services = self.double.store["services"]
        names = {
            f"{p['spec']['hostname']}.{p['spec']['subdomain']}"
            for p in list(self.double.pods.values())
            if p["spec"].get("hostname")
            and (services.get(p["spec"].get("subdomain") or "") or {}).get("spec", {}).get("clusterIP") == "None"
        }
        for name in sorted(names, key=len, reverse=True):
            suffix = rf"(?:\.{re.escape(self.double.namespace)}\.svc(?:\.cluster\.local)?)?"
            text = re.sub(rf"(?<![\w.-]){re.escape(name)}{suffix}(?![\w-])", "127.0.0.1", text)
        return text

    # -- volumes ----------------------------------------------------------------------
    def volume_folder(self, pod: dict[str, Any], volume: str) -> Path:
        for v in pod["spec"].get("volumes") or []:
            if v["name"] == volume and v.get("persistentVolumeClaim"):
                return self.root / "claims" / v["persistentVolumeClaim"]["claimName"]
        return self.root / "pods" / pod["metadata"]["name"] / volume

    def mounts(self, pod: dict[str, Any], c: dict[str, Any]) -> list[tuple[str, Path]]:
        """(mountPath, host folder) of container `c`, longest mountPath first; folders made."""
        out = []
        for m in c.get("volumeMounts") or []:
            folder = self.volume_folder(pod, m["name"])
            if m.get("subPath"):
                folder = folder / m["subPath"]
            folder.mkdir(parents=True, exist_ok=True)
            out.append((m["mountPath"].rstrip("/") or "/", folder))
        return sorted(out, key=lambda pair: -len(pair[0]))

    def map_argv(self, pod: dict[str, Any], argv: list[str], c: dict[str, Any] | None = None) -> list[str]:
        """Each mountPath at the start of a word (or after `=`, `:`) becomes its host folder."""
        pairs = self.mounts(pod, c or pod["spec"]["containers"][0])
        if not pairs:
            return list(argv)
        pattern = re.compile(r"(^|[=:\s])(" + "|".join(re.escape(p) for p, _ in pairs) + r")(?=/|$|:)")
        folders = dict(pairs)
        return [pattern.sub(lambda m: m.group(1) + str(folders[m.group(2)]), a) for a in argv]


def expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion in a command, its args and env values: a defined variable
    is replaced, an undefined one left as written, `$$` is a literal `$`
    (k8s.io/kubernetes third_party/forked/golang/expansion)."""
    return re.sub(
        r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)",
        lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)),
        text,
    )


def field_value(meta: dict[str, Any], path: str) -> str:
    """A downward-API fieldRef: metadata.name / namespace, metadata.labels['k'], metadata.annotations['k']."""
    found = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
    if found:
        return str((meta.get(found.group(1)) or {}).get(found.group(2), ""))
    return {"metadata.name": meta["name"], "metadata.namespace": meta.get("namespace", "")}.get(path, "")


def _digest(image: str) -> str:
    return image.split("@", 1)[1] if "@" in image else ""


def _field_path(pod: dict[str, Any], c: dict[str, Any]) -> str:
    key = "initContainers" if c in (pod["spec"].get("initContainers") or []) else "containers"
    return f"spec.{key}{{{c['name']}}}"
