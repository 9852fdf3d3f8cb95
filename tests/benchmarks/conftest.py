"""Fixtures of this folder's tests: each of their torch processes runs one CPU thread (tests/one_thread.py)."""

from tests.one_thread import one_torch_thread

__all__ = ["one_torch_thread"]
