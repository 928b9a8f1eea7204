"""Decision confidence at equal service level: over draws of the documented assumption ranges,
how often each candidate is the cheapest that meets the targets in its own best configuration
(:func:`workbench.engine.iso_sla.iso_sla` repeated per draw), and the assumption values at which
the winner changes (break-even thresholds).

The draws are those of :mod:`workbench.engine.confidence`: every assumption with a documented range
that the configurations' estimates read, uniform in [low, high], independently, seeded. Prices are
the user's inputs and are not drawn. Per draw the winner is what :func:`iso_sla` gives with those
assumption values as the scenario's overrides. Where a demand and a latency target make the
simulated p99 decide, the default (``tails="base"``) simulates each configuration (with the
replicas the draw needs) once, at the scenario's own assumption values, and the notes say so, and
warn when the winner's p99 sits near a target (its share is then overstated); ``tails="drawn"``
simulates it at every draw's values, so that each draw is exactly iso_sla's answer (a simulation
or more per draw).

Speed. Every configuration of a candidate is a point of a group over (batch x draw), one group per
(candidate, weights, TP), run for the few keys the search reads. Not every configuration needs its
draws: a configuration can only win a draw if its cost in that draw is the lowest, so each one gets
a lower bound on its cost over the whole box of ranges, and the draws are run in the order of those
bounds until every draw's winner costs less than the bound of every configuration not yet drawn.
The bounds come from the corner of the box that favours the configuration (one corner per figure:
TTFT, TPOT, throughput, cost), the direction of each assumption found from a swing of its range on
one layout of the candidate; the speed model is monotone in each drawn assumption (an efficiency
scales a time, an overhead or a latency adds one). A figure that some assumption moves both ways
across the batches of the swing bounds nothing for that candidate (it is not used to rule a
configuration out). Drawing every configuration (``prune=False``) gives the same winners: a test
checks it.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.core.errors import InputError
from workbench.core.scenario import Scenario
from workbench.engine.compare import Candidate, Progress, Resolve, Targets, _candidate_scenario, cached_resolver
from workbench.engine.confidence import MAX_DRAWS
from workbench.engine.iso_sla import (
    CONFIG_KEYS,
    Config,
    IsoResult,
    Search,
    cheapest_holding,
    entry_key,
    search,
    tail_meets,
    tail_of,
)
from workbench.engine.pareto import BATCHES
from workbench.engine.pipeline import Engine
from workbench.engine.sensitivity import Factor, factors
from workbench.engine.solvers import FIT_KEYS
from workbench.engine.variations import validated_value, with_fields

_TTFT, _TPOT, _RATE, _HOURLY, _PER_M = CONFIG_KEYS
#: Configurations drawn in the first round (each round draws twice as many as the one before, for
#: the draws not settled yet: a few cheap configurations settle most of them).
_FIRST_ROUND = 8


@dataclass(frozen=True, slots=True)
class BreakEven:
    """Where the winner changes when one drawn assumption moves alone within its range.

    ``winner`` wins once the assumption is ``direction`` ("at least" / "at most") ``threshold``;
    ``before`` is the nearest value found on the other side (the base winner still wins there)."""

    factor: Factor
    winner: str | None
    direction: str
    threshold: float
    before: float

    def as_dict(self) -> dict[str, Any]:
        return {"assumption": self.factor.id, "title": self.factor.title, "unit": self.factor.unit,
                "winner": self.winner, "direction": self.direction, "threshold": self.threshold,
                "before": self.before, "low": self.factor.low, "high": self.factor.high}  # fmt: skip

    def describe(self) -> str:
        who = "no candidate meets the targets" if self.winner is None else f"{self.winner} wins"
        f = self.factor
        return f"{who} if {f.id} is {self.direction} {self.threshold:.4g} (range {f.low:.3g}..{f.high:.3g})"


@dataclass(slots=True)
class IsoConfidence:
    """Shares of the draws each candidate wins at equal service level (label -> fraction)."""

    draws: int
    seed: int
    drawn: list[Factor]
    shares: dict[str, float]
    no_recommendation: float
    base: list[IsoResult]
    winners: list[str | None]  # per draw
    configurations_drawn: int
    break_even: list[BreakEven] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "draws": self.draws,
            "seed": self.seed,
            "drawn": [{"id": f.id, "title": f.title, "low": f.low, "high": f.high, "unit": f.unit} for f in self.drawn],
            "shares": dict(self.shares),
            "no_recommendation": self.no_recommendation,
            "configurations_drawn": self.configurations_drawn,
            "break_even": [b.as_dict() for b in self.break_even],
            "notes": list(self.notes),
        }


def iso_sla_confidence(
    engine: Engine,
    scenario: Scenario,
    candidates: Sequence[Candidate],
    resolve: Resolve,
    targets: Targets | None = None,
    *,
    weights: Sequence[str] | None = None,
    batches: Sequence[int] = BATCHES,
    draws: int = 1000,
    seed: int = 0,
    break_even: bool = True,
    prune: bool = True,
    tails: str = "base",
    progress: Progress | None = None,
) -> IsoConfidence:
    """:func:`iso_sla` of ``candidates`` and how often each wins it over ``draws`` draws of the
    assumptions; with ``break_even``, the threshold of each drawn assumption that moves the winner
    (module docstring). ``prune=False`` draws every configuration (the bounds are not used).

    ``tails``: where a demand and a latency target make the simulated p99 decide, ``base``
    simulates each configuration once, at the scenario's own assumption values (fast); ``drawn``
    simulates it at each draw's values, so that every draw is exactly :func:`iso_sla` with those
    values (a simulation or more per draw: seconds per hundred draws)."""
    if not 1 <= draws <= MAX_DRAWS:
        raise InputError(f"confidence: the number of draws must be 1..{MAX_DRAWS:,}, got {draws}")
    if tails not in ("base", "drawn"):
        raise InputError(f"confidence: tails are simulated at the 'base' or the 'drawn' values, not '{tails}'")
    targets = targets or Targets()
    resolve = cached_resolver(resolve)
    steps = len(candidates) + 2
    told = [0]

    def tell(done: int) -> None:
        told[0] = done
        if progress is not None:
            progress(done, steps)

    found = search(engine, scenario, candidates, resolve, targets, weights=weights, batches=batches,
                   progress=lambda done, _total: tell(done))  # fmt: skip
    base = found.results
    winner = base[0].candidate.label if base and base[0].meets else None
    board = _Board(engine, scenario, resolve, targets, found, drawn_tails=tails == "drawn")
    board.tick = lambda: tell(told[0])  # again between rounds and simulations: a raise stops the draws
    drawn, notes = board.drawn_factors()
    if not drawn:
        notes.append("no assumption with a range moves these configurations: nothing to draw")
        shares = {c.label: float(c.label == winner) for c in candidates}
        tell(steps)
        return IsoConfidence(draws, seed, [], shares, float(winner is None), base, [winner] * draws, 0, [], notes)
    board.bound(drawn, prune)
    rng = np.random.default_rng(seed)
    values = {f.target: rng.uniform(f.low, f.high, size=draws) for f in drawn}
    winners = board.winners(values)
    tell(len(candidates) + 1)
    picks = Counter(winners)
    shares = {c.label: picks.get(c.label, 0) / draws for c in candidates}
    thresholds = board.break_even(drawn, winner) if break_even else []
    tell(steps)
    if board.tail_decides and tails == "drawn":
        notes.append("every draw's p99 under the demand's load is simulated at that draw's assumption values")
    elif board.tail_decides:
        notes.append("the p99 under the demand's load is simulated at the scenario's own assumption values only; "
                     "the draws and the break-even thresholds move the closed-form latencies, throughput and cost, "
                     "not the simulated tail")  # fmt: skip
        edge = _tail_margin(base[0], targets, found) if base and base[0].meets else None
        if edge is not None:
            notes.append(edge)
    return IsoConfidence(draws, seed, drawn, shares, picks.get(None, 0) / draws, base, winners,
                         board.drawn_configurations, thresholds, notes)  # fmt: skip


@dataclass(slots=True)
class _Layout:
    """One (candidate, weights, TP) and its configurations that run (indices into the board)."""

    candidate: Candidate
    weights: str
    tp: int
    members: list[int]
    laid: Any = None  # the resolved scenario of one replica, once made


class _Board:
    """Every configuration that runs, of the candidates with a price, with bounds and draws."""

    def __init__(self, engine: Engine, scenario: Scenario, resolve: Resolve, targets: Targets, found: Search,
                 drawn_tails: bool = False) -> None:  # fmt: skip
        self.engine, self.scenario, self.resolve, self.targets, self.found = engine, scenario, resolve, targets, found
        self.drawn_tails = drawn_tails
        self.tick: Any = lambda: None
        self._values: Mapping[str, np.ndarray] = {}
        # drawn tails: per set of assumption values, its tails and its scenario
        self._drawn_cache: dict[tuple[tuple[str, float], ...], tuple[dict[Any, Any], Scenario]] = {}
        self.demand = targets.min_tokens_per_s
        latency = targets.max_ttft_s is not None or targets.max_tpot_s is not None
        self.tail_decides = self.demand is not None and latency
        self.configs: list[tuple[Candidate, Config]] = []
        layouts: dict[tuple[Candidate, str, int], _Layout] = {}
        for candidate, seen in found.configs.items():
            for config in seen:
                if (config.usd_per_hour if self.demand is not None else config.usd_per_million_tokens) is None:
                    continue  # no price: it never wins (its result says so)
                key = (candidate, config.weights, config.tp)
                layout = layouts.setdefault(key, _Layout(candidate, config.weights, config.tp, []))  # type: ignore[arg-type]
                layout.members.append(len(self.configs))
                self.configs.append((candidate, config))
        self.layouts = list(layouts.values())
        order = {c.label: i for i, c in enumerate(sorted(found.configs, key=lambda c: c.label))}
        self.label_rank = np.array([order[c.label] for c, _ in self.configs], dtype=np.int64)
        # The rest of iso_sla's walk order (entry_key): weights, TP, batch.
        layouts_in_order = sorted({(c.weights, c.tp, c.batch) for _, c in self.configs})
        rank = {layout: i for i, layout in enumerate(layouts_in_order)}
        self.layout_rank = np.array([rank[(c.weights, c.tp, c.batch)] for _, c in self.configs], dtype=np.int64)
        self.lower = np.full(len(self.configs), -math.inf)  # cost bound over the whole box
        self.possible = np.ones(len(self.configs), dtype=bool)
        self.drawn_configurations = 0
        self._unbounded: set[tuple[Candidate, int]] = set()  # (candidate, figure) without a corner

    # --- what is drawn ------------------------------------------------------------------------

    def _laid(self, layout: _Layout) -> Any:
        if layout.laid is None:
            variant = with_fields(self.scenario, {"weights": validated_value(self.scenario, "weights", layout.weights)})
            anchor = self.resolve(_candidate_scenario(variant, layout.candidate))
            layout.laid = anchor.with_scenario(with_fields(anchor.scenario, {
                "num_gpus": layout.tp, "parallel.tp": layout.tp, "parallel.pp": 1, "parallel.dp": 1, "parallel.ep": 1,
            }))  # fmt: skip
        return layout.laid

    def drawn_factors(self) -> tuple[list[Factor], list[str]]:
        """The documented-range assumptions the configurations' estimates read (one estimate of
        each candidate's first layout), less any that decides whether a configuration fits."""
        estimates, seen = [], set()
        for layout in self.layouts:
            if layout.candidate in seen:
                continue
            seen.add(layout.candidate)
            batch = self.configs[layout.members[0]][1].batch
            laid = self._laid(layout)
            estimates.append(self.engine.run(laid.with_scenario(with_fields(laid.scenario, {"batch_size": batch})),
                                             CONFIG_KEYS))  # fmt: skip
        if not estimates:
            return [], ["no candidate with a price has a configuration that runs"]
        swung = factors(self.engine, estimates)
        drawn = [f for f in swung if f.kind == "assumption" and f.range_source.startswith("documented range")]
        notes = []
        fit = [f for f in drawn if self.engine.reads_any([f.target], FIT_KEYS)]
        if fit:
            notes.append("not drawn (they decide which configurations fit): " + ", ".join(f.id for f in fit))
            drawn = [f for f in drawn if f not in fit]
        return drawn, notes

    def _run(self, layout: _Layout, members: Sequence[int], values: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The search's keys of ``members`` (of ``layout``) at each set of ``values``: arrays of
        shape (members, values)."""
        n = len(next(iter(values.values())))
        batches = [self.configs[m][1].batch for m in members]
        group = self.engine.run_points(self._laid(layout), {"batch_size": np.repeat(batches, n)}, CONFIG_KEYS,
                                       {k: np.tile(v, len(batches)) for k, v in values.items()})  # fmt: skip
        return {key: _floats(group.column(key), len(batches) * n).reshape(len(batches), n) for key in CONFIG_KEYS}

    # --- bounds -------------------------------------------------------------------------------

    def bound(self, drawn: Sequence[Factor], prune: bool) -> None:
        """Each configuration's lower bound on its cost, and whether it can meet the latency
        targets at all, over the box of ``drawn`` ranges (module docstring)."""
        if not prune:
            return
        by_candidate: dict[Candidate, list[_Layout]] = {}
        for layout in self.layouts:
            by_candidate.setdefault(layout.candidate, []).append(layout)
        for layouts in by_candidate.values():
            probe = max(layouts, key=lambda layout: (len(layout.members), layout.tp))
            corners = self._corners(probe, drawn)
            if corners is None:
                continue  # no single direction: drawn in full
            blind = [col for cand, col in self._unbounded if cand == probe.candidate]
            for layout in layouts:
                got = self._run(layout, layout.members, corners)
                for row, m in enumerate(layout.members):
                    corner = {key: got[key][row].copy() for key in CONFIG_KEYS}
                    for col in blind:
                        for key in CONFIG_KEYS:
                            corner[key][col] = np.nan
                    self._bound_one(m, corner)

    def _corners(self, probe: _Layout, drawn: Sequence[Factor]) -> dict[str, np.ndarray] | None:
        """Four sets of values (the favourable corner for TTFT, TPOT, throughput and cost), from a
        swing of each range on ``probe``. A figure that some assumption moves both ways (across the
        batches) has no corner: its column is NaN and it bounds nothing."""
        base = {f.target: f.value for f in drawn}
        swings = {f.target: np.array([base[f.target]] * (2 * len(drawn)), dtype=float) for f in drawn}
        for j, f in enumerate(drawn):
            swings[f.target][2 * j], swings[f.target][2 * j + 1] = f.low, f.high
        got = self._run(probe, probe.members, swings)
        cost = _HOURLY if self.demand is not None else _PER_M
        figures = ((_TTFT, False), (_TPOT, False), (_RATE, True), (cost, False))  # (key, higher is better)
        corners = {f.target: np.empty(len(figures)) for f in drawn}
        for col, (key, higher) in enumerate(figures):
            for j, f in enumerate(drawn):
                rise = got[key][:, 2 * j + 1] - got[key][:, 2 * j]
                if np.isnan(rise).any() or ((rise > 0).any() and (rise < 0).any()):
                    for g in drawn:
                        corners[g.target][col] = g.value  # a run is still needed: NaN marks it below
                    self._unbounded.add((probe.candidate, col))
                    break
                up = bool((rise > 0).any())
                corners[f.target][col] = f.high if up == higher else f.low
        return corners

    def _bound_one(self, m: int, corner: dict[str, np.ndarray]) -> None:
        ttft, tpot, rate = corner[_TTFT][0], corner[_TPOT][1], corner[_RATE][2]
        cost = corner[_HOURLY if self.demand is not None else _PER_M][3]
        slack = 1e-9  # rounding between runs of one model: never prune on it
        t = self.targets
        # A figure without a bound (NaN) rules nothing out.
        if (t.max_ttft_s is not None and ttft > t.max_ttft_s * (1 + slack)) or (
            t.max_tpot_s is not None and tpot > t.max_tpot_s * (1 + slack)
        ):
            self.possible[m] = False
            return
        if not (np.isfinite(rate) and np.isfinite(cost)) or rate <= 0:
            return  # no bound on its cost: drawn early
        replicas = 1 if self.demand is None else max(math.ceil(self.demand / rate * (1 - slack) - 1e-9), 1)
        self.lower[m] = cost * replicas * (1 - slack)

    # --- draws --------------------------------------------------------------------------------

    def winners(self, values: Mapping[str, np.ndarray]) -> list[str | None]:
        """The winner (label or None) at each set of ``values``: configurations drawn in order of
        their bounds until every winner is cheaper than the bound of all the rest; each round draws
        its configurations for the draws not settled yet only."""
        n = len(next(iter(values.values())))
        self._values = values
        todo = [m for m in np.argsort(self.lower, kind="stable").tolist() if self.possible[m]]
        cost = np.full((len(self.configs), n), np.nan)
        gpus = np.zeros((len(self.configs), n), dtype=np.int64)
        tpot = np.full((len(self.configs), n), np.nan)
        result: list[str | None | bool] = [False] * n  # False: not settled yet
        done, size = 0, _FIRST_ROUND
        while True:
            self.tick()
            batch = todo[done : done + size]
            pending = np.array([d for d, r in enumerate(result) if r is False], dtype=np.int64)
            self._draw(batch, {k: v[pending] for k, v in values.items()}, pending, cost, gpus, tpot)
            done += len(batch)
            size *= 2
            limit = self.lower[todo[done]] if done < len(todo) else math.inf
            self._settle(np.array(todo[:done], dtype=np.int64), result, cost, gpus, tpot, limit)
            if done >= len(todo) or all(r is not False for r in result):
                break
        self.drawn_configurations = max(self.drawn_configurations, done)
        return [None if r is False else r for r in result]  # type: ignore[misc]

    def _draw(self, members: Sequence[int], values: Mapping[str, np.ndarray], columns: np.ndarray, cost: np.ndarray,
              gpus: np.ndarray, tpot: np.ndarray) -> None:  # fmt: skip
        """Fill the cost (NaN: does not meet the targets or unknown), GPUs and TPOT of ``members``
        at ``values`` (the draws ``columns``)."""
        wanted = set(members)
        t = self.targets
        for layout in self.layouts:
            mine = [m for m in layout.members if m in wanted]
            if not mine:
                continue
            got = self._run(layout, mine, values)
            for row, m in enumerate(mine):
                ttft, tp_s, rate = got[_TTFT][row], got[_TPOT][row], got[_RATE][row]
                known = (ttft > 0) & (tp_s > 0) & (rate > 0)
                meets = known.copy()
                if t.max_ttft_s is not None:
                    meets &= ttft <= t.max_ttft_s
                if t.max_tpot_s is not None:
                    meets &= tp_s <= t.max_tpot_s
                with np.errstate(invalid="ignore", divide="ignore"):
                    if self.demand is None:
                        replicas = np.ones_like(rate)
                        each = got[_PER_M][row]
                    else:
                        replicas = np.maximum(np.ceil(self.demand / rate - 1e-9), 1)
                        each = got[_HOURLY][row] * replicas
                cost[m, columns] = np.where(meets, each, np.nan)
                gpus[m, columns] = np.where(known, replicas, 0).astype(np.int64) * layout.tp
                tpot[m, columns] = tp_s

    def _settle(self, drawn: np.ndarray, result: list[Any], cost: np.ndarray, gpus: np.ndarray, tpot: np.ndarray,
                limit: float) -> None:  # fmt: skip
        """Each unsettled draw's winner among the configurations ``drawn`` so far, in iso_sla's
        order (each candidate's pool by cost, GPUs, TPOT; candidates by cost, GPUs, label); it
        stays unsettled (False) while one not drawn yet (each costs at least ``limit``) could win."""
        pending = np.array([d for d, r in enumerate(result) if r is False], dtype=np.int64)
        if not len(pending) or not len(drawn):
            return
        c = cost[np.ix_(drawn, pending)].T  # (draws, configurations)
        valid = ~np.isnan(c) & (c < limit)
        c = np.where(valid, c, np.inf)
        labels = np.broadcast_to(self.label_rank[drawn], c.shape)
        layouts = np.broadcast_to(self.layout_rank[drawn], c.shape)
        order = np.lexsort((layouts, tpot[np.ix_(drawn, pending)].T, labels, gpus[np.ix_(drawn, pending)].T, c), axis=-1)
        by_label = {candidate.label: candidate for candidate, _ in self.configs}
        for row, d in enumerate(pending.tolist()):
            found: str | None | bool = None if limit == math.inf else False
            if not self.tail_decides:
                for m in drawn[order[row]][valid[row][order[row]]].tolist():
                    found = self.configs[m][0].label
                    break
                result[d] = found
                continue
            # The same walk as iso_sla's, over every candidate at once (cost order, replicas added;
            # iso_sla's key order, so the entries are made as the walk reaches them).
            listed = drawn[order[row]][valid[row][order[row]]].tolist()

            def entries(listed: list[int] = listed, d: int = d) -> Any:
                for m in listed:
                    candidate, config = self.configs[m]
                    replicas = int(gpus[m, d] // config.tp)
                    sized = dataclasses.replace(config, replicas=replicas, gpus=int(gpus[m, d]),
                                                tpot_s=float(tpot[m, d]), usd_per_hour=float(cost[m, d]))  # fmt: skip
                    yield entry_key(sized, candidate.label), candidate.label, sized

            def holds(label: str, config: Config, d: int = d) -> bool | None:
                return self._tail_holds(by_label[label], config, d)

            walk = cheapest_holding(entries(), holds, limit)
            if walk.owner is not None:
                found = walk.owner
            result[d] = found

    def _tail_holds(self, candidate: Candidate, sized: Config, d: int) -> bool | None:
        """Whether ``sized`` keeps its simulated p99 within the targets under the demand: at the
        scenario's own assumption values, or (drawn tails) at draw ``d``'s; None if it cannot be
        simulated."""
        assert self.demand is not None
        self.tick()
        if self.drawn_tails:
            values = {k: float(v[d]) for k, v in self._values.items()}
            key = tuple(sorted(values.items()))
            if key not in self._drawn_cache:
                self._drawn_cache[key] = ({}, self.scenario.model_copy(
                    update={"assumptions": {**self.scenario.assumptions, **values}}))  # fmt: skip
            tails, scenario = self._drawn_cache[key]
            tail = tail_of(self.engine, scenario, candidate, self.resolve, sized, self.demand, tails)
        else:
            tail = tail_of(self.engine, self.scenario, candidate, self.resolve, sized, self.demand, self.found.tails)
        return None if tail is None else tail_meets(tail, self.targets)

    # --- break-even ---------------------------------------------------------------------------

    def break_even(self, drawn: Sequence[Factor], winner: str | None) -> list[BreakEven]:
        """For each drawn assumption, moved alone from its value towards each end of its range: the
        nearest value at which the winner is another (or none). Only the directions whose end of
        the range has another winner are searched (a winner that changes and comes back within one
        side is not looked for): a grid of :data:`SCAN` values finds the first change, then
        :data:`REFINES` finer grids of as many values narrow the step where it happens (each
        :data:`SCAN` times). Every direction's values of a step are one run of the draws."""
        base = {f.target: f.value for f in drawn}
        walks = [(f, direction, end) for f in drawn
                 for end, direction in ((f.high, "at least"), (f.low, "at most")) if end != f.value]  # fmt: skip
        ends = self._winners_at(base, [(f, [end]) for f, _, end in walks])
        walks = [walk for walk, got in zip(walks, ends) if got[0] != winner]
        if not walks:
            return []
        grids = [np.linspace(f.value, end, SCAN + 1)[1:] for f, _, end in walks]
        scans = self._winners_at(base, [(f, grid.tolist()) for (f, _, _), grid in zip(walks, grids)])
        # (last value keeping the winner, first value found without it, the winner there)
        brackets = []
        for (f, _, _), grid, got in zip(walks, grids, scans):
            first = next(i for i, w in enumerate(got) if w != winner)
            brackets.append([f.value if first == 0 else float(grid[first - 1]), float(grid[first]), got[first]])
        for _ in range(REFINES):
            grids = [np.linspace(keep, away, SCAN + 1)[1:-1] for keep, away, _ in brackets]
            got = self._winners_at(base, [(f, grid.tolist()) for (f, _, _), grid in zip(walks, grids)])
            for bracket, grid, at in zip(brackets, grids, got):
                first = next((i for i, w in enumerate(at) if w != winner), None)
                if first is None:
                    bracket[0] = float(grid[-1])  # the change is in the last sub-step
                else:
                    bracket[1], bracket[2] = float(grid[first]), at[first]
                    if first:
                        bracket[0] = float(grid[first - 1])
        return [BreakEven(f, who, direction, away, keep) for (f, direction, _), (keep, away, who) in zip(walks, brackets)]

    def _winners_at(self, base: Mapping[str, float], moves: Sequence[tuple[Factor, Sequence[float]]]) -> list[list[Any]]:
        """The winners with one assumption moved to each of its values (the rest at ``base``), for
        every (factor, values) of ``moves``, in one run of the draws."""
        total = sum(len(v) for _, v in moves)
        values = {k: np.full(total, v) for k, v in base.items()}
        at = 0
        for f, moved in moves:
            values[f.target][at : at + len(moved)] = moved
            at += len(moved)
        got = self.winners(values)
        out, at = [], 0
        for _, moved in moves:
            out.append(got[at : at + len(moved)])
            at += len(moved)
        return out


#: Values tried per direction to find the first change of the winner, then refinements of that
#: step (each into SCAN sub-steps): the threshold is found to 1/SCAN**(REFINES + 1) of the way.
SCAN = 8
REFINES = 3


#: A winner's simulated p99 this close to a target (as a share of it) may not hold in many draws.
TAIL_EDGE = 0.1


def _tail_margin(winner: IsoResult, targets: Targets, found: Search) -> str | None:
    """A warning when the winner's simulated p99 sits within :data:`TAIL_EDGE` of a target: the
    draws, which keep that tail, then overstate how often it wins."""
    best = winner.best
    if best is None:
        return None
    tail = found.tails.get((winner.candidate.label, best.weights, best.tp, best.batch, best.replicas))
    if tail is None:
        return None
    for name, value, limit in (("TTFT", tail[0], targets.max_ttft_s), ("TPOT", tail[1], targets.max_tpot_s)):
        if limit is not None and value > limit * (1 - TAIL_EDGE):
            return (f"{winner.candidate.label}'s simulated p99 {name} ({value * 1e3:.3g} ms) is within "
                    f"{(limit - value) / limit:.0%} of its target: its share is likely overstated (drawn tails "
                    "simulate each draw)")  # fmt: skip
    return None


def _floats(column: np.ndarray | None, n: int) -> np.ndarray:
    """A result column as floats, NaN where a point has no number."""
    if column is None:
        return np.full(n, np.nan)
    if column.dtype.kind in "fiu":
        return column.astype(float)
    return np.array([v if isinstance(v, (int, float)) and not isinstance(v, bool) else np.nan for v in column],
                    dtype=float)  # fmt: skip
