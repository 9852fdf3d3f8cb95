"""The map of a mapped CSV import: which file holds what, in which unit.

A map describes one run. It is either one file's map (`columns:` at the top, the file
given on the command line) or several files' (`files:`, each with its own columns and
time, paths relative to the map), so a study's GPU, CPU and memory sheets become one
run record. Keys at the top (`csv`, `time`, `date`, `interval_s`, `start`, `host`)
apply to every file that does not set its own. Mistakes are refused before anything is
read: a duplicated YAML key, two entries filling one record column, a scale that is
not above 0, a unit that does not convert; an ambiguous unit is read as sysstat reads
it and warned about (bench.importers.units).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.errors import AtlasError
from bench.finite_schema import problems
from bench.importers.csv_time import map_fault
from bench.importers.dcgm_names import record_column
from bench.importers.expression import GRAMMAR, Expression, ExpressionError, parse_expression
from bench.importers.series import ParseOptions, column_unit
from bench.importers.units import ambiguity, unit_factor
from bench.strict_yaml import load_strict

FILE_KEYS = {"file", "columns", "derived", "time", "date", "interval_s", "start", "csv", "host"}
TOP_KEYS = (FILE_KEYS - {"file"}) | {"files", "hardware"}
INHERITED = ("csv", "time", "date", "interval_s", "start", "host")
SCHEMA_FILE = Path(__file__).with_name("import-map.schema.json")
MAX_MAP_BYTES = 1024 * 1024  # a map is a page of YAML; a larger file is not one
EXAMPLE = 'columns: {"CPU %": {to: host_cpu_percent}} or derived: {host_cpu_percent: "100 - `%idle`"}'


@dataclass(frozen=True)
class Target:
    """One record column a file fills: from a CSV column, or an expression over a row's columns."""

    column: str  # the record column
    source: str  # the CSV column, or the expression
    is_expr: bool
    factor: float  # scale x unit conversion to the record's unit
    key: str  # where the map says it, for messages
    expression: Expression | None = None  # the checked expression of a derived column


def load_map(path: Path) -> dict[str, Any]:
    """The map at `path` (read with the bound MAX_MAP_BYTES, a key given twice refused), or one
    AtlasError naming the file and the problem."""
    mapping = load_strict(path, MAX_MAP_BYTES, "an import map")
    if not isinstance(mapping, dict):
        raise AtlasError(f"{path}: expected a mapping with columns: or files: (see docs/import-a-study.md)")
    return mapping


def _unknown_keys(entry: dict[str, Any], known: set[str], opts: ParseOptions, where: str) -> None:
    extra = sorted(str(k) for k in entry if k not in known)
    if extra:
        raise map_fault(
            opts, where or extra[0], f"unknown key(s) {', '.join(extra)}; known: {', '.join(sorted(known))}"
        )


def file_maps(mapping: dict[str, Any], opts: ParseOptions) -> list[tuple[Path | None, ParseOptions]]:
    """(file, its options) per file of the map: one entry with no file for a one-file map."""
    _unknown_keys(mapping, TOP_KEYS, opts, "")
    csv_options(mapping, opts)
    files = mapping.get("files")
    if files is None:
        targets(mapping, opts)  # refused here, before any file is read
        _schema(mapping, opts)
        return [(None, replace(opts, mapping=mapping))]
    if not isinstance(files, list) or not files:
        raise map_fault(opts, "files", "give a list of files, each with file: <path> and columns: or derived:")
    for key in ("columns", "derived"):
        if key in mapping:
            raise map_fault(opts, key, "with files:, give each file its own columns: (and derived:)")
    base = Path(opts.map_path).parent if opts.map_path else Path(".")
    out: list[tuple[Path | None, ParseOptions]] = []
    owners: dict[str, str] = {}
    for i, entry in enumerate(files, 1):
        part = replace(opts, map_key=f"files[{i}].")
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
            raise map_fault(part, "file", "missing: each entry of files: needs file: <path relative to the map>")
        _unknown_keys(entry, FILE_KEYS, part, "")
        merged = {**{k: mapping[k] for k in INHERITED if k in mapping}, **entry}
        merged["hardware"] = mapping.get("hardware")
        part = replace(part, mapping=merged)
        csv_options(merged, part)
        for target in targets(merged, part):
            if target.column in owners:
                raise map_fault(part, target.key, f"{target.column} is already filled by {owners[target.column]}")
            owners[target.column] = f"{part.map_key}{target.key}"
        out.append((base / entry["file"], part))
    _schema(mapping, opts)  # the last net: whatever the checks above let through, the schema refuses
    return out


def csv_options(mapping: dict[str, Any], opts: ParseOptions) -> tuple[str, str]:
    """(delimiter, decimal) of `csv:`: each one character, and not the same one."""
    fmt = mapping.get("csv")
    if fmt is None:
        return ",", "."
    if not isinstance(fmt, dict) or set(fmt) - {"delimiter", "decimal"}:
        raise map_fault(opts, "csv", 'give {delimiter: ";", decimal: ","} (each one character)')
    chosen = []
    for key, default in (("delimiter", ","), ("decimal", ".")):
        value = fmt.get(key, default)
        if not isinstance(value, str) or len(value) != 1 or value in '\r\n"':
            raise map_fault(opts, f"csv.{key}", f"{str(value)[:20]!r} must be one character (not a quote or newline)")
        chosen.append(value)
    if chosen[0] == chosen[1]:
        raise map_fault(opts, "csv", f"delimiter and decimal are both {chosen[0]!r}: a cell could not be split")
    return chosen[0], chosen[1]


def _schema(mapping: dict[str, Any], opts: ParseOptions) -> None:
    """Refuse what import-map.schema.json does not allow, naming the key (e.g. files[2].interval_s)."""
    found = problems(SCHEMA_FILE, mapping)
    if found:
        where, why = found[0]
        raise map_fault(opts, where or "map", f"{why} (bench/importers/import-map.schema.json)")


def _factor(spec: dict[str, Any], target: str, opts: ParseOptions, key: str) -> float:
    record_unit = column_unit(target)
    if record_unit is None:
        raise map_fault(
            opts,
            f"{key}.to",
            f"{target!r} is not a record column (e.g. host_cpu_percent, host_mem_used_bytes, "
            "gpu0_DCGM_FI_DEV_GPU_UTIL; see bench/README.md)",
        )
    scale = spec.get("scale", 1)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not scale > 0 or scale == float("inf"):
        raise map_fault(opts, f"{key}.scale", f"{scale!r} is not a number above 0 (a scale multiplies every value)")
    unit = str(spec.get("unit", record_unit))
    factor = unit_factor(unit, record_unit)
    if factor is None:
        raise map_fault(opts, f"{key}.unit", f"{unit!r} does not convert to {record_unit} (the unit of {target})")
    return float(scale) * factor


def targets(mapping: dict[str, Any], opts: ParseOptions) -> list[Target]:
    """Every record column one file fills; a column filled twice is refused."""
    cols, derived = mapping.get("columns") or {}, mapping.get("derived") or {}
    if not isinstance(cols, dict) or not isinstance(derived, dict) or not (cols or derived):
        raise map_fault(opts, "columns", f"missing: map at least one CSV column to a record column, e.g. {EXAMPLE}")
    out: list[Target] = []
    for src, spec in cols.items():
        key = f"columns.{src}"
        spec = {"to": spec} if isinstance(spec, str) else spec
        if not isinstance(spec, dict) or not isinstance(spec.get("to"), str):
            raise map_fault(opts, key, "needs 'to: <record column>'")
        column = record_column(spec["to"])  # a DCGM 4.6 field name as the record names it
        out.append(Target(column, str(src), False, _factor({**spec, "to": column}, column, opts, key), key))
    for column, spec in derived.items():
        key = f"derived.{column}"
        spec = {"expr": spec} if isinstance(spec, str) else spec
        if not isinstance(spec, dict) or not isinstance(spec.get("expr"), str) or not spec["expr"].strip():
            raise map_fault(opts, key, 'needs an expression over the row\'s columns, e.g. "100 - `%idle`"')
        try:
            expression = parse_expression(spec["expr"])
        except ExpressionError as exc:
            raise map_fault(opts, key, f"{spec['expr'][:80]!r} {exc}") from None
        if not expression.columns:
            raise map_fault(opts, key, f"{spec['expr'][:80]!r} gives one value, not one per row: name a column")
        column = record_column(str(column))
        factor = _factor({**spec, "to": column}, column, opts, key)
        out.append(Target(column, spec["expr"], True, factor, key, expression))
    seen: dict[str, str] = {}
    for t in out:
        if t.column in seen:
            raise map_fault(opts, t.key, f"{t.column} is already filled by {seen[t.column]}: keep one of them")
        seen[t.column] = t.key
    return out


def unit_warnings(mapping: dict[str, Any]) -> list[str]:
    """A warning for each ambiguous unit the map names."""
    specs = [*(mapping.get("columns") or {}).values(), *(mapping.get("derived") or {}).values()]
    units = [str(s["unit"]) for s in specs if isinstance(s, dict) and "unit" in s]
    return [f"warning: {w}" for u in dict.fromkeys(units) if (w := ambiguity(u))]


def expression_columns(target: Target, header: list[str], opts: ParseOptions, path: Path) -> list[str]:
    """The file's columns a derived target names; a name that is not one of them is refused."""
    assert target.expression is not None
    missing = [c for c in target.expression.columns if c not in header]
    if missing:
        raise map_fault(
            opts,
            target.key,
            f"{target.source[:80]!r} names {', '.join(map(repr, missing))}, not a column of {path.name} "
            f"(its columns: {', '.join(header)}); write columns with spaces or symbols in backticks, "
            f"e.g. 100 - `%idle`. An expression may hold {GRAMMAR}",
        )
    return list(target.expression.columns)
