"""Pod spec rules of the API server (what a Job's template, a Pod and a PyTorchJob replica obey).

Source: kubernetes/kubernetes pkg/apis/core/validation/validation.go (ValidatePodSpec,
validateContainers, validateVolumes, validateVolumeMounts, ValidateResourceRequirements,
validateRestartPolicy, validatePullPolicy), v1.33-v1.37. The field paths and messages are
the ones that file builds, so a refusal reads as it does on a cluster.
"""

from __future__ import annotations

from typing import Any

from tests.doubles.apiserver.fields import (
    Errors,
    dns1123_label,
    dns1123_subdomain,
    parse_quantity,
)

RESTART_POLICIES = ["Always", "OnFailure", "Never"]  # validateRestartPolicy
PULL_POLICIES = ["Always", "IfNotPresent", "Never"]  # validatePullPolicy
PROTOCOLS = ["SCTP", "TCP", "UDP"]  # validateContainerPorts
VOLUME_SOURCES = (
    "persistentVolumeClaim emptyDir secret configMap hostPath projected downwardAPI csi ephemeral nfs image"
).split()
STANDARD = ("cpu", "memory", "ephemeral-storage", "storage")


def validate_pod_spec(errs: Errors, spec: dict[str, Any], path: str, template: bool = True) -> None:
    """ValidatePodSpec: containers, volumes, mounts, enums, resources, ranges."""
    volumes = _volumes(errs, spec.get("volumes") or [], f"{path}.volumes")
    containers = spec.get("containers") or []
    if not containers:
        errs.required(f"{path}.containers")  # validateContainers: len(containers) == 0
    names: set[str] = set()
    for kind, items in (("initContainers", spec.get("initContainers") or []), ("containers", containers)):
        for i, c in enumerate(items):
            _container(errs, c, f"{path}.{kind}[{i}]", volumes, names)
    policy = spec.get("restartPolicy")
    if policy and policy not in RESTART_POLICIES:
        errs.not_supported(f"{path}.restartPolicy", policy, RESTART_POLICIES)
    if spec.get("serviceAccountName"):
        for msg in dns1123_subdomain(spec["serviceAccountName"]):
            errs.invalid(f"{path}.serviceAccountName", spec["serviceAccountName"], msg)
    grace = spec.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and grace < 0:
        errs.invalid(f"{path}.terminationGracePeriodSeconds", grace, "must be greater than or equal to 0")
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and not 1 <= deadline <= 2**31 - 1:
        errs.invalid(f"{path}.activeDeadlineSeconds", deadline, "must be between 1 and 2147483647, inclusive")


def _volumes(errs: Errors, volumes: list[dict[str, Any]], path: str) -> set[str]:
    """validateVolumes: DNS-1123 label names, unique, exactly one source; PVC claimName required."""
    seen: set[str] = set()
    for i, vol in enumerate(volumes):
        name = vol.get("name", "")
        where = f"{path}[{i}]"
        if not name:
            errs.required(f"{where}.name")
        for msg in dns1123_label(name) if name else []:
            errs.invalid(f"{where}.name", name, msg)
        if name in seen:
            errs.duplicate(f"{where}.name", name)
        seen.add(name)
        sources = [k for k in vol if k != "name"]
        if not sources:
            errs.required(where, "must specify a volume type")
        elif len(sources) > 1:
            errs.forbidden(f"{where}.{sources[1]}", "may not specify more than 1 volume type")
        claim = vol.get("persistentVolumeClaim")
        if isinstance(claim, dict) and not claim.get("claimName"):
            errs.required(f"{where}.persistentVolumeClaim.claimName")  # validatePersistentClaimVolumeSource
        size = (vol.get("emptyDir") or {}).get("sizeLimit")
        if size is not None and (q := parse_quantity(size)) is not None and q < 0:
            errs.invalid(f"{where}.emptyDir.sizeLimit", size, "must be greater than or equal to 0")
    return seen


def _container(errs: Errors, c: dict[str, Any], path: str, volumes: set[str], names: set[str]) -> None:
    name = c.get("name", "")
    if not name:
        errs.required(f"{path}.name")
    for msg in dns1123_label(name) if name else []:
        errs.invalid(f"{path}.name", name, msg)
    if name in names:
        errs.duplicate(f"{path}.name", name)
    names.add(name)
    if not c.get("image"):
        errs.required(f"{path}.image")  # validateContainerCommon: image is required in templates too
    pull = c.get("imagePullPolicy")
    if pull and pull not in PULL_POLICIES:
        errs.not_supported(f"{path}.imagePullPolicy", pull, PULL_POLICIES)
    for j, port in enumerate(c.get("ports") or []):
        number = port.get("containerPort")
        if not isinstance(number, int) or not 1 <= number <= 65535:
            errs.invalid(f"{path}.ports[{j}].containerPort", number, "must be between 1 and 65535, inclusive")
        if port.get("protocol") and port["protocol"] not in PROTOCOLS:
            errs.not_supported(f"{path}.ports[{j}].protocol", port["protocol"], PROTOCOLS)
    for j, env in enumerate(c.get("env") or []):
        if not env.get("name"):
            errs.required(f"{path}.env[{j}].name")
        elif "=" in env["name"]:  # validateEnvVarName (RelaxedEnvironmentVariableValidation, GA 1.32)
            errs.invalid(
                f"{path}.env[{j}].name",
                env["name"],
                "a valid environment variable name must consist only of printable ASCII characters other than '='",
            )
    mounts: set[str] = set()
    for j, mount in enumerate(c.get("volumeMounts") or []):
        where = f"{path}.volumeMounts[{j}]"
        if not mount.get("name"):
            errs.required(f"{where}.name")
        elif mount["name"] not in volumes:
            errs.not_found(f"{where}.name", mount["name"])  # validateVolumeMounts
        if not mount.get("mountPath"):
            errs.required(f"{where}.mountPath")
        elif mount["mountPath"] in mounts:
            errs.invalid(f"{where}.mountPath", mount["mountPath"], "must be unique")
        mounts.add(mount.get("mountPath"))
    _resources(errs, c.get("resources") or {}, f"{path}.resources")


def _resources(errs: Errors, res: dict[str, Any], path: str) -> None:
    """ValidateResourceRequirements: non-negative; requests <= limits; extended resources equal."""
    limits, requests = res.get("limits") or {}, res.get("requests") or {}
    for part, values in (("limits", limits), ("requests", requests)):
        for key, value in values.items():
            q = parse_quantity(value)
            if q is not None and q < 0:
                errs.invalid(f"{path}.{part}[{key}]", value, "must be greater than or equal to 0")
            extended = "/" in key and not key.startswith("kubernetes.io/")
            if extended and q is not None and q != int(q):
                errs.invalid(f"{path}.{part}[{key}]", value, "must be an integer")
    for key, value in requests.items():
        q, lim = parse_quantity(value), parse_quantity(limits.get(key)) if key in limits else None
        extended = key not in STANDARD and not key.startswith("hugepages-")
        if extended and key not in limits:
            errs.required(f"{path}.limits", "Limit must be set for non overcommitable resources")
        elif extended and lim is not None and q is not None and q != lim:
            errs.invalid(f"{path}.requests", str(value), f"must be equal to {key} limit of {limits[key]}")
        elif lim is not None and q is not None and q > lim:
            errs.invalid(f"{path}.requests", str(value), f"must be less than or equal to {key} limit of {limits[key]}")


def quantity_fields(obj: Any, path: str = "") -> list[tuple[str, Any]]:
    """Every value the decoder parses as a resource.Quantity (resources, storage, sizeLimit)."""
    out: list[tuple[str, Any]] = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            here = f"{path}.{key}" if path else key
            if key in ("limits", "requests", "capacity", "hard") and isinstance(value, dict):
                out += [(f"{here}.{k}", v) for k, v in value.items()]
            elif key == "sizeLimit":
                out.append((here, value))
            else:
                out += quantity_fields(value, here)
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            out += quantity_fields(value, f"{path}[{i}]")
    return out
