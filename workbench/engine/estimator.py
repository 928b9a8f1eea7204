"""The estimator protocol: what a plugin implements, and the context it reads."""

from __future__ import annotations

from collections.abc import Mapping
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


def needs_by_key(estimator: Estimator) -> Mapping[str, tuple[str, ...]]:
    """An estimator's optional ``needs_by_key`` attribute: for some produced keys, the only needs
    each is computed from (keys not listed read every need).

    A run for a few keys (:attr:`EstimateContext.wanted`) then asks earlier estimators for those
    needs alone: a sweep's cost column does not make the performance estimator compute the low and
    high bounds that only other cost keys read. An estimator that lists a key must produce it, in
    such a run, without reading its other needs (they may be missing).
    """
    return getattr(estimator, "needs_by_key", None) or {}


@dataclass(slots=True)
class EstimateContext:
    """Inputs of one estimate, already validated and resolved, plus results so far."""

    scenario: Scenario
    model: ModelArchitecture
    cluster: Cluster
    params: ParameterCount
    assumptions: AssumptionSet
    values: dict[str, Quantity] = field(default_factory=dict)
    #: The keys this run must produce; None (a full estimate): every key. A run for a few keys (a
    #: sweep's columns) sets it to those keys plus every key a later estimator of the run needs, so
    #: an estimator may leave out its other keys and the work only they take. Such a run is read
    #: for its values: an estimator may also leave out warnings that need skipped work.
    wanted: frozenset[str] | None = None

    @property
    def gpu(self) -> Accelerator:
        return self.cluster.accelerator

    def wants(self, key: str) -> bool:
        """Whether ``key`` must be produced in this run."""
        return self.wanted is None or key in self.wanted

    def value(self, key: str) -> Value:
        """The raw value of an earlier result (KeyError if it was not produced)."""
        return self.values[key].value

    def number(self, key: str) -> float:
        value = self.values[key].value
        if value is None or isinstance(value, (str, bool)):
            raise TypeError(f"result {key} is not a number: {value!r}")
        return float(value)
