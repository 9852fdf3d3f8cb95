"""A pull request's benchmark: its head and its merge-base, run one after the other here.

Both commits run on the same machine in scratch checkouts, so each environment is judged
against its own runs only; the comment's Markdown and `pr.json` land in one folder, which
a fork PR's job uploads for the workflow_run job to post (`bench comment --artifact`).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import TextIO

from bench.errors import AtlasError, ConfigError
from bench.gitops.checkout import DEFAULT_ENVS, checkout_at, git, run_envs
from bench.names import check_name

LABEL_PREFIX = "bench:"
PR_JSON = "pr.json"
COMMENT_MD = "comment.md"


def envs_from_labels(labels_json: str, default: tuple[str, ...] = DEFAULT_ENVS) -> tuple[str, ...]:
    """`["bench:local", "bug"]` -> ("local",); no `bench:` label -> the default envs."""
    try:
        labels = json.loads(labels_json or "[]")
    except ValueError:
        raise ConfigError(f"--labels-json: not a JSON list of label names: {labels_json[:80]!r}") from None
    if not isinstance(labels, list):
        raise ConfigError("--labels-json: expected a JSON list of label names")
    envs = [str(x)[len(LABEL_PREFIX) :].strip() for x in labels if str(x).startswith(LABEL_PREFIX)]
    for env in envs:
        check_name(env, f"label {LABEL_PREFIX}{env[:60]}: environment")
    return tuple(dict.fromkeys(e for e in envs if e)) or default


def pr_run(
    repo: Path,
    base_ref: str,
    envs: tuple[str, ...],
    experiment: str,
    results: Path,
    overrides: tuple[str, ...] = (),
    out: TextIO = sys.stdout,
    runs: int = 4,
) -> tuple[str, str]:
    """Run the PR's head and its merge-base on `envs`: (head sha, merge-base sha).

    Both commits run here, one after the other, so each environment is judged against its
    own runs only; `runs` of each (`bench pr` sizes it from the environments' measured
    spread, bench.analysis.sample_size). The comment is rendered by the command
    (bench/commands/pr.py) and handed to `write_artifact`.
    """
    repo = Path(repo).resolve()
    head = git(repo, "rev-parse", "HEAD").strip()
    try:
        base = git(repo, "merge-base", "HEAD", base_ref).strip()
    except AtlasError as exc:
        raise AtlasError(
            f"no merge-base of HEAD and {base_ref!r} ({exc}); check out with full history "
            "(actions/checkout `fetch-depth: 0`)"
        ) from None
    results = Path(results).resolve()
    for sha in dict.fromkeys([head, base]):
        work = checkout_at(repo, sha, None, out)
        try:
            if not run_envs(work, envs, experiment, overrides, results, out, runs):
                print(f"atlas: a run of {sha[:12]} did not complete; its record is compared all the same", file=out)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return head, base


def write_artifact(
    out_dir: Path,
    body: str,
    pr: int,
    head: str,
    base: str,
    envs: tuple[str, ...],
    experiment: str,
    out: TextIO = sys.stdout,
) -> Path:
    """The rendered comment (`comment.md`) and `pr.json` into `out_dir`: what a fork PR's job
    uploads for the workflow_run job (`bench comment --artifact`)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / COMMENT_MD).write_text(body)
    (out_dir / PR_JSON).write_text(
        json.dumps(
            {"pr": pr, "head_sha": head, "base_sha": base, "envs": list(envs), "experiment": experiment}, indent=2
        )
        + "\n"
    )
    print(
        f"atlas: PR #{pr}: {head[:12]} vs merge-base {base[:12]} on {', '.join(envs)}: {out_dir / COMMENT_MD}", file=out
    )
    return out_dir / COMMENT_MD
