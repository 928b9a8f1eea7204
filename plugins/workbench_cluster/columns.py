"""Columns of the cluster estimator: the same code for a group of one point (Python floats) and for
a group of many (float64 arrays), with NaN standing for "no value here" until a key is written."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

import numpy as np

from workbench.engine.points import Column, PointsContext, PointWarning, SharedColumn, column_for
from workbench.engine.quantity import FixedQuantity
from workbench_cluster.formulas import Floats
from workbench_cluster.keys import label, unit

NAN = float("nan")

#: A key's formula at point i.
Formula = Callable[[int], str]


@lru_cache(maxsize=128)
def null_column(key: str, why: str) -> SharedColumn:
    """``key`` with no value at any point, the reason as its formula and note (made once)."""
    return SharedColumn(FixedQuantity(None, unit(key), label(key), why, (), why))


def bytes_text(n: float) -> str:
    for step, name in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB")):
        if n >= step:
            return f"{n / step:,.3g} {name}"
    return f"{n:,.0f} B"


def number(value: object) -> float:
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_)):
        return float(value)
    return NAN


def figure(ctx: PointsContext, key: str) -> Floats:
    """``key``'s numbers, NaN where it has none: a float for a group of one point (or a value every
    point shares), else a float64 array."""
    if ctx.n == 1:
        return number(ctx.values.value(key, 0)) if key in ctx.values else NAN
    if key not in ctx.values:
        return NAN
    values = ctx.value(key)
    if not isinstance(values, np.ndarray):
        return number(values)
    if values.dtype.kind in "fiu":
        return values.astype(np.float64)
    if values.dtype.kind == "O":
        return np.array([number(x) for x in values.tolist()], dtype=np.float64)
    return np.full(ctx.n, NAN)


def isnan(x: Floats) -> bool | np.ndarray:
    """NaN test of a float (a Python bool) or an array (a bool array): a single estimate calls no numpy."""
    return math.isnan(x) if isinstance(x, float) else np.isnan(x)


def nowhere(x: Floats) -> bool:
    """Whether ``x`` has no value at any point."""
    return math.isnan(x) if isinstance(x, float) else bool(np.isnan(x).all())


def choose(cond: bool | np.ndarray, yes: Floats, no: Floats) -> Floats:
    """``yes if cond else no`` point by point."""
    return np.where(cond, yes, no) if isinstance(cond, np.ndarray) else (yes if cond else no)


def larger(a: Floats, b: Floats) -> Floats:
    """``max(a, b)`` point by point (NaN stays NaN, as np.maximum keeps it)."""
    if isinstance(a, float) and isinstance(b, float):
        return a if (a >= b or math.isnan(a)) else b
    return np.maximum(a, b)


def where_any(cond: bool | np.ndarray) -> tuple[bool, np.ndarray | None]:
    """(any point, the mask for a PointWarning: None when every point) of a condition."""
    if not isinstance(cond, np.ndarray):
        return bool(cond), None
    count = int(np.count_nonzero(cond))
    return count > 0, (None if count == cond.size else cond)


class Out:
    """The columns being built, one per key."""

    def __init__(self, ctx: PointsContext) -> None:
        self.n = ctx.n
        self.values: dict[str, Column] = {}
        self.warnings: list[PointWarning] = []

    def null(self, keys: tuple[str, ...], why: str) -> None:
        for key in keys:
            self.values[key] = null_column(key, why)

    def put(self, key: str, values: Floats, formula: Formula | str, ids: tuple[str, ...] = (), note: str = "",
            why: str = "") -> None:  # fmt: skip
        """``values`` (NaN: no value at that point, ``why`` says why) with its formula of point i."""
        n = self.n
        if n == 1:
            x = float(values) if isinstance(values, float) else float(np.asarray(values).reshape(-1)[0])
            if math.isnan(x):
                self.values[key] = null_column(key, why)
                return
            self.values[key] = column_for(1, x, unit(key), label(key), formula, ids, note)
            return
        array = np.broadcast_to(np.asarray(values, dtype=np.float64), (n,))
        missing = np.isnan(array)
        if missing.all():
            self.values[key] = null_column(key, why)
            return
        if not missing.any():
            self.values[key] = Column(np.array(array), unit(key), label(key), formula, ids, note)
            return
        held = array.astype(object)
        held[missing] = None
        shown = formula if callable(formula) else (lambda _i: formula)
        self.values[key] = Column(held, unit(key), label(key), lambda i: why if missing[i] else shown(i), ids, note)

    def text(self, key: str, value: str | np.ndarray, formula: Formula | str, note: str = "") -> None:
        if self.n == 1 and isinstance(value, np.ndarray):
            value = str(value.reshape(-1)[0])
        self.values[key] = column_for(self.n, value, "", label(key), formula, (), note)

    def warn(self, cond: bool | np.ndarray, code: str, message: Formula | str, severity: str, fix: str) -> None:
        found, mask = where_any(cond)
        if found:
            self.warnings.append(PointWarning(code, message, severity, fix, mask))


def plain(x: Floats) -> Floats:
    """A 0-d array (numpy's answer for float inputs) as a Python float."""
    return float(x) if np.ndim(x) == 0 else x
