"""What the sections of a cost estimate share over one point group: prices, GPUs, power, and the
columns and warnings made so far."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from workbench.core.scenario import Pricing
from workbench.engine.points import Column, PointsContext, PointWarning
from workbench_cost.columns import Floats, null
from workbench_cost.keys import COST
from workbench_cost.power import HOST, IDLE

#: The assumptions the power figures read (listed on every result computed from power).
POWER_IDS = (IDLE, HOST)
#: Why a key has no value, as its formula and note say.
NO_PRICE = "no rental price: set --usd-per-gpu-hour"
NO_POWER = "no power figure for this accelerator"


@dataclass(slots=True)
class Basis:
    ctx: PointsContext
    pricing: Pricing
    training: bool
    #: GPUs paid for, per point: whole numbers in float64 (every use multiplies them by a float,
    #: which is what Python did with the int); printed as ``int(at(gpus, i))``. Formulas close
    #: over such arrays, never over the Basis: it holds the columns, and the cycle would leave
    #: every estimate to the cyclic garbage collector. A group of one point holds Python floats.
    gpus: Floats
    price: float | None
    purchase: float | None
    purchase_from: str
    hourly: Floats | None  # None: no rental price
    power_kw: Floats | None  # None: no power figure (or no key that needs one)
    busy_w: Floats | None
    idle_w: float | None
    #: Whether a key is wanted (``ctx.wants``, decided once when every key is).
    want: Callable[[str], bool]
    values: dict[str, Column] = field(default_factory=dict)
    warnings: list[PointWarning] = field(default_factory=list)


def put_nulls(b: Basis, keys: tuple[str, ...], why: str) -> None:
    """Each of ``keys`` that is wanted, with no value and the reason, in the order of ``keys``."""
    if b.want is _EVERY_KEY:  # every key wanted: the same few sets recur, each built once
        b.values.update(_nulls(keys, why))
        return
    for key in keys:
        if b.want(key):
            b.values[key] = null(key, why)


@lru_cache(maxsize=256)
def _nulls(keys: tuple[str, ...], why: str) -> dict[str, Column]:
    return {key: null(key, why) for key in keys}  # read only: only ever copied into results


def wanted(ctx: PointsContext) -> Callable[[str], bool]:
    """``ctx.wants`` for this plugin's keys, asked without a Python call per key (a run for every
    key asks about two dozen): every key is one of COST, the keys it declares."""
    return _EVERY_KEY if ctx.wanted is None else ctx.wanted.__contains__


_EVERY_KEY = frozenset(COST).__contains__


def usd(x: float | None) -> str:
    return "n/a" if x is None else f"${float(x):,.2f}"
