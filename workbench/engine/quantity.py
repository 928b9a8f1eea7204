"""A number with its unit and its explanation: the unit of every estimator result.

The formula is kept as a zero-argument callable until someone reads it, so the hot path (sweeps,
solvers, live updates) pays for an f-string only when the GUI, the report or ``--explain`` asks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

Value = float | int | bool | str | None
FormulaSource = str | Callable[[], str] | None


@dataclass(slots=True, init=False)
class Quantity:
    """One result: ``value`` in ``unit``, how it was computed, and which assumptions it used."""

    value: Value
    unit: str
    label: str
    _formula: FormulaSource
    assumptions: tuple[str, ...]
    note: str

    # Written out rather than generated so that ``q`` can be the class itself: estimators build
    # about a hundred quantities per estimate, and a wrapper call each shows in sweeps.
    def __init__(
        self,
        value: Value,
        unit: str = "",
        label: str = "",
        formula: FormulaSource = None,
        assumptions: tuple[str, ...] = (),
        note: str = "",
    ) -> None:
        self.value = value
        self.unit = unit
        self.label = label
        self._formula = formula
        self.assumptions = assumptions
        self.note = note

    @property
    def formula(self) -> str:
        """The formula with the values substituted (rendered on first read)."""
        if callable(self._formula):
            self._formula = self._formula()
        return self._formula or ""

    def as_dict(self) -> dict[str, object]:
        return {
            "value": self.value,
            "unit": self.unit,
            "label": self.label,
            "formula": self.formula,
            "assumptions": list(self.assumptions),
            "note": self.note,
        }


#: Shorthand used by estimators: ``q(bytes_, "B", "Weights", lambda: f"{n} x {b} B")``.
q = Quantity

_FIELDS = ("value", "unit", "label", "_formula", "assumptions", "note")


class FixedQuantity(Quantity):
    """A quantity that never changes, so one instance can sit in many estimates.

    For results that read the same in every estimate where they occur ("does not apply to
    inference", with the reason): an estimator builds them once and adds them with one
    ``dict.update`` instead of building a dozen objects per estimate. The formula is final text
    (nothing to render, so reading it writes nothing) and any assignment raises.
    """

    __slots__ = ()

    def __init__(
        self,
        value: Value,
        unit: str = "",
        label: str = "",
        formula: str = "",
        assumptions: tuple[str, ...] = (),
        note: str = "",
    ) -> None:
        if not isinstance(formula, str):
            raise TypeError("a FixedQuantity's formula is final text: shared ones are never rendered in place")
        for name, field_value in zip(_FIELDS, (value, unit, label, formula, assumptions, note)):
            object.__setattr__(self, name, field_value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a shared quantity is read-only (tried to set {name})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a shared quantity is read-only (tried to delete {name})")

    def __reduce__(self) -> tuple[object, ...]:
        return (FixedQuantity, tuple(getattr(self, name) for name in _FIELDS))

    def __eq__(self, other: object) -> bool:
        # Equal to a plain Quantity with the same fields, as two plain ones are.
        if not isinstance(other, Quantity):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable-looking like Quantity: unhashable too


@dataclass(frozen=True, slots=True)
class Warning:  # noqa: A001 - the domain word; never shadows the builtin outside this module's users
    """A guard-rail finding, shown before any speed number."""

    code: str
    message: str
    severity: str = "warning"  # "error" (plan cannot run), "warning", "info"
    fix: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, "severity": self.severity, "fix": self.fix}


@dataclass(frozen=True, slots=True)
class EstimatorFailure:
    """An estimator that raised: its outputs are missing, the others still ran."""

    estimator: str
    message: str


@dataclass(slots=True)
class Outputs:
    """What one estimator hands back: quantities by key, and warnings."""

    values: dict[str, Quantity] = field(default_factory=dict)
    warnings: list[Warning] = field(default_factory=list)
