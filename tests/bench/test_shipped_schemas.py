"""Every JSON Schema shipped in the package is a valid Draft 2020-12 schema.

Checked here once, not in every `bench` process that builds a validator (0.01-0.09 s of
CPU each, paid by every job's recorder and every report's reader). Each env.yaml kind's
assembled schema is checked by tests/bench/targets/test_kind_contract.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

import bench
from bench.records.surfaces import SURFACES

PACKAGE = Path(bench.__file__).parent
SHIPPED = sorted(PACKAGE.rglob("*.schema.json"))


def test_the_package_ships_the_schemas_the_surfaces_name() -> None:
    assert len(SHIPPED) >= len(SURFACES) >= 5
    names = {p.name for p in SHIPPED}
    assert {s.schema_file for s in SURFACES} <= names, "a surface names a schema file the package lacks"


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_each_shipped_schema_is_a_valid_schema(path: Path) -> None:
    schema = json.loads(path.read_text(encoding="utf-8"))
    assert schema.get("$schema", "").startswith("https://json-schema.org/draft/2020-12/")
    Draft202012Validator.check_schema(schema)


def test_the_check_refuses_a_broken_schema() -> None:
    with pytest.raises(SchemaError):
        Draft202012Validator.check_schema({"type": "object", "properties": {"cpu": {"type": 5}}})
