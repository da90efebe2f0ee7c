"""Derived input features: ``name=expression`` over the columns of a table, evaluated safely.

A derived feature is a named arithmetic expression over existing columns, e.g.
``zc=(N1000022_3**2-N1000022_4**2)**2`` or ``lm=log(abs(m_1000022))``. It is
stored in a model file as its two strings ``(name, expression)`` and recomputed
from the raw columns at prediction time, so predictions need only the raw inputs.

Grammar (a subset of Python expression syntax, parsed with :mod:`ast` and
checked node by node against an allow-list; nothing is ever passed to ``eval``):

- numbers: ``2``, ``0.5``, ``1e-3``;
- column names: identifiers (``m_1000022``), or any column name in backquotes
  (```nlo_1000022_-1000024```);
- operators: ``+ - * / **``, unary ``-`` and ``+``, parentheses;
- functions: ``log`` (natural), ``log10``, ``exp``, ``sqrt``, ``abs`` (one
  argument), ``min``, ``max`` (two arguments, element-wise), and
  ``thrint(a, M, W, p, k, span)`` (six arguments): the threshold integral of a
  resonance, :func:`sigmabnn.data.special.threshold_integral`.

Names starting with one underscore (``_zz=...``) are *helpers*: later expressions
may use them, but :func:`sigmabnn.api.fit` does not make them network inputs
(:func:`is_helper`).

Everything else is rejected with a one-line :class:`~sigmabnn.errors.InputError`
that names the construct: attribute access, subscripts, lambdas,
comprehensions, comparisons, strings, keyword arguments, other functions,
power towers (``a**b**c``; write ``(a**b)**c`` or ``a**(b*c)``), names that
start with ``__``, and expressions longer than :data:`MAX_LENGTH` characters,
deeper than :data:`MAX_DEPTH` or with more than :data:`MAX_NODES` nodes.
Arithmetic is float64 numpy on whole columns, so no expression can run for long
or allocate more than a few columns' worth of memory.

Values are element-wise float64. Missing inputs stay missing (a NaN input
gives a NaN output in that row), but a non-finite result from finite inputs
(``log`` of a negative mass, division by zero, overflow) is an error naming the
feature and the number of bad rows, rather than a NaN slipped into training or
prediction.

Order matters in :func:`add_derived`: a later expression may use the names
defined by earlier ones.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from sigmabnn.data.special import threshold_integral
from sigmabnn.errors import DataError, InputError

MAX_LENGTH = 500
"""Longest accepted expression, in characters."""
MAX_DEPTH = 100
"""Deepest accepted nesting of the expression tree."""
MAX_NODES = 200
"""Most accepted nodes (operators, calls, names, numbers) in one expression."""

_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "log": np.log,
    "log10": np.log10,
    "exp": np.exp,
    "sqrt": np.sqrt,
    "abs": np.abs,
}
_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "min": np.minimum,
    "max": np.maximum,
}
_NARY: dict[str, tuple[Callable[..., np.ndarray], int]] = {
    "thrint": (threshold_integral, 6),
}
_ARITY: dict[str, int] = {
    **dict.fromkeys(_UNARY, 1),
    **dict.fromkeys(_BINARY, 2),
    **{k: v[1] for k, v in _NARY.items()},
}
FUNCTIONS: tuple[str, ...] = tuple(sorted(_UNARY) + sorted(_BINARY) + sorted(_NARY))
"""Names of the functions an expression may call."""

_BINOPS: dict[type, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    ast.Add: np.add,
    ast.Sub: np.subtract,
    ast.Mult: np.multiply,
    ast.Div: np.true_divide,
    ast.Pow: np.power,
}
_OP_SYMBOLS = {
    ast.Mod: "%",
    ast.FloorDiv: "//",
    ast.MatMult: "@",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.Invert: "~",
    ast.Not: "not",
}
_CONSTRUCTS = {
    ast.Attribute: "attribute access",
    ast.Subscript: "a subscript",
    ast.Slice: "a slice",
    ast.Lambda: "a lambda",
    ast.ListComp: "a comprehension",
    ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension",
    ast.GeneratorExp: "a comprehension",
    ast.Compare: "a comparison",
    ast.BoolOp: "a boolean operator",
    ast.IfExp: "a conditional expression",
    ast.NamedExpr: "an assignment expression (:=)",
    ast.List: "a list",
    ast.Tuple: "a tuple",
    ast.Set: "a set",
    ast.Dict: "a dict",
    ast.JoinedStr: "an f-string",
    ast.Starred: "a starred argument",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
}

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_BACKQUOTE_RE = re.compile(r"`([^`]*)`")
_PLACEHOLDER = "_bq{}_"
_PLACEHOLDER_RE = re.compile(r"_bq\d+_")


def is_helper(name: str) -> bool:
    """Whether a derived feature is a helper (its name starts with one ``_``): not a network input."""
    return name.startswith("_") and not name.startswith("__")


def _check_name(name: str, what: str) -> None:
    if not _NAME_RE.match(name):
        raise InputError(f"bad {what} {name!r}: use letters, digits and _, not starting with a digit")
    if name.startswith("__"):
        raise InputError(f"bad {what} {name!r}: names starting with __ are not allowed")
    if name in FUNCTIONS:
        raise InputError(f"bad {what} {name!r}: it is the name of a function")


def _describe(node: ast.AST) -> str:
    for kind, text in _CONSTRUCTS.items():
        if isinstance(node, kind):
            return text
    op = getattr(node, "op", None)
    if op is not None and type(op) in _OP_SYMBOLS:
        return f"operator {_OP_SYMBOLS[type(op)]!r}"
    return f"syntax {type(node).__name__!r}"


class _Validator:
    """Walks a parsed expression; accepts only the allow-listed node types; records the names used."""

    def __init__(self, expression: str, placeholders: Mapping[str, str]) -> None:
        self.expression = expression
        self.placeholders = placeholders
        self.names: list[str] = []
        self.nodes = 0

    def fail(self, message: str) -> InputError:
        return InputError(f"in expression {self.expression!r}: {message}")

    def visit(self, node: ast.AST, depth: int) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.fail(f"too many terms (more than {MAX_NODES})")
        if depth > MAX_DEPTH:
            raise self.fail(f"nested too deeply (more than {MAX_DEPTH} levels)")
        if isinstance(node, ast.Expression):
            self.visit(node.body, depth + 1)
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int | float):
                kind = "string" if isinstance(node.value, str | bytes) else type(node.value).__name__
                raise self.fail(f"{kind} literals are not allowed (only numbers)")
        elif isinstance(node, ast.Name):
            name = self.placeholders.get(node.id, node.id)
            if node.id not in self.placeholders:
                if node.id.startswith("__"):
                    raise self.fail(f"name {node.id!r} is not allowed (names starting with __)")
                if node.id in FUNCTIONS:
                    raise self.fail(f"function {node.id!r} used without a call")
            if name not in self.names:
                self.names.append(name)
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise self.fail(f"{_describe(node)} is not allowed (use + - * / **)")
            if isinstance(node.op, ast.Pow) and any(
                isinstance(n, ast.BinOp) and isinstance(n.op, ast.Pow) for n in ast.walk(node.right)
            ):
                raise self.fail("power towers a**b**c are not allowed (write (a**b)**c or a**(b*c))")
            self.visit(node.left, depth + 1)
            self.visit(node.right, depth + 1)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, ast.USub | ast.UAdd):
                raise self.fail(f"{_describe(node)} is not allowed")
            self.visit(node.operand, depth + 1)
        elif isinstance(node, ast.Call):
            func = node.func
            if not isinstance(func, ast.Name) or func.id in self.placeholders:
                what = _describe(func) if not isinstance(func, ast.Name) else "calling a column"
                raise self.fail(f"only calls to {', '.join(FUNCTIONS)} are allowed ({what} found)")
            if func.id not in FUNCTIONS:
                raise self.fail(f"unknown function {func.id!r} (allowed: {', '.join(FUNCTIONS)})")
            if node.keywords:
                raise self.fail(f"keyword arguments are not allowed in {func.id}()")
            arity = _ARITY[func.id]
            if len(node.args) != arity:
                raise self.fail(f"{func.id}() takes {arity} argument{'s' if arity > 1 else ''}, got {len(node.args)}")
            for arg in node.args:
                if isinstance(arg, ast.Starred):
                    raise self.fail("starred arguments are not allowed")
                self.visit(arg, depth + 1)
        else:
            raise self.fail(f"{_describe(node)} is not allowed")


def _compile(expression: str) -> tuple[ast.Expression, dict[str, str], tuple[str, ...]]:
    """Parse and validate; returns (tree, placeholder -> column name, names used in order)."""
    if not isinstance(expression, str):
        raise InputError(f"an expression must be a string, got {type(expression).__name__}")
    text = expression.strip()
    if not text:
        raise InputError("empty expression")
    if len(text) > MAX_LENGTH:
        raise InputError(f"expression too long ({len(text)} characters, at most {MAX_LENGTH})")
    if "\n" in text or "\r" in text:
        raise InputError(f"in expression {text!r}: line breaks are not allowed")
    if _PLACEHOLDER_RE.search(_BACKQUOTE_RE.sub("", text)):
        raise InputError(f"in expression {text!r}: names like _bq0_ are reserved")
    placeholders: dict[str, str] = {}

    def _swap(match: re.Match[str]) -> str:
        column = match.group(1)
        if not column:
            raise InputError(f"in expression {text!r}: empty backquoted name")
        key = next((k for k, v in placeholders.items() if v == column), None)
        if key is None:
            key = _PLACEHOLDER.format(len(placeholders))
            placeholders[key] = column
        return f" {key} "

    source = _BACKQUOTE_RE.sub(_swap, text).strip()
    if "`" in source:
        raise InputError(f"in expression {text!r}: unmatched backquote")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as err:
        raise InputError(f"invalid expression {text!r}: {err.msg}") from None
    except (RecursionError, MemoryError, ValueError):
        raise InputError(f"invalid expression {text!r}: too complex") from None
    validator = _Validator(text, placeholders)
    validator.visit(tree, 0)
    return tree, placeholders, tuple(validator.names)


def _evaluate(node: ast.AST, env: Mapping[str, np.ndarray], placeholders: Mapping[str, str]) -> np.ndarray:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, env, placeholders)
    if isinstance(node, ast.Constant):
        return np.float64(node.value)
    if isinstance(node, ast.Name):
        return env[placeholders.get(node.id, node.id)]
    if isinstance(node, ast.BinOp):
        left = _evaluate(node.left, env, placeholders)
        right = _evaluate(node.right, env, placeholders)
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        operand = _evaluate(node.operand, env, placeholders)
        return np.negative(operand) if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.Call):
        args = [_evaluate(a, env, placeholders) for a in node.args]
        name = node.func.id  # type: ignore[attr-defined]
        if name in _UNARY:
            return _UNARY[name](args[0])
        if name in _BINARY:
            return _BINARY[name](args[0], args[1])
        return _NARY[name][0](*args)
    raise AssertionError(f"unvalidated node {type(node).__name__}")  # unreachable after _compile


@dataclass(frozen=True)
class DerivedFeature:
    """A named expression over table columns (see the module docstring for the grammar).

    Attributes:
        name: the new column's name (letters, digits, ``_``; not a function name).
        expression: the expression text, e.g. ``"(N1000022_3**2-N1000022_4**2)**2"``.

    Both are validated on construction (:class:`InputError` on bad input). Stored
    in model files as the pair ``(name, expression)``.
    """

    name: str
    expression: str
    _tree: ast.Expression = field(init=False, repr=False, compare=False)
    _placeholders: dict[str, str] = field(init=False, repr=False, compare=False)
    _names: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise InputError(f"a derived feature name must be a string, got {type(self.name).__name__}")
        name = self.name.strip()
        _check_name(name, "derived feature name")
        expression = self.expression.strip() if isinstance(self.expression, str) else self.expression
        tree, placeholders, names = _compile(expression)
        if name in names:
            raise InputError(f"derived feature {name!r} refers to itself")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "expression", expression)
        object.__setattr__(self, "_tree", tree)
        object.__setattr__(self, "_placeholders", placeholders)
        object.__setattr__(self, "_names", names)

    @property
    def columns_used(self) -> tuple[str, ...]:
        """Column names the expression reads, in order of first appearance."""
        return self._names

    def apply(self, df: pd.DataFrame | Mapping[str, object]) -> pd.Series:
        """Evaluate on a table; returns a float64 Series named :attr:`name` (index of ``df``).

        Raises:
            InputError: a column the expression uses is absent (named).
            DataError: a used column is not numeric, or the result is not finite in a row
                whose inputs are all finite (rows with missing inputs give NaN).
        """
        frame = df if isinstance(df, pd.DataFrame) else pd.DataFrame(df)
        env: dict[str, np.ndarray] = {}
        for col in self._names:
            if col not in frame.columns:
                raise InputError(f"derived feature {self.name!r} = {self.expression}: unknown column {col!r}")
            try:
                env[col] = pd.to_numeric(frame[col], errors="raise").to_numpy(dtype=np.float64)
            except (TypeError, ValueError):
                raise DataError(f"derived feature {self.name!r}: column {col!r} is not numeric") from None
        with np.errstate(all="ignore"):
            values = _evaluate(self._tree, env, self._placeholders)
        values = np.broadcast_to(np.asarray(values, dtype=np.float64), (len(frame),)).copy()
        inputs_finite = np.ones(len(frame), dtype=bool)
        for column in env.values():
            inputs_finite &= np.isfinite(column)
        bad = ~np.isfinite(values) & inputs_finite
        if bad.any():
            first = int(np.argmax(bad)) + 1  # data rows count from 1, as in tables.py
            raise DataError(
                f"derived feature {self.name!r} = {self.expression} is not finite for {int(bad.sum())} of "
                f"{len(values)} rows (first: data row {first})"
            )
        return pd.Series(values, index=frame.index, name=self.name)

    def as_pair(self) -> tuple[str, str]:
        """``(name, expression)``: what a model file stores."""
        return (self.name, self.expression)

    def __str__(self) -> str:
        return f"{self.name}={self.expression}"


DeriveSpec = DerivedFeature | str | tuple[str, str] | Sequence[str]


def parse_derive(text: str) -> DerivedFeature:
    """``"name=expression"`` -> :class:`DerivedFeature` (the CLI's ``--derive`` argument)."""
    if not isinstance(text, str):
        raise InputError(f"expected 'name=expression', got {text!r}")
    name, sep, expression = text.partition("=")
    if not sep or not name.strip() or not expression.strip():
        raise InputError(f"expected name=expression, got {text!r}")
    return DerivedFeature(name.strip(), expression.strip())


def as_derived(spec: DeriveSpec) -> DerivedFeature:
    """Accept a :class:`DerivedFeature`, ``"name=expr"`` or a ``(name, expr)`` pair (as read from a model file)."""
    if isinstance(spec, DerivedFeature):
        return spec
    if isinstance(spec, str):
        return parse_derive(spec)
    try:
        name, expression = spec
    except (TypeError, ValueError):
        raise InputError(f"a derived feature is 'name=expression' or (name, expression), got {spec!r}") from None
    return DerivedFeature(name, expression)


def parse_derived(specs: Iterable[DeriveSpec], columns: Iterable[str] = ()) -> list[DerivedFeature]:
    """Validate a list of derived features without evaluating them.

    Checks that names are unique, do not shadow an existing column of
    ``columns``, and (when ``columns`` is non-empty) that every expression uses
    only existing columns or names defined earlier in the list.
    """
    known = [str(c) for c in columns]
    known_set = set(known)
    check_columns = bool(known)
    out: list[DerivedFeature] = []
    defined: set[str] = set()
    for spec in specs:
        feature = as_derived(spec)
        if feature.name in defined:
            raise InputError(f"derived feature {feature.name!r} defined twice")
        if feature.name in known_set:
            raise InputError(f"derived feature name {feature.name!r} is already a column of the table")
        if check_columns:
            for col in feature.columns_used:
                if col not in known_set and col not in defined:
                    raise InputError(f"derived feature {feature.name!r} = {feature.expression}: unknown column {col!r}")
        defined.add(feature.name)
        out.append(feature)
    return out


def add_derived(df: pd.DataFrame, derived: Iterable[DeriveSpec]) -> pd.DataFrame:
    """A copy of ``df`` with the derived columns appended, in order (later ones may use earlier ones).

    Raises:
        InputError: duplicate or shadowing names, bad syntax, unknown columns.
        DataError: non-numeric inputs or non-finite results.
    """
    features = parse_derived(derived, df.columns)
    out = df.copy()
    for feature in features:
        out[feature.name] = feature.apply(out)
    return out


def required_columns(names: Iterable[str], derived: Iterable[DeriveSpec] = ()) -> list[str]:
    """Raw columns needed to build ``names`` (model inputs that may include derived names).

    Derived names are replaced, recursively, by the columns their expressions use.
    The result keeps first-appearance order and contains no derived names.
    """
    by_name = {f.name: f for f in (as_derived(s) for s in derived)}
    out: list[str] = []
    seen: set[str] = set()

    def visit(name: str, stack: tuple[str, ...]) -> None:
        if name in by_name:
            if name in stack:
                raise InputError(f"derived features refer to each other in a cycle: {' -> '.join(stack + (name,))}")
            for col in by_name[name].columns_used:
                visit(col, stack + (name,))
        elif name not in seen:
            seen.add(name)
            out.append(name)

    for name in names:
        visit(str(name), ())
    return out
