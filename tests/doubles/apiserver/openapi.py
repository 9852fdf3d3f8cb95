"""The OpenAPI documents the double publishes, built from the upstream definitions.

Kubernetes: the definitions kubernetes-validate bundles for the served release;
OpenShift: the shipped subset of the openshift/api document; PyTorchJob and TrainJob: the
shipped Kubeflow CRDs (ClusterTrainingRuntime and JobSet: open objects, their CRDs not
shipped). Every resource's POST, PUT and PATCH declare the `fieldValidation` query
parameter, as a real server's do, so `kubectl` leaves field validation to the server
(kubectl/pkg/util/openapi QueryParamVerifierV3). `/openapi/v2` answers an (empty) protobuf
document: kubectl downloads it only for kinds no v3 document names, skips validation of
kinds it does not list, and then reports "no matches for kind" from discovery, as it does
against a cluster.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import yaml

from bench.targets.manifests import OPENSHIFT_KINDS, TRAINJOB_CRD_FILE, crd_schema
from tests.doubles.apiserver.resources import SCHEMA_VERSION, Resource, group_versions

# openapi_v2.Document{swagger: "2.0"} in protobuf (gnostic OpenAPIv2.proto, field 1).
OPENAPI_V2_PROTOBUF = b"\x0a\x032.0"


def _v3(node: Any) -> Any:
    """A definition rewritten for an OpenAPI v3 document (refs, nullable); descriptions kept for `kubectl explain`."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("properties", "patternProperties", "definitions") and isinstance(value, dict):
                out[key] = {k: _v3(v) for k, v in value.items()}  # names, not keywords
            elif key == "$ref" and isinstance(value, str):
                out[key] = "#/components/schemas/" + value.rsplit("/", 1)[-1]
            elif key == "type" and isinstance(value, list):
                kinds = [v for v in value if v != "null"]
                out[key] = kinds[0] if len(kinds) == 1 else kinds
                if "null" in value:
                    out["nullable"] = True
            else:
                out[key] = _v3(value)
        if "$ref" in out and len(out) > 1:  # a field's own description beside its type: upstream's allOf form
            return {"allOf": [{"$ref": out.pop("$ref")}], **out}
        return out
    if isinstance(node, list):
        return [_v3(v) for v in node]
    return node


@functools.lru_cache(maxsize=2)
def all_schemas(schema_path: Path) -> dict[str, Any]:
    """Every definition the double knows, keyed as in the upstream documents."""
    k8s_file = (
        Path(kubernetes_validate.__file__).parent
        / "kubernetes-json-schema"
        / f"v{SCHEMA_VERSION}-local"
        / "_definitions.json"
    )
    schemas = {name: _v3(d) for name, d in json.loads(k8s_file.read_text())["$defs"].items()}
    gvk = {
        name: {"group": av.split("/")[0], "version": av.split("/")[1], "kind": kind}
        for (av, kind), name in OPENSHIFT_KINDS.items()
    }
    for name, d in json.loads(schema_path.read_text())["definitions"].items():
        if name not in schemas:
            schemas[name] = dict(_v3(d), **({"x-kubernetes-group-version-kind": [gvk[name]]} if name in gvk else {}))
    crd = yaml.load(
        (schema_path.parent / "kubeflow-pytorchjob-crd.yaml").read_text(),
        Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader),
    )
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schemas["org.kubeflow.v1.PyTorchJob"] = dict(
        _v3(schema),
        **{"x-kubernetes-group-version-kind": [{"group": "kubeflow.org", "version": "v1", "kind": "PyTorchJob"}]},
    )
    trainjob = crd_schema(schema_path.parent / TRAINJOB_CRD_FILE, "v1alpha1")
    schemas["org.kubeflow.trainer.v1alpha1.TrainJob"] = dict(
        _v3(trainjob),
        **{
            "x-kubernetes-group-version-kind": [
                {"group": "trainer.kubeflow.org", "version": "v1alpha1", "kind": "TrainJob"}
            ]
        },
    )
    # The runtime and JobSet CRDs are not shipped (about 0.9 MB each; bench never sends
    # either): the double stores them as sent, as a CRD with x-kubernetes-preserve-unknown-fields.
    for name, group, version, kind in UNSCHEMED:
        schemas[name] = {
            "type": "object",
            "description": f"{kind} (served by the API double without its CRD's schema)",
            "x-kubernetes-preserve-unknown-fields": True,
            "x-kubernetes-group-version-kind": [{"group": group, "version": version, "kind": kind}],
        }
    return schemas


UNSCHEMED = (
    (
        "org.kubeflow.trainer.v1alpha1.ClusterTrainingRuntime",
        "trainer.kubeflow.org",
        "v1alpha1",
        "ClusterTrainingRuntime",
    ),
    ("io.x-k8s.jobset.v1alpha2.JobSet", "jobset.x-k8s.io", "v1alpha2", "JobSet"),
)


def schema_name(schemas: dict[str, Any], r: Resource) -> str:
    for name, d in schemas.items():
        for g in d.get("x-kubernetes-group-version-kind") or []:
            if (g.get("group", ""), g["version"], g["kind"]) == (r.group, r.version, r.kind):
                return name
    raise KeyError(f"no definition for {r.group_version} {r.kind}")


def openapi_v3_document(gv: str, resources: list[Resource], schema_path: Path) -> dict[str, Any]:
    """One group version's document: its resources' paths, and the schemas they need."""
    schemas = all_schemas(schema_path)
    paths: dict[str, Any] = {}
    params = [
        {"name": name, "in": "query", "schema": {"type": "string"}, "uniqueItems": True}
        for name in ("dryRun", "fieldManager", "fieldValidation")
    ]
    for r in (r for r in resources if r.group_version == gv):
        name = schema_name(schemas, r)
        gvk = {"group": r.group, "version": r.version, "kind": r.kind}
        ref = {"content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}}

        def op(action: str, verb: str, code: str = "200", r=r, ref=ref, gvk=gvk) -> dict[str, Any]:
            return {
                "operationId": f"{verb}{r.kind}",
                "parameters": params,
                "requestBody": ref,
                "responses": {code: dict(ref, description="OK")},
                "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": gvk,
            }

        paths[r.base_path()] = {"post": op("post", "create", "201")}
        paths[r.base_path() + "/{name}"] = {
            "get": {
                "operationId": f"read{r.kind}",
                "responses": {"200": dict(ref, description="OK")},
                "x-kubernetes-action": "get",
                "x-kubernetes-group-version-kind": gvk,
            },
            "put": op("put", "replace"),
            "patch": op("patch", "patch"),
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Atlas API double", "version": f"v{SCHEMA_VERSION}"},
        "paths": paths,
        "components": {
            "schemas": _reachable(schemas, [schema_name(schemas, r) for r in resources if r.group_version == gv])
        },
    }


def _reachable(schemas: dict[str, Any], roots: list[str]) -> dict[str, Any]:
    """The definitions the roots refer to, transitively (a real document lists only those too)."""
    seen: dict[str, Any] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen or name not in schemas:
            continue
        seen[name] = schemas[name]
        todo += [ref.rsplit("/", 1)[-1] for ref in _refs(schemas[name])]
    return seen


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        out = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return out + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


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
