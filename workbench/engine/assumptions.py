"""Assumptions are data: named, documented, sourced, and overridable per scenario."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


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

    def check(self, value: float) -> None:
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"assumption {self.id}: {value} is below its minimum {self.minimum}")
        if self.maximum is not None and value > self.maximum:
            raise ValueError(f"assumption {self.id}: {value} is above its maximum {self.maximum}")


class AssumptionSet:
    """Registered assumptions plus a scenario's overrides; records which ones were read.

    Estimators read a dozen assumptions per estimate, thousands of estimates per sweep, so a read
    is one dict lookup: ``defaults`` (id -> default, built once by the engine) is shared by every
    set without overrides, and merged with the overrides otherwise. Never write to it.
    """

    __slots__ = ("_defs", "_overrides", "_values", "used")

    def __init__(
        self,
        definitions: Mapping[str, Assumption],
        overrides: Mapping[str, float],
        defaults: Mapping[str, float] | None = None,
    ) -> None:
        self._defs = definitions
        self._overrides = overrides
        if defaults is None:
            defaults = default_values(definitions)
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
        return ident in self._overrides

    def definition(self, ident: str) -> Assumption:
        return self._defs[ident]


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
