"""The `derived:` expressions of an import map: arithmetic over a row's columns, and nothing else.

A map is data that may come with a study or a pull request, so its expressions must not
be able to run code. pandas' `DataFrame.eval` could: `@name` reached bench's own
variables and module globals and method calls were allowed (`@pd.io.common.os.system(...)`).
Here an expression is parsed with Python's `ast` (which only parses, never runs), every
node is checked against a short grammar, and the checked tree is evaluated by this module
over numpy arrays of the file's columns:

    expression := number | column | `any column name` | ( expression )
                | - expression | + expression
                | expression (+ | - | * | / | **) expression
                | expression (< | <= | > | >= | == | !=) expression   (1 when true, 0 when false)
                | abs(e) | min(e, e, ...) | max(e, e, ...) | clip(e, low, high) | where(condition, e, e)

A column is a bare name (`kbmemused`) or any header text in backticks (`` `%idle` ``), as
pandas allowed. Anything else (`@`, attribute access, a method call, a subscript, a
lambda, a string, a function outside the list, a name that is not a column of the file)
is refused with one error naming the map key. A missing cell (NaN) stays missing through
every operation, a comparison included.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

MAX_LENGTH = 1000  # characters of one expression: a formula over a few columns, never a program
MAX_NODES = 200  # parsed nodes of one expression: bounds the work and the recursion of the walk

_BACKTICKED = re.compile(r"`([^`]*)`")

_BINARY: dict[type, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    ast.Add: np.add,
    ast.Sub: np.subtract,
    ast.Mult: np.multiply,
    ast.Div: np.divide,
    ast.Pow: np.power,
}
_COMPARE: dict[type, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    ast.Lt: np.less,
    ast.LtE: np.less_equal,
    ast.Gt: np.greater,
    ast.GtE: np.greater_equal,
    ast.Eq: np.equal,
    ast.NotEq: np.not_equal,
}
FUNCTIONS: dict[str, tuple[int, int | None]] = {  # name: (least, most) arguments
    "abs": (1, 1),
    "min": (2, None),
    "max": (2, None),
    "clip": (3, 3),
    "where": (3, 3),
}
GRAMMAR = (
    "numbers, columns (a bare name or `any header` in backticks), + - * / ** and unary -, "
    f"comparisons < <= > >= == !=, parentheses, and the functions {', '.join(FUNCTIONS)}"
)


_WORDS = {  # what a user calls the refused node kinds
    "Lambda": "a lambda",
    "ListComp": "a comprehension",
    "SetComp": "a comprehension",
    "DictComp": "a comprehension",
    "GeneratorExp": "a comprehension",
    "Dict": "a dict",
    "Set": "a set",
    "List": "a list",
    "Tuple": "a tuple",
    "IfExp": "an if-else",
    "NamedExpr": "an assignment (:=)",
    "JoinedStr": "an f-string",
    "BoolOp": "and / or",
    "Await": "await",
    "Yield": "yield",
    "Starred": "a starred *argument",
}


class ExpressionError(ValueError):
    """An expression outside the grammar: the message says what and what is allowed."""


@dataclass(frozen=True)
class Expression:
    """A checked expression: its parsed tree and the columns it names, in order of first use."""

    text: str
    tree: ast.expr
    columns: tuple[str, ...]
    _aliases: Mapping[str, str]  # placeholder identifier -> backticked column name

    def evaluate(self, columns: Mapping[str, np.ndarray], rows: int) -> np.ndarray:
        """One float per row (NaN where a cell it needs is missing)."""
        with np.errstate(all="ignore"):  # x / 0 is inf, 10 ** 400 is inf: the range check refuses them
            out = _evaluate(self.tree, columns, self._aliases)
        return np.broadcast_to(np.asarray(out, dtype=float), (rows,)).copy()


def _refuse(what: str) -> ExpressionError:
    return ExpressionError(f"{what} is not allowed; an expression may hold {GRAMMAR}")


def parse_expression(text: str) -> Expression:
    """Check `text` against the grammar; raise ExpressionError naming the first thing outside it."""
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"is {len(text):,} characters long, above the bound of {MAX_LENGTH:,} for one formula")
    aliases: dict[str, str] = {}

    def alias(match: re.Match[str]) -> str:
        name = match.group(1)
        if not name:
            raise ExpressionError("has empty backticks ``: put a column name between them")
        placeholder = f"_column_{len(aliases)}_"
        aliases[placeholder] = name
        return f" {placeholder} "

    bare = _BACKTICKED.sub(alias, text)
    if "`" in bare:
        raise ExpressionError("has an unclosed backtick: write `column name` with one before and one after")
    if "@" in bare:
        raise _refuse("'@' (a variable of the program reading the map)")
    try:
        tree = ast.parse(bare.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        why = exc.msg if isinstance(exc, SyntaxError) else type(exc).__name__
        raise ExpressionError(f"is not a formula ({why}); an expression may hold {GRAMMAR}") from None
    nodes = 0
    columns: list[str] = []
    stack: list[ast.AST] = [tree]
    while stack:  # iterative: a deeply nested expression cannot exhaust the recursion here
        node = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise ExpressionError(f"has more than {MAX_NODES} parts, above the bound for one formula")
        stack.extend(_children(node, aliases, columns))
    return Expression(text, tree, tuple(dict.fromkeys(columns)), aliases)


def _children(node: ast.AST, aliases: Mapping[str, str], columns: list[str]) -> list[ast.AST]:
    """The node's sub-expressions once the node itself is allowed; raise for anything else."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise _refuse(f"the constant {node.value!r:.40}")
        if isinstance(node.value, int) and abs(node.value) > 10**308:
            raise ExpressionError(f"has a number above 1e308 ({str(node.value)[:20]}...)")
        return []
    if isinstance(node, ast.Name):
        columns.append(aliases.get(node.id, node.id))
        return []
    if isinstance(node, ast.BinOp):
        if type(node.op) not in _BINARY:
            raise _refuse(f"the operator {type(node.op).__name__}")
        return [node.left, node.right]
    if isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, (ast.USub, ast.UAdd)):
            raise _refuse(f"the operator {type(node.op).__name__}")
        return [node.operand]
    if isinstance(node, ast.Compare):
        bad = [type(op).__name__ for op in node.ops if type(op) not in _COMPARE]
        if bad:
            raise _refuse(f"the comparison {bad[0]}")
        return [node.left, *node.comparators]
    if isinstance(node, ast.Call):
        return _call_arguments(node)
    if isinstance(node, ast.Attribute):
        raise _refuse(f"attribute access (.{node.attr})")
    if isinstance(node, ast.Subscript):
        raise _refuse("a subscript ([...])")
    raise _refuse(_WORDS.get(type(node).__name__, f"the syntax {type(node).__name__}"))


def _call_arguments(node: ast.Call) -> list[ast.AST]:
    if isinstance(node.func, ast.Attribute):
        raise _refuse(f"a method call (.{node.func.attr}(...))")
    if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
        if not isinstance(node.func, ast.Name):
            raise _refuse("calling the result of an expression")
        raise _refuse(f"the function {node.func.id!r}")
    if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        raise _refuse(f"a named or starred argument of {node.func.id}")
    least, most = FUNCTIONS[node.func.id]
    if len(node.args) < least or (most is not None and len(node.args) > most):
        count = str(least) if least == most else f"{least} or more"
        raise ExpressionError(f"{node.func.id}(...) takes {count} arguments, got {len(node.args)}")
    return list(node.args)


def _evaluate(node: ast.expr, columns: Mapping[str, np.ndarray], aliases: Mapping[str, str]) -> np.ndarray:
    """The value of a checked node (parse_expression allowed only the node kinds handled here)."""
    if isinstance(node, ast.Constant):
        return np.float64(float(node.value))
    if isinstance(node, ast.Name):
        return columns[aliases.get(node.id, node.id)]
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)](_evaluate(node.left, columns, aliases), _evaluate(node.right, columns, aliases))
    if isinstance(node, ast.UnaryOp):
        value = _evaluate(node.operand, columns, aliases)
        return np.negative(value) if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, columns, aliases)
        result: np.ndarray = np.float64(1.0)
        missing: np.ndarray = np.isnan(left)
        for op, right_node in zip(node.ops, node.comparators):
            right = _evaluate(right_node, columns, aliases)
            result = result * _COMPARE[type(op)](left, right)
            missing = missing | np.isnan(right)
            left = right
        return np.where(missing, np.nan, result)
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    args = [_evaluate(a, columns, aliases) for a in node.args]
    name = node.func.id
    if name == "abs":
        return np.abs(args[0])
    if name in ("min", "max"):
        pick = np.fmin if name == "min" else np.fmax
        out, missing = args[0], np.isnan(args[0])
        for arg in args[1:]:
            out, missing = pick(out, arg), missing | np.isnan(arg)
        return np.where(missing, np.nan, out)
    if name == "clip":
        return np.clip(args[0], args[1], args[2])
    condition = args[0]
    return np.where(np.isnan(condition), np.nan, np.where(condition != 0, args[1], args[2]))
