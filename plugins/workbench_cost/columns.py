"""Reading the performance plugin's results over a point group, and writing results whose
explanation differs from point to point.

A cost key has no value at a point where the performance plugin gives no throughput (or a training
run no length): there it carries the reason as its formula and note, exactly as a single estimate
does, while the other points carry the price and its formula. :class:`PerPoint` is such a column.

A group of one point (a single estimate) runs the same formulas over Python numbers: :func:`numbers`
then gives a float and a bool, and the helpers here take either form. numpy's cost per call on
one-entry arrays would otherwise be most of a single estimate's time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from workbench.engine.points import Column, PointsContext
from workbench_cost.keys import label, unit

#: Where something holds over a group: True (every point), False (no point), or a bool array
#: that is true at some points only. Groups are usually uniform, and then a key is one plain column.
Some = bool | np.ndarray
#: A float64 array with one entry per point, or the Python float of a group of one point.
Floats = float | np.ndarray


def some(mask: bool | np.ndarray) -> Some:
    """``mask`` as :data:`Some` (a group of one point's Python bool is one already)."""
    if not isinstance(mask, np.ndarray):
        return mask
    count = np.count_nonzero(mask)
    return True if count == mask.size else (False if count == 0 else mask)


def zeros(ctx: PointsContext) -> Floats:
    """0.0 at every point."""
    return 0.0 if ctx.n == 1 else np.zeros(ctx.n)


def where(mask: bool | np.ndarray, yes: Floats, no: float) -> Floats:
    """``yes if mask else no`` point by point."""
    return np.where(mask, yes, no) if isinstance(mask, np.ndarray) else (yes if mask else no)


def point_field(ctx: PointsContext, name: str) -> int | np.ndarray:
    """A point field (``gen_len``...): the int64 array, or a group of one point's Python int."""
    values = ctx.points[name]
    return int(values[0]) if ctx.n == 1 else values


def negate(mask: Some) -> Some:
    return (not mask) if isinstance(mask, bool) else ~mask


def _number(value: object) -> float | None:
    """An int or float as a float; None for anything else (None, a bool, text)."""
    if type(value) is float:
        return value
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def numbers(ctx: PointsContext, key: str) -> tuple[Floats, Some]:
    """``key``'s values as float64 (0.0 where there is no number) and where it has one. No number:
    the key is absent (a run for a few keys that do not read it), None, a bool or text. A group of
    one point: a Python float and a bool, read as the one-entry array would be."""
    n = ctx.n
    if n == 1:  # the usual int or float read without a one-entry array (nor a column view of it)
        value = ctx.values.value(key, 0)  # the point's Python value, as the scalar protocol had it
        kind = type(value)
        if kind is float:
            return value, True
        if kind is int:  # an int64 array's entry as float64: float() of the int is the same
            return float(value), True
        return (0.0, False) if value is None else _first(ctx, key, value)  # None: or no such key
    if key not in ctx.values:
        return np.zeros(n), False
    values = ctx.value(key)
    if not isinstance(values, np.ndarray):  # one value shared by every point
        x = _number(values)
        return (np.zeros(n), False) if x is None else (np.full(n, x), True)
    kind = values.dtype.kind
    if kind in "fiu":
        return np.asarray(values, dtype=np.float64), True  # read only: never written in place
    if kind != "O":  # bool or text arrays hold no numbers
        return np.zeros(n), False
    # Nones among the numbers: point by point, each as the point's Python value (Column.value's
    # reading: a numpy number held in an object array counts as the number it is)
    found = [_number(x.item() if isinstance(x, np.generic) else x) for x in values.tolist()]
    has = np.fromiter((x is not None for x in found), dtype=bool, count=n)
    return np.array([0.0 if x is None else x for x in found], dtype=np.float64), some(has)


def figure(ctx: PointsContext, key: str) -> Floats:
    """``x or 0.0`` of ``key``'s numbers, point by point: :func:`or_zero` of :func:`numbers`."""
    if ctx.n == 1:
        value = ctx.values.value(key, 0)
        if type(value) is float:  # the usual figure, read in one step
            return value + 0.0
    return or_zero(numbers(ctx, key)[0])


def _first(ctx: PointsContext, key: str, value: Any) -> tuple[float, bool]:
    """:func:`numbers` of a group of one point whose ``value`` is neither None nor an int or a
    float: read as the array :meth:`PointsContext.value` gives is."""
    values = ctx.value(key)
    if not isinstance(values, np.ndarray):  # one value shared by every point
        x = _number(values)
        return (0.0, False) if x is None else (x, True)
    kind = values.dtype.kind
    if kind in "fiu":
        return float(values[0]), True  # float64's own conversion of the entry
    if kind != "O":  # bool or text arrays hold no numbers
        return 0.0, False
    x = _number(value)  # the entry as the point's Python value, as above
    return (0.0, False) if x is None else (x, True)


def or_zero(values: Floats) -> Floats:
    """``x or 0.0`` point by point, for :func:`numbers`' values (0.0 already stands where None was):
    only a negative zero changes, and adding 0.0 changes exactly that (IEEE 754: -0.0 + 0.0 is 0.0,
    x + 0.0 is x for every other x, NaN and infinities included)."""
    return values + 0.0


def with_none(values: Floats, has: Some) -> Floats | None:
    """``values`` where ``has`` holds and None elsewhere: the float64 array when every point has a
    number, None when none has, else an object array of Python floats and None (the values single
    estimates give)."""
    if has is True:
        return values
    if has is False:
        return None
    out = values.astype(object)
    out[~has] = None
    return out


@lru_cache(maxsize=256)
def null(key: str, why: str) -> Column:
    """``key`` with no value at any point, and the reason (as the formula and the note). The same
    few keys lack a value for the same few reasons estimate after estimate: each is made once, and
    the one column serves every group (its value is None and its formula final text; the engine
    broadcasts a shared column per group size)."""
    return Column(None, unit(key), label(key), why, (), why)


class PerPoint(Column):
    """A column whose points take their explanation (unit, label, formula, assumptions, note) from
    different parts: ``parts[which[i]]`` explains point ``i``. The values are one array."""

    __slots__ = ("_parts", "_which")

    def __init__(self, values: np.ndarray | None, parts: Sequence[Column], which: np.ndarray) -> None:
        first = parts[int(which[0])]
        super().__init__(values, first.unit, first.label, first.formula, first.assumptions, first.note)
        self._parts = parts
        self._which = which

    def quantity(self, i: int) -> Any:
        return self._parts[int(self._which[i])].quantity(i)

    def take(self, i: int) -> Column:
        return self._parts[int(self._which[i])].take(i)


def known(has: Some, key: str, why: str, column: Column) -> Column:
    """``column`` where ``has`` holds; elsewhere ``key`` has no value, and ``why`` says so (as
    :func:`pick` with those two cases gives it). A uniform group, a single estimate among them,
    decides without building the cases."""
    if has is True:
        return column
    if has is False:
        return null(key, why)
    return pick(column.values, [(~has, lambda: null(key, why)), (None, lambda: column)])


#: A case of :func:`pick`: where it applies (None: every point left), and how to make its part.
Case = tuple[Some | None, Callable[[], Column]]


def pick(values: np.ndarray | None, cases: Sequence[Case]) -> Column:
    """One column of ``values`` from ``cases``: each point is explained by the first case that
    applies there; the last case should apply to every point left (None). Each part holds
    ``values`` itself, or None where the key has no value. When one case explains every point (the
    usual group), its part alone is the column; only the parts needed are made."""
    for where, make in cases:
        if where is None or where is True:
            return make()
        if where is not False:
            break
    masks: list[np.ndarray] = []
    parts: list[Column] = []
    for where, make in cases:
        if where is False:
            continue
        masks.append(np.asarray(True if where is None else where))
        parts.append(make())
        if where is None or where is True:
            break
    which = np.select(masks, np.arange(len(parts)), default=len(parts) - 1)
    return PerPoint(values, parts, which)
