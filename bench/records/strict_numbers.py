"""The record boundary for numbers: JSON and CSV from a job parsed with limits.

A job writes its record; a reader must survive any byte string and must not let an
impossible number through to a report. So JSON is parsed with a size and a nesting
limit (no RecursionError), a NaN, an Infinity, a float that overflows (1e400) or an
integer too long to be a measurement (10**400) becomes a marked text that the schema
then refuses by type; `excluded()` removes every value the schema refused, so a report
shows "unknown", never the value. Times must lie between 1970 and 2100.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_JSON_BYTES = 16 << 20
MAX_DEPTH = 64
MAX_INT_DIGITS = 18
LATEST_TIME = 4_102_444_800.0  # 2100-01-01 UTC: a later Unix time is not a measurement


class NotANumber(str):
    """A JSON number that cannot be a measurement, kept as text so a schema refuses it by type."""


def _float(text: str) -> float | NotANumber:
    value = float(text)
    return value if math.isfinite(value) else NotANumber(f"{text[:24]} (not a finite number)")


def _int(text: str) -> int | NotANumber:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        return NotANumber(f"{text[:24]}... ({len(text)} digits: too large)")
    return int(text)


def _constant(text: str) -> NotANumber:
    return NotANumber(f"{text} (not a finite number)")


def _depth(data: bytes) -> int:
    """Deepest bracket nesting, counted fast (numpy) and roughly: brackets inside strings
    count too, so a record could only be refused for holding many of them, never let through."""
    import numpy as np

    arr = np.frombuffer(data, dtype=np.uint8)
    step = np.isin(arr, (0x5B, 0x7B)).astype(np.int32) - np.isin(arr, (0x5D, 0x7D)).astype(np.int32)
    return int(np.cumsum(step).max()) if len(step) else 0


def loads(data: bytes | str, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    """JSON from a job; ValueError naming why it is refused (size, nesting, syntax)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    if len(raw) > max_bytes:
        raise ValueError(f"{len(raw)} bytes, over the limit of {max_bytes}")
    if raw.count(b"[") + raw.count(b"{") > max_depth and _depth(raw) > max_depth:  # before the recursive parser
        raise ValueError(f"nested deeper than {max_depth} levels")
    try:
        return json.loads(raw, parse_float=_float, parse_int=_int, parse_constant=_constant)
    except RecursionError:
        raise ValueError(f"nested deeper than {max_depth} levels") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 ({exc.reason})") from None


_NUMBER_CHARS = frozenset(b"0123456789.+-eE")


def needs_strict_parse(data: bytes) -> bool:
    """Whether json's own parser could read `data` differently from `loads`' hooks: a NaN or
    an Infinity, an exponent of three digits (1e400 overflows) or a run of 19 digits (an
    integer too long) in a number. Found with numpy over the bytes; a candidate counts only
    where it is a number (after `:`, `,` or `[`), not text such as a sha256 in hex."""
    if b"NaN" in data or b"Infinity" in data:
        return True
    import numpy as np

    arr = np.frombuffer(data, dtype=np.uint8)
    n = arr.size
    if n < 4:
        return False
    digit = (arr - 0x30) < 10  # uint8 wraps below "0": one test per byte
    # runs of 19 digits or more: where digit-ness changes, the runs between (first byte, length)
    bounds = np.concatenate(([0], np.flatnonzero(digit[1:] != digit[:-1]) + 1, [n]))
    first = bounds[:-1]
    candidates = first[digit[first] & (np.diff(bounds) >= 19)].tolist()
    # an e or E followed by three digits, or by a sign and three digits (1e400, 1E+400)
    e = np.flatnonzero((arr[:-3] | 0x20) == ord("e"))
    e = e[digit[e + 2] & digit[e + 3]]
    three = digit[e + 1]
    candidates += e[three].tolist()
    e = e[~three & (e + 4 < n)]
    candidates += e[((arr[e + 1] == ord("+")) | (arr[e + 1] == ord("-"))) & digit[e + 4]].tolist()
    for at in candidates:
        while at > 0 and data[at - 1] in _NUMBER_CHARS:
            at -= 1
        while at > 0 and data[at - 1] in b" \t\r\n":
            at -= 1
        if at == 0 or data[at - 1] in b":,[":
            return True
    return False


def finite(value: Any, low: float | None = None, high: float | None = None) -> float | None:
    """`value` as a float when it is a real number within [low, high]; else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    if not math.isfinite(number) or (low is not None and number < low) or (high is not None and number > high):
        return None
    return number


def excluded(record: dict[str, Any], paths: list[tuple[Any, ...]]) -> None:
    """Remove the value at each path (a schema error's absolute_path) from `record`, in place."""
    for path in sorted(paths, key=len, reverse=True):
        if not path:
            continue
        node: Any = record
        for key in path[:-1]:
            try:
                node = node[key]
            except (KeyError, IndexError, TypeError):
                node = None
                break
        last = path[-1]
        if isinstance(node, dict) and last in node:
            del node[last]
        elif isinstance(node, list) and isinstance(last, int) and 0 <= last < len(node):
            node[last] = None
