"""Comparison at equal service level: each candidate in the configuration that meets the targets
at the lowest cost, whatever batch the scenario was typed with.

Per candidate the search visits every configuration of one node's worth of replica: tensor
parallelism over the divisors of the node's GPUs, concurrency (batch per replica) over powers of
two, and each weight precision the user allows; every (candidate, precision, TP) is one point group
over the batch sizes (:mod:`workbench.engine.pareto` enumerates the same way). A configuration
meets the targets when it runs (fits, no guard-rail error) and its TTFT and TPOT are within the
latency targets; demand (``min_tokens_per_s``, output tokens/s of the whole service) is met with
replicas: ``ceil(demand / throughput of one replica)`` of them. The cheapest meeting
configuration wins the candidate: the lowest cost per hour of all its replicas when a demand is
given, else the lowest cost per million tokens; ties go to fewer GPUs, then to the lower TPOT.
A candidate with no meeting configuration says which target binds: the best TTFT or TPOT any of
its configurations reached. Candidates are ranked: meeting first, by cost.

The search runs on the closed-form serving model's latencies (means, at each configuration's
concurrency). With a demand and a latency target, the tail decides: configurations that meet the
targets on average are simulated (the iteration-level serving simulator, Poisson arrivals at the
demand spread over the replicas) and the cheapest whose p99 TTFT and TPOT stay within the targets
wins. Each layout (weights, TP, batch) may take more replicas than the demand needs -- a queue
near saturation misses p99 where one replica more holds it -- so the search space is every layout
at every replica count from the demand's minimum up, walked best first in cost order
(:func:`cheapest_holding`): p99 falls as replicas rise (measured: steeply up to the knee; past
it, on the floor, it wobbles by a few percent, where a target sitting in that wobble could be met
one replica earlier than found), so each layout keeps the fewest replicas
not known to miss and the fewest known to hold, and the cheapest candidate layout is simulated next
until the cheapest one is known to hold. A layout that misses even at nearly no load is dropped:
no replica count of it holds. The cheapest candidate that holds is found first (all candidates
walked together); the others are walked up to :data:`COST_BOUND` times its cost and at most
:data:`MAX_SIMULATIONS` simulations each. Where a bound stops a candidate's walk, its result is
not settled (``settled`` False, the reason says what was not simulated), never "does not meet".
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.core.errors import InputError
from workbench.core.scenario import Scenario
from workbench.engine.compare import Candidate, Progress, Resolve, Targets, _candidate_scenario, cached_resolver
from workbench.engine.pareto import BATCHES, node_configurations
from workbench.engine.pipeline import Engine
from workbench.engine.variations import validated_value, with_fields


@dataclass(frozen=True, slots=True)
class Config:
    """One serving configuration of a candidate and what it costs at the demand."""

    weights: str
    tp: int
    batch: int
    replicas: int
    gpus: int
    ttft_s: float
    tpot_s: float
    tokens_per_s: float  # all replicas
    usd_per_hour: float | None  # all replicas
    usd_per_million_tokens: float | None

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}  # type: ignore[attr-defined]

    def describe(self) -> str:
        reps = f"{self.replicas} x " if self.replicas > 1 else ""
        return f"{reps}TP {self.tp}, batch {self.batch}, {self.weights} weights"


@dataclass(slots=True)
class IsoResult:
    candidate: Candidate
    best: Config | None
    meets: bool
    reason: str  # why it fails (empty when it meets the targets)
    searched: int  # configurations that run
    rank: int = 0
    notes: list[str] = field(default_factory=list)
    #: A candidate that meets the targets but loses: the rental price per GPU-hour below which it
    #: would win (every configuration's cost scales with the price, so its best one stays best).
    break_even_usd_per_gpu_hour: float | None = None
    #: False when the search stopped before it knew (its simulations ran out): ``meets`` is then
    #: False without saying that the candidate cannot meet the targets.
    settled: bool = True

    def as_dict(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate.label,
            "rank": self.rank,
            "meets_targets": self.meets,
            "settled": self.settled,
            "reason": self.reason,
            "configurations_searched": self.searched,
            "best": None if self.best is None else self.best.as_dict(),
            "notes": list(self.notes),
            "break_even_usd_per_gpu_hour": self.break_even_usd_per_gpu_hour,
        }


def iso_sla(
    engine: Engine,
    scenario: Scenario,
    candidates: Sequence[Candidate],
    resolve: Resolve,
    targets: Targets | None = None,
    *,
    weights: Sequence[str] | None = None,
    batches: Sequence[int] = BATCHES,
    progress: Progress | None = None,
) -> list[IsoResult]:
    """Every candidate in its cheapest configuration meeting ``targets``, ranked (module docstring).

    ``weights``: the weight precisions allowed (default: the scenario's own)."""
    return search(engine, scenario, candidates, resolve, targets, weights=weights, batches=batches,
                  progress=progress).results  # fmt: skip


@dataclass(slots=True)
class Search:
    """:func:`iso_sla`'s answer and what it saw on the way: every configuration that runs, per
    candidate, and the simulated tails (p99 TTFT, p99 TPOT, requests/s or None) by
    (candidate label, weights, TP, batch, replicas). :mod:`workbench.engine.iso_confidence`
    draws the same configurations again and reads the tails it needs from here."""

    results: list[IsoResult]
    allowed: list[str]
    configs: dict[Candidate, list[Config]]
    tails: dict[tuple[str, str, int, int, int], tuple[float, float, float] | None]


def search(
    engine: Engine,
    scenario: Scenario,
    candidates: Sequence[Candidate],
    resolve: Resolve,
    targets: Targets | None = None,
    *,
    weights: Sequence[str] | None = None,
    batches: Sequence[int] = BATCHES,
    progress: Progress | None = None,
) -> Search:
    """:func:`iso_sla`, keeping what the search saw (:class:`Search`)."""
    if scenario.is_training:
        raise InputError("the equal-service-level comparison is for serving scenarios")
    if not candidates:
        raise InputError("give at least one candidate accelerator")
    targets = targets or Targets()
    allowed = allowed_weights(scenario, weights)
    resolve = cached_resolver(resolve)
    results: list[IsoResult] = []
    found = Search([], allowed, {}, {})
    tell = (lambda: progress(len(results), len(candidates))) if progress is not None else (lambda: None)
    pending: list[_Pending] = []
    for candidate in candidates:
        seen = found.configs[candidate] = []
        got = _search(engine, scenario, candidate, resolve, targets, allowed, batches, seen)
        if isinstance(got, IsoResult):
            results.append(got)
            tell()
        else:
            pending.append(got)
    if pending:
        # The tail decides. The cheapest candidate that holds is found first (all candidates walked
        # together); each candidate is then walked up to COST_BOUND times that cost.
        by_label = {p.candidate.label: p.candidate for p in pending}
        demand = targets.min_tokens_per_s
        assert demand is not None

        def holds(owner: str, config: Config) -> bool | None:
            tail = tail_of(engine, scenario, by_label[owner], resolve, config, demand, found.tails)
            return None if tail is None else tail_meets(tail, targets)

        leader = cheapest_holding(sorted(e for p in pending for e in p.entries), holds)
        limit = math.inf if leader.config is None else leader.config.usd_per_hour * COST_BOUND  # type: ignore[operator]
        for p in pending:
            results.append(_settle(p, cheapest_holding(p.entries, holds, limit), limit, found.tails))
            tell()
    ranked = sorted(results, key=lambda r: _order(r, targets.min_tokens_per_s is not None))
    for i, result in enumerate(ranked, 1):
        result.rank = i
    _break_even_prices(ranked, targets.min_tokens_per_s is not None)
    found.results = ranked
    return found


def _break_even_prices(ranked: Sequence[IsoResult], demand: bool) -> None:
    """The price at which each losing candidate that meets the targets would cost what the winner
    costs (its cost is its GPUs times its price per GPU-hour)."""
    if not ranked or not ranked[0].meets or ranked[0].best is None:
        return
    floor = objective(ranked[0].best, demand)
    for result in ranked[1:]:
        best = result.best
        cost = None if best is None or not result.meets else objective(best, demand)
        if cost and floor is not None and best is not None and best.usd_per_hour is not None and best.gpus:
            result.break_even_usd_per_gpu_hour = best.usd_per_hour / best.gpus * floor / cost


def allowed_weights(scenario: Scenario, weights: Sequence[str] | None) -> list[str]:
    """The weight precisions the search may choose: ``weights``, else the scenario's own."""
    return list(weights) if weights else [scenario.weights.value if scenario.weights else scenario.dtype.value]


def objective(config: Config, demand: bool) -> float | None:
    """What the search minimizes: cost per hour of every replica the demand needs, or (no demand)
    cost per million tokens."""
    return config.usd_per_hour if demand else config.usd_per_million_tokens


def _order(result: IsoResult, demand: bool) -> tuple[Any, ...]:
    best = result.best
    cost = None if best is None else objective(best, demand)
    return (not result.meets, cost is None, cost or 0.0, best.gpus if best else 0, result.candidate.label)


def _search(
    engine: Engine, scenario: Scenario, candidate: Candidate, resolve: Resolve, targets: Targets,
    allowed: Sequence[str], batches: Sequence[int], seen: list[Config],
) -> IsoResult | _Pending:  # fmt: skip
    demand = targets.min_tokens_per_s
    meeting: list[Config] = []
    best_ttft = best_tpot = math.inf
    searched = 0
    for weights in allowed:
        variant = with_fields(scenario, {"weights": validated_value(scenario, "weights", weights)})
        anchor = resolve(_candidate_scenario(variant, candidate))
        for tp, batch, group, i in node_configurations(engine, anchor, batches, CONFIG_KEYS):
            config = _config(group, i, weights, tp, batch, demand)
            if config is None:
                continue
            searched += 1
            seen.append(config)
            best_ttft, best_tpot = min(best_ttft, config.ttft_s), min(best_tpot, config.tpot_s)
            if targets.max_ttft_s is not None and config.ttft_s > targets.max_ttft_s:
                continue
            if targets.max_tpot_s is not None and config.tpot_s > targets.max_tpot_s:
                continue
            meeting.append(config)
    note = "latency is the closed-form model's at each configuration's concurrency (not simulated percentiles)"
    if not searched:
        return IsoResult(candidate, None, False, "no configuration of one node runs the scenario", 0, notes=[note])
    if not meeting:
        binding = []
        if targets.max_tpot_s is not None and best_tpot > targets.max_tpot_s:
            binding.append(f"TPOT <= {targets.max_tpot_s * 1e3:g} ms (best reached {best_tpot * 1e3:.3g} ms)")
        if targets.max_ttft_s is not None and best_ttft > targets.max_ttft_s:
            binding.append(f"TTFT <= {targets.max_ttft_s * 1e3:g} ms (best reached {best_ttft * 1e3:.3g} ms)")
        reason = "; ".join(binding) or "the latency targets are not met together by any configuration"
        return IsoResult(candidate, None, False, reason, searched, notes=[note])
    priced = [c for c in meeting if objective(c, demand is not None) is not None]
    pool = sorted(priced or meeting, key=lambda c: (objective(c, demand is not None) or 0.0, c.gpus, c.tpot_s))
    best = pool[0]
    if objective(best, demand is not None) is None:
        return IsoResult(candidate, best, False, "no price: enter one (ID@USD in --gpus-list)", searched, notes=[note])
    if demand is None or (targets.max_ttft_s is None and targets.max_tpot_s is None):
        return IsoResult(candidate, best, True, "", searched, notes=[note])
    # Under the demand's load the tail matters: configurations are simulated in cost order, each
    # layout also with more replicas than the demand needs (a queue near saturation misses p99;
    # one replica more often holds it), until one keeps its p99 within the targets.
    entries = sorted((entry_key(c, candidate.label), candidate.label, c) for c in pool)
    return _Pending(candidate, entries, searched, note, len(pool))


@dataclass(slots=True)
class _Pending:
    """A candidate whose configurations meet the targets on average: the tail decides."""

    candidate: Candidate
    entries: list[tuple[tuple[Any, ...], str, Config]]
    searched: int
    note: str
    meeting: int


def _settle(pending: _Pending, walk: Walk, limit: float, tails: dict[Any, Any]) -> IsoResult:
    """The candidate's result from its walk (bounded by ``limit``, its cost per hour)."""
    candidate, searched, note = pending.candidate, pending.searched, pending.note
    tried = walk.tries.get(candidate.label, 0)
    if walk.config is not None:
        ttft99, tpot99, rate = tails[tail_key(candidate.label, walk.config)]
        why = (f"simulated under {rate:.3g} requests/s ({SIMULATED_REQUESTS:,} Poisson requests): p99 TTFT "
               f"{ttft99 * 1e3:.3g} ms, p99 TPOT {tpot99 * 1e3:.3g} ms")  # fmt: skip
        return IsoResult(candidate, walk.config, True, "", searched, notes=[why])
    if candidate.label in walk.capped:
        return IsoResult(
            candidate, None, False,
            f"not settled: the {tried} cheapest configurations meeting the targets on average (replicas added) "
            "miss p99 under the demand's load; dearer ones were not simulated", searched, notes=[note], settled=False,
        )  # fmt: skip
    if walk.open:
        return IsoResult(
            candidate, None, False,
            f"not settled: no configuration of it under ${limit:,.2f}/h ({COST_BOUND:g} times the cheapest "
            f"candidate's cost) holds p99 under the demand's load ({tried} simulated); dearer ones were not "
            "simulated", searched, notes=[note], settled=False,
        )  # fmt: skip
    return IsoResult(
        candidate, None, False,
        f"no configuration holds p99 under the demand's load: each of the {pending.meeting} meeting the targets on "
        f"average misses it even at nearly no load (simulated: {tried} runs)", searched, notes=[note],
    )  # fmt: skip


#: A candidate is walked up to this many times the cheapest candidate's cost per hour; past that it
#: is not settled (it could not be recommended at any price near the winner's).
COST_BOUND = 5.0
#: Simulations per candidate (cheapest first, replicas added) before its search stops unsettled.
MAX_SIMULATIONS = 16
#: After this many misses of one layout (its cheapest replica counts), it is simulated once at
#: nearly no load (FLOOR_FACTOR times the demand's replicas): if it misses even there, no replica
#: count of it holds (p99 falls as the replicas rise) and it is dropped.
FLOOR_AFTER = 2
FLOOR_FACTOR = 64


def tail_key(label: str, config: Config) -> tuple[str, str, int, int, int]:
    return (label, config.weights, config.tp, config.batch, config.replicas)


def tail_meets(tail: tuple[float, float, float], targets: Targets) -> bool:
    """Whether a simulated (p99 TTFT, p99 TPOT, rate) is within the latency targets."""
    return (targets.max_ttft_s is None or tail[0] <= targets.max_ttft_s) and (
        targets.max_tpot_s is None or tail[1] <= targets.max_tpot_s
    )


def with_replicas(config: Config, replicas: int) -> Config:
    """``config`` with ``replicas`` replicas (its cost and throughput per replica kept)."""
    r = config.replicas
    return dataclasses.replace(
        config, replicas=replicas, gpus=replicas * config.tp, tokens_per_s=config.tokens_per_s / r * replicas,
        usd_per_hour=None if config.usd_per_hour is None else config.usd_per_hour / r * replicas,
    )  # fmt: skip


def entry_key(config: Config, label: str) -> tuple[Any, ...]:
    """The order of the walk: cost, GPUs, candidate, TPOT, then the layout (a total order, so that
    one candidate's walk and the walk of many candidates visit its configurations alike)."""
    cost = config.usd_per_hour
    return (cost if cost is not None else math.inf, config.gpus, label, config.tpot_s, config.weights, config.tp,
            config.batch, config.replicas)  # fmt: skip


@dataclass(slots=True)
class Walk:
    """What :func:`cheapest_holding` found: the first configuration that holds (and its owner), or
    none; ``open`` when ``limit`` stopped it before any held; the simulations per owner and the
    owners whose :data:`MAX_SIMULATIONS` ran out."""

    owner: str | None
    config: Config | None
    open: bool
    tries: dict[str, int]
    capped: set[str]


def cheapest_holding(
    entries: Iterable[tuple[tuple[Any, ...], str, Config]],
    holds: Any,
    limit: float = math.inf,
) -> Walk:
    """The cheapest configuration that holds, over ``entries`` (key, owner, config; in key order,
    :func:`entry_key`) and every
    replica count of each above its own: ``holds(owner, config)`` says True, False or None (cannot
    be simulated).

    Best first: each layout (an entry) keeps the fewest replicas not known to miss (``lo``) and the
    fewest known to hold (``hi``); p99 falls as the replicas rise, so nothing below ``lo`` holds and
    everything from ``hi`` on does. The layout whose ``lo`` costs least is looked at next: it wins
    when ``lo == hi`` (then nothing cheaper can hold), else one more replica count of it is
    simulated -- ``lo`` itself, then steps that double after each miss, or halfway to ``hi``. A
    layout that misses :data:`FLOOR_AFTER` times is tried at nearly no load and dropped if it
    misses there. Each owner gets :data:`MAX_SIMULATIONS`. A layout whose ``lo`` costs ``limit``
    or more stops the walk open (the caller has not listed the configurations from there on).
    :func:`iso_sla` walks one candidate; the confidence's draws walk all candidates together: each
    owner's steps depend on its own layouts only, so it is walked alike either way."""
    # Entries come in key order and are taken as the walk reaches them (a draw of the confidence
    # lists hundreds, of which it looks at a few); layouts walked further wait in the heap.
    heap: list[tuple[Any, ...]] = []
    listed = iter(entries)
    ahead = next(listed, None)
    tries: dict[str, int] = {}
    capped: set[str] = set()

    def tried(owner: str) -> bool:
        if tries.get(owner, 0) >= MAX_SIMULATIONS:
            capped.add(owner)
            return False
        tries[owner] = tries.get(owner, 0) + 1
        return True

    while heap or ahead is not None:
        if ahead is not None and (not heap or ahead[0] < heap[0][0]):
            key, owner, config = ahead
            first, hi, step, misses = config.replicas, 0, 1, 0
            ahead = next(listed, None)
        else:
            key, owner, config, first, hi, step, misses = heapq.heappop(heap)  # config: at lo; hi 0: none known
        lo = config.replicas
        if key[0] >= limit:
            return Walk(None, None, True, tries, capped)
        if owner in capped:
            continue
        if hi == lo:
            return Walk(owner, config, False, tries, capped)
        probe = lo + step - 1 if not hi else min(lo + step - 1, lo + (hi - lo) // 2)
        if not tried(owner):
            continue
        verdict = holds(owner, with_replicas(config, probe))
        if verdict is None:
            continue  # not simulated: no replica count of it is
        if verdict:
            hi, step = probe, max(step // 2, 1)
        else:
            lo, misses, step = probe + 1, misses + 1, step * 2
            if not hi and misses == FLOOR_AFTER:
                if not tried(owner):
                    continue
                floor = first * FLOOR_FACTOR
                if not holds(owner, with_replicas(config, floor)):
                    continue  # misses at nearly no load: no replica count of this layout holds
                hi = floor
        at = with_replicas(config, lo)
        heapq.heappush(heap, (entry_key(at, owner), owner, at, first, hi, step, misses))
    return Walk(None, None, False, tries, capped)


#: Requests each simulation runs (Poisson arrivals at the demand, seeded).
SIMULATED_REQUESTS = 600


def tail_of(
    engine: Engine, scenario: Scenario, candidate: Candidate, resolve: Resolve, config: Config, demand: float,
    tails: dict[tuple[str, str, int, int, int], tuple[float, float, float] | None],
) -> tuple[float, float, float] | None:
    """:func:`simulated_tail`, each (candidate, weights, TP, batch, replicas) simulated once."""
    key = tail_key(candidate.label, config)
    if key not in tails:
        tails[key] = simulated_tail(engine, scenario, candidate, resolve, config, demand)
    return tails[key]


def simulated_tail(
    engine: Engine, scenario: Scenario, candidate: Candidate, resolve: Resolve, config: Config, demand: float
) -> tuple[float, float, float] | None:
    """(p99 TTFT, p99 TPOT, requests/s) of ``config``'s replicas serving the demand (output tokens/s
    -> requests/s at the scenario's output length), from the serving simulator; None if it cannot."""
    rate = demand / max(scenario.gen_len, 1)
    sized = with_fields(scenario, {
        "weights": config.weights, "batch_size": config.batch, "num_gpus": config.gpus, "parallel.tp": config.tp,
        "parallel.pp": 1, "parallel.dp": config.replicas, "parallel.ep": 1,
    })  # fmt: skip
    serving = sized.serving.model_copy(update={"arrival_rate": rate, "requests": SIMULATED_REQUESTS})
    sized = sized.model_copy(update={"serving": serving})
    estimate = engine.run(resolve(_candidate_scenario(sized, candidate)), _TAIL_KEYS)
    ttft, tpot = estimate.get("performance.sim.ttft_p99_s"), estimate.get("performance.sim.tpot_p99_s")
    if not isinstance(ttft, float) or not isinstance(tpot, float):
        return None
    return ttft, tpot, rate


#: The keys the search reads of each configuration (its groups are run for these only).
CONFIG_KEYS = ("performance.ttft_s", "performance.tpot_s", "performance.tokens_per_s", "cost.usd_per_hour",
               "cost.usd_per_million_tokens")  # fmt: skip
_TAIL_KEYS = ("performance.sim.ttft_p99_s", "performance.sim.tpot_p99_s")


def _config(group: Any, i: int, weights: str, tp: int, batch: int, demand: float | None) -> Config | None:
    """The configuration at point ``i`` sized for the demand (None when a figure is unknown)."""
    ttft, tpot, rate = (group.get(i, k) for k in ("performance.ttft_s", "performance.tpot_s", "performance.tokens_per_s"))
    if not all(isinstance(v, (int, float)) and v > 0 for v in (ttft, tpot, rate)):
        return None
    replicas = 1 if demand is None else max(math.ceil(demand / rate - 1e-9), 1)
    hourly = group.get(i, "cost.usd_per_hour")
    per_m = group.get(i, "cost.usd_per_million_tokens")
    return Config(
        weights, tp, batch, replicas, replicas * tp, float(ttft), float(tpot), float(rate) * replicas,
        float(hourly) * replicas if isinstance(hourly, (int, float)) else None,
        float(per_m) if isinstance(per_m, (int, float)) else None,
    )  # fmt: skip
