"""The array protocol: estimators that evaluate many configurations in one call.

A *point group* is a set of configurations that share everything except the :data:`POINT_FIELDS`
(batch, prompt and generated lengths): one model, one cluster, one workload, precision and
layout. An :class:`ArrayEstimator` reads those fields as numpy arrays (structure of arrays, one
entry per point) and returns a :class:`Column` per result key, so that a sweep of a thousand
batch x length combinations costs one call per estimator, not a thousand. A single estimate is
the same call on a group of one point: there is no scalar copy of the model.

Explanations stay lazy: a column's formula is a function of the point's index, rendered only for
the point a person looks at (:meth:`Column.quantity`). Warnings carry a mask of the points they
concern (:class:`PointWarning`).

Estimators that only implement the scalar protocol (:class:`~workbench.engine.estimator.Estimator`)
keep working: the engine runs them point by point and gathers their quantities into columns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from workbench.engine.assumptions import AssumptionSet
from workbench.engine.estimator import EstimatorInfo
from workbench.engine.quantity import FixedQuantity, Quantity, Value, Warning

if TYPE_CHECKING:
    from workbench.core.hardware import Accelerator, Cluster
    from workbench.core.model import ModelArchitecture
    from workbench.core.params import ParameterCount
    from workbench.core.scenario import Scenario

#: Scenario fields that vary inside a point group. Everything else is the same for every point.
POINT_FIELDS: tuple[str, ...] = ("batch_size", "seq_len", "gen_len")

#: A column's formula: final text, or the text of point ``i`` rendered on demand.
PointFormula = str | Callable[[int], str] | None


class Varies:
    """Stands in for a point field in the scenario an array estimator sees.

    Reading ``ctx.scenario.batch_size`` in an array estimator would silently use one point's value
    for every point; this object refuses every use (arithmetic, comparison, conversion) with the
    field's name, so the mistake fails loudly in the first test that runs the estimator.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _refuse(self, *_: object) -> Any:
        raise TypeError(f"scenario.{self.name} varies per point: read ctx.points['{self.name}']")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _refuse
    __pow__ = __rpow__ = __neg__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __int__ = __float__ = __index__ = __bool__ = __format__ = _refuse

    def __eq__(self, other: object) -> bool:
        return self._refuse()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<{self.name} varies per point>"


def _python(value: Any) -> Value:
    """A numpy scalar as the Python value the scalar protocol hands out (JSON-safe types)."""
    return value.item() if isinstance(value, np.generic) else value


def at(values: Any, i: int) -> Any:
    """Point ``i``'s entry as a Python value, for a formula (a value shared by every point, or a
    one-point group's Python number, as it is)."""
    return _python(values[i]) if isinstance(values, np.ndarray) else values


def int_product(*factors: Any) -> Any:
    """The exact product of integer arrays and ints, as Python's ints give it.

    int64 when the largest possible product fits (every case short of the input limits' far
    corner: a million sequences of 16 M tokens); otherwise Python ints in an object array, so
    that an extreme point is slow rather than wrapped around.
    """
    if not any(isinstance(factor, np.ndarray) for factor in factors):
        result = 1
        for factor in factors:
            result = result * factor  # Python ints: exact already
        return result
    bound = 1
    for factor in factors:
        top = int(np.abs(factor).max()) if isinstance(factor, np.ndarray) and factor.size else abs(int(factor))
        bound *= max(top, 1)
    if bound < 2**62:
        result: Any = 1
        for factor in factors:
            result = result * (factor.astype(np.int64) if isinstance(factor, np.ndarray) else factor)
        return result
    result = 1
    for factor in factors:
        result = result * (factor.astype(object) if isinstance(factor, np.ndarray) else int(factor))
    return result


class Column:
    """One result key over a point group: values, unit, label, lazy per-point formula.

    ``values`` is a numpy array with one entry per point, or a single Python value shared by every
    point (a parameter count does not depend on the batch). Integer, float and bool arrays come
    back as Python ``int``, ``float`` and ``bool`` per point, exactly as the scalar protocol gives.
    """

    __slots__ = ("values", "unit", "label", "formula", "assumptions", "note", "_quantities", "_array", "_plain")

    def __init__(
        self,
        values: Any,
        unit: str = "",
        label: str = "",
        formula: PointFormula = None,
        assumptions: tuple[str, ...] = (),
        note: str = "",
    ) -> None:
        self.values = values
        self.unit = unit
        self.label = label
        self.formula = formula
        self.assumptions = assumptions
        self.note = note
        self._quantities: Sequence[Quantity] | None = None
        self._array: np.ndarray | None = values if isinstance(values, np.ndarray) else None
        self._plain: list[Any] | None = None

    def value(self, i: int) -> Value:
        if self._quantities is not None:
            return self._quantities[i].value
        if isinstance(self.values, np.ndarray):
            return _python(self.values[i])
        return self.values

    def array(self, n: int) -> np.ndarray:
        """The values as an array of ``n`` entries (broadcast when shared by every point; a
        shared column may sit in groups of different sizes, so the broadcast is per size)."""
        found = self._array
        if found is None or len(found) != n:
            if self._quantities is not None:
                found = np.array([q.value for q in self._quantities])
            else:
                found = np.full(n, self.values)
            self._array = found
        return found

    def quantity(self, i: int) -> Quantity:
        """Point ``i`` as the scalar protocol's Quantity; its formula is rendered when read."""
        if self._quantities is not None:
            return self._quantities[i]
        formula, value = self.formula, self.values
        if isinstance(value, np.ndarray):
            plain = self._plain
            if plain is None:
                # Python values of every point at once: a group's points are read one by one
                plain = self._plain = value.tolist()
            value = plain[i]
        lazy = partial(formula, i) if callable(formula) else formula
        return Quantity(value, self.unit, self.label, lazy, self.assumptions, self.note)

    def take(self, i: int) -> Column:
        """Point ``i`` alone, as a column of a one-point group."""
        if self._quantities is not None:
            return QuantityColumn([self._quantities[i]])
        if not isinstance(self.values, np.ndarray):
            return self
        formula = self.formula
        shifted = (lambda _j: formula(i)) if callable(formula) else formula
        return Column(self.values[i : i + 1], self.unit, self.label, shifted, self.assumptions, self.note)


class QuantityColumn(Column):
    """A scalar estimator's quantities over the group, one per point, kept as they came (formulas
    included); the value array is built only if an array estimator reads it."""

    __slots__ = ()

    def __init__(self, quantities: Sequence[Quantity]) -> None:  # noqa: D107 - the attributes read from the first
        self._quantities = quantities
        self._array = None
        self._plain = None
        self.values = None

    def __getattr__(self, name: str) -> Any:
        # unit, label, formula, assumptions, note: the first point's, read only when asked for
        if name in ("unit", "label", "assumptions", "note"):
            return getattr(self._quantities[0], name)
        if name == "formula":
            return None
        raise AttributeError(name)


class SharedColumn(Column):
    """A column that reads the same at every point of every group it sits in (one value, final
    text), made once by an estimator and reused: each point gets the same read-only quantity."""

    __slots__ = ("_shared",)

    def __init__(self, quantity: FixedQuantity) -> None:  # noqa: D107
        super().__init__(quantity.value, quantity.unit, quantity.label, quantity.formula, quantity.assumptions,
                         quantity.note)  # fmt: skip
        self._shared = quantity

    def quantity(self, i: int) -> Quantity:
        return self._shared

    def take(self, i: int) -> Column:
        return self


class NotedColumn(Column):
    """A column whose note differs from point to point (drawn assumption values: each point's
    note names its own efficiencies): ``note_for(i)`` is rendered only for a point that is read,
    as formulas are, instead of one Quantity built per point up front."""

    __slots__ = ("note_for",)

    def __init__(self, values: np.ndarray, unit: str, label: str, formula: PointFormula,
                 assumptions: tuple[str, ...], note_for: Callable[[int], str]) -> None:  # fmt: skip
        super().__init__(values, unit, label, formula, assumptions, "")
        self.note_for = note_for

    def quantity(self, i: int) -> Quantity:
        q = super().quantity(i)  # a fresh Quantity, its formula still unrendered
        q.note = self.note_for(i)
        return q

    def take(self, i: int) -> Column:
        note_for, formula = self.note_for, self.formula
        return NotedColumn(self.values[i : i + 1], self.unit, self.label,
                           (lambda _j: formula(i)) if callable(formula) else formula, self.assumptions,
                           lambda _j: note_for(i))  # fmt: skip


#: Shorthand used by array estimators, as ``q`` is for scalar ones.
col = Column


def column_for(
    n: int,
    values: Any,
    unit: str = "",
    label: str = "",
    formula: PointFormula = None,
    assumptions: tuple[str, ...] = (),
    note: str = "",
) -> Column:
    """A :class:`Column` for a group of ``n`` points; for a group of one (a single estimate), the
    point's quantity itself in a :class:`QuantityColumn`, which the estimate then hands out as it
    is: an estimator with many keys keeps a single estimate as cheap as the scalar protocol."""
    if n != 1:
        return Column(values, unit, label, formula, assumptions, note)
    if isinstance(values, np.ndarray):
        values = _python(values[0])
    lazy = partial(formula, 0) if callable(formula) else formula
    return QuantityColumn((Quantity(values, unit, label, lazy, assumptions, note),))


@dataclass(frozen=True, slots=True)
class PointWarning:
    """A warning for the points where ``where`` is true (every point when None)."""

    code: str
    message: str | Callable[[int], str]
    severity: str = "warning"
    fix: str = ""
    where: np.ndarray | None = None

    def applies(self, i: int) -> bool:
        return self.where is None or bool(self.where[i])

    def at(self, i: int) -> Warning:
        message = self.message(i) if callable(self.message) else self.message
        return Warning(self.code, message, self.severity, self.fix)


@dataclass(slots=True)
class PointOutputs:
    """What an array estimator hands back: a column per key, and warnings with their masks."""

    values: dict[str, Column] = field(default_factory=dict)
    warnings: list[PointWarning] = field(default_factory=list)


@dataclass(slots=True)
class PointsContext:
    """Inputs of one point group, validated and resolved, plus the columns so far.

    ``scenario`` holds what every point shares; its :data:`POINT_FIELDS` are :class:`Varies`
    placeholders, the values are in ``points`` (int64 arrays of ``n`` entries).
    """

    scenario: Scenario
    model: ModelArchitecture
    cluster: Cluster
    params: ParameterCount
    assumptions: AssumptionSet
    points: dict[str, np.ndarray]
    n: int
    values: GroupResults
    wanted: frozenset[str] | None = None

    @property
    def gpu(self) -> Accelerator:
        return self.cluster.accelerator

    def wants(self, key: str) -> bool:
        return self.wanted is None or key in self.wanted

    def array(self, key: str) -> np.ndarray:
        """An earlier result's values as an array of ``n`` entries."""
        return self.values[key].array(self.n)

    def value(self, key: str) -> Any:
        """An earlier result's values: an array, or the one value every point shares."""
        column = self.values[key]
        return column.array(self.n) if column.values is None else column.values


@runtime_checkable
class ArrayEstimator(Protocol):
    """An estimator over point groups. It may also define ``needs_by_key`` (see the scalar one),
    and ``vectorizes(scenario) -> bool``: False for the scenarios it does not run as arrays (yet),
    which the engine then runs through its scalar ``estimate``, point by point."""

    info: EstimatorInfo

    def estimate_points(self, ctx: PointsContext) -> PointOutputs: ...


def is_array_estimator(estimator: object) -> bool:
    return callable(getattr(estimator, "estimate_points", None))


def runs_as_arrays(estimator: object, scenario: Scenario | None) -> bool:
    """Whether the engine runs ``estimator`` over a whole point group of ``scenario`` (None: any
    scenario it may be asked about) rather than point by point."""
    if not is_array_estimator(estimator):
        return False
    vectorizes = getattr(estimator, "vectorizes", None)
    if vectorizes is None:
        return True
    return scenario is not None and bool(vectorizes(scenario))


class GroupResults(Mapping[str, Column]):
    """Every result of a point group so far, in the order estimators produced them.

    Array estimators add columns; a scalar estimator adds its outputs point by point (one dict of
    quantities per point), kept as they came: a single estimate (a group of one) then costs no
    more than the scalar protocol did, and a column view of such a key is built only when an array
    estimator reads it.
    """

    __slots__ = ("n", "_columns", "_scalar", "_segments", "_views")

    def __init__(self, n: int) -> None:
        self.n = n
        self._columns: dict[str, Column] = {}
        self._scalar: dict[str, Sequence[Mapping[str, Quantity]]] = {}
        self._segments: list[dict[str, Column] | Sequence[Mapping[str, Quantity]]] = []
        self._views: dict[str, Column] = {}

    def add_columns(self, columns: dict[str, Column]) -> None:
        self._columns.update(columns)
        self._segments.append(columns)

    def add_points(self, outputs: Sequence[Mapping[str, Quantity]]) -> None:
        """A scalar estimator's outputs, one mapping per point, all with the same keys."""
        for key in outputs[0]:
            self._scalar[key] = outputs
        self._segments.append(outputs)

    def __getitem__(self, key: str) -> Column:
        column = self._columns.get(key)
        if column is not None:
            return column
        view = self._views.get(key)
        if view is None:
            outputs = self._scalar[key]
            view = self._views[key] = QuantityColumn([out[key] for out in outputs])
        return view

    def __contains__(self, key: object) -> bool:
        return key in self._columns or key in self._scalar

    def __iter__(self) -> Iterator[str]:
        for segment in self._segments:
            yield from (segment if isinstance(segment, dict) else segment[0])

    def __len__(self) -> int:
        return len(self._columns) + len(self._scalar)

    def has_all(self, keys: frozenset[str]) -> bool:
        columns, scalar = self._columns, self._scalar
        return all(key in columns or key in scalar for key in keys)

    def quantity(self, key: str, i: int) -> Quantity:
        column = self._columns.get(key)
        return column.quantity(i) if column is not None else self._scalar[key][i][key]

    def value(self, key: str, i: int) -> Value:
        column = self._columns.get(key)
        if column is not None:
            return column.value(i)
        outputs = self._scalar.get(key)
        return None if outputs is None else outputs[i][key].value

    def values_list(self, key: str) -> list[Value]:
        """Every point's value of ``key`` as Python values (``KeyError`` when missing)."""
        column = self._columns.get(key)
        if column is None:
            return [out[key].value for out in self._scalar[key]]
        if column._quantities is not None:
            return [q.value for q in column._quantities]
        if isinstance(column.values, np.ndarray):
            return column.values.tolist()  # Python int / float / bool, as .item() gives
        return [column.values] * self.n

    def point(self, i: int) -> dict[str, Quantity]:
        """Point ``i``'s quantities, in the order they were produced (formulas still lazy)."""
        values: dict[str, Quantity] = {}
        for segment in self._segments:
            if isinstance(segment, dict):
                for key, column in segment.items():
                    values[key] = column.quantity(i)
            else:
                values.update(segment[i])
        return values


class PointQuantities(MutableMapping[str, Quantity]):
    """Point ``i``'s quantities as an :class:`~workbench.engine.estimate.Estimate`'s ``values``,
    each built when first read: a comparison that judges a candidate on twenty keys, for every
    draw of a Monte Carlo sample, does not build the other hundred. Listing them (iteration,
    ``items()``, ``values()``) builds them all at once, in the order estimators produced them;
    writes are kept as a dict's would be."""

    __slots__ = ("_results", "_i", "_made", "_all")

    def __init__(self, results: GroupResults, i: int) -> None:
        self._results = results
        self._i = i
        self._made: dict[str, Quantity] = {}
        self._all: dict[str, Quantity] | None = None  # every key, once listed

    def _every(self) -> dict[str, Quantity]:
        found = self._all
        if found is None:
            found = self._results.point(self._i)
            found.update(self._made)  # what was read (the same objects) or written since
            self._all = self._made = found
        return found

    def __getitem__(self, key: str) -> Quantity:
        made = self._made.get(key)
        if made is not None:
            return made
        if self._all is not None or key not in self._results:
            raise KeyError(key)
        made = self._made[key] = self._results.quantity(key, self._i)
        return made

    def __setitem__(self, key: str, quantity: Quantity) -> None:
        self._every()[key] = quantity

    def __delitem__(self, key: str) -> None:
        del self._every()[key]

    def __contains__(self, key: object) -> bool:
        if self._all is not None:
            return key in self._all
        return key in self._made or key in self._results

    def __iter__(self) -> Iterator[str]:
        return iter(self._every())

    def __len__(self) -> int:
        return len(self._every())

    def keys(self):  # type: ignore[no-untyped-def]  # noqa: ANN201 - the dict's own view
        return self._every().keys()

    def items(self):  # type: ignore[no-untyped-def]  # noqa: ANN201
        return self._every().items()

    def values(self):  # type: ignore[no-untyped-def]  # noqa: ANN201
        return self._every().values()

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def value(self, key: str, default: Any = None) -> Any:
        """``self[key].value`` without building the quantity when it is not built yet."""
        made = self._made.get(key)
        if made is not None:
            return made.value
        if self._all is not None or key not in self._results:
            return default
        return self._results.value(key, self._i)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        return self._every() == dict(other.items())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PointQuantities({self._every()!r})"


class PointValues(Mapping[str, Quantity]):
    """The scalar protocol's ``ctx.values`` for point ``i`` of a group, built key by key on demand,
    so a scalar estimator run point by point pays only for the keys it reads."""

    __slots__ = ("_results", "_i", "_made")

    def __init__(self, results: GroupResults, i: int) -> None:
        self._results = results
        self._i = i
        self._made: dict[str, Quantity] = {}

    def __getitem__(self, key: str) -> Quantity:
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = self._results.quantity(key, self._i)
        return made

    def __contains__(self, key: object) -> bool:
        return key in self._results

    def __iter__(self) -> Iterator[str]:
        return iter(self._results)

    def __len__(self) -> int:
        return len(self._results)
