"""The time column of a mapped CSV: any `strptime` format, Unix seconds or ISO 8601.

A spreadsheet's sheet often keeps only the time of day (`13:05:00`, or `01:05:00` from
a 12-hour clock whose AM/PM was cut). Such a column is placed on `--date` (or the map's
`date:`) in `--timezone`, and unwrapped as sar's times are (bench.importers.clock):
a clock that goes back more than 3 h is the next day, or the next half day when the
clock is a 12-hour one without AM/PM. Format directives:
https://docs.python.org/3/library/datetime.html#strftime-and-strptime-format-codes
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from bench.importers.clock import CLOCK_AMPM, CLOCK_NO_AMPM, NO_AMPM_NOTE, TimeOfDay, clock_style, seconds_of_day
from bench.importers.series import ImportFault, ParseOptions, local_to_unix, zone

# A strptime format that names the day; without one strptime dates every row 1900-01-01.
DATE_DIRECTIVES = ("%d", "%j", "%c", "%x", "%G")
NAMED_FORMATS = ("unix", "unix_ms", "iso")


def map_fault(opts: ParseOptions, key: str, problem: str) -> ImportFault:
    """A mistake in the map, named by its key (`files[2].time`) and the map's file."""
    return ImportFault(opts.map_path or "MAP.yaml", None, f"{opts.map_key}{key}: {problem}")


def iso_time(text: str, tz: ZoneInfo) -> float:
    """ISO 8601; a time without an offset is local time in `tz`."""
    moment = datetime.fromisoformat(text)
    return moment.timestamp() if moment.tzinfo else local_to_unix(moment, tz)


@dataclass(frozen=True)
class TimeColumn:
    """How to read one file's time column into Unix seconds."""

    column: str
    fmt: str
    tz: ZoneInfo
    day0: date | None  # the first row's date, for a format with only the time of day

    def times(self, cells: list[tuple[int, str]], path: Path) -> tuple[list[float], list[str]]:
        """(Unix seconds of each (line, text) cell, notes on how the clock was read)."""
        if self.day0 is not None:
            return self._times_of_day(cells, path)
        out = []
        for no, text in cells:
            try:
                out.append(self._absolute(text))
            except ValueError:
                raise self._mismatch(path, no, text) from None
        return out, []

    def _absolute(self, text: str) -> float:
        if self.fmt == "unix":
            return float(text)
        if self.fmt == "unix_ms":
            return float(text) / 1000.0
        if self.fmt == "iso":
            return iso_time(text, self.tz)
        return local_to_unix(datetime.strptime(text, self.fmt), self.tz)

    def _times_of_day(self, cells: list[tuple[int, str]], path: Path) -> tuple[list[float], list[str]]:
        parsed = []
        for no, text in cells:
            try:
                parsed.append((no, datetime.strptime(text, self.fmt)))
            except ValueError:
                raise self._mismatch(path, no, text) from None
        if "%p" in self.fmt:
            style = CLOCK_AMPM  # strptime already gave the 24-hour hour
        elif "%I" in self.fmt:
            style = CLOCK_NO_AMPM  # strptime reads 12:MM as 00:MM, so noon and midnight are wraps
        else:
            style = clock_style([(moment.hour, None) for _, moment in parsed])
        clock = TimeOfDay(style)
        midnight = datetime.combine(self.day0, datetime.min.time())
        out = []
        for no, moment in parsed:
            secs = clock.at(seconds_of_day(moment.hour, moment.minute, moment.second, None), f"line {no}")
            out.append(local_to_unix(midnight + timedelta(seconds=secs, microseconds=moment.microsecond), self.tz))
        notes = [f"clock: {style}, from {self.day0.isoformat()}", *clock.wraps]
        return out, notes + ([NO_AMPM_NOTE] if style == CLOCK_NO_AMPM else [])

    def _mismatch(self, path: Path, no: int, text: str) -> ImportFault:
        return ImportFault(
            path, no, f"time {text!r} in column {self.column!r} does not match the map's time format {self.fmt!r}"
        )


def time_column(mapping: dict[str, Any], opts: ParseOptions) -> TimeColumn | None:
    """The file's time column from the map's `time:`, or None when the map gives none."""
    spec = mapping.get("time")
    if spec is None:
        return None
    if not isinstance(spec, dict) or not isinstance(spec.get("column"), str):
        raise map_fault(opts, "time", "needs column: <name> and format: <strptime format | unix | unix_ms | iso>")
    fmt = str(spec.get("format", "iso"))
    tz = zone(opts.timezone)
    if fmt in NAMED_FORMATS or any(d in fmt for d in DATE_DIRECTIVES):
        return TimeColumn(spec["column"], fmt, tz, None)
    day = opts.date or mapping.get("date")
    if day is None:
        raise map_fault(
            opts,
            "time",
            f"format {fmt!r} of column {spec['column']!r} has a time of day but no date: pass --date YYYY-MM-DD "
            "(the first row's date) or give date: YYYY-MM-DD in the map",
        )
    try:
        day0 = date.fromisoformat(str(day))
    except ValueError:
        raise map_fault(opts, "date", f"{day!r} is not a date: give YYYY-MM-DD") from None
    return TimeColumn(spec["column"], fmt, tz, day0)
