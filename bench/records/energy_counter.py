"""A GPU's energy from its counter (NVML's total energy, DCGM field 156, mJ): the physical rules.

The counter only grows between resets (a driver reload, a GPU reset, dcgm-exporter's
restart), so the energy is the sum of its monotonic segments, and the first reading after
a reset counts too (the counter restarted from 0, so that reading is the energy since the
reset). Nothing else is believed:

- a negative reading, or one that would mean more than `MAX_POWER_W` since the reading
  before (one cell of 1e308), is not a reading: it is skipped and named;
- a counter that goes back at more than a tenth of its steps, or never grows, measures
  nothing: its energy is unknown (None, named), never 0 Wh.
"""

from __future__ import annotations

import numpy as np

MAX_POWER_W = 3000.0  # above any one GPU board (an H200 or B200 draws at most ~1,000-1,200 W)
MJ_PER_WH = 3.6e6
MAX_RESET_SHARE = 0.1


def counter_energy_wh(t: np.ndarray, mj: np.ndarray, what: str) -> tuple[float | None, list[str]]:
    """(Wh between the first and last reading, or None when the counter cannot be read; problems named)."""
    t, mj = np.asarray(t, dtype=float), np.asarray(mj, dtype=float)
    ok = np.isfinite(t) & np.isfinite(mj)
    t, mj = t[ok], mj[ok]
    problems: list[str] = []
    negative = int((mj < 0).sum())
    if negative:
        problems.append(f"{what}: {negative} negative energy counter reading(s) (mJ only grows from 0); skipped")
        t, mj = t[mj >= 0], mj[mj >= 0]
    if mj.size < 2:
        return None, problems
    step_mj, room = np.diff(mj), _room_mj(np.diff(t))
    if not (step_mj > room).any():  # no damaged cell, so each reading follows the one before: one numpy pass
        back = step_mj < 0
        after_reset = mj[1:][back]
        total = float(step_mj[~back].sum() + after_reset[after_reset <= room[back]].sum())
        resets, jumps, rising = int(back.sum()), 0, int((step_mj > 0).sum())
    else:
        total, resets, jumps, rising = _walk(t, mj)
    steps = mj.size - 1
    if jumps:
        problems.append(
            f"{what}: {jumps} energy counter reading(s) jump by more than {MAX_POWER_W:g} W could use "
            "since the reading before (damaged?); skipped"
        )
    if (resets > MAX_RESET_SHARE * steps and resets > 1) or not rising:
        problems.append(
            f"{what}: the energy counter goes back {resets} time(s) in {steps} steps"
            + (" and never grows" if not rising else "")
            + ": not a counter; GPU energy unknown (not 0 Wh)"
        )
        return None, problems
    return total / MJ_PER_WH, problems


def _room_mj(seconds: np.ndarray | float) -> np.ndarray | float:
    """The most energy (mJ) one GPU could use in `seconds`, plus 1 mJ of rounding."""
    return np.maximum(seconds, 0.0) * MAX_POWER_W * 1000.0 + 1.0


def _walk(t: np.ndarray, mj: np.ndarray) -> tuple[float, int, int, int]:
    """Reading by reading, for a counter with damaged cells: a skipped reading is not the
    one the next is measured from. (total mJ, resets, skipped jumps, rising steps)"""
    total, last_t, last, resets, jumps, rising = 0.0, t[0], mj[0], 0, 0, 0
    for now_t, now in zip(t[1:].tolist(), mj[1:].tolist()):
        room = _room_mj(now_t - last_t)  # mJ a GPU could use in between
        if now >= last:
            if now - last > room:  # an impossible jump up (a damaged cell): not a reading
                jumps += 1
                continue
            total += now - last
            rising += now > last
        else:  # the counter went back: a reset, and it restarted from 0
            resets += 1
            total += now if now <= room else 0.0
        last_t, last = now_t, now
    return total, resets, jumps, rising
