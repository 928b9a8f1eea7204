"""Fit the efficiency assumptions an estimate reads to measurements of one GPU and engine.

* **Which assumptions**: those the measurements' estimates read, that have a documented
  plausible range (:func:`workbench.engine.sensitivity.documented_range`, the range the
  tornado and the low/high keys swing), that are not on/off switches, that no measurement's
  scenario overrides itself, and that move at least one prediction across that range.
* **Bounds**: the documented range, within the assumption's allowed minimum and maximum; a fit
  never leaves it.
* **Loss**: residuals in log space, ``r = ln(predicted / measured)``, scaled by
  :data:`NOISE` (the run-to-run spread of a serving benchmark, ~5%), under a Huber loss (one
  wild measurement pulls linearly, not quadratically); plus :data:`MOVE_PENALTY` for each
  assumption that leaves its default (an assumption moves only when that explains the data
  clearly better than noise would) and a weak pull to the default.
* **Search**: coordinate search over a log-spaced grid of each range, the default always a
  candidate, repeated until nothing moves; then the same on a finer grid around the best. Every candidate of
  one coordinate is one point group of the engine (``run_points``), so a fit costs a few hundred
  group runs, not thousands of estimates.
* **Leave-one-out**: each measurement is predicted by a fit to the others, so a user sees
  whether the fit generalizes or only memorizes.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.core.errors import InputError
from workbench.core.resolved import ResolvedScenario
from workbench.engine.assumptions import Assumption
from workbench.engine.pipeline import Engine
from workbench.engine.sensitivity import documented_range
from workbench.measure.model import METRICS
from workbench.measure.predict import predict_points

#: Relative run-to-run spread of a measurement: residuals are counted in units of it.
NOISE = 0.05
#: Huber threshold, in units of NOISE.
HUBER = 2.0
#: Loss an assumption must save to leave its default. Fitting one parameter to pure noise saves
#: half a chi-square of one degree (mean 0.5); asking for 1 lets noise move an assumption in
#: about one fit of six, and then only by about the noise's mean.
MOVE_PENALTY = 1.0
#: Pull towards the default, per (log distance / log range width) squared.
PRIOR = 0.5
GRID = 9
FINE = 5
MAX_ROUNDS = 4
#: A prediction must move by this much (log) across an assumption's range for it to be fitted.
SENSITIVE = 1e-3
_NOT_FITTED_UNITS = frozenset({"switch", "bytes", "B/param"})
MAX_LEAVE_ONE_OUT = 40


@dataclass(frozen=True, slots=True)
class Case:
    """One measurement to fit: its resolved scenario and the metrics it can be compared on."""

    ident: str
    resolved: ResolvedScenario
    measured: Mapping[str, float]
    keys: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Parameter:
    id: str
    title: str
    unit: str
    default: float
    low: float
    high: float
    value: float

    @property
    def moved(self) -> bool:
        return not math.isclose(self.value, self.default, rel_tol=1e-9, abs_tol=0.0)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "unit": self.unit, "default": self.default,
                "low": self.low, "high": self.high, "value": self.value,
                "change": self.value / self.default - 1.0 if self.default else None, "moved": self.moved}


@dataclass(frozen=True, slots=True)
class Residual:
    case: str
    metric: str
    measured: float
    before: float | None
    after: float | None
    left_out: float | None  # predicted by the fit to the other measurements

    @staticmethod
    def error(predicted: float | None, measured: float) -> float | None:
        return None if predicted is None else predicted / measured - 1.0

    def as_dict(self) -> dict[str, Any]:
        return {"measurement": self.case, "metric": self.metric, "unit": METRICS[self.metric].unit,
                "measured": self.measured, "before": self.before, "after": self.after,
                "left_out": self.left_out, "error_before": self.error(self.before, self.measured),
                "error_after": self.error(self.after, self.measured),
                "error_left_out": self.error(self.left_out, self.measured)}


@dataclass(frozen=True, slots=True)
class Fit:
    parameters: list[Parameter]
    residuals: list[Residual]
    notes: list[str]

    @property
    def overrides(self) -> dict[str, float]:
        return {p.id: p.value for p in self.parameters if p.moved}

    def median_abs(self, which: str) -> float | None:
        errors = [abs(e) for r in self.residuals if (e := Residual.error(getattr(r, which), r.measured)) is not None]
        return statistics.median(errors) if errors else None


# --- parameters ---------------------------------------------------------------------------------


def candidate_parameters(engine: Engine, cases: Sequence[Case]) -> tuple[list[Parameter], list[str]]:
    """The assumptions a fit may move, and one note per assumption left out (and why)."""
    definitions = engine.assumptions
    read: set[str] = set()
    fixed: set[str] = set()
    for case in cases:
        read |= engine.run(case.resolved, tuple(sorted(set(case.keys.values())))).assumptions.used
        fixed |= set(case.resolved.scenario.assumptions)
    params, notes = [], []
    for ident in sorted(read):
        definition: Assumption | None = definitions.get(ident)
        if definition is None or definition.unit in _NOT_FITTED_UNITS:
            continue
        bounds = documented_range(definition)
        if bounds is None:
            continue
        if ident in fixed:
            notes.append(f"{ident}: set by a measurement's scenario, not fitted")
            continue
        low = max(bounds[0], definition.minimum if definition.minimum is not None else -math.inf)
        high = min(bounds[1], definition.maximum if definition.maximum is not None else math.inf)
        if not low < high or low <= 0:
            continue
        params.append(Parameter(ident, definition.title, definition.unit, definition.default, low, high,
                                definition.default))
    sensitive = [p for p in params if _moves_a_prediction(engine, cases, p)]
    notes += [f"{p.id}: no measured metric depends on it here, not fitted" for p in params if p not in sensitive]
    return sensitive, notes


def _moves_a_prediction(engine: Engine, cases: Sequence[Case], param: Parameter) -> bool:
    for case in cases:
        low, high = predict_points(engine, case.resolved, case.keys, {param.id: [param.low, param.high]})
        for metric in case.keys:
            a, b = low.get(metric), high.get(metric)
            if a and b and abs(math.log(b / a)) > SENSITIVE:
                return True
    return False


# --- loss and search ----------------------------------------------------------------------------


def _huber(z: np.ndarray) -> np.ndarray:
    a = np.abs(z)
    return np.where(a <= HUBER, 0.5 * z * z, HUBER * a - 0.5 * HUBER * HUBER)


class Predictions:
    """Predicted metrics per case and assumption vector, remembered: the leave-one-out fits walk
    mostly the same grid points as the full fit, and a simulated load is the costly part."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._memo: dict[tuple[int, tuple[tuple[str, float], ...]], dict[str, float | None]] = {}

    def points(self, case: Case, values: Mapping[str, Sequence[float]], count: int) -> list[dict[str, float | None]]:
        ids = sorted(values)
        vectors = [tuple((i, float(values[i][k])) for i in ids) for k in range(count)]
        key = id(case.resolved)  # the cases of one calibration live as long as this memo
        missing = list(dict.fromkeys(v for v in vectors if (key, v) not in self._memo))
        if missing:
            group = {i: [dict(v)[i] for v in missing] for i in ids}
            for vector, predicted in zip(missing, predict_points(self.engine, case.resolved, case.keys, group),
                                         strict=True):
                self._memo[(key, vector)] = predicted
        return [self._memo[(key, v)] for v in vectors]


class _Objective:
    def __init__(self, predictions: Predictions, cases: Sequence[Case], params: Sequence[Parameter]) -> None:
        self.source, self.cases, self.params = predictions, cases, params

    def losses(self, values: Mapping[str, Sequence[float]], count: int) -> np.ndarray:
        total = np.zeros(count)
        for case in self.cases:
            points = self.source.points(case, values, count)
            for metric, measured in case.measured.items():
                if metric not in case.keys:
                    continue
                predicted = np.array([p.get(metric) or math.nan for p in points], dtype=float)
                residual = np.log(predicted / measured) / NOISE
                # a point where the estimate gives nothing counts as a large miss, never a good fit
                total += np.where(np.isfinite(residual), _huber(np.nan_to_num(residual)), 50.0)
        for p in self.params:
            column = np.asarray(values[p.id], dtype=float)
            moved = ~np.isclose(column, p.default, rtol=1e-9, atol=0.0)
            width = math.log(p.high / p.low)
            total += MOVE_PENALTY * moved + PRIOR * (np.log(column / p.default) / width) ** 2
        return total


def fit(engine: Engine | Predictions, cases: Sequence[Case], params: Sequence[Parameter]) -> list[Parameter]:
    """The parameters at the values that minimize the loss (see module doc)."""
    if not params or not cases:
        return list(params)
    source = engine if isinstance(engine, Predictions) else Predictions(engine)
    objective = _Objective(source, cases, params)
    current = {p.id: p.default for p in params}
    # coarse passes over the whole ranges until nothing moves, then fine passes around the best
    for fine in (False, True):
        for _ in range(MAX_ROUNDS):
            changed = False
            for p in params:
                grid = _grid(p, FINE, current[p.id]) if fine else _grid(p, GRID, None)
                candidates = sorted(set(grid) | {current[p.id], p.default})
                values = {q.id: [current[q.id]] * len(candidates) for q in params}
                values[p.id] = candidates
                losses = objective.losses(values, len(candidates))
                best = candidates[int(np.argmin(losses))]
                if not math.isclose(best, current[p.id], rel_tol=1e-12):
                    current[p.id] = best
                    changed = True
            if not changed:
                break
    return [Parameter(p.id, p.title, p.unit, p.default, p.low, p.high, current[p.id]) for p in params]


def _grid(p: Parameter, count: int, around: float | None) -> list[float]:
    lo, hi = math.log(p.low), math.log(p.high)
    if around is not None:
        step = (hi - lo) / (GRID - 1)
        centre = math.log(around)
        lo, hi = max(lo, centre - step), min(hi, centre + step)
    return [float(min(max(math.exp(x), p.low), p.high)) for x in np.linspace(lo, hi, count)]


# --- the whole calibration ----------------------------------------------------------------------


#: ``progress(done, total, what)`` between the steps of a calibration; an exception it raises
#: stops the calibration (the window's Cancel).
Progress = Callable[[int, int, str], None]


def calibrate(engine: Engine, cases: Sequence[Case], *, leave_one_out: bool = True,
              progress: Progress | None = None) -> Fit:
    """Fit, with before/after residuals of every measured metric and leave-one-out predictions."""
    cases = [c for c in cases if c.keys]
    if not cases:
        raise InputError("calibrate: none of the measurements has a metric the estimate predicts")
    loo = leave_one_out and 3 <= len(cases) <= MAX_LEAVE_ONE_OUT
    total = 1 + (len(cases) if loo else 0)
    tell = progress or (lambda done, total, what: None)
    tell(0, total, "fitting")
    params, notes = candidate_parameters(engine, cases)
    source = Predictions(engine)
    fitted = fit(source, cases, params)
    before = [predict_points(engine, c.resolved, c.keys, {})[0] for c in cases]
    after = [predict_points(engine, c.resolved, c.keys, {p.id: [p.value] for p in fitted})[0] for c in cases]
    left_out: list[dict[str, float | None]] = [{} for _ in cases]
    if loo:
        for i, case in enumerate(cases):
            tell(1 + i, total, f"leaving out measurement {i + 1} of {len(cases)}")
            others = [c for j, c in enumerate(cases) if j != i]
            loo = fit(source, others, params)
            left_out[i] = predict_points(engine, case.resolved, case.keys, {p.id: [p.value] for p in loo})[0]
    elif leave_one_out:
        notes.append(f"leave-one-out needs 3 to {MAX_LEAVE_ONE_OUT} measurements; {len(cases)} given")
    residuals = [
        Residual(case.ident, metric, case.measured[metric], b.get(metric), a.get(metric), lo.get(metric))
        for case, b, a, lo in zip(cases, before, after, left_out, strict=True)
        for metric in case.keys
    ]
    if not params:
        notes.append("no assumption with a documented range moves these predictions; nothing was fitted")
    tell(total, total, "done")
    return Fit(fitted, residuals, notes)
