"""`bench check` checks each environment's results/<env>/noise.json (issue 37): a damaged
file (a floor edited apart from its CV, one that does not parse) or a stale one (repeated
runs it did not count) is one line with the command that fixes it, and exit 1; the file
`bench noise` just wrote passes. Synthetic records, the real commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cli import main
from tests.bench.commands.test_noise import history


def _check(results: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = main(["check", str(results)])
    return code, [x for x in capsys.readouterr().out.splitlines() if "noise.json" in x]


def test_check_names_a_damaged_or_stale_noise_file_with_its_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    history(results)  # local: 3 commits x 3 runs
    assert main(["noise", "--env", "local", "--results", str(results)]) == 0
    capsys.readouterr()
    assert _check(results, capsys) == (0, [])  # sound and current
    path = results / "local" / "noise.json"
    sound = path.read_text()
    fix = "run `bench noise --env local` to measure it again"

    data = json.loads(sound)
    data["experiments"]["smoke"]["metrics"]["images_per_s"]["floor"] = 0.5  # no longer 1.96 x its cv
    path.write_text(json.dumps(data))
    code, lines = _check(results, capsys)
    assert code == 1 and len(lines) == 1, lines
    assert lines[0].startswith(f"{path} is damaged (experiments.smoke.metrics.images_per_s.floor is 0.5, not 1.96 × ")
    assert lines[0].endswith(fix)

    path.write_text(sound[:-20])  # cut short
    code, lines = _check(results, capsys)
    assert code == 1 and len(lines) == 1 and f"{path} is damaged (" in lines[0] and lines[0].endswith(fix), lines

    path.write_text(sound)
    history(results, commits=["4" * 40], per=3, start=100)  # a new commit's repeated runs
    code, lines = _check(results, capsys)
    assert code == 1 and lines == [
        f"{path} is stale (smoke: made from 9 runs of 3 commit(s); the history now has 12 runs of 4): {fix}"
    ]
    assert main(["noise", "--env", "local", "--results", str(results)]) == 0  # the fix the line names
    capsys.readouterr()
    assert _check(results, capsys) == (0, [])
