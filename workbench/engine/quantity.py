"""A number with its unit and its explanation: the unit of every estimator result.

The formula is kept as a zero-argument callable until someone reads it, so the hot path (sweeps,
solvers, live updates) pays for an f-string only when the GUI, the report or ``--explain`` asks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

Value = float | int | bool | str | None
FormulaSource = str | Callable[[], str] | None


@dataclass(slots=True)
class Quantity:
    """One result: ``value`` in ``unit``, how it was computed, and which assumptions it used."""

    value: Value
    unit: str = ""
    label: str = ""
    _formula: FormulaSource = None
    assumptions: tuple[str, ...] = ()
    note: str = ""

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


def q(
    value: Value,
    unit: str = "",
    label: str = "",
    formula: FormulaSource = None,
    assumptions: tuple[str, ...] = (),
    note: str = "",
) -> Quantity:
    """Shorthand used by estimators: ``q(bytes_, "B", "Weights", lambda: f"{n} x {b} B")``."""
    return Quantity(value, unit, label, formula, assumptions, note)


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
