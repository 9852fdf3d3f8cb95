"""`bench noise`: the noise floor measured from a results tree of synthetic records
(tests/synthetic_records.py), stored in results/<env>/noise.json, read by the PR comment;
damaged and stale files named in one line; bands proposed, never written."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from bench.analysis.expected import parse
from bench.analysis.noise_store import SCHEMA_FILE
from bench.cli import main
from bench.commands.comment import render_pr_body
from bench.finite_schema import problems
from tests.synthetic_records import RunSpec, write_run

HEAD, BASE = "b" * 40, "a" * 40
COMMITS = ["1" * 40, "2" * 40, "3" * 40]


def history(results: Path, cv: float = 0.07, commits: list[str] = COMMITS, per: int = 3, start: int = 0) -> None:
    """`per` runs of each commit, images/s and duration drawn ~ cv (seeded)."""
    rng = np.random.default_rng(11 + start)
    for c, sha in enumerate(commits):
        for i in range(per):
            k = start + c * per + i
            write_run(
                results,
                RunSpec(
                    "local",
                    f"h{k:03d}",
                    sha=sha,
                    start=1_789_000_000 + k * 1000,
                    images_per_s=float(100 * (1 + rng.normal(0, cv))),
                    duration_s=float(60 * (1 + rng.normal(0, cv))),
                    seed=k,
                ),
            )


def test_noise_from_history_writes_the_file_and_a_pr_comment_elsewhere_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    history(results)
    assert main(["noise", "--env", "local", "--results", str(results)]) == 0
    out = capsys.readouterr()
    assert out.err == "" and "local / smoke: 9 runs of 3 commit(s)" in out.out
    data = json.loads((results / "local" / "noise.json").read_text())
    assert problems(SCHEMA_FILE, data) == []
    block = data["experiments"]["smoke"]
    assert block["commits"] == dict.fromkeys(COMMITS, 3) and block["runs"] == 9 and data["date"]
    ips = block["metrics"]["images_per_s"]
    assert 0.035 < ips["cv"] < 0.12 and ips["floor"] == pytest.approx(1.96 * ips["cv"], abs=1e-5) and ips["runs"] == 9
    # a PR run in the same tree: its head's and merge-base's own repeated runs leave the file current
    for i in range(3):
        write_run(results, RunSpec("local", f"pb{i}", sha=BASE, start=1_790_000_000 + i * 100, seed=40 + i))
        write_run(results, RunSpec("local", f"ph{i}", sha=HEAD, start=1_790_001_000 + i * 100, seed=50 + i))
    body = render_pr_body(results, HEAD, BASE)
    assert f"from {results / 'local' / 'noise.json'} ({data['date']})" in body and "stale" not in body
    assert "Minimum detectable effect with 3 runs a side: none (too few runs" in body  # 3 vs 3: p >= 0.1
    # a CI tree holding only the stored file and one run a side: the comment uses the stored floor
    ci = tmp_path / "ci"
    (ci / "local").mkdir(parents=True)
    shutil.copy(results / "local" / "noise.json", ci / "local" / "noise.json")
    write_run(ci, RunSpec("local", "base-0", sha=BASE, images_per_s=100.0, start=1_790_000_000))
    write_run(
        ci, RunSpec("local", "head-0", sha=HEAD, images_per_s=100.0 * (1 - 0.8 * ips["floor"]), start=1_790_001_000)
    )
    body = render_pr_body(ci, HEAD, BASE)
    line = next(x for x in body.splitlines() if x.startswith("| images/s"))
    assert f"unchanged — within noise (±{ips['floor']:.1%})" in line
    assert f"from {ci / 'local' / 'noise.json'} ({data['date']})" in body
    # without the stored file the same runs have no floor: one run a side past 5 % is inconclusive
    (ci / "local" / "noise.json").unlink()
    line = next(x for x in render_pr_body(ci, HEAD, BASE).splitlines() if x.startswith("| images/s"))
    assert line.endswith("| inconclusive |"), line


def test_a_damaged_or_stale_file_is_named_in_one_line_and_recomputed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    history(results)
    path = results / "local" / "noise.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    for damage in ("{not json", json.dumps({"format": "atlas-noise/1", "env": "local"}), "NaN"):
        path.write_text(damage)
        assert main(["noise", "--env", "local", "--results", str(results)]) == 0
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"{path} is damaged (" in err[0] and err[0].endswith(": recomputed"), err
        assert problems(SCHEMA_FILE, json.loads(path.read_text())) == []
    target = tmp_path / "elsewhere.json"
    target.write_text(path.read_text())
    path.unlink()
    path.symlink_to(target)  # a link planted in the results tree: named, not followed, replaced by a file
    assert main(["noise", "--env", "local", "--results", str(results)]) == 0
    assert "is damaged (not a regular file; a link is never followed): recomputed" in capsys.readouterr().err
    assert not path.is_symlink() and path.is_file()
    path.unlink()
    path.mkdir()
    assert main(["noise", "--env", "local", "--results", str(results)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a folder, not the noise file: remove it" in err[0], err
    path.rmdir()
    # the PR comment names a damaged file too, and judges with the history's floor
    path.write_text("[1, 2")
    body = render_pr_body(results, COMMITS[1], COMMITS[0])
    damaged = [x for x in body.splitlines() if x.startswith("- ") and "noise.json is damaged (" in x]
    assert len(damaged) == 1 and damaged[0].endswith("stores it again"), damaged
    assert "from the history (9 runs of 3 commits)" in body
    # new repeated runs since the file was written: stale, named, recomputed
    assert main(["noise", "--env", "local", "--results", str(results)]) == 0
    capsys.readouterr()
    history(results, commits=["4" * 40], per=3, start=100)
    assert main(["noise", "--env", "local", "--results", str(results)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"atlas: {path} is stale (made from 9 runs of 3 commit(s); the history now has 12 runs of 4): recomputed"
    ]
    assert json.loads(path.read_text())["experiments"]["smoke"]["runs"] == 12


def test_proposed_bands_parse_as_expected_yaml_and_nothing_is_written_to_clusters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    from bench.environments.load import CLUSTERS_DIR

    before = sorted(p.name for p in (CLUSTERS_DIR / "local").iterdir())
    results = tmp_path / "results"
    history(results)
    assert main(["noise", "--env", "local", "--results", str(results), "--propose-bands"]) == 0
    out = capsys.readouterr().out
    text = out[out.index("# Proposed bands for clusters/local/expected.yaml") :]
    bands = parse(tmp_path / "expected.yaml", yaml.safe_load(text))  # the project's own reader accepts it
    ips = bands["smoke"]["images_per_s"]
    cv = json.loads((results / "local" / "noise.json").read_text())["experiments"]["smoke"]["metrics"]["images_per_s"]
    assert ips.upper == pytest.approx(3 * cv["cv"], rel=0.01) and ips.lower == -ips.upper
    assert ips.value == pytest.approx(cv["median"], rel=1e-3)
    assert sorted(p.name for p in (CLUSTERS_DIR / "local").iterdir()) == before  # never written there


def test_too_few_repeated_runs_and_bad_runs_are_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    history(results, commits=COMMITS, per=1)  # three commits, one run each: no spread within a commit
    assert main(["noise", "--env", "local", "--results", str(results)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no commit of local has two or more clean, finished runs" in err[0]
    assert "bench noise --env local --runs 3" in err[0]
    assert not (results / "local" / "noise.json").exists()
    assert main(["noise", "--env", "local", "--results", str(results), "--runs", "1"]) == 2
    assert "--runs must be at least 2" in capsys.readouterr().err


@pytest.mark.slow
def test_noise_with_runs_goes_through_bench_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three real smoke runs (10 iterations) of this checkout, collected by `bench run`, then measured."""
    monkeypatch.setenv("ATLAS_RUNS_DIR", str(tmp_path / "runs"))
    results = tmp_path / "results"
    argv = ["noise", "--env", "local", "--runs", "3", "--results", str(results), "--set", "train.max_iters=10"]
    dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True, check=True).stdout.strip()
    if dirty:  # a checkout with uncommitted changes (while developing): its runs never make a floor
        assert main(argv) == 2
        assert "3 run(s) are of uncommitted code, which a floor never counts" in capsys.readouterr().err
        return
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("completed (success, exit code 0)") == 3 and "local / smoke: 3 runs of 1 commit(s)" in out
    data = json.loads((results / "local" / "noise.json").read_text())
    assert problems(SCHEMA_FILE, data) == [] and list(data["experiments"]["smoke"]["commits"].values()) == [3]
    assert "images_per_s" in data["experiments"]["smoke"]["metrics"]
