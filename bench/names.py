"""One pattern for every name that becomes a path, a label or a shell word.

Environment, experiment and run names end up in folder names (`results/<env>/<run_id>/`),
Kubernetes labels, podman container names and the git hook's script. So they are checked
once, here, at every way in (the CLI's arguments, `load_env`, `JobSpec`, the hook's
settings, a pull request's `bench:<env>` labels): no `/`, no `..`, no spaces or shell
characters, at most 63 characters (a Kubernetes label value's limit,
https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set).
"""

from __future__ import annotations

import re

from bench.errors import ConfigError

NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}"
_NAME = re.compile(NAME_PATTERN)
RULE = "1 to 63 of A-Z a-z 0-9 . _ -, starting with a letter or digit"


def check_name(value: object, what: str = "name") -> str:
    """`value` when it is a valid name, else ConfigError naming it and the rule."""
    if not isinstance(value, str) or not _NAME.fullmatch(value) or ".." in value:
        shown = repr(value)[:80]
        raise ConfigError(f"{what} {shown} is not a valid name: use {RULE}")
    return value


def arg_type(what: str):  # noqa: ANN201 (an argparse type)
    """An argparse `type=` that refuses a bad name with one line (argparse prints it)."""
    import argparse

    def parse(value: str) -> str:
        try:
            return check_name(value, what)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = what
    return parse
