"""Writes protobuf_fields.json, the field numbers the double needs to read kubectl's protobuf bodies.

`python -m tests.doubles.apiserver.protobuf_table OUT.json FILE.proto...` reads the
`generated.proto` files of https://github.com/kubernetes/api (batch/v1, core/v1,
authorization/v1) and
https://github.com/kubernetes/apimachinery (pkg/apis/meta/v1, pkg/api/resource,
pkg/util/intstr, pkg/runtime) and keeps every message reachable from the kinds in ROOTS:
{message: {number: [json name, type, "optional" | "repeated" | "map"]}}. Field numbers
never change between releases (protobuf compatibility), so the table read from one release
serves clients of the next. The table shipped was read from kubernetes/api at commit
10b39a39bcee995dfe7cd5e8e7b922be5e46f1e2 and kubernetes/apimachinery at commit
eed236ceee2c19c2753a3d93ac0631dc20750454 (both after their v0.37.0-beta.0 tags).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

ROOTS = (
    "k8s.io.api.batch.v1.Job",
    "k8s.io.api.core.v1.Secret",
    "k8s.io.api.core.v1.ConfigMap",
    "k8s.io.api.authorization.v1.SelfSubjectAccessReview",
    "k8s.io.api.authorization.v1.SubjectAccessReview",
    "k8s.io.api.authorization.v1.LocalSubjectAccessReview",
    "k8s.io.apimachinery.pkg.runtime.Unknown",
)
SCALARS = {"string", "bytes", "bool", "int32", "int64", "double", "float"}
_FIELD = re.compile(r"^\s*(optional|repeated)?\s*(map<\s*\w+\s*,\s*([.\w]+)\s*>|[.\w]+)\s+(\w+)\s*=\s*(\d+)\s*;")


def parse(text: str) -> dict[str, dict[str, list[str]]]:
    """Messages of one generated.proto, their types fully qualified (no leading dot)."""
    package = re.search(r"^package\s+([\w.]+);", text, re.M).group(1)  # type: ignore[union-attr]
    out: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for line in text.splitlines():
        if line.lstrip().startswith("//"):
            continue
        start = re.match(r"^message\s+(\w+)\s*{", line)
        if start:
            current = out.setdefault(f"{package}.{start.group(1)}", {})
            continue
        if line.startswith("}"):
            current = None
            continue
        m = _FIELD.match(line)
        if current is not None and m:
            label, typ, map_value, name, number = m.groups()
            typ = map_value if map_value else typ
            if typ not in SCALARS:
                typ = typ[1:] if typ.startswith(".") else f"{package}.{typ}"
            current[number] = [name, typ, "map" if map_value else label or "optional"]
    return out


def reachable(messages: dict[str, dict[str, list[str]]], roots: tuple[str, ...]) -> dict[str, Any]:
    keep: dict[str, Any] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in keep or name not in messages:
            continue
        keep[name] = messages[name]
        todo += [t for _, t, _ in messages[name].values() if t not in SCALARS]
    return dict(sorted(keep.items()))


def main(argv: list[str]) -> int:
    out, *protos = argv
    messages: dict[str, dict[str, list[str]]] = {}
    for proto in protos:
        messages.update(parse(Path(proto).read_text()))
    Path(out).write_text(json.dumps(reachable(messages, ROOTS), indent=0, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
