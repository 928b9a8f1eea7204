"""Order estimators by what they need and produce, run each one guarded, collect one Estimate."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from graphlib import CycleError, TopologicalSorter

from workbench.core.resolved import ResolvedScenario
from workbench.core.model import ModelArchitecture
from workbench.core.params import ParameterCount, count_parameters
from workbench.engine.assumptions import Assumption, AssumptionSet, index_assumptions
from workbench.engine.estimate import Estimate
from workbench.engine.estimator import ESTIMATOR_CONTRACT, EstimateContext, Estimator
from workbench.engine.quantity import EstimatorFailure, Quantity


class EngineSetupError(ValueError):
    """The estimator set cannot be ordered (cycle, duplicate producer)."""


class Engine:
    """Runs a fixed, ordered set of estimators. Build once; call :meth:`run` many times."""

    def __init__(self, estimators: Iterable[Estimator]) -> None:
        estimators = list(estimators)
        self.rejected: list[EstimatorFailure] = []
        accepted = self._accept(estimators)
        self.estimators: tuple[Estimator, ...] = self._order(accepted)
        self.assumptions: dict[str, Assumption] = index_assumptions(e.info.assumptions for e in self.estimators)
        self._plans: dict[frozenset[str], tuple[Estimator, ...]] = {}
        self._param_cache: dict[int, tuple[ModelArchitecture, ParameterCount]] = {}

    def _accept(self, estimators: Sequence[Estimator]) -> list[Estimator]:
        """Drop estimators with a wrong contract, a duplicate id or key, or an unmet need."""
        accepted: list[Estimator] = []
        producers: dict[str, str] = {}
        ids: set[str] = set()
        for est in estimators:
            info = est.info
            if info.contract != ESTIMATOR_CONTRACT:
                self.rejected.append(EstimatorFailure(info.id, f"contract {info.contract}, engine speaks {ESTIMATOR_CONTRACT}"))
                continue
            if info.id in ids:
                self.rejected.append(EstimatorFailure(info.id, "another estimator has the same id"))
                continue
            clash = [k for k in info.produces if k in producers]
            if clash:
                self.rejected.append(
                    EstimatorFailure(info.id, f"produces {clash[0]}, already produced by {producers[clash[0]]}")
                )
                continue
            ids.add(info.id)
            producers.update({k: info.id for k in info.produces})
            accepted.append(est)
        # An estimator whose needs nobody produces can never run: reject it now, repeatedly,
        # since removing one may orphan another.
        changed = True
        while changed:
            changed = False
            available = {k for e in accepted for k in e.info.produces}
            for est in list(accepted):
                missing = [k for k in est.info.needs if k not in available]
                if missing:
                    accepted.remove(est)
                    self.rejected.append(EstimatorFailure(est.info.id, f"needs {missing[0]}, which no estimator produces"))
                    changed = True
        return accepted

    @staticmethod
    def _order(estimators: list[Estimator]) -> tuple[Estimator, ...]:
        by_key = {k: e.info.id for e in estimators for k in e.info.produces}
        graph = {e.info.id: {by_key[k] for k in e.info.needs} for e in estimators}
        try:
            order = list(TopologicalSorter(graph).static_order())
        except CycleError as exc:
            raise EngineSetupError(f"estimators depend on each other in a cycle: {exc.args[1]}") from None
        by_id = {e.info.id: e for e in estimators}
        return tuple(by_id[i] for i in order)

    def plan(self, wanted: Iterable[str] | None = None) -> tuple[Estimator, ...]:
        """The estimators needed to produce ``wanted`` keys (all of them for None), in order."""
        if wanted is None:
            return self.estimators
        key = frozenset(wanted)
        cached = self._plans.get(key)
        if cached is not None:
            return cached
        producer = {k: e for e in self.estimators for k in e.info.produces}
        needed: set[str] = set()
        stack = [producer[k].info.id for k in key if k in producer]
        by_id = {e.info.id: e for e in self.estimators}
        while stack:
            ident = stack.pop()
            if ident in needed:
                continue
            needed.add(ident)
            stack.extend(producer[k].info.id for k in by_id[ident].info.needs if k in producer)
        plan = tuple(e for e in self.estimators if e.info.id in needed)
        self._plans[key] = plan
        return plan

    def _parameters(self, model: ModelArchitecture) -> ParameterCount:
        """Parameter counts per model, cached: sweeps estimate one model thousands of times."""
        hit = self._param_cache.get(id(model))
        if hit is not None and hit[0] is model:
            return hit[1]
        counts = count_parameters(model)
        if len(self._param_cache) > 256:
            self._param_cache.clear()
        self._param_cache[id(model)] = (model, counts)
        return counts

    def run(self, resolved: ResolvedScenario, wanted: Iterable[str] | None = None) -> Estimate:
        """Estimate one scenario. An estimator that raises is recorded; the rest still run.

        ``wanted`` limits the run to the estimators those keys need (sweeps, solvers).
        """
        scenario = resolved.scenario
        assumptions = AssumptionSet(self.assumptions, scenario.assumptions)
        ctx = EstimateContext(
            scenario=scenario,
            model=resolved.model,
            cluster=resolved.cluster,
            params=self._parameters(resolved.model),
            assumptions=assumptions,
        )
        estimate = Estimate(resolved=resolved, values=ctx.values, assumptions=assumptions)
        failed_keys: set[str] = set()
        for est in self.plan(wanted):
            info = est.info
            blocked = [k for k in info.needs if k not in ctx.values]
            if blocked:
                reason = "failed" if blocked[0] in failed_keys else "was not produced"
                estimate.failures.append(EstimatorFailure(info.id, f"skipped: {blocked[0]} {reason}"))
                failed_keys.update(info.produces)
                continue
            try:
                out = est.estimate(ctx)
                self._check_outputs(info.id, info.produces, out.values)
            except Exception as exc:  # noqa: BLE001 - isolation is the point: one plugin never stops the rest
                estimate.failures.append(EstimatorFailure(info.id, f"{type(exc).__name__}: {exc}"))
                failed_keys.update(info.produces)
                continue
            ctx.values.update(out.values)
            estimate.warnings.extend(out.warnings)
        unknown = [k for k in scenario.assumptions if k not in self.assumptions]
        if unknown:
            from workbench.engine.quantity import Warning

            estimate.warnings.append(
                Warning("unknown-assumption", f"assumption '{unknown[0]}' is not used by any estimator",
                        fix="check `gpu-workbench estimate --explain` for the assumption ids")
            )
        return estimate

    @staticmethod
    def _check_outputs(ident: str, produces: tuple[str, ...], values: dict[str, Quantity]) -> None:
        declared = set(produces)
        for key, quantity in values.items():
            if key not in declared:
                raise TypeError(f"{ident} returned undeclared result {key!r}")
            if not isinstance(quantity, Quantity):
                raise TypeError(f"{ident} returned {type(quantity).__name__} for {key!r}, not a Quantity")
