"""bench/README's layout, checked over the import graph instead of by eye (issue 32).

Every `import` in bench/ (read with `ast`, so nothing is imported or run) is an arrow from
one layer to another. A layer imports only layers below it; the record's own layers
(`records/`, `importers/`, `in_job/`) import no env.yaml code, no workload code, no
`analysis/` and no `render/`. The arrows today's code still has against those rules are
listed in KNOWN, each to be removed by issue 32's restructure: the test fails on any new
arrow, and on a KNOWN one that is gone (take it off the list)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"

# Lowest first: a module may import its own layer and the layers of a lower rank only.
LAYERS: list[tuple[int, str, tuple[str, ...]]] = [
    (0, "base", ("bench", "bench.errors", "bench.oserrors", "bench.atomic_files", "bench.names")),
    (1, "records", ("bench.records",)),
    (1, "staging", ("bench.stage_data", "bench.stage_http")),
    (2, "importers", ("bench.importers",)),
    (2, "in_job", ("bench.in_job",)),
    (3, "env.yaml", ("bench.environments",)),
    (4, "targets", ("bench.targets",)),
    (5, "analysis", ("bench.analysis",)),
    (6, "render", ("bench.render",)),
    (7, "gitops", ("bench.gitops",)),
    (8, "commands", ("bench.commands",)),
    (9, "cli", ("bench.cli", "bench.__main__")),
    (99, "workload", ("workflows",)),  # not part of bench: reached through its command line
]
# The record's layers never import these, whatever their rank.
RECORD_LAYERS = ("records", "importers", "in_job")
NOT_IN_RECORD_LAYERS = ("env.yaml", "workload", "analysis", "render")

# Arrows against the rules in today's code, named in issue 32 (to be removed there).
KNOWN = {
    ("bench.commands.validation", "workflows.biggan.config"),  # validate checks the experiment by import
    ("bench.commands.validation", "workflows.biggan.errors"),
    ("bench.targets.lifecycle", "workflows.biggan.config"),  # submit resolves the experiment by import
    ("bench.targets.lifecycle", "workflows.biggan.errors"),
}


def layer(module: str) -> tuple[int, str] | None:
    """The (rank, name) of a module: the layer whose prefix matches it most closely."""
    best: tuple[int, int, str] | None = None
    for rank, name, prefixes in LAYERS:
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and (best is None or len(p) > best[0]):
                best = (len(p), rank, name)
    return None if best is None else (best[1], best[2])


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    base = REPO.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports(path: Path) -> set[str]:
    """The bench/workflows modules a file imports (`from a import b` is a.b when b is a module)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                found.add(f"{source}.{alias.name}" if _is_module(f"{source}.{alias.name}") else source)
    return {m for m in found if m.split(".")[0] in ("bench", "workflows")}


def arrows() -> set[tuple[str, str]]:
    return {(module_name(p), target) for p in BENCH.rglob("*.py") for target in imports(p)}


def broken(arrow: tuple[str, str]) -> str | None:
    """Why an arrow breaks the layout, or None."""
    source, target = arrow
    src, dst = layer(source), layer(target)
    assert src is not None, f"{source} is in no layer of LAYERS: add its folder there (and to bench/README)"
    assert dst is not None, f"{target} (imported by {source}) is in no layer of LAYERS"
    if src[1] in RECORD_LAYERS and dst[1] in NOT_IN_RECORD_LAYERS:
        return f"{source} ({src[1]}) imports {target} ({dst[1]}): the record's layers import no {dst[1]} code"
    if src[1] != dst[1] and dst[0] >= src[0]:
        return f"{source} ({src[1]}, rank {src[0]}) imports {target} ({dst[1]}, rank {dst[0]}): not below it"
    return None


def test_the_graph_is_read() -> None:
    """The reader sees relative and `from package import module` imports (else the rules check nothing)."""
    graph = arrows()
    assert ("bench.targets.lifecycle", "bench.environments.facts") in graph  # collection freezes the facts
    assert ("bench.cli", "bench.errors") in graph
    assert len(graph) > 300 and all(layer(s) for s, _ in graph)
    assert broken(("bench.records.read", "bench.analysis.metrics")) is not None
    assert broken(("bench.records.place", "bench.environments.facts")) is not None
    assert broken(("bench.importers.writer", "bench.environments.load")) is not None
    assert broken(("bench.in_job.recorder", "bench.render.tables")) is not None
    assert broken(("bench.in_job.recorder", "workflows.biggan.config")) is not None
    assert broken(("bench.render.report", "bench.analysis.metrics")) is None  # render is above analysis
    assert broken(("bench.importers.sar", "bench.in_job.recorder")) is not None  # same rank, other layer


def test_each_layer_imports_only_layers_below_it() -> None:
    graph = arrows()
    new = sorted(why for arrow in graph - KNOWN if (why := broken(arrow)) is not None)
    assert not new, "imports against bench/README's layout:\n" + "\n".join(new)
    gone = sorted(KNOWN - {a for a in graph if broken(a) is not None})
    assert not gone, f"these KNOWN arrows are gone or allowed now, take them off KNOWN: {gone}"


def test_the_record_layers_import_no_env_yaml_workload_analysis_or_render() -> None:
    """No exception list here: records/, importers/ and in_job/ are handed the environment's
    facts (bench.environments.facts, by collect and import) and never reach up for them."""
    found = sorted(
        f"{source} imports {target}"
        for source, target in arrows()
        if (src := layer(source))
        and src[1] in RECORD_LAYERS
        and (dst := layer(target))
        and dst[1] in NOT_IN_RECORD_LAYERS
    )
    assert not found, "the record's layers import what they must be handed:\n" + "\n".join(found)


# render/ draws what analysis/ decided: it imports the data types it draws and nothing else of
# analysis/. The metric catalogue (labels, units, digits) and `fmt`, the one number format, are
# wording shared with analysis/'s own sentences (advice, band flags), so render/ may read them.
RENDER_DRAWS = ("bench.analysis.report_data", "bench.analysis.pr_data", "bench.analysis.explain")  # + Explanation
RENDER_WORDING = ("bench.analysis.metrics",)
# Arrows from render/ into analysis/ that today's code still has (issue 32 removes them):
# *Where the time goes* picks each environment's median run and sums its phases itself
# (time_words.py, timeline_section.py; the PR comment's lines take bare run figures).
RENDER_KNOWN = {
    ("bench.render.time_words", "bench.analysis.time_sums"),
    ("bench.render.timeline_section", "bench.analysis.stats"),
    ("bench.render.timeline_section", "bench.analysis.time_sums"),
}


def render_into_analysis(graph: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """render/'s arrows into analysis/ other than the types it draws and the metric wording."""
    return {
        (s, t)
        for s, t in graph
        if layer(s) == (6, "render") and layer(t) == (5, "analysis") and t not in RENDER_DRAWS + RENDER_WORDING
    }


def test_render_imports_only_the_data_it_draws() -> None:
    """render/ imports no analysis/ module but ReportData's and PrData's (and the metric
    wording); gitops/ imports no render/ (it receives rendered text)."""
    graph = arrows()
    assert ("bench.render.report", "bench.analysis.report_data") in graph  # the reader sees the arrow it allows
    assert ("bench.render.comment", "bench.analysis.pr_data") in graph
    assert render_into_analysis({("bench.render.report", "bench.analysis.advisor")})  # and flags one it does not
    extra = render_into_analysis(graph)
    new = sorted(extra - RENDER_KNOWN)
    assert not new, "render/ decides what analysis/ should (put it in ReportData):\n" + "\n".join(map(str, new))
    gone = sorted(RENDER_KNOWN - extra)
    assert not gone, f"these RENDER_KNOWN arrows are gone, take them off RENDER_KNOWN: {gone}"
    renders = sorted(f"{s} -> {t}" for s, t in graph if layer(s) == (7, "gitops") and layer(t) == (6, "render"))
    assert not renders, "gitops/ renders (render at the command layer and hand it the text):\n" + "\n".join(renders)
