"""The scheduler's state and decisions, for C configurations at once.

State lives in C x S slot arrays (S = the largest max_batch): a slot holds one admitted request
from admission to completion. A preempted request keeps its slot but no KV: vLLM puts a
preempted request at the head of the waiting queue and admits nothing behind it until it is
back, so the requests running plus those preempted never exceed max_batch, and re-admission
takes the slot back. The waiting queue itself is the request index range [next, R): requests
are served in arrival order, so it needs no array of its own.

Per request (C x R) only the timestamps are kept. Work per iteration is O(C x S), independent of R.

Scheduling ideas follow vLLM's scheduler (Kwon et al., SOSP 2023, "Efficient Memory Management
for Large Language Model Serving with PagedAttention": paged KV blocks, admission by free
blocks, preemption of the latest arrival with recomputation) and Sarathi-Serve (Agrawal et al.,
OSDI 2024: a token budget per iteration filled by decodes first, then prefill chunks).
"""

from __future__ import annotations

import numpy as np

from workbench_performance.simulator.inputs import CHUNKED, NO_LIMIT, STATIC, Prepared

EMPTY, PREFILL, DECODE, PREEMPTED = 0, 1, 2, 3


def ceil_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return -(-a // b)


class Slots:
    """Slot arrays and per-configuration counters; methods change them in place."""

    def __init__(self, p: Prepared) -> None:
        c, r = p.c, p.r
        self.p = p
        # Slot arrays start narrow and widen as the batch grows (up to the largest max_batch):
        # at light load a few slots are busy, and every pass costs in proportion to the width.
        self.s = int(min(p.max_batch.max(), r))
        s = self.width = min(self.s, 16)
        self.rows = np.arange(c)[:, None]
        self.queue_ids = np.arange(s)[None, :]
        self.static = (p.mode == STATIC)[:, None]
        self.mix = p.mode == CHUNKED
        self.block = p.block_size[:, None]
        self.any_mix, self.all_mix = bool(self.mix.any()), bool(self.mix.all())
        self.any_static = bool(self.static.any())
        self.any_hit = bool((p.prefix_hit > 0).any())
        self.hit = p.prefix_hit[:, None]
        self.req = np.full((c, s), -1, dtype=np.int64)
        self.state = np.zeros((c, s), dtype=np.int8)
        self.kv = np.zeros((c, s), dtype=np.int64)  # tokens in the KV cache
        self.target = np.zeros((c, s), dtype=np.int64)  # tokens the current prefill must reach
        self.gen = np.zeros((c, s), dtype=np.int64)  # output tokens produced so far
        self.prompt = np.zeros((c, s), dtype=np.int64)
        self.output = np.zeros((c, s), dtype=np.int64)
        self.held = np.zeros((c, s), dtype=np.int64)  # KV blocks allocated
        self.ask = np.zeros((c, s), dtype=np.int64)  # tokens scheduled this iteration
        self.last = np.zeros((c, s), dtype=np.float64)  # time of the latest output token
        self.gap = np.zeros((c, s), dtype=np.float64)  # longest gap between output tokens
        self.next = np.zeros(c, dtype=np.int64)  # head of the waiting queue (request index)
        if p.arrival is not None:
            self.arrival = p.arrival
        else:
            # Closed loop: arrivals are written as completions release the next request.
            self.arrival = np.full((c, r), np.inf)
            self.arrival[np.arange(r)[None, :] < p.users[:, None]] = 0.0
        self.preemptions = np.zeros((c, r), dtype=np.int64)

    _SLOT_FIELDS = ("req", "state", "kv", "target", "gen", "prompt", "output", "held", "ask", "last", "gap")

    def widen(self, needed: int) -> None:
        """Make room for `needed` slots per configuration (doubling, to widen rarely)."""
        if needed <= self.width:
            return
        width = min(self.s, max(needed, 2 * self.width))
        extra = width - self.width
        for name in self._SLOT_FIELDS:
            a = getattr(self, name)
            pad = np.full((a.shape[0], extra), -1 if name == "req" else 0, dtype=a.dtype)
            setattr(self, name, np.concatenate([a, pad], 1))
        self.queue_ids = np.arange(width)[None, :]
        self.width = width

    # -- admission --------------------------------------------------------------------------

    def admit(
        self,
        t: np.ndarray,
        allow: np.ndarray,
        room: np.ndarray,
        free: np.ndarray,
        alone: np.ndarray,
        waiting: np.ndarray,
    ) -> np.ndarray:
        """Admit waiting requests first come, first served; returns which configurations admitted.

        allow: configurations that may admit now; room: tokens left in the iteration's budget;
        free: KV blocks free; alone: nothing else is scheduled yet (an over-long prompt may go);
        waiting: requests arrived and still queued (bounds how many queue entries to look at).
        Candidates are the preempted requests (by arrival), then the queue's head. Admission
        stops at the first that does not fit (head-of-line, as vLLM: no overtaking).
        """
        p, rows = self.p, self.rows
        pend = (self.state == PREEMPTED) & allow[:, None]
        kp = int(pend.sum(1).max()) if pend.any() else 0
        if kp:
            order = np.argsort(np.where(pend, self.req, NO_LIMIT), axis=1, kind="stable")[:, :kp]
            valid1 = pend[rows, order]
            prompt1 = self.prompt[rows, order]
            out1 = self.output[rows, order]
            target1 = self.target[rows, order]
        slots_free = p.max_batch - (self.req >= 0).sum(1)
        # Only the queue entries that could be admitted now are looked at: the arrays stay as
        # narrow as the number of newcomers, not the batch (empty slots always suffice: see widen).
        kq = int(np.minimum(np.where(allow, waiting, 0), slots_free).max())
        qidx = self.next[:, None] + self.queue_ids[:, :kq]
        inq = qidx < p.r
        qidx = np.minimum(qidx, p.r - 1)
        valid2 = inq & (self.arrival[rows, qidx] <= t[:, None])
        valid2 &= self.queue_ids[:, :kq] < slots_free[:, None]
        valid2 &= allow[:, None]
        prompt2 = p.prompt[rows, qidx]
        out2 = p.output[rows, qidx] if self.any_static else prompt2  # only static reserves outputs
        if kp:
            valid = np.concatenate([valid1, valid2], 1)
            pad = np.concatenate([~valid1, np.zeros_like(valid2)], 1)
            prompt = np.concatenate([prompt1, prompt2], 1)
            out = np.concatenate([out1, out2], 1)
            target = np.concatenate([target1, prompt2], 1)
        else:
            valid, prompt, out, target = valid2, prompt2, out2, prompt2
        # Prefix-cache hits skip computing part of the prompt; the last token is always computed
        # (it produces the first output token). The cached tokens still hold KV blocks.
        if self.any_hit:
            cached = np.minimum(np.floor(self.hit * prompt).astype(np.int64), target - 1)
        else:
            cached = np.zeros_like(target)
        want = np.where(valid, np.minimum(target - cached, p.chunk[:, None]), 0)
        before = np.cumsum(want, 1) - want
        left = room[:, None] - before
        # Chunked: the last admitted request may take a partial chunk (what is left of the budget).
        # Otherwise a prompt is admitted whole, or not at all. (Branches in Python when every
        # configuration has the same kind: fewer array operations in the common case.)
        if self.any_mix:
            eff_mix = np.minimum(want, left)
        if self.all_mix:
            eff, fits_budget = eff_mix, eff_mix > 0
        else:
            eff = want
            fits_budget = (want <= left) | ((before == 0) & alone[:, None])
            if self.any_mix:
                mix = self.mix[:, None]
                eff = np.where(mix, eff_mix, want)
                fits_budget = np.where(mix, eff_mix > 0, fits_budget)
        blocks = ceil_div(cached + eff, self.block)
        if self.any_static:
            # Static batching reserves the whole output's KV up front (no growth, no preemption).
            blocks = np.where(self.static, ceil_div(prompt + out - 1, self.block), blocks)
        blocks[~valid] = 0
        fits_kv = np.cumsum(blocks, 1) <= free[:, None]
        ok = valid & fits_budget & fits_kv
        if kp:
            ok |= pad
            take = np.logical_and.accumulate(ok, axis=1) & ~pad
            take1, take2 = take[:, :kp], take[:, kp:]
            if take1.any():
                ci, j = np.nonzero(take1)
                si = order[ci, j]
                self.state[ci, si] = PREFILL
                self.kv[ci, si] = cached[ci, j]
                self.held[ci, si] = blocks[ci, j]
                self.ask[ci, si] = eff[ci, j]
            cached2, eff2, blocks2 = cached[:, kp:], eff[:, kp:], blocks[:, kp:]
        else:
            take2 = np.logical_and.accumulate(ok, axis=1)
            cached2, eff2, blocks2 = cached, eff, blocks
        n_new = take2.sum(1)
        if n_new.any():
            # The m-th admitted request of the queue goes to the m-th empty slot.
            empty = self.req < 0
            rank = np.cumsum(empty, 1) - 1
            ci, si = np.nonzero(empty & (rank < n_new[:, None]))
            j = rank[ci, si]
            ids = self.next[ci] + j
            self.req[ci, si] = ids
            self.state[ci, si] = PREFILL
            self.kv[ci, si] = cached2[ci, j]
            self.target[ci, si] = p.prompt[ci, ids]
            self.gen[ci, si] = 0
            self.prompt[ci, si] = p.prompt[ci, ids]
            self.output[ci, si] = p.output[ci, ids]
            self.held[ci, si] = blocks2[ci, j]
            self.ask[ci, si] = eff2[ci, j]
            self.gap[ci, si] = 0.0
            self.next += n_new
        return take.any(1) if kp else n_new > 0

    # -- running requests ---------------------------------------------------------------------

    def chunk_running_prefills(self, cont: np.ndarray, room: np.ndarray) -> None:
        """Give prefills already under way their next chunk from the budget left, oldest first."""
        want = np.where(cont, np.minimum(self.target - self.kv, self.p.chunk[:, None]), 0)
        order = np.argsort(np.where(cont, self.req, NO_LIMIT), axis=1, kind="stable")
        w = want[self.rows, order]
        eff = np.clip(room[:, None] - (np.cumsum(w, 1) - w), 0, w)
        got = np.empty_like(eff)
        got[self.rows, order] = eff
        self.ask = np.where(cont, got, self.ask)

    def preempt(self, need: np.ndarray, short: np.ndarray, free: np.ndarray) -> np.ndarray:
        """Free KV where the running requests need more blocks than are free; returns the victims.

        Victims are taken from the latest arrival backwards (vLLM's recompute policy) until the
        rest fit; a victim gives back its blocks and no longer needs new ones. Inputs are checked
        so that the oldest request alone always fits, so this always ends.
        """
        running = ((self.state == PREFILL) | (self.state == DECODE)) & short[:, None]
        order = np.argsort(np.where(running, -self.req, NO_LIMIT), axis=1, kind="stable")
        rows = self.rows
        give = np.where(running, self.held + need, 0)[rows, order]
        deficit = need.sum(1) - free
        victim_sorted = running[rows, order] & ((np.cumsum(give, 1) - give) < deficit[:, None])
        victim = np.zeros_like(running)
        victim[rows, order] = victim_sorted
        ci, si = np.nonzero(victim)
        self.preemptions[ci, self.req[ci, si]] += 1
        # Recompute: the prompt and every token generated so far are prefilled again.
        g = self.gen[ci, si]
        self.target[ci, si] = self.prompt[ci, si] + g
        self.state[ci, si] = PREEMPTED
        self.kv[ci, si] = 0
        self.held[ci, si] = 0
        self.ask[ci, si] = 0
        return victim
