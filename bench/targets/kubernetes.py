"""Kubernetes target (kind `kubernetes`): one batch Job per run, image from a registry.

The generic part of every Job-based target: it creates a Job from the env's `job.yaml`
(name, labels `atlas/commit` and `atlas/run-id`, image, `ATLAS_*` variables, workload
arguments; validated strictly before it is sent), follows the Job and its pods
(`kube_status`), cancels by deleting the Job, and copies the run record off the results
volume through a collector pod (`kube_copy`). Credentials come from the kubeconfig or
the in-cluster service account through the `kubernetes` client and are never printed;
every request is bounded (`kube_timeout`: ATLAS_KUBE_TIMEOUT_S).

Settings (`clusters/<env>/env.yaml`): `namespace`, `job_template`, `results_pvc`,
`results_mount`, `image` (a registry reference; `{commit}` is replaced by the run's
commit, so a CI that pushes `registry/atlas:<sha>` runs the pushed code), optional
`context`, `kubeconfig` ($VARIABLES expanded), `job_prefix` (default `atlas`),
`poll_interval_s`, `collect_timeout_s`, `queue` (a Kueue LocalQueue: `kueue.py`), and `shape`
(nodes × GPUs per node, CPU / memory per GPU; without it, one node with the template's GPUs),
which sets the pod's `nvidia.com/gpu`, `cpu` and `memory` (requests = limits) and the launcher
(`launch.py`: torchrun with one process per GPU); `shape.nodes > 1` runs a Kubeflow PyTorchJob
(`pytorchjob.py`). `openshift.py` adds where the image comes from (BuildConfig, ImageStream)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, ClassVar

from bench.environments.schema import OPT_STR, POSITIVE, STR
from bench.environments.shape import check_shape, declared_shape
from bench.errors import AtlasError, ConfigError
from bench.records.contract import SKIPPED
from bench.records.shape import Shape
from bench.records.timeline import pushed_at
from bench.targets import pytorchjob as kf
from bench.targets import register
from bench.targets.base import JobSpec, RunState, RunStatus, Target
from bench.targets.kube_copy import RecordCopier
from bench.targets.kube_errors import KUBE_LOGIN, api_error
from bench.targets.kube_status import COMPONENT, LABEL_COMMIT, LABEL_RUN, JobStatusReader, ts
from bench.targets.kube_timeout import bound_requests, request_timeout_s
from bench.targets.kueue import queue_job
from bench.targets.launch import recorded_launch
from bench.targets.manifests import load_job_template, validate_objects
from bench.targets.pytorchjob import PyTorchJobRunner


def own_run_folder(pod_spec: dict[str, Any], train: dict[str, Any], mount: str, run_id: str) -> None:
    """The training container mounts only `<mount>/<run_id>` of the results volume (subPath).

    A pod of one run then cannot read or rewrite another run's record. The folder is made
    by a small init container that mounts the whole volume and runs `mkdir` only (a
    subPath the kubelet creates itself is root's, which the pod's arbitrary UID cannot
    write), with the pod's security settings and tiny resources.
    """
    mounts = train.get("volumeMounts") or []
    results = next((m for m in mounts if m.get("mountPath", "").rstrip("/") == mount), None)
    if results is None:
        return
    results["mountPath"], results["subPath"] = f"{mount}/{run_id}", run_id
    small = {"cpu": "100m", "memory": "64Mi"}
    init = {
        "name": "run-folder",
        "image": train["image"],
        "command": ["mkdir", "-p", f"{mount}/{run_id}"],
        "resources": {"requests": small, "limits": small},
        "volumeMounts": [{"name": results["name"], "mountPath": mount}],
        "securityContext": dict(train.get("securityContext") or {}),
    }
    pod_spec["initContainers"] = [c for c in pod_spec.get("initContainers", []) if c.get("name") != "run-folder"]
    pod_spec["initContainers"].append(init)


# env.yaml keys of every kind that runs Kubernetes Jobs (this one and openshift).
KUBE_PROPERTIES: dict[str, Any] = {
    "namespace": STR,
    "context": OPT_STR,
    "kubeconfig": OPT_STR,
    "job_template": STR,
    "job_prefix": STR,
    "results_pvc": STR,
    "results_mount": STR,
    "poll_interval_s": POSITIVE,
    "collect_timeout_s": POSITIVE,
    "queue": OPT_STR,
}


@register("kubernetes")
class KubernetesTarget(JobStatusReader, RecordCopier, PyTorchJobRunner, Target):
    """One namespace of a Kubernetes cluster described by `clusters/<env>/env.yaml`."""

    extras: ClassVar[str] = "openshift"  # the kubernetes client and kubernetes-validate
    ci_setup: ClassVar[str] = "ci-kubeconfig"
    job_scheduler: ClassVar[str] = "kubernetes"
    data_on_volume: ClassVar[bool] = True  # staged into a PVC by an in-cluster Job
    settings_properties: ClassVar[dict[str, Any]] = {**KUBE_PROPERTIES, "image": STR}
    cli: ClassVar[str] = "kubectl"
    api_name: ClassVar[str] = "Kubernetes"
    login_hint: ClassVar[str] = KUBE_LOGIN
    required: ClassVar[tuple[str, ...]] = ("namespace", "job_template", "results_pvc", "results_mount", "image")

    def check_settings(self) -> None:
        s = self.env.settings
        problems = [
            f"'{k}' must be a non-empty string" for k in self.required if not isinstance(s.get(k), str) or not s.get(k)
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
        shape_errors = check_shape(s, str(self.env.folder / "env.yaml"))  # never a manifest from a bad shape
        if shape_errors:
            raise ConfigError("; ".join(shape_errors))
        template = self.env.folder / s["job_template"]  # what every run sends: checked now, no cluster needed
        problems = validate_objects([load_job_template(template)])
        if problems:
            raise ConfigError(f"{template}: " + "; ".join(problems))
        self.shape = declared_shape(s) if "shape" in s else self._template_shape(template)
        self.namespace: str = s["namespace"]
        self.poll_s: float = float(s.get("poll_interval_s", 10))
        self._client: Any = None
        self._dynamic: Any = None

    @staticmethod
    def _template_shape(template: Path) -> Shape:
        """Without `shape:` in env.yaml: one node with the GPUs the Job template asks for."""
        containers = load_job_template(template)["spec"]["template"]["spec"]["containers"]
        limits = (containers[0].get("resources") or {}).get("limits") or {}
        try:
            return Shape(1, int(str(limits.get("nvidia.com/gpu", 0))))
        except ValueError:
            return Shape(1, 0)

    def check_files(self) -> None:
        objects = self.validate_manifests()
        # The PyTorchJob bench would send for a multi-node shape, checked strictly against the
        # shipped Kubeflow CRD even where this env runs one node, so the path stays valid.
        probe = JobSpec(run_id="validate", experiment="smoke", commit="0" * 40)
        self._pytorchjob(probe, "image@sha256:" + "0" * 64, "sha256:" + "0" * 64, nodes=max(self.shape.nodes, 2))
        pvc = next(
            (o for o in objects if o.get("kind") == "PersistentVolumeClaim"
             and o["metadata"].get("name") == self.env.settings["results_pvc"]),
            None,
        )  # fmt: skip
        if (
            self.shape.nodes > 1
            and pvc is not None
            and "ReadWriteMany" not in (pvc.get("spec") or {}).get("accessModes", [])
        ):
            raise ConfigError(
                f"{self.env.folder}: shape.nodes is {self.shape.nodes}, so pods on different nodes share the "
                f"results volume, but PVC {pvc['metadata']['name']} is not ReadWriteMany: patch its accessModes "
                "(and a storage class that supports it) in the overlay"
            )

    def validate_manifests(self) -> list[dict[str, Any]]:
        """Render the env's Kustomization (kubectl/oc) and validate every object strictly."""
        from bench.targets.manifests import validate_env_folder

        return validate_env_folder(self.env.folder, self.env.settings["job_template"])

    # -- connection -----------------------------------------------------------------
    def _kubeconfig(self) -> str | None:
        path = self.env.get("kubeconfig")
        if path:
            path = os.path.expandvars(path)  # local-openshift's: where `make demo` started the API double
            if "$" in path:
                raise AtlasError(
                    f"{self.env.name}: kubeconfig {path!r} names an environment variable that is not set "
                    "(`make demo` sets ATLAS_API_DOUBLE when it starts the API double)"
                )
            return str(
                Path(os.path.expanduser(path)) if os.path.isabs(os.path.expanduser(path)) else self.env.folder / path
            )
        return None

    def available(self) -> str | None:
        try:
            api = self.api_client()
            if self.env.get("local") is True:  # a server on this machine: is it up now?
                self._call("reaching the API server", __import__("kubernetes").client.VersionApi(api).get_code)
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
                    f"{self.env.name}: no usable {self.api_name} credentials ({where}: {exc}); "
                    f"{self.login_hint} or set `kubeconfig:` in env.yaml"
                ) from None
        cfg.retries = 0
        self._client = bound_requests(client.ApiClient(cfg), request_timeout_s(), self.env.name, self.api_name)
        return self._client

    def resource(self, api_version: str, kind: str, absent: str) -> Any:
        """A kubernetes.dynamic resource; `absent` is the one-line error when the server serves no such kind.

        Discovery is cached in a folder of this target's own: the client's default is one file in
        /tmp per server URL, which outlives the server behind it (an operator uninstalled, another
        cluster on the same address) and then names kinds that are not there.
        """
        import tempfile

        from kubernetes.dynamic import DynamicClient
        from kubernetes.dynamic.exceptions import ResourceNotFoundError

        if self._dynamic is None:
            self._discovery = tempfile.TemporaryDirectory(prefix="atlas-discovery-")
            cache = os.path.join(self._discovery.name, "discovery.json")
            self._dynamic = self._call("discovering the API", DynamicClient, self.api_client(), cache_file=cache)
        try:
            return self._call(f"discovering {kind}", self._dynamic.resources.get, api_version=api_version, kind=kind)
        except ResourceNotFoundError:
            raise AtlasError(absent) from None

    def _call(self, doing: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            return fn(*args, **kwargs)
        except (ApiException, HTTPError, OSError) as exc:
            raise self.api_error(exc, doing) from None

    def api_error(self, exc: Exception, doing: str) -> AtlasError:
        return api_error(exc, doing, self.env.name, self.api_name, self.login_hint)

    def _batch(self) -> Any:
        from kubernetes import client

        return client.BatchV1Api(self.api_client())

    def _core(self) -> Any:
        from kubernetes import client

        return client.CoreV1Api(self.api_client())

    # -- image and job --------------------------------------------------------------
    def job_prefix(self) -> str:
        return str(self.env.get("job_prefix") or "atlas")

    def image_for_commit(self, commit: str) -> tuple[str, str, str]:
        """(image reference, digest or "", build name or "") for `commit`: env.yaml `image`."""
        image = self.env.settings["image"].replace("{commit}", commit or "latest")
        digest = image.rsplit("@", 1)[1] if "@" in image else ""
        return image, digest, ""

    def collector_image(self) -> str:
        """An image with `sh` and `tar` for the collector pod when the run's Job is gone."""
        return self.env.settings["image"].replace("{commit}", "latest")

    # -- job ------------------------------------------------------------------------
    def job_name(self, run_id: str) -> str:
        return f"{self.job_prefix()}-{run_id}"[:63].rstrip("-")

    def job_manifest(
        self, job: JobSpec, image: str, digest: str, build: str = "", submitted: float | None = None
    ) -> dict[str, Any]:
        """The env's Job template filled in for one run; validated strictly before use.

        `submitted` is bench's clock when `bench run` began submitting, before any image
        build was waited for, so the timeline's deliver phase holds the build."""
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
        run_dir = f"{s['results_mount'].rstrip('/')}/{job.run_id}"
        # The exact launcher for the shape (one process per GPU), under the recorder.
        train.pop("args", None)
        train["command"] = recorded_launch(
            self.env.name, job, run_dir, 1, self.shape.gpus_per_node, recorder_options=self.recorder_options()
        )
        train["resources"] = self._resources(train.get("resources") or {})
        values = {
            "ATLAS_ENV": self.env.name,
            "ATLAS_EXPERIMENT": job.experiment,
            "ATLAS_RUN_DIR": run_dir,
            "ATLAS_IMAGE_REF": image,
            "ATLAS_IMAGE_DIGEST": digest,
            "ATLAS_GIT_SHA": job.commit,
            "ATLAS_GIT_DIRTY": "0",
            "ATLAS_RUN_ID": job.run_id,
            "ATLAS_SUBMIT_TIME": repr(submitted if submitted is not None else time.time()),
        }
        env = [e for e in train.get("env", []) if e.get("name") not in values]
        train["env"] = env + [{"name": k, "value": v} for k, v in values.items()]
        own_run_folder(pod["spec"], train, s["results_mount"].rstrip("/"), job.run_id)
        queue_job(manifest, s.get("queue"))  # Kueue's LocalQueue: the Job waits suspended until admitted
        self._validate(manifest)
        return manifest

    def _resources(self, template: dict[str, Any]) -> dict[str, Any]:
        """requests = limits (Guaranteed QoS) for one node of the shape; the template's values where it says none."""
        shape, limits = self.shape, dict(template.get("limits") or template.get("requests") or {})
        if shape.gpus_per_node:
            limits["nvidia.com/gpu"] = str(shape.gpus_per_node)
        else:
            limits.pop("nvidia.com/gpu", None)
        per = max(shape.gpus_per_node, 1)
        if shape.cpus_per_gpu:
            limits["cpu"] = f"{shape.cpus_per_gpu * per:g}"
        if shape.memory_gib_per_gpu:
            limits["memory"] = f"{shape.memory_gib_per_gpu * per:g}Gi"
        return {"requests": dict(limits), "limits": limits}

    def _validate(self, obj: dict[str, Any]) -> None:
        problems = validate_objects([obj])
        if problems:
            raise ConfigError(f"{self.env.folder / self.env.settings['job_template']}: " + "; ".join(problems))

    def submit(self, job: JobSpec) -> RunStatus:
        # Delivery starts at the push (ATLAS_PUSHED_AT), so a build the push started is in it.
        pushed = pushed_at()
        submitted = time.time() if pushed is None else min(pushed, time.time())
        if self.shape.nodes > 1:
            return self._submit_pytorchjob(job, submitted)
        image, digest, build = self.image_for_commit(job.commit)
        manifest = self.job_manifest(job, image, digest, build, submitted)
        created = self._call(
            f"creating Job {manifest['metadata']['name']}",
            self._batch().create_namespaced_job,
            namespace=self.namespace,
            body=manifest,
        )
        return RunStatus(
            job.run_id,
            RunState.PENDING,
            f"Job created from build {build}" if build else f"Job created with image {image}",
            scheduler_job_id=created.metadata.name,
            commit=job.commit,
            extra={"image": image, "submit_time": str(ts(created.metadata.creation_timestamp))},
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
        return sorted(pods, key=lambda p: ts(p.metadata.creation_timestamp) or 0.0)

    def status(self, run_id: str) -> RunStatus:
        found = self._find_pytorchjob(run_id)
        if found is not None:
            return self._pytorchjob_status(found, self._pytorchjob_pods(found))
        job = self._job(run_id)
        return self._status_of(job, self._pods(job))

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
        multi = [self._pytorchjob_status(o, self._pytorchjob_pods(o)) for o in self._find_pytorchjob(commit=commit)]
        return [self._status_of(j, self._pods(j)) for j in jobs] + multi

    def cancel(self, run_id: str) -> None:
        from kubernetes import client

        found = self._find_pytorchjob(run_id)
        if found is not None:
            return self._cancel_pytorchjob(found)
        job = self._job(run_id)
        self._call(
            f"deleting Job {job.metadata.name}",
            self._batch().delete_namespaced_job,
            name=job.metadata.name,
            namespace=self.namespace,
            body=client.V1DeleteOptions(propagation_policy="Foreground"),
        )

    # -- collect --------------------------------------------------------------------
    def fetch(self, run_id: str, into: Path, finished: RunStatus | None = None) -> dict[str, Any]:
        """Copy the record off the results volume; the Job's and pods' times are returned.
        The Job and its pods are read here anyway (their times), so `finished` is not needed."""
        dest = Path(into)
        job = self._find_job(run_id)
        multi = self._find_pytorchjob(run_id) if job is None else None
        if multi is not None:
            pods = self._pytorchjob_pods(multi)
            self.require_finished(self._pytorchjob_status(multi, pods))
            image = multi["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["image"]
        elif job is not None:
            pods = self._pods(job)
            self.require_finished(self._status_of(job, pods))
            image = job.spec.template.spec.containers[0].image
        else:
            # The Job is gone (ttlSecondsAfterFinished, or deleted): its record is still on
            # the volume. Any image with sh and tar will do.
            pods = []
            image = self.collector_image()
        skipped = self.copy_with_collector(run_id, image, dest, pods)
        if job is not None:
            facts = self.scheduler_times(job, pods)
        elif multi is not None:
            facts = kf.scheduler_times(multi, kf.pod_starts(pods))
        else:
            facts = {}
        return {**facts, SKIPPED: skipped}

    def timeline_marks(self, run_id: str, facts: dict[str, Any]) -> dict[str, dict]:
        """The API server's times of the run's steps (Build, Job, pod, Events): kube_timeline.py."""
        from bench.targets.kube_timeline import kube_marks

        return kube_marks(self, run_id)

    def stage_data(self, spec: Any, timeout_s: float = 3600) -> str:
        from bench.targets.kube_stage import stage_on_kubernetes

        return stage_on_kubernetes(self, spec, timeout_s)
