"""Every input surface bench reads, declared once: its JSON Schema file and what reads it.

A surface is data that comes from outside bench's own process (a job, a scheduler, a
results branch someone pushed to). Each has one JSON Schema file in this folder; the
physical rules a schema cannot say (a phase's seconds = end - start, MFU <= 100 %, an
energy counter that only grows between resets) live in one module each, named in
`rules`. The reader of a surface validates against its schema here, removes each
refused value (shown as unknown, never used) and names it; `bench check` lists it.

`SURFACES` is also the fuzz suite's registry (tests/fuzz/test_fuzz_schemas.py): a surface
added here, with its schema file, is fuzzed without another line of test code. Other
The files people write (import maps, expected.yaml, env.yaml numbers) are surfaces too;
their schemas ship beside their readers (`package`), which enforce them
(bench.finite_schema), and tests/fuzz/test_fuzz_user_files.py drives each through its command.
So is `results/<env>/noise.json` (written by `bench noise`, read by the PR comment, the report
and `bench check`): tests/fuzz/test_fuzz_noise.py drives it through its reader and commands.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator


@dataclass(frozen=True)
class Surface:
    name: str  # the key of this registry
    schema_file: str  # in bench/records/ (package data)
    what: str  # the file or block, for people
    rules: str = ""  # the module holding the rules JSON Schema cannot express
    package: str = "bench.records"  # where the schema file ships


SURFACES: tuple[Surface, ...] = (
    Surface("run", "run.schema.json", "run.json (compile, timeline, scheduler.accounting, ...)",
            "bench.records.ranges, bench.records.timeline_rules, bench.records.energy_counter"),
    Surface("history_entry", "history_entry.schema.json", "results branch index/<env>/<run_id>.json and its files",
            "bench.gitops.branch_entries"),
    Surface("packed_samples", "packed_samples.schema.json", "results branch samples-*.csv.cols.xz header",
            "bench.gitops.pack", "bench.gitops"),
    Surface("profile", "profile.schema.json", "profile.json (the workload's profile window: modules, operators)",
            "bench.records.profile"),
    Surface("sacct", "sacct.schema.json", "sacct --parsable2 fields of one job line (accounting at collection)",
            "bench.targets.slurm_accounting"),
    Surface("import_map", "import-map.schema.json", "bench import --map MAP.yaml (columns, derived, time, csv)",
            "bench.importers.csv_map, bench.importers.expression", "bench.importers"),
    Surface("expected", "expected.schema.json", "clusters/<env>/expected.yaml (bands read by validate and report)",
            "bench.analysis.expected", "bench.analysis"),
    Surface("env_numbers", "numbers.schema.json", "clusters/<env>/env.yaml numbers (checked at every load_env)",
            "bench.environments.numbers", "bench.environments"),
    Surface("noise", "noise.schema.json", "results/<env>/noise.json (an environment's noise floor; bench check)",
            "bench.analysis.noise_store", "bench.analysis"),
)  # fmt: skip
BY_NAME = {s.name: s for s in SURFACES}


@cache
def schema(name: str) -> dict[str, Any]:
    surface = BY_NAME[name]
    return json.loads(resources.files(surface.package).joinpath(surface.schema_file).read_text())


@cache
def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(schema(name))  # each checked by tests/bench/test_shipped_schemas.py


def _where(path: Any) -> str:
    return ".".join(str(p) for p in path) or "(top level)"


def problems(name: str, value: Any, label: str) -> list[tuple[tuple[Any, ...], str]]:
    """(path, one line naming it) for every way `value` breaks surface `name`'s schema."""
    out = []
    for err in sorted(validator(name).iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path]):
        message = err.message if len(err.message) <= 160 else err.message[:157] + "..."
        out.append((tuple(err.absolute_path), f"{label}: {_where(err.absolute_path)}: {message}"))
    return out


def refuse(name: str, value: dict[str, Any], label: str) -> list[str]:
    """Remove from `value` (in place) every value its schema refuses; one line each, naming it.

    A missing key or an extra one is a problem of the object, and nothing is removed for it."""
    from bench.records.strict_numbers import excluded

    found = problems(name, value, label)
    paths = [path for path, _ in found if path]
    excluded(value, paths)
    return [line + ("; removed (unknown)" if path else "") for path, line in found]
