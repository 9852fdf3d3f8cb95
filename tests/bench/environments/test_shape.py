"""The job's shape: declared in env.yaml, observed in the job, compared per GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.analysis.compare import compare_runs
from bench.analysis.identity import identity_rows, scaling_rows
from bench.cli import main
from bench.environments.shape import check_shape, declared_shape
from bench.in_job.observed_shape import observed_shape
from bench.in_job.scheduler import probe_for
from bench.records.read import find_runs
from bench.records.shape import Shape
from bench.render.tables import shape_note, summary_table
from tests.synthetic_records import RunSpec, write_run

V100 = [{"index": i, "model": "Tesla V100-SXM2-32GB"} for i in range(4)]


def test_observed_shape_comes_from_the_scheduler_and_the_job() -> None:
    cmd = ["python", "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=4", "-m", "workflows.biggan"]
    # A Slurm allocation of 2 nodes, 4 GPUs each (the target passed in its scheduler, whose
    # probe reads the allocation); NVML there shows the whole node.
    allocation = {"SLURM_JOB_NUM_NODES": "2", "SLURM_GPUS_ON_NODE": "4"}
    slurm = observed_shape(V100, cmd, allocation, probe_for("slurm", allocation))
    assert (slurm["nodes"], slurm["gpus_per_node"], slurm["gpus"], slurm["processes_per_node"]) == (2, 4, 8, 4)
    assert slurm["source"] == {"nodes": "SLURM_JOB_NUM_NODES", "gpus_per_node": "SLURM_GPUS_ON_NODE"}
    # A pod sees only its nvidia.com/gpu allocation through NVML; nodes from torchrun's --nnodes.
    pod = observed_shape(V100[:2], ["torchrun", "--nnodes", "3", "--nproc_per_node", "2"], {})
    assert (pod["nodes"], pod["gpus_per_node"], pod["processes_per_node"]) == (3, 2, 2)
    assert pod["source"]["gpus_per_node"].startswith("NVML")
    # CUDA_VISIBLE_DEVICES narrower than what NVML shows: the allocation wins.
    assert observed_shape(V100, ["python"], {"CUDA_VISIBLE_DEVICES": "0"})["gpus_per_node"] == 1
    cpu = observed_shape([], ["python", "-m", "workflows.biggan"], {})
    assert (cpu["nodes"], cpu["gpus_per_node"], cpu["processes_per_node"]) == (1, 0, 1)


def test_declared_shape_and_its_checks() -> None:
    assert declared_shape({"shape": {"nodes": 1, "gpus_per_node": 4, "cpus_per_gpu": 4}}) == Shape(1, 4, 4)
    assert declared_shape({"slurm": {"nodes": 2, "gpus_per_node": 4}}) == Shape(2, 4)
    assert Shape(2, 4).label == "2 nodes × 4 GPUs" and Shape(1, 1).gpus == 1
    errors = check_shape({"shape": {"nodes": 0, "gpus_per_node": "four", "gpu": 1, "memory_gib_per_gpu": -1}}, "e.yaml")
    text = "\n".join(errors)
    assert "shape.nodes must be an integer from 1" in text and "shape.gpus_per_node must be a number of GPUs" in text
    assert "shape.memory_gib_per_gpu must be a finite number > 0" in text and "shape.gpu " not in text
    assert len(errors) == 3  # one line per bad value; the unknown key is the schema's


@pytest.mark.parametrize("kind", ["local", "container", "slurm", "kubernetes", "openshift"])
def test_every_kind_allows_shape_and_data_and_only_their_keys(kind: str) -> None:
    from bench.environments.schema import settings_problems
    from bench.targets import target_class

    good = {
        "kind": kind,
        "shape": {"nodes": 1, "gpus_per_node": 4, "cpus_per_gpu": 4, "memory_gib_per_gpu": 24},
        "data": {"file": "imagenet128.hdf5", "sha256": None, "source": None, "pvc": "atlas-data", "mount": "/data"},
    }
    assert settings_problems(good, kind, target_class(kind).settings_properties) == []
    bad = {**good, "shape": {"nodes": 1, "gpus_per_node": 4, "gpu": 1}, "data": {"file": "x", "ansible_x": "y"}}
    text = "\n".join(settings_problems(bad, kind, target_class(kind).settings_properties))
    assert f"shape: unknown key(s) gpu for kind {kind}" in text and "ansible_x" in text


def test_repository_satori_and_moc_declare_the_same_shape() -> None:
    from bench.environments.load import load_env

    satori, moc = declared_shape(load_env("satori").settings), declared_shape(load_env("moc").settings)
    assert (satori.nodes, satori.gpus_per_node, satori.cpus_per_gpu) == (moc.nodes, moc.gpus_per_node, moc.cpus_per_gpu)
    assert declared_shape(load_env("moc").settings).label == "1 node × 4 GPUs"


def test_validate_warns_when_compared_envs_differ(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, gpus in (("a", 4), ("b", 1)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "env.yaml").write_text(f"kind: local\nshape: {{nodes: 1, gpus_per_node: {gpus}}}\n")
    code = main(["validate", "--clusters", str(tmp_path), "--no-experiments"])
    out = capsys.readouterr().out
    assert code == 0, out  # a warning, not a failure
    assert (
        "warning: environments compared with each other run different shapes (a 1 node × 4 GPUs, "
        "b 1 node × 1 GPU)" in out
    )
    (tmp_path / "b" / "env.yaml").write_text("kind: local\nshape: {nodes: 1, gpus_per_node: 4}\n")
    main(["validate", "--clusters", str(tmp_path), "--no-experiments"])
    assert "warning" not in capsys.readouterr().out


def test_different_shapes_compare_per_gpu_and_show_the_difference(tmp_path: Path) -> None:
    for i in range(3):
        write_run(tmp_path, RunSpec("satori", f"s{i}", seed=i, gpus=4, images_per_s=400.0, start=1.79e9 + i * 100))
        write_run(tmp_path, RunSpec("moc", f"m{i}", seed=9 + i, gpus=1, images_per_s=100.0, start=1.79e9 + i * 100))
    runs = find_runs(tmp_path)
    result = compare_runs(runs)
    raw = {e: result.summaries[e].median["images_per_s"] for e in result.envs}
    per_gpu = {e: result.summaries[e].median["images_per_s_per_gpu"] for e in result.envs}
    assert raw["satori"] == pytest.approx(4 * raw["moc"], rel=0.05)
    assert per_gpu["satori"] == pytest.approx(per_gpu["moc"], rel=0.05)  # same per GPU: no platform difference
    gpu_h = {e: result.summaries[e].median["gpu_hours"] for e in result.envs}
    assert gpu_h["satori"] == pytest.approx(4 * gpu_h["moc"], rel=0.01)
    table = summary_table(result)
    assert "| images/s per GPU |" in table and "| GPU-hours per run |" in table and "whole job" in table
    note = shape_note(result.runs)
    assert "moc 1×1" in note and "satori 1×4" in note and "per-GPU" in note
    rows = {label: (verdict, cells) for label, verdict, cells in identity_rows(runs, result.envs)}
    assert rows["shape (nodes × GPUs)"] == ("differs", ["1 node × 1 GPU", "1 node × 4 GPUs"])
    assert rows["config sha256"][0] == "identical" and rows["code sha"][0] == "identical"
    assert rows["image digest"][0] == "not recorded"


def test_scaling_efficiency_needs_one_and_n_gpus(tmp_path: Path) -> None:
    for i in range(2):
        write_run(tmp_path, RunSpec("satori", f"one{i}", seed=i, gpus=1, images_per_s=100.0))
        write_run(tmp_path, RunSpec("satori", f"four{i}", seed=5 + i, gpus=4, images_per_s=340.0))
    result = compare_runs(find_runs(tmp_path))
    rows = scaling_rows(result.runs)
    assert [(env, n) for env, n, *_ in rows] == [("satori", 1), ("satori", 4)]
    assert rows[1][4] == pytest.approx(0.85, abs=0.03)
    assert scaling_rows([m for m in result.runs if m.gpus == 4]) == []
