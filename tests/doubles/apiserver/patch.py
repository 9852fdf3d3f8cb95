"""The three PATCH types the API server accepts besides apply.

- application/json-patch+json: RFC 6902 (https://www.rfc-editor.org/rfc/rfc6902), pointers RFC 6901
- application/merge-patch+json: RFC 7386 (https://www.rfc-editor.org/rfc/rfc7386): lists replace
- application/strategic-merge-patch+json: k8s.io/apimachinery/pkg/util/strategicpatch/patch.go,
  https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/ :
  lists with x-kubernetes-patch-strategy "merge" merge by their x-kubernetes-patch-merge-key,
  with the $patch, $retainKeys, $setElementOrder and $deleteFromPrimitiveList directives that
  `kubectl apply` sends. Not for custom resources (415, as patch.go's caller refuses it).
"""

from __future__ import annotations

import copy
from typing import Any

from tests.doubles.apiserver.errors import ApiError
from tests.doubles.apiserver.schema import Schemas


def _unprocessable(message: str) -> ApiError:
    return ApiError(422, "UnprocessableEntity", message)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _unprocessable(f'the server rejected our request due to an error in our request: invalid path "{path}"')
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str], op: str, path: str) -> tuple[Any, str]:
    node = doc
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise _unprocessable(
                f'jsonpatch {op} operation does not apply: doc is missing path: "{path}": missing value'
            )
    return node, parts[-1]


def json_patch(doc: Any, ops: Any) -> Any:
    """RFC 6902: add, remove, replace, move, copy, test."""
    if not isinstance(ops, list):
        raise ApiError(400, "BadRequest", "json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = copy.deepcopy(doc)
    for op in ops:
        kind, path = op.get("op"), op.get("path", "")
        parts = _pointer(path)
        if kind == "test":
            node = doc
            for part in parts:
                node = node[int(part)] if isinstance(node, list) else node.get(part)
            if node != op.get("value"):
                raise _unprocessable(f"testing value {path} failed: test failed")
            continue
        if kind in ("move", "copy"):
            src, key = _parent(doc, _pointer(op["from"]), kind, op["from"])
            value = copy.deepcopy(src[int(key)] if isinstance(src, list) else src[key])
            if kind == "move":
                del src[int(key) if isinstance(src, list) else key]
            kind, op = "add", {"value": value}
        if not parts:
            doc = copy.deepcopy(op.get("value"))
            continue
        parent, key = _parent(doc, parts, kind, path)
        if kind == "add":
            if isinstance(parent, list):
                index = len(parent) if key == "-" else int(key)
                if index > len(parent):
                    raise _unprocessable(f"jsonpatch add operation does not apply: index out of bounds: {path}")
                parent.insert(index, copy.deepcopy(op.get("value")))
            else:
                parent[key] = copy.deepcopy(op.get("value"))
        elif kind in ("remove", "replace"):
            missing = (
                (key not in parent) if isinstance(parent, dict) else not (key.isdigit() and int(key) < len(parent))
            )
            if missing:
                raise _unprocessable(
                    f"jsonpatch {kind} operation does not apply: doc is missing key: {path}: missing value"
                )
            index = int(key) if isinstance(parent, list) else key
            if kind == "remove":
                del parent[index]
            else:
                parent[index] = copy.deepcopy(op.get("value"))
        else:
            raise _unprocessable(f"Unexpected kind: {kind}")
    return doc


def strategic_merge(schemas: Schemas, original: Any, patch: Any, node: dict[str, Any], top: bool = True) -> Any:
    """A strategic merge patch applied to `original`, list semantics from the schema."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    out = copy.deepcopy(original) if isinstance(original, dict) else {}
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    orders = {k.split("/", 1)[1]: v for k, v in patch.items() if k.startswith("$setElementOrder/")}
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            out[field] = [v for v in out.get(field) or [] if v not in value]
            continue
        if key.startswith("$"):
            continue
        sub = schemas.child(node, key, top=top) or {}
        if value is None:
            out.pop(key, None)
        elif isinstance(value, list):
            out[key] = _merge_list(schemas, out.get(key), value, sub)
        elif isinstance(value, dict):
            merged = strategic_merge(schemas, out.get(key), value, sub, top=False)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        else:
            out[key] = copy.deepcopy(value)
    for key, order in orders.items():
        out[key] = _order(out.get(key) or [], order, schemas.resolve(schemas.child(node, key, top=top) or {}))
    return out


def _merge_list(schemas: Schemas, original: Any, patch: list[Any], node: dict[str, Any]) -> list[Any]:
    node = schemas.resolve(node)
    original = original if isinstance(original, list) else []
    if node.get("x-kubernetes-patch-strategy", "").split(",")[0] != "merge":
        return [v for v in copy.deepcopy(patch) if not (isinstance(v, dict) and "$patch" in v)]
    key = node.get("x-kubernetes-patch-merge-key")
    if not key:  # a merged list of primitives: the union
        return list(original) + [v for v in patch if v not in original]
    if any(isinstance(v, dict) and v.get("$patch") == "replace" for v in patch):
        return [copy.deepcopy(v) for v in patch if not (isinstance(v, dict) and "$patch" in v)]
    out = copy.deepcopy(original)
    items = schemas.items(node)
    for element in patch:
        if not isinstance(element, dict):
            continue
        found = next((i for i, o in enumerate(out) if isinstance(o, dict) and o.get(key) == element.get(key)), None)
        if element.get("$patch") == "delete":
            if found is not None:
                del out[found]
        elif found is None:
            out.append({k: v for k, v in copy.deepcopy(element).items() if not k.startswith("$")})
        else:
            out[found] = strategic_merge(schemas, out[found], element, items, top=False)
    return out


def _order(items: list[Any], order: list[Any], node: dict[str, Any]) -> list[Any]:
    key = node.get("x-kubernetes-patch-merge-key")

    def ident(v: Any) -> Any:
        return v.get(key) if key and isinstance(v, dict) else v

    wanted = [ident(o) for o in order]
    ranked = sorted((v for v in items if ident(v) in wanted), key=lambda v: wanted.index(ident(v)))
    return ranked + [v for v in items if ident(v) not in wanted]
