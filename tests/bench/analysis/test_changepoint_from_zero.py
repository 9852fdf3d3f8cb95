"""Issue 31: a metric stepping from 0 to 5 is a change point (no ratio exists from 0), and
the terminal never receives a control character from data."""

from __future__ import annotations

import io
import math

from bench.analysis.changepoints import change_points
from bench.analysis.history import CommitPoint
from bench.terminal import EscapingStream, safe_text


def test_a_step_from_zero_to_five_is_one_change_point_shown_from_0() -> None:
    points = [CommitPoint(f"{i:040x}", float(i), [0.0 if i < 4 else 5.0] * 3) for i in range(8)]
    (cp,) = change_points(("moc", "smoke", "lost_iterations"), points)
    assert cp.index == 4 and cp.before == 0.0 and cp.after == 5.0
    assert math.isinf(cp.change) and cp.change_text == "from 0"


def test_a_flat_zero_history_has_none() -> None:
    points = [CommitPoint(f"{i:040x}", float(i), [0.0] * 3) for i in range(8)]
    assert change_points(("moc", "smoke", "lost_iterations"), points) == []


def test_control_characters_are_written_visibly() -> None:
    shown = safe_text("torch 2.4\x1b]0;owned\x07\x1b[2J\r\x9b\u202e")
    assert shown == "torch 2.4\\x1b]0;owned\\x07\\x1b[2J\\x0d\\x9b\\u202e"
    assert safe_text("a\tb\nc") == "a\tb\nc"
    out = io.StringIO()
    stream = EscapingStream(out)
    print("env\x1b[31m", file=stream)
    assert out.getvalue() == "env\\x1b[31m\n" and stream.control_stream is out
