"""Compare candidate accelerators across scenarios: size, estimate, check targets, rank, recommend.

For each (candidate, scenario) pair the GPU count is sized first: the scenario's own count and
layout when they run on the candidate, else the best layout of that count, else the fewest GPUs
that fit (:func:`workbench.engine.solvers.fewest_gpus`), else "does not fit". One full estimate of
the sized pair gives every metric of :data:`METRICS`. Candidates that fit and meet the
:class:`Targets` rank first, then by the scenario's natural cost (:func:`cost_metric`), ties by
throughput; the recommendation is the cheapest candidate that meets the targets.

Prices: a candidate's own price wins; a scenario's explicit price applies to the scenario's own
accelerator only (it is a price for that GPU); everything else takes the catalog's typical price.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from workbench.core.errors import InputError
from workbench.core.project import Comparison as SavedComparison
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Scenario
from workbench.engine import solvers
from workbench.engine.estimate import Estimate
from workbench.engine.pipeline import Engine
from workbench.engine.solvers import MAX_GPUS, Layout, LayoutSearch, runnable

Resolve = Callable[[Scenario], ResolvedScenario]
#: Told (steps done, steps in all) as a long search goes; a caller that wants to stop it raises
#: from here (the window's worker raises when its job is superseded or cancelled).
Progress = Callable[[int, int], None]
HOURS_PER_YEAR = 8760.0
Value = float | int | bool | str | None


@dataclass(frozen=True, slots=True)
class Candidate:
    """An accelerator to compare, optionally on a given node shape and at given prices."""

    accelerator: str
    node: str | None = None
    usd_per_gpu_hour: float | None = None
    purchase_usd_per_gpu: float | None = None

    @property
    def label(self) -> str:
        return self.accelerator if self.node is None else f"{self.accelerator} ({self.node})"


@dataclass(frozen=True, slots=True)
class Targets:
    """What a candidate must achieve. None: no requirement.

    ``budget_basis`` says what the budget is compared with: ``run`` (rental cost of the training
    run), ``tco`` (the cheaper of buying and renting over ``pricing.years``; renting alone when no
    purchase price is known), ``capex`` (buying the GPUs and their servers), or ``auto`` (``run``
    for a training scenario with ``train_tokens``, ``tco`` otherwise).
    """

    max_ttft_s: float | None = None
    max_tpot_s: float | None = None
    min_tokens_per_s: float | None = None
    deadline_days: float | None = None
    budget_usd: float | None = None
    budget_basis: str = "auto"

    def __post_init__(self) -> None:
        for name in ("max_ttft_s", "max_tpot_s", "min_tokens_per_s", "deadline_days", "budget_usd"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise InputError(f"targets: {name} must be positive, got {value}")
        if self.budget_basis not in ("auto", "run", "tco", "capex"):
            raise InputError(f"targets: budget basis is auto, run, tco or capex, not '{self.budget_basis}'")

    @classmethod
    def of(cls, saved: SavedComparison) -> Targets:
        """The targets a project's saved comparison holds."""
        return cls(**{name: getattr(saved, name) for name in SavedComparison.TARGET_FIELDS})

    def as_dict(self) -> dict[str, Value]:
        return {
            "max_ttft_s": self.max_ttft_s,
            "max_tpot_s": self.max_tpot_s,
            "min_tokens_per_s": self.min_tokens_per_s,
            "deadline_days": self.deadline_days,
            "budget_usd": self.budget_usd,
            "budget_basis": self.budget_basis,
        }


@dataclass(frozen=True, slots=True)
class Metric:
    """One compared figure: its id (JSON key), title, unit, and the estimate key it copies."""

    id: str
    title: str
    unit: str
    key: str | None  # None: derived here (see :func:`row_values`)
    better: str = ""  # "lower", "higher" or "" (not ordered)
    applies: str = "both"  # "inference", "training" or "both"


def _ranged(ident: str, title: str, unit: str, key: str, better: str, applies: str) -> tuple[Metric, ...]:
    return (
        Metric(ident, title, unit, key, better, applies),
        Metric(f"{ident}_low", f"{title}, low", unit, f"{key}_low", better, applies),
        Metric(f"{ident}_high", f"{title}, high", unit, f"{key}_high", better, applies),
    )


#: Every metric of a comparison row, in column order. ``*_low`` / ``*_high``: the estimate with
#: every efficiency assumption at one end of its plausible range (the lower and the higher number).
METRICS: tuple[Metric, ...] = (
    Metric("gpus", "GPUs", "GPUs", None, "lower"),
    *_ranged("ttft_s", "TTFT", "s", "performance.ttft_s", "lower", "inference"),
    *_ranged("tpot_s", "TPOT", "s", "performance.tpot_s", "lower", "inference"),
    *_ranged("tokens_per_s", "Throughput", "tokens/s", "performance.tokens_per_s", "higher", "both"),
    *_ranged("train_days", "Time to train", "days", "performance.train_time_days", "lower", "training"),
    Metric("usd_per_gpu_hour", "Price per GPU-hour", "USD/GPU-h", "cost.usd_per_gpu_hour", "lower"),
    Metric("usd_per_hour", "Rental per hour", "USD/h", "cost.usd_per_hour", "lower"),
    *_ranged(
        "usd_per_m_tokens", "Cost per M tokens", "USD/Mtoken", "cost.usd_per_million_tokens", "lower", "both"
    ),
    Metric(
        "usd_per_m_input_tokens",
        "Cost per M input tokens",
        "USD/Mtoken",
        "cost.usd_per_million_input_tokens",
        "lower",
        "inference",
    ),
    Metric(
        "usd_per_m_output_tokens",
        "Cost per M output tokens",
        "USD/Mtoken",
        "cost.usd_per_million_output_tokens",
        "lower",
        "inference",
    ),
    *_ranged("run_usd", "Cost of the training run", "USD", "cost.total_usd", "lower", "training"),
    Metric("power_kw", "Facility power", "kW", "cost.power_kw", "lower"),
    Metric("tokens_per_kwh", "Tokens per kWh (facility)", "tokens/kWh", None, "higher"),
    Metric("tco_capex_usd", "Purchase (GPUs + servers)", "USD", "cost.tco.capex_usd", "lower"),
    Metric("tco_buy_usd", "TCO, buy", "USD", "cost.tco.buy_usd", "lower"),
    Metric("tco_rent_usd", "TCO, rent", "USD", "cost.tco.rent_usd", "lower"),
    Metric("tco_break_even_months", "Break-even of buying", "months", "cost.tco.break_even_months", "lower"),
    Metric("tco_cheaper", "Cheaper over the period", "text", "cost.tco.cheaper"),
    Metric("memory_per_gpu_bytes", "Memory per GPU", "B", "memory.per_gpu.total", "lower"),
)
#: What the serving simulation adds to a row when the scenario carries a load (an arrival rate or
#: a request trace): the tail the closed-form means hide. Absent from rows without a load, so
#: those read exactly as before. TTFT/TPOT targets are judged on the p99 columns then.
SIM_METRICS: tuple[Metric, ...] = (
    Metric("sim_ttft_p50_s", "TTFT p50 under load", "s", "performance.sim.ttft_p50_s", "lower", "inference"),
    Metric("sim_ttft_p99_s", "TTFT p99 under load", "s", "performance.sim.ttft_p99_s", "lower", "inference"),
    Metric("sim_tpot_p50_s", "TPOT p50 under load", "s", "performance.sim.tpot_p50_s", "lower", "inference"),
    Metric("sim_tpot_p99_s", "TPOT p99 under load", "s", "performance.sim.tpot_p99_s", "lower", "inference"),
    Metric(
        "sim_goodput_rps",
        "Goodput under load",
        "requests/s",
        "performance.sim.goodput_requests_per_s",
        "higher",
        "inference",
    ),
    Metric(
        "sim_goodput_fraction",
        "Requests within the targets",
        "fraction",
        "performance.sim.goodput_fraction",
        "higher",
        "inference",
    ),
)
METRIC_BY_ID: dict[str, Metric] = {m.id: m for m in (*METRICS, *SIM_METRICS)}

#: Result keys a comparison row reads (the engine runs every estimator anyway: cost needs them all).
WANTED_KEYS: tuple[str, ...] = tuple(
    sorted({m.key for m in METRICS if m.key} | {"memory.fits", "memory.headroom", "performance.gpus"})
)


def has_load(scenario: Scenario) -> bool:
    """Whether a serving scenario describes a load to simulate (an arrival rate or a request trace)."""
    serving = scenario.serving
    return not scenario.is_training and (serving.arrival_rate is not None or serving.trace is not None)


def load_words(scenario: Scenario) -> str:
    """The load in a few words, for reasons: "8 req/s", "the trace requests.csv"."""
    serving = scenario.serving
    if serving.trace is not None:
        return f"the trace {PurePath(serving.trace).name}"
    return f"{serving.arrival_rate:g} req/s"


def metrics_for(scenarios: Iterable[Scenario]) -> tuple[Metric, ...]:
    """The metrics of a comparison of ``scenarios``: the simulated ones too when one has a load."""
    return (*METRICS, *SIM_METRICS) if any(has_load(s) for s in scenarios) else METRICS


def cost_metric(scenario: Scenario) -> str:
    """The metric a scenario's candidates are ranked by: $ per million tokens for serving, $ of
    the run for training with ``train_tokens``, $ per million training tokens without."""
    if scenario.is_training and scenario.train_tokens is not None:
        return "run_usd"
    return "usd_per_m_tokens"


@dataclass(slots=True)
class CandidateResult:
    """One candidate on one scenario, sized, estimated and judged."""

    scenario: str
    candidate: Candidate
    accelerator_name: str
    node: str
    fits: bool
    tp: int
    pp: int
    dp: int
    sizing: str  # how the GPU count was chosen, in words
    values: dict[str, Value]  # metric id -> value (see METRICS)
    cost_metric: str
    failures: tuple[str, ...]  # why it misses the targets or cannot be ranked, in words
    warnings: tuple[str, ...]  # the estimate's guard-rail messages
    estimate: Estimate | None = None  # the full estimate (explanations); not exported
    rank: int = 0
    recommended: bool = False
    verdict: str = ""
    #: The rental price per GPU-hour at which this candidate would cost what the recommended one
    #: costs (its cost metric is proportional to its own price); None for the recommended one, one
    #: that misses the targets, or one without a price.
    break_even_usd_per_gpu_hour: float | None = None

    @property
    def gpus(self) -> int | None:
        value = self.values.get("gpus")
        return int(value) if isinstance(value, (int, float)) else None

    @property
    def cost(self) -> float | None:
        return _number(self.values.get(self.cost_metric))

    @property
    def meets_targets(self) -> bool:
        return not self.failures

    def as_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "rank": self.rank,
            "accelerator": self.candidate.accelerator,
            "accelerator_name": self.accelerator_name,
            "node": self.node,
            "fits": self.fits,
            "tp": self.tp,
            "pp": self.pp,
            "dp": self.dp,
            "sizing": self.sizing,
            "meets_targets": self.meets_targets,
            "recommended": self.recommended,
            "cost_metric": self.cost_metric,
            "verdict": self.verdict,
            "break_even_usd_per_gpu_hour": self.break_even_usd_per_gpu_hour,
            "failures": list(self.failures),
            "warnings": list(self.warnings),
            "values": dict(self.values),
        }


@dataclass(slots=True)
class ScenarioComparison:
    """Every candidate on one scenario, best first."""

    scenario: Scenario
    cost_metric: str
    results: list[CandidateResult]
    recommendation: CandidateResult | None
    why_no_recommendation: str | None

    def as_dict(self) -> dict[str, Any]:
        rec = self.recommendation
        return {
            "scenario": self.scenario.name,
            "workload": self.scenario.workload.value,
            "model": self.scenario.model,
            "cost_metric": self.cost_metric,
            "recommendation": None if rec is None else rec.candidate.accelerator,
            "why_no_recommendation": self.why_no_recommendation,
            "results": [r.as_dict() for r in self.results],
        }


@dataclass(slots=True)
class Comparison:
    """Candidates x scenarios, with a recommendation per scenario and overall."""

    candidates: tuple[Candidate, ...]
    targets: Targets
    scenarios: list[ScenarioComparison]
    recommendation: Candidate | None
    why_no_recommendation: str | None

    def rows(self) -> list[CandidateResult]:
        return [r for s in self.scenarios for r in s.results]

    def as_dict(self) -> dict[str, Any]:
        return {
            "candidates": [c.accelerator for c in self.candidates],
            "targets": self.targets.as_dict(),
            "recommendation": None if self.recommendation is None else self.recommendation.accelerator,
            "why_no_recommendation": self.why_no_recommendation,
            "metrics": [
                {"id": m.id, "title": m.title, "unit": m.unit, "key": m.key}
                for m in metrics_for(s.scenario for s in self.scenarios)
            ],
            "scenarios": [s.as_dict() for s in self.scenarios],
        }


# --- formatting (the words of reasons and verdicts) -------------------------------------------


def format_seconds(s: float) -> str:
    if s < 1:
        return f"{s * 1000:.3g} ms"
    if s < 120:
        return f"{s:.3g} s"
    return f"{s / 60:.3g} min"


def format_usd(x: float) -> str:
    if abs(x) >= 1e6:
        return f"${x / 1e6:.3g}M"
    if abs(x) >= 1e4:
        return f"${x / 1e3:,.0f}K"
    if abs(x) >= 10:
        return f"${x:,.0f}"
    return f"${x:.3g}"


def format_metric(metric_id: str, value: Value) -> str:
    """A metric value for people: 61 ms, $1.2M, 3,400 tokens/s, "-" when unknown."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"  # unknown, or unbounded: never "nan" or "inf" in a table
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    unit = METRIC_BY_ID[metric_id].unit if metric_id in METRIC_BY_ID else ""
    if unit == "s":
        return format_seconds(value)
    if unit.startswith("USD"):
        suffix = unit[3:]
        return format_usd(value) + suffix
    if unit == "B":
        return f"{value / 2**30:.1f} GiB"
    if unit == "days":
        return f"{value:.3g} days"
    if unit == "GPUs":
        return f"{value:,.0f}"
    if unit == "fraction":
        return f"{value:.0%}"
    if abs(value) >= 100:
        return f"{value:,.0f} {unit}"
    return f"{value:.3g} {unit}"


def _number(value: Value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _finite(value: Value) -> float | None:
    """A number, or None for unknown and non-finite ones (JSON holds no NaN)."""
    number = _number(value)
    return number if number is not None and math.isfinite(number) else None


# --- one pair --------------------------------------------------------------------------------


def with_targets_as_slo(scenario: Scenario, targets: Targets) -> Scenario:
    """A scenario with a load whose SLO is unset takes the comparison's TTFT/TPOT targets, so the
    simulated goodput counts the requests that meet them (the scenario's own SLO wins)."""
    serving = scenario.serving
    if not has_load(scenario):
        return scenario
    update = {
        name: limit
        for name, limit in (("slo_ttft_s", targets.max_ttft_s), ("slo_tpot_s", targets.max_tpot_s))
        if limit is not None and getattr(serving, name) is None
    }
    if not update:
        return scenario
    return scenario.model_copy(update={"serving": serving.model_copy(update=update)})


def _candidate_scenario(scenario: Scenario, candidate: Candidate) -> Scenario:
    same = candidate.accelerator == scenario.gpu
    node = candidate.node if candidate.node is not None else (scenario.node if same else None)
    price = candidate.usd_per_gpu_hour
    if price is None and same:
        price = scenario.pricing.cloud_usd_per_gpu_hour
    purchase = candidate.purchase_usd_per_gpu
    if purchase is None and same:
        purchase = scenario.pricing.purchase_usd_per_gpu
    pricing = scenario.pricing.model_copy(
        update={"cloud_usd_per_gpu_hour": price, "purchase_usd_per_gpu": purchase}
    )
    return scenario.model_copy(update={"gpu": candidate.accelerator, "node": node, "pricing": pricing})


def scale_prices(resolved: ResolvedScenario, price_scale: float, purchase_scale: float) -> ResolvedScenario:
    """Scale the effective rental / purchase price (explicit, else catalog) by the given factors."""
    if price_scale == 1.0 and purchase_scale == 1.0:
        return resolved
    scenario, acc = resolved.scenario, resolved.cluster.accelerator
    price = scenario.pricing.cloud_usd_per_gpu_hour or acc.cloud_usd_per_hour
    purchase = scenario.pricing.purchase_usd_per_gpu or acc.list_price_usd
    update = {
        "cloud_usd_per_gpu_hour": None if price is None else price * price_scale,
        "purchase_usd_per_gpu": None if purchase is None else purchase * purchase_scale,
    }
    pricing = scenario.pricing.model_copy(update=update)
    return resolved.with_scenario(scenario.model_copy(update={"pricing": pricing}))


def cached_resolver(resolve: Resolve) -> Resolve:
    """``resolve`` memoized by (model, accelerator, node): a comparison resolves each once."""
    cache: dict[tuple[str, str, str | None], ResolvedScenario] = {}
    # A resolver that changes the scenario it resolves (a calibration adds assumption values)
    # says how with ``prepare``: a cached anchor is then given the changed scenario, not the bare one.
    prepare = getattr(resolve, "prepare", None)

    def cached(scenario: Scenario) -> ResolvedScenario:
        if prepare is not None:
            scenario = prepare(scenario)
        key = (scenario.model, scenario.gpu, scenario.node)
        anchor = cache.get(key)
        if anchor is None:
            anchor = cache[key] = resolve(scenario)
        return anchor if anchor.scenario is scenario else anchor.with_scenario(scenario)

    return cached


def size(
    engine: Engine,
    resolved: ResolvedScenario,
    max_gpus: int = MAX_GPUS,
    shared: dict[tuple[int, ...], float] | None = None,
) -> tuple[Estimate, Layout | None, str]:
    """The estimate a comparison uses for one pair, the layout it chose, and how, in words.

    The scenario as given when it runs; else the best layout of the same GPU count; else the
    fewest GPUs that fit. The layout is None when nothing fits up to ``max_gpus`` (the estimate
    is then the scenario as given, with its out-of-memory warning). ``shared``: memory needs of
    this scenario's layouts found on other accelerators (:class:`solvers.LayoutSearch`).
    """
    search = LayoutSearch(engine, resolved, shared)
    return _sized(
        resolved.scenario,
        max_gpus,
        search.fits_as_given,
        lambda: engine.run(resolved),
        search.best,
        lambda: solvers.fewest_gpus(engine, resolved, max_gpus, search),
    )


def _sized(
    scenario: Scenario,
    max_gpus: int,
    fits_as_given: Callable[[], bool],
    given: Callable[[], Estimate],
    best: Callable[[int], Layout | None],
    fewest: Callable[[], Layout | None],
) -> tuple[Estimate, Layout | None, str]:
    """:func:`size`'s decision, from its searches: as given, else re-laid out, else resized."""
    par, n = scenario.parallel, scenario.num_gpus
    if fits_as_given():
        estimate = given()
        if runnable(estimate):
            return estimate, Layout(par.tp, par.pp, par.dp, estimate), "as given"
    relaid = best(n) if n <= max_gpus else None
    if relaid is not None:
        return relaid.estimate, relaid, f"re-laid out as TP {relaid.tp} x PP {relaid.pp} x DP {relaid.dp}"
    smallest = fewest()
    if smallest is None:
        return given(), None, f"does not fit on up to {max_gpus:,} GPUs"
    count = smallest.tp * smallest.pp * smallest.dp
    how = "grown" if count > n else "moved"
    layout = f"TP {smallest.tp} x PP {smallest.pp} x DP {smallest.dp}"
    return smallest.estimate, smallest, f"{how} to {count} GPUs, the fewest that fit ({layout})"


def row_values(estimate: Estimate) -> dict[str, Value]:
    """Every metric of :data:`METRICS` from one estimate (metric id -> value, None if unknown).

    ``gpus`` counts a disaggregated prefill pool too; ``tokens_per_kwh`` is throughput x 3,600 /
    facility power (output tokens when serving, training tokens when training).
    """
    values: dict[str, Value] = {}
    get = estimate.get
    for metric in METRICS:
        if metric.key is not None:
            values[metric.id] = get(metric.key)
    gpus = _number(get("performance.gpus"))
    values["gpus"] = max(int(gpus or 0), estimate.resolved.scenario.num_gpus)
    rate, kw = _number(values.get("tokens_per_s")), _number(values.get("power_kw"))
    values["tokens_per_kwh"] = rate * 3600.0 / kw if rate is not None and kw else None
    row = {m.id: values.get(m.id) for m in METRICS}
    if has_load(estimate.resolved.scenario):
        # The simulation already ran inside this estimate: its keys are read, never re-run.
        for metric in SIM_METRICS:
            row[metric.id] = _finite(get(metric.key))
    return row


def _budget_value(
    targets: Targets, scenario: Scenario, values: dict[str, Value]
) -> tuple[float | None, str, str]:
    """(amount compared with the budget, what it is in words, what to enter when it is unknown)."""
    basis = targets.budget_basis
    if basis == "auto":
        basis = "run" if scenario.is_training and scenario.train_tokens is not None else "tco"
    years = f"{scenario.pricing.years:g}-year"
    if basis == "run":
        return _number(values.get("run_usd")), "the run costs", "--usd-per-gpu-hour"
    if basis == "capex":
        return _number(values.get("tco_capex_usd")), "buying costs", "--purchase-usd"
    buy, rent = _number(values.get("tco_buy_usd")), _number(values.get("tco_rent_usd"))
    if buy is not None and rent is not None:
        return min(buy, rent), f"{years} cost ({'buy' if buy <= rent else 'rent'})", ""
    hourly = _number(values.get("usd_per_hour"))
    if hourly is None:
        return None, f"{years} cost", "--usd-per-gpu-hour"
    # No purchase price, so no TCO keys: renting the useful hours (the cost plugin's formula) is
    # what the cheaper option costs at most.
    pricing = scenario.pricing
    return hourly * HOURS_PER_YEAR * pricing.years * pricing.utilization, f"{years} rental", ""


def judge(
    targets: Targets, scenario: Scenario, values: dict[str, Value], fits: bool, max_gpus: int = MAX_GPUS
) -> list[str]:
    """The reasons a sized candidate misses the targets or cannot be ranked, in words."""
    if not fits:
        return [f"does not fit in memory on up to {max_gpus:,} GPUs"]
    reasons: list[str] = []
    inference = not scenario.is_training

    def ceiling(metric: str, name: str, limit: float | None) -> None:
        if limit is None:
            return
        value = _number(values.get(metric))
        if value is None:
            reasons.append(f"{name} unknown")
        elif value > limit:
            reasons.append(f"{name} {format_metric(metric, value)} > target {format_metric(metric, limit)}")

    if inference:
        for name, limit in (("TTFT", targets.max_ttft_s), ("TPOT", targets.max_tpot_s)):
            metric = name.lower() + "_s"
            tail = _number(values.get(f"sim_{metric[:-2]}_p99_s"))
            if limit is not None and tail is not None and has_load(scenario):
                # Under a load the target holds for (nearly) every request: judged on the p99.
                if tail > limit:
                    reasons.append(
                        f"p99 {name} {format_metric(metric, tail)} under {load_words(scenario)} "
                        f"exceeds {format_metric(metric, limit)}"
                    )
            else:  # no load, or not simulated (disaggregated, speculative): the closed-form figure
                ceiling(metric, name, limit)
    if targets.min_tokens_per_s is not None:
        rate = _number(values.get("tokens_per_s"))
        if rate is None:
            reasons.append("throughput unknown")
        elif rate < targets.min_tokens_per_s:
            reasons.append(
                f"throughput {rate:,.0f} tokens/s < target {targets.min_tokens_per_s:,.0f} tokens/s"
            )
    if scenario.is_training and targets.deadline_days is not None:
        if scenario.train_tokens is None:
            reasons.append("no run length: set the tokens to train on (--train-tokens)")
        else:
            ceiling("train_days", "time to train", targets.deadline_days)
    cost = _number(values.get(cost_metric(scenario)))
    if cost is None:
        reasons.append("no price: enter --usd-per-gpu-hour")
    if targets.budget_usd is not None:
        amount, what, flag = _budget_value(targets, scenario, values)
        gpus = values.get("gpus")
        if amount is None:
            if flag and f"no price: enter {flag}" not in reasons:
                reasons.append(f"budget not checked: no price, enter {flag}")
        elif amount > targets.budget_usd:
            reasons.append(
                f"needs {gpus:,} GPUs: {what} {format_usd(amount)}, "
                f"over the budget {format_usd(targets.budget_usd)}"
            )
    return reasons


def evaluate(
    engine: Engine,
    resolved: ResolvedScenario,
    candidate: Candidate,
    targets: Targets,
    scenario_name: str,
    max_gpus: int = MAX_GPUS,
    shared: dict[tuple[int, ...], float] | None = None,
) -> CandidateResult:
    """Size and estimate one candidate (already resolved for the scenario) and judge it."""
    estimate, layout, sizing = size(engine, resolved, max_gpus, shared)
    return _result(estimate, layout, sizing, candidate, targets, scenario_name, max_gpus)


def _result(
    estimate: Estimate,
    layout: Layout | None,
    sizing: str,
    candidate: Candidate,
    targets: Targets,
    scenario_name: str,
    max_gpus: int,
) -> CandidateResult:
    scenario = estimate.resolved.scenario
    fits = layout is not None
    values = row_values(estimate)
    par = scenario.parallel
    return CandidateResult(
        scenario=scenario_name,
        candidate=candidate,
        accelerator_name=estimate.resolved.cluster.accelerator.name,
        node=estimate.resolved.cluster.node.id,
        fits=fits,
        tp=par.tp,
        pp=par.pp,
        dp=par.dp,
        sizing=sizing,
        values=values,
        cost_metric=cost_metric(scenario),
        failures=tuple(judge(targets, scenario, values, fits, max_gpus)),
        warnings=tuple(w.message for w in estimate.warnings if w.severity != "info"),
        estimate=estimate,
    )


# --- ranking ----------------------------------------------------------------------------------


def _rank_key(result: CandidateResult) -> tuple[Any, ...]:
    cost = result.cost
    speed = _number(result.values.get("tokens_per_s")) or 0.0
    return (
        not result.fits,
        not result.meets_targets,
        cost is None,
        cost if cost is not None else 0.0,
        -speed,
        result.gpus or 0,
        result.candidate.label,
    )


def rank(scenario: Scenario, results: Iterable[CandidateResult]) -> ScenarioComparison:
    """Order results best first, pick the recommendation, and write each verdict."""
    ordered = sorted(results, key=_rank_key)
    metric = cost_metric(scenario)
    for i, result in enumerate(ordered, 1):
        result.rank = i
        result.recommended = False
    best = ordered[0] if ordered and ordered[0].meets_targets else None
    why = None if best is not None else _why_none(ordered)
    if best is not None:
        best.recommended = True
    for result in ordered:
        result.verdict = _verdict(result, best)
    return ScenarioComparison(scenario, metric, ordered, best, why)


def _verdict(result: CandidateResult, best: CandidateResult | None) -> str:
    if result is best:
        return "recommended: the cheapest that meets the targets"
    if result.failures:
        return "; ".join(result.failures)
    if best is None or result.cost is None or best.cost is None:
        return "meets the targets"
    cost_text = format_metric(result.cost_metric, result.cost)
    ratio = result.cost / best.cost if best.cost else math.inf
    price = _number(result.values.get("usd_per_gpu_hour"))
    breaks = ""
    if price is not None and result.cost > 0 and best.cost > 0:
        result.break_even_usd_per_gpu_hour = price * best.cost / result.cost
        breaks = f"; it would win below {format_usd(result.break_even_usd_per_gpu_hour)}/GPU-h"
    return f"meets the targets; {cost_text}, {ratio:.2f}x the recommended {best.candidate.label}{breaks}"


def _why_none(ordered: Sequence[CandidateResult]) -> str:
    if not ordered:
        return "no candidates"
    if not any(r.fits for r in ordered):
        return "no candidate fits in memory"
    closest = ordered[0]
    only_price = [
        r
        for r in ordered
        if r.fits and all(f.startswith(("no price", "budget not checked")) for f in r.failures)
    ]
    if only_price:
        names = ", ".join(r.candidate.label for r in only_price)
        return f"the candidates that meet the targets have no price ({names}): enter --usd-per-gpu-hour"
    return (
        f"no candidate meets the targets; closest: {closest.candidate.label} ({'; '.join(closest.failures)})"
    )


# --- the comparison ---------------------------------------------------------------------------


def compare(
    engine: Engine,
    scenarios: Sequence[Scenario],
    candidates: Sequence[Candidate],
    resolve: Resolve,
    targets: Targets | None = None,
    *,
    max_gpus: int = MAX_GPUS,
    price_scale: float = 1.0,
    purchase_scale: float = 1.0,
) -> Comparison:
    """Every candidate on every scenario, ranked per scenario, with an overall recommendation.

    ``resolve`` turns a scenario into the engine's input (``catalog.resolve.resolve_scenario`` with
    the project); it is memoized here by (model, accelerator, node). ``price_scale`` and
    ``purchase_scale`` multiply every candidate's effective prices (sensitivity analysis).
    """
    if not candidates:
        raise InputError("compare: give at least one candidate accelerator")
    if not scenarios:
        raise InputError("compare: give at least one scenario")
    targets = targets or Targets()
    resolve = cached_resolver(resolve)
    per_scenario = []
    for scenario in scenarios:
        results = []
        shared: dict[tuple[int, ...], float] = {}  # memory each layout needs, the same on every GPU
        for candidate in candidates:
            resolved = scale_prices(
                resolve(_candidate_scenario(with_targets_as_slo(scenario, targets), candidate)),
                price_scale,
                purchase_scale,
            )
            results.append(evaluate(engine, resolved, candidate, targets, scenario.name, max_gpus, shared))
        per_scenario.append(rank(scenario, results))
    best, why = overall(per_scenario, candidates)
    return Comparison(tuple(candidates), targets, per_scenario, best, why)


def compare_draws(
    engine: Engine,
    scenarios: Sequence[Scenario],
    candidates: Sequence[Candidate],
    resolve: Resolve,
    draws: Mapping[str, Sequence[float]],
    targets: Targets | None = None,
    *,
    max_gpus: int = MAX_GPUS,
    progress: Progress | None = None,
) -> list[Comparison]:
    """:func:`compare` once per draw of assumption values (``draws``: id -> one value per draw, the
    scenarios' overrides on top), as the comparisons of the scenarios with those overrides.

    The draws of one candidate run as one point group: when no estimator that decides fit reads a
    drawn assumption (the speed model's efficiencies, say), the candidate's layout as given fits or
    not whatever the draw, and where it runs as given every draw's estimate comes from that group.
    Elsewhere (re-laid out, resized, or a drawn value memory reads) each draw is sized on its own,
    exactly as :func:`compare` sizes it.
    """
    if not candidates:
        raise InputError("compare: give at least one candidate accelerator")
    if not scenarios:
        raise InputError("compare: give at least one scenario")
    targets = targets or Targets()
    n = len(next(iter(draws.values())))
    overrides = [{ident: float(values[i]) for ident, values in draws.items()} for i in range(n)]
    drawn = [[_with_assumptions(s, o) for s in scenarios] for o in overrides]
    if engine.reads_any(draws, solvers.FIT_KEYS):
        out = []
        for i, ss in enumerate(drawn):
            out.append(compare(engine, ss, candidates, resolve, targets, max_gpus=max_gpus))
            if progress is not None:
                progress(i + 1, n)
        return out
    resolve = cached_resolver(resolve)
    per_draw: list[list[ScenarioComparison]] = [[] for _ in range(n)]
    steps = len(scenarios) * len(candidates)
    for k, scenario in enumerate(scenarios):
        results: list[list[CandidateResult]] = [[] for _ in range(n)]
        shared: dict[tuple[int, ...], float] = {}
        for candidate in candidates:
            resolved = resolve(_candidate_scenario(with_targets_as_slo(scenario, targets), candidate))
            sizing = _DrawnSizing(engine, resolved, draws, n, shared)
            for i in range(n):
                estimate, layout, how = sizing.size(i, max_gpus)
                results[i].append(_result(estimate, layout, how, candidate, targets, scenario.name, max_gpus))
            if progress is not None:
                progress(k * len(candidates) + len(results[0]), steps)
        for i in range(n):
            per_draw[i].append(rank(drawn[i][k], results[i]))
    out = []
    for per_scenario in per_draw:
        best, why = overall(per_scenario, candidates)
        out.append(Comparison(tuple(candidates), targets, per_scenario, best, why))
    return out


class _DrawnSizing:
    """:func:`size` for every draw of one candidate, each run a point group over the draws.

    Whether a layout fits does not depend on the draws (the caller checked that nothing that
    decides fit reads them), so the memory-only searches are the candidate's own, done once; the
    layouts that fit are ranked per draw (their speed does depend on it) from one group each, and
    each draw's best is estimated in full from one group per layout.
    """

    def __init__(
        self, engine: Engine, resolved: ResolvedScenario, draws: Mapping[str, Sequence[float]], n: int,
        shared: dict[tuple[int, ...], float],
    ) -> None:  # fmt: skip
        self.engine, self.resolved, self.draws, self.n = engine, resolved, draws, n
        self.search = LayoutSearch(engine, resolved, shared)
        self._given: Any = None
        self._counts: list[int] = []  # GPU counts where some layout fits, in search order
        self._count_source: Iterator[int] | None = None
        self._ranked: dict[int, list[tuple[int, int, int, Any]]] = {}
        self._full: dict[tuple[int, int, int], Any] = {}

    def _group(self, scenario: Scenario, wanted: tuple[str, ...] | None) -> Any:
        return self.engine.run_points(self.resolved.with_scenario(scenario), None, wanted, self.draws)

    def given(self, i: int) -> Estimate:
        if self._given is None:
            self._given = self._group(self.resolved.scenario, None)
        return self._given.estimate(i)

    def best(self, count: int, i: int) -> Layout | None:
        ranked = self._ranked.get(count)
        if ranked is None:
            ranked = self._ranked[count] = [
                (tp, pp, count // (tp * pp), self._group(self.search._scenario(count, tp, pp), solvers.RANK_KEYS))
                for tp, pp in self.search.shapes(count)
                if self.search._fits(self.search._scenario(count, tp, pp))
            ]
        layouts = sorted((Layout(tp, pp, dp, group.estimate(i)) for tp, pp, dp, group in ranked), key=solvers._rank)
        for layout in layouts:
            full = self._full.get((count, layout.tp, layout.pp))
            if full is None:
                full = self._full[(count, layout.tp, layout.pp)] = self._group(
                    self.search._scenario(count, layout.tp, layout.pp), None
                )
            estimate = full.estimate(i)
            if runnable(estimate):
                return Layout(layout.tp, layout.pp, layout.dp, estimate)
        return None

    def fewest(self, i: int, max_gpus: int) -> Layout | None:
        """:func:`solvers.fewest_gpus` for draw ``i``: the counts where some layout fits are the
        same for every draw (found once, lazily, in the same order); the best runnable layout of
        each is the draw's."""
        for count in self._fitting_counts(max_gpus):
            best = self.best(count, i)
            if best is not None:
                return best
        return None

    def _fitting_counts(self, max_gpus: int) -> Iterator[int]:
        """:func:`solvers.fitting_counts`, each count found once for all draws."""
        if self._count_source is None:
            self._count_source = solvers.fitting_counts(self.search, max_gpus)
        yield from list(self._counts)
        for count in self._count_source:
            self._counts.append(count)
            yield count

    def size(self, i: int, max_gpus: int) -> tuple[Estimate, Layout | None, str]:
        """What :func:`size` gives for draw ``i``."""
        return _sized(
            self.resolved.scenario,
            max_gpus,
            self.search.fits_as_given,
            lambda: self.given(i),
            lambda count: self.best(count, i),
            lambda: self.fewest(i, max_gpus),
        )


def _with_assumptions(scenario: Scenario, overrides: dict[str, float]) -> Scenario:
    return scenario.model_copy(update={"assumptions": {**scenario.assumptions, **overrides}})


def overall(
    per_scenario: Sequence[ScenarioComparison], candidates: Sequence[Candidate]
) -> tuple[Candidate | None, str | None]:
    """The candidate to pick for every scenario at once.

    One scenario: its recommendation. Several: among candidates that meet the targets in every
    scenario, the lowest geometric mean of cost / the cheapest qualifying cost of each scenario
    (costs of different scenarios are in different units, so they are compared as ratios).
    """
    if len(per_scenario) == 1:
        only = per_scenario[0]
        rec = only.recommendation
        return (None, only.why_no_recommendation) if rec is None else (rec.candidate, None)
    scores: dict[Candidate, float] = {}
    for candidate in candidates:
        logs = []
        for comparison in per_scenario:
            floor = comparison.recommendation.cost if comparison.recommendation else None
            result = next(r for r in comparison.results if r.candidate == candidate)
            if not result.meets_targets or floor is None or result.cost is None or floor <= 0:
                break
            logs.append(math.log(result.cost / floor))
        else:
            scores[candidate] = math.exp(sum(logs) / len(logs))
    if not scores:
        return None, "no candidate meets the targets in every scenario"
    return min(scores, key=lambda c: (scores[c], c.label)), None


# --- inverse: the cheapest accelerator for a workload ------------------------------------------


def _accept(targets: Targets, scenario: Scenario) -> Callable[[Estimate], bool]:
    """Targets a count can meet by growing (latency, throughput, deadline); budget and price are not."""
    growable = Targets(
        targets.max_ttft_s, targets.max_tpot_s, targets.min_tokens_per_s, targets.deadline_days
    )

    def accept(estimate: Estimate) -> bool:
        values = row_values(estimate)
        reasons = judge(growable, scenario, values, True)
        return all(r.startswith("no price") for r in reasons)

    return accept


def cheapest(
    engine: Engine,
    scenario: Scenario,
    candidates: Sequence[Candidate],
    resolve: Resolve,
    targets: Targets | None = None,
    *,
    max_gpus: int = MAX_GPUS,
) -> ScenarioComparison:
    """The cheapest accelerator, and how many, for a workload and its targets.

    Per candidate: the fewest GPUs (:func:`solvers.meeting_counts`, from the fewest that fit)
    on which some runnable layout meets the latency, throughput and deadline targets, and the
    fastest such layout; then the budget is checked and candidates are ranked as in
    :func:`compare`: the recommendation is the cheapest that meets every target.
    """
    targets = targets or Targets()
    resolve = cached_resolver(resolve)
    results = []
    shared: dict[tuple[int, ...], float] = {}
    for candidate in candidates:
        resolved = resolve(_candidate_scenario(scenario, candidate))
        sc = resolved.scenario
        accept = _accept(targets, sc)
        search = LayoutSearch(engine, resolved, shared)
        layout = solvers.first_count_meeting(engine, resolved, accept, max_gpus, search)
        if layout is not None:
            n = layout.tp * layout.pp * layout.dp
            sizing = (
                f"fewest GPUs meeting the targets: {n} (TP {layout.tp} x PP {layout.pp} x DP {layout.dp})"
            )
            results.append(_result(layout.estimate, layout, sizing, candidate, targets, sc.name, max_gpus))
            continue
        fewest = solvers.fewest_gpus(engine, resolved, max_gpus, search)
        if fewest is None:
            results.append(
                _result(
                    engine.run(resolved),
                    None,
                    f"does not fit on up to {max_gpus:,} GPUs",
                    candidate,
                    targets,
                    sc.name,
                    max_gpus,
                )
            )
            continue
        result = _result(
            fewest.estimate, fewest, "fewest GPUs that fit", candidate, targets, sc.name, max_gpus
        )
        result.failures = (*result.failures, f"targets not met on up to {max_gpus:,} GPUs")
        results.append(result)
    return rank(scenario, results)
