"""Server-side printing: the meta.k8s.io/v1 Table `kubectl get` asks for, column for column.

Columns and cell rules from kubernetes/kubernetes pkg/printers/internalversion/printers.go
(printJob: Name, Status, Completions, Duration, Age; printPod: Ready, Status, Restarts;
printNamespace, printPersistentVolumeClaim, printSecret, printServiceAccount, printRole,
printRoleBinding, printEvent; the `-o wide` columns in WIDE), OpenShift's from openshift/oc-era openshift-apiserver
printers (Build: Type, From, Status, Started, Duration; BuildConfig: Type, From, Latest;
ImageStream: Image Repository, Tags, Updated), PyTorchJob's from its CRD's
additionalPrinterColumns (State, Age). Ages follow apimachinery/pkg/util/duration.HumanDuration.
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Callable
from typing import Any

from tests.doubles.apiserver.resources import Resource


def parse_time(text: str | None) -> float | None:
    return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")) if text else None


def human_duration(seconds: float) -> str:
    """duration.HumanDuration."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    return f"{hours // 24 // 365}y"


def _age(obj: dict[str, Any], now: float) -> str:
    created = parse_time((obj.get("metadata") or {}).get("creationTimestamp"))
    return "<unknown>" if created is None else human_duration(now - created)


def _job(obj: dict[str, Any], now: float) -> list[Any]:
    spec, st = obj.get("spec") or {}, obj.get("status") or {}
    true = {c["type"] for c in st.get("conditions") or [] if c.get("status") == "True"}
    status = "Running"  # printers.go computeJobStatus
    for cond in ("Complete", "Failed", "FailureTarget", "SuccessCriteriaMet", "Suspended"):
        if cond in true:
            status = cond
            break
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        status = "Terminating"
    succeeded = st.get("succeeded", 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    else:
        completions = f"{succeeded}/1 of {spec.get('parallelism', 1)}"
    start, end = parse_time(st.get("startTime")), parse_time(st.get("completionTime"))
    duration = "" if start is None else human_duration((end or now) - start)
    return [status, completions, duration, _age(obj, now)]


def _pod(obj: dict[str, Any], now: float) -> list[Any]:
    st = obj.get("status") or {}
    containers = (obj.get("spec") or {}).get("containers") or []
    statuses = st.get("containerStatuses") or []
    reason = st.get("reason") or st.get("phase") or "Pending"
    for c in statuses:
        state = c.get("state") or {}
        if state.get("waiting", {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif state.get("terminated"):
            reason = state["terminated"].get("reason") or f"ExitCode:{state['terminated'].get('exitCode')}"
    if reason == "Pending" and any(
        c.get("type") == "PodScheduled" and c.get("status") == "True" for c in st.get("conditions") or []
    ):
        reason = "ContainerCreating"
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(c.get("restartCount", 0) for c in statuses)
    return [f"{ready}/{len(containers)}", reason, restarts, _age(obj, now)]


def _build(obj: dict[str, Any], now: float) -> list[Any]:
    spec, st = obj.get("spec") or {}, obj.get("status") or {}
    revision = ((spec.get("revision") or {}).get("git") or {}).get("commit", "")
    source = (spec.get("source") or {}).get("type", "Git")
    start = parse_time(st.get("startTimestamp"))
    started = "" if start is None else f"{human_duration(now - start)} ago"
    duration = "" if st.get("duration") is None else human_duration(st["duration"] / 1e9)
    phase = st.get("phase", "New") + (f" ({st['reason']})" if st.get("reason") else "")
    return [
        (spec.get("strategy") or {}).get("type", ""),
        f"{source}@{revision[:7]}" if revision else source,
        phase,
        started,
        duration,
    ]


def _event(o: dict[str, Any], now: float) -> list[Any]:
    """printEvent: LAST SEEN from lastTimestamp, else eventTime (events.k8s.io recorders)."""
    seen = parse_time(o.get("lastTimestamp")) or (parse_time(o["eventTime"][:19] + "Z") if o.get("eventTime") else None)
    involved = o.get("involvedObject") or {}
    return [
        human_duration(now - (seen or now)),
        o.get("type", ""),
        o.get("reason", ""),
        f"{involved.get('kind', '').lower()}/{involved.get('name', '')}",
        o.get("message", ""),
    ]


PRINTERS: dict[str, tuple[list[str], Callable[[dict[str, Any], float], list[Any]]]] = {
    "jobs": (["Status", "Completions", "Duration", "Age"], _job),
    "pods": (["Ready", "Status", "Restarts", "Age"], _pod),
    "builds": (["Type", "From", "Status", "Started", "Duration"], _build),
    "namespaces": (["Status", "Age"], lambda o, n: [(o.get("status") or {}).get("phase", "Active"), _age(o, n)]),
    "persistentvolumeclaims": (
        ["Status", "Volume", "Capacity", "Access Modes", "StorageClass", "VolumeAttributesClass", "Age"],
        lambda o, n: [
            (o.get("status") or {}).get("phase", "Pending"),
            (o.get("spec") or {}).get("volumeName", ""),
            ((o.get("status") or {}).get("capacity") or {}).get("storage", ""),
            ",".join(
                {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}.get(
                    m, m
                )
                for m in (o.get("spec") or {}).get("accessModes") or []
            ),
            (o.get("spec") or {}).get("storageClassName", "<unset>"),
            "<unset>",
            _age(o, n),
        ],
    ),
    "secrets": (["Type", "Data", "Age"], lambda o, n: [o.get("type", "Opaque"), len(o.get("data") or {}), _age(o, n)]),
    "serviceaccounts": (["Secrets", "Age"], lambda o, n: [len(o.get("secrets") or []), _age(o, n)]),
    "roles": (["Created At"], lambda o, n: [(o.get("metadata") or {}).get("creationTimestamp", "")]),
    "rolebindings": (
        ["Role", "Age"],
        lambda o, n: [f"{(o.get('roleRef') or {}).get('kind')}/{(o.get('roleRef') or {}).get('name')}", _age(o, n)],
    ),
    "buildconfigs": (
        ["Type", "From", "Latest"],
        lambda o, n: [
            ((o.get("spec") or {}).get("strategy") or {}).get("type", ""),
            ((o.get("spec") or {}).get("source") or {}).get("type", ""),
            (o.get("status") or {}).get("lastVersion", 0),
        ],
    ),
    "imagestreams": (
        ["Image Repository", "Tags", "Updated"],
        lambda o, n: [
            (o.get("status") or {}).get("dockerImageRepository", ""),
            ",".join(t.get("tag", "") for t in (o.get("status") or {}).get("tags") or []),
            "",
        ],
    ),
    "pytorchjobs": (
        ["State", "Age"],
        lambda o, n: [(((o.get("status") or {}).get("conditions") or [{}])[-1]).get("type", ""), _age(o, n)],
    ),
    "events": (["Last Seen", "Type", "Reason", "Object", "Message"], lambda o, n: _event(o, n)),
}


def _label_selector(selector: dict[str, Any] | None) -> str:
    """metav1.FormatLabelSelector for matchLabels and matchExpressions."""
    if not selector:
        return "<none>"
    parts = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
    for e in selector.get("matchExpressions") or []:
        op, values = e.get("operator", ""), ",".join(e.get("values") or [])
        parts.append(
            {"In": f"{e['key']} in ({values})", "NotIn": f"{e['key']} notin ({values})", "Exists": e["key"]}.get(
                op, f"!{e['key']}"
            )
        )
    return ",".join(parts) or "<none>"


def _job_wide(o: dict[str, Any], now: float) -> list[Any]:
    containers = (((o.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
    return [
        ",".join(c.get("name", "") for c in containers),
        ",".join(c.get("image", "") for c in containers),
        _label_selector((o.get("spec") or {}).get("selector")),
    ]


def _pod_wide(o: dict[str, Any], now: float) -> list[Any]:
    spec, st = o.get("spec") or {}, o.get("status") or {}
    gates = spec.get("readinessGates") or []
    conditions = {c.get("type"): c.get("status") for c in st.get("conditions") or []}
    ready_gates = sum(1 for g in gates if conditions.get(g.get("conditionType")) == "True")
    return [
        st.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        st.get("nominatedNodeName") or "<none>",
        f"{ready_gates}/{len(gates)}" if gates else "<none>",
    ]


# The priority-1 columns `-o wide` shows (printers.go: printJob's Containers, Images, Selector;
# printPod's IP, Node, Nominated Node, Readiness Gates; printPersistentVolumeClaim's VolumeMode;
# printRoleBinding's Users, Groups, ServiceAccounts), after the others as upstream orders them.
def _subjects(o: dict[str, Any], kind: str) -> str:
    names = [
        f"{s.get('namespace', '')}/{s['name']}" if kind == "ServiceAccount" else s["name"]
        for s in o.get("subjects") or []
        if s.get("kind") == kind
    ]
    return ", ".join(names)


WIDE: dict[str, tuple[list[str], Callable[[dict[str, Any], float], list[Any]]]] = {
    "jobs": (["Containers", "Images", "Selector"], _job_wide),
    "pods": (["IP", "Node", "Nominated Node", "Readiness Gates"], _pod_wide),
    "persistentvolumeclaims": (["VolumeMode"], lambda o, n: [(o.get("spec") or {}).get("volumeMode", "Filesystem")]),
    "rolebindings": (
        ["Users", "Groups", "ServiceAccounts"],
        lambda o, n: [_subjects(o, "User"), _subjects(o, "Group"), _subjects(o, "ServiceAccount")],
    ),
}


def table(r: Resource, items: list[dict[str, Any]], now: float, resource_version: str = "") -> dict[str, Any]:
    names, cells = PRINTERS.get(r.plural, (["Age"], lambda o, n: [_age(o, n)]))
    columns = [{"name": "Name", "type": "string", "format": "name", "description": "", "priority": 0}]
    columns += [{"name": c, "type": "string", "format": "", "description": "", "priority": 0} for c in names]
    wide_names, wide = WIDE.get(r.plural, ([], lambda o, n: []))
    columns += [{"name": c, "type": "string", "format": "", "description": "", "priority": 1} for c in wide_names]
    rows = [
        {
            "cells": [o["metadata"]["name"], *cells(o, now), *wide(o, now)],
            "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]},
        }
        for o in items
    ]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": columns,
        "rows": rows,
    }
