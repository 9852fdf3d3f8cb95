"""`bench explain` on real runs of the workload (issue 37, item 5): changes made for real,
in commits of a throw-away copy of the project, run on this machine's CPU and recorded,
collected and explained through the CLI.

A git repository holds a copy of bench/, workflows/ and clusters/ (its base commit); each
case is one commit on top of it that really changes something: one G block slower, a
pause before the first iteration, a pause after the last, a bigger batch in the smoke
preset, and a control that changes only the workload's README. Each commit's runs are
made from its own checkout (`git worktree`) by the real recorder (`bench record`) around
the real workload, collected by `bench collect`; `bench explain` must name the phase
that moved and the right top cause (or nothing, for the control), and the PR comment
must name the slowed block. The score table is printed.

CPU is the budget (issue 32 halves the suite's time): the explanation's gate (a total
Mann-Whitney p <= 0.01) is passed by 3 runs against 12 even where one head run is not
slower than every base run (4 / C(15, 3) = 0.0088: a machine shared with others has such
outliers), so the 12 base runs are shared by every case and each case adds 3; the workload runs through a fork
server that has imported torch once (tests/warm_workload.py), each run is 5 short
iterations (one D step each) with a forced 1-iteration profile window, and each run is
collected in this process right after it ends (as `bench run` collects; the collect phase
is then alike in every run). The injected pauses cost no CPU. The whole module cost 97 s
of CPU (user + system) on a 2-core machine that others kept busy (load average 4).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.cli import main
from tests import warm_workload
from tests.gitrepo import ENV, git

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
BASE_RUNS, CASE_RUNS = 12, 3  # 3 vs 12: an exact Mann-Whitney p of 0.009 even with one run out of order
SETTINGS = (
    "train.max_iters=5",
    "train.log_every=1",
    "train.checkpoint_every=0",
    "train.sample_grid=false",
    "runtime.device=cpu",
    "runtime.progress=lines",
    "train.profile_iters=1",
    "train.d_steps=1",
)
MODELS = "workflows/biggan/models.py"
TRAIN = "workflows/biggan/train.py"
SMOKE = "workflows/biggan/experiments/smoke.yaml"
README = "workflows/biggan/README.md"


def _edit(path: str, old: str, new: str) -> Callable[[Path], None]:
    def edit(tree: Path) -> None:
        text = (tree / path).read_text()
        assert text.count(old) == 1, f"{path} no longer holds the line this case edits: {old!r}"
        (tree / path).write_text(text.replace(old, new))

    return edit


SLOW_BLOCK = (
    "class SlowGBlock(GBlock):\n"
    '    """A G block whose forward waits 0.4 s first (the change under test)."""\n\n'
    "    def forward(self, *args: torch.Tensor) -> torch.Tensor:\n"
    "        import time\n\n"
    "        time.sleep(0.4)\n"
    "        return super().forward(*args)\n\n\n"
)


def _pause_before(line: str) -> Callable[[Path], None]:
    """train.py waits 5 s just before `line` (indented as it is)."""
    indent = line[: len(line) - len(line.lstrip())]
    return _edit(TRAIN, line + "\n", f"{indent}time.sleep(5.0)\n{line}\n")


def _slower_block(tree: Path) -> None:
    """G's second block (`G.blocks.1`) becomes a block that waits before its work."""
    built = "                blocks.append(GBlock("
    _edit(MODELS, built, built.replace("GBlock(", "(SlowGBlock if len(blocks) == 1 else GBlock)("))(tree)
    text = (tree / MODELS).read_text()
    at = text.index("class Generator")
    (tree / MODELS).write_text(text[:at] + SLOW_BLOCK + text[at:])


@dataclass(frozen=True)
class Case:
    """One commit on top of the base: the edit, and what `bench explain` must name."""

    name: str
    edit: Callable[[Path], None]
    phase: str | None
    cause: str | None
    files: tuple[str, ...]


CASES = (
    Case("slower G block (G.blocks.1)", _slower_block, "train", "code", (MODELS,)),
    Case(
        "pause before the first iteration",
        _pause_before("        trainer = _prepare(c, run_dir, experiment)"),
        "warmup",
        "code",
        (TRAIN,),
    ),  # fmt: skip
    Case(
        "pause after the last iteration",
        _pause_before("    if saved_at != trainer.iteration:"),
        "finish",
        "code",
        (TRAIN,),
    ),  # fmt: skip
    Case(
        "bigger batch (smoke preset)",
        _edit(SMOKE, "  batch_size: 8\n", "  batch_size: 128\n"),
        "train",
        "config",
        (SMOKE,),
    ),  # fmt: skip
    Case(
        "control: README only", _edit(README, "BigGAN training\n", "BigGAN training (edited)\n"), None, None, (README,)
    ),  # fmt: skip
)


@dataclass(frozen=True)
class Runs:
    repo: Path  # the clone at the base commit; results/ holds every run
    base: str
    heads: dict[str, str]  # case name -> its commit


def _copy_project(into: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("bench", "workflows", "clusters"):
        shutil.copytree(REPO / part, into / part, ignore=ignore)


@pytest.fixture(scope="module")
def warm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The fork server every run of this module goes through (its socket's path)."""
    sock = tmp_path_factory.mktemp("warm") / "workload.sock"
    proc = subprocess.Popen(
        [sys.executable, warm_workload.__file__, "serve", str(sock)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield sock
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _record(checkout: Path, runs: Path, run_id: str, sock: Path) -> None:
    """One real run of the checkout's workload under the real recorder, submitted as the
    local target submits (submit.json), so `bench collect` takes it."""
    run_dir = runs / "local" / run_id
    args = ["--experiment", "smoke", "--run-dir", str(run_dir)]
    for item in SETTINGS:
        args += ["--set", item]
    cmd = [sys.executable, "-m", "bench", "record", "--run-dir", str(run_dir), "--env", "local", "--"]
    submitted = time.time()
    proc = subprocess.run(cmd + warm_workload.command(sock, *args), cwd=checkout, env=ENV, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    submit = {"run_id": run_id, "pid": 999999, "submit_time": submitted, "spawned_time": submitted}
    (run_dir / "submit.json").write_text(json.dumps(submit))


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory: pytest.TempPathFactory, warm_server: Path) -> Runs:
    """The base commit's 12 runs and 3 of each case's commit, interleaved in time (a drift of
    the machine's load falls on every group alike), collected into the clone's results/."""
    root = tmp_path_factory.mktemp("explain-real")
    repo, runs = root / "repo", root / "runs"
    repo.mkdir()
    _copy_project(repo)
    git(repo, "init", "--quiet", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    checkouts, heads = {}, {}
    for i, case in enumerate(CASES):
        tree = root / f"case{i}"
        git(repo, "worktree", "add", "--quiet", "-b", f"case{i}", str(tree), base)
        case.edit(tree)
        git(tree, "commit", "--quiet", "-am", case.name)
        heads[case.name] = git(tree, "rev-parse", "HEAD").strip()
        checkouts[case.name] = tree
    every = BASE_RUNS // CASE_RUNS
    order = [(repo, f"base{k}") for k in range(BASE_RUNS)]
    for k in range(0, BASE_RUNS, every):  # each case's runs spread over the base runs' time
        at = order.index((repo, f"base{k}")) + 1
        order[at:at] = [(checkouts[c.name], f"case{i}-{k // every}") for i, c in enumerate(CASES)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATLAS_RUNS_DIR", str(runs))
        for checkout, run_id in order:
            _record(checkout, runs, run_id, warm_server)
            # collected at once, as `bench run` does: the collect phase is then the same in every run
            assert main(["collect", "--env", "local", "--results", str(repo / "results"), "--run", run_id]) == 0
    return Runs(repo, base, heads)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """A bench command through the CLI's entry point in this process (bench's libraries are
    then imported once for every explanation); its stdout."""
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def _explained(runs: Runs, case: Case, capsys: pytest.CaptureFixture[str]) -> dict:
    return json.loads(cli(capsys, "explain", "--env", "local", runs.base, runs.heads[case.name], "--json"))


def score_table(rows: list[tuple[Case, dict]]) -> str:
    """case | phase expected / named | top cause expected / named, with the score."""
    lines = ["| case | phase expected | phase named | cause expected | cause named |", "|---|---|---|---|---|"]
    phases = causes = 0
    changed = [case for case, _ in rows if case.cause is not None]
    for case, found in rows:
        top = found["causes"][0]["kind"] if found["causes"] and found["phase"] else None
        phases += found["phase"] == case.phase
        causes += case.cause is not None and top == case.cause
        lines.append(f"| {case.name} | {case.phase} | {found['phase']} | {case.cause} | {top} |")
    lines.append(f"phase {phases}/{len(rows)}, top cause {causes}/{len(changed)} (real runs on CPU)")
    lines += [f"- {case.name}: {found['sentence']}" for case, found in rows]  # as bench explain says it
    return "\n".join(lines)


def test_explain_names_each_real_change(
    real_runs: Runs, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(real_runs.repo)  # its results/ and its `git diff`
    rows = [(case, _explained(real_runs, case, capsys)) for case in CASES]
    with capsys.disabled():
        print("\n" + score_table(rows))
    wrong_top = []
    for case, found in rows:
        assert found["runs"] == [BASE_RUNS, CASE_RUNS], case.name
        assert found["files"] == list(case.files), case.name
        assert found["phase"] == case.phase, (case.name, found["sentence"], found["phases"])
        if case.phase is None:  # the control: no verdict, and the sentence says so
            assert not found["total"]["clear"] or found["total"]["p"] > 0.01, found
            assert found["sentence"].startswith("no phase moved clearly"), found["sentence"]
            continue
        kinds = [c["kind"] for c in found["causes"]]
        assert case.cause in kinds, (case.name, found["causes"])
        if kinds[0] != case.cause:
            wrong_top.append((case.name, found["causes"]))
    # The score allows one top cause wrong in ten. On a machine shared with others, a
    # change of their load during a case's runs is a real cause that outranks the code, so
    # one case may name it first (never another kind); the change is still among the causes.
    assert len(wrong_top) <= 1, wrong_top
    assert all(causes[0]["kind"] == "host load" for _, causes in wrong_top), wrong_top
    block = dict(rows)[CASES[0]]
    assert block["module"] == "G.blocks.1", block["sentence"]
    assert "`G.blocks.1` (forward" in block["sentence"] and f"code changed: {MODELS}" in block["sentence"]
    batch = dict(rows)[CASES[3]]
    assert batch["causes"][0]["text"] == "train.batch_size 8 → 128", batch["causes"]


def test_the_pr_comment_names_the_slowed_block(
    real_runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(real_runs.repo)
    out = tmp_path / "comment.md"
    head = real_runs.heads[CASES[0].name]
    cli(capsys, "comment", "--pr", "1", "--results", "results", "--head", head, "--base", real_runs.base,
        "--no-post", "--out", str(out))  # fmt: skip
    (line,) = [x for x in out.read_text().splitlines() if x.startswith("**Explained**")]
    assert line.startswith("**Explained** (`bench explain`): train phase +") and "`G.blocks.1` (forward" in line
    assert line.endswith(f"code changed: {MODELS}."), line
