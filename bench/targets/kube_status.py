"""Reading a batch Job and its pods: the run's state, what went wrong, and its times.

Shared by every target whose runs are Kubernetes Jobs (`kubernetes`, `openshift`): the
Job's conditions and its pods' container states say pending, running, completed or
failed, and why, in words that name the fix.
"""

from __future__ import annotations

import calendar
import time
from typing import Any, ClassVar

from bench.records.contract import queue_wait_s
from bench.targets.base import RunState, RunStatus

COMPONENT = "app.kubernetes.io/component"
LABEL_COMMIT = "atlas/commit"
LABEL_RUN = "atlas/run-id"
# Container waiting reasons that will not go away by themselves.
STUCK_REASONS = {
    "ImagePullBackOff": "the image cannot be pulled",
    "ErrImagePull": "the image cannot be pulled",
    "InvalidImageName": "the image reference is invalid",
    "CreateContainerConfigError": "the container config is invalid (missing Secret/ConfigMap?)",
    "CreateContainerError": "the container cannot be created",
}


def ts(value: Any) -> float | None:
    """Kubernetes timestamp (datetime or RFC 3339 string) -> Unix seconds."""
    if value is None:
        return None
    if hasattr(value, "timestamp"):
        return float(value.timestamp())
    return float(calendar.timegm(time.strptime(str(value).replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S%z")))


class JobStatusReader:
    """Mixin: state and scheduler times of a run from its Job and pods (`self.kind`, `self.cli`)."""

    kind: ClassVar[str]
    cli: ClassVar[str] = "kubectl"

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
                "PodFailurePolicy": "failed with a non-retryable exit code (2 = bad configuration, 74 = disk full)",
            }
            out.state = RunState.FAILED
            out.detail = "; ".join([f"{reason}: {words.get(reason, failed.message or '')}".rstrip(": "), *notes])
            return out
        if job.spec.suspend:
            queue = (job.metadata.labels or {}).get("kueue.x-k8s.io/queue-name")
            out.state = RunState.PENDING
            out.detail = f"waiting in Kueue queue {queue} (suspended until admitted)" if queue else "Job is suspended"
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

    def _stuck(self, pod: Any) -> str:
        for cs in (pod.status.container_statuses or []) if pod.status else []:
            waiting = cs.state.waiting if cs.state else None
            if waiting is not None and waiting.reason in STUCK_REASONS:
                owner = (pod.metadata.labels or {}).get("job-name", pod.metadata.name)
                return (
                    f"{waiting.reason}: {STUCK_REASONS[waiting.reason]} ({waiting.message or cs.image}); "
                    f"it retries until its deadline: delete it with `{self.cli} delete job {owner}`"
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

    def scheduler_times(self, job: Any, pods: list[Any]) -> dict[str, Any]:
        """The run.json `scheduler` section: queue wait = Job created -> container started."""
        submit = ts(job.metadata.creation_timestamp)
        starts = [
            ts(cs.state.running.started_at)
            if cs.state and cs.state.running
            else (ts(cs.state.terminated.started_at) if cs.state and cs.state.terminated else None)
            for p in pods
            for cs in ((p.status.container_statuses or []) if p.status else [])
        ]
        starts = [s for s in starts if s is not None]
        start = min(starts) if starts else None
        end = ts(job.status.completion_time)
        if end is None:
            ends = [
                ts(c.last_transition_time)
                for c in job.status.conditions or []
                if c.type in ("Complete", "Failed") and c.status == "True"
            ]
            end = ends[0] if ends else None
        return {
            "kind": self.kind,
            "job_id": job.metadata.name,
            "submit_time": submit,
            "start_time": start,
            "end_time": end,
            "queue_wait_s": queue_wait_s(submit, start),
        }
