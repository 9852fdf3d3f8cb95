"""Errors as the API server sends them: a `Status` object with an HTTP code.

The shapes follow k8s.io/apimachinery/pkg/api/errors/errors.go (NewNotFound, NewInvalid,
NewConflict, NewAlreadyExists, NewForbidden, NewBadRequest, NewMethodNotSupported), so
that `kubectl` and the Python client print exactly what they print against a cluster.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self) -> dict[str, Any]:
        out = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "reason": self.reason,
            "message": self.message,
            "code": self.code,
        }
        if self.details:
            out["details"] = self.details
        return out


class TextResponse(Exception):
    """A plain-text 200 answer (pod logs), raised from the router."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class RawResponse(Exception):
    """A non-JSON 200 answer (the OpenAPI v2 protobuf), raised from the router."""

    def __init__(self, data: bytes, content_type: str) -> None:
        super().__init__(content_type)
        self.data, self.content_type = data, content_type


def qualified(plural: str, group: str) -> str:
    """`jobs.batch`, `pods` (core): how errors name a resource."""
    return f"{plural}.{group}" if group else plural


def not_found(plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{qualified(plural, group)} "{name}" not found',
        {"name": name, "group": group, "kind": plural},
    )


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """422 Invalid; causes are (field, type, message) as field.ErrorList prints them.

    errors.NewInvalid: `Kind.group "name" is invalid: msg` for one cause, `[msg, msg]` for more.
    """
    messages = [f"{field}: {message}" for field, _, message in causes]
    text = messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
    qual = f"{kind}.{group}" if group else kind
    return ApiError(
        422,
        "Invalid",
        f'{qual} "{name}" is invalid: {text}',
        {
            "name": name,
            "group": group,
            "kind": kind,
            "causes": [{"reason": t, "message": m, "field": f} for f, t, m in causes],
        },
    )


def conflict(plural: str, group: str, name: str) -> ApiError:
    """Optimistic concurrency: a stale resourceVersion on update (errors.NewConflict)."""
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(plural, group)} "{name}": the object has been '
        "modified; please apply your changes to the latest version and try again",
        {"name": name, "group": group, "kind": plural},
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)
