"""Lossless compression of run-record files for the `results` branch.

A samples CSV of 48 h at 1 Hz on 4 GPUs is about 48 MB of text; xz alone keeps 7 MB of
it, because most of the bytes are decimal digits interleaved column by column. Stored
column by column, each cell of a numeric column as an integer mantissa plus its number
of decimals (delta-coded, bytes shuffled so like bytes sit together, as Blosc does:
https://www.blosc.org/posts/new-filters/), the same file takes under 5 MB. Decoding
gives back the exact bytes `bench collect` placed; `pack` checks that before it picks
the columnar form, and anything that does not round-trip (quoted cells, ragged rows,
`1e+09`) falls back to plain xz, cell by cell column or file.
"""

from __future__ import annotations

import json
import lzma
import re

import numpy as np

COLUMNS_SUFFIX = ".cols.xz"  # samples CSV, column by column
XZ_SUFFIX = ".xz"  # any other large file
RAW_LIMIT = 256 << 10  # smaller files are kept as they are (run.json stays readable in a browser)
_FORMAT = "atlas-columns/1"
_DECIMAL = re.compile(rb"-?[0-9]+(\.[0-9]+)?")
_PRESET = 6


def _shuffle(arr: np.ndarray) -> bytes:
    """Byte k of every value together, then byte k+1 (little-endian)."""
    return arr.astype(arr.dtype.newbyteorder("<")).view(np.uint8).reshape(-1, arr.itemsize).T.tobytes()


def _unshuffle(data: bytes, dtype: str, n: int) -> np.ndarray:
    dt = np.dtype(dtype).newbyteorder("<")
    return np.frombuffer(data, dtype=np.uint8).reshape(dt.itemsize, n).T.copy().view(dt).reshape(n)


def _decimal_cells(cells: list[bytes]) -> tuple[np.ndarray, np.ndarray] | None:
    """(mantissas, decimals) when every cell is a plain decimal that prints back the same."""
    if not all(_DECIMAL.fullmatch(c) for c in cells):
        return None
    decimals = np.fromiter((len(c) - c.index(b".") - 1 if b"." in c else 0 for c in cells), dtype=np.int64)
    try:
        mant = np.array([int(c.replace(b".", b"")) for c in cells], dtype=np.int64)
    except OverflowError:
        return None
    return mant, decimals


def _format_cell(m: int, d: int) -> bytes:
    digits = str(abs(m)).rjust(d + 1, "0")
    text = f"{digits[:-d]}.{digits[-d:]}" if d else digits
    return (b"-" if m < 0 else b"") + text.encode()


def _encode_column(cells: list[bytes]) -> tuple[dict, list[bytes]]:
    parsed = _decimal_cells(cells)
    if parsed is not None:
        mant, dec = parsed
        if [_format_cell(int(m), int(d)) for m, d in zip(mant, dec)] == cells:
            delta = np.diff(mant, prepend=0)
            dtype = "i4" if np.abs(delta).max(initial=0) < 2**31 else "i8"
            return {"kind": "decimal", "dtype": dtype}, [
                _shuffle(delta.astype(dtype)),
                dec.astype(np.uint8).tobytes(),
            ]
    return {"kind": "text"}, [b"\n".join(cells)]


def _columns(raw: bytes) -> tuple[bytes, list[list[bytes]], bool] | None:
    """(header line, columns of cells, trailing newline) for a plain rectangular CSV."""
    if b'"' in raw or b"\r" in raw:
        return None
    trailing = raw.endswith(b"\n")
    lines = (raw[:-1] if trailing else raw).split(b"\n")
    if len(lines) < 2:
        return None
    header, rows = lines[0], [line.split(b",") for line in lines[1:]]
    width = header.count(b",") + 1
    if any(len(r) != width for r in rows) or any(len(c) > 40 for r in rows for c in r):
        return None
    return header, [list(col) for col in zip(*rows)], trailing


def encode_columns(raw: bytes) -> bytes | None:
    """The columnar xz form of a CSV, or None when it would not give back `raw` exactly."""
    parts = _columns(raw)
    if parts is None:
        return None
    header, columns, trailing = parts
    meta: dict = {"format": _FORMAT, "rows": len(columns[0]), "header": header.decode("utf-8", "surrogateescape")}
    meta["trailing_newline"] = trailing
    blocks: list[bytes] = []
    meta["columns"] = []
    for cells in columns:
        desc, data = _encode_column(cells)
        desc["sizes"] = [len(b) for b in data]
        meta["columns"].append(desc)
        blocks += data
    head = json.dumps(meta, sort_keys=True).encode()
    packed = lzma.compress(len(head).to_bytes(8, "little") + head + b"".join(blocks), preset=_PRESET)
    return packed if decode_columns(packed) == raw else None


def decode_columns(packed: bytes) -> bytes:
    data = lzma.decompress(packed)
    size = int.from_bytes(data[:8], "little")
    meta = json.loads(data[8 : 8 + size])
    if meta.get("format") != _FORMAT:
        raise ValueError(f"not an {_FORMAT} file")
    pos, n, columns = 8 + size, meta["rows"], []
    for desc in meta["columns"]:
        blocks = []
        for length in desc["sizes"]:
            blocks.append(data[pos : pos + length])
            pos += length
        if desc["kind"] == "decimal":
            mant = np.cumsum(_unshuffle(blocks[0], desc["dtype"], n).astype(np.int64))
            dec = np.frombuffer(blocks[1], dtype=np.uint8)
            columns.append([_format_cell(int(m), int(d)) for m, d in zip(mant, dec)])
        else:
            columns.append(blocks[0].split(b"\n") if n else [])
    rows = [b",".join(cells) for cells in zip(*columns)]
    out = b"\n".join([meta["header"].encode("utf-8", "surrogateescape"), *rows])
    return out + b"\n" if meta["trailing_newline"] else out


def is_samples(name: str) -> bool:
    return name.startswith("samples-") and name.endswith(".csv")


def pack(name: str, raw: bytes) -> tuple[str, bytes]:
    """(stored name, stored bytes) of one record file."""
    if is_samples(name):  # samples are always stored compressed
        packed = encode_columns(raw)
        if packed is not None:
            return name + COLUMNS_SUFFIX, packed
    if len(raw) >= RAW_LIMIT:
        return name + XZ_SUFFIX, lzma.compress(raw, preset=_PRESET)
    return name, raw


def unpack(name: str, stored: str, data: bytes) -> bytes:
    """The bytes of record file `name` back from what `pack` stored under `stored`."""
    if stored == name:
        return data
    if stored == name + COLUMNS_SUFFIX:
        return decode_columns(data)
    if stored == name + XZ_SUFFIX:
        return lzma.decompress(data)
    raise ValueError(f"{stored} is not a stored form of {name}")
