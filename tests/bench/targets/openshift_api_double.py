"""Kept for existing imports: the API double lives in tests/doubles/apiserver/."""

from tests.doubles.apiserver import REGISTRY, ApiError, Clock, OpenShiftApiDouble

__all__ = ["REGISTRY", "ApiError", "Clock", "OpenShiftApiDouble"]
