"""The run timeline: phases cut between marks, null with a reason where unknown (never 0),
clocks that disagree named as data problems, and collection writing it once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.atomic_files import write_json_atomic
from bench.environments.facts import environment_facts
from bench.environments.load import CLUSTERS_DIR, load_env
from bench.errors import AtlasError
from bench.records.place import place_run
from bench.records.timeline import (
    IMPORTED,
    PHASES,
    absent,
    build_timeline,
    iso_utc,
    mark,
    phase_seconds,
    phases_from_marks,
    pushed_at,
    span_between,
    timeline_problems,
)


def slurm_like_marks() -> dict:
    return {
        "submitted": mark(100.0, "bench-host", 0.001),
        "accepted": mark(107.0, "slurmctld", 1.0),
        "granted": mark(108.0, "slurmctld", 1.0),
        "recorder_start": mark(108.4, "job", 0.001),
        "workload_start": mark(108.5, "job", 0.001),
        "first_iter": mark(112.0, "job", 0.001),
        "last_iter": mark(130.0, "job", 0.001),
        "exit": mark(131.0, "job", 0.001),
        "collected": mark(150.0, "bench-host", 0.001),
    }


def test_phases_in_order_each_from_its_marks() -> None:
    phases = phases_from_marks(slurm_like_marks())
    assert [p["phase"] for p in phases] == list(PHASES)
    got = {p["phase"]: p["seconds"] for p in phases}
    assert got == {
        "deliver": 7.0,
        "queue": 1.0,
        "stage": None,
        "pull": None,
        "launch": 0.5,
        "warmup": 3.5,
        "train": 18.0,
        "finish": 1.0,
        "collect": 19.0,
    }
    by = {p["phase"]: p for p in phases}
    assert by["deliver"]["source"] == "bench-host → slurmctld" and by["deliver"]["clocks_meet"] == [
        "bench-host",
        "slurmctld",
    ]
    assert by["deliver"]["resolution_s"] == 1.0 and by["queue"]["source"] == "slurmctld"
    assert "clocks_meet" not in by["train"]
    assert by["stage"]["reason"] == "no staged mark" and by["pull"]["reason"] == "no pull_start mark"
    total = sum(p["seconds"] for p in phases if p["seconds"] is not None)
    assert total == pytest.approx(150.0 - 100.0)


def test_a_pushed_run_starts_with_its_trigger_phase_and_the_phases_tile_push_to_result() -> None:
    marks = {**slurm_like_marks(), "pushed": mark(96.0, "bench-host", 0.001)}
    phases = phases_from_marks(marks)
    assert [p["phase"] for p in phases] == ["trigger", *PHASES]
    assert phases[0] | {} == {
        "phase": "trigger",
        "start": 96.0,
        "end": 100.0,
        "seconds": 4.0,
        "source": "bench-host",
        "resolution_s": 0.001,
    }
    assert sum(p["seconds"] for p in phases if p["seconds"] is not None) == pytest.approx(150.0 - 96.0)
    assert timeline_problems(build_timeline(marks)) == []
    assert phases_from_marks(slurm_like_marks())[0]["phase"] == "deliver"  # no push: no trigger


def test_a_kind_without_a_scheduler_launches_from_accepted_and_says_why_queue_is_null() -> None:
    marks = {
        "submitted": mark(10.0, "bench-host", 0.001),
        "accepted": mark(10.01, "bench-host", 0.001),
        "granted": absent("no scheduler: the process starts at once"),
        "workload_start": mark(10.5, "job", 0.001),
        "collected": mark(20.0, "bench-host", 0.001),
    }
    by = {p["phase"]: p for p in build_timeline(marks)["phases"]}
    assert by["queue"]["seconds"] is None and by["queue"]["reason"] == "no scheduler: the process starts at once"
    assert by["launch"]["start"] == 10.01 and by["launch"]["end"] == 10.5
    assert by["warmup"]["reason"] == "no first_iter mark"


def test_unknown_is_null_never_zero() -> None:
    marks = {"submitted": mark(0, "bench-host", 0.001), "accepted": mark(None, "bench-host", 0.001)}
    assert marks == {"submitted": None, "accepted": None}
    timeline = build_timeline({k: v for k, v in marks.items() if v})
    assert all(p["seconds"] is None and p["reason"] for p in timeline["phases"])
    assert set(phase_seconds(timeline).values()) == {None}


def test_reasons_override_the_marks() -> None:
    timeline = build_timeline(slurm_like_marks(), {"queue": "the platform's marks could not be read: boom"})
    by = {p["phase"]: p for p in timeline["phases"]}
    assert by["queue"]["seconds"] is None and "boom" in by["queue"]["reason"]
    assert by["deliver"]["seconds"] == 7.0


def test_clocks_disagreeing_beyond_the_resolution_are_named() -> None:
    marks = slurm_like_marks()
    assert timeline_problems(build_timeline(marks)) == []
    marks["granted"] = mark(105.0, "slurmctld", 1.0)  # Start before Submit: 2 s beyond 1 s resolution
    problems = timeline_problems(build_timeline(marks))
    assert any("phase queue ends 2.000 s before it starts" in p and "slurmctld" in p for p in problems), problems
    within = slurm_like_marks()
    within["granted"] = mark(106.5, "slurmctld", 1.0)  # 0.5 s back: within Slurm's whole seconds
    assert timeline_problems(build_timeline(within)) == []


def test_overlap_of_consecutive_phases_is_named() -> None:
    marks = slurm_like_marks()
    marks["staged"] = mark(120.0, "api-server", 0.001)  # staging "ends" after the workload started
    problems = timeline_problems(build_timeline(marks))
    assert any("phase warmup starts" in p and "launch" in p for p in problems) or any(
        "launch ends" in p for p in problems
    ), problems


def test_span_between_marks_and_its_resolution() -> None:
    timeline = build_timeline(slurm_like_marks())
    assert span_between(timeline, "submitted", "collected") == (50.0, 0.001)
    assert span_between(timeline, "pushed", "collected") is None
    assert span_between({"marks": "x"}, "a", "b") is None


def test_pushed_at_reads_seconds_or_iso_and_refuses_anything_else() -> None:
    assert pushed_at({}) is None
    assert pushed_at({"ATLAS_PUSHED_AT": "1700000000.5"}) == 1700000000.5
    assert pushed_at({"ATLAS_PUSHED_AT": "2023-11-14T22:13:20Z"}) == 1700000000.0
    with pytest.raises(AtlasError, match="ATLAS_PUSHED_AT='yesterday' is not a time"):
        pushed_at({"ATLAS_PUSHED_AT": "yesterday"})
    assert iso_utc("2023-11-14T22:13:20") == 1700000000.0  # ansible-runner's `created`: UTC without a zone
    assert iso_utc("not a time") is None and iso_utc(None) is None


def _clusters(tmp_path: Path) -> Path:
    clusters = tmp_path / "clusters"
    shutil.copytree(CLUSTERS_DIR / "local", clusters / "local")
    return clusters


def _record_folder(tmp_path: Path, **extra) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    write_json_atomic(
        src / "run.json",
        {
            "schema_version": 1,
            "run_id": "r1",
            "env": "local",
            "hosts": ["h1"],
            "exit": {"status": "success", "code": 0, "signal": None, "signals_forwarded": []},
            "start_time": 1000.0,
            "end_time": 1100.0,
            "scheduler": {"kind": "local", "start_time": 1000.0},
            **extra,
        },
    )
    lines = [
        {"event": "run_start", "time": 1002.0, "iteration": 0},
        {"event": "warmup", "time": 1010.0, "warmup_s": 9.5, "setup_s": 1.5},
        {"event": "checkpoint", "time": 1050.0, "seconds": 0.25},
        {"event": "train", "time": 1090.0, "iteration": 10, "images_per_s": 5.0},
        {"event": "run_stop", "time": 1091.0, "status": "success"},
    ]
    (src / "train.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    return src


def _fetch(src: Path):
    def fetch(into: Path) -> dict:
        for name in ("run.json", "train.jsonl"):
            shutil.copy2(src / name, into / name)
        return {"submit_time": 990.0}

    return fetch


def test_collection_writes_the_timeline_with_the_jobs_and_the_kinds_marks(tmp_path: Path) -> None:
    env = load_env("local", _clusters(tmp_path))
    seen = []

    def marks(facts: dict) -> dict:
        seen.append(facts)
        return {"submitted": mark(990.0, "bench-host", 0.001), "accepted": mark(990.5, "bench-host", 0.001)}

    placed = place_run(tmp_path / "results", environment_facts(env), "r1", _fetch(_record_folder(tmp_path)), marks)
    assert placed.problems == () and placed.warnings == ()
    assert seen == [{"submit_time": 990.0}]  # called once, with what fetch returned
    timeline = json.loads((placed.path / "run.json").read_text())["timeline"]
    marks_got = {k: v["time"] for k, v in timeline["marks"].items()}
    assert marks_got["recorder_start"] == 1000.0 and marks_got["workload_start"] == 1000.5
    assert marks_got["first_iter"] == 1010.0 and marks_got["last_iter"] == 1090.0 and marks_got["exit"] == 1100.0
    assert timeline["checkpoint_s"] == 0.25
    got = phase_seconds(timeline)
    assert got["warmup"] == 9.5 and got["train"] == 80.0 and got["finish"] == 10.0 and got["deliver"] == 0.5
    assert got["collect"] > 0 and got["queue"] is None and got["launch"] is None  # no granted mark given


def test_the_platforms_marks_failing_loses_no_run(tmp_path: Path) -> None:
    env = load_env("local", _clusters(tmp_path))

    def marks(facts: dict) -> dict:
        raise AtlasError("sacct is not answering")

    placed = place_run(tmp_path / "results", environment_facts(env), "r1", _fetch(_record_folder(tmp_path)), marks)
    assert placed.new and len(placed.warnings) == 1 and "sacct is not answering" in placed.warnings[0]
    timeline = json.loads((placed.path / "run.json").read_text())["timeline"]
    by = {p["phase"]: p for p in timeline["phases"]}
    assert by["deliver"]["seconds"] is None and "sacct is not answering" in by["deliver"]["reason"]
    assert by["train"]["seconds"] == 80.0  # the job's own marks are still there


def test_an_imported_record_has_every_phase_null_with_the_reason(tmp_path: Path) -> None:
    env = load_env("local", _clusters(tmp_path))
    folder = _record_folder(
        tmp_path,
        **{"import": {"by": "bench import", "sources": [{"file": "a", "format": "sar"}], "clock": "UTC"}},
        facts_unknown=["hosts"],
    )
    placed = place_run(tmp_path / "results", environment_facts(env), "r1", _fetch(folder))
    timeline = json.loads((placed.path / "run.json").read_text())["timeline"]
    assert {p["reason"] for p in timeline["phases"]} == {IMPORTED}
    assert set(phase_seconds(timeline).values()) == {None}


def test_a_kind_without_a_submitted_mark_gets_the_submit_time_the_job_was_started_with(tmp_path: Path) -> None:
    env = load_env("local", _clusters(tmp_path))
    folder = _record_folder(tmp_path, scheduler={"kind": "kubernetes", "submit_time": 995.0, "start_time": 1000.0})
    placed = place_run(tmp_path / "results", environment_facts(env), "r1", _fetch(folder), lambda facts: {})
    timeline = json.loads((placed.path / "run.json").read_text())["timeline"]
    assert timeline["marks"]["submitted"] == {"time": 995.0, "source": "bench-host", "resolution_s": 0.001}


def test_bench_check_names_clocks_that_disagree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench.cli import main

    env = load_env("local", _clusters(tmp_path))

    def marks(facts: dict) -> dict:  # Slurm's Start 3 s before its Submit: beyond its 1 s resolution
        return {"accepted": mark(995.0, "slurmctld", 1.0), "granted": mark(992.0, "slurmctld", 1.0)}

    place_run(tmp_path / "results", environment_facts(env), "r1", _fetch(_record_folder(tmp_path)), marks)
    assert main(["check", str(tmp_path / "results")]) == 1
    out = capsys.readouterr().out
    assert "timeline: phase queue ends 3.000 s before it starts (clocks slurmctld" in out
