"""Watch-list (KEP-3157, https://github.com/kubernetes/enhancements/tree/master/keps/sig-api-machinery/3157-watch-list).

kubectl 1.37's informers (`kubectl wait`) open a watch with `sendInitialEvents=true`,
`resourceVersionMatch=NotOlderThan` and `allowWatchBookmarks=true`; the server answers the
current state as ADDED events, then one BOOKMARK whose object carries the annotation
`k8s.io/initial-events-end: "true"` and the resourceVersion the state was read at, then the
changes after it. A client that never sees that bookmark never ends its initial list.

The options are checked as k8s.io/apimachinery/pkg/apis/meta/internalversion/validation
ValidateListOptions does with the WatchList feature on (its default since 1.32): errors are a
422 `ListOptions.meta.k8s.io "" is invalid`. What the double does not model: the watch cache
(every read is consistent, so NotOlderThan gets the newest state) and the periodic bookmarks
a server may send on any watch that allows them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.doubles.apiserver.errors import invalid
from tests.doubles.apiserver.fields import Errors
from tests.doubles.apiserver.resources import Resource

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
NOT_OLDER_THAN = "NotOlderThan"


@dataclass(frozen=True)
class WatchMode:
    send_initial_events: bool | None  # None: the parameter was not sent (the pre-1.27 semantics)
    bookmarks: bool


def _one(query: dict[str, list[str]], name: str) -> str | None:
    return (query.get(name) or [None])[0]


def list_options(query: dict[str, list[str]], watch: bool) -> WatchMode:
    """ValidateListOptions for a list or a watch request; its errors as the 422 the server sends."""
    errs = Errors()
    match = _one(query, "resourceVersionMatch") or ""
    initial_text = _one(query, "sendInitialEvents")
    initial = None if initial_text is None else initial_text.lower() in ("true", "1")
    cont, rv = _one(query, "continue") or "", _one(query, "resourceVersion") or ""
    if watch:
        if initial is not None and match != NOT_OLDER_THAN:
            errs.forbidden(
                "resourceVersionMatch", "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
            )
        if match:
            if initial is None:
                errs.forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                )
            if match != NOT_OLDER_THAN:
                errs.not_supported("resourceVersionMatch", match, [NOT_OLDER_THAN])
            if cont:
                errs.forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided")
    else:
        if match:
            if not rv:
                errs.forbidden(
                    "resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided"
                )
            if cont:
                errs.forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided")
            if match not in ("Exact", NOT_OLDER_THAN):
                errs.not_supported("resourceVersionMatch", match, ["Exact", NOT_OLDER_THAN, ""])
            if match == "Exact" and rv == "0":
                errs.forbidden(
                    "resourceVersionMatch", 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
                )
        if initial is not None:
            errs.forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list")
    if errs:
        raise invalid("ListOptions", "meta.k8s.io", "", errs.items)
    bookmarks = (_one(query, "allowWatchBookmarks") or "").lower() in ("true", "1")
    return WatchMode(initial, bookmarks)


def initial_events_end(r: Resource, resource_version: str) -> dict[str, Any]:
    """The BOOKMARK object that closes the initial events: an empty object of the kind (watch/cacher)."""
    return {
        "kind": r.kind,
        "apiVersion": r.group_version,
        "metadata": {
            "resourceVersion": resource_version,
            "creationTimestamp": None,
            "annotations": {INITIAL_EVENTS_END: "true"},
        },
    }
