"""The simulation loop: one engine iteration (or a run of identical decode iterations) per pass.

Every pass advances every unfinished configuration by one scheduling decision, in numpy over
C x S slot arrays. A configuration that is only decoding, with nothing able to join the batch,
leaps over k iterations at once: its batch does not change until a request finishes, a KV block
runs out or an admissible request arrives, and the iteration times meanwhile form an arithmetic
series (each adds one context token per sequence), so k of them cost one pass. That keeps the
number of passes near the number of events (arrivals, completions, prefills), not tokens.

run_arrays is the engine over many configurations; run sends up to ONE_BY_ONE configurations one
by one to single.run_one, the same scheduler in plain Python, which gives the same numbers to the
bit at a fraction of the time per pass.
"""

from __future__ import annotations

import numpy as np

from workbench_performance.simulator.inputs import (
    NO_LIMIT,
    STATIC,
    Policy,
    Prepared,
    StepModel,
    Workload,
    one,
    prepare,
)
from workbench_performance.simulator.metrics import SimulationResult, stack
from workbench_performance.simulator.single import run_one
from workbench_performance.simulator.scheduler import DECODE, EMPTY, PREEMPTED, PREFILL, Slots, ceil_div

_ARRIVAL_WINDOW = 64  # arrivals looked at per pass when counting who has arrived (any number works)


def simulate(step: StepModel, policy: Policy, workload: Workload) -> SimulationResult:
    """Simulate every configuration's request stream; results per configuration and request."""
    return run(prepare(step, policy, workload))


#: Up to this many configurations, each runs on its own in plain Python (single.py): numpy's
#: fixed cost per call, paid dozens of times per pass, outweighs the arithmetic until the
#: configurations are many (measured: 100 configurations x 1,000 requests take about half the
#: time one by one; tests/benchmarks/bench_simulator.py).
ONE_BY_ONE = 256


def run(p: Prepared) -> SimulationResult:
    """Simulate prepared inputs: configuration by configuration when few, all together when many."""
    if p.c == 1:
        return run_one(p)
    if p.c > ONE_BY_ONE:
        return run_arrays(p)
    return stack([run_one(one(p, i)) for i in range(p.c)])


def _leap_to_arrival(x: np.ndarray, a0: np.ndarray, dd: np.ndarray) -> np.ndarray:
    """Fewest iterations k >= 1 whose total time k*a0 + dd*k(k+1)/2 reaches x (x > 0).

    The positive root of the quadratic, rounded up; in the rare tie where rounding lands one
    iteration off, the waiting request is looked at one iteration early (an extra pass) or late.
    """
    bq = a0 + dd / 2
    return np.clip(np.ceil(2 * x / (bq + np.sqrt(bq * bq + 2 * dd * x))), 1, 1e15).astype(np.int64)


def run_arrays(p: Prepared) -> SimulationResult:
    c, r = p.c, p.r
    sl = Slots(p)
    rows = sl.rows
    static1 = p.mode == STATIC
    mix = sl.mix
    block = p.block_size
    o, a, b, d, e = p.overhead, p.prefill_token, p.decode_seq, p.context_token, p.prefill_pair
    t = np.zeros(c)
    done = np.zeros(c, dtype=np.int64)
    arrived = np.zeros(c, dtype=np.int64)  # requests with arrival <= t
    area = np.zeros(c)  # integral of the number of requests in the system over time
    iterations = np.zeros(c, dtype=np.int64)
    issued = np.minimum(p.users, r) if p.users is not None else None
    first = np.full((c, r), np.nan)
    finish = np.full((c, r), np.nan)
    max_gap = np.zeros((c, r))
    window = np.arange(_ARRIVAL_WINDOW)[None, :]
    arrival = sl.arrival

    cidx = np.arange(c)
    # Constants reused every pass (never written in place).
    no_config, every_config = np.zeros(c, dtype=bool), np.ones(c, dtype=bool)
    one_each, no_limit = np.ones(c, dtype=np.int64), np.full(c, NO_LIMIT)
    no_tokens = np.zeros(c, dtype=np.int64)
    # Static batches are bounded by max_batch and KV only, not by a token budget.
    budget_first = np.where(static1, NO_LIMIT, p.token_budget)

    # The arrival time of the first request not yet arrived (inf past the end). The queue's head
    # has arrived exactly when arrived > next, and when it has not, its arrival is this one.
    next_at = np.empty(c)

    def look_ahead() -> None:
        next_at[:] = np.where(arrived < r, arrival[cidx, np.minimum(arrived, r - 1)], np.inf)

    def count_arrivals(until: np.ndarray) -> None:
        # Requests arriving inside the pass contribute their time in the system up to its end.
        if not (next_at <= until).any():
            return  # the common case: nobody new
        while True:
            idx = arrived[:, None] + window
            inside = idx < r
            at = arrival[rows, np.minimum(idx, r - 1)]
            hit = inside & (at <= until[:, None])
            n = hit.sum(1)
            area[:] += np.where(hit, until[:, None] - at, 0.0).sum(1)
            arrived[:] += n
            if not (n == _ARRIVAL_WINDOW).any():
                look_ahead()
                return

    look_ahead()
    count_arrivals(t)
    while True:
        active = done < r
        if not active.any():
            break
        occupied = sl.req >= 0
        n_occupied = occupied.sum(1)
        in_system = n_occupied + (arrived - sl.next)  # running, preempted, queued
        free = p.kv_blocks - sl.held.sum(1)
        sl.ask[:] = 0
        # Whether anyone could be admitted: a preempted request, or an arrived head of the queue
        # with a free slot (cheap; skips the admission arrays in most passes).
        candidates = (sl.state == PREEMPTED).any(1) | ((arrived > sl.next) & (n_occupied < p.max_batch))

        waiting = arrived - sl.next
        if candidates.any():
            sl.widen(int((n_occupied + np.minimum(p.max_batch - n_occupied, waiting)).max()))

        # Static and continuous batching: admission first; an iteration that admits prefills
        # only (running decodes wait), as vLLM's original scheduler does.
        allow = active & ~mix & candidates & (~static1 | (n_occupied == 0))
        prefill_only = no_config
        if allow.any():
            prefill_only = sl.admit(t, allow, budget_first, free, every_config, waiting) & allow
        decoding = (sl.state == DECODE) & ~prefill_only[:, None]
        sl.ask = np.where(decoding, 1, sl.ask)
        # Chunked prefill: prefills under way take their next chunk after the decodes.
        cont = (sl.state == PREFILL) & (sl.ask == 0) & mix[:, None]
        if cont.any():
            sl.chunk_running_prefills(cont, p.token_budget - decoding.sum(1))

        # KV growth of the scheduled tokens; preempt when the free blocks do not cover it.
        grow = (sl.ask > 0) & ~sl.static
        need = np.where(grow, ceil_div(sl.kv + sl.ask, sl.block) - sl.held, 0)
        short = need.sum(1) > free
        preempted = no_config
        if short.any():
            victim = sl.preempt(need, short, free)
            need = np.where(victim, 0, need)
            preempted = victim.any(1)
        free_after = free - need.sum(1)

        # Chunked prefill: new requests fill the budget left (none after a preemption).
        allow = active & mix & ~preempted & candidates
        if allow.any():
            used = sl.ask.sum(1)
            sl.admit(t, allow, p.token_budget - used, free_after, used == 0, waiting)

        # The iteration's work and time.
        state, ask, kv = sl.state, sl.ask, sl.kv
        dec = (state == DECODE) & (ask > 0)
        pre = (state == PREFILL) & (ask > 0)
        if pre.any():
            p_tok = np.where(pre, ask, 0).sum(1)
            pairs = np.where(pre, ask * kv + ask * (ask + 1) // 2, 0).sum(1)
        else:
            p_tok = pairs = no_tokens
        n_dec = dec.sum(1)
        kv0 = np.where(dec, kv, 0).sum(1)
        work = (p_tok + n_dec) > 0

        k = one_each
        pure = work & (p_tok == 0) & ~preempted
        if pure.any():
            remaining = np.where(dec, sl.output - sl.gen, NO_LIMIT).min(1)
            # Every sequence crosses at most ceil(k / block) block boundaries in k steps.
            by_kv = np.where(static1, NO_LIMIT, block * (free // np.maximum(n_dec, 1)))
            x = next_at - t
            waits = ~static1 & (n_occupied < p.max_batch) & (arrived == sl.next) & (x < np.inf)
            by_arrival = no_limit
            if (waits & pure).any():
                a0 = o + b * n_dec + d * kv0
                leap = _leap_to_arrival(np.where(waits, x, 1.0), a0, d * n_dec)
                by_arrival = np.where(waits, leap, NO_LIMIT)
            k = np.where(pure, np.maximum(1, np.minimum(np.minimum(remaining, by_kv), by_arrival)), 1)
        # Context tokens read over the k iterations: sum over j = 1..k of (kv0 + n_dec * j).
        ctx = k * kv0 + n_dec * (k * (k + 1) // 2)
        dt = k * o + a * p_tok + b * (n_dec * k) + d * ctx + e * pairs
        t_end = np.where(work, t + dt, t)
        iterations += np.where(work, k, 0)

        # Output-token gaps: the first iteration's end minus the previous token, and the last
        # (longest) iteration of a leap.
        if pure.any() and (k > 1).any():
            first_end = np.where(k > 1, t + (o + b * n_dec + d * (kv0 + n_dec)), t_end)
            last_dt = np.where(k > 1, o + b * n_dec + d * (kv0 + n_dec * k), 0.0)
            longest = np.maximum(first_end[:, None] - sl.last, last_dt[:, None])
        else:
            longest = t_end[:, None] - sl.last
        sl.gap = np.where(dec, np.maximum(sl.gap, longest), sl.gap)
        sl.gen += np.where(dec, k[:, None], 0)
        sl.kv = kv = np.where(dec, kv + k[:, None], np.where(pre, kv + ask, kv))
        completed = pre & (kv == sl.target)
        if completed.any():
            sl.state = np.where(completed, DECODE, sl.state)
            resumed = completed & (sl.gen > 0)  # a recomputed request: its stall is a gap
            sl.gap = np.where(resumed, np.maximum(sl.gap, t_end[:, None] - sl.last), sl.gap)
            sl.gen += completed
            ci, si = np.nonzero(completed & (sl.gen == 1))
            first[ci, sl.req[ci, si]] = t_end[ci]
        sl.last = np.where(dec | completed, t_end[:, None], sl.last)
        # KV blocks: this iteration's growth was allocated above; a leap's is counted here.
        sl.held += need
        if (k > 1).any():
            sl.held = np.where(dec & ~sl.static, ceil_div(sl.kv, sl.block), sl.held)

        ended = (sl.state == DECODE) & (sl.gen >= sl.output)
        if ended.any():
            ci, si = np.nonzero(ended)
            ids = sl.req[ci, si]
            finish[ci, ids] = t_end[ci]
            max_gap[ci, ids] = sl.gap[ci, si]
            sl.req[ci, si] = -1
            sl.state[ci, si] = EMPTY
            sl.held[ci, si] = 0
            n_end = ended.sum(1)
            done += n_end
            if issued is not None:
                # Closed loop: each completion sends the next request at once.
                j = np.arange(sl.width)[None, :]
                ci, j = np.nonzero((j < n_end[:, None]) & (issued[:, None] + j < r))
                arrival[ci, issued[ci] + j] = t_end[ci]
                issued[:] = np.minimum(issued + n_end, r)
                look_ahead()

        # A configuration with nothing to run waits for its next arrival.
        idle = active & ~work
        if idle.any():
            nxt = next_at
            idle &= ~preempted  # a pass that only preempted runs again at the same time
            stuck = idle & ((arrived > sl.next) | ~(nxt > t) | ~np.isfinite(nxt) | (n_occupied > 0))
            if stuck.any():
                where = int(np.argmax(stuck))
                raise RuntimeError(f"serving simulation made no progress in configuration {where}")
            t_end = np.where(idle, nxt, t_end)
        area += in_system * (t_end - t)
        t = t_end
        count_arrivals(t)

    return SimulationResult(
        arrival_s=np.array(arrival, dtype=np.float64),
        first_token_s=first,
        finish_s=finish,
        prompt_tokens=np.array(p.prompt),
        output_tokens=np.array(p.output),
        max_gap_s=max_gap,
        preemptions=sl.preemptions,
        iterations=iterations,
        time_in_system_s=area,
    )


__all__ = ["run", "run_arrays", "simulate"]
