"""sysstat `sar` text output (`sar -u`, `sar -r`, `sar -n DEV`, one or several per file).

Format (sysstat 12.x, see the sar(1) manual, https://github.com/sysstat/sysstat):

    Linux 5.15.0-91-generic (node17)  03/14/2024  _x86_64_  (64 CPU)

    11:59:51 PM     CPU     %user     %nice   %system   %iowait    %steal     %idle
    11:59:56 PM     all     25.31      0.00      3.12      0.40      0.00     71.17

The header gives host, date and cores; each activity block starts with a column line
and each row starts with the time of day at the end of its interval (values are means
over the interval). Mapping onto the record:

- `host_cpu_percent` = 100 − %idle − %iowait of the `all` row (psutil, which the
  recorder uses, also counts iowait as idle);
- `host_mem_used_bytes` = kbmemused × 1024 (sysstat: total − free − buffers − cache −
  slab); `host_mem_total_bytes` = kbmemused ÷ %memused, the only total sar prints;
- `host_net_rx/tx_bytes_per_s` = rxkB/s, txkB/s × 1024 summed over interfaces but `lo`.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from pathlib import Path

import pandas as pd

from bench.importers.clock import TIME_RE, TimeOfDay, clock_style, seconds_of_day
from bench.importers.series import ImportFault, ParseOptions, Series, local_to_unix, number, zone

HEADER_RE = re.compile(
    r"^(?P<os>\S+)\s+(?P<kernel>\S+)\s+\((?P<host>[^)]+)\)\s+(?P<date>\S+)"
    r"(?:\s+(?P<arch>_\S+_))?(?:\s+\((?P<cpus>\d+)\s+CPU\))?\s*$"
)
SKIP_WORDS = ("LINUX RESTART",)


def parse_date(text: str, path: Path, line: int, notes: list[str]) -> date:
    """The header's date, in the formats sysstat prints per locale (ISO, C/en_US, others)."""
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", text)
    if m:
        return date(int(m[1]), int(m[2]), int(m[3]))
    m = re.fullmatch(r"(\d{1,2})([/.])(\d{1,2})\2(\d{2}|\d{4})", text)
    if not m:
        raise ImportFault(
            path,
            line,
            f"header date {text!r} is not a date sar prints (YYYY-MM-DD or MM/DD/YYYY); pass --date YYYY-MM-DD",
        )
    a, sep, b, year = int(m[1]), m[2], int(m[3]), int(m[4])
    year += 2000 if year < 100 else 0
    if sep == "." or a > 12:
        day, month = a, b
    else:
        month, day = a, b
        if b <= 12 and a != b:
            notes.append(f"header date {text} read as MM/DD/YYYY (sysstat's C/en_US format); pass --date to override")
    try:
        return date(year, month, day)
    except ValueError as exc:
        raise ImportFault(path, line, f"header date {text!r}: {exc}") from None


def _kind(columns: list[str]) -> str | None:
    if "%idle" in columns and columns[:1] == ["CPU"]:
        return "cpu"
    if "kbmemused" in columns:
        return "mem"
    if columns[:1] == ["IFACE"] and "rxkB/s" in columns:
        return "net"
    return None


def _row_values(kind: str, cols: list[str], tokens: list[str], path: Path, no: int) -> dict[str, float] | None:
    if len(tokens) != len(cols):
        raise ImportFault(
            path, no, f"{len(tokens)} fields where the column line above has {len(cols)} ({' '.join(cols)})"
        )
    v = dict(zip(cols, tokens))
    if kind == "cpu":
        if v["CPU"] != "all":
            return None  # a per-CPU row of `sar -P ALL`; the record keeps the host total
        idle = number(v["%idle"], path, no, "%idle")
        iowait = number(v["%iowait"], path, no, "%iowait") if "%iowait" in v else 0.0
        return {"host_cpu_percent": round(max(0.0, 100.0 - idle - iowait), 3)}
    if kind == "mem":
        used = number(v["kbmemused"], path, no, "kbmemused") * 1024
        out = {"host_mem_used_bytes": used}
        if "%memused" in v:
            pct = number(v["%memused"], path, no, "%memused")
            if pct > 0:
                out["host_mem_total_bytes"] = round(used * 100.0 / pct / 1024) * 1024
        return out
    if v["IFACE"] == "lo":
        return None
    return {
        "host_net_rx_bytes_per_s": number(v["rxkB/s"], path, no, "rxkB/s") * 1024,
        "host_net_tx_bytes_per_s": number(v["txkB/s"], path, no, "txkB/s") * 1024,
    }


def parse(path: Path, opts: ParseOptions) -> Series:
    path = Path(path)
    try:
        lines = path.read_text(errors="strict").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportFault(path, None, f"cannot read ({type(exc).__name__}: {exc})") from None
    notes: list[str] = []
    stamps = []
    for raw in lines:
        m = TIME_RE.match(raw.strip())
        if m:
            stamps.append((int(m[1]), m[4]))
    style = clock_style(stamps)
    tz = zone(opts.timezone)
    day0 = date.fromisoformat(opts.date) if opts.date else None
    series = Series(source=path, format="sar", frame=pd.DataFrame(), timed=True)
    clocks: dict[str, TimeOfDay] = {}
    wraps: list[str] = []
    kind: str | None = None
    cols: list[str] = []
    rows: dict[float, dict[str, float]] = {}
    ignored: set[str] = set()
    for no, raw in enumerate(lines, 1):
        text = raw.strip()
        if not text or text.startswith("Average:") or any(w in text for w in SKIP_WORDS):
            continue
        header = HEADER_RE.match(text)
        if header and not TIME_RE.match(text):
            series.host = header["host"]
            if not opts.date:
                day0 = parse_date(header["date"], path, no, notes)
            if header["cpus"]:
                series.facts["cpu_cores_logical"] = int(header["cpus"])
            series.facts["platform"] = " ".join(
                x for x in (header["os"], header["kernel"], (header["arch"] or "").strip("_")) if x
            )
            wraps.extend(w for c in clocks.values() for w in c.wraps)
            clocks = {}  # a new report (e.g. the next day's file appended) restarts the clock
            continue
        m = TIME_RE.match(text)
        if not m:
            raise ImportFault(
                path,
                no,
                f"not a sar line (expected 'HH:MM:SS [AM|PM] ...' or the "
                f"'Linux ... (host) date' header): {text[:60]!r}",
            )
        tokens = text[m.end() :].split()
        if tokens and not any(_float_ok(t) for t in tokens):
            kind, cols = _kind(tokens), tokens
            if kind is None:
                ignored.add(" ".join(tokens[:3]))
            continue
        if not cols:
            raise ImportFault(path, no, "a data row before any column line (is the file cut at the top?)")
        if kind is None:
            continue
        values = _row_values(kind, cols, tokens, path, no)
        if values is None:
            continue
        if day0 is None:
            raise ImportFault(
                path,
                None,
                "no sysstat header line ('Linux ... (host) DATE ...') to give the date; pass --date YYYY-MM-DD",
            )
        clock = clocks.setdefault(kind, TimeOfDay(style))
        secs = clock.at(seconds_of_day(int(m[1]), int(m[2]), int(m[3]), m[4]), f"line {no}")
        moment = datetime.combine(day0, datetime.min.time()) + timedelta(seconds=secs)
        t = local_to_unix(moment, tz)
        row = rows.setdefault(t, {})
        for key, value in values.items():
            row[key] = row.get(key, 0.0) + value if key.startswith("host_net") else value
    if not rows:
        raise ImportFault(path, None, "no sar -u, -r or -n DEV rows found (is it sar text output?)")
    frame = pd.DataFrame.from_dict(rows, orient="index").sort_index()
    frame.index.name = "time"
    series.frame = frame.reset_index()
    wraps.extend(w for c in clocks.values() for w in c.wraps)
    series.notes = notes + [f"clock: {style}"] + wraps
    if style == "12-hour without AM/PM":
        series.notes.append(
            "AM/PM missing: the first sample is taken to be in the half of the day its hour "
            "reads as; later samples follow it in order"
        )
    series.ignored = sorted(ignored)
    return series


def _float_ok(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False
