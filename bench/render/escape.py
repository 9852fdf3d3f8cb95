"""Strings that came from a run record are text in a report, never Markdown or HTML.

A record is written by the job (`run.json`'s CPU model, torch version, host names, git
note, ...), and reports are committed and rendered by GitHub. So every such string is
passed through `md` (table cells, list items, headings) or `code` (inside backticks)
before it reaches a template: one line, no control characters, HTML's `& < >` as
entities, Markdown's punctuation backslash-escaped (CommonMark "Backslash escapes",
https://spec.commonmark.org/0.31.2/#backslash-escapes), and `@` followed by a zero-width
space so a record cannot @mention anyone.
"""

from __future__ import annotations

import html
import re

_MARKDOWN = re.compile(r"([\\`*_\[\]{}|#!~])")
MAX_CHARS = 200  # a cell longer than this is a runaway string, not a fact


def _one_line(value: object, limit: int) -> str:
    text = " ".join(str(value).split())
    text = "".join(c for c in text if c.isprintable())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def md(value: object, limit: int = MAX_CHARS) -> str:
    """`value` as literal text in Markdown (a table cell, a list item, a heading)."""
    text = html.escape(_one_line(value, limit), quote=False)
    return _MARKDOWN.sub(r"\\\1", text).replace("@", "@\u200b")


def code(value: object, limit: int = MAX_CHARS) -> str:
    """`value` for inside a `code span`: no backtick can close it, no `|` can split a table row."""
    return _one_line(value, limit).replace("`", "'").replace("|", "\\|")
