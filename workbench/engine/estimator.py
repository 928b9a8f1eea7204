"""The estimator protocol: what a plugin implements, and the context it reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from workbench.engine.assumptions import Assumption, AssumptionSet
from workbench.engine.quantity import Outputs, Quantity, Value

if TYPE_CHECKING:
    from workbench.core.hardware import Accelerator, Cluster
    from workbench.core.model import ModelArchitecture
    from workbench.core.params import ParameterCount
    from workbench.core.scenario import Scenario

#: Bumped when EstimatorInfo, EstimateContext or Outputs change incompatibly.
ESTIMATOR_CONTRACT = 1


@dataclass(frozen=True, slots=True)
class EstimatorInfo:
    """What an estimator is, what it reads and what it writes.

    ``needs`` and ``produces`` are result keys (``"memory.per_gpu.total"``); the engine orders
    estimators so that every need is produced first. ``assumptions`` are the tunable defaults the
    estimator reads through ``ctx.assumptions[...]``.
    """

    id: str
    title: str
    version: str
    produces: tuple[str, ...]
    needs: tuple[str, ...] = ()
    assumptions: tuple[Assumption, ...] = ()
    description: str = ""
    contract: int = ESTIMATOR_CONTRACT


@runtime_checkable
class Estimator(Protocol):
    info: EstimatorInfo

    def estimate(self, ctx: EstimateContext) -> Outputs: ...


@dataclass(slots=True)
class EstimateContext:
    """Inputs of one estimate, already validated and resolved, plus results so far."""

    scenario: Scenario
    model: ModelArchitecture
    cluster: Cluster
    params: ParameterCount
    assumptions: AssumptionSet
    values: dict[str, Quantity] = field(default_factory=dict)

    @property
    def gpu(self) -> Accelerator:
        return self.cluster.accelerator

    def value(self, key: str) -> Value:
        """The raw value of an earlier result (KeyError if it was not produced)."""
        return self.values[key].value

    def number(self, key: str) -> float:
        value = self.values[key].value
        if value is None or isinstance(value, (str, bool)):
            raise TypeError(f"result {key} is not a number: {value!r}")
        return float(value)
