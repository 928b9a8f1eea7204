"""Tornado analysis: which assumption or price moves the headline number most, and whether a
comparison's recommendation survives the swing.

Each :class:`Factor` is swung alone to the low and the high end of its plausible range, every
other input at its value; the headline metric is estimated at both ends and the bars are sorted
by swing. Ranges:

* named assumptions: the plausible range their source documents ("Range 0.50-0.78", "range
  2-10 us"; the performance and cost plugins give one for each of theirs); an overridden
  assumption keeps the relative width of that range, as the performance plugin's own low/high
  figures do. Without a documented range: +-30% of the value (:data:`FALLBACK_SPREAD`), within
  the assumption's allowed minimum/maximum. On/off switches and byte-width choices are not
  swung (they are modelling choices, not uncertain quantities), nor are assumptions whose value
  is 0 and that document no range;
* prices: the rental and the purchase price per GPU +-30% (each candidate's own price scaled);
* pricing fields (electricity price, utilization of owned GPUs, PUE): +-30%, within each
  field's allowed bounds.

:func:`spans` gives low / likely / high of the headline numbers from the estimate's ``*_low`` /
``*_high`` keys (every efficiency assumption at one end of its range at once).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.core.errors import InputError
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Pricing, Scenario
from workbench.engine.assumptions import Assumption
from workbench.engine.compare import (
    METRIC_BY_ID,
    Candidate,
    Comparison,
    Resolve,
    Targets,
    compare,
    compare_draws,
    scale_prices,
)
from workbench.engine.estimate import Estimate
from workbench.engine.pipeline import Engine
from workbench.engine.variations import with_fields

#: Relative half-width of a range nobody documents.
FALLBACK_SPREAD = 0.30
FALLBACK_SOURCE = "+-30% of the value (no documented range)"
_NOT_SWUNG_UNITS = frozenset({"switch", "bytes", "B/param"})
_RANGE = re.compile(r"[Rr]ange:?\s+(\d+(?:\.\d+)?)\s*(?:-|–|to)\s*(\d+(?:\.\d+)?)\s*(ms|us|µs)?")
_TIME_SCALE = {"ms": 1e-3, "us": 1e-6, "µs": 1e-6}

#: Pricing fields swung by +-30%: (field, title, unit).
PRICING_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("power_usd_per_kwh", "Electricity price", "USD/kWh"),
    ("utilization", "Utilization of owned GPUs", "fraction"),
    ("pue", "Data-centre PUE", "ratio"),
)

#: Headline keys with ``*_low`` / ``*_high`` companions: (key, title, unit).
HEADLINES: tuple[tuple[str, str, str], ...] = (
    ("performance.ttft_s", "TTFT", "s"),
    ("performance.tpot_s", "TPOT", "s"),
    ("performance.tokens_per_s", "Throughput", "tokens/s"),
    ("performance.step_time_s", "Step time", "s"),
    ("performance.train_time_days", "Time to train", "days"),
    ("cost.usd_per_million_tokens", "Cost per million tokens", "USD/Mtoken"),
    ("cost.total_usd", "Cost of the training run", "USD"),
)


@dataclass(frozen=True, slots=True)
class Factor:
    """One input swung from ``low`` to ``high`` (``value`` is where it stands now).

    ``kind``: ``assumption`` (``target`` is the assumption id; absolute values), ``pricing`` (a
    field of ``scenario.pricing``; absolute values) or ``price`` (``target`` is ``rental`` or
    ``purchase``; ``low``/``high``/``value`` multiply every effective price).
    """

    id: str
    title: str
    unit: str
    kind: str
    target: str
    value: float
    low: float
    high: float
    range_source: str

    def apply(self, scenario: Scenario, at: float) -> Scenario:
        """``scenario`` with this factor at ``at`` (assumption and pricing kinds)."""
        if self.kind == "assumption":
            return scenario.model_copy(update={"assumptions": {**scenario.assumptions, self.target: at}})
        if self.kind == "pricing":
            return with_fields(scenario, {f"pricing.{self.target}": at})
        return scenario

    def apply_resolved(self, resolved: ResolvedScenario, at: float) -> ResolvedScenario:
        if self.kind == "price":
            rental, purchase = (at, 1.0) if self.target == "rental" else (1.0, at)
            return scale_prices(resolved, rental, purchase)
        return resolved.with_scenario(self.apply(resolved.scenario, at))

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "unit": self.unit,
            "kind": self.kind,
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "range_source": self.range_source,
        }


@dataclass(frozen=True, slots=True)
class Bar:
    """The headline metric with one factor at its low and at its high end."""

    factor: Factor
    at_low: float | None
    at_high: float | None
    recommendation_at_low: str | None = None
    recommendation_at_high: str | None = None
    recommendation_changes: bool = False

    @property
    def swing(self) -> float:
        if self.at_low is None or self.at_high is None:
            return 0.0
        return abs(self.at_high - self.at_low)

    def as_dict(self) -> dict[str, Any]:
        return {
            "factor": self.factor.as_dict(),
            "at_low": self.at_low,
            "at_high": self.at_high,
            "swing": self.swing,
            "recommendation_at_low": self.recommendation_at_low,
            "recommendation_at_high": self.recommendation_at_high,
            "recommendation_changes": self.recommendation_changes,
        }


@dataclass(frozen=True, slots=True)
class Span:
    """Low / likely / high of one headline number (``low`` <= ``likely`` <= ``high``)."""

    key: str
    title: str
    unit: str
    low: float | None
    likely: float
    high: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "unit": self.unit,
            "low": self.low,
            "likely": self.likely,
            "high": self.high,
        }


@dataclass(slots=True)
class Sensitivity:
    """A tornado: bars sorted by swing, biggest first, and the headline ranges."""

    scenario: str
    metric: str
    metric_title: str
    unit: str
    base: float | None
    bars: list[Bar]
    spans: list[Span] = field(default_factory=list)
    recommendation: str | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "metric": self.metric,
            "metric_title": self.metric_title,
            "unit": self.unit,
            "base": self.base,
            "recommendation": self.recommendation,
            "bars": [b.as_dict() for b in self.bars],
            "spans": [s.as_dict() for s in self.spans],
            "notes": list(self.notes),
        }


# --- ranges -----------------------------------------------------------------------------------


def documented_range(assumption: Assumption) -> tuple[float, float] | None:
    """The plausible (low, high) range an assumption's source or description states, in its
    unit; None when it states none that holds the default."""
    for match in _RANGE.finditer(f"{assumption.source} {assumption.description}"):
        scale = _TIME_SCALE.get(match[3] or "", 1.0) if assumption.unit == "s" else 1.0
        lo, hi = sorted((float(match[1]) * scale, float(match[2]) * scale))
        if lo < hi and lo <= assumption.default <= hi:
            return lo, hi
    return None


def _clamp(value: float, lo: float | None, hi: float | None) -> float:
    if lo is not None:
        value = max(value, lo)
    if hi is not None:
        value = min(value, hi)
    return value


def assumption_factor(assumption: Assumption, value: float) -> Factor | None:
    """The factor for one assumption at ``value``; None when it is not swung (see module doc)."""
    if assumption.unit in _NOT_SWUNG_UNITS:
        return None
    documented = documented_range(assumption)
    if documented is not None:
        lo, hi = documented
        source = "documented range"
        if value != assumption.default and assumption.default:
            scale = value / assumption.default
            lo, hi = lo * scale, hi * scale
            source = "documented range, scaled to the overridden value"
        elif value != assumption.default:
            lo, hi = min(lo, value), max(hi, value)
    elif value:
        lo, hi = value * (1 - FALLBACK_SPREAD), value * (1 + FALLBACK_SPREAD)
        source = FALLBACK_SOURCE
    else:
        return None
    lo = _clamp(lo, assumption.minimum, assumption.maximum)
    hi = _clamp(hi, assumption.minimum, assumption.maximum)
    if not lo < hi:
        return None
    return Factor(
        assumption.id, assumption.title, assumption.unit, "assumption", assumption.id, value, lo, hi, source
    )


def _pricing_bounds(name: str) -> tuple[float | None, float | None]:
    lo = hi = None
    for meta in Pricing.model_fields[name].metadata:
        lo = getattr(meta, "ge", None) if getattr(meta, "ge", None) is not None else lo
        lo = getattr(meta, "gt", None) if getattr(meta, "gt", None) is not None else lo
        hi = getattr(meta, "le", None) if getattr(meta, "le", None) is not None else hi
    return lo, hi


def factors(engine: Engine, estimates: Sequence[Estimate]) -> list[Factor]:
    """Every factor that can move these estimates: the assumptions they read, prices, pricing."""
    out: list[Factor] = []
    seen: set[str] = set()
    first = estimates[0]
    scenario = first.resolved.scenario
    for estimate in estimates:
        for ident in sorted(estimate.assumptions.used):
            if ident in seen or ident not in engine.assumptions:
                continue
            seen.add(ident)
            value = estimate.resolved.scenario.assumptions.get(ident, engine.assumptions[ident].default)
            factor = assumption_factor(engine.assumptions[ident], value)
            if factor is not None:
                out.append(factor)
    lo, hi = 1 - FALLBACK_SPREAD, 1 + FALLBACK_SPREAD
    if any(e.get("cost.usd_per_gpu_hour") is not None for e in estimates):
        out.append(
            Factor(
                "price.rental",
                "Rental price per GPU-hour",
                "x price",
                "price",
                "rental",
                1.0,
                lo,
                hi,
                "+-30% of each accelerator's price",
            )
        )
    if any(e.get("cost.tco.capex_usd") is not None for e in estimates):
        out.append(
            Factor(
                "price.purchase",
                "Purchase price per GPU",
                "x price",
                "price",
                "purchase",
                1.0,
                lo,
                hi,
                "+-30% of each accelerator's price",
            )
        )
    for name, title, unit in PRICING_FIELDS:
        value = float(getattr(scenario.pricing, name))
        if not value:
            continue
        bound_lo, bound_hi = _pricing_bounds(name)
        low = _clamp(value * lo, bound_lo, bound_hi)
        high = _clamp(value * hi, bound_lo, bound_hi)
        if low < high:
            out.append(
                Factor(f"pricing.{name}", title, unit, "pricing", name, value, low, high, FALLBACK_SOURCE)
            )
    return out


# --- the headline metric ----------------------------------------------------------------------


def headline_key(estimate: Estimate) -> str:
    """The number a planner decides on: the natural cost when it is known, else speed."""
    scenario = estimate.resolved.scenario
    runs = scenario.is_training and scenario.train_tokens is not None
    cost = "cost.total_usd" if runs else "cost.usd_per_million_tokens"
    if estimate.get(cost) is not None:
        return cost
    return "performance.train_time_days" if runs else "performance.tokens_per_s"


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _title(estimate: Estimate, key: str) -> tuple[str, str]:
    quantity = estimate.values.get(key)
    if quantity is None:
        raise InputError(f"sensitivity: the estimate has no result '{key}' (see docs/output-keys.md)")
    return quantity.label or key, quantity.unit


def spans(estimate: Estimate) -> list[Span]:
    """Low / likely / high of the headline numbers the estimate has."""
    out = []
    for key, title, unit in HEADLINES:
        likely = _number(estimate.get(key))
        if likely is None:
            continue
        low, high = _number(estimate.get(f"{key}_low")), _number(estimate.get(f"{key}_high"))
        if low is not None and high is not None and low > high:
            low, high = high, low
        out.append(Span(key, title, unit, low, likely, high))
    return out


def tornado(engine: Engine, resolved: ResolvedScenario, metric: str | None = None) -> Sensitivity:
    """Swing every factor of one scenario (as given) and sort the bars by swing."""
    base = engine.run(resolved)
    key = metric or headline_key(base)
    title, unit = _title(base, key)
    if _number(base.get(key)) is None:
        raise InputError(f"sensitivity: '{key}' has no numeric value for this scenario")
    swung = factors(engine, [base])
    ends = _ends_as_one_group(engine, resolved, swung, key)
    bars = []
    for factor in swung:
        at = ends.get(factor.id) or [
            _number(engine.run(factor.apply_resolved(resolved, v)).get(key))
            for v in (factor.low, factor.high)
        ]
        bars.append(Bar(factor, at[0], at[1]))
    bars.sort(key=lambda b: (-b.swing, b.factor.id))
    notes = []
    if not base.get("memory.fits"):
        notes.append("the scenario does not fit in memory as given; the numbers assume it ran")
    return Sensitivity(
        resolved.scenario.name, key, title, unit, _number(base.get(key)), bars, spans(base), None, notes
    )


def swing_draws(swung: Sequence[Factor]) -> dict[str, list[float]]:
    """Assumption draws that swing each factor alone: two draws per factor (its low end, then its
    high end), every other factor at its value."""
    n = 2 * len(swung)
    draws = {f.target: [f.value] * n for f in swung}
    for j, f in enumerate(swung):
        draws[f.target][2 * j], draws[f.target][2 * j + 1] = f.low, f.high
    return draws


def swung_comparisons(
    engine: Engine,
    swings: Sequence[Factor],
    scenarios: Sequence[Scenario],
    candidates: Sequence[Candidate],
    resolve: Resolve,
    targets: Targets | None,
) -> dict[Factor, tuple[Comparison, Comparison]]:
    """The comparison with each assumption factor at its low and at its high end, all from
    :func:`compare_draws` (one point group per candidate and layout for every swing at once):
    factor -> (at low, at high). Price and pricing factors are left out (they are no assumption)."""
    swung = [f for f in swings if f.kind == "assumption"]
    base = scenarios[0].assumptions
    if not swung or any(s.assumptions.get(f.target) != base.get(f.target) for s in scenarios for f in swung):
        return {}  # scenarios that set a swung assumption differently: one comparison per end
    compared = compare_draws(engine, scenarios, candidates, resolve, swing_draws(swung), targets)
    return {f: (compared[2 * j], compared[2 * j + 1]) for j, f in enumerate(swung)}


def _ends_as_one_group(
    engine: Engine, resolved: ResolvedScenario, swung: Sequence[Factor], key: str
) -> dict[str, list[float | None]]:
    """``key`` at the low and the high end of every assumption factor whose readers take drawn
    values as arrays, from one point group (two points per factor, each with that factor at one
    end and every other at its value): factor id -> [at low, at high]. The others are left out."""
    scenario = resolved.scenario
    batched = [
        f for f in swung if f.kind == "assumption" and engine.takes_assumption_arrays(scenario, (f.target,), (key,))
    ]
    if not batched:
        return {}
    group = engine.run_points(resolved, None, (key,), swing_draws(batched))
    return {f.id: [_number(group.get(2 * j, key)), _number(group.get(2 * j + 1, key))] for j, f in enumerate(batched)}


def comparison_tornado(
    engine: Engine,
    scenarios: Sequence[Scenario],
    candidates: Sequence[Candidate],
    resolve: Resolve,
    targets: Targets | None = None,
) -> tuple[Comparison, Sensitivity]:
    """Swing every factor over a whole comparison: does the recommendation change?

    The bars' metric is the natural cost of the recommended candidate (of the first scenario;
    the first-ranked one when nothing is recommended), re-sized and re-estimated at each end.
    """
    base = compare(engine, scenarios, candidates, resolve, targets)
    first = base.scenarios[0]
    lead = first.recommendation or first.results[0]
    metric = lead.cost_metric
    estimates = [r.estimate for r in base.rows() if r.estimate is not None]
    rec_name = None if base.recommendation is None else base.recommendation.label

    def run(factor: Factor, at: float) -> tuple[float | None, str | None]:
        if factor.kind == "price":
            rental, purchase = (at, 1.0) if factor.target == "rental" else (1.0, at)
            swung = compare(
                engine, scenarios, candidates, resolve, targets, price_scale=rental, purchase_scale=purchase
            )
        else:
            swung = compare(engine, [factor.apply(s, at) for s in scenarios], candidates, resolve, targets)
        row = next(r for r in swung.scenarios[0].results if r.candidate == lead.candidate)
        return _number(
            row.values.get(metric)
        ), None if swung.recommendation is None else swung.recommendation.label

    def outcome(swung: Comparison) -> tuple[float | None, str | None]:
        row = next(r for r in swung.scenarios[0].results if r.candidate == lead.candidate)
        pick = None if swung.recommendation is None else swung.recommendation.label
        return _number(row.values.get(metric)), pick

    swings = factors(engine, estimates)
    at_ends = {
        factor.id: [outcome(c) for c in pair]
        for factor, pair in swung_comparisons(engine, swings, scenarios, candidates, resolve, targets).items()
    }
    bars = []
    for factor in swings:
        (lo_value, lo_rec), (hi_value, hi_rec) = at_ends.get(factor.id) or (run(factor, factor.low),
                                                                             run(factor, factor.high))  # fmt: skip
        changes = lo_rec != rec_name or hi_rec != rec_name
        bars.append(Bar(factor, lo_value, hi_value, lo_rec, hi_rec, changes))
    bars.sort(key=lambda b: (-b.swing, b.factor.id))
    m = METRIC_BY_ID[metric]
    notes = [f"metric: {m.title} of {lead.candidate.label} on scenario '{first.scenario.name}'"]
    if base.recommendation is None:
        notes.append(f"no recommendation: {base.why_no_recommendation}")
    sens = Sensitivity(
        first.scenario.name,
        metric,
        m.title,
        m.unit,
        lead.cost,
        bars,
        spans(lead.estimate) if lead.estimate is not None else [],
        rec_name,
        notes,
    )
    return base, sens
