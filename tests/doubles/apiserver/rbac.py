"""Access reviews answered from the Roles and RoleBindings the double holds (`kubectl auth can-i`).

`kubectl auth can-i VERB RESOURCE [--as=USER]` creates a SelfSubjectAccessReview
(authorization.k8s.io/v1) for the requesting user, which `--as` impersonates; a
SubjectAccessReview names the user and groups in its spec, a LocalSubjectAccessReview too,
within one namespace. The answer follows the RBAC authorizer
(kubernetes/kubernetes plugin/pkg/auth/authorizer/rbac/rbac.go and
pkg/registry/rbac/validation/rule.go): a RoleBinding in the request's namespace applies to a
User by name, a Group by membership, a ServiceAccount by `system:serviceaccount:NS:NAME`; its
Role's rules allow a request when verb, API group, resource (`jobs`, `pods/exec`, `*`,
`*/exec`) and, where listed, resource name match. A service account's groups are
`system:serviceaccounts`, `system:serviceaccounts:NS` and `system:authenticated`
(k8s.io/apiserver/pkg/authentication/serviceaccount).

Not modelled: ClusterRoles and ClusterRoleBindings (the double stores none, so a RoleBinding
to a ClusterRole grants nothing here), non-resource URLs, `kubectl auth can-i --list`
(SelfSubjectRulesReview), and enforcement: the double's own token may do everything, and
the token's user is answered "yes" to every review.
"""

from __future__ import annotations

import re
from typing import Any

from tests.doubles.apiserver.errors import ApiError

GROUP = "authorization.k8s.io"
REVIEWS = {
    "selfsubjectaccessreviews": "SelfSubjectAccessReview",
    "subjectaccessreviews": "SubjectAccessReview",
    "localsubjectaccessreviews": "LocalSubjectAccessReview",
}
_PATH = re.compile(rf"^/apis/{GROUP}/v1/(?:namespaces/([^/]+)/)?(\w+)$")


def review_path(path: str) -> tuple[str | None, str] | None:
    """(namespace, plural) of an access review's path, None for every other path."""
    m = _PATH.match(path)
    return (m.group(1), m.group(2)) if m and m.group(2) in REVIEWS else None


def user_groups(user: str, groups: list[str]) -> list[str]:
    """What authentication adds: a service account's groups, and system:authenticated."""
    extra = []
    if user.startswith("system:serviceaccount:") and user.count(":") == 3:
        extra = ["system:serviceaccounts", f"system:serviceaccounts:{user.split(':')[2]}"]
    return [*groups, *extra, "system:authenticated"]


def _applies(subject: dict[str, Any], user: str, groups: list[str]) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return name == user
    if kind == "Group":
        return name in groups
    if kind == "ServiceAccount":
        return user == f"system:serviceaccount:{subject.get('namespace', '')}:{name}"
    return False


def _rule_allows(rule: dict[str, Any], attrs: dict[str, Any]) -> bool:
    verbs, groups = rule.get("verbs") or [], rule.get("apiGroups") or []
    if "*" not in verbs and attrs.get("verb") not in verbs:
        return False
    if "*" not in groups and attrs.get("group", "") not in groups:
        return False
    resource, sub = attrs.get("resource", ""), attrs.get("subresource", "")
    combined = f"{resource}/{sub}" if sub else resource
    resources = rule.get("resources") or []
    if not any(r in ("*", combined) or sub and r == f"*/{sub}" for r in resources):
        return False
    names = rule.get("resourceNames") or []
    return not names or attrs.get("name", "") in names


def decide(store: dict[str, dict[str, Any]], user: str, groups: list[str], attrs: dict[str, Any]) -> dict[str, Any]:
    """The review's status: allowed with the binding that allows it, or not allowed (no opinion)."""
    for binding in store["rolebindings"].values():
        if binding["metadata"].get("namespace", attrs.get("namespace")) != attrs.get("namespace"):
            continue
        ref = binding.get("roleRef") or {}
        role = store["roles"].get(ref.get("name")) if ref.get("kind") == "Role" else None
        subject = next((s for s in binding.get("subjects") or [] if _applies(s, user, groups)), None)
        if role is None or subject is None:
            continue
        if any(_rule_allows(rule, attrs) for rule in role.get("rules") or []):
            ns = binding["metadata"].get("namespace", "")
            who = (
                f"{subject['name']}/{subject.get('namespace') or ns}"
                if subject["kind"] == "ServiceAccount"
                else subject["name"]
            )
            return {
                "allowed": True,
                "reason": f'RBAC: allowed by RoleBinding "{binding["metadata"]["name"]}/{ns}" of Role '
                f'"{role["metadata"]["name"]}" to {subject["kind"]} "{who}"',
            }
    return {"allowed": False}


def review(
    store: dict[str, dict[str, Any]],
    namespace: str,
    plural: str,
    path_namespace: str | None,
    body: Any,
    requester: str,
    requester_groups: list[str],
    admin: bool,
) -> dict[str, Any]:
    """The review object with its status filled in, as the API server returns it (201)."""
    kind = REVIEWS[plural]
    if not isinstance(body, dict) or body.get("kind") not in (None, kind):
        raise ApiError(400, "BadRequest", f"not a {kind}")
    spec = body.get("spec") or {}
    attrs = dict(spec.get("resourceAttributes") or {})
    if not attrs and not spec.get("nonResourceAttributes"):
        raise ApiError(
            422,
            "Invalid",
            f'{kind}.{GROUP} "" is invalid: spec.resourceAttributes: Invalid value: "null": exactly one of '
            "nonResourceAttributes or resourceAttributes must be specified",
        )
    if kind == "SelfSubjectAccessReview":
        user, groups = requester, requester_groups
    else:
        user, groups, admin = spec.get("user", ""), user_groups(spec.get("user", ""), spec.get("groups") or []), False
    if kind == "LocalSubjectAccessReview" and attrs.get("namespace") != path_namespace:
        raise ApiError(
            422,
            "Invalid",
            f'{kind}.{GROUP} "" is invalid: spec.resourceAttributes.namespace: Invalid value: '
            f'"{attrs.get("namespace", "")}": must match metadata.namespace',
        )
    if attrs and attrs.get("namespace") not in (namespace, None, ""):
        status: dict[str, Any] = {"allowed": False}  # no bindings in other namespaces here
    elif admin:
        status = {"allowed": True, "reason": "the double's token may do everything"}
    elif attrs:
        status = decide(store, user, groups, {**attrs, "namespace": namespace})
    else:
        status = {"allowed": False}  # non-resource URLs: no ClusterRoles here
    return {
        "kind": kind,
        "apiVersion": f"{GROUP}/v1",
        "metadata": {"creationTimestamp": None, **({"namespace": path_namespace} if path_namespace else {})},
        "spec": spec,
        "status": status,
    }
