"""Order estimators by what they need and produce, run each one guarded, collect one Estimate."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from graphlib import CycleError, TopologicalSorter
from typing import Any

import numpy as np

from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Scenario
from workbench.core.model import ModelArchitecture
from workbench.core.params import ParameterCount, count_parameters
from workbench.core.vision import describe_images, request_images
from workbench.engine.assumptions import Assumption, AssumptionSet, default_values, index_assumptions
from workbench.engine.estimate import Estimate
from workbench.engine.points import (
    POINT_FIELDS,
    Column,
    GroupResults,
    PointsContext,
    PointValues,
    PointWarning,
    QuantityColumn,
    SharedColumn,
    Varies,
    runs_as_arrays,
)
from workbench.engine.points_estimate import GroupEstimate, PerPointWarnings, PointsEstimate, SplitEstimate
from workbench.engine.guard import PluginFault, is_user_interrupt
from workbench.engine.estimator import ESTIMATOR_CONTRACT, EstimateContext, Estimator, needs_by_key
from workbench.engine.quantity import EstimatorFailure, FixedQuantity, Quantity, Warning
from workbench.engine import serving_engines

#: Value types accepted without a closer look (any other Quantity subclass is checked one by one).
_QUANTITY_TYPES = frozenset({Quantity, FixedQuantity})
#: Column types accepted without a closer look.
_COLUMN_TYPES = frozenset({Column, QuantityColumn, SharedColumn})
#: One planned estimator: itself, its needs, and its declared keys as a set (built once per plan).
_Step = tuple[Estimator, frozenset[str], frozenset[str]]


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
        self._defaults = default_values(self.assumptions)
        self._plans: dict[frozenset[str], tuple[Estimator, ...]] = {}
        self._steps: dict[Any, tuple[tuple[_Step, ...], frozenset[str] | None]] = {}
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
            by_key = needs_by_key(est)
            odd = [
                k for k, reads in by_key.items() if k not in info.produces or not set(reads) <= set(info.needs)
            ]
            if odd:
                self.rejected.append(
                    EstimatorFailure(
                        info.id, f"needs_by_key: {odd[0]} is not produced, or reads beyond needs"
                    )
                )
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

    def runs_point_by_point(self, wanted: Iterable[str] | None = None, scenario: Scenario | None = None) -> bool:
        """Whether a run for ``wanted`` (of ``scenario``, when given) has an estimator that runs once
        per point of a group: worth spreading big groups over processes. Array estimators alone are
        cheaper in one."""
        steps, _ = self._steps_for(wanted if wanted is None else tuple(wanted))
        return any(not runs_as_arrays(est, scenario) for est, _, _ in steps)

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

    def _steps_for(self, wanted: Iterable[str] | None) -> tuple[tuple[_Step, ...], frozenset[str] | None]:
        """The plan with each estimator's needs and keys as sets, and the keys the run must
        produce (``wanted`` plus every need of a planned estimator; None: all), cached per ``wanted``
        (a sweep passes the same tuple for every point)."""
        key = wanted if wanted is None or isinstance(wanted, (tuple, frozenset)) else frozenset(wanted)
        found = self._steps.get(key)
        if found is None:
            if key is None:
                steps = tuple(
                    (est, frozenset(est.info.needs), frozenset(est.info.produces)) for est in self.estimators
                )
                found = (steps, None)
            else:
                found = self._narrow_plan(frozenset(key))
            self._steps[key] = found
        return found

    def _narrow_plan(self, wanted: frozenset[str]) -> tuple[tuple[_Step, ...], frozenset[str]]:
        """Steps and needed keys of a run for ``wanted``: walking the plan backwards, each estimator
        is asked only for the keys later ones read (``needs_by_key`` narrows what those read); one
        asked for nothing is left out."""
        needed = set(wanted)
        reads_of: dict[str, frozenset[str]] = {}
        for est in reversed(self.plan(wanted)):
            info = est.info
            by_key = needs_by_key(est)
            asked = [k for k in info.produces if k in needed]
            if asked:
                reads = frozenset(r for k in asked for r in by_key.get(k, info.needs))
                reads_of[info.id] = reads
                needed |= reads
        steps = tuple(
            (est, reads_of[est.info.id], frozenset(est.info.produces))
            for est in self.plan(wanted)
            if est.info.id in reads_of
        )
        return steps, frozenset(needed)

    def run(self, resolved: ResolvedScenario, wanted: Iterable[str] | None = None) -> Estimate:
        """Estimate one scenario: a point group of one point. An estimator that raises is
        recorded; the rest still run.

        ``wanted`` limits the run to the estimators those keys need (sweeps, solvers), and tells
        them which keys are needed (:attr:`EstimateContext.wanted`): other keys may be missing and
        warnings incomplete, so pass it only when the values of those keys are all you read.
        """
        return self.run_points(resolved, None, wanted).estimate(0)

    def run_points(
        self,
        resolved: ResolvedScenario,
        points: Mapping[str, Sequence[int] | np.ndarray] | None = None,
        wanted: Iterable[str] | None = None,
        assumptions: Mapping[str, Sequence[float] | np.ndarray] | None = None,
    ) -> GroupEstimate:
        """Estimate a point group: ``resolved`` with each combination of the point fields given in
        ``points`` (equal-length sequences; fields not given keep the scenario's value), and with
        the assumption values given in ``assumptions`` (id -> one value per point, on top of the
        scenario's own overrides): a sensitivity swing or a Monte Carlo sample is one group.

        Array estimators run once over the group; scalar ones once per point. When an estimator
        fails on a group of several points, the group is run again point by point, so that each
        point's results, warnings and failures are exactly those of its own single estimate. A
        group that draws assumptions one of its estimators cannot take as arrays is run point by
        point too (each point with its values as the scenario's overrides).
        """
        n, given = _point_arrays(resolved.scenario, points)
        varied = self._assumption_arrays(assumptions, n if given else None)
        if varied:
            n = len(next(iter(varied.values())))
            if n == 1:  # one draw: the scenario's own overrides, as its single estimate has them
                return self.run_points(_with_overrides(resolved, 0, varied), given, wanted)
            if not self.takes_assumption_arrays(resolved.scenario, varied, wanted):
                return SplitEstimate([
                    self._run_group(_with_overrides(resolved, i, varied), {k: v[i : i + 1] for k, v in given.items()},
                                    1, wanted)
                    for i in range(n)
                ])  # fmt: skip
        result = self._run_group(resolved, given, n, wanted, varied)
        if result.failures and n > 1:
            return SplitEstimate([
                self._run_group(_with_overrides(resolved, i, varied), {k: v[i : i + 1] for k, v in given.items()}, 1,
                                wanted)
                for i in range(n)
            ])  # fmt: skip
        return result

    def _assumption_arrays(
        self, assumptions: Mapping[str, Sequence[float] | np.ndarray] | None, n: int | None
    ) -> dict[str, np.ndarray]:
        """Drawn assumption values as float arrays of one length (``n`` when points are given),
        each a registered assumption within its allowed range (ValueError otherwise)."""
        if not assumptions:
            return {}
        out: dict[str, np.ndarray] = {}
        for ident, values in assumptions.items():
            definition = self.assumptions.get(ident)
            if definition is None:
                raise ValueError(f"assumption '{ident}' is not used by any estimator")
            array = np.asarray(values, dtype=float)
            if array.ndim != 1 or not len(array):
                raise ValueError(f"assumption '{ident}': expected one value per point")
            lo, hi = definition.minimum, definition.maximum
            # One vectorized test of what ``problem`` checks on a float (finite, within range); the
            # message of the first value that fails comes from ``problem`` itself.
            if (not np.isfinite(array).all() or (lo is not None and bool((array < lo).any()))
                    or (hi is not None and bool((array > hi).any()))):  # fmt: skip
                for value in array.tolist():
                    problem = definition.problem(value)
                    if problem is not None:
                        raise ValueError(problem)
            out[ident] = array
        lengths = {len(v) for v in out.values()} | ({n} if n is not None else set())
        if len(lengths) != 1:
            raise ValueError("assumption values and point fields must be of one length")
        return out

    def reads_any(self, assumptions: Iterable[str], wanted: Iterable[str] | None = None) -> bool:
        """Whether an estimator of a run for ``wanted`` reads one of ``assumptions``."""
        ids = set(assumptions)
        steps, _ = self._steps_for(wanted if wanted is None else tuple(wanted))
        return any(a.id in ids for est, _, _ in steps for a in est.info.assumptions)

    def takes_assumption_arrays(
        self, scenario: Scenario, varied: Iterable[str], wanted: Iterable[str] | None = None
    ) -> bool:
        """Whether every estimator of a run for ``wanted`` that reads one of the assumptions
        ``varied`` takes it as an array: a group drawing them then runs as one (not point by point)."""
        varied = set(varied)
        steps, _ = self._steps_for(wanted if wanted is None else tuple(wanted))
        for est, _, _ in steps:
            if any(a.id in varied for a in est.info.assumptions):
                takes = getattr(est, "takes_assumption_arrays", None)
                if takes is None or not runs_as_arrays(est, scenario) or not takes(scenario):
                    return False
        return True

    def _run_group(
        self,
        resolved: ResolvedScenario,
        given: dict[str, np.ndarray],
        n: int,
        wanted: Iterable[str] | None,
        varied: dict[str, np.ndarray] | None = None,
    ) -> PointsEstimate:
        # The serving engine's defaults fill the knobs the user left unset, once, before any
        # estimator reads them: every estimator (and the estimate's own scenario) sees one answer.
        resolved = serving_engines.resolve(resolved)
        scenario = resolved.scenario
        overrides = scenario.assumptions
        refused: list[str] = []
        if overrides:
            overrides, refused = self._usable_overrides(overrides)
        assumptions = AssumptionSet(self.assumptions, overrides, self._defaults, varied)
        columns = GroupResults(n)
        steps, needed = self._steps_for(wanted)
        model = resolved.model
        group = PointsEstimate(resolved, given, n, columns, assumptions)
        warnings = group.warnings
        if model.approximate:
            warnings.append(_fixed(_approximate_warning(model.approximate)))
        seen = {
            name: given[name] if name in given else _filled(n, getattr(scenario, name)) for name in POINT_FIELDS
        }
        image_warning, image_tokens = _images(model, scenario, seen["seq_len"])
        if image_warning is not None:
            warnings.append(image_warning)
        if image_tokens:
            seen["seq_len"] = seen["seq_len"] + image_tokens
        point_scenarios: list[Scenario] | None = None
        if n == 1:
            # One point: its own scenario (image tokens in seq_len) is exactly what every point
            # shares, so no placeholder is needed, and a single estimate saves a model copy.
            point_scenarios = _point_scenarios(scenario, seen, n)
            shared = point_scenarios[0]
        else:
            shared = scenario.model_copy(update={name: Varies(name) for name in POINT_FIELDS})
        params = self._parameters(model)
        ctx = PointsContext(shared, model, resolved.cluster, params, assumptions, seen, n, columns, needed)
        failed_keys: set[str] = set()
        for est, needs, produces in steps:
            if needs and not columns.has_all(needs):
                info = est.info
                blocked = next(k for k in info.needs if k in needs and k not in columns)
                reason = "failed" if blocked in failed_keys else "was not produced"
                group.failures.append(EstimatorFailure(info.id, f"skipped: {blocked} {reason}"))
                failed_keys.update(produces)
                continue
            try:
                if runs_as_arrays(est, scenario):
                    out = est.estimate_points(ctx)  # type: ignore[attr-defined]
                    self._check_columns(est.info.id, produces, out.values, n)
                    columns.add_columns(out.values)
                    warnings.extend(out.warnings)
                    continue
                if point_scenarios is None:
                    point_scenarios = _point_scenarios(scenario, seen, n)
                made, point_warnings = self._run_scalar(est, produces, resolved, point_scenarios, params,
                                                        assumptions, columns, needed)  # fmt: skip
            except BaseException as exc:  # noqa: BLE001 - isolation is the point: one plugin never stops the rest
                # sys.exit() or a KeyboardInterrupt raised by an estimator is its failure too; the
                # user's Ctrl+C is not (guard.is_user_interrupt tells them apart) and stops the run.
                if is_user_interrupt(exc):
                    raise
                message = str(exc) if isinstance(exc, PluginFault) else f"{type(exc).__name__}: {exc}"
                group.failures.append(EstimatorFailure(est.info.id, message))
                failed_keys.update(produces)
                continue
            columns.add_points(made)
            if any(point_warnings):
                warnings.append(PerPointWarnings(point_warnings))
        for problem in refused:
            warnings.append(_fixed(
                Warning("assumption-out-of-range", f"{problem}; its default was used instead",
                        fix="`gpu-workbench assumptions --json` lists each assumption's allowed range")
            ))  # fmt: skip
        if overrides:
            unknown = [k for k in overrides if k not in self.assumptions]
            if unknown:
                warnings.append(_fixed(
                    Warning("unknown-assumption", f"assumption '{unknown[0]}' is not used by any estimator",
                            fix="check `gpu-workbench estimate --explain` for the assumption ids")
                ))  # fmt: skip
        return group

    def _run_scalar(
        self,
        est: Estimator,
        produces: frozenset[str],
        resolved: ResolvedScenario,
        scenarios: list[Scenario],
        params: ParameterCount,
        assumptions: AssumptionSet,
        columns: GroupResults,
        needed: frozenset[str] | None,
    ) -> tuple[list[dict[str, Quantity]], list[list[Warning]]]:
        """A scalar estimator over the group, point by point: its outputs, one dict per point."""
        outputs: list[dict[str, Quantity]] = []
        warnings: list[list[Warning]] = []
        for i, scenario in enumerate(scenarios):
            ctx = EstimateContext(scenario, resolved.model, resolved.cluster, params, assumptions,
                                  PointValues(columns, i), needed)  # type: ignore[arg-type]  # fmt: skip
            out = est.estimate(ctx)
            self._check_outputs(est.info.id, produces, out.values)
            if outputs and out.values.keys() != outputs[0].keys():
                raise TypeError(f"{est.info.id} returned different keys for points of one group")
            outputs.append(out.values)
            warnings.append(out.warnings)
        return outputs, warnings

    @staticmethod
    def _check_columns(ident: str, produces: frozenset[str], values: dict[str, Column], n: int) -> None:
        """Refuse undeclared keys, non-Column values and arrays of the wrong length."""
        if values.keys() <= produces and set(map(type, values.values())) <= _COLUMN_TYPES:
            if all(type(c.values) is not np.ndarray or c.values.shape == (n,) for c in values.values()):
                return
        if not values.keys() <= produces:
            key = next(k for k in values if k not in produces)
            raise TypeError(f"{ident} returned undeclared result {key!r}")
        for key, column in values.items():
            if not isinstance(column, Column):
                raise TypeError(f"{ident} returned {type(column).__name__} for {key!r}, not a Column")
            array = column.values
            if isinstance(array, np.ndarray) and array.shape != (n,):
                raise TypeError(f"{ident} returned {array.shape} values for {key!r} over {n} points")

    def _usable_overrides(self, overrides: dict[str, float]) -> tuple[dict[str, float], list[str]]:
        """The overrides within their assumptions' ranges, and a line for each one left out.

        The CLI refuses such values before any estimate; this guards every other way in (a project
        written by an older version, a plugin's scenario) so that no estimator ever reads one.
        """
        refused: list[str] = []
        for ident, value in overrides.items():
            definition = self.assumptions.get(ident)
            problem = None if definition is None else definition.problem(value)
            if problem is not None:
                refused.append(problem)
        if not refused:
            return overrides, refused
        usable = {
            ident: value for ident, value in overrides.items()
            if ident not in self.assumptions or self.assumptions[ident].problem(value) is None
        }
        return usable, refused

    @staticmethod
    def _check_outputs(ident: str, produces: frozenset[str], values: dict[str, Quantity]) -> None:
        """Refuse undeclared keys and non-Quantity values.

        The common case (all fine) is decided by a set comparison and the set of value types,
        both in C; only a bad result walks the values to name the first offender.
        """
        if values.keys() <= produces and set(map(type, values.values())) <= _QUANTITY_TYPES:
            return
        if values.keys() <= produces and all(isinstance(quantity, Quantity) for quantity in values.values()):
            return  # subclasses of Quantity of a plugin's own
        for key, quantity in values.items():
            if key not in produces:
                raise TypeError(f"{ident} returned undeclared result {key!r}")
            if not isinstance(quantity, Quantity):
                raise TypeError(f"{ident} returned {type(quantity).__name__} for {key!r}, not a Quantity")


def _point_arrays(
    scenario: Scenario, points: Mapping[str, Sequence[int] | np.ndarray] | None
) -> tuple[int, dict[str, np.ndarray]]:
    """The given point fields as int64 arrays of one length (1 when none is given)."""
    if not points:
        return 1, {}
    given = {}
    for name, values in points.items():
        if name not in POINT_FIELDS:
            raise ValueError(f"{name} is not a point field ({', '.join(POINT_FIELDS)})")
        given[name] = np.asarray(values, dtype=np.int64)
    lengths = {len(v) for v in given.values()}
    if len(lengths) != 1 or 0 in lengths:
        raise ValueError("point fields must be non-empty and of one length")
    return lengths.pop(), given


def _with_overrides(resolved: ResolvedScenario, i: int, varied: dict[str, np.ndarray]) -> ResolvedScenario:
    """``resolved`` with point ``i``'s drawn assumption values as the scenario's overrides."""
    if not varied:
        return resolved
    update = {ident: float(values[i]) for ident, values in varied.items()}
    scenario = resolved.scenario.model_copy(update={"assumptions": {**resolved.scenario.assumptions, **update}})
    return ResolvedScenario(scenario, resolved.model, resolved.cluster)


def _filled(n: int, value: int) -> np.ndarray:
    # np.array of a tuple is several times cheaper than np.full for the one-point group of a
    # single estimate, which every window update and solver probe runs
    return np.array((value,), dtype=np.int64) if n == 1 else np.full(n, value, dtype=np.int64)


def _point_scenarios(scenario: Scenario, seen: dict[str, np.ndarray], n: int) -> list[Scenario]:
    """Each point's scenario as scalar estimators see it (image tokens already in ``seq_len``)."""
    columns = [(name, seen[name].tolist()) for name in POINT_FIELDS]
    if n == 1:
        update = {name: values[0] for name, values in columns}
        if all(getattr(scenario, name) == value for name, value in update.items()):
            return [scenario]
        return [scenario.model_copy(update=update)]
    return [scenario.model_copy(update={name: values[i] for name, values in columns}) for i in range(n)]


def _fixed(warning: Warning) -> PointWarning:
    return PointWarning(warning.code, warning.message, warning.severity, warning.fix)


def _images(model: ModelArchitecture, scenario: Scenario, seq_len: np.ndarray) -> tuple[PointWarning | None, int]:
    """What images add: a request's image tokens join its prompt (``seq_len``), so prefill FLOPs,
    TTFT, the KV cache, activations and context limits all count them; the vision encoder's own
    FLOPs are the compute plugin's. A model without a vision tower cannot take images: a warning
    says they are not costed, never silence."""
    if scenario.images_per_request <= 0:
        return None, 0
    images = request_images(model, scenario)
    if images is None:
        return PointWarning(
            "images-without-vision-tower",
            f"{model.name} has no vision tower: the {scenario.images_per_request} image(s) per request are not "
            "costed",
            severity="warning",
            fix="pick a vision-language model (Qwen2.5-VL, Qwen3-VL, Gemma 3, Mistral 3, Llama 4) or set images to 0",
        ), 0

    def note(i: int) -> str:
        point = scenario.model_copy(update={"seq_len": int(seq_len[i])})
        return describe_images(model, point, images)

    return PointWarning("image-tokens", note, severity="info"), images.tokens


def _approximate_warning(why: str) -> Warning:
    """Every number of an estimate made from an approximated architecture inherits its doubt."""
    return Warning(
        "approximate-architecture",
        f"the model is an approximation ({why}): parameter counts, memory, FLOPs and speed may be wrong",
        severity="warning",
        fix="import a config whose model_type the importer reads block for block, or check the counts "
        "against the checkpoint's safetensors headers",
    )
