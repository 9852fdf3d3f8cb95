"""Report fixes that imported records exposed: host fallbacks labelled "(host)", GPU
figures over the job's GPUs only, a unique folder for undated or sha-less runs, and no
"Mean of empty slice" warning for an empty GPU column."""

from __future__ import annotations

import csv
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench.analysis.compare import compare_runs
from bench.cli import main
from bench.commands.report import write_report
from bench.records.read import find_runs, load_run
from tests.bench.importers.conftest import SAMPLES
from tests.synthetic_records import RunSpec, write_run


def imported(results: Path, env: str, run_id: str, *args: str | Path) -> Path:
    code = main(["import", "--env", env, "--run-id", run_id, "--results", str(results), *map(str, args)])
    assert code == 0
    return results / env / run_id


def test_host_columns_are_used_and_labelled(tmp_path: Path) -> None:
    results = tmp_path / "results"
    imported(
        results,
        "satori",
        "r1",
        "--format",
        "sar",
        "--gpus",
        "0,1",
        SAMPLES / "sar-u-r-12h.txt",
        "nvidia-smi:" + str(SAMPLES / "nvidia-smi-units.csv"),
    )
    res = write_report(results, tmp_path / "out")
    text = res.readme.read_text()
    cpu_row = next(line for line in text.splitlines() if line.startswith("| host CPU mean (whole machine) |"))
    rss_row = next(line for line in text.splitlines() if line.startswith("| peak host memory used (whole machine) |"))
    assert "(host)" in cpu_row and "(host)" in rss_row and "—" not in cpu_row
    assert "(host): the whole machine's CPU or used memory" in text
    assert "![Host CPU (whole machine)](cpu.png)" in text and "![Host memory used (whole machine)](memory.png)" in text
    assert (res.folder / "cpu.png").is_file() and (res.folder / "memory.png").is_file()
    not_drawn = [line for line in text.splitlines() if line.startswith("Not drawn")]
    assert not any("CPU" in line or "resident memory" in line for line in not_drawn)
    assert "memory: peak host memory used (whole machine) 44.1 GB" in text  # the advisor says what it measured
    runs = pd.read_csv(res.folder / "runs.csv")
    smi = pd.read_csv(SAMPLES / "nvidia-smi-units.csv", skipinitialspace=True)
    job = smi[smi["index"].isin([0, 1])]["utilization.gpu [%]"].str.rstrip(" %").astype(float)
    assert runs.loc[0, "gpu_util_mean_pct"] == pytest.approx(job.mean(), rel=1e-5)


def test_recorder_records_keep_process_figures_unlabelled(tmp_path: Path) -> None:
    write_run(tmp_path / "r", RunSpec("local", "a", gpus=1))
    res = write_report(tmp_path / "r", tmp_path / "out")
    assert "(host)" not in res.readme.read_text()


def test_gpu_figures_cover_only_the_gpus_run_json_lists(tmp_path: Path) -> None:
    """A record whose samples hold 4 GPUs but whose job had 1 (hardware.gpus)."""
    run_dir = write_run(tmp_path / "r", RunSpec("satori", "one-of-four", gpus=4, gpu_util=10))
    df = pd.read_csv(run_dir / "samples-node1.csv")
    df["gpu2_DCGM_FI_DEV_GPU_UTIL"] = 31.0
    df.to_csv(run_dir / "samples-node1.csv", index=False)
    meta = json.loads((run_dir / "run.json").read_text())
    meta["hardware"]["gpus"] = [g for g in meta["hardware"]["gpus"] if g["index"] == 2]
    meta["shape"] = None  # as an imported record: no shape that ran, so the job's GPUs decide
    (run_dir / "run.json").write_text(json.dumps(meta))
    m = compare_runs([load_run(run_dir)]).runs[0]
    assert m.gpu_util_mean_pct == pytest.approx(31.0) and m.gpus == 1
    meta["hardware"]["gpus"] = []  # the record does not say: every sampled GPU counts
    (run_dir / "run.json").write_text(json.dumps(meta))
    m = compare_runs([load_run(run_dir)]).runs[0]
    assert m.gpus == 4 and m.gpu_util_mean_pct < 31.0


def test_reports_of_shaless_runs_never_overwrite_each_other(tmp_path: Path) -> None:
    out = tmp_path / "reports"
    one = imported(tmp_path / "a", "satori", "r1", "--format", "sar", SAMPLES / "sar-u-r-12h.txt").parent.parent
    two = imported(tmp_path / "b", "satori", "r1", "--format", "sar", SAMPLES / "sar-u-no-ampm.txt").parent.parent
    first = write_report(one, out).folder
    second = write_report(two, out).folder
    # same date (of the newest start, UTC), no sha: only the content tells them apart
    assert (
        first != second and first.name.startswith("2024-03-14-nogit-") and second.name.startswith("2024-03-14-nogit-")
    )
    readme = (first / "README.md").read_text()
    again = write_report(one, out).folder
    assert again == first and (first / "README.md").read_text() == readme  # stable: same runs, same name
    index = (out / "README.md").read_text()
    assert first.name in index and second.name in index


def test_undated_runs_get_a_content_named_folder(tmp_path: Path) -> None:
    results = imported(
        tmp_path / "a", "satori", "r1", "--format", "nvidia-smi", "--interval", "2", SAMPLES / "nvidia-smi-nounits.csv"
    ).parent.parent
    folder = write_report(results, tmp_path / "out").folder
    assert folder.name.startswith("undated-nogit-") and len(folder.name) == len("undated-nogit-") + 10


def test_empty_gpu_column_gives_no_runtime_warning(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path / "r", RunSpec("local", "a", gpus=2))
    df = pd.read_csv(run_dir / "samples-node1.csv")
    df["gpu0_DCGM_FI_DEV_GPU_UTIL"] = np.nan
    df.loc[df.index[:5], "gpu1_DCGM_FI_DEV_GPU_UTIL"] = np.nan  # rows where no GPU has a value
    df.to_csv(run_dir / "samples-node1.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = write_report(tmp_path / "r", tmp_path / "out")
    assert (res.folder / "gpu_util.png").is_file()
    assert len(find_runs(tmp_path / "r")) == 1
    with (res.folder / "runs.csv").open() as fh:
        row = next(csv.DictReader(fh))
    assert float(row["gpu_util_mean_pct"]) == pytest.approx(df["gpu1_DCGM_FI_DEV_GPU_UTIL"].mean(), rel=1e-4)


def test_host_cpu_utilisation_is_shown_beside_percent_of_a_core(tmp_path: Path) -> None:
    """sar's whole-host CPU (0-100 % of the host) reads as sar prints it, not only as % of one core."""
    results = tmp_path / "results"
    imported(results, "satori", "r1", "--format", "sar", SAMPLES / "sar-u-r-12h.txt")
    res = write_report(results, tmp_path / "out")
    busy = []  # 100 - %idle - %iowait of each `all` row, as the sar importer defines host_cpu_percent
    for line in (SAMPLES / "sar-u-r-12h.txt").read_text().splitlines():
        cells = line.split()
        if len(cells) == 9 and cells[2] == "all":
            busy.append(100 - float(cells[8]) - float(cells[6]))
    runs = pd.read_csv(res.folder / "runs.csv")
    assert runs.loc[0, "host_cpu_util_pct"] == pytest.approx(np.mean(busy), abs=1e-3)
    assert runs.loc[0, "cpu_mean_pct"] == pytest.approx(np.mean(busy) * 160, abs=0.2)  # the same load, % of a core
    text = res.readme.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| host CPU utilisation mean |"))
    assert "| % of the host |" in row and "(host)" not in row
    assert (res.folder / "host_cpu.png").is_file()


def test_an_import_has_no_attempts_or_lost_work_figures(tmp_path: Path) -> None:
    """Nothing in sar or nvidia-smi says how many attempts a job took or what work it lost:
    unknown (empty in runs.csv), never 1 and 0."""
    from bench.analysis.metrics import run_metrics

    results = tmp_path / "results"
    run_dir = imported(
        results, "satori", "r1", "--format", "sar", SAMPLES / "sar-u-r-12h.txt",
        "nvidia-smi:" + str(SAMPLES / "nvidia-smi-units.csv"),
    )  # fmt: skip
    m = run_metrics(load_run(run_dir))
    assert m.attempts is None and m.lost_iters is None
    runs = pd.read_csv(write_report(results, tmp_path / "out").folder / "runs.csv")
    assert runs["attempts"].isna().all() and runs["lost_iters"].isna().all()
    write_run(tmp_path / "own", RunSpec("local", "r1"))  # the workload's own log: one attempt, nothing lost
    m = run_metrics(load_run(tmp_path / "own" / "local" / "r1"))
    assert m.attempts == 1.0 and m.lost_iters == 0.0
