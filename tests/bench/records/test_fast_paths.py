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


def test_the_single_parse_vouches_for_a_file_only_where_every_row_is_whole() -> None:
    """`_parsed_whole` skips the line-by-line count: it may say "whole" only where that count
    would say so too. 3,000 generated files of commas, digits, blank lines, extra and missing
    cells, empty cells, quotes, carriage returns and spaces."""
    import random

    from bench.records.read import _parsed_whole

    rnd = random.Random(39)
    pieces = [b"1", b"2.5", b"", b",", b",,", b'"', b"\r", b" ", b"x", b"nan"]
    vouched = 0
    for _ in range(3000):
        rows = []
        for _ in range(rnd.randint(0, 6)):
            row = [rnd.choice([b"1", b"22", b"3.5"]) for _ in range(3)]
            if rnd.random() < 0.4:
                row[rnd.randrange(3)] = rnd.choice(pieces)
            rows.append(b",".join(row[: rnd.choice([3, 3, 3, 2, 4])]))
        complete = b"\n".join([b"time,a,b", *rows]) + b"\n"
        body_rows = complete.count(b"\n") - 1
        df, whole = _parsed_whole(complete, body_rows, 2)
        if whole:
            vouched += 1
            assert _all_rows_have(complete, len(b"time,a,b") + 1, body_rows, 2), complete
            assert df is not None and len(df) == body_rows
    assert vouched > 300  # the usual file takes the single parse


@pytest.mark.parametrize(
    "raw",
    [
        b"time,a,b\n1,2,3\n4,5,6\n",
        b"time,a,b\n1,2\n3,4,5,6\n",  # one cell short, one over: the file's comma count is right
        b"time,a,b\n1,2,3,9\n4,5\n7,8,9\n",
        b"time,a,b\n1,2,3,\n4,5\n",
        b"time,a,b\n1,2,\n4,5,6\n",  # an empty last cell: the rows are counted, and kept
        b"time,a,b\n\n1,2,3\n \n4,5,6\n",
        b'time,a,b\n1,"2,3"\n4,5,6\n',
        b"time,a,b\r\n1,2,3\r\n4,5,6\r\n",
        b"time,a,b\n1,2,3\n4,5,6",
        b"time,a,b\n",
        b"time\n1\n\n2\n",
    ],
)
def test_a_samples_file_reads_as_its_whole_rows_alone(tmp_path, raw: bytes) -> None:
    """Whichever path reads it, a file gives the frame of its rows that hold the header's
    number of cells (the line-by-line rule), and names how many it dropped."""
    import pandas as pd

    complete = raw[: raw.rfind(b"\n") + 1]
    header, *body = complete.split(b"\n")[:-1]
    kept = [line for line in body if line.count(b",") == header.count(b",") and line.strip()]
    dropped = sum(1 for line in body if line.strip()) - len(kept)
    (tmp_path / "samples-a.csv").write_bytes(raw)
    (tmp_path / "samples-b.csv").write_bytes(b"\n".join([header, *kept]) + b"\n")
    df, problems = read_samples(tmp_path / "samples-a.csv")
    expected, _ = read_samples(tmp_path / "samples-b.csv")
    if expected is None:
        assert df is None
    else:
        pd.testing.assert_frame_equal(df, expected)
    assert any(f"{dropped} row(s) with the wrong number of cells" in p for p in problems) == (dropped > 0)


def _needs_strict_by_regex(data: bytes) -> bool:
    """`needs_strict_parse` spelled as a regular expression (slow: 10x on a 48-hour log)."""
    import re

    if b"NaN" in data or b"Infinity" in data:
        return True
    for match in re.finditer(rb"(?<![0-9])[0-9]{19}|[eE][+-]?[0-9]{3}", data):
        at = match.start()
        while at > 0 and data[at - 1] in b"0123456789.+-eE":
            at -= 1
        while at > 0 and data[at - 1] in b" \t\r\n":
            at -= 1
        if at == 0 or data[at - 1] in b":,[":
            return True
    return False


def test_the_numpy_scan_finds_what_the_regular_expression_finds() -> None:
    import random

    rnd = random.Random(39)
    alphabet = b'0123456789eE+-.,:[]{} "ax\n'
    found = 0
    for _ in range(20000):
        data = bytes(
            rnd.choice(alphabet) if rnd.random() < 0.5 else rnd.choice(b"0123456789") for _ in range(rnd.randint(0, 40))
        )
        found += needs_strict_parse(data)
        assert needs_strict_parse(data) == _needs_strict_by_regex(data), data
    assert 1000 < found < 19000  # both answers are common
