"""TEST DOUBLE of an OpenShift/Kubernetes API server that real `kubectl` and the Python client accept.

Start one by hand with `python -m tests.doubles.apiserver` (or `make api-double`): it prints
a kubeconfig path to point kubectl or `bench --env moc` at. Tests build `OpenShiftApiDouble`
directly and drive its Clock.
"""

from tests.doubles.apiserver.clock import Clock
from tests.doubles.apiserver.errors import ApiError
from tests.doubles.apiserver.lifecycle import REGISTRY
from tests.doubles.apiserver.scenarios import KF_JOB_NAME, KF_REPLICA_INDEX, KF_REPLICA_TYPE
from tests.doubles.apiserver.server import OpenShiftApiDouble

__all__ = [
    "REGISTRY",
    "ApiError",
    "Clock",
    "KF_JOB_NAME",
    "KF_REPLICA_INDEX",
    "KF_REPLICA_TYPE",
    "OpenShiftApiDouble",
]
