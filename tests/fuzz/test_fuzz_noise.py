"""Fuzz of results/<env>/noise.json (issue 37), the surface `noise` of
bench.records.surfaces.SURFACES: every field its schema declares gets one hostile value
(test_fuzz_schemas.py's HOSTILE list and strategies, at the byte level) in a file `bench
noise` wrote from a synthetic history, and the file goes through what reads it:

- its reader and the floors a verdict uses (noise_store.read, floors_of), on many examples;
- `bench check`, the PR comment and `bench noise` itself, on a few.

The properties: no exception escapes (a refusal is one line naming the file, damaged or
stale, never a traceback or a control character); no wrong number: the floors used are
either the file's, when it is sound (each floor 1.96 × its CV, finite), or the ones the
history gives, exactly. Derandomized, in-process.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.analysis.noise import NOISE_Z
from bench.analysis.noise_store import Floors, floors_of, noise_path, read
from bench.analysis.regression import pr_family
from bench.analysis.run_index import index_entries
from bench.cli import main
from bench.commands.comment import render_pr_body
from bench.records import surfaces
from tests.bench.commands.test_noise import COMMITS, history
from tests.fuzz.test_fuzz_records import FAST
from tests.fuzz.test_fuzz_schemas import declared_paths, hostile, with_hostile

ENV, EXPERIMENT = "local", "smoke"
METRICS = list(pr_family())


@pytest.fixture(scope="module")
def sound_noise(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], list[dict], Floors]:
    """A results tree of 3 commits x 3 runs, its noise.json as `bench noise` wrote it, the
    history entries and the floors the history alone gives (what a refused file falls back to)."""
    results = tmp_path_factory.mktemp("noise") / "results"
    history(results)
    assert main(["noise", "--env", ENV, "--results", str(results)]) == 0
    data = json.loads(noise_path(results, ENV).read_text())
    entries = index_entries(results, ENV)
    alone = floors_of(None, ENV, EXPERIMENT, entries, METRICS)
    assert alone.floors and read(results, ENV) == (data, "")  # the control: the sound file is read as written
    return results, data, entries, alone


def _write(results: Path, data: dict[str, Any], path: tuple, bad: bytes) -> None:
    noise_path(results, ENV).write_bytes(with_hostile(data, path, bad))


def _one_line(text: str) -> None:
    assert "\n" not in text and "\r" not in text and "\x1b" not in text and "Traceback" not in text, text


@settings(FAST, max_examples=200)
@given(data=st.data())
def test_fuzz_noise_fields_through_the_reader_and_the_floors(sound_noise, data) -> None:
    results, sound, entries, alone = sound_noise
    root = surfaces.schema("noise")
    path = data.draw(st.sampled_from(declared_paths(sound, root, root)), "path")
    _write(results, sound, path, data.draw(hostile, "value"))
    stored, problem = read(results, ENV)
    used = floors_of(results, ENV, EXPERIMENT, entries, METRICS)
    for f in used.floors.values():
        assert math.isfinite(f.cv) and f.cv >= 0 and math.isfinite(f.floor) and f.floor == NOISE_Z * f.cv
    if stored is None:  # refused: named in one line, the history's floors used, exactly
        _one_line(problem)
        assert problem.startswith(
            (f"{noise_path(results, ENV)} is damaged (", f"{noise_path(results, ENV)} is stale (")
        )
        assert used.problem.endswith("stores it again") and used.floors == alone.floors
        return
    assert not surfaces.problems("noise", stored, "noise") and problem == ""
    block = stored["experiments"].get(EXPERIMENT)
    if used.problem or block is None:  # stale (the commits it counted changed), or no block: the history's
        assert used.floors == alone.floors
        return
    for key, f in used.floors.items():  # the file's own numbers, each floor 1.96 x its cv
        m = block["metrics"][key]
        assert f.cv == m["cv"] and abs(m["floor"] - NOISE_Z * m["cv"]) <= 1e-5


@settings(FAST, max_examples=4)
@given(data=st.data())
def test_fuzz_noise_fields_through_check_the_pr_comment_and_bench_noise(sound_noise, capsys, data) -> None:
    results, sound, _, _ = sound_noise
    root = surfaces.schema("noise")
    path = data.draw(st.sampled_from(declared_paths(sound, root, root)), "path")
    _write(results, sound, path, data.draw(hostile, "value"))
    refused = read(results, ENV)[0] is None
    assert main(["check", str(results), "--env", ENV]) == (1 if refused else 0)
    out = capsys.readouterr()
    lines = [x for x in out.out.splitlines() if "noise.json" in x]
    assert len(lines) == int(refused) and "Traceback" not in out.out + out.err
    for line in lines:
        _one_line(line)
        assert line.endswith(f"run `bench noise --env {ENV}` to measure it again")
    body = render_pr_body(results, COMMITS[-1], COMMITS[0])
    assert "\x1b" not in body and ("noise.json is damaged (" in body or "noise.json is stale (" in body) == refused
    assert main(["noise", "--env", ENV, "--results", str(results)]) == 0  # measured again: sound
    capsys.readouterr()
    assert read(results, ENV)[0] is not None
