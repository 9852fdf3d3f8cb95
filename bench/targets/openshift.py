"""OpenShift target (kind `openshift`): the Kubernetes target, with the image built in the cluster.

Everything about Jobs, pods and collection is `kubernetes.py`'s. What OpenShift adds is
where the image comes from: find the Build of the commit (or instantiate the
BuildConfig at that commit), wait for it, and run the Job with
`status.output.to.imageDigest`, the image by digest (see clusters/moc/README.md).
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from bench.environments.schema import OPT_STR, POSITIVE, STR
from bench.errors import AtlasError
from bench.targets import register
from bench.targets.kubernetes import KUBE_PROPERTIES, KubernetesTarget

BUILD_DONE = {"Complete", "Failed", "Error", "Cancelled"}
OC_LOGIN = "log in again (`oc login --token=... --server=...`)"


@register("openshift")
class OpenShiftTarget(KubernetesTarget):
    """One OpenShift project (namespace) described by `clusters/<env>/env.yaml`."""

    cli: ClassVar[str] = "oc"
    api_name: ClassVar[str] = "OpenShift"
    login_hint: ClassVar[str] = OC_LOGIN
    settings_properties: ClassVar[dict[str, Any]] = {
        **KUBE_PROPERTIES,
        "buildconfig": STR,
        "imagestream": OPT_STR,
        "build_timeout_s": POSITIVE,
        "webhook_secret_file": OPT_STR,
    }
    required: ClassVar[tuple[str, ...]] = ("namespace", "buildconfig", "job_template", "results_pvc", "results_mount")

    def notify_push(self, commit: str, ref: str, message: str = "") -> str:
        """Play GitHub's part for a push: POST the push event to the BuildConfig's GitHub webhook.

        For a cluster GitHub cannot reach (the local API double): env.yaml
        `webhook_secret_file` names a Secret manifest holding `WebHookSecretKey`. No token is
        sent, as GitHub sends none (the `system:webhook` RoleBinding lets it in). Returns
        what the server said: the Build it started, or why it built nothing."""
        import json
        import ssl
        import urllib.error
        import urllib.request

        secret = self._webhook_secret()
        cfg = self.api_client().configuration
        s = self.env.settings
        url = (
            f"{cfg.host}/apis/build.openshift.io/v1/namespaces/{self.namespace}/buildconfigs/"
            f"{s['buildconfig']}/webhooks/{secret}/github"
        )
        event = {"ref": ref, "after": commit, "head_commit": {"id": commit, "message": message}}
        request = urllib.request.Request(
            url,
            data=json.dumps(event).encode(),
            method="POST",
            headers={
                "Content-Type": "application/json",
                "X-GitHub-Event": "push",
                "User-Agent": "GitHub-Hookshot/atlas",
            },
        )
        ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert) if cfg.ssl_ca_cert else ssl.create_default_context()
        try:
            with urllib.request.urlopen(request, context=ctx, timeout=30) as resp:
                body = resp.read()
        except urllib.error.HTTPError as exc:
            said = exc.read().decode("utf-8", "replace")
            try:
                said = json.loads(said).get("message", said)
            except (ValueError, AttributeError):
                pass
            raise AtlasError(
                f"{self.env.name}: the BuildConfig webhook refused the push ({exc.code}): {said}"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            raise AtlasError(f"{self.env.name}: cannot reach the BuildConfig webhook at {cfg.host}: {exc}") from None
        answer = json.loads(body) if body else {}
        if answer.get("kind") == "Build":
            return f"webhook started build {answer['metadata']['name']} of {commit[:12]}"
        return f"webhook built nothing: {answer.get('message') or 'no build for this event'}"

    def _webhook_secret(self) -> str:
        import base64

        import yaml

        name = self.env.get("webhook_secret_file")
        if not name:
            raise AtlasError(
                f"{self.env.name}: no `webhook_secret_file` in env.yaml: GitHub calls this cluster's webhook itself"
            )
        path = self.env.folder / name
        try:
            doc = yaml.safe_load(path.read_text()) or {}
            value = (doc.get("stringData") or {}).get("WebHookSecretKey")
            if value is None and (doc.get("data") or {}).get("WebHookSecretKey"):
                value = base64.b64decode(doc["data"]["WebHookSecretKey"]).decode()
        except (OSError, ValueError, AttributeError, yaml.YAMLError) as exc:
            raise AtlasError(f"{self.env.name}: cannot read the webhook secret {path}: {exc}") from None
        if not value:
            raise AtlasError(f"{self.env.name}: {path} has no WebHookSecretKey (stringData or data)")
        return str(value)

    def job_prefix(self) -> str:
        return str(self.env.settings["buildconfig"])

    def collector_image(self) -> str:
        """The ImageStream's image resolves locally in the namespace; it has sh and tar."""
        return f"{self.env.get('imagestream') or self.env.settings['buildconfig']}:latest"

    def _openshift(self, api_version: str, kind: str) -> Any:
        return self.resource(
            api_version, kind, f"{self.env.name}: the server has no {api_version} {kind}: is it an OpenShift cluster?"
        )

    def image_for_commit(self, commit: str) -> tuple[str, str, str]:
        """(image reference by digest, digest, build name) for `commit`; builds if needed."""
        if not commit:
            raise AtlasError(f"{self.env.name}: a commit is needed: OpenShift builds the image from the pushed commit")
        from kubernetes.client.exceptions import ApiException

        bc_name = self.env.settings["buildconfig"]
        builds = self._openshift("build.openshift.io/v1", "Build")
        bcs = self._openshift("build.openshift.io/v1", "BuildConfig")
        try:
            bcs.get(name=bc_name, namespace=self.namespace)
        except ApiException as exc:
            if exc.status == 404:
                raise AtlasError(
                    f"{self.env.name}: BuildConfig {bc_name!r} not found in namespace {self.namespace!r}: "
                    f"apply the manifests first (`oc apply -k {self.env.folder}`)"
                ) from None
            raise self.api_error(exc, f"reading BuildConfig {bc_name}") from None
        except Exception as exc:  # urllib3 / socket errors
            raise self.api_error(exc, f"reading BuildConfig {bc_name}") from None
        listed = self._call(
            "listing builds", builds.get, namespace=self.namespace, label_selector=f"buildconfig={bc_name}"
        )
        build = self._newest_build(listed, commit, bcs, bc_name)
        build = self._wait_build(builds, build["metadata"]["name"])
        status = build.get("status", {})
        digest = ((status.get("output") or {}).get("to") or {}).get("imageDigest")
        if not digest:
            raise AtlasError(
                f"{self.env.name}: build {build['metadata']['name']} completed without an image digest "
                "(status.output.to.imageDigest): is the output an ImageStreamTag?"
            )
        repo = status.get("outputDockerImageReference") or ""
        if ":" in repo.rsplit("/", 1)[-1]:
            repo = repo.rsplit(":", 1)[0]
        return f"{repo}@{digest}" if repo else digest, digest, build["metadata"]["name"]

    def _newest_build(self, listed: Any, commit: str, bcs: Any, bc_name: str) -> dict[str, Any]:
        """The newest usable Build of `commit` (else its newest failed one), else a new one."""
        mine = [
            b
            for b in listed.to_dict().get("items", [])
            if ((b.get("spec") or {}).get("revision") or {}).get("git", {}).get("commit", "").startswith(commit)
            and commit
        ]
        mine.sort(key=lambda b: b["metadata"].get("creationTimestamp") or "")
        usable = [b for b in mine if b.get("status", {}).get("phase") not in ("Failed", "Error", "Cancelled")]
        if usable:
            build = usable[-1]
        elif mine:
            build = mine[-1]  # only failed builds: report the newest one
        else:
            body = {
                "kind": "BuildRequest",
                "apiVersion": "build.openshift.io/v1",
                "metadata": {"name": bc_name},
                "revision": {"type": "Git", "git": {"commit": commit}},
                "triggeredBy": [{"message": f"bench run at commit {commit}"}],
            }
            build = self._call(
                f"starting a build of {bc_name} at {commit[:12]}",
                bcs.subresources["instantiate"].create,
                body=body,
                name=bc_name,
                namespace=self.namespace,
            ).to_dict()
        return build

    def _wait_build(self, builds: Any, name: str) -> dict[str, Any]:
        deadline = time.monotonic() + float(self.env.get("build_timeout_s", 3600))
        while True:
            build = self._call(f"reading build {name}", builds.get, name=name, namespace=self.namespace).to_dict()
            phase = build.get("status", {}).get("phase", "New")
            if phase == "Complete":
                return build
            if phase in BUILD_DONE:
                st = build.get("status", {})
                raise AtlasError(
                    f"{self.env.name}: build {name} {phase.lower()}: "
                    f"{st.get('reason', '')} {st.get('message', '')}".rstrip()
                    + f"; see `oc -n {self.namespace} logs build/{name}`, fix, then push again "
                    f"or `oc -n {self.namespace} start-build {self.env.settings['buildconfig']} --commit=<sha>`"
                )
            if time.monotonic() > deadline:
                raise AtlasError(
                    f"{self.env.name}: build {name} still {phase} after {self.env.get('build_timeout_s', 3600)} s "
                    "(raise build_timeout_s in env.yaml or check `oc get builds`)"
                )
            time.sleep(self.poll_s)
