"""FLOP counts of the passes a scenario runs: forward, backward, recompute, prefill, one decode step.

Conventions (``tests/validation/test_flops_vs_torch.py`` holds them to what PyTorch executes for
transformers models, under ``torch.utils.flop_counter.FlopCounterMode``):

* 2 FLOPs per multiply-accumulate of every matrix product the model executes: projections
  (q/k/v/o, MLA down/up projections), the attention products ``Q K^T`` and ``P V``, the routed
  experts each token is sent to (tokens x top-k (token, expert) rows, as transformers' eager and
  batched expert kernels run them; no capacity-factor padding), shared experts, the router, the
  output head. Element-wise work (norms, activations, softmax, rotary, residual and bias adds)
  and embedding lookups are not counted.
* Attention products are counted over the full ``s x s`` score matrix, as a dense kernel computes
  them: transformers' eager and SDPA attention mask a full score matrix, sliding-window layers
  included. ``compute.causal_attention_discount`` (0 by default) removes that share of the masked
  entries for kernels that skip masked blocks (FlashAttention: causal ~ half, window ~ window/s).
  In decode a sliding-window layer's cache holds only the window, so a new token reads at most
  ``window`` keys.
* ``forward`` runs the output head on every position (what ``model(input_ids)`` executes);
  ``prefill`` runs it on the last position of each sequence only (what ``generate()``
  (``logits_to_keep=1``) and serving engines execute); an encoder's (masked-LM) head runs on
  every position in both.
* DeepSeek-V3.2's indexer (its projections and its per-head scores over every cached key) runs
  under ``torch.no_grad`` in transformers: forward only, no backward.
* Backward costs 2x forward for every matmul (gradient w.r.t. the input and w.r.t. the weight)
  and for the weightless attention products (two input gradients each). A frozen matrix (LoRA,
  QLoRA) costs 1x (input gradient only); adapters cost their forward 2x. The patch embedding of
  a vision model needs no input gradient (pixels), so it costs 1x when trained and 0 when frozen.
  Frozen matrices of the first block are counted with their input gradient although autograd can
  skip it when the embeddings are frozen and no checkpointing is on (PEFT enables it with
  gradient checkpointing): at most one block's attention projections, well under 1%.
* Full recompute (activation checkpointing per block: Megatron-LM ``--recompute-granularity
  full``, transformers' activation checkpointing) re-runs every transformer block's forward once;
  the output head is not re-run (Narayanan et al. 2021, eq. 3). PyTorch's non-reentrant
  checkpoint stops early by default and skips each block's last matmul (the down projection),
  about 1/3 of the MLP's recompute; we count the full block. Selective recompute (Korthikanti et
  al. 2022) re-runs the attention products only.
* Recurrent mixers (Mamba-2, Gated DeltaNet): their projections are matmuls like the others; their
  convolution and chunked scan are counted per sequence by :mod:`workbench_compute.recurrent`
  (``recurrent``), backward as that module says, re-run by full recompute. A decode step runs the
  recurrence on one token per sequence, whatever the context.

Every count is over a *point group* (:mod:`workbench.engine.points`): batch sizes and lengths are
int64 arrays, one entry per point, and the FLOPs float64 arrays, computed in the same order of
operations as for one point so each entry is bit for bit the single estimate's. What depends only
on the model is in :class:`~workbench_compute.shapes.ModelShape` (cached per model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.engine.points import at
from workbench_compute.recurrent import scan_backward_flops, scan_flops, step_flops
from workbench_compute.shapes import CROSS, DEC, HEAD, MAIN, PATCH, POOLER, AttentionGroup, ModelShape

Ints = Any  #: an int, or an int64 array with one entry per point
Floats = Any  #: a float, or a float64 array with one entry per point


def nonzero(x: Any) -> bool | np.ndarray:
    """``bool(x)`` per point: True or False when every point agrees (the usual case), else a mask."""
    if not isinstance(x, np.ndarray):
        return bool(x)
    if x.all():
        return True
    return x != 0 if x.any() else False


def when(cond: bool | np.ndarray, then: Any, otherwise: Any) -> Any:
    """``then if cond else otherwise`` with ``cond`` from :func:`nonzero` (a mask picks per point)."""
    if cond is True:
        return then
    if cond is False:
        return otherwise
    return np.where(cond, then, otherwise)


def causal_pairs(s: Floats, window: int | None) -> Floats:
    """(query, key) pairs a causal mask keeps in an ``s x s`` matrix, with an optional window."""
    full = s * (s + 1) / 2
    if window is None:
        return full
    if isinstance(s, np.ndarray):
        return np.where(window >= s, full, window * (window + 1) / 2 + (s - window) * window)
    if window >= s:
        return full
    return window * (window + 1) / 2 + (s - window) * window


@dataclass(frozen=True, slots=True)
class Pass:
    """One pass over a batch, per point: FLOPs by kind, and the tokens each stream carried.

    Fields are float64 arrays over the group's points, or one number every point shares.
    """

    tokens: dict[str, Floats]
    gemm: Floats  # weight matmuls, whole model
    block_gemm: Floats  # the part inside transformer blocks
    attention: Floats  # Q K^T and P V
    patch: Floats  # patch embedding (vision)
    lora: Floats  # LoRA adapters (training with LoRA/QLoRA only)
    #: (group, queries per sequence, keys per query row, (query, key) pairs counted) per attention group
    attention_terms: list[tuple[AttentionGroup, Floats, Floats, Floats]]
    recurrent: Floats = 0.0  # recurrent mixers' convolution and scan (or decode-step recurrence)
    recurrent_backward: Floats = 0.0  # their backward
    #: the parts of ``gemm`` and ``attention`` run without gradient (DeepSeek-V3.2's indexer)
    no_grad_gemm: Floats = 0.0
    no_grad_attention: Floats = 0.0

    @property
    def total(self) -> Floats:
        return self.gemm + self.attention + self.lora + self.recurrent

    def at(self, i: int) -> Pass:
        """Point ``i`` alone, in Python numbers (for the formulas someone reads)."""
        return Pass(
            {stream: at(count, i) for stream, count in self.tokens.items()},
            at(self.gemm, i),
            at(self.block_gemm, i),
            at(self.attention, i),
            at(self.patch, i),
            at(self.lora, i),
            [(group, at(q, i), at(kv, i), at(pairs, i)) for group, q, kv, pairs in self.attention_terms],
            at(self.recurrent, i),
            at(self.recurrent_backward, i),
            at(self.no_grad_gemm, i),
            at(self.no_grad_attention, i),
        )


def _gemm(shape: ModelShape, tokens: dict[str, Floats]) -> tuple[Floats, Floats]:
    coef, block = shape.coef, shape.block_coef
    total: Floats = 0.0
    blocks: Floats = 0.0
    for stream, count in tokens.items():
        some = nonzero(count)
        if some is not False:
            total = when(some, total + coef[stream] * count, total)
            blocks = when(some, blocks + block[stream] * count, blocks)
    return total, blocks


def _lora(shape: ModelShape, tokens: dict[str, Floats], targets: int, rank: int) -> Floats:
    coef = shape.lora_coef[targets]
    total: Floats = 0
    for stream, count in tokens.items():
        some = nonzero(count)
        if some is not False:
            total = when(some, total + coef[stream] * count, total)
    return rank * total


def _attention_flops(group: AttentionGroup, batch: Ints, pairs: Floats, latent: bool = False) -> Floats:
    d = (group.d_qk_latent + group.d_v_latent) if latent else (group.d_qk + group.d_v)
    return 2.0 * batch * group.heads * d * pairs * group.layers


def _float(x: Ints) -> Floats:
    return x.astype(np.float64) if isinstance(x, np.ndarray) else float(x)


def full_pass_tokens(
    shape: ModelShape, batch: Ints, seq_len: Ints, *, head_all: bool = True
) -> dict[str, Floats]:
    """Tokens per stream for one pass over ``batch`` sequences of ``seq_len`` (prefill: head_all=False)."""
    s = shape.tokens_per_sample or seq_len
    tokens = {MAIN: _float(batch * s)}
    if shape.is_seq2seq:
        # encoder over the input; decoder over a target as long as the input (training, forward),
        # or over its first token (prefill); cross-attention K/V over the encoder states.
        dec = _float(batch * seq_len if head_all else batch)
        tokens[DEC] = dec
        tokens[CROSS] = _float(batch * seq_len)
        tokens[HEAD] = dec
    else:
        tokens[HEAD] = _float(batch * s if head_all or shape.head_on_all_positions else batch)
    if shape.coef[POOLER]:
        tokens[POOLER] = _float(batch)
    if shape.patch_tokens:
        tokens[PATCH] = _float(batch * shape.patch_tokens)
    return tokens


def full_pass(
    shape: ModelShape,
    batch: Ints,
    seq_len: Ints,
    discount: float,
    *,
    head_all: bool = True,
    lora_targets: int = 0,
    lora_rank: int = 0,
) -> Pass:
    """Forward (``head_all``) or prefill over ``batch`` x ``seq_len`` tokens, per point.

    ``batch`` and ``seq_len``: int64 arrays (products of two lengths stay below 2**49 at the input
    limits, well inside int64 and exact in float64)."""
    rank = lora_rank if lora_targets else 0  # the rank matters only with adapters
    tokens = full_pass_tokens(shape, batch, seq_len, head_all=head_all)
    s = shape.tokens_per_sample or seq_len
    dec_len = seq_len if head_all else 1
    attention: Floats = 0.0
    no_grad_attention: Floats = 0.0
    terms: list[tuple[AttentionGroup, Floats, Floats, Floats]] = []
    for group in shape.attention:
        if group.query_stream == MAIN:
            q = kv = s
        elif group.cross:
            q, kv = dec_len, seq_len
        else:
            q = kv = dec_len
        pairs = _float(q * kv)
        if discount and group.causal:
            same = q is kv or nonzero(q == kv)
            if same is not False:
                pairs = when(same, pairs - discount * (pairs - causal_pairs(q, group.window)), pairs)
        flops = _attention_flops(group, batch, pairs)
        attention += flops
        no_grad_attention += flops if group.no_grad else 0.0
        terms.append((group, _float(q), _float(kv), pairs))
    gemm, block = _gemm(shape, tokens)
    patch = shape.coef[PATCH] * tokens.get(PATCH, 0.0)
    lora = _lora(shape, tokens, lora_targets, rank) if lora_targets else 0.0
    recurrent = sum(g.layers * scan_flops(g.mixer, s) for g in shape.recurrent) * batch
    backward = sum(g.layers * scan_backward_flops(g.mixer, s) for g in shape.recurrent) * batch
    no_grad = sum(shape.no_grad_coef.get(stream, 0.0) * count for stream, count in tokens.items())
    return Pass(
        tokens, gemm, block, attention, patch, lora, terms, recurrent, backward, no_grad, no_grad_attention
    )


def decode_contexts(
    shape: ModelShape, seq_len: Ints, gen_len: Ints, fraction: float
) -> tuple[Floats, Floats]:
    """(self-attention context, encoder length) of an average decode step (numbers or arrays)."""
    if shape.is_seq2seq:
        if isinstance(gen_len, np.ndarray):
            return np.maximum(1.0, fraction * gen_len), _float(seq_len)
        return max(1.0, fraction * gen_len), float(seq_len)
    return seq_len + fraction * gen_len, _float(seq_len)


def decode_step(
    shape: ModelShape, batch: Ints, seq_len: Ints, gen_len: Ints, fraction: float, latent: bool
) -> Pass:
    """One decode step: ``batch`` new tokens, each attending to the cached context.

    Sliding-window layers read at most ``window`` cached tokens (the cache keeps no more). MLA
    caches its compressed latent; with ``latent`` it attends in that space (weight absorption, as
    vLLM / SGLang do), otherwise every cached latent is re-expanded through ``kv_b_proj`` at every
    step before attention over per-head K/V (as transformers does); that re-expansion is counted
    with the attention products.
    """
    ctx, enc_len = decode_contexts(shape, seq_len, gen_len, fraction)
    new = _float(batch)
    tokens = {DEC if shape.is_seq2seq else MAIN: new, HEAD: new}
    attention: Floats = 0.0
    terms: list[tuple[AttentionGroup, Floats, Floats, Floats]] = []
    for group in shape.attention:
        if shape.is_seq2seq and group.query_stream == MAIN:
            continue  # the encoder ran once, in prefill
        kv = enc_len if group.cross else ctx
        if group.window is not None:
            # min(kv, window): the window (an int) where it is smaller; equal values as floats
            kv = np.minimum(kv, group.window) if isinstance(kv, np.ndarray) else min(kv, group.window)
        attention += _attention_flops(group, batch, kv, latent)
        if group.expand and not latent:  # the new token's own expansion is in the matmuls already
            cached = np.maximum(kv - 1.0, 0.0) if isinstance(kv, np.ndarray) else max(kv - 1.0, 0.0)
            attention += 2.0 * batch * cached * group.expand * group.layers
        terms.append((group, 1.0, kv, kv))
    gemm, block = _gemm(shape, tokens)
    recurrent = sum(g.layers * step_flops(g.mixer) for g in shape.recurrent) * batch
    return Pass(tokens, gemm, block, attention, 0.0, 0.0, terms, recurrent)


@dataclass(slots=True)
class TrainingFlops:
    forward: Floats
    backward: Floats
    recompute: Floats

    @property
    def step(self) -> Floats:
        return self.forward + self.backward + self.recompute


def training_flops(fwd: Pass, frozen: bool, recompute: str) -> TrainingFlops:
    """Backward and recompute FLOPs of a training forward pass ``fwd``.

    ``frozen``: base weights frozen (LoRA/QLoRA); ``recompute``: "none", "selective" or "full".
    """
    if frozen:
        backward = (fwd.gemm - fwd.patch) + 2.0 * fwd.attention + 2.0 * fwd.lora
    else:
        backward = 2.0 * fwd.gemm - fwd.patch + 2.0 * fwd.attention
    some = nonzero(fwd.recurrent_backward)
    if some is not False:
        backward = when(some, backward + fwd.recurrent_backward, backward)
    # Work under torch.no_grad (DeepSeek-V3.2's indexer) has no backward.
    backward = backward - ((1.0 if frozen else 2.0) * fwd.no_grad_gemm + 2.0 * fwd.no_grad_attention)
    if recompute == "full":
        again = fwd.block_gemm + fwd.attention + fwd.lora + fwd.recurrent
    elif recompute == "selective":
        again = fwd.attention
    else:
        again = 0.0
    return TrainingFlops(fwd.total, backward, again)
