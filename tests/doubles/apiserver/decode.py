"""Decoding a request body as the API server does, before any validation.

k8s.io/apiserver/pkg/endpoints/handlers (create.go, update.go, patch.go): a body of the
wrong group/version/kind is a 400; unknown fields follow the fieldValidation directive
(Strict -> 400 "strict decoding error", Warn -> a `Warning` header, Ignore -> dropped;
Warn is the default when the client names none); unparseable quantities and wrong types
are decode errors (400 "... cannot be handled as a Job: ..."). Defaulting then fills in
what the upstream defaulters do for the kinds Atlas sends (pkg/apis/batch/v1/defaults.go,
pkg/apis/core/v1/defaults.go, the Job strategy's generated selector in
pkg/registry/batch/job/strategy.go).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from tests.doubles.apiserver.errors import ApiError
from tests.doubles.apiserver.fields import QUANTITY_MSG, parse_quantity
from tests.doubles.apiserver.openapi import schema_name
from tests.doubles.apiserver.resources import Resource
from tests.doubles.apiserver.schema import Schemas, type_errors
from tests.doubles.apiserver.validate_pod import quantity_fields

DIRECTIVES = ("Strict", "Warn", "Ignore")


def cannot_handle(r: Resource, message: str) -> ApiError:
    return ApiError(400, "BadRequest", f'{r.kind} in version "{r.version}" cannot be handled as a {r.kind}: {message}')


def decode(
    schemas: Schemas, schema_path: Path, r: Resource, body: Any, directive: str, warnings: list[str]
) -> dict[str, Any]:
    """The object in body, its unknown fields handled per directive, types and quantities checked."""
    if not isinstance(body, dict):
        raise ApiError(400, "BadRequest", "the body of the request was in an unknown format")
    if directive not in DIRECTIVES:
        raise ApiError(
            400,
            "BadRequest",
            f'fieldValidation: Unsupported value: "{directive}": supported values: "Ignore", "Strict", "Warn"',
        )
    if body.get("apiVersion") not in (None, r.group_version) or body.get("kind") not in (None, r.kind):
        raise ApiError(
            400,
            "BadRequest",
            f"the API version in the data ({body.get('apiVersion')}) does not match the expected API version "
            f"({r.group_version})"
            if body.get("apiVersion") != r.group_version
            else f"the kind in the data ({body.get('kind')}) does not match the expected kind ({r.kind})",
        )
    obj = copy.deepcopy(body)
    obj.update(apiVersion=r.group_version, kind=r.kind)
    root = schemas.root(schema_name(schemas.defs, r))
    unknown = schemas.unknown_fields(obj, root, prune=True)
    if unknown and directive == "Strict":
        raise cannot_handle(r, "strict decoding error: " + ", ".join(f'unknown field "{u}"' for u in unknown))
    if directive == "Warn":
        warnings += [f'unknown field "{u}"' for u in unknown]
    for _, value in quantity_fields(obj):
        if parse_quantity(value) is None:
            raise cannot_handle(r, QUANTITY_MSG)
    probe = copy.deepcopy(obj)
    meta = probe.setdefault("metadata", {})
    if not meta.get("name"):
        meta["name"] = (meta.get("generateName") or "x") + "x"
    problems = type_errors(probe, schema_path)
    if problems:
        raise cannot_handle(r, "; ".join(problems))
    return obj


def _pull_policy(image: str) -> str:
    """core/v1 defaults.go SetDefaults_Container: Always for :latest or no tag."""
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return "IfNotPresent"
    tag = last.split(":", 1)[1] if ":" in last else "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


def default_pod_spec(spec: dict[str, Any]) -> None:
    """core/v1 defaults.go: the fields the server fills in every pod spec."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    spec.setdefault("terminationGracePeriodSeconds", 30)
    for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        if c.get("image"):
            c.setdefault("imagePullPolicy", _pull_policy(c["image"]))
        c.setdefault("resources", {})
        for port in c.get("ports") or []:
            port.setdefault("protocol", "TCP")


def apply_defaults(kind: str, obj: dict[str, Any]) -> None:
    if kind == "Job":
        spec = obj.setdefault("spec", {})
        template = spec.setdefault("template", {})
        pod = template.setdefault("spec", {})
        policy = pod.get("restartPolicy")
        default_pod_spec(pod)
        if policy is None:
            pod.pop("restartPolicy")  # a Job's template has no default: validation requires one
        spec.setdefault("parallelism", 1)
        spec.setdefault("completions", 1)
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        spec.setdefault("podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed")
    elif kind == "Pod":
        default_pod_spec(obj.setdefault("spec", {}))
    elif kind == "PersistentVolumeClaim":
        obj.setdefault("spec", {}).setdefault("volumeMode", "Filesystem")
    elif kind == "Secret":
        obj.setdefault("type", "Opaque")


def job_selector(job: dict[str, Any]) -> None:
    """job strategy generateSelector: the controller-uid selector and the labels it matches."""
    meta, spec = job["metadata"], job["spec"]
    if spec.get("manualSelector"):
        return
    uid, name = meta["uid"], meta["name"]
    spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    labels = spec["template"].setdefault("metadata", {}).setdefault("labels", {})
    labels.update(
        {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": name,
            "controller-uid": uid,
            "job-name": name,
        }
    )
