"""Nothing from outside the results tree (bench.records.inside_tree), on real git
repositories and real symbolic links: archive commits only files a run folder owns;
collect, import and restore never write through a link out of the tree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bench.cli import main
from bench.errors import AtlasError
from bench.gitops.results_branch import archive, restore
from tests.gitrepo import git
from tests.synthetic_records import RunSpec, write_run

SECRET = "the contents of a private notes file\n"


def repo(tmp_path: Path) -> Path:
    work = tmp_path / "repo"
    git(tmp_path, "init", "--quiet", "-b", "main", str(work))
    (work / "code.py").write_text("print(1)\n")
    git(work, "add", "code.py")
    git(work, "commit", "--quiet", "-m", "code")
    return work


def run(results: Path, run_id: str, env: str = "moc") -> Path:
    return write_run(results, RunSpec(env=env, run_id=run_id, sha="1" * 40, gpus=1, duration_s=120))


def branch_text(work: Path) -> str:
    """Every blob on the results branch, decompressed where packed, as one text."""
    names = git(work, "ls-tree", "-r", "--name-only", "results").split()
    out = []
    for name in names:
        blob = subprocess.run(["git", "show", f"results:{name}"], cwd=work, capture_output=True).stdout
        if name.endswith(".xz"):
            blob = subprocess.run(["xz", "-dc"], input=blob, capture_output=True).stdout
        out.append(blob.decode(errors="replace"))
    return "\n".join(out)


def test_a_symlinked_run_folder_is_not_followed_by_archive(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    work = repo(tmp_path)
    results = tmp_path / "results"
    run(results, "r1")
    elsewhere = run(tmp_path / "elsewhere", "r2")  # a real record beside other data
    (elsewhere / "notes.txt").write_text(SECRET)
    (results / "moc" / "r2").symlink_to(elsewhere, target_is_directory=True)
    (tmp_path / "other-env").mkdir()
    (results / "linked-env").symlink_to(tmp_path / "elsewhere" / "moc", target_is_directory=True)

    code = main(["archive", "--local", "--results", str(results), "--repo-dir", str(work)])
    out = capsys.readouterr().out
    assert code == 0
    names = git(work, "ls-tree", "-r", "--name-only", "results").split()
    assert "index/moc/r1.json" in names
    assert not [n for n in names if "r2" in n or "linked-env" in n], names
    assert "notes" not in " ".join(names) and SECRET.strip() not in branch_text(work)
    assert "warning: not taken: moc/r2:" in out and "is a symbolic link" in out
    assert "warning: not taken: linked-env/r2:" in out


def test_files_a_run_folder_does_not_own_are_not_committed(tmp_path: Path):
    work = repo(tmp_path)
    results = tmp_path / "results"
    run_dir = run(results, "r1")
    outside = tmp_path / "notes.txt"
    outside.write_text(SECRET)
    (run_dir / "job.log").symlink_to(outside)  # a link to a file
    os.link(outside, run_dir / "extra.txt")  # a second name of a file that lives elsewhere
    os.mkfifo(run_dir / "pipe.csv")  # would block a plain read

    res = archive(work, results, remote=None)
    names = git(work, "ls-tree", "-r", "--name-only", "results").split()
    assert res.status == "committed" and "runs/moc/r1/run.json" in names
    assert not [n for n in names if n.endswith(("job.log", "extra.txt", "pipe.csv"))], names
    assert SECRET.strip() not in branch_text(work)
    whys = " | ".join(res.skipped)
    assert "moc/r1/job.log: a symbolic link" in whys and "moc/r1/extra.txt: has another hard link" in whys
    assert "moc/r1/pipe.csv: a FIFO" in whys


def test_restore_never_writes_through_a_linked_environment_folder(tmp_path: Path):
    work = repo(tmp_path)
    results = tmp_path / "results"
    run(results, "r1")
    archive(work, results, remote=None)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    target = tmp_path / "target"
    target.mkdir()
    (fresh / "moc").symlink_to(target, target_is_directory=True)
    with pytest.raises(AtlasError, match="is a symbolic link"):
        restore(work, "results", fresh)
    assert list(target.iterdir()) == []

    (fresh / "moc").unlink()
    assert restore(work, "results", fresh) == ["moc/r1"]
    restored = fresh / "moc" / "r1"
    assert not restored.is_symlink() and json.loads((restored / "run.json").read_text())["run_id"] == "r1"


def test_a_restored_file_is_written_only_after_its_sha256_matched(tmp_path: Path):
    work = repo(tmp_path)
    results = tmp_path / "results"
    run(results, "r1")
    archive(work, results, remote=None)
    entry = json.loads(git(work, "show", "results:index/moc/r1.json"))
    entry["files"]["run.json"]["sha256"] = "0" * 64
    blob = (
        subprocess.run(
            ["git", "hash-object", "-w", "--stdin"], cwd=work, input=json.dumps(entry).encode(), capture_output=True
        )
        .stdout.decode()
        .strip()
    )
    tree_line = f"100644 blob {blob}\tindex/moc/r1.json\n"
    index = tmp_path / "idx"
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    subprocess.run(["git", "read-tree", "results"], cwd=work, env=env, check=True)
    subprocess.run(["git", "update-index", "--index-info"], cwd=work, env=env, input=tree_line.encode(), check=True)
    tree = subprocess.run(["git", "write-tree"], cwd=work, env=env, capture_output=True).stdout.decode().strip()
    commit = git(work, "commit-tree", tree, "-p", "results", "-m", "tampered").strip()
    fresh = tmp_path / "fresh"
    with pytest.raises(AtlasError, match="does not match its sha256"):
        restore(work, commit, fresh)
    assert not (fresh / "moc" / "r1").exists() and [p.name for p in (fresh / "moc").iterdir()] == []


@pytest.mark.parametrize("command", ["import", "collect"])
def test_collect_and_import_never_write_through_a_linked_environment_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
):
    results = tmp_path / "results"
    results.mkdir()
    target = tmp_path / "target"
    target.mkdir()
    (results / "local").symlink_to(target, target_is_directory=True)
    if command == "import":
        data = tmp_path / "cpu.csv"
        data.write_text("t,cpu\n0,10\n1,20\n")
        (tmp_path / "MAP.yaml").write_text("time: {column: t, format: unix}\ncolumns: {cpu: host_cpu_percent}\n")
        argv = ["import", "--map", str(tmp_path / "MAP.yaml"), "--env", "local", "--run-id", "r1"]
        code = main([*argv, "--results", str(results), str(data)])
    else:
        from bench.environments.facts import environment_facts
        from bench.environments.load import load_env
        from bench.records.place import place_run

        def fetch(folder: Path) -> dict:
            src = write_run(tmp_path / "job", RunSpec(env="local", run_id="r1", sha="1" * 40, gpus=0, duration_s=60))
            for f in src.iterdir():
                shutil.copy(f, folder / f.name)
            return {}

        with pytest.raises(AtlasError, match="is a symbolic link") as exc:
            place_run(results, environment_facts(load_env("local")), "r1", fetch)
        code = 2 if "replace the link" in str(exc.value) else 0
    err = capsys.readouterr().err
    assert code == 2 and list(target.iterdir()) == []
    assert "Traceback" not in err
