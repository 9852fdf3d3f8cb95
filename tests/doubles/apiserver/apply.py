"""Server-side apply and metadata.managedFields.

Follows https://kubernetes.io/docs/reference/using-api/server-side-apply/ and
k8s.io/apimachinery/pkg/util/managedfields (fieldsV1 encoding; conflict texts of
internal/conflict.go): every write records which manager owns which fields; an apply
that sets a field another manager owns with a different value is refused with 409
Conflict unless forced; an applier's fields it no longer applies are removed.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from tests.doubles.apiserver.errors import ApiError
from tests.doubles.apiserver.schema import Schemas

IDENTITY = {
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
}

Path = tuple[str, ...]


def field_paths(
    schemas: Schemas, obj: Any, node: dict[str, Any], prefix: Path = (), top: bool = True
) -> dict[Path, Any]:
    """Leaf paths (fieldsV1 elements: f:, k:{...}) of obj, with their values."""
    out: dict[Path, Any] = {}
    if not isinstance(obj, dict):
        return {prefix: obj}
    for key, value in obj.items():
        if top and key in ("apiVersion", "kind", "status"):
            continue
        if prefix == ("f:metadata",) and key in IDENTITY:
            continue
        here = (*prefix, f"f:{key}")
        sub = schemas.child(node, key, top=top) or {}
        res = schemas.resolve(sub)
        if isinstance(value, dict) and value:
            out.update(field_paths(schemas, value, sub, here, top=False))
        elif isinstance(value, list) and res.get("x-kubernetes-list-type") == "map" and value:
            keys = res.get("x-kubernetes-list-map-keys") or []
            items = schemas.items(res)
            for element in value:
                ident = json.dumps({k: element.get(k) for k in keys if k in element}, separators=(",", ":"))
                mark = (*here, f"k:{ident}")
                out[(*mark, ".")] = None
                out.update(field_paths(schemas, element, items, mark, top=False))
        else:
            out[here] = value
    return out


def encode(paths: set[Path]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path in sorted(paths):
        node = tree
        for part in path:
            node = node.setdefault(part, {})
    return tree


def readable(path: Path) -> str:
    out = ""
    for part in path:
        if part == ".":
            continue
        if part.startswith("f:"):
            out += "." + part[2:]
        elif part.startswith("k:"):
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in json.loads(part[2:]).items()) + "]"
    return out


class ManagedFields:
    """Who owns which fields of one object: {(manager, operation): (apiVersion, time, paths)}."""

    def __init__(self, entries: dict[tuple[str, str], tuple[str, str, set[Path]]] | None = None) -> None:
        self.entries = entries or {}

    def to_json(self) -> list[dict[str, Any]]:
        return [
            {
                "manager": manager,
                "operation": operation,
                "apiVersion": api_version,
                "time": time,
                "fieldsType": "FieldsV1",
                "fieldsV1": encode(paths),
            }
            for (manager, operation), (api_version, time, paths) in self.entries.items()
            if paths
        ]

    def update(self, manager: str, api_version: str, now: str, old: dict[Path, Any], new: dict[Path, Any]) -> None:
        """An Update operation: the manager takes every field it changed or added."""
        changed = {p for p, v in new.items() if p not in old or old[p] != v}
        for key, (av, t, paths) in list(self.entries.items()):
            kept = {p for p in paths if p in new} - (changed if key != (manager, "Update") else set())
            self.entries[key] = (av, t, kept)
        av, t, mine = self.entries.get((manager, "Update"), (api_version, now, set()))
        self.entries[(manager, "Update")] = (api_version, now, (mine | changed) & set(new))

    def apply(
        self, manager: str, api_version: str, now: str, live: dict[Path, Any], applied: dict[Path, Any], force: bool
    ) -> set[Path]:
        """Record an apply; returns the paths the applier dropped that nobody else owns."""
        conflicts: dict[str, list[Path]] = {}
        for (other, op), (av, _, paths) in self.entries.items():
            if other == manager and op == "Apply":
                continue
            for p in paths & set(applied):
                if p in live and live[p] != applied[p]:
                    conflicts.setdefault(f'"{other}" using {av}', []).append(p)
        if conflicts and not force:
            count = sum(len(v) for v in conflicts.values())
            parts = []
            for who, paths in conflicts.items():
                if len(paths) == 1 and len(conflicts) == 1:
                    parts.append(f"conflict with {who}: {readable(paths[0])}")
                else:
                    parts.append(f"conflicts with {who}:\n" + "\n".join(f"- {readable(p)}" for p in paths))
            raise ApiError(
                409,
                "Conflict",
                f"Apply failed with {count} conflict{'s' if count > 1 else ''}: " + "\n".join(parts),
                {
                    "causes": [
                        {"reason": "FieldManagerConflict", "message": f"conflict with {who}", "field": readable(p)}
                        for who, paths in conflicts.items()
                        for p in paths
                    ]
                },
            )
        taken = {p for paths in conflicts.values() for p in paths}
        others: set[Path] = set()
        for key, (av, t, paths) in list(self.entries.items()):
            if key != (manager, "Apply"):
                self.entries[key] = (av, t, paths - taken)
                others |= paths - taken
        _, _, before = self.entries.get((manager, "Apply"), (api_version, now, set()))
        self.entries[(manager, "Apply")] = (api_version, now, set(applied))
        return {p for p in before if p not in applied and p not in others}

    @classmethod
    def from_object(cls, obj: dict[str, Any]) -> ManagedFields:
        entries = {}
        for e in (obj.get("metadata") or {}).get("managedFields") or []:
            entries[(e["manager"], e["operation"])] = (
                e["apiVersion"],
                e.get("time", ""),
                _decode(e.get("fieldsV1") or {}),
            )
        return cls(entries)


def _decode(tree: dict[str, Any], prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    for key, sub in tree.items():
        if sub:
            out |= _decode(sub, (*prefix, key))
        else:
            out.add((*prefix, key))
    return out


def remove_paths(obj: dict[str, Any], paths: set[Path]) -> None:
    """Delete the leaves (and list elements, for their '.' marker) named by paths."""
    for path in sorted(paths, key=len, reverse=True):
        parts = list(path[:-1]) if path[-1] == "." else list(path)
        _remove(obj, parts)


def _remove(node: Any, parts: list[str]) -> None:
    head, rest = parts[0], parts[1:]
    if head.startswith("f:") and isinstance(node, dict):
        key = head[2:]
        if key not in node:
            return
        if rest:
            _remove(node[key], rest)
            if node[key] in ({}, []):
                del node[key]
        else:
            del node[key]
    elif head.startswith("k:") and isinstance(node, list):
        want = json.loads(head[2:])
        for i, element in enumerate(node):
            if isinstance(element, dict) and all(element.get(k) == v for k, v in want.items()):
                if rest:
                    _remove(element, rest)
                else:
                    del node[i]
                return


def strip_server_fields(config: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(config)
    out.pop("status", None)
    return out
