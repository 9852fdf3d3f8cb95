"""The contract every target kind keeps, run over every registered kind (as ReFrame's
unittests/test_schedulers.py runs one suite over every scheduler back-end): a new kind is
tested by these the moment its module registers, with no list to update."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from bench.environments.load import CLUSTERS_DIR, Environment, known_envs, load_env
from bench.environments.schema import COMMON, settings_schema
from bench.errors import ConfigError
from bench.in_job.scheduler import known_probes, probe_for
from bench.targets import known_kinds, target_class
from bench.targets.base import Target

REPO = Path(__file__).resolve().parents[3]
KINDS = known_kinds()


def env_of(kind: str, **settings: object) -> Environment:
    return Environment("contract", kind, CLUSTERS_DIR / "contract", {"kind": kind, **settings})


@pytest.mark.parametrize("kind", KINDS)
def test_a_kind_is_its_own_module_and_class(kind: str) -> None:
    cls = target_class(kind)
    module = f"bench.targets.{kind.replace('-', '_')}"  # `ssh-demo` -> ssh_demo.py
    assert issubclass(cls, Target) and cls.kind == kind and cls.__module__ == module
    assert not inspect.isabstract(cls), f"{cls.__name__} leaves abstract methods: {cls.__abstractmethods__}"


@pytest.mark.parametrize("kind", KINDS)
def test_a_kind_declares_its_own_env_yaml_keys(kind: str) -> None:
    own = target_class(kind).settings_properties
    assert not set(own) & set(COMMON), "a kind's keys may not redefine the common ones"
    Draft202012Validator.check_schema(settings_schema(kind, own))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("hostile", [{"no_such_key": 1}, {"ansible_become": True}])
def test_a_kind_refuses_a_key_no_schema_names_before_reading_its_settings(kind: str, hostile: dict) -> None:
    key = next(iter(hostile))
    with pytest.raises(ConfigError, match=rf"{key}.*(for kind {kind}|is refused)"):
        target_class(kind)(env_of(kind, **hostile))


@pytest.mark.parametrize("kind", KINDS)
def test_a_kind_declares_its_in_job_probe_and_where_its_data_is_staged(kind: str) -> None:
    """What used to be hard-coded elsewhere (stage_data's list of Kubernetes kinds, the
    recorder's silent fallback to plain) is the kind's own declaration."""
    cls = target_class(kind)
    assert cls.job_scheduler in known_probes(), f"{kind}: job_scheduler {cls.job_scheduler!r} has no in-job probe"
    assert probe_for(cls.job_scheduler, {}).name == cls.job_scheduler
    assert isinstance(cls.data_on_volume, bool)


def test_kubernetes_kinds_stage_data_on_a_volume_and_the_others_on_the_nodes() -> None:
    assert target_class("kubernetes").data_on_volume and target_class("openshift").data_on_volume
    assert not target_class("slurm").data_on_volume and not target_class("local").data_on_volume


@pytest.mark.parametrize("kind", KINDS)
def test_a_kinds_ci_step_and_extras_exist(kind: str) -> None:
    cls = target_class(kind)
    if cls.ci_setup:
        assert re.search(rf"^{re.escape(cls.ci_setup)}:", (REPO / "Makefile").read_text(), re.M), cls.ci_setup
    pyproject = (REPO / "pyproject.toml").read_text()  # [project.optional-dependencies] names each extra
    assert all(re.search(rf"^{re.escape(e)} = \[", pyproject, re.M) for e in filter(None, cls.extras.split(",")))


@pytest.mark.parametrize("name", known_envs())
def test_every_environment_builds_its_target_and_names_its_login_host(name: str) -> None:
    env = load_env(name)
    target = target_class(env.kind)(env)
    host = target.login_host()
    assert host is None or (isinstance(host, str) and host), host
    reason = target.available()
    assert reason is None or (isinstance(reason, str) and reason)
