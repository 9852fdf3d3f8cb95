"""Per-kind validation the API server runs after decoding: create rules and update rules.

Each rule names its upstream source beside it. Kubernetes files are in kubernetes/kubernetes
(v1.33-v1.37); OpenShift's in openshift/openshift-apiserver; PyTorchJob's in
kubeflow/training-operator (its validating webhook). What the schema alone says (types,
unknown fields) is checked in schema.py; this module adds the semantic rules.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

from tests.doubles.apiserver.fields import (
    CONFIG_KEY,
    Errors,
    check_annotations,
    check_labels,
    check_name,
    dns1035_label,
    dns1123_label,
    dns1123_subdomain,
    parse_quantity,
    path_segment,
)
from tests.doubles.apiserver.validate_pod import validate_pod_spec

JOB_RESTART = ["OnFailure", "Never"]  # pkg/apis/batch/validation/validation.go validateJobTemplateSpec
ACCESS_MODES = [
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
]  # validatePersistentVolumeClaimSpec
SECRET_TYPES_NEEDING = {"kubernetes.io/dockerconfigjson": ".dockerconfigjson", "kubernetes.io/basic-auth": None}
RBAC_GROUP = "rbac.authorization.k8s.io"
SUBJECT_KINDS = ["ServiceAccount", "User", "Group"]  # pkg/apis/rbac/validation/validation.go ValidateRoleBindingSubject
BUILD_STRATEGIES = ["Docker", "Source", "Custom", "JenkinsPipeline"]  # openshift/api build/v1 BuildStrategyType
RUN_POLICIES = ["Parallel", "Serial", "SerialLatestOnly"]  # openshift/api build/v1 BuildRunPolicy
TRIGGERS = ["GitHub", "Generic", "GitLab", "Bitbucket", "ImageChange", "ConfigChange"]
OUTPUT_KINDS = ["ImageStreamTag", "DockerImage"]  # openshift-apiserver build validation validateOutput
IMAGESTREAM_NAME = r"[a-z0-9]+(?:[._-][a-z0-9]+)*"  # openshift/library-go reference.RepositoryNameComponent
PYTORCH_REPLICAS = ["Master", "Worker"]  # kubeflow/training-operator pkg/webhooks/pytorch/pytorchjob_webhook.go

# metadata.name rule per kind (the nameFn each strategy passes to ValidateObjectMeta)
NAME_RULES: dict[str, Callable[[str], list[str]]] = {
    "Namespace": dns1123_label,  # core/validation ValidateNamespaceName
    "ServiceAccount": dns1123_subdomain,  # core/validation ValidateServiceAccountName
    "Secret": dns1123_subdomain,  # core/validation ValidateSecretName
    "PersistentVolumeClaim": dns1123_subdomain,  # core/validation ValidatePersistentVolumeName
    "Pod": dns1123_subdomain,  # core/validation ValidatePodName
    "Event": dns1123_subdomain,
    "Job": dns1123_subdomain,  # batch/validation ValidateJob -> ValidateReplicationControllerName
    "Role": path_segment,  # rbac/validation ValidateRBACName = path.IsValidPathSegmentName
    "RoleBinding": path_segment,
    "BuildConfig": dns1123_subdomain,  # openshift-apiserver pkg/build/apis/build/validation
    "Build": dns1123_subdomain,
    "ImageStream": lambda n: (
        dns1123_subdomain(n) + ([] if re.fullmatch(IMAGESTREAM_NAME, n) else [f'must match "{IMAGESTREAM_NAME}"'])
    ),
    "PyTorchJob": dns1035_label,  # training-operator webhook: validation.IsDNS1035Label(name)
}


def validate_object(kind: str, obj: dict[str, Any]) -> Errors:
    """Everything a create (or the new side of an update) must satisfy."""
    errs = Errors()
    meta = obj.get("metadata") or {}
    check_name(errs, meta, NAME_RULES.get(kind, dns1123_subdomain))
    check_labels(errs, meta.get("labels"), "metadata.labels")
    check_annotations(errs, meta.get("annotations"), "metadata.annotations")
    CHECKS.get(kind, lambda e, o: None)(errs, obj)
    return errs


def validate_update(kind: str, old: dict[str, Any], new: dict[str, Any]) -> Errors:
    """The create rules on the new object plus the fields an update may not change."""
    errs = validate_object(kind, new)
    if kind == "Job":
        _job_update(errs, old, new)
    elif kind == "RoleBinding" and old.get("roleRef") != new.get("roleRef"):
        # rbac/validation ValidateRoleBindingUpdate
        errs.invalid("roleRef", new.get("roleRef"), "cannot change roleRef")
    elif kind == "PersistentVolumeClaim":
        _pvc_update(errs, old, new)
    elif kind == "Secret" and old.get("type", "Opaque") != new.get("type", "Opaque"):
        errs.immutable("type", new.get("type"))  # core/validation ValidateSecretUpdate
    elif kind == "Secret" and old.get("immutable") and old.get("data") != new.get("data"):
        errs.forbidden("data", "field is immutable when `immutable` is set")
    elif kind == "Pod":
        _pod_update(errs, old, new)
    return errs


def _job(errs: Errors, job: dict[str, Any]) -> None:
    """batch/validation/validation.go validateJobSpec + validateJobTemplateSpec."""
    spec = job.get("spec") or {}
    for field in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"):
        value = spec.get(field)
        if isinstance(value, int) and value < 0:  # ValidateNonnegativeField
            errs.invalid(f"spec.{field}", value, "must be greater than or equal to 0")
    if spec.get("completionMode") not in (None, "NonIndexed", "Indexed"):
        errs.not_supported("spec.completionMode", spec["completionMode"], ["NonIndexed", "Indexed"])
    template = spec.get("template") or {}
    check_labels(errs, (template.get("metadata") or {}).get("labels"), "spec.template.metadata.labels")
    pod = template.get("spec") or {}
    validate_pod_spec(errs, pod, "spec.template.spec")
    policy = pod.get("restartPolicy")
    if not policy:
        errs.required("spec.template.spec.restartPolicy", 'valid values: "OnFailure", "Never"')
    elif policy not in JOB_RESTART:
        errs.not_supported("spec.template.spec.restartPolicy", policy, JOB_RESTART)
    failure = spec.get("podFailurePolicy")
    if failure:
        _pod_failure_policy(errs, failure, pod)
    selector = (spec.get("selector") or {}).get("matchLabels") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in selector.items()):
        # ValidateGeneratedSelector / validateJobSpec: the template must match the selector
        errs.invalid("spec.template.metadata.labels", labels, "`selector` does not match template `labels`")


def _pod_failure_policy(errs: Errors, policy: dict[str, Any], pod: dict[str, Any]) -> None:
    """batch/validation validatePodFailurePolicy (GA 1.31)."""
    if pod.get("restartPolicy") != "Never":
        errs.invalid(
            "spec.template.spec.restartPolicy",
            pod.get("restartPolicy"),
            'only "Never" is supported when podFailurePolicy is specified',
        )
    names = {c.get("name") for c in pod.get("containers") or []} | {
        c.get("name") for c in pod.get("initContainers") or []
    }
    for i, rule in enumerate(policy.get("rules") or []):
        where = f"spec.podFailurePolicy.rules[{i}]"
        actions = ["Count", "FailIndex", "FailJob", "Ignore"]
        if rule.get("action") not in actions:
            errs.not_supported(f"{where}.action", rule.get("action"), actions)
        codes = rule.get("onExitCodes")
        if codes:
            if codes.get("containerName") and codes["containerName"] not in names:
                errs.invalid(
                    f"{where}.onExitCodes.containerName",
                    codes["containerName"],
                    "must be one of the container or initContainer names in the pod template",
                )
            if codes.get("operator") not in ("In", "NotIn"):
                errs.not_supported(f"{where}.onExitCodes.operator", codes.get("operator"), ["In", "NotIn"])
            values = codes.get("values") or []
            if values != sorted(set(values)):
                errs.invalid(f"{where}.onExitCodes.values", values, "must be ordered")
            if codes.get("operator") == "In" and 0 in values:
                errs.invalid(f"{where}.onExitCodes.values", 0, "must not be 0 for the In operator")
        for j, cond in enumerate(rule.get("onPodConditions") or []):
            if cond.get("status") not in ("True", "False", "Unknown"):
                errs.not_supported(
                    f"{where}.onPodConditions[{j}].status", cond.get("status"), ["False", "True", "Unknown"]
                )
        if bool(codes) == bool(rule.get("onPodConditions")):
            errs.invalid(where, "", "specifying one of onExitCodes and onPodConditions is required")


def _job_update(errs: Errors, old: dict[str, Any], new: dict[str, Any]) -> None:
    """batch/validation ValidateJobSpecUpdate: the template, selector, completions... are immutable."""
    before, after = old.get("spec") or {}, new.get("spec") or {}
    for field in ("template", "selector", "completionMode", "podFailurePolicy", "manualSelector"):
        if before.get(field) != after.get(field):
            if field == "template" and before.get("suspend"):
                continue  # a suspended Job may change its template (scheduling directives)
            errs.immutable(f"spec.{field}", after.get(field))
    if before.get("completions") != after.get("completions") and before.get("completionMode") != "Indexed":
        errs.immutable("spec.completions", after.get("completions"))


def _pod(errs: Errors, pod: dict[str, Any]) -> None:
    validate_pod_spec(errs, pod.get("spec") or {}, "spec", template=False)


def _pod_update(errs: Errors, old: dict[str, Any], new: dict[str, Any]) -> None:
    """core/validation ValidatePodUpdate: only images, activeDeadlineSeconds, tolerations may change."""
    a, b = copy.deepcopy(old.get("spec") or {}), copy.deepcopy(new.get("spec") or {})
    for spec in (a, b):
        for c in spec.get("containers") or []:
            c.pop("image", None)
        spec.pop("activeDeadlineSeconds", None)
        spec.pop("tolerations", None)
    if a != b:
        errs.forbidden(
            "spec",
            "pod updates may not change fields other than `spec.containers[*].image`, "
            "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` "
            "(only additions to existing tolerations), `spec.terminationGracePeriodSeconds` "
            "(allow it to be set to 1 if it was previously negative)",
        )


def _secret(errs: Errors, secret: dict[str, Any]) -> None:
    """core/validation ValidateSecret: data keys are config keys; typed secrets need their keys."""
    for part in ("data", "stringData"):
        for key in secret.get(part) or {}:
            if not re.fullmatch(CONFIG_KEY, key) or key in (".", ".."):
                errs.invalid(
                    f"{part}[{key}]",
                    key,
                    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
                    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
                    f"'{CONFIG_KEY}')",
                )
    kind = secret.get("type") or "Opaque"
    keys = set(secret.get("data") or {}) | set(secret.get("stringData") or {})
    if kind == "kubernetes.io/dockerconfigjson" and ".dockerconfigjson" not in keys:
        errs.required("data[.dockerconfigjson]")
    if kind == "kubernetes.io/service-account-token" and not (
        (secret.get("metadata") or {}).get("annotations") or {}
    ).get("kubernetes.io/service-account.name"):
        errs.required("metadata.annotations[kubernetes.io/service-account.name]")


def _pvc(errs: Errors, pvc: dict[str, Any]) -> None:
    """core/validation ValidatePersistentVolumeClaimSpec."""
    spec = pvc.get("spec") or {}
    modes = spec.get("accessModes") or []
    if not modes:
        errs.required("spec.accessModes", "at least 1 access mode is required")
    for mode in modes:
        if mode not in ACCESS_MODES:
            errs.not_supported("spec.accessModes", mode, ACCESS_MODES)
    storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
    if storage is None:
        errs.required("spec.resources[storage]")
    elif (q := parse_quantity(storage)) is not None and q <= 0:
        errs.invalid("spec.resources[storage]", storage, "must be greater than zero")
    if spec.get("volumeMode") not in (None, "Block", "Filesystem"):
        errs.not_supported("spec.volumeMode", spec["volumeMode"], ["Block", "Filesystem"])


def _pvc_update(errs: Errors, old: dict[str, Any], new: dict[str, Any]) -> None:
    """core/validation ValidatePersistentVolumeClaimUpdate: the spec is immutable but for the size."""
    a, b = copy.deepcopy(old.get("spec") or {}), copy.deepcopy(new.get("spec") or {})
    for spec in (a, b):
        spec.pop("resources", None)
        spec.pop("volumeAttributesClassName", None)
        spec.pop("volumeName", None) if spec is b and not a.get("volumeName") else None
    if a != b:
        errs.forbidden(
            "spec",
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        )


def _role(errs: Errors, role: dict[str, Any]) -> None:
    """rbac/validation ValidatePolicyRule."""
    for i, rule in enumerate(role.get("rules") or []):
        where = f"rules[{i}]"
        if not rule.get("verbs"):
            errs.required(f"{where}.verbs", "verbs must contain at least one value")
        if rule.get("nonResourceURLs"):
            errs.invalid(
                f"{where}.nonResourceURLs",
                rule["nonResourceURLs"],
                "namespaced rules cannot apply to non-resource URLs",
            )
            continue
        if not rule.get("apiGroups"):
            errs.required(f"{where}.apiGroups", "resource rules must supply at least one api group")
        if not rule.get("resources"):
            errs.required(f"{where}.resources", "resource rules must supply at least one resource")


def _rolebinding(errs: Errors, binding: dict[str, Any]) -> None:
    """rbac/validation ValidateRoleBinding + ValidateRoleBindingSubject."""
    ref = binding.get("roleRef") or {}
    if ref.get("apiGroup") != RBAC_GROUP:
        errs.not_supported("roleRef.apiGroup", ref.get("apiGroup", ""), [RBAC_GROUP])
    if ref.get("kind") not in ("Role", "ClusterRole"):
        errs.not_supported("roleRef.kind", ref.get("kind", ""), ["Role", "ClusterRole"])
    if not ref.get("name"):
        errs.required("roleRef.name")
    else:
        for msg in path_segment(ref["name"]):
            errs.invalid("roleRef.name", ref["name"], msg)
    for i, subject in enumerate(binding.get("subjects") or []):
        where = f"subjects[{i}]"
        kind = subject.get("kind")
        if kind not in SUBJECT_KINDS:
            errs.not_supported(f"{where}.kind", kind, SUBJECT_KINDS)
            continue
        if not subject.get("name"):
            errs.required(f"{where}.name")
        if kind == "ServiceAccount":
            if subject.get("apiGroup"):
                errs.not_supported(f"{where}.apiGroup", subject["apiGroup"], [""])
            for msg in dns1123_subdomain(subject.get("name", "")) if subject.get("name") else []:
                errs.invalid(f"{where}.name", subject["name"], msg)
        elif subject.get("apiGroup") != RBAC_GROUP:
            errs.not_supported(f"{where}.apiGroup", subject.get("apiGroup", ""), [RBAC_GROUP])


def _buildconfig(errs: Errors, bc: dict[str, Any]) -> None:
    """openshift-apiserver pkg/build/apis/build/validation/validation.go ValidateBuildConfig."""
    spec = bc.get("spec") or {}
    _build_spec(errs, spec)
    if spec.get("runPolicy") and spec["runPolicy"] not in RUN_POLICIES:
        errs.not_supported("spec.runPolicy", spec["runPolicy"], RUN_POLICIES)
    for field in ("successfulBuildsHistoryLimit", "failedBuildsHistoryLimit"):
        if isinstance(spec.get(field), int) and spec[field] < 0:
            errs.invalid(f"spec.{field}", spec[field], "must be greater than or equal to 0")
    for i, trigger in enumerate(spec.get("triggers") or []):
        kind = trigger.get("type")
        if kind not in TRIGGERS:
            errs.not_supported(f"spec.triggers[{i}].type", kind, TRIGGERS)
        elif kind in ("GitHub", "Generic", "GitLab", "Bitbucket"):
            hook = trigger.get(kind.lower()) or {}
            if not hook.get("secret") and not hook.get("secretReference"):
                errs.required(f"spec.triggers[{i}].{kind.lower()}.secretReference")


def _build_spec(errs: Errors, spec: dict[str, Any]) -> None:
    strategy = spec.get("strategy") or {}
    if strategy.get("type") not in BUILD_STRATEGIES:
        errs.not_supported("spec.strategy.type", strategy.get("type"), BUILD_STRATEGIES)
    uri = ((spec.get("source") or {}).get("git") or {}).get("uri")
    # s2i's git.Parse (what OpenShift validates with) takes file:///path URLs too: a repository on the node
    url = urlparse(uri or "")
    if uri is not None and not (url.scheme and url.netloc or url.scheme == "file" and url.path) and "@" not in uri:
        errs.invalid("spec.source.git.uri", uri, "uri is not a valid url")
    to = (spec.get("output") or {}).get("to")
    if to and to.get("kind") not in OUTPUT_KINDS:
        errs.invalid("spec.output.to.kind", to.get("kind"), "invalid output kind")
    deadline = spec.get("completionDeadlineSeconds")
    if isinstance(deadline, int) and deadline <= 0:
        errs.invalid(
            "spec.completionDeadlineSeconds",
            deadline,
            "completionDeadlineSeconds must be a positive integer greater than 0",
        )


def _build(errs: Errors, build: dict[str, Any]) -> None:
    _build_spec(errs, build.get("spec") or {})


def _pytorchjob(errs: Errors, job: dict[str, Any]) -> None:
    """training-operator pkg/webhooks/pytorch/pytorchjob_webhook.go validatePyTorchReplicaSpecs."""
    specs = (job.get("spec") or {}).get("pytorchReplicaSpecs") or {}
    for role, replica in specs.items():
        where = f"spec.pytorchReplicaSpecs[{role}]"
        if role not in PYTORCH_REPLICAS:
            errs.not_supported("spec.pytorchReplicaSpecs", role, PYTORCH_REPLICAS)
            continue
        pod = ((replica or {}).get("template") or {}).get("spec") or {}
        validate_pod_spec(errs, pod, f"{where}.template.spec")
        if not any(c.get("name") == "pytorch" for c in pod.get("containers") or []):
            errs.required(f"{where}.template.spec.containers", f"There is no container named pytorch in {role}")
        if role == "Master" and replica.get("replicas") not in (None, 1):
            errs.forbidden(f"{where}.replicas", "must be 1")


CHECKS: dict[str, Callable[[Errors, dict[str, Any]], None]] = {
    "Job": _job,
    "Pod": _pod,
    "Secret": _secret,
    "PersistentVolumeClaim": _pvc,
    "Role": _role,
    "RoleBinding": _rolebinding,
    "BuildConfig": _buildconfig,
    "Build": _build,
    "PyTorchJob": _pytorchjob,
}
