"""What the decoder does with a body: unknown fields, types, and the list semantics of patches.

Unknown fields: the server's strict decoding (KEP-2885 server-side field validation,
https://kubernetes.io/docs/reference/using-api/api-concepts/#field-validation) reports them
for fieldValidation=Strict (400 "strict decoding error: unknown field ..."), warns for Warn,
and for Ignore drops them silently, as `kubectl --validate=false` expects. Types are checked
against kubernetes-validate's schemas for the served release (Kubernetes kinds), the shipped
openshift/api definitions and the Kubeflow CRD: a wrong type is a decode error (400), as
`json: cannot unmarshal ...` is on a cluster. The walker also tells patch.py and apply.py how
each list merges (x-kubernetes-patch-merge-key / x-kubernetes-list-type / list-map-keys).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate

from bench.targets.manifests import (
    OPENSHIFT_KINDS,
    PYTORCHJOB,
    PYTORCHJOB_CRD_FILE,
    TRAINJOB,
    TRAINJOB_CRD_FILE,
    validate_openshift,
    validate_pytorchjob,
    validate_trainjob,
)
from tests.doubles.apiserver.openapi import all_schemas
from tests.doubles.apiserver.resources import SCHEMA_VERSION

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


class Schemas:
    """Resolves definitions and walks them beside an object."""

    def __init__(self, schema_path: Path) -> None:
        self.schema_path = schema_path
        self.defs = all_schemas(schema_path)

    def resolve(self, node: dict[str, Any] | None) -> dict[str, Any]:
        node = node or {}
        for _ in range(20):
            if "$ref" in node:
                node = self.defs.get(node["$ref"].rsplit("/", 1)[-1], {})
            elif len(node.get("allOf") or []) == 1:
                node = node["allOf"][0]
            else:
                break
        return node

    def root(self, name: str) -> dict[str, Any]:
        return self.resolve({"$ref": name})

    def child(self, node: dict[str, Any], key: str, top: bool = False) -> dict[str, Any] | None:
        """The schema of `key` inside `node`; None where the key is unknown."""
        node = self.resolve(node)
        if key == "metadata" and (top or node.get("x-kubernetes-embedded-resource")):
            return self.root(OBJECT_META)
        props = node.get("properties")
        if props is not None and key in props:
            sub = self.resolve(props[key])
            if key == "metadata" and sub.get("type") == "object" and not sub.get("properties"):
                return self.root(OBJECT_META)  # a CRD's metadata: the server's ObjectMeta
            return sub
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            return self.resolve(extra)
        if extra is True or node.get("x-kubernetes-preserve-unknown-fields") or props is None:
            return {"x-kubernetes-preserve-unknown-fields": True}
        return None

    def items(self, node: dict[str, Any]) -> dict[str, Any]:
        return self.resolve(self.resolve(node).get("items"))

    def unknown_fields(self, obj: Any, node: dict[str, Any], path: str = "", prune: bool = False) -> list[str]:
        """Paths of fields the schema does not know (removed from obj when prune)."""
        node = self.resolve(node)
        out: list[str] = []
        if node.get("x-kubernetes-preserve-unknown-fields") or "oneOf" in node or "anyOf" in node:
            return out
        if isinstance(obj, dict):
            for key in list(obj):
                here = f"{path}.{key}" if path else key
                sub = self.child(node, key, top=not path)
                if sub is None:
                    out.append(here)
                    if prune:
                        del obj[key]
                else:
                    out += self.unknown_fields(obj[key], sub, here, prune)
        elif isinstance(obj, list):
            sub = self.items(node)
            for i, value in enumerate(obj):
                out += self.unknown_fields(value, sub, f"{path}[{i}]", prune)
        return out


def type_errors(obj: dict[str, Any], schema_path: Path) -> list[str]:
    """Type problems of an object whose unknown fields are gone (path: message)."""
    key = (obj.get("apiVersion"), obj.get("kind"))
    if key == PYTORCHJOB:
        return validate_pytorchjob(obj, schema_path.parent / PYTORCHJOB_CRD_FILE)
    if key == TRAINJOB:
        return validate_trainjob(obj, schema_path.parent / TRAINJOB_CRD_FILE)
    if key in OPENSHIFT_KINDS:
        return validate_openshift(obj, schema_path)
    if key[0] in ("trainer.kubeflow.org/v1alpha1", "jobset.x-k8s.io/v1alpha2"):
        return []  # a runtime or JobSet: stored as sent (openapi.py UNSCHEMED)
    try:
        kubernetes_validate.validate(obj, SCHEMA_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [f"{'.'.join(str(p) for p in exc.path) or '(top level)'}: {exc.message}"]
    return []
