"""Arithmetic on a number or an array of configurations, with the same expressions.

The serving and training models run on one configuration (plain Python floats: a single estimate
in the window stays in pure Python, microseconds) or on a point group (numpy arrays of one entry
per configuration: a sweep costs one call). Python's ``max``/``min``/``math.ceil`` and ``if`` do
not take arrays and numpy's functions are slow on plain numbers, so the models call these
instead. Both kinds give bit-identical IEEE results (``max`` and ``np.maximum`` of two doubles
are the same double), which the array/single equivalence test holds them to.
"""

from __future__ import annotations

import math
from dataclasses import fields, replace
from typing import Any

import numpy as np

Num = Any  # float | int | np.ndarray: one configuration's number, or one per configuration


def is_array(*values: Num) -> bool:
    return any(isinstance(v, np.ndarray) for v in values)


_ndarray = np.ndarray


def maximum(a: Num, b: Num) -> Num:
    # type() rather than isinstance: called dozens of times per single estimate
    return max(a, b) if type(a) is not _ndarray and type(b) is not _ndarray else np.maximum(a, b)


def minimum(a: Num, b: Num) -> Num:
    return min(a, b) if type(a) is not _ndarray and type(b) is not _ndarray else np.minimum(a, b)


def ceil(a: Num) -> Num:
    """Ceiling as an integer: ``math.ceil`` of a number, int64 of an array."""
    return np.ceil(a).astype(np.int64) if isinstance(a, np.ndarray) else math.ceil(a)


def where(cond: Num, a: Num, b: Num) -> Num:
    """``a`` where ``cond`` holds, else ``b`` (``a if cond else b`` for one configuration)."""
    if isinstance(cond, np.ndarray):
        return np.where(cond, a, b)
    return a if cond else b


def first_largest(names: tuple[str, ...], values: tuple[Num, ...]) -> Any:
    """The name of the largest value, the first one on a tie (as ``max`` over them in this order):
    a str, or an array of them over a point group."""
    if not is_array(*values):
        best = 0
        for k in range(1, len(values)):
            if values[k] > values[best]:
                best = k
        return names[best]
    return np.array(names)[np.argmax(np.stack(np.broadcast_arrays(*values)), axis=0)]


def power(base: float, exponent: Num) -> Num:
    """``base ** exponent``, each entry by the C library's ``pow`` (as Python computes it).

    numpy's array ``power`` (and ``exp``/``log``) use SIMD approximations that differ from
    ``pow`` in the last bit for a few percent of inputs, and depend on the CPU; a point of a group
    must read exactly as its single estimate on every machine, so arrays go entry by entry.
    """
    base = float(base)
    if isinstance(exponent, np.ndarray):
        flat = exponent.ravel().tolist()
        return np.fromiter((base**e for e in flat), dtype=float, count=len(flat)).reshape(exponent.shape)
    return base ** float(exponent)


def point_of(obj: Any, i: int) -> Any:
    """A dataclass of figures with every per-point array replaced by its entry ``i`` as a Python
    number (the object itself when it holds no array): what a formula of point ``i`` reads."""
    per_point = {f.name: getattr(obj, f.name) for f in fields(obj)}
    per_point = {name: v for name, v in per_point.items() if isinstance(v, np.ndarray)}
    if not per_point:
        return obj
    return replace(obj, **{name: v[i].item() for name, v in per_point.items()})


def has_arrays(obj: Any) -> bool:
    """Whether a dataclass of figures holds a per-point array."""
    return any(isinstance(getattr(obj, f.name), np.ndarray) for f in fields(obj))


def ratio(a: Num, b: Num) -> Num:
    """``a / b`` where ``b`` is not zero, 0.0 where it is (``a / b if b else 0.0``); an array's
    zero entries are never divided by, so no division warning is raised for them."""
    if type(a) is not _ndarray and type(b) is not _ndarray:
        return a / b if b else 0.0
    nonzero = np.asarray(b) != 0
    return np.where(nonzero, a / np.where(nonzero, b, 1.0), 0.0)


def as_float(a: Num) -> Num:
    """``float(a)`` of a number, a float64 copy of an array (the same value per entry)."""
    return a.astype(float) if type(a) is _ndarray else float(a)
