"""sysstat `sar` text output (`sar -u`, `sar -r`, `sar -n DEV`, one or several per file).

Format (sysstat 12.x, see the sar(1) manual, https://github.com/sysstat/sysstat):

    Linux 5.15.0-91-generic (node17)  03/14/2024  _x86_64_  (64 CPU)

    11:59:51 PM     CPU     %user     %nice   %system   %iowait    %steal     %idle
    11:59:56 PM     all     25.31      0.00      3.12      0.40      0.00     71.17

The header gives host, date and cores; each activity block starts with a column line
and each row starts with the time of day at the end of its interval (values are means
over the interval). Mapping onto the record:

- `host_cpu_percent` = 100 − %idle − %iowait of the `all` row (psutil, which the
  recorder uses, also counts iowait as idle); `host_cpu_iowait_percent` and
  `host_cpu_steal_percent` = its %iowait and %steal;
- `host_mem_used_bytes` = kbmemused × 1024 (sysstat: total − free − buffers − cache −
  slab); `host_mem_total_bytes` = kbmemused ÷ %memused, the only total sar prints;
- `host_net_rx/tx_bytes_per_s` = rxkB/s, txkB/s × 1024 summed over interfaces but `lo`.
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime, timedelta
from pathlib import Path

import pandas as pd

from bench.importers.clock import CLOCK_NO_AMPM, NO_AMPM_NOTE, TIME_RE, TimeOfDay, clock_style, seconds_of_day
from bench.importers.series import ImportFault, ParseOptions, Series, local_to_unix, number, read_import_text, zone

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
        busy = 100.0 - idle - iowait  # out of 0..100 (idle 150, nan): dropped by sanitize, never read as 0
        busy = busy if busy == busy else math.inf  # nan -> inf: counted as not finite there, not lost unnamed
        out = {"host_cpu_percent": 0.0 if -0.5 < busy < 0 else round(busy, 3)}
        if "%iowait" in v:
            out["host_cpu_iowait_percent"] = iowait
        if "%steal" in v:
            out["host_cpu_steal_percent"] = number(v["%steal"], path, no, "%steal")
        return out
    if kind == "mem":
        used = number(v["kbmemused"], path, no, "kbmemused") * 1024
        out = {"host_mem_used_bytes": used}
        if "%memused" in v:
            pct = number(v["%memused"], path, no, "%memused")
            total = used * 100.0 / pct if 0 < pct <= 100 else math.nan
            if math.isfinite(total) and total < 1e18:  # %memused 1e-300 would give an infinite total
                out["host_mem_total_bytes"] = round(total / 1024) * 1024
        return out
    if v["IFACE"] == "lo":
        return None
    return {
        "host_net_rx_bytes_per_s": number(v["rxkB/s"], path, no, "rxkB/s") * 1024,
        "host_net_tx_bytes_per_s": number(v["txkB/s"], path, no, "txkB/s") * 1024,
    }


class _SarReader:
    """State while reading one sar file line by line: the current activity's columns,
    one clock per activity, and rows keyed by time (activities printed at the same
    time land on one row)."""

    def __init__(self, path: Path, opts: ParseOptions, style: str) -> None:
        self.path, self.opts, self.style = path, opts, style
        self.tz = zone(opts.timezone)
        self.day0 = date.fromisoformat(opts.date) if opts.date else None
        self.series = Series(source=path, format="sar", frame=pd.DataFrame(), timed=True)
        self.clocks: dict[str, TimeOfDay] = {}
        self.wraps: list[str] = []
        self.kind: str | None = None
        self.cols: list[str] = []
        self.rows: dict[float, dict[str, float]] = {}
        self.ignored: set[str] = set()

    def feed(self, no: int, text: str) -> None:
        if not text or text.startswith("Average:") or any(w in text for w in SKIP_WORDS):
            return
        m = TIME_RE.match(text)
        header = HEADER_RE.match(text)
        if header and not m:
            self._header(no, header)
            return
        if not m:
            raise ImportFault(
                self.path,
                no,
                "not a sar line (expected 'HH:MM:SS [AM|PM] ...' or the "
                f"'Linux ... (host) date' header): {text[:60]!r}",
            )
        tokens = text[m.end() :].split()
        if tokens and not any(_float_ok(t) for t in tokens):  # a column line starts an activity block
            self.kind, self.cols = _kind(tokens), tokens
            if self.kind is None:
                self.ignored.add(" ".join(tokens[:3]))
            return
        if not self.cols:
            raise ImportFault(self.path, no, "a data row before any column line (is the file cut at the top?)")
        values = _row_values(self.kind, self.cols, tokens, self.path, no) if self.kind else None
        if values is not None:
            self._add(no, m, values)

    def _header(self, no: int, header: re.Match[str]) -> None:
        self.series.host = header["host"]
        if not self.opts.date:
            self.day0 = parse_date(header["date"], self.path, no, self.series.notes)
        if header["cpus"]:
            self.series.facts["cpu_cores_logical"] = int(header["cpus"])
        parts = (header["os"], header["kernel"], (header["arch"] or "").strip("_"))
        self.series.facts["platform"] = " ".join(x for x in parts if x)
        self.wraps.extend(w for c in self.clocks.values() for w in c.wraps)
        self.clocks = {}  # a new report (e.g. the next day's output appended) restarts the clock

    def _add(self, no: int, m: re.Match[str], values: dict[str, float]) -> None:
        if self.day0 is None:
            raise ImportFault(
                self.path,
                None,
                "no sysstat header line ('Linux ... (host) DATE ...') to give the date; pass --date YYYY-MM-DD",
            )
        clock = self.clocks.setdefault(str(self.kind), TimeOfDay(self.style))
        secs = clock.at(seconds_of_day(int(m[1]), int(m[2]), int(m[3]), m[4]), f"line {no}")
        t = local_to_unix(datetime.combine(self.day0, datetime.min.time()) + timedelta(seconds=secs), self.tz)
        row = self.rows.setdefault(t, {})
        for key, value in values.items():
            row[key] = row.get(key, 0.0) + value if key.startswith("host_net") else value

    def result(self) -> Series:
        if not self.rows:
            raise ImportFault(self.path, None, "no sar -u, -r or -n DEV rows found (is it sar text output?)")
        frame = pd.DataFrame.from_dict(self.rows, orient="index").sort_index()
        frame.index.name = "time"
        s = self.series
        s.frame = frame.reset_index()
        self.wraps.extend(w for c in self.clocks.values() for w in c.wraps)
        s.notes = [*s.notes, f"clock: {self.style}", *self.wraps]
        if self.style == CLOCK_NO_AMPM:
            s.notes.append(NO_AMPM_NOTE)
        s.ignored = sorted(self.ignored)
        return s


def parse(path: Path, opts: ParseOptions) -> Series:
    path = Path(path)
    lines = [raw.strip() for raw in read_import_text(path).splitlines()]
    stamps = [(int(m[1]), m[4]) for m in map(TIME_RE.match, lines) if m]
    reader = _SarReader(path, opts, clock_style(stamps))
    for no, text in enumerate(lines, 1):
        reader.feed(no, text)
    return reader.result()


def _float_ok(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False
