"""Issue 31: GPU energy from a counter that decreases, goes negative, holds 1e308 or resets.

Real synthetic records on disk, changed in one column and read back as `bench report`
and `bench check` read them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench.analysis.metrics import run_metrics
from bench.cli import main
from bench.records.energy_counter import counter_energy_wh
from bench.records.read import load_run
from tests.synthetic_records import RunSpec, write_run

COUNTER = "gpu0_DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"


def _run_with_counter(root: Path, change) -> tuple[Path, float]:
    run = write_run(root, RunSpec("gpu", "r1", gpus=1, duration_s=60, log_every_s=5))
    (samples,) = run.glob("samples-*.csv")
    df = pd.read_csv(samples)
    sound = float(df[COUNTER].iloc[-1] - df[COUNTER].iloc[0]) / 3.6e6
    df[COUNTER] = change(df[COUNTER].to_numpy(dtype=float), df["time"].to_numpy(dtype=float))
    df.to_csv(samples, index=False)
    return run, sound


def test_a_sound_counter_gives_its_rise(tmp_path: Path) -> None:
    run, sound = _run_with_counter(tmp_path, lambda v, t: v)
    assert run_metrics(load_run(run)).energy_wh == pytest.approx(sound)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda v, t: v[::-1].copy(), "goes back"),  # decreases at every sample
        (lambda v, t: -v, "negative"),
        (lambda v, t: np.full_like(v, 5.0), "never grows"),
    ],
    ids=["decreasing", "negative", "flat"],
)
def test_a_counter_that_is_no_counter_gives_unknown_energy_not_zero(
    tmp_path: Path, change, named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run, _ = _run_with_counter(tmp_path, change)
    data = load_run(run)
    assert run_metrics(data).energy_wh is None
    assert any(named in p and COUNTER in p for p in data.problems), data.problems
    assert main(["check", str(tmp_path)]) == 1
    assert named in capsys.readouterr().out


def test_one_cell_of_1e308_is_skipped_not_summed(tmp_path: Path) -> None:
    def spike(v: np.ndarray, t: np.ndarray) -> np.ndarray:
        v = v.copy()
        v[len(v) // 2] = 1e308
        return v

    run, sound = _run_with_counter(tmp_path, spike)
    data = load_run(run)
    wh = run_metrics(data).energy_wh
    assert wh is not None and wh == pytest.approx(sound, rel=1e-9)  # was 2.8e304 Wh
    assert any("jump by more than" in p for p in data.problems)


def test_a_counter_reset_mid_file_sums_both_segments_and_the_reading_after_it() -> None:
    """dcgm-exporter's counter restarts from 0: 1 kW for 10 s before and after (was 2.78 Wh for 3.06)."""
    t = np.arange(0.0, 21.0)
    before = 5e9 + 1e6 * t[:11]  # mJ; 1 kW
    after = 1e6 * (t[11:] - 10.5)  # reset at t = 10.5 s, 1 kW after it
    wh, problems = counter_energy_wh(t, np.concatenate([before, after]), "gpu0")
    assert wh == pytest.approx((10 * 1e6 + 9.5 * 1e6) / 3.6e6)
    assert problems == []


def test_the_counter_rules_never_give_a_negative_or_non_finite_energy() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(0, 30))
        t = np.sort(rng.uniform(0, 100, n))
        v = rng.choice([np.nan, np.inf, -np.inf, -1.0, 0.0, 1e308, 5e9, 1e3], n) + rng.uniform(0, 1e6, n)
        wh, _ = counter_energy_wh(t, v, "gpu0")
        assert wh is None or (np.isfinite(wh) and wh >= 0)


def test_a_csv_map_energy_counter_that_always_decreases_gives_unknown_energy(tmp_path: Path, capsys) -> None:
    """Through `bench import --map` as a user imports a monitoring export (was 0 Wh)."""
    sheet = tmp_path / "gpu.csv"
    sheet.write_text("t,util,joules\n" + "".join(f"{1_790_000_000 + 10 * i},50,{9e6 - 1e5 * i}\n" for i in range(30)))
    (tmp_path / "MAP.yaml").write_text(
        "time: {column: t, format: unix}\ncolumns:\n  util: {to: gpu0_DCGM_FI_DEV_GPU_UTIL}\n"
        f"  joules: {{to: {COUNTER}}}\n"
    )
    results = tmp_path / "res"
    argv = ["import", "--map", str(tmp_path / "MAP.yaml"), "--env", "e", "--run-id", "r", "--results", str(results)]
    assert main([*argv, str(sheet)]) == 0, capsys.readouterr().err
    data = load_run(results / "e" / "r")
    assert run_metrics(data).energy_wh is None
    assert any("goes back" in p for p in data.problems), data.problems
