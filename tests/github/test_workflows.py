"""The GitHub workflows: valid, linted, minimal permissions, and every step a real command.

"Every step is a make or bench command": each `run:` line is parsed, `bench X` must
answer `--help` (with every flag the workflow passes), and `make Y` must be a target.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ALLOWED_ACTIONS = {"actions/checkout", "actions/setup-python", "actions/upload-artifact", "actions/download-artifact"}
EXPECTED = {"ci.yml", "deploy.yml", "collect.yml", "pr-bench.yml", "pr-comment.yml"}


def load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text())
    # YAML 1.1 reads the key `on` as True.
    data["on"] = data.pop(True, data.get("on"))
    return data


def steps(path: Path):
    for job_name, job in load(path)["jobs"].items():
        for step in job.get("steps", []):
            yield job_name, step


def test_the_expected_workflows_exist():
    assert EXPECTED <= {p.name for p in WORKFLOWS}


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_parses_and_declares_minimal_permissions(path: Path):
    wf = load(path)
    assert wf["on"], f"{path.name}: no trigger"
    assert wf.get("permissions") == {"contents": "read"}, f"{path.name}: top-level permissions must be read-only"
    for name, job in wf["jobs"].items():
        perms = job.get("permissions", wf["permissions"])
        assert isinstance(perms, dict), f"{path.name}:{name}: permissions must be a mapping, not {perms!r}"
        assert set(perms.values()) <= {"read", "write", "none"}
        assert "pull_request_target" not in wf["on"], f"{path.name}: pull_request_target runs with secrets"


def test_actionlint_passes():
    binary = Path(sys.executable).parent / "actionlint"
    assert binary.is_file(), "actionlint is missing: `make setup` installs it (dev extra)"
    p = subprocess.run([str(binary), *map(str, WORKFLOWS)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path):
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text(
        "on: push\njobs:\n  x:\n    runs-on: ubuntu-24.04\n    steps:\n"
        "      - run: echo ${{ github.event.nope.nope }}\n      - uses: actions/checkout\n"
    )
    binary = Path(sys.executable).parent / "actionlint"
    p = subprocess.run([str(binary), str(broken)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0


def test_only_known_actions_and_secrets_never_inline():
    for path in WORKFLOWS:
        for job, step in steps(path):
            if "uses" in step:
                assert step["uses"].split("@")[0] in ALLOWED_ACTIONS, f"{path.name}:{job}: {step['uses']}"
            if "run" in step:
                assert "secrets." not in step["run"], f"{path.name}:{job}: pass secrets through env:, not inline"
                assert "${{" not in step["run"], f"{path.name}:{job}: use env: for expressions (no injection)"


def test_fork_comment_job_never_checks_out_pr_code():
    wf = load(ROOT / ".github/workflows/pr-comment.yml")
    assert set(wf["on"]) == {"workflow_run"}
    for _job, step in steps(ROOT / ".github/workflows/pr-comment.yml"):
        if step.get("uses", "").startswith("actions/checkout"):
            assert "ref" not in (step.get("with") or {}), "the workflow_run job must check out the default branch"
    bench = load(ROOT / ".github/workflows/pr-bench.yml")
    text = (ROOT / ".github/workflows/pr-bench.yml").read_text()
    assert set(re.findall(r"secrets\.(\w+)", text)) <= {"GITHUB_TOKEN"}, "pr-bench must need no secret"
    assert set(bench["on"]) == {"pull_request"}
    for job in bench["jobs"].values():  # the job that runs the PR's code holds no write token
        assert "write" not in str(job.get("permissions", {})) and "write" not in str(bench.get("permissions", {}))
    assert "head_repository" not in (ROOT / ".github/workflows/pr-comment.yml").read_text()  # every PR, from here


def _commands(script: str) -> list[list[str]]:
    out = []
    for line in script.replace("\\\n", " ").splitlines():
        for part in re.split(r"&&|\|\||;|\|", line):
            words = shlex.split(part, comments=True)
            if words:
                out.append(words)
    return out


@cache
def _bench_help(*words: str) -> str:
    p = subprocess.run(
        [sys.executable, "-m", "bench", *words, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, f"`bench {' '.join(words)} --help` failed: {p.stderr}"
    return p.stdout


@cache
def _make_target_exists(target: str) -> bool:
    return subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, timeout=60).returncode == 0


def all_commands():
    for path in WORKFLOWS:
        for job, step in steps(path):
            if "run" in step:
                for words in _commands(step["run"]):
                    yield f"{path.name}:{job}", words


def test_every_step_is_a_make_or_bench_command_that_exists():
    seen = {"make": 0, "bench": 0}
    for where, words in all_commands():
        tool = words[0]
        if tool == "make":
            seen["make"] += 1
            targets = [w for w in words[1:] if "=" not in w and not w.startswith("-")]
            assert targets, f"{where}: bare `make`"
            for target in targets:
                assert _make_target_exists(target), f"{where}: no make target {target!r}"
        elif tool in ("bench", ".venv/bin/bench"):
            seen["bench"] += 1
            sub = [words[1]]
            text = _bench_help(*sub)
            for flag in (w.split("=")[0] for w in words if w.startswith("--")):
                assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text), (
                    f"{where}: `bench {' '.join(sub)}` has no option {flag}"
                )
        else:
            pytest.fail(f"{where}: `{' '.join(words)}` is neither a make nor a bench command")
    assert seen["make"] >= 5 and seen["bench"] >= 8


def test_the_checker_itself_rejects_unknown_commands_and_flags():
    assert _commands("make a && .venv/bin/bench x --y 'q r'  # note") == [
        ["make", "a"],
        [".venv/bin/bench", "x", "--y", "q r"],
    ]
    assert not _make_target_exists("no-such-target-here")
    assert not re.search(r"(?<![\w-])--no-such-flag(?![\w-])", _bench_help("publish"))


def test_actions_pinned_by_commit_and_tokens_not_kept():
    """Every action by a 40-hex commit; every checkout drops its token except the one job
    that pushes (collect.yml report); cluster jobs clean their credentials in always()."""
    for path in WORKFLOWS:
        wf = load(path)
        for job_name, job in wf["jobs"].items():
            for step in job.get("steps", []):
                uses = step.get("uses")
                if uses:
                    assert re.fullmatch(r"[\w-]+/[\w-]+@[0-9a-f]{40}", uses), f"{path.name}:{job_name}: {uses}"
                if uses and uses.startswith("actions/checkout@") and (path.name, job_name) != ("collect.yml", "report"):
                    assert step.get("with", {}).get("persist-credentials") is False, f"{path.name}:{job_name}"
            env_steps = [s for s in job.get("steps", []) if "make ci-setup" in str(s.get("run", ""))]
            if env_steps:
                assert job.get("environment"), f"{path.name}:{job_name}: cluster secrets belong to an environment"
                creds = env_steps[0]["env"]
                assert all("matrix.ci_setup ==" in v for k, v in creds.items() if k != "SSH_USER")
                last = job["steps"][-1]
                assert last.get("if") == "always()" and last.get("run") == "make ci-clean"


def test_zizmor_offline_finds_nothing_above_low():
    binary = Path(sys.executable).parent / "zizmor"
    assert binary.is_file(), "zizmor is missing: `make setup` installs it (dev extra)"
    p = subprocess.run(
        [str(binary), "--offline", "--min-severity", "medium", ".github/workflows"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr
