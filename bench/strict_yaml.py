"""YAML a user writes by hand, read strictly: a key given twice is refused, not silently the last.

PyYAML's SafeLoader keeps the last of two equal keys in one mapping, so a map or an
expected.yaml that names a column or a metric twice would take the second without a word.
`load_strict` also turns the ways a hostile file breaks the parser (nesting 10^5 deep:
RecursionError; bytes that are not UTF-8) into one AtlasError naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from bench.bounded_read import TooLarge, read_text_bounded
from bench.errors import AtlasError


class UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that refuses a key given twice in one mapping."""


def _no_duplicates(loader: UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            repeated = key in seen
        except TypeError:  # an unhashable key (a list): construct_mapping words it
            continue
        if repeated:
            raise AtlasError(
                f"line {key_node.start_mark.line + 1}: key {key!r} appears twice in one mapping: "
                "keep one (YAML would silently keep the last)"
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


def load_strict(path: Path, max_bytes: int, what: str) -> Any:
    """The YAML document at `path` (at most `max_bytes`), or one AtlasError naming the file and the problem."""
    try:
        text = read_text_bounded(path, max_bytes, what)
        return yaml.load(text, Loader=UniqueKeyLoader)  # a SafeLoader subclass: builds plain data only
    except TooLarge:
        raise
    except UnicodeDecodeError as exc:
        raise AtlasError(f"{path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start})") from None
    except RecursionError:
        raise AtlasError(f"{path}: nested too deeply to be {what}") from None
    except yaml.YAMLError as exc:
        raise AtlasError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    except OSError as exc:
        raise AtlasError(f"{path}: cannot read {what} ({type(exc).__name__}: {exc.strerror})") from None
    except AtlasError as exc:
        raise AtlasError(f"{path}: {exc}") from None
