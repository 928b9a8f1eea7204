"""Assumptions are data: named, documented, sourced, and overridable per scenario."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Assumption:
    """A default an estimator relies on, with where the default comes from."""

    id: str
    title: str
    default: float
    unit: str
    source: str
    description: str = ""
    minimum: float | None = None
    maximum: float | None = None

    def range_text(self) -> str:
        """The allowed range as a user reads it: ``0 to 1``, ``at least 0``, ``any finite number``."""
        lo, hi = self.minimum, self.maximum
        if lo is not None and hi is not None:
            return f"{lo:g} to {hi:g}"
        if lo is not None:
            return f"at least {lo:g}"
        if hi is not None:
            return f"at most {hi:g}"
        return "any finite number"

    def problem(self, value: object) -> str | None:
        """Why ``value`` cannot be this assumption's value (one line), or None when it can.

        NaN passes every ``<``/``>`` comparison, so finiteness is checked first: a NaN or an
        infinity would otherwise flow into every total that reads the assumption.
        """
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"assumption {self.id}: {_shown(value)} is not a number (allowed: {self.range_text()})"
        try:
            finite = math.isfinite(value)
        except OverflowError:  # an int too large for a float
            return f"assumption {self.id}: the number is too large (allowed: {self.range_text()})"
        if not finite:
            return f"assumption {self.id}: {_shown(value)} is not a finite number (allowed: {self.range_text()})"
        if (self.minimum is not None and value < self.minimum) or (self.maximum is not None and value > self.maximum):
            return f"assumption {self.id}: {_shown(value)} is outside its allowed range {self.range_text()}"
        return None

    def check(self, value: float) -> None:
        problem = self.problem(value)
        if problem is not None:
            raise ValueError(problem)


def _shown(value: object) -> str:
    """A value as a message quotes it: short, whatever the user typed."""
    if isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool)):
        return f"{value:g}"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_overrides(definitions: Mapping[str, Assumption], overrides: Mapping[str, object]) -> None:
    """Refuse (ValueError, one line) the first override that is not a finite value in its range.

    Ids no estimator defines are left to the engine's ``unknown-assumption`` warning; their
    values must still be finite numbers.
    """
    for ident, value in overrides.items():
        definition = definitions.get(ident)
        if definition is None:
            definition = Assumption(ident, ident, 0.0, "", "")
        problem = definition.problem(value)
        if problem is not None:
            raise ValueError(problem)


class AssumptionSet:
    """Registered assumptions plus a scenario's overrides; records which ones were read.

    Estimators read a dozen assumptions per estimate, thousands of estimates per sweep, so a read
    is one dict lookup: ``defaults`` (id -> default, built once by the engine) is shared by every
    set without overrides, and merged with the overrides otherwise. Never write to it.

    ``varied`` (a point group that draws assumption values: a sensitivity swing, a Monte Carlo
    sample) maps ids to float arrays of one value per point; reading such an id gives the array.
    Only estimators that take assumption arrays are run on such a set (see
    :meth:`~workbench.engine.pipeline.Engine.run_points`); :meth:`at` is point ``i``'s own set.
    """

    __slots__ = ("_defs", "_overrides", "_values", "used", "_defaults", "varied")

    def __init__(
        self,
        definitions: Mapping[str, Assumption],
        overrides: Mapping[str, float],
        defaults: Mapping[str, float] | None = None,
        varied: Mapping[str, Any] | None = None,
    ) -> None:
        self._defs = definitions
        self._overrides = overrides
        if defaults is None:
            defaults = default_values(definitions)
        self._defaults = defaults
        self.varied: Mapping[str, Any] = varied or {}
        if varied:
            self._values = {**defaults, **overrides, **varied}
        else:
            self._values = {**defaults, **overrides} if overrides else defaults
        self.used: set[str] = set()

    def __getitem__(self, ident: str) -> float:
        self.used.add(ident)
        return self._values[ident]

    def read(self, idents: tuple[str, ...]) -> tuple[float, ...]:
        """Several values at once (recorded as read), for estimators that read a fixed group."""
        self.used.update(idents)
        values = self._values
        return tuple([values[i] for i in idents])

    def is_overridden(self, ident: str) -> bool:
        return ident in self._overrides or ident in self.varied

    def definition(self, ident: str) -> Assumption:
        return self._defs[ident]

    def overrides_at(self, i: int) -> dict[str, float]:
        """The scenario's overrides with point ``i``'s drawn values on top."""
        return {**self._overrides, **{ident: float(values[i]) for ident, values in self.varied.items()}}

    def at(self, i: int) -> AssumptionSet:
        """Point ``i``'s values as a set of plain numbers (sharing what the group run read)."""
        if not self.varied:
            return self
        point = AssumptionSet(self._defs, self.overrides_at(i), self._defaults)
        point.used = self.used
        return point


def index_assumptions(groups: Iterable[Iterable[Assumption]]) -> dict[str, Assumption]:
    table: dict[str, Assumption] = {}
    for group in groups:
        for assumption in group:
            if assumption.id in table and table[assumption.id] != assumption:
                raise ValueError(f"assumption id '{assumption.id}' is defined twice, differently")
            table[assumption.id] = assumption
    return table


def default_values(definitions: Mapping[str, Assumption]) -> dict[str, float]:
    """id -> default of every definition (what an :class:`AssumptionSet` reads without overrides)."""
    return {ident: a.default for ident, a in definitions.items()}
