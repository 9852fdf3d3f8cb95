"""OpenShift target (kind `openshift`): BuildConfig image per commit, one batch Job per run.

Flow: find the Build of the commit (or instantiate the BuildConfig at that commit),
wait for it, take `status.output.to.imageDigest`, create a new Job from the env's
`job.yaml` that references the image by digest, and follow the Job and its pods.
Collection: a short-lived collector pod mounts the results PVC read-only; `bench` execs
`tar` in it and checks the stream against the sha256 the pod computed (see
clusters/moc/README.md). Credentials come from the kubeconfig or the in-cluster
service account through the `kubernetes` client and are never printed.
"""

from __future__ import annotations

import calendar
import hashlib
import os
import shutil
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

import yaml

from bench.errors import AtlasError, ConfigError
from bench.targets import register
from bench.targets.base import JobSpec, RunState, RunStatus, Target
from bench.targets.openshift_manifests import SCHEMA_FILE, load_job_template, validate_objects

COMPONENT = "app.kubernetes.io/component"
LABEL_COMMIT = "atlas/commit"
LABEL_RUN = "atlas/run-id"
BUILD_DONE = {"Complete", "Failed", "Error", "Cancelled"}
# Container waiting reasons that will not go away by themselves.
STUCK_REASONS = {
    "ImagePullBackOff": "the image cannot be pulled",
    "ErrImagePull": "the image cannot be pulled",
    "InvalidImageName": "the image reference is invalid",
    "CreateContainerConfigError": "the container config is invalid (missing Secret/ConfigMap?)",
    "CreateContainerError": "the container cannot be created",
}
_REQUIRED_STR = ("namespace", "buildconfig", "job_template", "results_pvc", "results_mount")


def _ts(value: Any) -> float | None:
    """Kubernetes timestamp (datetime or RFC 3339 string) -> Unix seconds."""
    if value is None:
        return None
    if hasattr(value, "timestamp"):
        return float(value.timestamp())
    return float(calendar.timegm(time.strptime(str(value).replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S%z")))


def api_error(exc: Exception, doing: str, env: str) -> AtlasError:
    """A clear AtlasError for a failed API call; never includes credentials."""
    from kubernetes.client.exceptions import ApiException

    if isinstance(exc, ApiException):
        status = exc.status
        message = ""
        try:
            import json

            message = json.loads(exc.body or "{}").get("message", "")
        except ValueError:
            message = (exc.body or "")[:200]
        if status == 0 or status is None:
            return AtlasError(
                f"{env}: cannot reach the OpenShift API while {doing} ({exc.reason}); "
                "check the server in your kubeconfig (`oc whoami --show-server`) and your network/VPN"
            )
        if status == 401:
            return AtlasError(
                f"{env}: the OpenShift API refused the credentials while {doing} (401 Unauthorized): "
                "log in again (`oc login --token=... --server=...`); tokens expire"
            )
        if status == 403:
            return AtlasError(
                f"{env}: forbidden while {doing} (403): {message or 'no permission'}; "
                "ask the project admin for the `edit` role in the namespace"
            )
        return AtlasError(f"{env}: OpenShift API error {status} while {doing}: {message or exc.reason}")
    return AtlasError(
        f"{env}: cannot reach the OpenShift API while {doing}: {type(exc).__name__}: {exc}; "
        "check the server in your kubeconfig and your network/VPN"
    )


@register("openshift")
class OpenShiftTarget(Target):
    extras: ClassVar[str] = "openshift"
    ci_setup: ClassVar[str] = "ci-kubeconfig"
    """One OpenShift project (namespace) described by `clusters/<env>/env.yaml`."""

    def check_settings(self) -> None:
        s = self.env.settings
        problems = [
            f"'{k}' must be a non-empty string" for k in _REQUIRED_STR if not isinstance(s.get(k), str) or not s.get(k)
        ]
        for key in ("build_timeout_s", "poll_interval_s", "collect_timeout_s"):
            if key in s and (not isinstance(s[key], (int, float)) or isinstance(s[key], bool) or s[key] <= 0):
                problems.append(f"'{key}' must be a positive number, got {s[key]!r}")
        for key in ("context", "kubeconfig"):
            if s.get(key) is not None and not isinstance(s.get(key), str):
                problems.append(f"'{key}' must be a string or null")
        if isinstance(s.get("job_template"), str) and not (self.env.folder / s["job_template"]).is_file():
            problems.append(f"job_template {s['job_template']!r} does not exist in {self.env.folder}")
        if problems:
            raise ConfigError(f"{self.env.folder / 'env.yaml'}: " + "; ".join(problems))
        # The Job template is what every run sends: check it strictly now (no cluster needed).
        template = self.env.folder / s["job_template"]
        problems = validate_objects([load_job_template(template)], self.env.folder / SCHEMA_FILE)
        if problems:
            raise ConfigError(f"{template}: " + "; ".join(problems))
        self.namespace: str = s["namespace"]
        self.poll_s: float = float(s.get("poll_interval_s", 10))
        self._client: Any = None

    def check_files(self) -> None:
        self.validate_manifests()

    def validate_manifests(self) -> list[dict[str, Any]]:
        """Render the env's Kustomization (kubectl/oc) and validate every object strictly."""
        from bench.targets.openshift_manifests import validate_env_folder

        return validate_env_folder(self.env.folder, self.env.settings["job_template"])

    # -- connection -----------------------------------------------------------------
    def _kubeconfig(self) -> str | None:
        path = self.env.get("kubeconfig")
        if path:
            return str(
                Path(os.path.expanduser(path)) if os.path.isabs(os.path.expanduser(path)) else self.env.folder / path
            )
        return None

    def available(self) -> str | None:
        try:
            self.api_client()
        except AtlasError as exc:
            return str(exc)
        return None

    def api_client(self) -> Any:
        """The kubernetes ApiClient from the kubeconfig, or the in-cluster account."""
        if self._client is not None:
            return self._client
        from kubernetes import client, config

        try:
            cfg = client.Configuration()
            config.load_kube_config(
                config_file=self._kubeconfig(),
                context=self.env.get("context"),
                client_configuration=cfg,
                persist_config=False,
            )
        except (config.ConfigException, OSError, TypeError) as exc:
            try:
                cfg = client.Configuration()
                config.load_incluster_config(client_configuration=cfg)
            except config.ConfigException:
                where = self._kubeconfig() or os.environ.get("KUBECONFIG", "~/.kube/config")
                raise AtlasError(
                    f"{self.env.name}: no usable OpenShift credentials ({where}: {exc}); "
                    "run `oc login --server=https://<api>:6443` or set `kubeconfig:` in env.yaml"
                ) from None
        cfg.retries = 0
        self._client = client.ApiClient(cfg)
        return self._client

    def _call(self, doing: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            return fn(*args, **kwargs)
        except (ApiException, HTTPError, OSError) as exc:
            raise api_error(exc, doing, self.env.name) from None

    def _openshift(self, api_version: str, kind: str) -> Any:
        from kubernetes.dynamic import DynamicClient
        from kubernetes.dynamic.exceptions import ResourceNotFoundError

        if not hasattr(self, "_dynamic"):
            self._dynamic = self._call("discovering the API", DynamicClient, self.api_client())
        try:
            return self._call(f"discovering {kind}", self._dynamic.resources.get, api_version=api_version, kind=kind)
        except ResourceNotFoundError:
            raise AtlasError(
                f"{self.env.name}: the server has no {api_version} {kind}: is it an OpenShift cluster?"
            ) from None

    def _batch(self) -> Any:
        from kubernetes import client

        return client.BatchV1Api(self.api_client())

    def _core(self) -> Any:
        from kubernetes import client

        return client.CoreV1Api(self.api_client())

    # -- build ----------------------------------------------------------------------
    def image_for_commit(self, commit: str) -> tuple[str, str, str]:
        """(image reference by digest, digest, build name) for `commit`; builds if needed."""
        from kubernetes.client.exceptions import ApiException

        bc_name = self.env.settings["buildconfig"]
        builds = self._openshift("build.openshift.io/v1", "Build")
        bcs = self._openshift("build.openshift.io/v1", "BuildConfig")
        try:
            bcs.get(name=bc_name, namespace=self.namespace)
        except ApiException as exc:
            if exc.status == 404:
                raise AtlasError(
                    f"{self.env.name}: BuildConfig {bc_name!r} not found in namespace {self.namespace!r}: "
                    f"apply the manifests first (`oc apply -k {self.env.folder}`)"
                ) from None
            raise api_error(exc, f"reading BuildConfig {bc_name}", self.env.name) from None
        except Exception as exc:  # urllib3 / socket errors
            raise api_error(exc, f"reading BuildConfig {bc_name}", self.env.name) from None
        listed = self._call(
            "listing builds", builds.get, namespace=self.namespace, label_selector=f"buildconfig={bc_name}"
        )
        mine = [
            b
            for b in listed.to_dict().get("items", [])
            if ((b.get("spec") or {}).get("revision") or {}).get("git", {}).get("commit", "").startswith(commit)
            and commit
        ]
        mine.sort(key=lambda b: b["metadata"].get("creationTimestamp") or "")
        usable = [b for b in mine if b.get("status", {}).get("phase") not in ("Failed", "Error", "Cancelled")]
        if usable:
            build = usable[-1]
        elif mine:
            build = mine[-1]  # only failed builds: report the newest one
        else:
            body = {
                "kind": "BuildRequest",
                "apiVersion": "build.openshift.io/v1",
                "metadata": {"name": bc_name},
                "revision": {"type": "Git", "git": {"commit": commit}},
                "triggeredBy": [{"message": f"bench run at commit {commit}"}],
            }
            build = self._call(
                f"starting a build of {bc_name} at {commit[:12]}",
                bcs.subresources["instantiate"].create,
                body=body,
                name=bc_name,
                namespace=self.namespace,
            ).to_dict()
        build = self._wait_build(builds, build["metadata"]["name"])
        status = build.get("status", {})
        digest = ((status.get("output") or {}).get("to") or {}).get("imageDigest")
        if not digest:
            raise AtlasError(
                f"{self.env.name}: build {build['metadata']['name']} completed without an image digest "
                "(status.output.to.imageDigest): is the output an ImageStreamTag?"
            )
        repo = status.get("outputDockerImageReference") or ""
        if ":" in repo.rsplit("/", 1)[-1]:
            repo = repo.rsplit(":", 1)[0]
        return f"{repo}@{digest}" if repo else digest, digest, build["metadata"]["name"]

    def _wait_build(self, builds: Any, name: str) -> dict[str, Any]:
        deadline = time.monotonic() + float(self.env.get("build_timeout_s", 3600))
        while True:
            build = self._call(f"reading build {name}", builds.get, name=name, namespace=self.namespace).to_dict()
            phase = build.get("status", {}).get("phase", "New")
            if phase == "Complete":
                return build
            if phase in BUILD_DONE:
                st = build.get("status", {})
                raise AtlasError(
                    f"{self.env.name}: build {name} {phase.lower()}: "
                    f"{st.get('reason', '')} {st.get('message', '')}".rstrip()
                    + f"; see `oc -n {self.namespace} logs build/{name}`, fix, then push again "
                    f"or `oc -n {self.namespace} start-build {self.env.settings['buildconfig']} --commit=<sha>`"
                )
            if time.monotonic() > deadline:
                raise AtlasError(
                    f"{self.env.name}: build {name} still {phase} after {self.env.get('build_timeout_s', 3600)} s "
                    "(raise build_timeout_s in env.yaml or check `oc get builds`)"
                )
            time.sleep(self.poll_s)

    # -- job ------------------------------------------------------------------------
    def job_name(self, run_id: str) -> str:
        return f"{self.env.settings['buildconfig']}-{run_id}"[:63].rstrip("-")

    def job_manifest(self, job: JobSpec, image: str, digest: str, build: str = "") -> dict[str, Any]:
        """The env's Job template filled in for one run; validated strictly before use."""
        s = self.env.settings
        manifest = load_job_template(self.env.folder / s["job_template"])
        meta = manifest.setdefault("metadata", {})
        meta.pop("generateName", None)
        meta["name"] = self.job_name(job.run_id)
        meta["namespace"] = self.namespace
        labels = {LABEL_COMMIT: job.commit[:63], LABEL_RUN: job.run_id}
        meta.setdefault("labels", {}).update(labels)
        meta.setdefault("annotations", {}).update({"atlas/build": build, "atlas/image": image})
        pod = manifest["spec"]["template"]
        pod.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
        containers = pod["spec"]["containers"]
        train = next((c for c in containers if c.get("name") == "train"), containers[0])
        train["image"] = image
        train["args"] = [a for item in job.overrides for a in ("--set", item)]
        run_dir = f"{s['results_mount'].rstrip('/')}/{job.run_id}"
        values = {
            "ATLAS_ENV": self.env.name,
            "ATLAS_EXPERIMENT": job.experiment,
            "ATLAS_RUN_DIR": run_dir,
            "ATLAS_IMAGE_REF": image,
            "ATLAS_IMAGE_DIGEST": digest,
            "ATLAS_GIT_SHA": job.commit,
            "ATLAS_GIT_DIRTY": "0",
            "ATLAS_RUN_ID": job.run_id,
            "ATLAS_SUBMIT_TIME": repr(time.time()),
        }
        env = [e for e in train.get("env", []) if e.get("name") not in values]
        train["env"] = env + [{"name": k, "value": v} for k, v in values.items()]
        self._validate(manifest)
        return manifest

    def _validate(self, obj: dict[str, Any]) -> None:
        problems = validate_objects([obj], self.env.folder / SCHEMA_FILE)
        if problems:
            raise ConfigError(f"{self.env.folder / self.env.settings['job_template']}: " + "; ".join(problems))

    def submit(self, job: JobSpec) -> RunStatus:
        if not job.commit:
            raise AtlasError(f"{self.env.name}: a commit is needed: OpenShift builds the image from the pushed commit")
        image, digest, build = self.image_for_commit(job.commit)
        manifest = self.job_manifest(job, image, digest, build)
        created = self._call(
            f"creating Job {manifest['metadata']['name']}",
            self._batch().create_namespaced_job,
            namespace=self.namespace,
            body=manifest,
        )
        return RunStatus(
            job.run_id,
            RunState.PENDING,
            f"Job created from build {build}",
            scheduler_job_id=created.metadata.name,
            commit=job.commit,
            extra={"image": image, "submit_time": str(_ts(created.metadata.creation_timestamp))},
        )

    def _find_job(self, run_id: str) -> Any | None:
        jobs = self._call(
            "listing Jobs",
            self._batch().list_namespaced_job,
            namespace=self.namespace,
            label_selector=f"{LABEL_RUN}={run_id}",
        ).items
        return jobs[0] if jobs else None

    def _job(self, run_id: str) -> Any:
        job = self._find_job(run_id)
        if job is None:
            raise AtlasError(
                f"{self.env.name}: no Job with run id {run_id!r} in namespace {self.namespace!r} "
                "(finished Jobs are deleted after ttlSecondsAfterFinished)"
            )
        return job

    def _pods(self, job: Any) -> list[Any]:
        pods = self._call(
            "listing pods",
            self._core().list_namespaced_pod,
            namespace=self.namespace,
            label_selector=f"job-name={job.metadata.name}",
        ).items
        return sorted(pods, key=lambda p: _ts(p.metadata.creation_timestamp) or 0.0)

    def status(self, run_id: str) -> RunStatus:
        job = self._job(run_id)
        return self._status_of(job, self._pods(job))

    def _status_of(self, job: Any, pods: list[Any]) -> RunStatus:
        run_id = job.metadata.labels.get(LABEL_RUN, "")
        times = self.scheduler_times(job, pods)
        out = RunStatus(
            run_id,
            RunState.UNKNOWN,
            scheduler_job_id=job.metadata.name,
            commit=job.metadata.labels.get(LABEL_COMMIT),
            extra={k: str(v) for k, v in times.items() if v is not None},
        )
        notes = self._pod_notes(pods)
        conditions = {c.type: c for c in (job.status.conditions or []) if c.status == "True"}
        if "Complete" in conditions:
            out.state, out.detail = RunState.COMPLETED, "; ".join(["succeeded", *notes])
            return out
        failed = conditions.get("Failed") or conditions.get("FailureTarget")
        if failed is not None:
            reason = failed.reason or "Failed"
            words = {
                "DeadlineExceeded": f"stopped at activeDeadlineSeconds ({job.spec.active_deadline_seconds} s); "
                "raise it in job.yaml or lower max_iters",
                "BackoffLimitExceeded": (
                    f"failed {job.status.failed or 0} times (backoffLimit {job.spec.backoff_limit})"
                ),
                "PodFailurePolicy": "failed with a non-retryable exit code (2 = bad configuration)",
            }
            out.state = RunState.FAILED
            out.detail = "; ".join([f"{reason}: {words.get(reason, failed.message or '')}".rstrip(": "), *notes])
            return out
        if job.spec.suspend:
            out.state, out.detail = RunState.PENDING, "Job is suspended"
            return out
        current = pods[-1] if pods else None
        if current is None:
            out.state, out.detail = RunState.PENDING, "no pod yet"
            return out
        stuck = self._stuck(current)
        if stuck:
            out.state, out.detail = RunState.FAILED, "; ".join([stuck, *notes])
            return out
        phase = current.status.phase if current.status else "Pending"
        if phase == "Running":
            out.state = RunState.RUNNING
        else:
            out.state = RunState.PENDING
            for cond in (current.status.conditions or []) if current.status else []:
                if cond.type == "PodScheduled" and cond.status == "False":
                    notes.insert(0, f"{cond.reason}: {cond.message}")
        out.detail = "; ".join(notes) or phase
        return out

    @staticmethod
    def _stuck(pod: Any) -> str:
        for cs in (pod.status.container_statuses or []) if pod.status else []:
            waiting = cs.state.waiting if cs.state else None
            if waiting is not None and waiting.reason in STUCK_REASONS:
                owner = (pod.metadata.labels or {}).get("job-name", pod.metadata.name)
                return (
                    f"{waiting.reason}: {STUCK_REASONS[waiting.reason]} ({waiting.message or cs.image}); "
                    f"it retries until its deadline: delete it with `oc delete job {owner}`"
                )
        return ""

    @staticmethod
    def _pod_notes(pods: list[Any]) -> list[str]:
        """What happened to earlier pods: OOMKilled, evicted/preempted (then resumed)."""
        notes = []
        for pod in pods:
            st = pod.status
            if st is None:
                continue
            if st.reason == "Evicted" or any(
                c.type == "DisruptionTarget" and c.status == "True" for c in st.conditions or []
            ):
                notes.append(
                    f"pod {pod.metadata.name} evicted/preempted ({st.message or st.reason}); "
                    "a new pod resumes from the last checkpoint"
                )
            for cs in st.container_statuses or []:
                term = cs.state.terminated if cs.state else None
                if term is not None and term.reason == "OOMKilled":
                    notes.append(
                        f"pod {pod.metadata.name} OOMKilled: the container hit its memory limit "
                        "(raise resources.limits.memory in job.yaml, or lower batch_size)"
                    )
        return notes

    @staticmethod
    def scheduler_times(job: Any, pods: list[Any]) -> dict[str, Any]:
        """The run.json `scheduler` section: queue wait = Job created -> container started."""
        submit = _ts(job.metadata.creation_timestamp)
        starts = [
            _ts(cs.state.running.started_at)
            if cs.state and cs.state.running
            else (_ts(cs.state.terminated.started_at) if cs.state and cs.state.terminated else None)
            for p in pods
            for cs in ((p.status.container_statuses or []) if p.status else [])
        ]
        starts = [s for s in starts if s is not None]
        start = min(starts) if starts else None
        end = _ts(job.status.completion_time)
        if end is None:
            ends = [
                _ts(c.last_transition_time)
                for c in job.status.conditions or []
                if c.type in ("Complete", "Failed") and c.status == "True"
            ]
            end = ends[0] if ends else None
        return {
            "kind": "openshift",
            "job_id": job.metadata.name,
            "submit_time": submit,
            "start_time": start,
            "end_time": end,
            "queue_wait_s": round(start - submit, 3) if start is not None and submit is not None else None,
        }

    def list_runs(self, commit: str | None = None) -> list[RunStatus]:
        selector = f"{COMPONENT}=training"
        if commit and len(commit) == 40:
            selector += f",{LABEL_COMMIT}={commit}"
        jobs = self._call(
            "listing Jobs", self._batch().list_namespaced_job, namespace=self.namespace, label_selector=selector
        ).items
        jobs = [
            j
            for j in jobs
            if LABEL_RUN in (j.metadata.labels or {})
            and (not commit or j.metadata.labels.get(LABEL_COMMIT, "").startswith(commit))
        ]
        return [self._status_of(j, self._pods(j)) for j in jobs]

    def cancel(self, run_id: str) -> None:
        from kubernetes import client

        job = self._job(run_id)
        self._call(
            f"deleting Job {job.metadata.name}",
            self._batch().delete_namespaced_job,
            name=job.metadata.name,
            namespace=self.namespace,
            body=client.V1DeleteOptions(propagation_policy="Foreground"),
        )

    # -- collect --------------------------------------------------------------------
    def collect(self, run_id: str, dest: Path) -> Path:
        dest = Path(dest)
        if (dest / "run.json").is_file():
            return dest  # collected before: records are immutable
        job = self._find_job(run_id)
        if job is not None:
            pods = self._pods(job)
            self.require_finished(self._status_of(job, pods))
            image = job.spec.template.spec.containers[0].image
        else:
            # The Job is gone (ttlSecondsAfterFinished, or deleted): its record is still on
            # the volume. Any image with sh and tar will do; the ImageStream's resolves locally.
            pods = []
            image = f"{self.env.get('imagestream') or self.env.settings['buildconfig']}:latest"
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
            self._copy_out(pod_name, run_id, dest)
        finally:
            from kubernetes.client.exceptions import ApiException

            try:
                core.delete_namespaced_pod(pod_name, self.namespace, grace_period_seconds=0)
            except (ApiException, OSError):
                pass  # it deletes itself at activeDeadlineSeconds
        from bench.records.place import update_run_json

        if job is not None:
            update_run_json(dest, scheduler={k: v for k, v in self.scheduler_times(job, pods).items() if v is not None})
        return dest

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
                    f"see `oc -n {self.namespace} describe pod {name}`"
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

    def _copy_out(self, pod: str, run_id: str, dest: Path) -> None:
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
                raise AtlasError(
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
            with tarfile.open(tar_path) as tar:
                names = tar.getnames()
                if not names or any(n != run_id and not n.startswith(run_id + "/") for n in names):
                    raise AtlasError(f"{self.env.name}: unexpected paths in the record tar of {run_id}")
                tar.extractall(out, filter="data")
            if not (out / run_id / "run.json").is_file():
                raise AtlasError(
                    f"{self.env.name}: run {run_id} has no run.json on the results volume "
                    "(the job did not start `bench record`; see `oc logs job/...`)"
                )
            if dest.exists():
                shutil.rmtree(dest)
            os.replace(out / run_id, dest)
