"""DCGM: `dcgmi dmon` text and dcgm-exporter Prometheus scrapes.

The record's GPU columns already carry DCGM field names (bench/gpus.py), so both map
one to one. `dcgmi dmon -e 203,252,155,...` prints short tags and no time:

    #Entity   GPUTL  FBUSD  POWER
    ID
    GPU 0     31     10240  65.432

(tags from DCGM's field table, dcgm_fields.h in https://github.com/NVIDIA/DCGM); its
rows are numbered and placed `--interval` seconds apart (dmon's `-d` in ms ÷ 1000). dmon
prints its two header lines again every 14 rounds (MAX_PRINT_HEADER_COUNT in
dcgmi/DeviceMonitor.cpp); they start no sample. Field names are read in both spellings,
before and after DCGM 4.6's renaming (bench.importers.dcgm_names).

dcgm-exporter (https://github.com/NVIDIA/dcgm-exporter) serves the Prometheus text
format; a series is several scrapes in one file, e.g. `curl` in a loop, or Prometheus'
`/federate` output, whose samples carry a millisecond timestamp:

    DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-...",modelName="NVIDIA A100-SXM4-40GB",Hostname="node17"} 31 1710460791000

With timestamps, a scrape is the set of samples of one timestamp; without, a new scrape
starts when a (metric, GPU) pair comes again, and scrapes are `--interval` apart.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from bench.importers.dcgm_names import record_field
from bench.importers.sanitize import gpu_index
from bench.importers.series import (
    GPU_FIELD_UNITS,
    ImportFault,
    ParseOptions,
    Series,
    gpu_frame,
    group_samples,
    number,
    read_import_text,
)
from bench.records.columns import GPU_CATALOGUE

# dcgmi dmon column tags -> DCGM field names: each catalogue row's tag (bench.records.columns).
DMON_TAGS = {col.dmon: col.name for col in GPU_CATALOGUE if col.dmon}
# The line dmon prints when stopped by a signal (dcgmi/DeviceMonitor.cpp): the log's end, not data.
STOPPED = "dmon was stopped"
MISSING = {"N/A", "-", ""}
# Exported beside FB_USED by dcgm-exporter's default counters; their sum is FB_TOTAL.
FB_PARTS = ("DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED")
SAMPLE_RE = re.compile(
    r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)"
    r"(?:\s+(?P<ts>-?\d+))?\s*$"
)
LABEL_RE = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


def _read(path: Path) -> list[str]:
    return read_import_text(path).splitlines()


def _known(name: str) -> str | None:
    """The record field of a dmon column named by field name (old or 4.6) rather than tag."""
    field_name = record_field(name)
    return field_name if field_name in GPU_FIELD_UNITS else None


def _refuse_twice(path: Path, no: int | None, named: list[tuple[str, str | None]]) -> None:
    """Refuse one field given under two names (or one name twice): which value is right cannot be told."""
    first: dict[str, str] = {}
    for name, field_name in named:
        if field_name is None:
            continue
        if field_name in first:
            both = f"{name} appears twice" if first[field_name] == name else f"{first[field_name]} and {name} are both"
            raise ImportFault(
                path,
                no,
                f"{both} {field_name} (a DCGM field under its old and 4.6 name, or one column twice): "
                "keep one of them; which value is right cannot be told",
            )
        first[field_name] = name


def parse_dmon(path: Path, opts: ParseOptions) -> Series:
    path = Path(path)
    series = Series(
        source=path,
        format="dcgmi-dmon",
        frame=pd.DataFrame(),
        timed=False,  # type: ignore[arg-type]
        interval_s=opts.interval_s,
    )
    fields: list[str | None] | None = None
    ignored: set[str] = set()
    parsed: list[tuple[int, dict[str, float]]] = []
    for no, raw in enumerate(_read(path), 1):
        text = raw.strip()
        if not text:
            continue
        if text.startswith("#"):
            tags = text.lstrip("#").split()
            if not tags or tags[0] != "Entity":
                raise ImportFault(path, no, f"expected the '#Entity TAG ...' column line of dcgmi dmon: {text[:60]!r}")
            fields = [DMON_TAGS.get(t) or _known(t) for t in tags[1:]]
            _refuse_twice(path, no, list(zip(tags[1:], fields)))
            ignored.update(t for t, f in zip(tags[1:], fields) if f is None)
            continue
        if text.split()[0] in ("ID", "Id", "Entity") or text.startswith(STOPPED):
            continue  # the second header line (entity id, units)
        if fields is None:
            raise ImportFault(path, no, "a data row before the '#Entity ...' column line")
        tokens = text.split()
        if tokens[0] != "GPU":
            ignored.add(f"entity {tokens[0]}")  # GPU-I, GPU-CI, NvSwitch, ...: not a whole GPU
            continue
        if len(tokens) != 2 + len(fields):
            raise ImportFault(path, no, f"{len(tokens) - 2} values where the column line has {len(fields)}")
        gpu = gpu_index(number(tokens[1], path, no, "GPU id"), path, no, "GPU id")
        values = {f: number(v, path, no, f) for f, v in zip(fields, tokens[2:]) if f and v not in MISSING}
        parsed.append((gpu, values))
    if not parsed:
        raise ImportFault(path, None, "no 'GPU <id> ...' rows (is it dcgmi dmon output?)")
    samples = group_samples([g for g, _ in parsed])
    rows = [(s, g, f, v) for s, (g, values) in zip(samples, parsed) for f, v in values.items()]
    series.frame = gpu_frame(rows, None)
    series.ignored = sorted(ignored)
    return series


def _labels(text: str, path: Path, no: int) -> dict[str, str]:
    out: dict[str, str] = {}
    pos = 0
    while pos < len(text):
        m = LABEL_RE.match(text, pos)
        if not m:
            raise ImportFault(path, no, f"unreadable labels {{{text[:60]}}}")
        out[m[1]] = m[2].replace('\\"', '"').replace("\\\\", "\\")
        pos = m.end()
    return out


def parse_exporter(path: Path, opts: ParseOptions) -> Series:
    path = Path(path)
    series = Series(
        source=path,
        format="dcgm-exporter",
        frame=pd.DataFrame(),
        timed=False,  # type: ignore[arg-type]
        interval_s=opts.interval_s,
    )
    parsed: list[tuple[int, str, float, int | None]] = []
    ignored: set[str] = set()
    spelled: dict[str, str] = {}  # record field -> the name this file gives it
    for no, raw in enumerate(_read(path), 1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        m = SAMPLE_RE.match(text)
        if not m:
            raise ImportFault(path, no, f"not a Prometheus sample line: {text[:60]!r}")
        name = record_field(m["name"])
        if spelled.setdefault(name, m["name"]) != m["name"]:
            _refuse_twice(path, no, [(spelled[name], name), (m["name"], name)])
        labels = _labels(m["labels"] or "", path, no)
        if name not in GPU_FIELD_UNITS and name not in FB_PARTS:
            ignored.add(name)
            continue
        if "gpu" not in labels:
            raise ImportFault(path, no, f'{name} has no gpu="N" label')
        gpu = gpu_index(number(labels["gpu"], path, no, "gpu label"), path, no, "gpu label")
        facts = series.gpu_facts.setdefault(gpu, {})
        for label, key in (("UUID", "uuid"), ("modelName", "model"), ("DCGM_FI_DRIVER_VERSION", "driver")):
            if labels.get(label):
                facts[key] = labels[label]
        if labels.get("Hostname"):
            series.host = labels["Hostname"]
        value = number(m["value"], path, no, name)
        parsed.append((gpu, name, value, int(m["ts"]) if m["ts"] else None))
    if not parsed:
        raise ImportFault(path, None, "no DCGM_FI_DEV_* or DCGM_FI_PROF_* samples (is it a dcgm-exporter scrape?)")
    stamped = [p[3] is not None for p in parsed]
    if any(stamped) and not all(stamped):
        raise ImportFault(path, None, "some samples have a timestamp and some do not; keep one kind per file")
    series.timed = all(stamped)
    if series.timed:
        order = sorted({p[3] for p in parsed})  # type: ignore[type-var]
        number_of = {ts: i for i, ts in enumerate(order)}
        samples = [number_of[p[3]] for p in parsed]  # type: ignore[index]
        times = {i: ts / 1000.0 for ts, i in number_of.items()}  # type: ignore[operator]
    else:
        samples = group_samples([hash((p[0], p[1])) for p in parsed])
        times = None
    rows = [(s, g, name, v) for s, (g, name, v, _) in zip(samples, parsed)]
    frame = gpu_frame(rows, times)
    for gpu in sorted({p[0] for p in parsed}):
        used, total = f"gpu{gpu}_DCGM_FI_DEV_FB_USED", f"gpu{gpu}_DCGM_FI_DEV_FB_TOTAL"
        parts = [f"gpu{gpu}_{p}" for p in FB_PARTS if f"gpu{gpu}_{p}" in frame]
        if used in frame and total not in frame and parts:
            frame[total] = frame[used] + sum(frame[p].fillna(0) for p in parts)
            series.notes.append(f"gpu{gpu} FB_TOTAL = FB_USED + {' + '.join(p[len(f'gpu{gpu}_') :] for p in parts)}")
    series.frame = frame.drop(columns=[c for c in frame.columns if c.split("_", 1)[-1] in FB_PARTS])
    series.ignored = sorted(ignored)
    return series
