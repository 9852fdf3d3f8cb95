"""The fast paths of the record readers must read exactly what the careful paths read.

A 48-hour record is read with json's C parser and numpy's row count; a damaged one goes
line by line. These tests pin the switch between them: a number the strict hooks would
refuse always takes the careful path, and text that merely looks like such a number
(a sha256 in hex) does not cost the fast one.
"""

from __future__ import annotations

import pytest

from bench.records.read import _all_rows_have, read_samples
from bench.records.strict_numbers import needs_strict_parse
from bench.records.trainlog import read_train_log

STRICT = [b"1e400", b"-1E+308", b"NaN", b"-Infinity", b"12345678901234567890", b"[1, 2e308]", b" 1.5e-400"]
PLAIN = [b'"ab1e400"', b'"1234567890123456789012"', b"1.5e30", b"123456789012345678", b'"e123"', b'"5e148e93"']


@pytest.mark.parametrize("value", STRICT)
def test_a_number_the_hooks_refuse_takes_the_strict_parse(value: bytes) -> None:
    assert needs_strict_parse(b'[{"event": "train", "time": 1.0, "x": ' + value + b"}]")


@pytest.mark.parametrize("value", PLAIN)
def test_text_and_ordinary_numbers_keep_the_fast_parse(value: bytes) -> None:
    assert not needs_strict_parse(b'[{"event": "train", "time": 1.0, "x": ' + value + b"}]")


def test_refused_numbers_are_excluded_on_either_path(tmp_path) -> None:
    good = b'{"event": "train", "time": 2.0, "images_per_s": 5.0, "iteration": 1}\n'
    bad = b'{"event": "train", "time": 3.0, "images_per_s": 1e400, "iteration": 12345678901234567890}\n'
    plain, strict = tmp_path / "plain.jsonl", tmp_path / "strict.jsonl"
    plain.write_bytes(good * 3)
    strict.write_bytes(good * 2 + bad)
    assert read_train_log(plain).problems == []
    log = read_train_log(strict)
    assert "images_per_s" not in log.events[-1] and "iteration" not in log.events[-1]
    assert any("2 value(s) not finite" in p for p in log.problems)


def _rows_ok_by_line(raw: bytes) -> bool:
    lines = raw.split(b"\n")
    cells = lines[0].count(b",")
    return all(line.count(b",") == cells and line.strip() for line in lines[1:-1])


@pytest.mark.parametrize(
    "raw",
    [
        b"time,a,b\n1,2,3\n4,5,6\n",
        b"time,a,b\n1,2,3\n\n4,5,6\n",
        b"time,a,b\n1,2,3\n4,5\n",
        b"time,a,b\n1,2\n3,4,5,6\n",
        b"time,a,b\n1,2,3\n4,5,6,7,8",
        b"time,a,b\n",
        b"time,a,b\n1,,3\n",
    ],
)
def test_numpy_row_count_agrees_with_the_line_by_line_count(raw: bytes) -> None:
    complete = raw[: raw.rfind(b"\n") + 1]
    header = raw.split(b"\n")[0]
    rows = max(complete.count(b"\n") - 1, 0)
    assert _all_rows_have(complete, len(header) + 1, rows, header.count(b",")) == _rows_ok_by_line(complete)


def test_a_shifted_row_is_dropped_and_named(tmp_path) -> None:
    path = tmp_path / "samples-host.csv"
    path.write_bytes(b"time,cpu\n1.0,5\n2.0,6,7\n3.0,7\n4.0,8")
    df, problems = read_samples(path)
    assert df["time"].tolist() == [1.0, 3.0]
    assert any("wrong number of cells" in p for p in problems)
    assert any("last row is incomplete" in p for p in problems)
