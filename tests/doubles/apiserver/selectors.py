"""Label and field selectors of list and watch requests, parsed and refused as the API server does.

Label selectors follow k8s.io/apimachinery/pkg/labels/selector.go (Parse): `key`, `!key`,
`key=v`, `key==v`, `key!=v`, `key in (a,b)`, `key notin (a,b)`, `key>n`, `key<n`; `!=` and
`notin` match objects without the key. A selector that does not parse is a 400 BadRequest.

Field selectors follow k8s.io/apimachinery/pkg/fields/selector.go (ParseSelector: `=`, `==`,
`!=` only) and each kind's field label conversion: a field the kind does not offer is refused
by the list and watch handlers (k8s.io/apiserver/pkg/endpoints/handlers/get.go) with a 400
"field label not supported: FIELD", never answered with an empty list. The fields per kind
are upstream's: every kind offers metadata.name and metadata.namespace
(runtime.DefaultMetaV1FieldSelectorConversion); Pods, Events, Secrets, Namespaces
(pkg/apis/core/v1/conversion.go) and Jobs (pkg/apis/batch/v1/conversion.go) add their own,
with the values their strategies' ToSelectableFields give (pkg/registry/*/*/strategy.go):
a Job's `status.successful` is its `status.succeeded` count.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tests.doubles.apiserver.errors import ApiError


def _path(*parts: str) -> Callable[[dict[str, Any]], str]:
    def get(obj: dict[str, Any]) -> str:
        node: Any = obj
        for part in parts:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, bool):
            return "true" if node else "false"
        return "" if node is None else str(node)

    return get


def _pod_ip(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("podIP") or "")


def _event_source(event: dict[str, Any]) -> str:
    return str((event.get("source") or {}).get("component") or event.get("reportingComponent") or "")


_INVOLVED = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
META = {"metadata.name": _path("metadata", "name"), "metadata.namespace": _path("metadata", "namespace")}
SELECTABLE: dict[str, dict[str, Callable[[dict[str, Any]], str]]] = {
    "Pod": {
        **META,
        "spec.nodeName": _path("spec", "nodeName"),
        "spec.restartPolicy": _path("spec", "restartPolicy"),
        "spec.schedulerName": _path("spec", "schedulerName"),
        "spec.serviceAccountName": _path("spec", "serviceAccountName"),
        "spec.hostNetwork": lambda p: "true" if (p.get("spec") or {}).get("hostNetwork") else "false",
        "status.phase": _path("status", "phase"),
        "status.podIP": _pod_ip,
        "status.nominatedNodeName": _path("status", "nominatedNodeName"),
    },
    "Job": {**META, "status.successful": lambda j: str((j.get("status") or {}).get("succeeded") or 0)},
    "Event": {
        **META,
        **{f"involvedObject.{f}": _path("involvedObject", f) for f in _INVOLVED},
        "reason": _path("reason"),
        "reportingComponent": _path("reportingComponent"),
        "source": _event_source,
        "type": _path("type"),
    },
    "Secret": {**META, "type": _path("type")},
    "Namespace": {"metadata.name": _path("metadata", "name"), "status.phase": _path("status", "phase")},
}
ALIASES = {("Pod", "spec.host"): "spec.nodeName"}  # old v1 clients' name, converted upstream

Matcher = Callable[[dict[str, Any]], bool]


def compile_selectors(kind: str, labels: str | None, fields: str | None) -> Matcher:
    """One predicate for both selectors; a selector the server would refuse raises its 400 here."""
    label_terms = parse_label_selector(labels or "")
    field_terms = parse_field_selector(kind, fields or "")

    def matches(obj: dict[str, Any]) -> bool:
        have = obj.get("metadata", {}).get("labels") or {}
        if not all(_label_ok(have, key, op, values) for key, op, values in label_terms):
            return False
        return all((get(obj) == value) == (op == "=") for get, op, value in field_terms)

    return matches


def _label_ok(have: dict[str, str], key: str, op: str, values: list[str]) -> bool:
    if op == "exists":
        return key in have
    if op == "!":
        return key not in have
    if op in ("=", "in"):
        return key in have and have[key] in values
    if op in ("!=", "notin"):
        return key not in have or have[key] not in values
    try:  # gt / lt: the label's value must be an integer (selector.go Requirement.Matches)
        number = int(have[key])
    except (KeyError, ValueError):
        return False
    return number > int(values[0]) if op == ">" else number < int(values[0])


_TOKEN = re.compile(r"\s*(!=|==|=|!|\(|\)|,|<|>|[^\s!=(),<>]+)")


def _bad_label(message: str) -> ApiError:
    return ApiError(400, "BadRequest", f"unable to parse requirement: {message}")


def parse_label_selector(text: str) -> list[tuple[str, str, list[str]]]:
    """labels.Parse: a list of (key, operator, values); 400 where upstream's parser fails."""
    tokens = [m.group(1) for m in _TOKEN.finditer(text)]
    if "".join(tokens).replace(" ", "") != re.sub(r"\s+", "", text):
        raise _bad_label(f"found unexpected characters in {text!r}")
    out: list[tuple[str, str, list[str]]] = []
    i = 0
    while i < len(tokens):
        if tokens[i] == "!":
            if i + 1 >= len(tokens) or not _identifier(tokens[i + 1]):
                raise _bad_label("found '', expected: identifier after '!'")
            out.append((tokens[i + 1], "!", []))
            i += 2
        else:
            key = tokens[i]
            if not _identifier(key):
                raise _bad_label(f"found '{key}', expected: !, identifier, or 'end of string'")
            op = tokens[i + 1] if i + 1 < len(tokens) else ","
            if op == ",":
                out.append((key, "exists", []))
                i += 1
            elif op in ("=", "==", "!=", ">", "<"):
                value = tokens[i + 2] if i + 2 < len(tokens) and _identifier(tokens[i + 2]) else ""
                if op in (">", "<") and not re.fullmatch(r"-?[0-9]+", value):
                    raise _bad_label(f"for 'gt', 'lt' operators, exactly one value is required: {value!r}")
                out.append((key, "=" if op == "==" else op, [value]))
                i += 3 if value else 2
            elif op in ("in", "notin"):
                values, i = _value_set(tokens, i + 2)
                out.append((key, op, values))
            else:
                raise _bad_label(f"found '{op}', expected: in, notin, =, ==, !=, gt, lt")
        if i < len(tokens):
            if tokens[i] != ",":
                raise _bad_label(f"found '{tokens[i]}', expected: ',' or 'end of string'")
            i += 1
    return out


def _value_set(tokens: list[str], i: int) -> tuple[list[str], int]:
    if i >= len(tokens) or tokens[i] != "(":
        raise _bad_label("found '', expected: '('")
    values: list[str] = []
    i += 1
    while i < len(tokens) and tokens[i] != ")":
        if tokens[i] != ",":
            values.append(tokens[i])
        i += 1
    if i >= len(tokens):
        raise _bad_label("found '', expected: ')'")
    return values or [""], i + 1


def _identifier(token: str) -> bool:
    return token not in ("!=", "==", "=", "!", "(", ")", ",", "<", ">")


def parse_field_selector(kind: str, text: str) -> list[tuple[Callable[[dict[str, Any]], str], str, str]]:
    """fields.ParseSelector plus the kind's field label conversion: (getter, '=' or '!=', value)."""
    fields = SELECTABLE.get(kind, META)
    out = []
    for term in filter(None, text.split(",")):
        for op in ("!=", "==", "="):
            if op in term:
                label, _, value = term.partition(op)
                break
        else:
            raise ApiError(400, "BadRequest", f"invalid selector: '{text}'; can't understand '{term}'")
        label = ALIASES.get((kind, label), label)
        if label not in fields:
            raise ApiError(400, "BadRequest", f"field label not supported: {label}")
        out.append((fields[label], "!=" if op == "!=" else "=", value))
    return out
