"""records/pack.py: record files stored compressed give back the exact bytes collected."""

from __future__ import annotations

import lzma
from pathlib import Path

import pytest

from bench.records.pack import COLUMNS_SUFFIX, RAW_LIMIT, XZ_SUFFIX, decode_columns, encode_columns, pack, unpack
from bench.records.synthetic import RunSpec, write_run


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
