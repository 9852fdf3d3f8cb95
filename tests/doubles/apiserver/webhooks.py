"""BuildConfig webhooks and the ConfigChange trigger, as OpenShift serves them.

`POST /apis/build.openshift.io/v1/namespaces/NS/buildconfigs/NAME/webhooks/SECRET/TYPE`
(TYPE `github` or `generic`) follows openshift-apiserver's handlers
(https://github.com/openshift/openshift-apiserver/blob/master/pkg/build/apiserver/registry/buildconfig/webhook.go,
pkg/build/apiserver/webhook/{webhook.go,generic/generic.go} and the GitHub plugin):

- an unknown TYPE is 404 (`buildconfighook`); a missing BuildConfig, one without a trigger
  of that TYPE, or a SECRET that matches neither the trigger's `secret` nor its
  `secretReference`'s Secret key `WebHookSecretKey` are all one 401, "the webhook "TYPE" for
  "NAME" did not accept your secret" (nothing tells a caller which BuildConfigs exist);
- GitHub: JSON only, `X-GitHub-Event` (or `X-Gogs-Event`) `ping` answers 200 and builds
  nothing, `push` builds, any other event is 400; a pushed ref that is not
  `spec.source.git.ref` (default `master`) answers 200 "skipping build";
- generic: `{git: {uri, ref, commit, ...}}`, the same ref rule;
- the Build comes from the BuildConfig's instantiate with `spec.revision.git.commit` = the
  pushed head and `triggeredBy` the cause ("GitHub WebHook" / "Generic WebHook", secret
  hidden); the answer is that Build.

Who may call: a caller with the token always; one without a token only where a RoleBinding
in the namespace binds ClusterRole `system:webhook` to Group `system:unauthenticated` (what
clusters/_bases/openshift/webhook-rolebinding.yaml grants; OpenShift >= 4.16 grants nothing
by default), else 403 for `system:anonymous`.

A BuildConfig created with a `ConfigChange` trigger gets build 1 at once, triggered by
"Build configuration change" (the build config controller's first sync).
"""

from __future__ import annotations

import base64
import hmac
import json
from typing import Any

from tests.doubles.apiserver.errors import ApiError, bad_request

WEBHOOK_SECRET_KEY = "WebHookSecretKey"  # openshift/api build/v1 types.go
TRIGGER_TYPES = {"github": ("GitHub", "github"), "generic": ("Generic", "generic")}
CAUSE_MESSAGES = {"github": "GitHub WebHook", "generic": "Generic WebHook"}
CONFIG_CHANGE_MESSAGE = "Build configuration change"
DEFAULT_REF = "master"


def webhook_path(path: str) -> tuple[str, str, str, str] | None:
    """(namespace, buildconfig, secret, type) of a webhook URL path, else None."""
    parts = [p for p in path.split("/") if p]
    if len(parts) == 9 and parts[:3] == ["apis", "build.openshift.io", "v1"] and parts[3] == "namespaces":
        if parts[5] == "buildconfigs" and parts[7] == "webhooks":
            return parts[4], parts[6], "", parts[8]  # no secret segment: a bad subpath
    if len(parts) == 10 and parts[:3] == ["apis", "build.openshift.io", "v1"] and parts[3] == "namespaces":
        if parts[5] == "buildconfigs" and parts[7] == "webhooks":
            return parts[4], parts[6], parts[8], parts[9]
    return None


def _ref_matches(event_ref: str, bc: dict[str, Any]) -> bool:
    """webhook.GitRefMatches: refs/heads/ dropped on both sides, `master` when the config names none."""
    config_ref = ((bc["spec"].get("source") or {}).get("git") or {}).get("ref") or DEFAULT_REF
    return event_ref.removeprefix("refs/heads/") == config_ref.removeprefix("refs/heads/")


def _skipping(message: str) -> dict[str, Any]:
    """webhook.NewWarning: a Status of code 200, status Success."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "message": message, "code": 200}


class Webhooks:
    """Mixed into the double; uses store, namespace, token and the instantiate path."""

    def webhook_allowed(self, authorization: str) -> bool:
        """True where the caller may reach webhooks: the token, or system:webhook bound to everyone."""
        if authorization == f"Bearer {self.token}":
            return True
        if authorization:  # a token this server does not know: 401 before authorization
            raise ApiError(401, "Unauthorized", "Unauthorized")
        for rb in self.store["rolebindings"].values():
            ref = rb.get("roleRef") or {}
            if ref.get("kind") == "ClusterRole" and ref.get("name") == "system:webhook":
                for s in rb.get("subjects") or []:
                    if s.get("kind") == "Group" and s.get("name") == "system:unauthenticated":
                        return True
        return False

    def webhook(
        self, namespace: str, name: str, secret: str, hook: str, headers: Any, raw: bytes, authorization: str
    ) -> tuple[int, Any]:
        """One webhook call: (HTTP code, body: the Build, a Status, or b"" for nothing)."""
        if not self.webhook_allowed(authorization):
            raise ApiError(
                403,
                "Forbidden",
                f'buildconfigs.build.openshift.io "{name}" is forbidden: User "system:anonymous" cannot create '
                f'resource "buildconfigs/webhooks" in API group "build.openshift.io" in the namespace '
                f'"{self.namespace}"',
                {"name": name, "group": "build.openshift.io", "kind": "buildconfigs"},
            )
        if not secret:
            raise bad_request(f"unexpected hook subpath /{hook}")
        if hook not in TRIGGER_TYPES:
            raise ApiError(
                404,
                "NotFound",
                f'buildconfighook.build.openshift.io "{hook}" not found',
                {"name": hook, "group": "build.openshift.io", "kind": "buildconfighook"},
            )
        refused = ApiError(401, "Unauthorized", f'the webhook "{hook}" for "{name}" did not accept your secret')
        bc = self.buildconfigs.get(name) if namespace == self.namespace else None
        if bc is None or not self._secret_accepted(bc, hook, secret):
            raise refused
        if hook == "github":
            revision, warning = self._github(bc, headers, raw)
        else:
            revision, warning = self._generic(bc, headers, raw)
        if revision is None:
            return (200, warning) if warning else (200, b"")
        # githubWebHook / genericWebHook (BuildTriggerCause), the secret hidden as the server hides it
        cause = {"message": CAUSE_MESSAGES[hook], f"{hook}WebHook": {"revision": revision, "secret": "<secret>"}}
        request = {
            "kind": "BuildRequest",
            "apiVersion": "build.openshift.io/v1",
            "metadata": {"name": name},
            "revision": revision,
            "triggeredBy": [cause],
        }
        _, build = self._instantiate(name, request)
        return 200, build

    def _secret_accepted(self, bc: dict[str, Any], hook: str, given: str) -> bool:
        """webhook.CheckSecret over the BuildConfig's triggers of this type."""
        trigger_type, field = TRIGGER_TYPES[hook]
        for trigger in bc["spec"].get("triggers") or []:
            hook_trigger = trigger.get(field) if trigger.get("type") == trigger_type else None
            if not hook_trigger:
                continue
            inline = hook_trigger.get("secret") or ""
            if inline and hmac.compare_digest(inline.encode(), given.encode()):
                return True
            ref = (hook_trigger.get("secretReference") or {}).get("name")
            stored = self.store["secrets"].get(ref or "")
            if stored is not None and hmac.compare_digest(_secret_value(stored), given.encode()):
                return True
        return False

    def _github(self, bc: dict[str, Any], headers: Any, raw: bytes) -> tuple[dict[str, Any] | None, Any]:
        content_type = headers.get("Content-Type") or ""
        if content_type.split(";")[0].strip().lower() != "application/json":
            raise bad_request(f"unsupported Content-Type {content_type}")
        event = headers.get("X-GitHub-Event") or headers.get("X-Gogs-Event") or ""
        if not event:
            raise bad_request("missing X-GitHub-Event or X-Gogs-Event")
        if event not in ("ping", "push"):
            raise bad_request(f"Unknown X-GitHub-Event or X-Gogs-Event {event}")
        if event == "ping":
            return None, None
        try:
            push = json.loads(raw or b"")
        except ValueError as exc:
            raise bad_request(str(exc)) from None
        if not isinstance(push, dict):
            raise bad_request("a push event is a JSON object")
        ref = str(push.get("ref") or "")
        if not _ref_matches(ref, bc):
            return None, _skipping(f"skipping build. Branch reference from {ref!r} does not match configuration")
        head = push.get("head_commit") or {}
        git = {"commit": str(head.get("id") or push.get("after") or "")}
        for key in ("author", "committer"):
            person = head.get(key) or {}
            if person:
                git[key] = {"name": str(person.get("name", "")), "email": str(person.get("email", ""))}
        if head.get("message"):
            git["message"] = str(head["message"])
        return {"type": "Git", "git": git}, None

    def _generic(self, bc: dict[str, Any], headers: Any, raw: bytes) -> tuple[dict[str, Any] | None, Any]:
        if not raw:
            return {"type": "Git", "git": {}}, None
        content_type = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if content_type != "application/json":
            return {"type": "Git", "git": {}}, None
        try:
            payload = json.loads(raw)
        except ValueError:
            return {"type": "Git", "git": {}}, None
        git = payload.get("git") if isinstance(payload, dict) else None
        if not isinstance(git, dict):
            return {"type": "Git", "git": {}}, None
        if not _ref_matches(str(git.get("ref") or ""), bc):
            return None, _skipping(
                f"skipping build. Branch reference from {git.get('ref', '')!r} does not match configuration"
            )
        revision = {k: git[k] for k in ("commit", "author", "committer", "message") if k in git}
        return {"type": "Git", "git": revision}, None

    def config_change(self, bc: dict[str, Any]) -> None:
        """A new BuildConfig with a ConfigChange trigger: build 1, as the controller starts it."""
        triggers = bc["spec"].get("triggers") or []
        if not any(t.get("type") == "ConfigChange" for t in triggers):
            return
        if (bc.get("status") or {}).get("lastVersion", 0):
            return
        request = {
            "kind": "BuildRequest",
            "apiVersion": "build.openshift.io/v1",
            "metadata": {"name": bc["metadata"]["name"]},
            "triggeredBy": [{"message": CONFIG_CHANGE_MESSAGE}],
        }
        self._instantiate(bc["metadata"]["name"], request)


def _secret_value(secret: dict[str, Any]) -> bytes:
    """The Secret's WebHookSecretKey: `data` (base64) as stored, or `stringData` as written."""
    data = (secret.get("data") or {}).get(WEBHOOK_SECRET_KEY)
    if data is not None:
        try:
            return base64.b64decode(data)
        except ValueError:
            return b""
    return str((secret.get("stringData") or {}).get(WEBHOOK_SECRET_KEY, "")).encode()
