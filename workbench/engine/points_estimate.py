"""The result of a point group: a column per key, warnings with masks, failures; any point's full
:class:`~workbench.engine.estimate.Estimate` built only when someone asks for it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.core.resolved import ResolvedScenario
from workbench.engine.assumptions import AssumptionSet
from workbench.engine.estimate import Estimate
from workbench.engine.points import GroupResults, PointQuantities, PointWarning
from workbench.engine.quantity import EstimatorFailure, Value, Warning


@dataclass(frozen=True, slots=True)
class PerPointWarnings:
    """Warnings a scalar estimator gave, point by point (it was run once per point)."""

    lists: Sequence[Sequence[Warning]]

    def at(self, i: int) -> Sequence[Warning]:
        return self.lists[i]


@dataclass(slots=True)
class PointsEstimate:
    """Every point of one group. ``points`` holds the values of the point fields as given (before
    any image tokens join the prompt), so :meth:`scenario` is the point's own scenario."""

    base: ResolvedScenario
    points: dict[str, np.ndarray]
    n: int
    columns: GroupResults
    assumptions: AssumptionSet
    warnings: list[PointWarning | PerPointWarnings] = field(default_factory=list)
    failures: list[EstimatorFailure] = field(default_factory=list)

    def __len__(self) -> int:
        return self.n

    def scenario_update(self, i: int) -> dict[str, int]:
        return {name: int(values[i]) for name, values in self.points.items()}

    def resolved(self, i: int) -> ResolvedScenario:
        varied = self.assumptions.varied
        if not self.points and not varied:
            return self.base
        update: dict[str, Any] = self.scenario_update(i)
        if varied:  # drawn assumption values are the point's overrides
            drawn = {ident: float(values[i]) for ident, values in varied.items()}
            update["assumptions"] = {**self.base.scenario.assumptions, **drawn}
        scenario = self.base.scenario.model_copy(update=update)
        return ResolvedScenario(scenario, self.base.model, self.base.cluster)

    def get(self, i: int, key: str, default: Value = None) -> Value:
        return self.columns.value(key, i) if key in self.columns else default

    def column(self, key: str) -> np.ndarray | None:
        """A key's values over every point (None when no estimator produced it)."""
        return self.columns[key].array(self.n) if key in self.columns else None

    def values_at(self, i: int, keys: Sequence[str]) -> tuple[Value, ...]:
        columns = self.columns
        return tuple(columns.value(k, i) if k in columns else None for k in keys)

    def table(self, keys: Sequence[str]) -> list[tuple[Value, ...]]:
        """Every point's values of ``keys`` (None where missing), as Python values, in point order."""
        n = self.n
        columns = self.columns
        per_key: list[Any] = [columns.values_list(key) if key in columns else [None] * n for key in keys]
        return list(zip(*per_key)) if per_key else [() for _ in range(n)]

    def point_warnings(self, i: int) -> list[Warning]:
        out: list[Warning] = []
        for source in self.warnings:
            if isinstance(source, PerPointWarnings):
                out.extend(source.at(i))
            elif source.applies(i):
                out.append(source.at(i))
        return out

    def estimate(self, i: int) -> Estimate:
        """Point ``i`` as a full estimate (every quantity, formulas lazy), as ``Engine.run`` gives."""
        values = PointQuantities(self.columns, i)  # each quantity built when read
        return Estimate(self.resolved(i), values, self.assumptions.at(i), self.point_warnings(i), list(self.failures))


@dataclass(slots=True)
class SplitEstimate:
    """A group that had to be run point by point (an estimator failed on some of its points):
    the same reading interface over one-point results."""

    parts: list[PointsEstimate]

    @property
    def n(self) -> int:
        return len(self.parts)

    def __len__(self) -> int:
        return len(self.parts)

    def get(self, i: int, key: str, default: Value = None) -> Value:
        return self.parts[i].get(0, key, default)

    def column(self, key: str) -> np.ndarray | None:
        found = [part.get(0, key) for part in self.parts]
        return None if all(v is None for v in found) else np.array(found, dtype=object)

    def values_at(self, i: int, keys: Sequence[str]) -> tuple[Value, ...]:
        return self.parts[i].values_at(0, keys)

    def table(self, keys: Sequence[str]) -> list[tuple[Value, ...]]:
        return [part.values_at(0, keys) for part in self.parts]

    def point_warnings(self, i: int) -> list[Warning]:
        return self.parts[i].point_warnings(0)

    def estimate(self, i: int) -> Estimate:
        return self.parts[i].estimate(0)


GroupEstimate = PointsEstimate | SplitEstimate
