"""Times of day into a timeline: midnight wraps and 12-hour clocks without AM/PM.

`sar` prints only the time of day (`12:00:06 AM`, or `00:00:06` with a 24-hour
locale); the date is in the header. A run that crosses midnight goes back from
11:59 PM to 12:00 AM, and a file whose AM/PM column was lost (cut by a script, a
spreadsheet) goes back by 12 h every noon and midnight. `TimeOfDay` turns such a
sequence into seconds since the header's midnight, stepping a day (or half a day
when the clock is known to be 12-hour without AM/PM) each time it goes back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

TIME_RE = re.compile(r"^(\d{1,2}):(\d{2}):(\d{2})(?:\s+(AM|PM))?(?=\s|$)")
HALF_DAY = 12 * 3600
DAY = 24 * 3600
# A clock that goes back by more than this is a wrap (midnight, or noon without AM/PM);
# less is a clock adjustment (NTP) and is kept as printed.
WRAP_MIN_S = 3 * 3600

CLOCK_24H = "24-hour"
CLOCK_AMPM = "12-hour with AM/PM"
CLOCK_NO_AMPM = "12-hour without AM/PM"
NO_AMPM_NOTE = (
    "AM/PM missing: the first sample is taken to be in the half of the day its hour "
    "reads as; later samples follow it in order"
)


def seconds_of_day(hour: int, minute: int, second: int, ampm: str | None) -> int:
    if ampm is not None:
        hour = hour % 12 + (12 if ampm == "PM" else 0)
    return hour * 3600 + minute * 60 + second


def clock_style(stamps: list[tuple[int, str | None]]) -> str:
    """From (hour, AM/PM or None) of every line: which clock the file was printed with.

    Any AM/PM means a 12-hour clock; an hour above 12 means 24-hour; otherwise the hours
    stay within 1..12 with no marker, which is a 12-hour clock that lost AM/PM (a 24-hour
    clock never covers more than 12 h without an hour of 13 or more).
    """
    if any(ampm for _, ampm in stamps):
        return CLOCK_AMPM
    if any(hour > 12 or hour == 0 for hour, _ in stamps):
        return CLOCK_24H
    return CLOCK_NO_AMPM


@dataclass
class TimeOfDay:
    """Unwraps one sequence of times of day (one sar activity: -u, -r, -n DEV)."""

    style: str
    offset: int = 0
    last: int | None = None
    wraps: list[str] = field(default_factory=list)

    def at(self, raw: int, where: str) -> int:
        """Seconds since the first day's midnight of a time of day `raw` (0..86399)."""
        if self.last is not None and self.last - raw > WRAP_MIN_S:
            step = HALF_DAY if self.style == CLOCK_NO_AMPM else DAY
            self.offset += step
            self.wraps.append(
                f"{where}: clock went back {(self.last - raw) / 3600:.1f} h; "
                f"read as {'half a day later' if step == HALF_DAY else 'the next day'}"
            )
        self.last = raw
        return raw + self.offset
