"""The one-line errors of a failed Kubernetes or OpenShift API call (never credentials).

Every kind that talks to an API server (kubernetes, openshift, trainjob, data staging)
words its failures the same way: unreachable, credentials refused, forbidden, or the
server's own message, each with what to do next.
"""

from __future__ import annotations

from bench.errors import AtlasError

KUBE_LOGIN = "check the kubeconfig's context (`kubectl config current-context`) or log in again"


def api_error(exc: Exception, doing: str, env: str, api: str = "Kubernetes", login: str = KUBE_LOGIN) -> AtlasError:
    """A clear AtlasError for a failed API call; never includes credentials."""
    from kubernetes.client.exceptions import ApiException

    if isinstance(exc, ApiException):
        status = exc.status
        message = ""
        try:
            import json

            message = json.loads(exc.body or "{}").get("message", "")
        except ValueError:
            message = (exc.body or "")[:200]
        if status == 0 or status is None:
            return AtlasError(
                f"{env}: cannot reach the {api} API while {doing} ({exc.reason}); "
                "check the server in your kubeconfig and your network/VPN"
            )
        if status == 401:
            return AtlasError(
                f"{env}: the {api} API refused the credentials while {doing} (401 Unauthorized): {login}; tokens expire"
            )
        if status == 403:
            return AtlasError(
                f"{env}: forbidden while {doing} (403): {message or 'no permission'}; "
                "ask the project admin for the `edit` role in the namespace"
            )
        return AtlasError(f"{env}: {api} API error {status} while {doing}: {message or exc.reason}")
    return AtlasError(
        f"{env}: cannot reach the {api} API while {doing}: {type(exc).__name__}: {exc}; "
        "check the server in your kubeconfig and your network/VPN"
    )
