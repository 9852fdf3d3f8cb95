"""Print and write the comparison of environments: per-environment medians and olympic
means, per-run figures, and for each environment against the baseline the ratio of
medians with a bootstrap CI and a Mann-Whitney test, held to the pair's noise floor
(bench.analysis.pair_noise: results/<env>/noise.json where sound, else the folder's
repeated runs; a difference within it has no winner). Only successful runs of one
experiment and config hash from a clean tree are compared; the others are listed under
"Excluded runs" with their reasons (--allow-different, --allow-dirty widen the set)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench.commands.common_args import add_selection

HELP = "tables across environments"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_selection(parser)
    parser.add_argument(
        "--out", type=Path, default=None, help="also write compare.md, runs.csv and compare.json into this folder"
    )


def run(args: argparse.Namespace) -> int:
    from bench.analysis.report_data import compared_noise, headline
    from bench.analysis.select_compare import select_and_compare
    from bench.commands.preload import import_quietly
    from bench.render.headline import end_to_end_lines
    from bench.render.noise_words import report_lines
    from bench.render.tables import (
        excluded_table,
        pairs_table,
        runs_table,
        summary_table,
        verdicts,
    )

    selected = select_and_compare(
        args.results,
        args.envs or None,
        args.commit,
        allow_different=args.allow_different,
        baseline=args.baseline,
        allow_dirty=args.allow_dirty,
        meanwhile=lambda: import_quietly("scipy.stats"),  # the bootstrap's library, while the records are read
    )
    sha, runs, result = selected.sha, selected.runs, selected.result
    noise = report_lines(compared_noise(args.results, selected))  # floors the Differences are held to
    figures = headline(result)  # the report's Summary figures: the same lines in both
    text = (
        "\n\n".join(
            x
            for x in [
                f"# Comparison at commit {sha[:12] if sha else 'unknown'}: "
                f"experiment {result.experiment or 'unknown'}, {len(result.runs)} of {len(runs)} run(s) compared",
                "\n".join(f"- {v}" for v in [*end_to_end_lines(figures), *verdicts(result)] or figures.compile_notes),
                summary_table(result),
                pairs_table(result),
                ("## Noise floor\n\n" + "\n".join(f"- {x}" for x in noise)) if noise and result.pairs else "",
                runs_table(result),
                ("## Excluded runs\n\n" + excluded_table(result.excluded)) if result.excluded else "",
            ]
            if x
        )
        + "\n"
    )
    problems = [f"- {r.env}/{r.run_id}: {'; '.join(r.problems)}" for r in runs if r.problems]
    if problems:
        text += "\nData problems:\n" + "\n".join(problems) + "\n"
    print(text, end="")
    if args.out:
        _write(args.out, text, result, sha)
    return 0


def _write(out: Path, text: str, result, sha: str | None) -> None:
    """compare.md, runs.csv and compare.json in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.md").write_text(text)
    from bench.analysis.stats import smallest_p
    from bench.render.runs_csv import write_runs_csv

    write_runs_csv(result.frame(), out / "runs.csv")
    summary = {
        env: {"runs": s.runs, "statuses": s.statuses, "median": s.median, "olympic_mean": s.olympic}
        for env, s in result.summaries.items()
    }
    pairs = [
        {
            "env": p.env_a,
            "baseline": p.env_b,
            "metric": p.metric,
            "ratio": p.stats.ratio,
            "ci95": [p.stats.ci_low, p.stats.ci_high],
            "mann_whitney_p": p.stats.p_value,
            "mann_whitney_p_bh": p.p_adjusted,
            "ci_method": p.stats.ci_method or None,
            "runs": [p.stats.n_a, p.stats.n_b],
            "smallest_possible_p": smallest_p(p.stats.n_a, p.stats.n_b),
            "clear": p.clear,
            "noise_floor": p.noise.floor if p.noise is not None else None,
            "within_noise": p.within_noise,
        }
        for p in result.pairs
    ]
    (out / "compare.json").write_text(
        json.dumps(
            {
                "commit": sha,
                "experiment": result.experiment,
                "config_sha256": result.config_hashes,
                "envs": summary,
                "pairs": pairs,
                "excluded": [{"env": e.env, "run_id": e.run_id, "reason": e.reason} for e in result.excluded],
            },
            indent=2,
            sort_keys=True,
        )
        + "\n"
    )
    print(f"wrote {out / 'compare.md'}, runs.csv, compare.json")
