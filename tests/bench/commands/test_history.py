"""`bench history` and the report's history, from a results branch in a real git repository."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gitrepo import ENV, git
from tests.synthetic_records import RunSpec, write_run


def bench(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bench", *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300
    )


def repo(tmp_path: Path) -> Path:
    work = tmp_path / "repo"
    work.mkdir()
    git(work, "init", "--quiet", "-b", "main")
    git(work, "commit", "--quiet", "--allow-empty", "-m", "start")
    return work


def sha_of(i: int) -> str:
    return hashlib.sha1(f"commit {i}".encode()).hexdigest()


def thirty_commits(results: Path, runs_per_commit: int = 3) -> list[str]:
    """Commits 1..30, 3 runs each; from commit 16 on, 10 % more images/s and a newer driver."""
    shas = [sha_of(i) for i in range(1, 31)]
    for i, sha in enumerate(shas, start=1):
        for k in range(runs_per_commit):
            spec = RunSpec(
                env="moc",
                run_id=f"c{i:02d}-{k}",
                sha=sha,
                start=1_790_000_000 + i * 3600 + k * 120,
                images_per_s=110.0 if i >= 16 else 100.0,
                gpus=1,
                seed=i * 10 + k,
            )
            run_dir = write_run(results, spec)
            meta = json.loads((run_dir / "run.json").read_text())
            meta["hardware"]["gpus"][0]["driver"] = "550.54" if i >= 16 else "535.00"
            (run_dir / "run.json").write_text(json.dumps(meta))
    return shas


@pytest.mark.slow
def test_a_ten_percent_step_at_commit_16_is_one_change_point_named_with_what_changed(tmp_path: Path):
    work = repo(tmp_path)
    shas = thirty_commits(work / "results")
    p = bench(work, "archive", "--local")
    assert p.returncode == 0 and "90 run(s) committed locally" in p.stdout, p.stderr
    shutil.rmtree(work / "results")  # the branch alone holds them now

    p = bench(work, "history", "--env", "moc", "--json")
    assert p.returncode == 0, p.stderr
    found = [json.loads(line) for line in p.stdout.splitlines()]
    ips = [cp for cp in found if cp["metric"] == "images_per_s"]
    assert len(ips) == 1, found
    cp = ips[0]
    assert cp["commit"] == shas[15] and cp["index"] == 15  # commit 16
    assert 0.08 < cp["change"] < 0.12 and cp["p_value"] < 0.001
    assert cp["n_before"] == 45 and cp["n_after"] == 45
    assert cp["changed"].startswith("driver 535.00 → 550.54;")
    # metrics that follow images/s change there too, and nowhere else does anything change
    assert {c["commit"] for c in found} == {shas[15]}

    text = bench(work, "history").stdout
    assert "90 run(s), 30 commit(s)" in text
    line = next(row for row in text.splitlines() if row.startswith("moc\timages_per_s\t"))
    assert f"\t{shas[15][:7]}\t" in line and " -> " in line and "driver 535.00 → 550.54" in line


@pytest.mark.slow
def test_a_results_folder_gives_the_same_change_points_as_the_branch(tmp_path: Path):
    work = repo(tmp_path)
    thirty_commits(work / "results", runs_per_commit=1)
    assert bench(work, "archive", "--local").returncode == 0
    from_branch = bench(work, "history", "--json", "--metric", "images_per_s").stdout
    from_folder = bench(work, "history", "--json", "--metric", "images_per_s", "--results", "results").stdout
    assert from_branch == from_folder and from_branch.count("\n") == 1


@pytest.mark.slow
def test_no_branch_and_no_folder_is_one_line(tmp_path: Path):
    work = repo(tmp_path)
    p = bench(work, "history")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "no results branch" in p.stderr, p.stderr


@pytest.mark.slow
def test_report_rebuilds_the_same_history_from_the_branch_after_results_is_deleted(tmp_path: Path):
    work = repo(tmp_path)
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "--quiet", "--bare", str(bare))
    git(work, "remote", "add", "origin", str(bare))
    for i in range(3):
        for k in range(2):
            spec = RunSpec(env="local", run_id=f"r{i}{k}", sha=sha_of(i), start=1_790_000_000 + i * 86400 + k, seed=k)
            write_run(work / "results", spec)
    assert bench(work, "archive").returncode == 0
    first = bench(work, "report")
    assert first.returncode == 0, first.stderr
    folder = next(p for p in (work / "reports").iterdir() if p.is_dir())
    before = {f.name: f.read_bytes() for f in folder.iterdir()}
    assert "history.png" in before

    shutil.rmtree(work / "results")
    shutil.rmtree(work / "reports")
    again = bench(work, "report")
    assert again.returncode == 0, again.stderr
    assert "restored 6 run record(s) from refs/heads/results" in again.stdout
    assert {f.name: f.read_bytes() for f in (work / "reports" / folder.name).iterdir()} == before


def test_history_chart_covers_commits_only_the_branch_keeps(tmp_path: Path):
    from bench.analysis.history import chart_points
    from bench.gitops.results_branch import read_entries

    work = repo(tmp_path)
    for i in range(3):
        write_run(work / "results", RunSpec(env="local", run_id=f"r{i}", sha=sha_of(i), start=1_790_000_000 + i))
    assert bench(work, "archive", "--local").returncode == 0
    shutil.rmtree(work / "results" / "local" / "r0")  # an old commit no longer in the folder
    points = chart_points(read_entries(work, "refs/heads/results"), ["local"])
    assert [p[2] for p in sorted(points, key=lambda p: p[1])] == [sha_of(i)[:7] for i in range(3)]


@pytest.mark.slow
def test_the_same_commit_run_again_on_a_new_driver_reads_same_code(tmp_path: Path):
    work = repo(tmp_path)
    results = work / "results"
    t = 1_790_000_000

    def runs(i: int, sha: str, driver: str, rate: float) -> None:
        nonlocal t
        for _ in range(3):
            t += 600
            spec = RunSpec(env="moc", run_id=f"r{t}", sha=sha, start=t, images_per_s=rate, gpus=1, seed=t % 997)
            run_dir = write_run(results, spec)
            meta = json.loads((run_dir / "run.json").read_text())
            meta["hardware"]["gpus"][0]["driver"] = driver
            (run_dir / "run.json").write_text(json.dumps(meta))

    for i in range(1, 11):
        runs(i, sha_of(i), "550.54", 100.0)
    runs(10, sha_of(10), "560.28", 92.0)  # commit 10 again, after the driver update: -8 %
    for i in range(11, 17):
        runs(i, sha_of(i), "560.28", 92.0)
    p = bench(work, "history", "--results", "results", "--metric", "images_per_s")
    assert p.returncode == 0, p.stderr
    rows = [r.split("\t") for r in p.stdout.splitlines()[2:]]
    assert len(rows) == 1, p.stdout
    assert rows[0][2] == sha_of(10)[:7]
    assert -9.0 < float(rows[0][3].split("(")[1].rstrip("%)")) < -7.0, rows[0]
    assert rows[0][5] == "driver 550.54 → 560.28; same code"


@pytest.mark.slow
def test_the_report_lists_the_change_point_with_what_changed(tmp_path: Path):
    from bench.commands.report import write_report

    results = tmp_path / "results"
    shas = thirty_commits(results, runs_per_commit=1)
    readme = write_report(results, tmp_path / "reports", commit=shas[-1]).readme.read_text().replace("\\", "")
    section = readme.split("## Change points in the history", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("- ")]
    ips = [line for line in lines if "% images/s, whole job" in line]
    assert len(ips) == 1, section
    assert ips[0].startswith("- +1") and f"at `{shas[15][:7]}`" in ips[0] and "driver 535.00 → 550.54" in ips[0]
    # bench explain's sentence for the runs on its two sides (these synthetic runs have no timeline)
    assert "Explained: no timeline phases recorded (time to train " in ips[0]
    assert "config unchanged; driver 535.00 → 550.54; code " in ips[0]
    assert all(f"`{shas[15][:7]}`" in line for line in lines)
