"""gitops/pack.py: record files stored compressed give back the exact bytes collected."""

from __future__ import annotations

import lzma
from pathlib import Path

import pytest

from bench.gitops.pack import COLUMNS_SUFFIX, RAW_LIMIT, XZ_SUFFIX, decode_columns, encode_columns, pack, unpack
from tests.synthetic_records import RunSpec, write_run


def test_a_samples_file_is_stored_by_columns_and_comes_back_byte_for_byte(tmp_path: Path):
    run = write_run(tmp_path, RunSpec(env="e", run_id="r", duration_s=3600, gpus=2))
    samples = next(run.glob("samples-*.csv"))
    raw = samples.read_bytes()
    stored, data = pack(samples.name, raw)
    assert stored == samples.name + COLUMNS_SUFFIX
    assert len(data) < len(lzma.compress(raw, preset=6))  # better than xz of the text
    assert unpack(samples.name, stored, data) == raw


@pytest.mark.parametrize(
    "text",
    [
        b"time,a,b\n1.0,-0.5,0.05\n2.0,-0,00.5\n",  # "-0" and "00.5" do not print back from integers
        b"time,a\n1.0,1e+09\n2.0,1.00004e+09\n",  # exponents: that column is kept as text
        b"time,a\n1.0,2\n2.0,3",  # no final newline
        b"time,a\n1.0,2\n2.0,3,4\n",  # ragged: not a table, so no columnar form
        b'time,a\n1.0,"x,y"\n',  # quoted cell
        b"time,a\r\n1.0,2\r\n",  # CRLF
        b"time,a,b\n1.0,,3\n2.0,x\x00,+4\n",  # empty cells, a NUL, a plus sign
        b"time,a\n1.0,12345678901234567890123\n",  # past int64
        b"time,a\n1.0,0.0000000000000000000001\n",  # more decimals than int64 holds
        "time,a\n1.0,\u00e9\n".encode(),  # not ASCII
    ],
)
def test_odd_csv_never_loses_a_byte(text: bytes):
    packed = encode_columns(text)
    if packed is not None:
        assert decode_columns(packed) == text
    name = "samples-h.csv"
    stored, data = pack(name, text * (RAW_LIMIT // len(text) + 1))
    assert unpack(name, stored, data) == text * (RAW_LIMIT // len(text) + 1)


def test_large_other_files_are_xz_and_small_ones_raw():
    big = b'{"event": "train"}\n' * (RAW_LIMIT // 10)
    assert pack("train.jsonl", big)[0] == "train.jsonl" + XZ_SUFFIX
    assert pack("run.json", b"{}") == ("run.json", b"{}")
    with pytest.raises(ValueError):
        unpack("run.json", "run.json.zip", b"")


def _format_1(rows: list[tuple[int, int]], header: str = "time") -> bytes:
    """A packed samples file as format 1 wrote it (one decimal column: i4 deltas, shuffled)."""
    import json

    import numpy as np

    mant = np.array([m for m, _ in rows], dtype=np.int64)
    deltas = np.diff(mant, prepend=0).astype("<i4")
    blocks = [deltas.view(np.uint8).reshape(-1, 4).T.tobytes(), bytes(d for _, d in rows)]
    meta = {
        "format": "atlas-columns/1",
        "rows": len(rows),
        "header": header,
        "trailing_newline": True,
        "columns": [{"kind": "decimal", "dtype": "i4", "sizes": [len(b) for b in blocks]}],
    }
    head = json.dumps(meta).encode()
    return lzma.compress(len(head).to_bytes(8, "little") + head + b"".join(blocks))


def test_a_format_1_file_on_the_results_branch_still_restores():
    packed = _format_1([(1234567, 1), (-5, 2), (0, 0), (123, 3)])
    assert decode_columns(packed) == b"time\n123456.7\n-0.05\n0\n0.123\n"


def test_random_decimals_come_back_byte_for_byte():
    """Cells of every sign, width and number of decimals, with some a column can't hold."""
    import numpy as np

    rng = np.random.default_rng(7)
    cells = []
    for _ in range(3000):
        digits = str(int(rng.integers(0, 10 ** int(rng.integers(1, 18)))))
        decimals = int(rng.integers(0, min(len(digits), 9) + 1))
        text = digits if decimals == 0 else (digits[:-decimals] or "0") + "." + digits[-decimals:].rjust(decimals, "0")
        cells.append(("-" if rng.random() < 0.3 and text.strip("0.") else "") + text)
    text = ("t,a\n" + "".join(f"{i},{c}\n" for i, c in enumerate(cells))).encode()
    packed = encode_columns(text)
    assert packed is not None and decode_columns(packed) == text
    kept_as_text = text + b"1,1.\n"  # "1." does not print back from an integer: column a is text
    assert decode_columns(encode_columns(kept_as_text)) == kept_as_text
