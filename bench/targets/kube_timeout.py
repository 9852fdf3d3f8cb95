"""A bound on every Kubernetes API request, and the one line said when it is exceeded.

The kubernetes client waits for ever unless each call passes `_request_timeout`, so a hung
API server (or a proxy that accepts and never answers) held `bench status` and `bench collect`
without end. `bound_requests` wraps the client's REST layer so that every request that sets
no timeout of its own gets `ATLAS_KUBE_TIMEOUT_S` seconds (default 30); the exec stream that
copies a record keeps its own socket timeout (`collect_timeout_s`).
"""

from __future__ import annotations

import functools
from typing import Any
from urllib.parse import urlsplit

from bench.errors import AtlasError
from bench.targets.playbook_run import command_timeout_s

KUBE_TIMEOUT_ENV = "ATLAS_KUBE_TIMEOUT_S"
DEFAULT_S = 30.0


def request_timeout_s() -> float:
    """Seconds one API request may take: ATLAS_KUBE_TIMEOUT_S, else 30."""
    return command_timeout_s(KUBE_TIMEOUT_ENV, DEFAULT_S)


def bound_requests(api_client: Any, seconds: float, env: str, api: str = "Kubernetes") -> Any:
    """`api_client` with `seconds` as the timeout of every request that names none; one
    that runs past it raises the one line (`timeout_error`) instead of urllib3's."""
    rest = api_client.rest_client
    request = rest.request

    @functools.wraps(request)
    def bounded(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        if not kwargs.get("_request_timeout"):
            kwargs["_request_timeout"] = seconds
        try:
            return request(method, url, *args, **kwargs)
        except Exception as exc:
            if timed_out(exc):
                raise timeout_error(env, api, f"{method} {urlsplit(url).path}", seconds) from None
            raise

    rest.request = bounded
    return api_client


def timed_out(exc: BaseException) -> bool:
    """True when `exc` (urllib3's, possibly inside MaxRetryError) is a connect or read timeout."""
    from urllib3.exceptions import MaxRetryError, NewConnectionError, TimeoutError

    if isinstance(exc, MaxRetryError):
        exc = exc.reason or exc
    # urllib3's NewConnectionError (refused, no route) subclasses its ConnectTimeoutError: not a timeout
    return isinstance(exc, TimeoutError) and not isinstance(exc, NewConnectionError)


def timeout_error(env: str, api: str, request: str, seconds: float) -> AtlasError:
    """The one line for a request that ran past its bound."""
    return AtlasError(
        f"{env}: the {api} API did not answer {request} in {seconds:g} s; "
        f"check the API server (`kubectl get --raw /readyz`) and try again, or raise {KUBE_TIMEOUT_ENV}"
    )
