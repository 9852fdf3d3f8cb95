"""TrainJob target (kind `trainjob`): every run a Kubeflow Trainer v2 TrainJob on OpenShift.

Why a kind of its own: a TrainJob is how a cluster set up in 2026 runs multi-node PyTorch
(Kubeflow Trainer v2, which Red Hat OpenShift AI ships; the PyTorchJob of `kind:
openshift` is its legacy predecessor). Everything else is the openshift kind's: the image
is built by the BuildConfig at the pushed commit, the pod is the env's batch Job template
(`job.yaml`: volumes, security, resources), the record is copied off the shared results
volume by a collector pod. What this module adds is the TrainJob (`kube_trainjob.py`):
created through the dynamic client, found by its `atlas/run-id` label, followed by the
Trainer's conditions and the JobSet's pods (label `jobset.sigs.k8s.io/jobset-name`), and
its timeline read from the API server: TrainJob created (`accepted`), its JobSet created
(`jobset_created`), then node 0's pod (scheduled, pulled, started).

Settings: the openshift kind's, plus `runtime` (the ClusterTrainingRuntime the TrainJob
names, e.g. `torch-distributed`). The shape gives `numNodes` (shape.nodes),
`resourcesPerNode` (GPUs, CPU and memory per node) and `numProcPerNode` (one process per
GPU, one on a CPU-only node); `queue` labels the TrainJob for Kueue and creates it suspended.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, ClassVar

from bench.environments.schema import STR
from bench.errors import AtlasError, ConfigError
from bench.records.contract import SKIPPED
from bench.records.timeline import pushed_at
from bench.targets import kube_trainjob as tj
from bench.targets import register
from bench.targets.base import JobSpec, RunState, RunStatus
from bench.targets.kube_status import COMPONENT, LABEL_COMMIT, LABEL_RUN, ts
from bench.targets.launch import TRAINJOB_RENDEZVOUS, recorded_launch
from bench.targets.openshift import OpenShiftTarget
from bench.targets.pytorchjob import pod_starts

ZERO_DIGEST = "sha256:" + "0" * 64


@register("trainjob")
class TrainJobTarget(OpenShiftTarget):
    """One OpenShift project whose runs are TrainJobs of one training runtime."""

    settings_properties: ClassVar[dict[str, Any]] = {**OpenShiftTarget.settings_properties, "runtime": STR}
    required: ClassVar[tuple[str, ...]] = (*OpenShiftTarget.required, "runtime")
    validate_note: ClassVar[str] = ""  # the successor of the PyTorchJob the openshift kind notes

    def check_files(self) -> None:
        """The rendered manifests, and the TrainJob a run would send, validated against the shipped CRD."""
        objects = self.validate_manifests()
        probe = JobSpec(run_id="validate", experiment="smoke", commit="0" * 40)
        self.trainjob(probe, "image@" + ZERO_DIGEST, ZERO_DIGEST)
        s = self.env.settings
        pvc = next(
            (
                o
                for o in objects
                if o.get("kind") == "PersistentVolumeClaim" and o["metadata"].get("name") == s["results_pvc"]
            ),
            None,
        )
        modes = (pvc or {}).get("spec", {}).get("accessModes", [])
        if self.shape.nodes > 1 and pvc is not None and "ReadWriteMany" not in modes:
            raise ConfigError(
                f"{self.env.folder}: shape.nodes is {self.shape.nodes}, so the TrainJob's pods on different "
                f"nodes share the results volume, but PVC {pvc['metadata']['name']} is not ReadWriteMany: "
                "patch its accessModes (and a storage class that supports it) in the overlay"
            )

    # -- the TrainJob ---------------------------------------------------------------
    def trainjob(
        self, job: JobSpec, image: str, digest: str, build: str = "", submitted: float | None = None
    ) -> dict[str, Any]:
        """The run's TrainJob: the batch Job's pod on shape.nodes nodes, torchrun per node."""
        s = self.env.settings
        batch = self.job_manifest(job, image, digest, build, submitted)
        run_dir = f"{s['results_mount'].rstrip('/')}/{job.run_id}"
        nodes, gpus = self.shape.nodes, self.shape.gpus_per_node
        command = recorded_launch(
            self.env.name,
            job,
            run_dir,
            nodes,
            gpus,
            rendezvous=TRAINJOB_RENDEZVOUS if nodes > 1 else None,
            recorder_options=self.recorder_options(),
        )
        manifest = tj.trainjob_manifest(
            batch, s["runtime"], nodes, max(gpus, 1), command, s["results_mount"], s.get("queue")
        )
        self._validate(manifest)
        return manifest

    def _trainjobs(self) -> Any:
        """The TrainJob resource of the dynamic client; one line when Kubeflow Trainer is missing."""
        return self.resource(tj.API_VERSION, tj.KIND, tj.trainer_absent(self.env.name))

    def submit(self, job: JobSpec) -> RunStatus:
        pushed = pushed_at()  # delivery starts at the push: a build it started is in it
        submitted = time.time() if pushed is None else min(pushed, time.time())
        resource = self._trainjobs()  # before building: no Trainer, one line
        self._check_runtime()
        image, digest, build = self.image_for_commit(job.commit)
        manifest = self.trainjob(job, image, digest, build, submitted)
        label = f"{self.shape.label}, runtime {self.env.settings['runtime']}"
        return self._create_job("TrainJob", resource, manifest, job, image, build, label)

    def _check_runtime(self) -> None:
        """The ClusterTrainingRuntime env.yaml names exists (else the Trainer's webhook refuses the
        TrainJob); a project account may not read cluster-scoped objects: then the webhook says."""
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        name = self.env.settings["runtime"]
        api = client.CustomObjectsApi(self.api_client())
        try:
            api.get_cluster_custom_object(tj.API_GROUP, tj.API_VERSION_NAME, "clustertrainingruntimes", name)
        except ApiException as exc:
            if exc.status == 404:
                raise AtlasError(
                    f"{self.env.name}: the cluster has no {tj.RUNTIME_KIND} {name!r} (env.yaml `runtime`): "
                    f"name one `{self.cli} get clustertrainingruntimes` lists, or ask the cluster admin to install it"
                ) from None
        except (HTTPError, OSError) as exc:
            raise self.api_error(exc, f"reading {tj.RUNTIME_KIND} {name}") from None

    def _find(self, run_id: str | None = None, commit: str | None = None) -> Any:
        """The TrainJob of `run_id` (None if there is none), or every one of `commit` (a list)."""
        selector = f"{LABEL_RUN}={run_id}" if run_id else f"{COMPONENT}=training"
        listed = self._call(
            "listing TrainJobs", self._trainjobs().get, namespace=self.namespace, label_selector=selector
        )
        items = [i for i in listed.to_dict().get("items", []) if LABEL_RUN in (i["metadata"].get("labels") or {})]
        if run_id:
            return items[0] if items else None
        return [i for i in items if not commit or i["metadata"]["labels"].get(LABEL_COMMIT, "").startswith(commit)]

    def _one(self, run_id: str) -> dict[str, Any]:
        found = self._find(run_id)
        if found is None:
            raise AtlasError(f"{self.env.name}: no TrainJob with run id {run_id!r} in namespace {self.namespace!r}")
        return found

    def node_pods(self, obj: dict[str, Any]) -> list[Any]:
        """The JobSet's pods, node 0 first (by completion index)."""
        pods = self._call(
            "listing pods",
            self._core().list_namespaced_pod,
            namespace=self.namespace,
            label_selector=f"{tj.LABEL_JOBSET}={obj['metadata']['name']}",
        ).items

        def index(p: Any) -> tuple[int, float, str]:
            raw = (p.metadata.labels or {}).get(tj.LABEL_COMPLETION_INDEX, "")
            return (int(raw) if raw.isdigit() else 1 << 30, ts(p.metadata.creation_timestamp) or 0.0, p.metadata.name)

        return sorted(pods, key=index)

    def _trainjob_status(self, obj: dict[str, Any], pods: list[Any]) -> RunStatus:
        labels = obj["metadata"].get("labels") or {}
        state, detail = tj.state_of(obj, pods)
        notes = self._pod_notes(pods)
        if not state.finished:
            stuck = next((msg for msg in map(self._stuck, pods) if msg), "")
            if stuck:
                state, detail = RunState.FAILED, stuck
            for pod in pods:
                for cond in (pod.status.conditions or []) if pod.status else []:
                    if cond.type == "PodScheduled" and cond.status == "False":
                        notes.insert(0, f"{pod.metadata.name} {cond.reason}: {cond.message}")
        times = tj.scheduler_times(obj, pod_starts(pods))
        return RunStatus(
            labels.get(LABEL_RUN, ""),
            state,
            "; ".join([detail, *notes]),
            scheduler_job_id=obj["metadata"]["name"],
            commit=labels.get(LABEL_COMMIT),
            extra={k: str(v) for k, v in times.items() if v is not None},
        )

    def status(self, run_id: str) -> RunStatus:
        obj = self._one(run_id)
        return self._trainjob_status(obj, self.node_pods(obj))

    def list_runs(self, commit: str | None = None) -> list[RunStatus]:
        return [self._trainjob_status(o, self.node_pods(o)) for o in self._find(commit=commit)]

    def cancel(self, run_id: str) -> None:
        obj = self._one(run_id)
        self._call(
            f"deleting TrainJob {obj['metadata']['name']}",
            self._trainjobs().delete,
            name=obj["metadata"]["name"],
            namespace=self.namespace,
            body={"propagationPolicy": "Foreground"},
        )

    # -- collect --------------------------------------------------------------------
    def fetch(self, run_id: str, into: Path, finished: RunStatus | None = None) -> dict[str, Any]:
        """Copy the record off the results volume (the batch Job's collector); the TrainJob's times."""
        obj = self._find(run_id)
        pods = self.node_pods(obj) if obj is not None else []
        if obj is not None:
            self.require_finished(self._trainjob_status(obj, pods))
        image = obj["spec"]["trainer"]["image"] if obj is not None else self.collector_image()
        skipped = self.copy_with_collector(run_id, image, Path(into), pods)
        facts = tj.scheduler_times(obj, pod_starts(pods)) if obj is not None else {}
        return {**facts, SKIPPED: skipped}

    def timeline_marks(self, run_id: str, facts: dict[str, Any]) -> dict[str, dict]:
        """TrainJob created -> its JobSet created -> node 0's pod, from the API server's times (and the Build's)."""
        from bench.targets.kube_timeline import _build_marks, _pod_events, event_marks, mark, pod_marks

        obj = self._find(run_id)
        if obj is None:
            return {}
        meta = obj["metadata"]
        marks: dict[str, Any] = {
            "accepted": mark(meta.get("creationTimestamp")),
            "jobset_created": self._jobset_mark(meta),
        }
        build = (meta.get("annotations") or {}).get("atlas/build")
        if build:
            marks.update(_build_marks(self, build))
        pods = self.node_pods(obj)
        if pods:
            marks.update(pod_marks(pods[0]))
            marks.update(event_marks(_pod_events(self, pods[0]), tj.CONTAINER))
        if self.env.get("queue"):  # Kueue: the queue is Workload created -> Admitted
            from bench.targets.kueue import kueue_marks

            marks.update(kueue_marks(self, meta["name"], owner_kind=tj.KIND))
        return {name: m for name, m in marks.items() if m is not None}

    def _jobset_mark(self, meta: dict[str, Any]) -> dict[str, Any] | None:
        """When the Trainer created the TrainJob's JobSet (same name); None if it is gone or not served."""
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        from bench.targets.kube_timeline import mark

        api = client.CustomObjectsApi(self.api_client())
        try:
            jobset = api.get_namespaced_custom_object(
                "jobset.x-k8s.io", "v1alpha2", self.namespace, "jobsets", meta["name"]
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise self.api_error(exc, f"reading JobSet {meta['name']}") from None
        except (HTTPError, OSError) as exc:
            raise self.api_error(exc, f"reading JobSet {meta['name']}") from None
        return mark((jobset.get("metadata") or {}).get("creationTimestamp"))
