"""Pareto fronts of serving configurations, per candidate accelerator.

For each candidate, every configuration a deployment may choose on one node: tensor parallelism
over the divisors of the node's GPUs, and the concurrency (batch per replica) over powers of two;
each (candidate, TP) is one point group over the batch sizes, estimated in full. Of the
configurations that run (fit in memory, no guard-rail error), two fronts:

* **throughput per GPU vs tokens/s per user** (both higher is better): what a GPU delivers against
  what each user sees -- the trade-off concurrency buys;
* **cost per million tokens vs TPOT** (both lower is better).

A point is on a front when no other configuration of the same candidate is at least as good on
both axes and better on one. Every configuration is kept (``points``), so a chart can show the
dominated ones too and a user can apply any of them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.core.errors import InputError
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Scenario
from workbench.engine.compare import Candidate, Progress, Resolve, _candidate_scenario, cached_resolver
from workbench.engine.pipeline import Engine
from workbench.engine.solvers import runnable
from workbench.engine.variations import with_fields

#: Concurrencies tried per replica (one point group per candidate and TP degree).
BATCHES: tuple[int, ...] = tuple(2**k for k in range(11))  # 1 .. 1024


@dataclass(frozen=True, slots=True)
class FrontPoint:
    """One serving configuration of a candidate and what it delivers."""

    batch: int
    tp: int
    gpus: int
    tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float
    tpot_s: float
    ttft_s: float
    usd_per_million_tokens: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "tp": self.tp,
            "gpus": self.gpus,
            "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu,
            "tokens_per_s_per_user": self.tokens_per_s_per_user,
            "tpot_s": self.tpot_s,
            "ttft_s": self.ttft_s,
            "usd_per_million_tokens": self.usd_per_million_tokens,
        }


@dataclass(slots=True)
class Front:
    """A candidate's configurations and its two fronts (each sorted along its first axis)."""

    candidate: Candidate
    points: list[FrontPoint]
    throughput: list[FrontPoint]  # per GPU vs per user, both maximized
    cost: list[FrontPoint]  # $/M tokens vs TPOT, both minimized (points with a price only)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate.label,
            "points": [p.as_dict() for p in self.points],
            "throughput_front": [p.as_dict() for p in self.throughput],
            "cost_front": [p.as_dict() for p in self.cost],
            "notes": list(self.notes),
        }


def pareto_fronts(
    engine: Engine,
    scenario: Scenario,
    candidates: Sequence[Candidate],
    resolve: Resolve,
    batches: Sequence[int] = BATCHES,
    progress: Progress | None = None,
) -> list[Front]:
    """Every candidate's serving configurations on one node and their fronts (module docstring)."""
    if scenario.is_training:
        raise InputError("Pareto fronts are for serving scenarios (throughput against latency)")
    if not candidates:
        raise InputError("give at least one candidate accelerator")
    if scenario.gen_len < 2:
        raise InputError("Pareto fronts need generated tokens (--gen-len of 2 or more): TPOT is one axis")
    resolve = cached_resolver(resolve)
    fronts = []
    for candidate in candidates:
        anchor = resolve(_candidate_scenario(scenario, candidate))
        points = [
            point
            for tp, batch, group, i in node_configurations(engine, anchor, batches)
            if (point := _point(group, i, batch, tp)) is not None
        ]
        per_node = anchor.cluster.node.gpus_per_node
        notes = [] if points else [f"no configuration of up to {per_node} GPUs runs this scenario"]
        fronts.append(Front(candidate, points, throughput_front(points), cost_front(points), notes))
        if progress is not None:
            progress(len(fronts), len(candidates))
    return fronts


def node_configurations(
    engine: Engine, anchor: ResolvedScenario, batches: Sequence[int], wanted: Sequence[str] | None = None
) -> Iterator[tuple[int, int, Any, int]]:
    """(TP, batch, point group, index) of every configuration of one node that runs (fits in
    memory, no guard-rail error): TP over the divisors of the node's GPUs, one point group each
    over ``batches``.

    ``wanted``: the keys the caller reads. The groups are then run for those and ``memory.fits``
    only (a fraction of a full estimate), and the guard-rails are checked on one full estimate of
    the layout at its first fitting batch: a guard-rail that refuses a plan that fits refuses the
    layout (TP against the heads, the experts, the KV heads), the same at every batch."""
    per_node = anchor.cluster.node.gpus_per_node
    keys = None if wanted is None else tuple(dict.fromkeys(("memory.fits", *wanted)))
    for tp in (d for d in range(1, per_node + 1) if per_node % d == 0):
        laid = anchor.with_scenario(with_fields(anchor.scenario, {"num_gpus": tp, "parallel.tp": tp, "parallel.pp": 1,
                                                                  "parallel.dp": 1, "parallel.ep": 1}))  # fmt: skip
        group = engine.run_points(laid, {"batch_size": list(batches)}, keys)
        fitting = [i for i in range(len(batches)) if group.get(i, "memory.fits")]
        if keys is not None:
            if fitting and not runnable(engine.run_points(laid, {"batch_size": [batches[fitting[0]]]}).estimate(0)):
                continue
            yield from ((tp, batches[i], group, i) for i in fitting)
            continue
        for i in fitting:
            if not any(w.severity == "error" for w in group.point_warnings(i)):
                yield tp, batches[i], group, i


def _point(group: Any, i: int, batch: int, tp: int) -> FrontPoint | None:
    """The figures of the configuration at point ``i`` (None when one of them is unknown)."""
    per_gpu, per_user = group.get(i, "performance.tokens_per_s_per_gpu"), group.get(i, "performance.tokens_per_s_per_user")
    tpot, ttft = group.get(i, "performance.tpot_s"), group.get(i, "performance.ttft_s")
    if not all(isinstance(v, (int, float)) for v in (per_gpu, per_user, tpot, ttft)):
        return None
    cost = group.get(i, "cost.usd_per_million_tokens")
    gpus = group.get(i, "performance.gpus") or tp
    return FrontPoint(batch, tp, int(gpus), float(per_gpu), float(per_user), float(tpot), float(ttft),
                      float(cost) if isinstance(cost, (int, float)) else None)  # fmt: skip


def throughput_front(points: Sequence[FrontPoint]) -> list[FrontPoint]:
    """The points no other beats on both throughput per GPU and tokens/s per user (higher is
    better on both), by throughput per GPU, highest first."""
    ordered = sorted(points, key=lambda p: (-p.tokens_per_s_per_gpu, -p.tokens_per_s_per_user))
    front, best_user = [], float("-inf")
    for p in ordered:
        if p.tokens_per_s_per_user > best_user:
            front.append(p)
            best_user = p.tokens_per_s_per_user
    return front


def cost_front(points: Sequence[FrontPoint]) -> list[FrontPoint]:
    """The priced points no other beats on both cost per million tokens and TPOT (lower is better
    on both), cheapest first."""
    priced = [p for p in points if p.usd_per_million_tokens is not None]
    ordered = sorted(priced, key=lambda p: (p.usd_per_million_tokens, p.tpot_s))
    front, best_tpot = [], float("inf")
    for p in ordered:
        if p.tpot_s < best_tpot:
            front.append(p)
            best_tpot = p.tpot_s
    return front
