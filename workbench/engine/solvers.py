"""Inverse questions answered by repeated estimates: fewest GPUs, largest batch or context,
and the parallel layouts that fit a GPU count, best first."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from workbench.core.limits import MAX_BATCH, MAX_TOKENS
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Scenario
from workbench.engine.estimate import Estimate
from workbench.engine.pipeline import Engine
from workbench.engine.points_estimate import GroupEstimate
from workbench.engine.variations import with_fields

#: The largest job the sizing searches consider (min-gpus, cheapest, train-in). Scenarios may
#: name up to :data:`workbench.core.limits.MAX_GPUS`; searching that far finds nothing new.
MAX_GPUS = 16384


@dataclass(frozen=True, slots=True)
class Layout:
    tp: int
    pp: int
    dp: int
    estimate: Estimate

    @property
    def fits(self) -> bool:
        return bool(self.estimate.get("memory.fits"))

    def as_dict(self) -> dict[str, object]:
        return {
            "tp": self.tp,
            "pp": self.pp,
            "dp": self.dp,
            "fits": self.fits,
            "memory_per_gpu": self.estimate.get("memory.per_gpu.total"),
            "headroom": self.estimate.get("memory.headroom"),
            "tokens_per_s": self.estimate.get("performance.tokens_per_s"),
            "step_time_s": self.estimate.get("performance.step_time_s"),
        }


def _divisors(n: int) -> list[int]:
    return _divisors_of(n)  # square-root time: a million GPUs take a thousand steps, not a million


#: The largest value :func:`largest_fitting` and :func:`largest_under_tpot` try: what a scenario
#: accepts. An answer equal to its limit is a bound (the limit itself fits), not a maximum.
SEARCH_LIMITS = {"batch_size": MAX_BATCH, "seq_len": MAX_TOKENS}


def at_search_limit(field: str, value: int) -> bool:
    """True when ``value`` is the search limit of ``field``: larger values may fit too."""
    return value >= SEARCH_LIMITS[field]


def _fits(engine: Engine, resolved: ResolvedScenario, scenario: Scenario) -> tuple[bool, Estimate]:
    estimate = engine.run(resolved.with_scenario(scenario))
    return bool(estimate.get("memory.fits")), estimate


def layouts(engine: Engine, resolved: ResolvedScenario, num_gpus: int | None = None) -> list[Layout]:
    """Every TP x PP x DP split of ``num_gpus`` (TP within one node), best first.

    Ranking: layouts that fit first; among them the fastest when a performance estimator ran
    (highest tokens/s), otherwise the least model parallelism (less communication), then TP
    before PP (TP stays inside the node's fast links), then the most memory headroom.
    """
    base = resolved.scenario
    n = num_gpus or base.num_gpus
    per_node = resolved.cluster.node.gpus_per_node
    found: list[Layout] = []
    for tp in _divisors(n):
        if tp > per_node:
            break
        for pp in _divisors(n // tp):
            if pp > resolved.model.total_layers:
                break
            dp = n // (tp * pp)
            ep = base.parallel.ep if (dp * tp) % base.parallel.ep == 0 else 1
            changes = {"num_gpus": n, "parallel.tp": tp, "parallel.pp": pp, "parallel.dp": dp, "parallel.ep": ep}
            scenario = with_fields(base, changes)
            estimate = engine.run(resolved.with_scenario(scenario))
            found.append(Layout(tp, pp, dp, estimate))

    def rank(layout: Layout) -> tuple[float, ...]:
        speed = layout.estimate.get("performance.tokens_per_s")
        headroom = layout.estimate.get("memory.headroom") or 0.0
        return (
            0 if layout.fits else 1,
            -float(speed) if isinstance(speed, (int, float)) else 0.0,
            layout.tp * layout.pp,
            layout.pp,
            -float(headroom),
        )

    return sorted(found, key=rank)


def min_gpus(engine: Engine, resolved: ResolvedScenario, max_gpus: int = MAX_GPUS) -> Layout | None:
    """The fewest GPUs (1, 2, 4, ... then whole nodes) on which some layout fits."""
    per_node = resolved.cluster.node.gpus_per_node
    n = 1
    while n <= max_gpus:
        best = layouts(engine, resolved, n)
        if best and best[0].fits:
            return best[0]
        n = n * 2 if n < per_node else n + per_node * max(1, n // (per_node * 4))
    return None


def largest_fitting(
    engine: Engine, resolved: ResolvedScenario, field: str, upper: int | None = None
) -> tuple[int, Estimate] | None:
    """Largest ``batch_size`` or ``seq_len`` that fits (memory is monotonic in both).

    The search stops at ``upper`` (default: :data:`SEARCH_LIMITS`); an answer equal to it means
    "fits at least up to the limit" (:func:`at_search_limit`), which callers must say as such.
    """
    if field not in ("batch_size", "seq_len"):
        raise ValueError("largest_fitting solves for batch_size or seq_len")
    upper = SEARCH_LIMITS[field] if upper is None else upper
    found = largest_good(engine, resolved, field, upper, ("memory.fits",), lambda g, i: bool(g.get(i, "memory.fits")))
    if found is None:
        return None
    return found, engine.run(resolved.with_scenario(with_fields(resolved.scenario, {field: found})))


#: Values one round of :func:`largest_good` estimates together (one point group).
SEARCH_ROUND = 64


def largest_good(
    engine: Engine,
    resolved: ResolvedScenario,
    field: str,
    upper: int,
    wanted: tuple[str, ...],
    good: Callable[[GroupEstimate, int], bool],
) -> int | None:
    """The largest value of the point field ``field`` in 1..``upper`` for which ``good`` holds,
    when it holds for every value below that one and for none above (None: not even for 1).

    Each round is one point group: first 1, 2, 4, ... up to ``upper``; then up to
    :data:`SEARCH_ROUND` evenly spread values between the last good and the first bad one, until
    they are neighbours. A million batch sizes take four engine calls, not forty.
    """
    candidates = [1 << k for k in range(upper.bit_length()) if 1 << k <= upper]
    lo, hi = 0, upper + 1
    while candidates:
        group = engine.run_points(resolved, {field: candidates}, wanted)
        first_bad = next((i for i in range(len(candidates)) if not good(group, i)), len(candidates))
        if first_bad:
            lo = candidates[first_bad - 1]
        if first_bad < len(candidates):
            hi = candidates[first_bad]
        if lo == 0:
            return None
        inside = hi - lo - 1
        if inside <= SEARCH_ROUND:
            candidates = list(range(lo + 1, hi))
        else:
            candidates = sorted({lo + (inside + 1) * k // (SEARCH_ROUND + 1) for k in range(1, SEARCH_ROUND + 1)})
    return lo


# --- sizing searches for comparisons and inverse questions ----------------------------------------
#
# ``min_gpus`` above runs every layout of every count in full. The searches below visit the same GPU
# counts in the same order and rank layouts the same way, but decide fit with memory-only runs (about
# a fifth of a full estimate) and skip layouts the plan cannot run as given: a guard-rail of severity
# "error" (TP not dividing the heads, ...) or a DP degree that does not divide the global batch.

#: The memory-only plan: what decides whether a layout fits.
FIT_KEYS = _FIT_KEYS = ("memory.fits", "memory.per_gpu.total", "memory.usable_capacity")


def gpu_counts(gpus_per_node: int, max_gpus: int = MAX_GPUS) -> list[int]:
    """The GPU counts the searches try, in order: 1, 2, 4, ... up to a node, then whole nodes
    (in steps that grow with the job, as :func:`min_gpus` takes them)."""
    counts, n = [], 1
    while n <= max_gpus:
        counts.append(n)
        n = n * 2 if n < gpus_per_node else n + gpus_per_node * max(1, n // (gpus_per_node * 4))
    return counts


def _divisors_of(n: int) -> list[int]:
    small, large = [], []
    i = 1
    while i * i <= n:
        if n % i == 0:
            small.append(i)
            if i * i != n:
                large.append(n // i)
        i += 1
    return small + large[::-1]


def runnable(estimate: Estimate) -> bool:
    """Fits in memory and no guard-rail says the plan cannot run as given."""
    if not estimate.get("memory.fits"):
        return False
    return not any(w.severity == "error" for w in estimate.warnings)


def _rank(layout: Layout) -> tuple[float, ...]:
    """:func:`layouts`' order: fitting, fastest, least model parallelism, TP before PP, headroom."""
    speed = layout.estimate.get("performance.tokens_per_s")
    headroom = layout.estimate.get("memory.headroom") or 0.0
    return (
        0 if layout.fits else 1,
        -float(speed) if isinstance(speed, (int, float)) else 0.0,
        layout.tp * layout.pp,
        layout.pp,
        -float(headroom),
    )


class LayoutSearch:
    """The runnable layouts of one resolved scenario at any GPU count, memoized.

    Memory per GPU depends on DP only through ZeRO sharding and the DP group's buffers (training
    with DP > 1), so without ZeRO one memory-only run answers for a TP x PP x EP shape at every
    count (the workbench_memory sharding model; the tests hold this against brute force). Layouts
    that fit are ranked on runs limited to :data:`RANK_KEYS`; only the best is run in full, to
    check the guard-rails.

    ``shared`` lets searches of one scenario on several accelerators share the memory each shape
    needs (``memory.per_gpu.total`` does not depend on the accelerator; whether it fits is
    ``total <= memory.usable_capacity``). A search checks both on its own runs and stops sharing
    the moment either does not hold.
    """

    def __init__(
        self, engine: Engine, resolved: ResolvedScenario, shared: dict[tuple[int, ...], float] | None = None
    ) -> None:
        self.engine = engine
        self.resolved = resolved
        self._shared = shared
        self._usable: float | None = None
        self._fit: dict[tuple[int, ...], bool] = {}
        self._ranked: dict[int, list[Layout]] = {}
        self._full: dict[tuple[int, int, int], Estimate] = {}

    def _scenario(self, n: int, tp: int, pp: int) -> Scenario:
        base = self.resolved.scenario
        dp = n // (tp * pp)
        ep = base.parallel.ep if (dp * tp) % base.parallel.ep == 0 else 1
        changes = {"num_gpus": n, "parallel.tp": tp, "parallel.pp": pp, "parallel.dp": dp, "parallel.ep": ep}
        return with_fields(base, changes)

    def shapes(self, n: int) -> list[tuple[int, int]]:
        """(TP, PP) splits of ``n`` GPUs: TP within a node, PP up to the block count, DP the rest;
        DP must divide the global batch when the scenario sets one."""
        base = self.resolved.scenario
        per_node = self.resolved.cluster.node.gpus_per_node
        layers = self.resolved.model.total_layers
        out = []
        for tp in _divisors_of(n):
            if tp > per_node:
                break
            for pp in _divisors_of(n // tp):
                if pp > layers:
                    break
                dp = n // (tp * pp)
                if base.global_batch_size is not None and base.global_batch_size % (base.batch_size * dp):
                    continue
                out.append((tp, pp))
        return out

    def _fits(self, scenario: Scenario) -> bool:
        par = scenario.parallel
        dp_key = par.dp if par.zero_stage else int(par.dp > 1 and scenario.is_training)
        key = (par.tp, par.pp, par.ep, dp_key)
        hit = self._fit.get(key)
        if hit is not None:
            return hit
        shared = self._shared
        if shared is not None and self._usable is not None and key in shared:
            hit = self._fit[key] = shared[key] <= self._usable
            return hit
        # A one-point group read for three values: no Estimate (nor its quantities) is built.
        group = self.engine.run_points(self.resolved.with_scenario(scenario), None, _FIT_KEYS)
        hit = self._fit[key] = bool(group.get(0, "memory.fits"))
        if shared is not None:
            total, usable = group.get(0, "memory.per_gpu.total"), group.get(0, "memory.usable_capacity")
            known = shared.get(key, total)
            consistent = isinstance(total, float) and isinstance(usable, float) and known == total
            if consistent and hit == (total <= usable):
                shared[key] = total
                self._usable = usable
            else:
                self._shared = None
        return hit

    def fits_as_given(self) -> bool:
        """Whether the scenario's own layout fits in memory (a memory-only run)."""
        return self._fits(self.resolved.scenario)

    def any_fits(self, n: int) -> bool:
        """Whether some split of ``n`` GPUs fits in memory (memory-only runs)."""
        return any(self._fits(self._scenario(n, tp, pp)) for tp, pp in self.shapes(n))

    def ranked(self, n: int) -> list[Layout]:
        """The layouts of ``n`` GPUs that fit, best first (:func:`layouts`' order), each with an
        estimate of :data:`RANK_KEYS` only (guard-rails not checked: see :meth:`best`)."""
        found = self._ranked.get(n)
        if found is None:
            found = []
            for tp, pp in self.shapes(n):
                scenario = self._scenario(n, tp, pp)
                if self._fits(scenario):
                    estimate = self.engine.run(self.resolved.with_scenario(scenario), RANK_KEYS)
                    found.append(Layout(tp, pp, n // (tp * pp), estimate))
            found.sort(key=_rank)
            self._ranked[n] = found
        return found

    def full(self, layout: Layout) -> Layout:
        """``layout`` with a full estimate (every key, every guard-rail)."""
        n = layout.tp * layout.pp * layout.dp
        key = (n, layout.tp, layout.pp)
        estimate = self._full.get(key)
        if estimate is None:
            scenario = self._scenario(n, layout.tp, layout.pp)
            estimate = self._full[key] = self.engine.run(self.resolved.with_scenario(scenario))
        return Layout(layout.tp, layout.pp, layout.dp, estimate)

    def best(self, n: int, accept: Callable[[Estimate], bool] | None = None) -> Layout | None:
        """The best runnable layout of ``n`` GPUs (that ``accept`` takes), with its full estimate."""
        for layout in self.ranked(n):
            if accept is not None and not accept(layout.estimate):
                continue
            full = self.full(layout)
            if runnable(full.estimate) and (accept is None or accept(full.estimate)):
                return full
        return None

    def nothing_fits(self, max_gpus: int) -> bool:
        """True when nothing will fit up to ``max_gpus``, decided without scanning every count.

        More GPUs never need more memory per GPU for the same split, so two checks stand for the
        counts below: a large, divisor-rich count (GPUs per node x blocks x 2^k, its splits with TP
        dividing the node and PP dividing the blocks, the memory-lightest ones), and the last
        three counts of :func:`gpu_counts` themselves (a plan that fits only with a pipeline depth
        those counts do not divide into is reported as not fitting, as a scan would find too).
        """
        per_node = self.resolved.cluster.node.gpus_per_node
        layers = self.resolved.model.total_layers
        rich = per_node * layers
        if rich <= max_gpus:
            while rich * 2 <= max_gpus:
                rich *= 2
            shapes = [(tp, pp) for tp, pp in self.shapes(rich) if per_node % tp == 0 and layers % pp == 0]
            if not any(self._fits(self._scenario(rich, tp, pp)) for tp, pp in reversed(shapes)):
                return True
        return not any(self.any_fits(n) for n in gpu_counts(per_node, max_gpus)[-3:])


#: The keys layouts are ranked by (and the targets of the inverse questions read).
RANK_KEYS: tuple[str, ...] = (
    "memory.fits",
    "memory.headroom",
    "performance.tokens_per_s",
    "performance.ttft_s",
    "performance.tpot_s",
    "performance.train_time_days",
)


def fewest_gpus(
    engine: Engine, resolved: ResolvedScenario, max_gpus: int = MAX_GPUS, search: LayoutSearch | None = None
) -> Layout | None:
    """The fewest GPUs (:func:`gpu_counts` order) with a runnable layout, and its best layout.

    The answer of :func:`min_gpus` where that one's layout can run, found with memory-only runs.
    None: nothing fits up to ``max_gpus``; once one node is not enough,
    :meth:`LayoutSearch.nothing_fits` is asked first, so a plan that fits nowhere costs a few
    dozen memory-only runs instead of a scan of every count.
    """
    search = search or LayoutSearch(engine, resolved)
    for n in fitting_counts(search, max_gpus):
        best = search.best(n)
        if best is not None:
            return best
    return None


def fitting_counts(search: LayoutSearch, max_gpus: int = MAX_GPUS) -> Iterator[int]:
    """The GPU counts (:func:`gpu_counts` order) on which some split fits in memory, found with
    memory-only runs; once one node is not enough, :meth:`LayoutSearch.nothing_fits` is asked
    first, so a plan that fits nowhere costs a few dozen runs instead of a scan of every count."""
    per_node = search.resolved.cluster.node.gpus_per_node
    checked = False
    for n in gpu_counts(per_node, max_gpus):
        if n > per_node and not checked:
            checked = True
            if search.nothing_fits(max_gpus):
                return
        if search.any_fits(n):
            yield n


def first_count_meeting(
    engine: Engine,
    resolved: ResolvedScenario,
    accept: Callable[[Estimate], bool],
    max_gpus: int = MAX_GPUS,
    search: LayoutSearch | None = None,
) -> Layout | None:
    """The fewest GPUs (:func:`meeting_counts` order) on which a runnable layout satisfies
    ``accept``, and the best such layout (:func:`layouts`' order).

    Bisects over the :func:`gpu_counts` ladder from the fewest that fit, then over the whole nodes
    between the last ladder count that misses and the first that meets (the ladder grows by about
    a quarter per step: 2,928 GPUs where 2,432 train in time). ``accept`` must be monotone in the
    GPU count: once met, met with more GPUs (a deadline, a throughput floor, a latency ceiling that
    more tensor parallelism helps). The tests hold it against a scan of every count.
    """
    search = search or LayoutSearch(engine, resolved)
    first = fewest_gpus(engine, resolved, max_gpus, search)
    if first is None:
        return None
    start = first.tp * first.pp * first.dp
    per_node = resolved.cluster.node.gpus_per_node
    counts = [n for n in gpu_counts(per_node, max_gpus) if n >= start]

    found = search.best(counts[-1], accept)
    if found is None:
        return None
    hi, found = _first_meeting(counts[:-1], found, lambda n: search.best(n, accept))
    if hi == 0:
        return found  # the fewest GPUs that fit already meet it
    low, high = counts[hi - 1], counts[hi]
    between = list(range((low // per_node + 1) * per_node, high, per_node))  # whole nodes
    return _first_meeting(between, found, lambda n: search.best(n, accept))[1]


def _first_meeting(
    counts: Sequence[int], meeting: Layout, best: Callable[[int], Layout | None]
) -> tuple[int, Layout]:
    """Bisect ``counts`` (ascending; the count after the last is known to meet, with ``meeting``):
    the index of the first count whose ``best`` layout is not None, and that layout."""
    lo, hi = -1, len(counts)  # counts[lo] misses (or is before the start); counts[hi] meets
    while hi - lo > 1:
        mid = (lo + hi) // 2
        layout = best(counts[mid])
        if layout is not None:
            hi, meeting = mid, layout
        else:
            lo = mid
    return hi, meeting


def meeting_counts(gpus_per_node: int, max_gpus: int = MAX_GPUS) -> list[int]:
    """The GPU counts :func:`first_count_meeting` answers in: the :func:`gpu_counts` ladder and
    every whole number of nodes."""
    nodes = range(gpus_per_node, max_gpus + 1, gpus_per_node)
    return sorted(set(gpu_counts(gpus_per_node, max_gpus)) | set(nodes))


def train_within(
    engine: Engine, resolved: ResolvedScenario, days: float, max_gpus: int = MAX_GPUS
) -> Layout | None:
    """Fewest GPUs (and their fastest layout) that train ``scenario.train_tokens`` within ``days``."""
    scenario = resolved.scenario
    if not scenario.is_training:
        raise ValueError("train_within needs a training scenario (workload finetune or pretrain)")
    if scenario.train_tokens is None:
        raise ValueError("train_within needs the tokens to train on (scenario.train_tokens)")
    if days <= 0:
        raise ValueError("train_within needs a positive number of days")

    def in_time(estimate: Estimate) -> bool:
        value = estimate.get("performance.train_time_days")
        return isinstance(value, (int, float)) and value <= days

    return first_count_meeting(engine, resolved, in_time, max_gpus)


def largest_under_tpot(
    engine: Engine, resolved: ResolvedScenario, field: str, max_tpot_s: float, upper: int | None = None
) -> tuple[int, Estimate] | None:
    """Largest ``batch_size`` or ``seq_len`` that fits and keeps TPOT at or under ``max_tpot_s``.

    Both grow TPOT (more sequences per step, longer KV reads per token) and memory, so the set of
    good values is 1..answer and a bisection finds its end. None: even 1 misses. As for
    :func:`largest_fitting`, an answer equal to ``upper`` is a bound.
    """
    if field not in ("batch_size", "seq_len"):
        raise ValueError("largest_under_tpot solves for batch_size or seq_len")
    upper = SEARCH_LIMITS[field] if upper is None else upper
    if resolved.scenario.is_training:
        raise ValueError("TPOT applies to inference scenarios")
    if max_tpot_s <= 0:
        raise ValueError("the TPOT target must be positive")
    wanted = ("memory.fits", "performance.tpot_s")

    def good(group: GroupEstimate, i: int) -> bool:
        tpot = group.get(i, "performance.tpot_s")
        return bool(group.get(i, "memory.fits")) and isinstance(tpot, (int, float)) and tpot <= max_tpot_s

    found = largest_good(engine, resolved, field, upper, wanted, good)
    if found is None:
        return None
    return found, engine.run(resolved.with_scenario(with_fields(resolved.scenario, {field: found})), wanted)
