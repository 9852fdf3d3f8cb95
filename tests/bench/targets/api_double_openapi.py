"""What the API double tells clients about itself: discovery, OpenAPI v3, and Tables.

The resource list is the one place that says which kinds the double serves. The OpenAPI
v3 documents are built from the full upstream definitions (Kubernetes: those bundled with
kubernetes-validate for the targeted release; OpenShift: the shipped subset of the
openshift/api document; PyTorchJob: the shipped Kubeflow CRD), and every resource's PATCH
operation declares the `fieldValidation` query parameter as a real 1.33 server does, so
`kubectl` asks for strict validation (`fieldValidation=Strict`) and the double enforces it
with the same strict schemas.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes_validate
import yaml

from bench.targets.manifests import KUBERNETES_VERSION, OPENSHIFT_KINDS


@dataclass(frozen=True)
class Resource:
    group_version: str  # "v1" for the core group
    plural: str
    kind: str
    namespaced: bool = True
    verbs: tuple[str, ...] = ("create", "delete", "get", "list", "patch", "watch")
    subresources: tuple[str, ...] = ()

    @property
    def group(self) -> str:
        return self.group_version.split("/")[0] if "/" in self.group_version else ""

    @property
    def version(self) -> str:
        return self.group_version.rsplit("/", 1)[-1]

    def base_path(self, namespace: str | None = "{namespace}") -> str:
        root = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        return f"{root}/namespaces/{namespace}/{self.plural}" if self.namespaced else f"{root}/{self.plural}"


RESOURCES = [
    Resource("v1", "namespaces", "Namespace", namespaced=False),
    Resource("v1", "serviceaccounts", "ServiceAccount"),
    Resource("v1", "secrets", "Secret"),
    Resource("v1", "persistentvolumeclaims", "PersistentVolumeClaim"),
    Resource("v1", "pods", "Pod", subresources=("exec", "log")),
    Resource("rbac.authorization.k8s.io/v1", "roles", "Role"),
    Resource("rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding"),
    Resource("batch/v1", "jobs", "Job"),
    Resource("build.openshift.io/v1", "buildconfigs", "BuildConfig", subresources=("instantiate",)),
    Resource("build.openshift.io/v1", "builds", "Build"),
    Resource("image.openshift.io/v1", "imagestreams", "ImageStream"),
    Resource("kubeflow.org/v1", "pytorchjobs", "PyTorchJob"),
]
KUBEFLOW_GROUP = "kubeflow.org/v1"


def group_versions(resources: list[Resource]) -> list[str]:
    return list(dict.fromkeys(r.group_version for r in resources))


def api_resource_list(gv: str, resources: list[Resource]) -> dict[str, Any]:
    items = []
    for r in (r for r in resources if r.group_version == gv):
        items.append(
            {
                "name": r.plural,
                "singularName": r.kind.lower(),
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": list(r.verbs),
            }
        )
        for sub in r.subresources:
            kind = {"exec": "PodExecOptions", "log": "Pod", "instantiate": "BuildRequest"}[sub]
            items.append(
                {
                    "name": f"{r.plural}/{sub}",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "kind": kind,
                    "verbs": ["create", "get"] if sub != "instantiate" else ["create"],
                }
            )
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": items}


def api_group_list(resources: list[Resource]) -> dict[str, Any]:
    groups = [
        {
            "name": gv.split("/")[0],
            "versions": [{"groupVersion": gv, "version": gv.split("/")[1]}],
            "preferredVersion": {"groupVersion": gv, "version": gv.split("/")[1]},
        }
        for gv in group_versions(resources)
        if "/" in gv
    ]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


# -- OpenAPI v3 ------------------------------------------------------------------------
def _v3(node: Any, ref_prefix: str) -> Any:
    """A definition rewritten for an OpenAPI v3 document (refs, nullable), minus prose."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "description":
                continue
            if key in ("properties", "patternProperties", "definitions") and isinstance(value, dict):
                out[key] = {k: _v3(v, ref_prefix) for k, v in value.items()}  # names, not keywords
            elif key == "$ref" and isinstance(value, str):
                out[key] = "#/components/schemas/" + value.rsplit("/", 1)[-1]
            elif key == "type" and isinstance(value, list):
                kinds = [v for v in value if v != "null"]
                out[key] = kinds[0] if len(kinds) == 1 else kinds
                if "null" in value:
                    out["nullable"] = True
            else:
                out[key] = _v3(value, ref_prefix)
        return out
    if isinstance(node, list):
        return [_v3(v, ref_prefix) for v in node]
    return node


@functools.lru_cache(maxsize=2)
def all_schemas(schema_path: Path) -> dict[str, Any]:
    """Every definition the double knows, keyed as in the upstream documents."""
    k8s_file = (
        Path(kubernetes_validate.__file__).parent
        / "kubernetes-json-schema"
        / f"v{KUBERNETES_VERSION}-local"
        / "_definitions.json"
    )
    schemas = {name: _v3(d, "$defs") for name, d in json.loads(k8s_file.read_text())["$defs"].items()}
    gvk = {
        name: {"group": av.split("/")[0], "version": av.split("/")[1], "kind": kind}
        for (av, kind), name in OPENSHIFT_KINDS.items()
    }
    for name, d in json.loads(schema_path.read_text())["definitions"].items():
        if name not in schemas:
            schemas[name] = dict(
                _v3(d, "definitions"), **({"x-kubernetes-group-version-kind": [gvk[name]]} if name in gvk else {})
            )
    crd = yaml.load(
        (schema_path.parent / "kubeflow-pytorchjob-crd.yaml").read_text(),
        Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader),
    )
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schemas["org.kubeflow.v1.PyTorchJob"] = dict(
        _v3(schema, ""),
        **{"x-kubernetes-group-version-kind": [{"group": "kubeflow.org", "version": "v1", "kind": "PyTorchJob"}]},
    )
    return schemas


def _schema_name(schemas: dict[str, Any], r: Resource) -> str:
    for name, d in schemas.items():
        for g in d.get("x-kubernetes-group-version-kind") or []:
            if (g.get("group", ""), g["version"], g["kind"]) == (r.group, r.version, r.kind):
                return name
    raise KeyError(f"no definition for {r.group_version} {r.kind}")


def openapi_v3_document(gv: str, resources: list[Resource], schema_path: Path) -> dict[str, Any]:
    """One group version's document: its resources' paths, and the schemas they need."""
    schemas = all_schemas(schema_path)
    paths: dict[str, Any] = {}
    validation = {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}, "uniqueItems": True}
    for r in (r for r in resources if r.group_version == gv):
        name = _schema_name(schemas, r)
        gvk = {"group": r.group, "version": r.version, "kind": r.kind}
        ref = {"content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}}
        paths[r.base_path()] = {
            "post": {
                "operationId": f"create{r.kind}",
                "parameters": [validation],
                "requestBody": ref,
                "responses": {"201": dict(ref, description="Created")},
                "x-kubernetes-action": "post",
                "x-kubernetes-group-version-kind": gvk,
            }
        }
        paths[r.base_path() + "/{name}"] = {
            "get": {
                "operationId": f"read{r.kind}",
                "responses": {"200": dict(ref, description="OK")},
                "x-kubernetes-action": "get",
                "x-kubernetes-group-version-kind": gvk,
            },
            "patch": {
                "operationId": f"patch{r.kind}",
                "parameters": [validation],
                "responses": {"200": dict(ref, description="OK")},
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": gvk,
            },
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Atlas API double", "version": f"v{KUBERNETES_VERSION}"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def openapi_v3_root(resources: list[Resource]) -> dict[str, Any]:
    def url(gv: str) -> str:
        prefix = "api/v1" if gv == "v1" else f"apis/{gv}"
        return f"/openapi/v3/{prefix}?hash={hashlib.sha256(gv.encode()).hexdigest()[:32].upper()}"

    return {
        "paths": {
            ("api/v1" if gv == "v1" else f"apis/{gv}"): {"serverRelativeURL": url(gv)}
            for gv in group_versions(resources)
        }
    }


# -- server-side printing (kubectl get asks for a Table) -----------------------------------
def _age(obj: dict[str, Any]) -> str:
    created = (obj.get("metadata") or {}).get("creationTimestamp")
    if not created:
        return "<unknown>"
    seconds = max(0, int(time.time() - time.mktime(time.strptime(created, "%Y-%m-%dT%H:%M:%SZ")) + time.timezone))
    return f"{seconds}s" if seconds < 120 else f"{seconds // 60}m"


def _status(r: Resource, obj: dict[str, Any]) -> str:
    st = obj.get("status") or {}
    if r.plural in ("builds", "pods"):
        return st.get("phase", "")
    if r.plural in ("jobs", "pytorchjobs"):
        done = [c["type"] for c in st.get("conditions") or [] if c.get("status") == "True"]
        return done[-1] if done else "Running"
    return ""


def table(r: Resource, items: list[dict[str, Any]]) -> dict[str, Any]:
    """A meta.k8s.io/v1 Table: NAME, STATUS (where the kind has one), AGE."""
    has_status = r.plural in ("builds", "pods", "jobs", "pytorchjobs")
    columns = [{"name": "Name", "type": "string", "format": "name", "description": "", "priority": 0}]
    if has_status:
        columns.append({"name": "Status", "type": "string", "format": "", "description": "", "priority": 0})
    columns.append({"name": "Age", "type": "string", "format": "", "description": "", "priority": 0})
    rows = [
        {
            "cells": [o["metadata"]["name"], *([_status(r, o)] if has_status else []), _age(o)],
            "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]},
        }
        for o in items
    ]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": ""},
        "columnDefinitions": columns,
        "rows": rows,
    }
