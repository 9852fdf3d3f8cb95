"""Issue 36 item 6: what a record does not say stays unknown, and a label says what was measured.

An import of sar + nvidia-smi, made by `bench import` and reported by `bench report` (both
through the CLI): no attempts or lost-work figure, no "peak RSS" (sar's used memory is the
whole machine's), no memory limit and no advice to lower a request nobody made, a shape row
that agrees with the sentence on shapes, and chart captions that say why each run was drawn.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bench.analysis.advisor import advise
from bench.analysis.compare import compare_runs
from bench.analysis.metrics import run_metrics
from bench.cli import main
from bench.records.read import find_runs, load_run
from bench.render.labels import measured_label
from tests.bench.importers.conftest import SAMPLES
from tests.synthetic_records import RunSpec, write_run


def imported(results: Path, env: str, run_id: str, gpus: str) -> Path:
    args = ["import", "--env", env, "--run-id", run_id, "--results", str(results), "--format", "sar"]
    files = [str(SAMPLES / "sar-u-r-12h.txt"), "nvidia-smi:" + str(SAMPLES / "nvidia-smi-units.csv")]
    assert main([*args, "--gpus", gpus, *files]) == 0
    return results / env / run_id


def report(results: Path, out: Path, *extra: str) -> Path:
    assert main(["report", "--results", str(results), "--out", str(out), *extra]) == 0
    return next(p for p in out.iterdir() if p.is_dir())


def table_cells(text: str, header_start: str) -> dict[str, list[str]]:
    """A Markdown table of the README as {column: [cell per row]}."""
    lines = text.split(header_start, 1)[1].split("\n\n", 1)[0].splitlines()
    head = [c.strip() for c in (header_start + lines[0]).strip("|").split("|")]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    return {h: [r[i] for r in rows] for i, h in enumerate(head)}


def test_an_import_of_sar_and_nvidia_smi_shows_only_what_it_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # no results branch of this checkout is read
    results = tmp_path / "results"
    run_dir = imported(results, "satori", "r1", "0,1")
    folder = report(results, tmp_path / "reports")
    capsys.readouterr()
    text = (folder / "README.md").read_text()

    # no "peak RSS": the figure is sar's used memory of the whole machine, labelled so everywhere
    assert "peak RSS" not in text and "RSS" not in text
    assert "| peak host memory used (whole machine) | GB | 44.1 (host) |" in text
    assert "![Host memory used (whole machine)](memory.png)" in text
    assert "Process-tree resident memory" not in text
    runs_table = table_cells(text, "| env | run | status |")
    assert runs_table["peak host memory used (whole machine)"] == ["44.1 (host)"]

    # attempts and lost work: unknown in the per-environment table, the runs table and runs.csv
    assert "| attempts | jobs | — | — |" in text and "| lost work | iterations | — | — |" in text
    assert runs_table["attempts"] == ["—"] and runs_table["lost work"] == ["—"]
    csv = pd.read_csv(folder / "runs.csv")
    for key in ("attempts", "lost_iters", "mem_limit_gb"):
        assert csv[key].isna().all(), key
    assert csv.loc[0, "peak_rss_gb_source"] == "host"
    samples = pd.concat(pd.read_csv(p) for p in run_dir.glob("samples-*.csv"))
    assert csv.loc[0, "host_mem_gb"] == pytest.approx(samples["host_mem_total_bytes"].max() / 1e9, rel=1e-6)

    # no memory request was made, so none is advised smaller; the machine's memory is named as such
    advice = text.split("## Advisor", 1)[1].split("\n## ", 1)[0]
    assert "request would do" not in advice and "of the machine's 652 GB; no memory limit recorded" in advice

    # each caption says why its run was drawn: this one has no images/s to take a median of
    notes = [line for line in text.splitlines() if line.startswith("One line per environment")]
    assert notes and all(line.endswith("satori: `r1` (its only run).") for line in notes), notes
    assert "median images/s" not in text.split("## Charts", 1)[1].split("\n## ", 1)[0]


def test_the_shape_row_agrees_with_the_sentence_on_shapes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Neither import records a shape; one ran on 2 GPUs, the other on 1. The sentence says the
    shapes differ, so the row cannot say "not recorded": it shows both, marked as not recorded."""
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "results"
    imported(results, "satori", "two", "0,1")
    imported(results, "other", "one", "2")
    imported(results, "other", "one-b", "3")
    text = (report(results, tmp_path / "reports", "--allow-different") / "README.md").read_text()
    capsys.readouterr()
    assert "had different shapes (other 1×1, satori 1×2 nodes × GPUs)" in text
    row = next(line for line in text.splitlines() if line.startswith("| shape (nodes × GPUs) |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "differs", row
    assert cells[2].startswith("`1 node × 1 GPU (not recorded") and cells[3].startswith("`1 node × 2 GPUs (not")
    # two runs of one environment, neither with images/s: the caption says how the run was picked
    notes = [line for line in text.splitlines() if line.startswith("One line per environment")]
    expected = "other: `one` (none of its 2 runs recorded images/s: the first by run id that recorded this series)"
    assert notes and all(expected in line for line in notes), notes


def test_a_bare_process_is_never_told_to_ask_for_less_memory(tmp_path: Path) -> None:
    """A process outside any cgroup limit (the recorder writes memory_limit_bytes null) has no
    request to lower: its memory is compared with the machine's, in those words."""
    run_dir = write_run(tmp_path / "r", RunSpec("bare", "b0"))
    meta = json.loads((run_dir / "run.json").read_text())
    meta["hardware"]["cgroup"]["memory_limit_bytes"] = None
    (run_dir / "run.json").write_text(json.dumps(meta))
    m = run_metrics(load_run(run_dir))
    assert m.mem_limit_gb is None and m.host_mem_gb == pytest.approx(64.0)
    notes = " ".join(advise(compare_runs(find_runs(tmp_path / "r")))["bare"])
    assert "request" not in notes.replace("no request to size", "")
    assert "of the machine's 64.0 GB; no memory limit recorded" in notes
    # the same run with its cgroup limit: the limit is a request, and the advice may say so
    write_run(tmp_path / "c", RunSpec("limited", "c0"))
    assert "16.0 GB available; a smaller memory request would do" in " ".join(
        advise(compare_runs(find_runs(tmp_path / "c")))["limited"]
    )


def test_a_row_mixing_the_job_and_the_machine_names_both(tmp_path: Path) -> None:
    own = run_metrics(load_run(write_run(tmp_path / "own", RunSpec("local", "a"))))
    host = run_metrics(load_run(imported(tmp_path / "imp", "satori", "r1", "0")))
    assert measured_label("peak_rss_gb", [own]) == "peak RSS"
    assert measured_label("peak_rss_gb", [host]) == "peak host memory used (whole machine)"
    assert (
        measured_label("peak_rss_gb", [own, host])
        == "peak RSS, or peak host memory used (whole machine) where marked (host)"
    )
    assert measured_label("gpu_util_mean_pct", [host]) == "GPU utilisation mean"  # no host column: as it is
