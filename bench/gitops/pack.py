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

import json
import lzma

import numpy as np

from bench.gitops import decimal_cells

COLUMNS_SUFFIX = ".cols.xz"  # samples CSV, column by column
XZ_SUFFIX = ".xz"  # any other large file
RAW_LIMIT = 256 << 10  # smaller files are kept as they are (run.json stays readable in a browser)
_FORMAT = "atlas-columns/2"  # 1: deltas as i4/i8, kind "decimal" (still read)
# The columnar samples: xz preset 3's fast match finder with preset 6's 8 MiB dictionary. On the
# 48 h, 4-GPU record (benchmarks/history_scale.py) it keeps 4.48 MB in ~2.3 s of CPU where preset 6
# keeps 4.36 MB in ~5 s; preset 4 (a 4 MiB dictionary) keeps 4.60 MB, its text columns reaching
# too far back for the smaller window.
_FILTERS = [{"id": lzma.FILTER_LZMA2, "preset": 3, "dict_size": 8 << 20}]
# Other large files (a 48 h train.jsonl: 6.4 MB): preset 1 keeps 0.41 MB in ~0.3 s of CPU where
# preset 3 keeps 0.39 MB in ~1.3 s.
_TEXT_PRESET = 1


def _shuffle(arr: np.ndarray) -> bytes:
    """Byte k of every value together, then byte k+1 (little-endian)."""
    return arr.astype(arr.dtype.newbyteorder("<")).view(np.uint8).reshape(-1, arr.itemsize).T.tobytes()


def _unshuffle(data: bytes, dtype: str, n: int) -> np.ndarray:
    dt = np.dtype(dtype).newbyteorder("<")
    return np.frombuffer(data, dtype=np.uint8).reshape(dt.itemsize, n).T.copy().view(dt).reshape(n)


def _narrow(values: np.ndarray) -> np.ndarray:
    """Deltas zigzag-coded (0, -1, 1, -2 ... as 0, 1, 2, 3 ...) in the fewest bytes: a
    small negative step is then a small number, not a run of 0xFF bytes, and a column
    that moves by little keeps one or two byte planes instead of eight."""
    zigzag = ((values << 1) ^ (values >> 63)).view(np.uint64)
    top = int(zigzag.max(initial=0))
    dtype = next(d for d in ("u1", "u2", "u4", "u8") if top < 1 << (8 * np.dtype(d).itemsize))
    return zigzag.astype(dtype)


def _unzigzag(values: np.ndarray) -> np.ndarray:
    z = values.astype(np.uint64)
    return (z >> np.uint64(1)).view(np.int64) ^ -(z & np.uint64(1)).view(np.int64)


def encode_columns(raw: bytes) -> bytes | None:
    """The columnar xz form of a CSV, or None when it would not give back `raw` exactly."""
    g = decimal_cells.grid(raw)
    if g is None:
        return None
    meta: dict = {"format": _FORMAT, "rows": g.rows, "header": g.header.decode("ascii")}
    meta["trailing_newline"], meta["columns"] = g.trailing_newline, []
    blocks: list[bytes] = []
    for j in range(g.width):
        parsed = decimal_cells.parse_column(g, j)
        if parsed is None:
            desc, data = {"kind": "text"}, [g.text(j).joined()]
        else:
            deltas = _narrow(np.diff(parsed[0], prepend=0))
            desc, data = {"kind": "zigzag", "dtype": deltas.dtype.str[1:]}, [_shuffle(deltas), parsed[1].tobytes()]
        desc["sizes"] = [len(b) for b in data]
        meta["columns"].append(desc)
        blocks += data
    head = json.dumps(meta, sort_keys=True).encode()
    packed = lzma.compress(len(head).to_bytes(8, "little") + head + b"".join(blocks), filters=_FILTERS)
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
        if desc["kind"] == "text":
            cells = decimal_cells.TextColumn.split(blocks[0])
            if cells.starts.size != n:
                raise ValueError(f"a text column holds {cells.starts.size} cells, not the header's {n} rows")
            columns.append(cells)
            continue
        if len(blocks[0]) != n * np.dtype(desc["dtype"]).itemsize or len(blocks[1]) != n:
            raise ValueError(f"a decimal column's blocks do not hold the header's {n} rows")
        deltas = _unshuffle(blocks[0], desc["dtype"], n)
        deltas = _unzigzag(deltas) if desc["kind"] == "zigzag" else deltas.astype(np.int64)
        columns.append((np.cumsum(deltas), np.frombuffer(blocks[1], dtype=np.uint8)))
    return decimal_cells.assemble(meta["header"].encode("ascii"), columns, n, meta["trailing_newline"])


def is_samples(name: str) -> bool:
    return name.startswith("samples-") and name.endswith(".csv")


def pack(name: str, raw: bytes) -> tuple[str, bytes]:
    """(stored name, stored bytes) of one record file."""
    if is_samples(name):  # samples are always stored compressed
        packed = encode_columns(raw)
        if packed is not None:
            return name + COLUMNS_SUFFIX, packed
    if len(raw) >= RAW_LIMIT:
        return name + XZ_SUFFIX, lzma.compress(raw, preset=_TEXT_PRESET)
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
