"""Inverse questions the memory stack answers itself: fewest GPUs, and how many sequences fit.

**Fewest GPUs** (``memory.min_gpus``). The scenario's TP, PP, EP, ZeRO stage, offload, batch and
precision stay as they are; DP is added only as far as ZeRO sharding needs it (``dp`` replicas
that exist for throughput are not required to fit). If no DP degree fits, TP doubles (up to the
node size and the head count) and PP doubles (up to the block count), and the smallest
``TP x PP x DP`` over those layouts is the answer; ties go to the layout with less pipeline
parallelism. DP is at least ``ceil(EP / TP)`` since EP reuses DP ranks. None: nothing up to
:data:`MAX_GPUS` fits (a single sequence's activations or KV cache too large, for example).

**Concurrency** (``kv_cache.max_concurrency``, inference). Each rank of the TP x PP group gives
the KV cache what is left of ``gpu_memory_utilization x capacity`` after weights, activation
workspace and overhead (vLLM's profiling run does the same; under TensorRT-LLM's rule the stack
passes stages whose cache is charged 1/free_gpu_memory_fraction against the whole GPU, which
gives the cache that fraction of what is left free); a sequence of ``seq_len + gen_len``
tokens takes its block-rounded share on every rank, plus the fixed recurrent state of the
rank's state-space / linear-attention layers, and the fullest rank sets the limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import ceil, floor
from typing import Any

import numpy as np

from workbench_memory.sharding import Plan, Stage, first_stage_activations, iter_stages, min_dp

#: The largest job the search considers (the engine's solvers use the same bound).
MAX_GPUS = 16384


@dataclass(frozen=True, slots=True)
class Fit:
    gpus: int
    tp: int
    pp: int
    dp: int


def _doublings(start: int, limit: int) -> tuple[int, ...]:
    out, value, limit = [], start, max(start, limit)
    while value <= limit:
        out.append(value)
        value *= 2
    return tuple(out)


@lru_cache(maxsize=256)
def _candidates(
    tp: int, pp: int, tp_limit: int, pp_limit: int
) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...]]:
    """TP degrees, and (tp, pp) layouts by GPU count, then by less pipeline parallelism."""
    tps = _doublings(tp, tp_limit)
    layouts = sorted(
        ((t, q) for t in tps for q in _doublings(pp, pp_limit)), key=lambda tq: (tq[0] * tq[1], tq[1])
    )
    return tps, tuple(layouts)


def fewest_gpus(
    p: Plan, tp: int, pp: int, ep: int, usable: float, gpus_per_node: int, base: list[Stage], n: int
) -> list[Fit | None]:
    """The fewest GPUs that fit, for each of the ``n`` points of the plan (None: none up to
    :data:`MAX_GPUS`). ``base`` are the stages of the scenario's own layout.

    The layouts are tried in one order for every point; each point keeps its own best so far, and
    each shortcut (a layout that cannot beat that best, or that cannot fit at any DP degree) is
    taken per point, so a point's answer is the one the search gives it alone."""
    frag = p.fragmentation
    dp_floor = max(1, ceil(ep / tp))
    best = np.full(n, _NONE, dtype=np.int64)  # GPUs of the best layout so far
    best_tp, best_pp, best_dp = (np.zeros(n, dtype=np.int64) for _ in range(3))
    quick = _every((s.total(dp_floor, frag) <= usable for s in base), n)
    best[quick], best_tp[quick], best_pp[quick], best_dp[quick] = tp * pp * dp_floor, tp, pp, dp_floor
    todo = ~quick
    if todo.any():
        layers = p.c.layers
        tps, candidates = _candidates(tp, pp, min(gpus_per_node, p.model.num_attention_heads), layers)
        # TP only divides or replicates a block's tensors, so no layout keeps less per block than the
        # widest TP tried: a lower bound that rules out hopeless layouts without asking the activation
        # model about each of them. It depends on the PP degree alone, so it is decided once per degree.
        widest = p.per_layer_activations(tps[-1])
        grow = 1 + frag
        degrees = {q for _, q in candidates}
        hopeless = {q: grow * p.inflight(0, q) * -(-layers // q) * widest > usable for q in degrees}
        todo = todo & ~_every(hopeless.values(), n)
        floors = {t: max(1, ceil(ep / t)) for t in tps}
        viable = {q: todo & np.logical_not(bad) for q, bad in hopeless.items()}
        for t, q in candidates if todo.any() else ():
            floor_t = floors[t]
            trying = viable[q] & (t * q * floor_t < best)
            if not trying.any():
                continue
            trying &= np.logical_not(grow * first_stage_activations(p, t, q) > usable)
            if not trying.any():
                continue
            stages = base if (t, q) == (tp, pp) else iter_stages(p, t, q, ep)
            dp = min_dp(stages, usable, frag, floor_t, MAX_GPUS // (t * q), n)
            better = trying & (dp > 0) & (t * q * dp < best)
            best = np.where(better, t * q * dp, best)
            best_tp[better], best_pp[better], best_dp[better] = t, q, dp[better]
    return [
        Fit(g, a, b, c) if g != _NONE else None
        for g, a, b, c in zip(best.tolist(), best_tp.tolist(), best_pp.tolist(), best_dp.tolist())
    ]


#: ``best`` of a point for which no layout fits yet: more GPUs than any layout has.
_NONE = 2**62


def _every(masks: Any, n: int) -> np.ndarray:
    """``all()`` of per-point conditions (bool arrays, or one bool for every point), point by point."""
    out = np.ones(n, dtype=bool)
    for mask in masks:
        out &= mask
    return out


def max_concurrency(stages: list[Stage], usable: float, dp: int, fragmentation: float, n: int) -> Any:
    """Sequences whose KV cache and recurrent state fit next to weights, workspace and overhead
    (None: nothing cached), for each of the ``n`` points whose stages these are: an int64 array
    (an object array where only some points cache nothing), or the Python int of a group of one
    point, whose stages hold Python numbers."""
    limit: Any = None
    cached: Any = False
    for s in stages:
        per_sequence = s.kv_per_sequence + s.state_per_sequence
        free = usable - s.weights(dp) - s.activations - s.overhead(dp, fragmentation)
        if n == 1 and not isinstance(per_sequence, np.ndarray) and not isinstance(free, np.ndarray):
            if per_sequence <= 0:
                continue
            fits = max(0, floor(free / per_sequence))
            limit = fits if limit is None else min(limit, fits)
            continue
        per_sequence = np.broadcast_to(per_sequence, (n,))
        caching = per_sequence > 0
        if not caching.any():
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(caching, free / np.where(caching, per_sequence, 1.0), 0.0)
        fits = _floor_at_least_zero(ratio)
        if limit is None:
            limit, cached = fits, caching
        else:
            limit = np.where(cached & caching, np.minimum(limit, fits), np.where(caching, fits, limit))
            cached = cached | caching
    if not isinstance(limit, np.ndarray) or cached.all():
        return limit
    return np.array([int(v) if c else None for v, c in zip(limit.tolist(), cached.tolist())], dtype=object)


def _floor_at_least_zero(ratio: np.ndarray) -> np.ndarray:
    """``max(0, floor(ratio))`` as Python gives it (floor of a float is exact, so is its int64 while
    it fits; a ratio beyond that takes Python ints)."""
    floors = np.maximum(np.floor(ratio), 0.0)
    if (floors < 2.0**62).all():
        return floors.astype(np.int64)
    return np.array([max(0, floor(r)) for r in ratio.tolist()], dtype=object)
