"""A record with Markdown and HTML in every string renders as text in the report."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench.commands.report import write_report
from bench.render.escape import code, md
from tests.synthetic_records import RunSpec, write_run

HOSTILE = "<img src=https://evil.example/beacon.gif> **bold** | cell # head [link](https://e.x) @octocat `tick` _u_"


# Strings whose schema is a pattern or an enum: any text there is refused (and excluded)
# by the schema anyway; kept so that the runs are still compared and fill every table.
KEPT = {
    ("exit", "status"),
    ("git", "sha"),
    ("config_sha256",),
    ("environment", "cost", "model"),
    ("run_id",),
    ("env",),
    ("samples_file",),
    ("environment", "kind"),
    ("environment", "name"),
}


def poison(value, path=()):
    """Every free-text string of the record, hostile."""
    if isinstance(value, dict):
        return {k: (v if path + (k,) in KEPT else poison(v, path + (k,))) for k, v in value.items()}
    if isinstance(value, list):
        return [poison(v, path) for v in value]
    return f"{value} {HOSTILE}" if isinstance(value, str) else value


def unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def test_a_record_with_markdown_and_html_in_every_string_renders_as_text(tmp_path: Path) -> None:
    results = tmp_path / "results"
    for i in range(2):
        for env in ("a", "b"):
            folder = write_run(results, RunSpec(env, f"{env}{i}", seed=i, duration_s=12))
            meta = poison(json.loads((folder / "run.json").read_text()))
            (folder / "run.json").write_text(json.dumps(meta))
    readme = write_report(results, tmp_path / "reports", allow_different=True, allow_dirty=True).readme.read_text()
    assert "evil.example" in readme  # the strings are there, as text
    prose = re.sub(r"`[^`\n]*`", "", readme)  # inside a code span GitHub shows HTML and Markdown as text
    assert "<img" not in prose and "**bold**" not in prose and "[link](" not in prose and "`tick`" not in readme
    assert "@octocat" not in prose and "@\u200boctocat" in prose
    headings = [line for line in readme.splitlines() if line.startswith("#")]
    assert all("# head" not in h for h in headings), headings
    table: list[str] = []
    for line in [*readme.splitlines(), ""]:  # every row of a table has its header's cell count
        if line.startswith("|"):
            table.append(line)
            continue
        if table:
            assert {unescaped_pipes(row) for row in table} == {unescaped_pipes(table[0])}, table
            table = []


def test_escape_helpers() -> None:
    assert md("a|b <i> *x* @y\nz") == "a\\|b &lt;i&gt; \\*x\\* @\u200by z"
    assert code("x`y|z") == "x'y\\|z"
    assert len(md("x" * 1000)) == 200
