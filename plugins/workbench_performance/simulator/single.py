"""One configuration in plain Python: the scheduler of loop.run, at a cost per event, not per slot.

With a single configuration numpy's fixed cost per call (about a microsecond, dozens of calls
per pass) outweighs the arithmetic, whatever the batch size. This engine takes the same
decisions in the same order with Python numbers, and keeps what a decode pass changes in
aggregate form, so a pass that only decodes costs O(1) plus a heap operation:

- every running decode advances together, so a request's generated tokens and context are kept
  as offsets from one counter of decode iterations ``g`` (gen = g - og, kv = g + okv);
- their number, the sum of their contexts, and how many sit at each position inside a KV block
  (which says how many cross a block boundary in the next k iterations) are kept up to date;
- the fewest tokens any of them has left comes from a heap;
- the gap before an output token is the same for every request that also decoded in the previous
  decode iteration, so one value per decode pass is kept and a request takes the largest of
  those over its stay when it leaves (or is preempted).

Iteration times are computed with the same operations in the same order as loop.run, and the
arrivals counted in a pass are summed the way numpy sums a 64-wide window, so both engines give
the same numbers to the bit (tests/plugins/test_serving_simulator.py compares them).
"""

from __future__ import annotations

import bisect
import heapq
import math

import numpy as np

from workbench_performance.simulator.inputs import CHUNKED, NO_LIMIT, STATIC, Prepared
from workbench_performance.simulator.metrics import SimulationResult

EMPTY, PREFILL, DECODE, PREEMPTED = 0, 1, 2, 3
_WINDOW = 64  # loop.run's arrival window; its sum order is reproduced below


def _window_sum(values: list[float]) -> float:
    """numpy's pairwise sum of a 64-wide window holding `values` then zeros (8 accumulators)."""
    acc = [0.0] * 8
    for i, v in enumerate(values):
        acc[i % 8] = acc[i % 8] + v if i >= 8 else v
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))


def _leap_to_arrival(x: float, a0: float, dd: float) -> int:
    """loop._leap_to_arrival for one configuration (same operations, same rounding)."""
    bq = a0 + dd / 2
    k = math.ceil(2 * x / (bq + math.sqrt(bq * bq + 2 * dd * x)))
    return int(min(max(k, 1), 1e15))


def run_one(p: Prepared) -> SimulationResult:  # noqa: C901 -- one pass of the scheduler, in order
    r = p.r
    o, a, b, d, e = (float(v[0]) for v in (p.overhead, p.prefill_token, p.decode_seq, p.context_token,
                                            p.prefill_pair))
    mode = int(p.mode[0])
    static, mix = mode == STATIC, mode == CHUNKED
    max_batch, budget = int(p.max_batch[0]), int(p.token_budget[0])
    budget_first = NO_LIMIT if static else budget
    chunk, bsize, kv_blocks = int(p.chunk[0]), int(p.block_size[0]), int(p.kv_blocks[0])
    hit = float(p.prefix_hit[0])
    prompt, output = p.prompt[0].tolist(), p.output[0].tolist()
    if p.arrival is not None:
        arrival = p.arrival[0].tolist()
        issued = r
    else:
        users = int(p.users[0])
        issued = min(users, r)
        arrival = [0.0] * issued + [math.inf] * (r - issued)
    closed = p.arrival is None

    state = [EMPTY] * r
    kv = [0] * r  # explicit for PREFILL and PREEMPTED; a decode's is g + okv
    gen = [0] * r  # explicit for PREFILL and PREEMPTED; a decode's is g - og
    target, held = [0] * r, [0] * r  # held: explicit except for a non-static decode (ceil(kv / B))
    og, okv, key = [0] * r, [0] * r, [0] * r
    last, gap = [0.0] * r, [0.0] * r
    sync = [0] * r  # a synced decode's gap also covers shared[sync:]
    first, finish = [math.nan] * r, [math.nan] * r
    max_gap, preemptions = [0.0] * r, [0] * r

    prefilling: list[int] = []  # sorted request ids
    pending: list[int] = []  # preempted, sorted
    decoding: set[int] = set()
    fresh: set[int] = set()  # decodes whose latest token is not the last decode pass's
    heap: list[tuple[int, int]] = []  # (output + og, id): a decode is done when that <= g
    residue: dict[int, int] = {}  # okv mod B -> decodes (non-static only)
    shared: list[float] = []  # per decode pass: the gap of the decodes that took part in the one before
    g = 0
    kv0 = 0  # sum of the decodes' contexts
    held_total = 0
    t = 0.0
    last_decode = 0.0  # end of the latest pass that decoded
    area = 0.0
    iterations = 0
    done = arrived = nxt = 0

    def count_arrivals(until: float) -> None:
        nonlocal arrived, area
        while arrived < r and arrival[arrived] <= until:
            window = []
            while len(window) < _WINDOW and arrived < r and arrival[arrived] <= until:
                window.append(until - arrival[arrived])
                arrived += 1
            area += _window_sum(window)
            if len(window) < _WINDOW:
                return

    def leave_decoding(i: int) -> int:
        """Take decode i out of the aggregates; returns its blocks. Its gen, kv, gap, last become explicit."""
        nonlocal kv0, held_total
        decoding.discard(i)
        gen[i] = g - og[i]
        kv[i] = g + okv[i]
        kv0 -= kv[i]
        if i in fresh:
            fresh.discard(i)
        else:
            if sync[i] < len(shared):
                gap[i] = max(gap[i], max(shared[sync[i]:]))
            last[i] = last_decode
        if static:
            blocks = held[i]
        else:
            res = okv[i] % bsize
            residue[res] -= 1
            blocks = -(-kv[i] // bsize)
        held_total -= blocks
        return blocks

    def admit(room: int, free: int, alone: bool, waiting: int, n_occ: int) -> bool:
        nonlocal held_total, nxt
        before = used_blocks = 0
        took = False
        queue = range(nxt, nxt + min(waiting, max_batch - n_occ))
        for from_queue, i in [(False, i) for i in pending] + [(True, i) for i in queue]:
            tgt = prompt[i] if from_queue else target[i]
            cached = min(math.floor(hit * prompt[i]), tgt - 1) if hit > 0 else 0
            want = min(tgt - cached, chunk)
            left = room - before
            before += want
            if mix:
                eff = min(want, left)
                fits = eff > 0
            else:
                eff = want
                fits = want <= left or (before == want and alone)
            blocks = -(-(prompt[i] + output[i] - 1) // bsize) if static else -(-(cached + eff) // bsize)
            used_blocks += blocks
            if not (fits and used_blocks <= free):
                break
            took = True
            state[i] = PREFILL
            kv[i] = cached
            held[i] = blocks
            held_total += blocks
            asks[i] = eff
            if from_queue:
                target[i] = tgt
                gen[i] = 0
                gap[i] = 0.0
                nxt += 1
                prefilling.append(i)  # newer than every request already in
            else:
                pending.remove(i)
                bisect.insort(prefilling, i)
        return took

    count_arrivals(t)
    while done < r:
        n_dec = len(decoding)
        n_occ = len(prefilling) + len(pending) + n_dec
        in_system = n_occ + (arrived - nxt)
        free = kv_blocks - held_total
        waiting = arrived - nxt
        candidates = bool(pending) or (waiting > 0 and n_occ < max_batch)
        asks: dict[int, int] = {}

        prefill_only = False
        if not mix and candidates and (not static or n_occ == 0):
            prefill_only = admit(budget_first, free, True, waiting, n_occ)
        dec_on = n_dec > 0 and not prefill_only
        if mix and prefilling:
            room = budget - n_dec
            before = 0
            for i in prefilling:
                w = min(target[i] - kv[i], chunk)
                asks[i] = min(max(room - before, 0), w)
                before += w

        # KV growth of the scheduled tokens; preempt when the free blocks do not cover it.
        need_pre: dict[int, int] = {}
        need_dec = 0
        if not static:
            for i, q in asks.items():
                if q > 0:
                    need_pre[i] = -(-(kv[i] + q) // bsize) - held[i]
            if dec_on:
                need_dec = residue.get(-g % bsize, 0)
        need = need_dec + sum(need_pre.values())
        preempted = False
        if need > free:
            preempted = True
            deficit = need - free
            running = sorted(list(decoding) + prefilling, reverse=True)  # latest arrival first
            given = 0
            for i in running:
                if given >= deficit:
                    break
                if state[i] == DECODE:
                    grows = dec_on and (g + okv[i]) % bsize == 0
                    blocks = leave_decoding(i)
                    given += blocks + grows
                    need_dec -= grows
                else:
                    given += held[i] + need_pre.pop(i, 0)
                    held_total -= held[i]
                    prefilling.remove(i)
                    asks.pop(i, None)
                preemptions[i] += 1
                target[i] = prompt[i] + gen[i]
                state[i] = PREEMPTED
                kv[i] = held[i] = 0
                bisect.insort(pending, i)
            n_dec = len(decoding)
            dec_on = n_dec > 0 and not prefill_only
            need = need_dec + sum(need_pre.values())
        free_after = free - need

        if mix and not preempted and candidates:
            used = (n_dec if dec_on else 0) + sum(asks.values())
            admit(budget - used, free_after, used == 0, waiting, n_occ)

        # The iteration's work and time (the same expressions as loop.run).
        p_tok = pairs = 0
        for i, q in asks.items():
            if q > 0:
                p_tok += q
                pairs += q * kv[i] + q * (q + 1) // 2
        nd = n_dec if dec_on else 0
        kvd = kv0 if dec_on else 0
        work = (p_tok + nd) > 0
        k = 1
        if work and p_tok == 0 and not preempted:
            while heap and (state[heap[0][1]] != DECODE or key[heap[0][1]] != heap[0][0]):
                heapq.heappop(heap)
            remaining = heap[0][0] - g
            by_kv = NO_LIMIT if static else bsize * (free // max(nd, 1))
            next_at = arrival[arrived] if arrived < r else math.inf
            x = next_at - t
            by_arrival = NO_LIMIT
            if not static and n_occ < max_batch and arrived == nxt and x < math.inf:
                by_arrival = _leap_to_arrival(x, o + b * nd + d * kvd, d * nd)
            k = max(1, min(min(remaining, by_kv), by_arrival))
        ctx = k * kvd + nd * (k * (k + 1) // 2)
        dt = k * o + a * p_tok + b * (nd * k) + d * ctx + e * pairs
        t_end = t + dt if work else t
        if work:
            iterations += k

        if nd:
            # Gaps before this pass's tokens: the first iteration's end minus the previous token,
            # and the last (longest) iteration of a leap.
            if k > 1:
                first_end = t + (o + b * nd + d * (kvd + nd))
                last_dt = o + b * nd + d * (kvd + nd * k)
                shared.append(max(first_end - last_decode, last_dt))
                for i in fresh:
                    gap[i] = max(gap[i], max(first_end - last[i], last_dt))
                    sync[i] = len(shared)
            else:
                shared.append(t_end - last_decode)
                for i in fresh:
                    gap[i] = max(gap[i], t_end - last[i])
                    sync[i] = len(shared)
            fresh.clear()
            last_decode = t_end
            if not static:
                # Blocks taken over k iterations: a context crosses a boundary when it leaves a multiple of B.
                if k == 1:
                    held_total += need_dec
                else:
                    for res, n in residue.items():
                        if n:
                            j0 = -(g + res) % bsize
                            if j0 <= k - 1:
                                held_total += n * ((k - 1 - j0) // bsize + 1)
            g += k
            kv0 += nd * k

        for i in list(asks):
            q = asks[i]
            if q <= 0 or state[i] != PREFILL:
                continue
            kv[i] += q
            if not static:
                grown = need_pre.get(i, 0)  # 0 for a request admitted in this pass
                held[i] += grown
                held_total += grown
            if kv[i] == target[i]:
                # Prefill complete: the request joins the decodes with its first (or next) token.
                prefilling.remove(i)
                state[i] = DECODE
                if gen[i] > 0:
                    gap[i] = max(gap[i], t_end - last[i])  # a recomputed request: its stall is a gap
                gen[i] += 1
                if gen[i] == 1:
                    first[i] = t_end
                last[i] = t_end
                og[i] = g - gen[i]
                okv[i] = kv[i] - g
                kv0 += kv[i]
                if not static:
                    res = okv[i] % bsize
                    residue[res] = residue.get(res, 0) + 1
                decoding.add(i)
                key[i] = output[i] + og[i]
                heapq.heappush(heap, (key[i], i))
                if nd:
                    sync[i] = len(shared)
                else:
                    fresh.add(i)

        n_end = 0
        while heap and heap[0][0] <= g:
            kk, i = heapq.heappop(heap)
            if state[i] != DECODE or key[i] != kk:
                continue
            leave_decoding(i)
            finish[i] = t_end
            max_gap[i] = gap[i]
            state[i] = EMPTY
            n_end += 1
        if n_end:
            done += n_end
            if closed:
                # Closed loop: each completion sends the next request at once.
                for j in range(issued, min(issued + n_end, r)):
                    arrival[j] = t_end
                issued = min(issued + n_end, r)

        if not work and not preempted:
            next_at = arrival[arrived] if arrived < r else math.inf
            if arrived > nxt or not next_at > t or next_at == math.inf or n_occ > 0:
                raise RuntimeError("serving simulation made no progress in configuration 0")
            t_end = next_at
        area += in_system * (t_end - t)
        t = t_end
        count_arrivals(t)

    return SimulationResult(
        arrival_s=np.array([arrival], dtype=np.float64),
        first_token_s=np.array([first]),
        finish_s=np.array([finish]),
        prompt_tokens=np.array(p.prompt),
        output_tokens=np.array(p.output),
        max_gap_s=np.array([max_gap]),
        preemptions=np.array([preemptions], dtype=np.int64),
        iterations=np.array([iterations], dtype=np.int64),
        time_in_system_s=np.array([area]),
    )


__all__ = ["run_one"]
