"""Reading the performance plugin's results over a point group, and writing results whose
explanation differs from point to point.

A cost key has no value at a point where the performance plugin gives no throughput (or a training
run no length): there it carries the reason as its formula and note, exactly as a single estimate
does, while the other points carry the price and its formula. :class:`PerPoint` is such a column.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.engine.points import Column, PointsContext
from workbench_cost.keys import label, unit


def _number(value: object) -> float | None:
    """An int or float as a float; None for anything else (None, a bool, text)."""
    if type(value) is float:
        return value
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def numbers(ctx: PointsContext, key: str) -> tuple[np.ndarray, np.ndarray]:
    """``key``'s values as float64 (0.0 where there is no number) and the mask of points that have
    one. No number: the key is absent (a run for a few keys that do not read it), None, a bool or
    text at that point."""
    n = ctx.n
    if key not in ctx.values:
        return np.zeros(n), np.zeros(n, dtype=bool)
    values = ctx.value(key)
    if not isinstance(values, np.ndarray):  # one value shared by every point
        x = _number(values)
        return (np.zeros(n), np.zeros(n, dtype=bool)) if x is None else (np.full(n, x), np.ones(n, dtype=bool))
    kind = values.dtype.kind
    if kind in "fiu":
        return values.astype(np.float64), np.ones(n, dtype=bool)
    if kind != "O":  # bool or text arrays hold no numbers
        return np.zeros(n), np.zeros(n, dtype=bool)
    found = [_number(x) for x in values.tolist()]  # Nones among the numbers: point by point
    has = np.fromiter((x is not None for x in found), dtype=bool, count=n)
    return np.array([0.0 if x is None else x for x in found], dtype=np.float64), has


def or_zero(values: np.ndarray) -> np.ndarray:
    """``x or 0.0`` point by point, for :func:`numbers`' values (0.0 already stands where None was):
    only a negative zero changes."""
    return np.where(values == 0.0, 0.0, values)


def with_none(values: np.ndarray, has: np.ndarray) -> np.ndarray:
    """``values`` where ``has`` holds and None elsewhere: a float64 array when every point has a
    number, else an object array of Python floats and None (the values a single estimate gives)."""
    if has.all():
        return values
    out = values.astype(object)
    out[~has] = None
    return out


def null(key: str, why: str) -> Column:
    """``key`` with no value at any point, and the reason (as the formula and the note)."""
    return Column(None, unit(key), label(key), why, (), why)


class PerPoint(Column):
    """A column whose points take their explanation (unit, label, formula, assumptions, note) from
    different parts: ``parts[which[i]]`` explains point ``i``. The values are one array."""

    __slots__ = ("_parts", "_which")

    def __init__(self, values: np.ndarray, parts: Sequence[Column], which: np.ndarray) -> None:
        first = parts[int(which[0])]
        super().__init__(values, first.unit, first.label, first.formula, first.assumptions, first.note)
        self._parts = parts
        self._which = which

    def quantity(self, i: int) -> Any:
        return self._parts[int(self._which[i])].quantity(i)

    def take(self, i: int) -> Column:
        return self._parts[int(self._which[i])].take(i)


def pick(values: Any, cases: Sequence[tuple[np.ndarray | None, Column]]) -> Column:
    """One column from ``cases`` (mask, part): each point is explained by the first case whose mask
    holds there (None: every point; the last case should be that). Each part holds ``values``
    itself, or None where the key has no value. When one case explains every point (the usual
    group), that part is the column."""
    masks = [np.ones(1, dtype=bool) if mask is None else mask for mask, _ in cases]
    for mask, (_, column) in zip(masks, cases):
        if mask.all():
            return column
        if mask.any():
            break
    which = np.select(masks, list(range(len(cases))), default=len(cases) - 1)
    return PerPoint(values, [column for _, column in cases], which)
