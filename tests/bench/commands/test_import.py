"""`bench import`'s own arguments: listed in the workflow, formats per file, checked options."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.cli import build_parser
from tests.bench.importers.conftest import SAMPLES, bench, one_error_line  # noqa: F401 (bench: fixture)


def test_listed_after_collect_in_help() -> None:
    text = build_parser().format_help()
    names = [line.split()[0] for line in text.splitlines() if line.startswith("    ") and line[4] != " "]
    assert names.index("collect") + 1 == names.index("import") < names.index("check") < names.index("compare")


@pytest.mark.parametrize(
    "args, words",
    [
        ([str(SAMPLES / "sar-u-r-12h.txt")], "no format; pass --format"),
        (["--format", "sar", "--gpus", "a,b", str(SAMPLES / "sar-u-r-12h.txt")], "--gpus 'a,b'"),
        (["--format", "sar", "--date", "14/03/2024", str(SAMPLES / "sar-u-r-12h.txt")], "--date '14/03/2024'"),
        (
            ["--format", "sar", "--timezone", "Mars/Olympus", str(SAMPLES / "sar-u-r-12h.txt")],
            "--timezone 'Mars/Olympus'",
        ),
        (["--format", "sar", "--interval", "0", str(SAMPLES / "sar-u-r-12h.txt")], "--interval 0"),
        (["--format", "sar", "--commit", "HEAD", str(SAMPLES / "sar-u-r-12h.txt")], "--commit 'HEAD'"),
    ],
)
def test_bad_options_are_one_line(tmp_path: Path, bench, args: list[str], words: str) -> None:
    base = ["import", "--env", "e", "--results", str(tmp_path / "res")]
    if "--run-id" not in args:
        base += ["--run-id", "r"]
    code, _, err = bench(*base, *args)
    assert code == 2
    one_error_line(err, words)
    assert not (tmp_path / "res").exists()


def test_per_file_formats(tmp_path: Path, bench) -> None:
    code, out, err = bench(
        "import",
        "--env",
        "e",
        "--run-id",
        "r",
        "--results",
        tmp_path / "res",
        f"sar:{SAMPLES / 'sar-u-r-12h.txt'}",
        f"nvidia-smi:{SAMPLES / 'nvidia-smi-units.csv'}",
    )
    assert code == 0, err
    assert "sar-u-r-12h.txt (sar)" in out and "nvidia-smi-units.csv (nvidia-smi)" in out


@pytest.mark.parametrize("flag, value, what", [("--run-id", "../escape", "run id"), ("--env", "a/b", "environment")])
def test_names_follow_the_one_name_rule(tmp_path: Path, bench, capsys, flag: str, value: str, what: str) -> None:
    """--env and --run-id name folders: bench/names.py's rule, as for every other command."""
    args = {"--env": "e", "--run-id": "r", flag: value}
    argv = [x for kv in args.items() for x in kv] + ["--results", tmp_path / "res", "--format", "sar"]
    with pytest.raises(SystemExit) as exit_:  # argparse refuses it: usage, then one error line
        bench("import", *argv, SAMPLES / "sar-u-r-12h.txt")
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith(f"bench import: error: argument {flag}: {what} {value!r} is not")
    assert not (tmp_path / "res").exists()


def test_placed_as_collect_places_a_run(tmp_path: Path, bench) -> None:
    """records.place.place_run: the environment's facts frozen in, priced when clusters/ENV defines it."""
    import json

    sample = SAMPLES / "sar-u-r-12h.txt"
    for env in ("satori", "study"):
        code, _, err = bench("import", "--env", env, "--run-id", "r", "--results", tmp_path, "--format", "sar", sample)
        assert code == 0, err
    satori = json.loads((tmp_path / "satori" / "r" / "run.json").read_text())["environment"]
    assert satori["kind"] == "slurm" and satori["cost"]["model"] == "onprem"
    assert satori["price_source"].startswith("clusters/satori/env.yaml (sha256 ")
    study = json.loads((tmp_path / "study" / "r" / "run.json").read_text())["environment"]
    assert study["kind"] == "imported" and study["cost"] is None and study["price_source"] is None
    assert bench("check", tmp_path)[0] == 0
    code, _, err = bench("import", "--env", "study", "--run-id", "r", "--results", tmp_path, "--format", "sar", sample)
    assert code == 2 and "records are immutable" in err
    # no staging folder left behind; beside the run, its run index entry (written once, at placement)
    assert sorted(p.name for p in (tmp_path / "study").iterdir()) == [".index.jsonl", "r"]
    assert [json.loads(line)["run_id"] for line in (tmp_path / "study" / ".index.jsonl").open()] == ["r"]
