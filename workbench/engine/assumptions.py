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
    """Registered assumptions plus a scenario's overrides; records which ones were read."""

    __slots__ = ("_defs", "_overrides", "used")

    def __init__(self, definitions: Mapping[str, Assumption], overrides: Mapping[str, float]) -> None:
        self._defs = definitions
        self._overrides = overrides
        self.used: set[str] = set()

    def __getitem__(self, ident: str) -> float:
        self.used.add(ident)
        value = self._overrides.get(ident)
        return self._defs[ident].default if value is None else value

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
