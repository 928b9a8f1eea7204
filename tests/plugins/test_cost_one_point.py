"""A group of one point (a single estimate) reads the performance figures as Python numbers, without
numpy; a group of several reads them as arrays. Both readings must agree bit for bit, whatever form
the figure's column takes: a float64, int64, bool or object array, one value shared by every point,
or a scalar estimator's quantity (numpy numbers inside, which no well-behaved producer hands out,
included).
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest
from workbench_cost.columns import figure, numbers

from workbench.engine.points import Column, GroupResults, PointsContext
from workbench.engine.quantity import q

KEY = "performance.tokens_per_s"


def context(n: int, results: GroupResults) -> PointsContext:
    # numbers() reads only the group's size and its results
    return PointsContext(None, None, None, None, None, {}, n, results)  # type: ignore[arg-type]


def from_column(values: Any, n: int) -> PointsContext:
    results = GroupResults(n)
    if isinstance(values, np.ndarray):  # one entry per point
        results.add_columns({KEY: Column(np.concatenate([values] * n))})
    else:
        results.add_columns({KEY: Column(values)})
    return context(n, results)


def from_quantity(value: Any, n: int) -> PointsContext:
    results = GroupResults(n)
    results.add_points([{KEY: q(value, "", KEY)} for _ in range(n)])
    return context(n, results)


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


COLUMNS = [
    np.array([1392.84176792206]),
    np.array([-0.0]),
    np.array([2**62 + 1], dtype=np.int64),  # rounds on the way to float64
    np.array([7], dtype=np.uint64),
    np.array([0.1], dtype=np.float32),
    np.array([True]),
    np.array(["fast"]),
    np.array([None], dtype=object),
    np.array([2.5], dtype=object),
    np.array([np.int64(3)], dtype=object),
    np.array([np.float32(0.1)], dtype=object),
    np.array([np.bool_(True)], dtype=object),
    7,
    2.5,
    None,
    True,
    "text",
    np.float64(2.5),
]
QUANTITIES = [1392.84176792206, -0.0, float("nan"), float("inf"), 4, 2**62 + 1, 2**70, None, True, "x",
              np.float64(2.5), np.float32(0.1), np.int64(3)]  # fmt: skip


@pytest.mark.parametrize(
    "make,value", [(from_column, v) for v in COLUMNS] + [(from_quantity, v) for v in QUANTITIES]
)
def test_one_point_reads_what_the_array_path_reads(make: Any, value: Any) -> None:
    one, many = make(value, 1), make(value, 3)
    x, has = numbers(one, KEY)
    xs, have = numbers(many, KEY)
    assert type(x) is float and type(has) is bool
    assert bits(x) == bits(float(xs[0]))
    assert has is (have is True or (have is not False and bool(have[0])))
    y, ys = figure(one, KEY), figure(many, KEY)
    assert type(y) is float and bits(y) == bits(float(ys[0]))


def test_an_absent_figure_is_no_number() -> None:
    assert numbers(context(1, GroupResults(1)), KEY) == (0.0, False)
    assert figure(context(1, GroupResults(1)), KEY) == 0.0
