"""Create, replace (PUT), patch, apply and delete: the API server's write path for one object.

k8s.io/apiserver/pkg/endpoints/handlers (create.go, update.go, patch.go, delete.go) and
pkg/registry/rest: decode -> default -> validate -> admit -> store. Dry-run
(`dryRun=All`, https://kubernetes.io/docs/reference/using-api/api-concepts/#dry-run) runs
every step but the store. A namespace being deleted refuses new objects
(plugin/pkg/admission/namespace/lifecycle: "unable to create new content in namespace ...
because it is being terminated").
"""

from __future__ import annotations

import copy
import secrets
from typing import Any

import yaml

from tests.doubles.apiserver.apply import ManagedFields, field_paths, remove_paths, strip_server_fields
from tests.doubles.apiserver.decode import apply_defaults, decode, job_selector
from tests.doubles.apiserver.errors import ApiError, bad_request, conflict, invalid, not_found, qualified
from tests.doubles.apiserver.openapi import schema_name
from tests.doubles.apiserver.patch import json_patch, merge_patch, strategic_merge
from tests.doubles.apiserver.resources import Resource
from tests.doubles.apiserver.validate import validate_object, validate_update

NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apiserver/pkg/storage/names: SimpleNameGenerator
PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": "apply",
}


class Writes:
    """Mixed into the double: needs store, schemas, clock, record(), namespace state."""

    def _ns_admission(self, r: Resource, name: str) -> None:
        if not r.namespaced:
            return
        ns = self.store["namespaces"].get(self.namespace)
        if ns is None:
            raise not_found("namespaces", "", self.namespace)
        if (ns.get("status") or {}).get("phase") == "Terminating":
            raise ApiError(
                403,
                "Forbidden",
                f'{qualified(r.plural, r.group)} "{name}" is forbidden: unable to create new content in namespace '
                f"{self.namespace} because it is being terminated",
                {
                    "name": name,
                    "group": r.group,
                    "kind": r.plural,
                    "causes": [
                        {
                            "reason": "NamespaceTerminating",
                            "message": f"namespace {self.namespace} is being terminated",
                            "field": "metadata.namespace",
                        }
                    ],
                },
            )

    def _manager(self, query: dict[str, list[str]], agent: str) -> str:
        given = (query.get("fieldManager") or [""])[0]
        return given or (agent.split("/", 1)[0] if agent else "unknown")

    def _directive(self, query: dict[str, list[str]]) -> str:
        return (query.get("fieldValidation") or ["Warn"])[0]

    def _finish(self, r: Resource, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        """Defaults, then validation (create or update rules)."""
        apply_defaults(r.kind, obj)
        if old is None and r.kind == "Job":
            job_selector(obj)  # job strategy PrepareForCreate: before validation, so a name > 63 fails its label
        meta = obj["metadata"]
        errs = validate_update(r.kind, old, obj) if old is not None else validate_object(r.kind, obj)
        if errs:
            raise invalid(r.kind, r.group, meta.get("name") or meta.get("generateName", ""), errs.items)

    def _paths(self, r: Resource, obj: dict[str, Any]) -> dict:
        return field_paths(self.schemas, obj, self.schemas.root(schema_name(self.schemas.defs, r)))

    def create(self, r: Resource, body: Any, query: dict[str, list[str]], agent: str) -> tuple[int, dict[str, Any]]:
        obj = decode(self.schemas, self.schema_path, r, body, self._directive(query), self.warnings)
        meta = obj.setdefault("metadata", {})
        if r.namespaced and meta.get("namespace", self.namespace) != self.namespace:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        self._ns_admission(r, meta.get("name") or meta.get("generateName", ""))
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(secrets.choice(NAME_ALPHABET) for _ in range(5))
        if meta.get("name") in self.store[r.plural]:
            raise ApiError(
                409,
                "AlreadyExists",
                f'{qualified(r.plural, r.group)} "{meta["name"]}" already exists',
                {"name": meta["name"], "group": r.group, "kind": r.plural},
            )
        if r.namespaced:
            meta["namespace"] = self.namespace
        meta.update(uid=self.new_uid(), creationTimestamp=self.clock.stamp())
        meta.pop("resourceVersion", None)
        if r.kind not in ("Namespace", "ServiceAccount", "Secret", "Role", "RoleBinding", "Event"):
            meta["generation"] = 1
        obj.pop("status", None)
        self._finish(r, obj, None)
        if r.plural == "trainjobs":
            self.admit_trainjob(obj)  # the Trainer's validating webhook (trainer.py)
        self._own_update(r, obj, None, self._manager(query, agent))
        obj["status"] = self.initial_status(r, obj)
        if "dryRun" in query:
            return 201, obj
        stored = self.record(r.plural, obj, "ADDED")
        self.after_create(r, stored)
        return 201, stored

    def _own_update(self, r: Resource, new: dict[str, Any], old: dict[str, Any] | None, manager: str) -> None:
        managed = ManagedFields.from_object(old or {})
        managed.update(manager, r.group_version, self.clock.stamp(), self._paths(r, old or {}), self._paths(r, new))
        new["metadata"]["managedFields"] = managed.to_json()

    def _carry(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        """What a write to the main resource cannot change: identity, and the status."""
        for key in ("uid", "creationTimestamp", "namespace", "name", "generation", "deletionTimestamp"):
            if key in old["metadata"]:
                new["metadata"][key] = old["metadata"][key]
        if "status" in old:
            new["status"] = copy.deepcopy(old["status"])
        if new.get("spec") != old.get("spec") and "generation" in old["metadata"]:
            new["metadata"]["generation"] = old["metadata"]["generation"] + 1

    def replace(
        self, r: Resource, name: str, body: Any, query: dict[str, list[str]], agent: str
    ) -> tuple[int, dict[str, Any]]:
        old = self.store[r.plural].get(name)
        if old is None:
            raise not_found(r.plural, r.group, name)
        obj = decode(self.schemas, self.schema_path, r, body, self._directive(query), self.warnings)
        meta = obj.setdefault("metadata", {})
        if meta.get("name") not in (None, name):
            raise bad_request("the name of the object does not match the name on the URL")
        meta["name"] = name
        rv = meta.get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise conflict(r.plural, r.group, name)
        self._carry(obj, old)
        self._finish(r, obj, old)
        self._own_update(r, obj, old, self._manager(query, agent))
        if "dryRun" in query:
            return 200, obj
        return 200, self.record(r.plural, obj)

    def patch(
        self, r: Resource, name: str, body: bytes, content_type: str, query: dict[str, list[str]], agent: str
    ) -> tuple[int, dict[str, Any]]:
        kind = PATCH_TYPES.get(content_type.split(";")[0].strip())
        if kind is None:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types include: "
                + ", ".join(PATCH_TYPES),
            )
        if kind == "apply":
            return self._apply(r, name, body, query)
        old = self.store[r.plural].get(name)
        if old is None:
            raise not_found(r.plural, r.group, name)
        doc = _json(body)
        if kind == "json":
            patched = json_patch(old, doc)
        elif kind == "merge":
            patched = merge_patch(old, doc)
        elif r.group_version.startswith("kubeflow.org"):
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"strategic merge patch is not supported for {r.group_version}, Kind={r.kind}",
            )
        else:
            root = self.schemas.root(schema_name(self.schemas.defs, r))
            patched = strategic_merge(self.schemas, old, doc, root)
        obj = decode(self.schemas, self.schema_path, r, patched, self._directive(query), self.warnings)
        obj["metadata"]["name"] = name
        rv = (doc.get("metadata") or {}).get("resourceVersion") if isinstance(doc, dict) else None
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise conflict(r.plural, r.group, name)
        self._carry(obj, old)
        self._finish(r, obj, old)
        self._own_update(r, obj, old, self._manager(query, agent))
        if "dryRun" in query:
            return 200, obj
        return 200, self.record(r.plural, obj)

    def _apply(self, r: Resource, name: str, body: bytes, query: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        manager = (query.get("fieldManager") or [""])[0]
        if not manager:
            raise bad_request("PATCH /apply: fieldManager: Required value: is required for apply patch")
        try:
            config = yaml.safe_load(body.decode() or "{}")
        except yaml.YAMLError as exc:
            raise bad_request(f"error decoding YAML: {exc}") from None
        config = decode(self.schemas, self.schema_path, r, config, self._directive(query), self.warnings)
        config = strip_server_fields(config)
        if (config.get("metadata") or {}).get("name") not in (None, name):
            raise bad_request("the name of the object does not match the name on the URL")
        old = self.store[r.plural].get(name)
        force = (query.get("force") or ["false"])[0] == "true"
        root = self.schemas.root(schema_name(self.schemas.defs, r))
        if old is None:
            self._ns_admission(r, name)
            base: dict[str, Any] = {"apiVersion": r.group_version, "kind": r.kind, "metadata": {"name": name}}
            managed = ManagedFields()
        else:
            base = copy.deepcopy(old)
            managed = ManagedFields.from_object(old)
        live = self._paths(r, base)
        applied = self._paths(r, config)
        dropped = managed.apply(manager, r.group_version, self.clock.stamp(), live, applied, force)
        merged = strategic_merge(self.schemas, base, config, root)
        remove_paths(merged, dropped)
        merged["metadata"]["managedFields"] = managed.to_json()
        if old is None:
            merged["metadata"].update(name=name, uid=self.new_uid(), creationTimestamp=self.clock.stamp())
            if r.namespaced:
                merged["metadata"]["namespace"] = self.namespace
            if r.kind not in ("Namespace", "ServiceAccount", "Secret", "Role", "RoleBinding"):
                merged["metadata"]["generation"] = 1
            self._finish(r, merged, None)
            merged["status"] = self.initial_status(r, merged)
            if "dryRun" in query:
                return 201, merged
            stored = self.record(r.plural, merged, "ADDED")
            self.after_create(r, stored)
            return 201, stored
        self._carry(merged, old)
        self._finish(r, merged, old)
        if "dryRun" in query:
            return 200, merged
        return 200, self.record(r.plural, merged)

    def delete(self, r: Resource, name: str, body: Any, query: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        obj = self.store[r.plural].get(name)
        if obj is None:
            raise not_found(r.plural, r.group, name)
        if "dryRun" in query or (isinstance(body, dict) and body.get("dryRun")):
            return 200, obj
        self.deleted.append((f"{r.plural}/{name}", body))
        if r.plural == "namespaces":
            return 200, self.terminate_namespace(obj)
        gone = self.record(r.plural, obj, "DELETED")
        for pod in self.owned_pods(r.plural, name):
            self.record("pods", pod, "DELETED")
        self._collect_dependents(obj["metadata"].get("uid"))
        return 200, gone

    def _collect_dependents(self, uid: str | None) -> None:
        """The garbage collector: what the deleted object owned goes too, and what that owned."""
        if not uid:
            return
        for plural, objects in self.store.items():
            for dependent in list(objects.values()):
                owners = dependent["metadata"].get("ownerReferences") or []
                if any(o.get("uid") == uid for o in owners):
                    self.record(plural, dependent, "DELETED")
                    self._collect_dependents(dependent["metadata"].get("uid"))


def _json(body: bytes) -> Any:
    import json

    try:
        return json.loads(body or b"null")
    except ValueError:
        raise ApiError(400, "BadRequest", "the body of the request was in an unknown format") from None
