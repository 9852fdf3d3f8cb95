"""The words of an explanation (bench.analysis.explain): one sentence and a small table.

One sentence, the same in `bench explain`, `bench history`'s change points and the PR
comment: the phase that moved (its change, its 95 % interval, its share of the total's
move), where a profile says so the module that took most of it, then what changed,
ranked as bench.analysis.explain_causes ranks it ("config unchanged" where it is).
`markdown=True` escapes for a GitHub comment; plain text otherwise.
"""

from __future__ import annotations

from collections.abc import Callable

from bench.analysis.explain import GATE_ALPHA, Explanation, PhaseMove
from bench.analysis.metrics import fmt
from bench.render.escape import code, md


def _signed(x: float) -> str:
    """A change in per cent: "+14", "+0.4", "−2.5" (one decimal below 10; a true minus sign)."""
    text = f"{abs(x) * 100:.1f}" if abs(x) < 0.1 else f"{abs(x) * 100:.0f}"
    return ("−" if x < 0 and float(text) != 0 else "+") + text


def _pct(x: float) -> str:
    return f"{_signed(x)} %"


def interval(move: PhaseMove) -> str:
    """ "CI +9 to +19 %" (the ratio's 95 % bootstrap interval as a change), or "no interval"."""
    lo, hi = move.cmp.ci_low, move.cmp.ci_high
    if lo is None or hi is None:
        return "no interval"
    return f"CI {_signed(lo - 1)} to {_signed(hi - 1)} %"


def change(move: PhaseMove) -> str:
    """ "+14 % (+8.20 s)", or "+8.20 s" where the base was 0 (no ratio)."""
    seconds = f"{'+' if move.delta_s >= 0 else '−'}{fmt(abs(move.delta_s))} s"
    return f"{_pct(move.cmp.ratio - 1)} ({seconds})" if move.cmp.ratio is not None else seconds


def _phase_part(e: Explanation, lit: Callable[[object], str]) -> str:
    if e.phase is None:
        total = f"{e.total.label} {change(e.total)}, {interval(e.total)}" if e.total else "no total time"
        if not e.phases:
            return f"no timeline phases recorded ({total})"
        largest = f"; largest move: {lit(e.phases[0].label)} {change(e.phases[0])}" if e.phases else ""
        few = e.smallest_p
        if e.total is not None and few > GATE_ALPHA:
            return (
                f"too few runs to name a phase ({e.n_head} vs {e.n_base}: the smallest p is {few:.2g}, "
                f"{GATE_ALPHA:g} is needed; {total}{largest})"
            )
        return f"no phase moved clearly ({total}{largest})"
    p = e.phase
    text = f"{lit(p.label)} phase {change(p)}, {interval(p)}"
    share = e.share_of_total
    if share is not None and e.total is not None:
        text += f"; {share * 100:.0f} % of the {e.total.label} change"
    return text


def _ms(x: float) -> str:
    return f"{'+' if x >= 0 else '−'}{fmt(abs(x))} ms/iteration"


def _layer_part(e: Explanation, mono: Callable[[object], str]) -> str:
    moves = e.layers
    if moves is None:
        return e.layers_note
    total = moves.total
    models = f"G + D {_pct(total.cmp.ratio - 1) if total.cmp.ratio is not None else _ms(total.delta_ms)}"
    if not moves.moved:
        return f"the profiled layers did not move ({models}): the time went outside the models"
    top = moves.top
    if top is None:
        return f"the profiled layers moved ({models}), no one module clearly"
    share = moves.share(top)
    text = f"{share * 100:.0f} % of the profiled change in {mono(top.name)} ({top.kind}, {_ms(top.delta_ms)})"
    if moves.operator is not None:
        text += f", operator {mono(moves.operator.name)} {_ms(moves.operator.delta_ms)}"
    return text


def sentence(e: Explanation, markdown: bool = False) -> str:
    """The explanation in one sentence (see the module's docstring)."""
    lit = (lambda v: md(v, 200)) if markdown else str
    mono = (lambda v: f"`{code(v, 200)}`") if markdown else (lambda v: f"`{v}`")
    parts = [_phase_part(e, lit)]
    layer = _layer_part(e, mono)
    if layer:
        parts.append(layer)
    config = [c.text for c in e.causes if c.kind == "config"]
    parts.append(
        "config unchanged"
        if e.config == []
        else "config unknown"
        if e.config is None
        else f"config: {lit(', '.join(config))}"
    )
    platform = [lit(c.text) for c in e.causes if c.kind not in ("config", "code")]
    parts.append(", ".join(platform) if platform else "same platform")
    code_cause = [c.text for c in e.causes if c.kind == "code"]
    if e.code.same:
        parts.append("same code")
    elif code_cause:
        parts.append(("code changed: " if e.code.files else "code ") + lit(code_cause[0]))
    else:
        parts.append("no file changed")
    return "; ".join(parts) + "."


def table(e: Explanation) -> str:
    """Markdown: the total and each phase that has a value (base, head, change, interval,
    clear), then the modules that moved most and the ranked causes."""
    rows = ["| phase | base (s) | head (s) | change | 95 % CI | moved |", "|---|---:|---:|---:|---|---|"]
    for m in ([e.total] if e.total else []) + e.phases:
        mark = "**yes**" if m is e.phase else ("yes" if m.clear else "")
        rows.append(f"| {md(m.label)} | {fmt(m.base_s)} | {fmt(m.head_s)} | {change(m)} | {interval(m)} | {mark} |")
    out = "\n".join(rows)
    if e.layers is not None and e.layers.modules:
        lines = [
            f"| module ({e.layers.clock} time) | base (ms/iteration) | head (ms/iteration) | change | share | moved |",
            "|---|---:|---:|---:|---:|---|",
        ]
        for m in [e.layers.total, *e.layers.modules[:5]]:
            share = e.layers.share(m)
            shown = "" if share is None or m is e.layers.total else f"{share * 100:.0f} %"
            name = f"`{code(m.name)}` ({m.kind})" if m.kind else m.name
            mark = "**yes**" if m is e.layers.top else ("yes" if m.clear else "")
            lines.append(
                f"| {name} | {fmt(m.base_ms)} | {fmt(m.head_ms)} | "
                f"{'+' if m.delta_ms >= 0 else '−'}{fmt(abs(m.delta_ms))} | {shown} | {mark} |"
            )
        out += "\n\n" + "\n".join(lines)
    if e.causes:
        out += "\n\n" + "\n".join(f"{i}. {c.kind}: {md(c.text)}" for i, c in enumerate(e.causes, 1))
    return out
