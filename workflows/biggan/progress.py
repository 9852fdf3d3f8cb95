"""What the user sees while training runs: a tqdm bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
from typing import Any


class Progress:
    """tqdm bar on a terminal, plain lines on stderr otherwise (batch jobs, CI)."""

    def __init__(self, mode: str, total: int, start: int, enabled: bool) -> None:
        self.enabled = enabled
        use_bar = mode == "bar" or (mode == "auto" and sys.stderr.isatty())
        self.bar = None
        if enabled and use_bar:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, initial=start, unit="it", dynamic_ncols=True, file=sys.stderr)
            except ImportError:
                self.bar = None

    def advance(self, record: dict[str, Any] | None) -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(1)
            if record is not None:
                self.bar.set_postfix(
                    g=_fmt(record["g_loss"]),
                    d=_fmt(record["d_loss_real"]),
                    img_s=_fmt(record["images_per_s"]),
                    refresh=False,
                )
        elif record is not None:
            line(
                f"iter {record['iteration']} images {record['images_seen']} "
                f"{_fmt(record['images_per_s'])} img/s g_loss {_fmt(record['g_loss'])} "
                f"d_loss_real {_fmt(record['d_loss_real'])} d_loss_fake {_fmt(record['d_loss_fake'])}"
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _fmt(v: Any) -> str:
    return "nan" if v is None else f"{v:.4g}"


def line(msg: str) -> None:
    print(f"biggan: {msg}", file=sys.stderr, flush=True)
