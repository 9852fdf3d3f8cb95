"""Lossless compression of run-record files for the `results` branch.

A samples CSV of 48 h at 1 Hz on 4 GPUs is about 48 MB of text; xz alone keeps 7 MB of
it, because most of the bytes are decimal digits interleaved column by column. Stored
column by column, each cell of a numeric column as an integer mantissa plus its number
of decimals (delta-coded, bytes shuffled so like bytes sit together, as Blosc does:
https://www.blosc.org/posts/new-filters/), the same file takes under 5 MB. Decoding
gives back the exact bytes `bench collect` placed; `pack` checks that before it picks
the columnar form, and anything that does not round-trip (quoted cells, ragged rows,
`1e+09`) is kept as text, column by column, or the file as plain xz.
"""

from __future__ import annotations

import functools
import json
import lzma

import numpy as np

COLUMNS_SUFFIX = ".cols.xz"  # samples CSV, column by column
XZ_SUFFIX = ".xz"  # any other large file
RAW_LIMIT = 256 << 10  # smaller files are kept as they are (run.json stays readable in a browser)
_FORMAT = "atlas-columns/1"
_PRESET = 6


def _shuffle(arr: np.ndarray) -> bytes:
    """Byte k of every value together, then byte k+1 (little-endian)."""
    return arr.astype(arr.dtype.newbyteorder("<")).view(np.uint8).reshape(-1, arr.itemsize).T.tobytes()


def _unshuffle(data: bytes, dtype: str, n: int) -> np.ndarray:
    dt = np.dtype(dtype).newbyteorder("<")
    return np.frombuffer(data, dtype=np.uint8).reshape(dt.itemsize, n).T.copy().view(dt).reshape(n)


def _decimals(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(mantissas, decimals) of a column of cells read as decimals (checked by the caller)."""
    dot = np.char.find(cells, ".")
    dec = np.where(dot >= 0, np.char.str_len(cells) - dot - 1, 0)
    if dec.size and (dec.max() > 18 or dec.min() < 0):
        return None
    try:
        mant = np.char.replace(cells, ".", "").astype(np.int64)
    except (ValueError, OverflowError):
        return None
    return mant, dec


def _format(mant: np.ndarray, dec: np.ndarray) -> np.ndarray:
    """The cells back from mantissas and decimals: `-12.50` is (-1250, 2)."""
    absm, out = np.abs(mant), np.empty(mant.size, dtype=object)
    for d in np.unique(dec):
        sel = dec == d
        a = absm[sel]
        if d == 0:
            text = a.astype(str)
        else:
            p = 10 ** int(d)
            text = np.char.add(np.char.add((a // p).astype(str), "."), np.char.zfill((a % p).astype(str), int(d)))
        out[sel] = np.where(mant[sel] < 0, np.char.add("-", text), text)
    return out.astype(str) if out.size else np.array([], dtype=str)


def _encode_column(cells: np.ndarray) -> tuple[dict, list[bytes]]:
    parsed = _decimals(cells)
    if parsed is not None:
        mant, dec = parsed
        if np.array_equal(_format(mant, dec), cells):  # prints back exactly, else kept as text
            delta = np.diff(mant, prepend=0)
            dtype = "i4" if np.abs(delta).max(initial=0) < 2**31 else "i8"
            return {"kind": "decimal", "dtype": dtype}, [
                _shuffle(delta.astype(dtype)),
                dec.astype(np.uint8).tobytes(),
            ]
    return {"kind": "text"}, ["\n".join(cells.tolist()).encode("ascii")]


def _columns(raw: bytes) -> tuple[str, list[np.ndarray], bool] | None:
    """(header line, columns of cells, trailing newline) for a plain rectangular ASCII CSV."""
    if b'"' in raw or b"\r" in raw or not raw.isascii():
        return None
    text = raw.decode("ascii")
    trailing = text.endswith("\n")
    lines = (text[:-1] if trailing else text).split("\n")
    if len(lines) < 2:
        return None
    header, rows = lines[0], [line.split(",") for line in lines[1:]]
    width = header.count(",") + 1
    if any(len(r) != width for r in rows):
        return None
    grid = np.array(rows, dtype=str)
    if grid.dtype.itemsize > 4 * 40:  # a cell over 40 characters is no sample value
        return None
    return header, [grid[:, j] for j in range(width)], trailing


def encode_columns(raw: bytes) -> bytes | None:
    """The columnar xz form of a CSV, or None when it would not give back `raw` exactly."""
    parts = _columns(raw)
    if parts is None:
        return None
    header, columns, trailing = parts
    meta: dict = {"format": _FORMAT, "rows": int(columns[0].size), "header": header, "trailing_newline": trailing}
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


MAX_UNPACKED_BYTES = 4 << 30  # a samples CSV of 48 h x 1 Hz x 8 GPUs is ~100 MB; more is a decompression bomb


def decompress(data: bytes, limit: int = MAX_UNPACKED_BYTES) -> bytes:
    """xz data back, refused (ValueError naming the limit) when it would unpack past `limit` bytes."""
    unpacker = lzma.LZMADecompressor()
    out = unpacker.decompress(data, max_length=limit)
    if not unpacker.eof and not unpacker.needs_input:
        raise ValueError(f"unpacks to more than {limit} bytes (the limit of a stored record file)")
    return out


def decode_columns(packed: bytes) -> bytes:
    """The CSV back from its columnar form; ValueError naming why when the header breaks
    packed_samples.schema.json (bench.records.surfaces) or the blocks do not fit it."""
    from bench.records import strict_numbers
    from bench.records.surfaces import problems

    data = decompress(packed)
    size = int.from_bytes(data[:8], "little")
    if not 0 < size <= len(data) - 8:
        raise ValueError(f"header length {size} does not fit the {len(data)} bytes")
    meta = strict_numbers.loads(data[8 : 8 + size])
    refused = problems("packed_samples", meta, "packed samples header")
    if refused:
        raise ValueError(refused[0][1])
    if sum(sum(d["sizes"]) for d in meta["columns"]) != len(data) - 8 - size:
        raise ValueError("packed samples blocks do not add up to the header's sizes")
    pos, n, columns = 8 + size, int(meta["rows"]), []  # the schema's integers may be written 50.0
    for desc in meta["columns"]:
        blocks = []
        for length in map(int, desc["sizes"]):
            blocks.append(data[pos : pos + length])
            pos += length
        if desc["kind"] == "decimal":
            mant = np.cumsum(_unshuffle(blocks[0], desc["dtype"], n).astype(np.int64))
            columns.append(_format(mant, np.frombuffer(blocks[1], dtype=np.uint8).astype(np.int64)))
        else:
            columns.append(np.array(blocks[0].decode("ascii").split("\n"), dtype=str))
    rows = functools.reduce(lambda a, b: np.char.add(np.char.add(a, ","), b), columns)
    out = "\n".join([meta["header"], *rows.tolist()])
    return (out + "\n" if meta["trailing_newline"] else out).encode("ascii")


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
        return decompress(data)
    raise ValueError(f"{stored} is not a stored form of {name}")
