"""The cells of a plain CSV as integers and back, straight from the bytes, at numpy speed.

A samples file of 48 h at 1 Hz on 4 GPUs has about 10^7 cells. numpy's string arrays cost
about a microsecond a cell for each step (split, replace, astype, format), so packing one
such record for the results branch took some 40 s of CPU. Here each cell's bytes are laid
in a row of a small matrix (a sample value is at most MAX_CELL characters), digits are
weighted by their place to give the cell's integer mantissa, and printing back builds the
same matrix from the integers; both work on bounded chunks of cells.

A cell counts as a decimal only in the form that printing gives back byte for byte:
an optional `-`, an integer part without leading zeros ("0" alone is one), optionally a
dot and at least one digit, at most 18 digits in all, and no negative zero. A column
with any other cell is kept as text (bench.gitops.pack).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_CELL = 40  # characters: a longer cell is no sample value, and the file is kept whole
MAX_DIGITS = 18  # a mantissa of up to 18 digits fits int64 exactly
CHUNK = 1 << 17  # cells per step: bounds each matrix to a few tens of MB
_POW10 = 10 ** np.arange(MAX_DIGITS + 1, dtype=np.int64)
COMMA, NEWLINE, DOT, MINUS, ZERO = 0x2C, 0x0A, 0x2E, 0x2D, 0x30


@dataclass(frozen=True)
class Grid:
    """A rectangular CSV's body as bytes, with each cell's start and length (row-major)."""

    header: bytes
    body: np.ndarray  # uint8, every row ending in a newline, then MAX_CELL zeros
    starts: np.ndarray
    lengths: np.ndarray
    width: int
    rows: int
    trailing_newline: bool

    def column(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        return self.starts[j :: self.width], self.lengths[j :: self.width]

    def text(self, j: int) -> TextColumn:
        """Column `j` as text cells, in place in the body."""
        return TextColumn(self.body, *self.column(j))


@dataclass(frozen=True)
class TextColumn:
    """Cells kept as text: where each lies in a buffer of bytes."""

    buffer: np.ndarray  # uint8
    starts: np.ndarray
    lengths: np.ndarray

    @classmethod
    def split(cls, block: bytes) -> TextColumn:
        """The cells of a block written by `joined` (one cell a line, no final newline)."""
        buffer = _padded(block + b"\n")
        ends = np.flatnonzero(buffer == NEWLINE)
        starts = np.concatenate(([0], ends[:-1] + 1))
        if int((ends - starts).max()) > MAX_CELL:
            raise ValueError(f"a text cell is longer than {MAX_CELL} characters (no sample value is)")
        return cls(buffer, starts, ends - starts)

    def joined(self) -> bytes:
        """The cells, one a line (no final newline)."""
        return assemble(b"", [self], self.starts.size, False)[1:]

    def matrix(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        return _gather(self.buffer, self.starts[a:b], self.lengths[a:b]), self.lengths[a:b]


def _gather(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Each cell's bytes in a row of a matrix, zeros after its end: rows of a sliding-window
    view, so each cell is one copy of a few bytes (the buffer is padded by `_padded`)."""
    width = max(int(lengths.max(initial=0)), 1)
    rows = np.lib.stride_tricks.sliding_window_view(buffer, width)[starts]
    return np.where(np.arange(width) < lengths[:, None], rows, 0).astype(np.uint8)


def _padded(data: bytes) -> np.ndarray:
    """`data` as uint8 with MAX_CELL zeros after it, so a window from any cell's start fits."""
    return np.frombuffer(data + bytes(MAX_CELL), dtype=np.uint8)


def grid(raw: bytes) -> Grid | None:
    """The cells of a plain rectangular ASCII CSV (no quotes, no CR, each row as wide as
    the header, a data row at least, no cell over MAX_CELL), else None."""
    if b'"' in raw or b"\r" in raw or not raw.isascii():
        return None
    end_of_header = raw.find(b"\n")
    if end_of_header < 0:
        return None
    trailing = raw.endswith(b"\n")
    body = _padded((raw if trailing else raw + b"\n")[end_of_header + 1 :])
    width = raw[:end_of_header].count(b",") + 1
    delimiters = np.flatnonzero((body == COMMA) | (body == NEWLINE))
    rows = delimiters.size // width
    if rows == 0 or delimiters.size != rows * width:
        return None
    newline = body[delimiters] == NEWLINE
    if int(newline.sum()) != rows or not newline[width - 1 :: width].all():
        return None
    starts = np.concatenate(([0], delimiters[:-1] + 1))
    lengths = delimiters - starts
    if int(lengths.max()) > MAX_CELL:
        return None
    return Grid(raw[:end_of_header], body, starts, lengths, width, rows, trailing)


def parse_column(g: Grid, j: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(mantissa int64, decimals uint8) of column `j`, or None when a cell is not a decimal
    that prints back as it is: `-12.50` is (-1250, 2)."""
    starts, lengths = g.column(j)
    mant, dec = np.empty(g.rows, dtype=np.int64), np.empty(g.rows, dtype=np.uint8)
    for a in range(0, g.rows, CHUNK):
        part = _parse(g.body, starts[a : a + CHUNK], lengths[a : a + CHUNK])
        if part is None:
            return None
        mant[a : a + CHUNK], dec[a : a + CHUNK] = part
    return mant, dec


def _parse(body: np.ndarray, starts: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    if int(n.min()) < 1:
        return None
    ch = _gather(body, starts, n)
    pos = np.arange(ch.shape[1])
    valid = pos < n[:, None]
    neg = ch[:, 0] == MINUS
    digit = (ch >= ZERO) & (ch <= ZERO + 9)
    dot = ch == DOT
    other = valid & ~digit & ~dot
    other[:, 0] &= ~neg
    ndot, ndig = dot.sum(axis=1), digit.sum(axis=1)
    if other.any() or int(ndot.max()) > 1 or int(ndig.min()) < 1 or int(ndig.max()) > MAX_DIGITS:
        return None
    lead = neg.astype(np.intp)  # where the integer part starts
    rows = np.arange(n.size)
    dot_at = np.where(ndot == 1, dot.argmax(axis=1), n)
    if (
        not digit[rows, lead].all()  # "-", ".5", "-.5"
        or ((ndot == 1) & (dot_at >= n - 1)).any()  # "5."
        or ((ch[rows, lead] == ZERO) & (dot_at > lead + 1)).any()  # "05", "-00.1"
    ):
        return None
    value = np.zeros(n.size, dtype=np.int64)
    for k in range(ch.shape[1]):  # Horner's rule, a character column at a time
        value = np.where(digit[:, k], value * 10 + (ch[:, k].astype(np.int64) - ZERO), value)
    if (neg & (value == 0)).any():  # "-0.0" would print back as "0.0"
        return None
    return np.where(neg, -value, value), np.where(ndot == 1, n - 1 - dot_at, 0).astype(np.uint8)


def _print(mant: np.ndarray, dec: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(characters, one row a cell; lengths) of decimals printed as `parse_column` reads them."""
    dec = dec.astype(np.int64)
    neg, a = mant < 0, np.abs(mant)
    shown = np.maximum(np.maximum(np.searchsorted(_POW10, a, side="right"), 1), dec + 1)  # digits, zero-padded
    lengths = neg + shown + (dec > 0)
    pos = np.arange(int(lengths.max()))[None, :] - neg[:, None]  # place after the sign
    dot_at = np.where(dec > 0, shown - dec, -1)[:, None]
    digit_index = pos - ((dec[:, None] > 0) & (pos > dot_at))
    place = np.clip(shown[:, None] - 1 - digit_index, 0, MAX_DIGITS)
    ch = np.where(pos == dot_at, DOT, ZERO + (a[:, None] // _POW10[place]) % 10)
    ch[:, 0] = np.where(neg, MINUS, ch[:, 0])
    return ch.astype(np.uint8), lengths


def assemble(header: bytes, columns: list, rows: int, trailing_newline: bool) -> bytes:
    """The CSV from its columns, each (mantissa, decimals) or a TextColumn: a block of rows
    at a time, every cell's characters and its delimiter side by side in one matrix, whose
    used bytes, read row by row, are the text."""
    out = [header + b"\n"]
    step = max(CHUNK // 8, 1)  # rows x (all cells' widths): a few MB a block
    for a in range(0, rows, step):
        b = min(a + step, rows)
        blocks, used = [], []
        for j, c in enumerate(columns):
            ch, n = c.matrix(a, b) if isinstance(c, TextColumn) else _print(c[0][a:b], c[1][a:b])
            blocks += [ch, np.full((b - a, 1), NEWLINE if j == len(columns) - 1 else COMMA, dtype=np.uint8)]
            used += [np.arange(ch.shape[1]) < n[:, None], np.ones((b - a, 1), dtype=bool)]
        out.append(np.concatenate(blocks, axis=1)[np.concatenate(used, axis=1)].tobytes())
    text = b"".join(out)
    return text if trailing_newline else text[:-1]
