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
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench_compute.recurrent import scan_backward_flops, scan_flops, step_flops
from workbench_compute.shapes import CROSS, DEC, HEAD, MAIN, PATCH, POOLER, AttentionGroup, ModelShape


def causal_pairs(s: float, window: int | None) -> float:
    """(query, key) pairs a causal mask keeps in an ``s x s`` matrix, with an optional window."""
    if window is None or window >= s:
        return s * (s + 1) / 2
    return window * (window + 1) / 2 + (s - window) * window


@dataclass(frozen=True, slots=True)
class Pass:
    """One pass over a batch: FLOPs by kind, and the tokens each stream carried.

    Passes are cached by their inputs (:func:`full_pass`, :func:`decode_step`) and shared by every
    estimate that asks for the same one: read them, never change their dict or list.
    """

    tokens: dict[str, float]
    gemm: float  # weight matmuls, whole model
    block_gemm: float  # the part inside transformer blocks
    attention: float  # Q K^T and P V
    patch: float  # patch embedding (vision)
    lora: float  # LoRA adapters (training with LoRA/QLoRA only)
    #: (group, queries per sequence, keys per query row, (query, key) pairs counted) per attention group
    attention_terms: list[tuple[AttentionGroup, float, float, float]]
    recurrent: float = 0.0  # recurrent mixers' convolution and scan (or decode-step recurrence)
    recurrent_backward: float = 0.0  # their backward
    #: the parts of ``gemm`` and ``attention`` run without gradient (DeepSeek-V3.2's indexer)
    no_grad_gemm: float = 0.0
    no_grad_attention: float = 0.0

    @property
    def total(self) -> float:
        return self.gemm + self.attention + self.lora + self.recurrent


def _gemm(shape: ModelShape, tokens: dict[str, float]) -> tuple[float, float]:
    coef, block = shape.coef, shape.block_coef
    total = blocks = 0.0
    for stream, count in tokens.items():
        if count:
            total += coef[stream] * count
            blocks += block[stream] * count
    return total, blocks


def _lora(shape: ModelShape, tokens: dict[str, float], targets: int, rank: int) -> float:
    coef = shape.lora_coef[targets]
    return rank * sum(coef[stream] * count for stream, count in tokens.items() if count)


def _attention_flops(group: AttentionGroup, batch: float, pairs: float, latent: bool = False) -> float:
    d = (group.d_qk_latent + group.d_v_latent) if latent else (group.d_qk + group.d_v)
    return 2.0 * batch * group.heads * d * pairs * group.layers


def full_pass_tokens(
    shape: ModelShape, batch: int, seq_len: int, *, head_all: bool = True
) -> dict[str, float]:
    """Tokens per stream for one pass over ``batch`` sequences of ``seq_len`` (prefill: head_all=False)."""
    s = shape.tokens_per_sample or seq_len
    tokens = {MAIN: float(batch * s)}
    if shape.is_seq2seq:
        # encoder over the input; decoder over a target as long as the input (training, forward),
        # or over its first token (prefill); cross-attention K/V over the encoder states.
        dec = batch * seq_len if head_all else batch
        tokens[DEC] = float(dec)
        tokens[CROSS] = float(batch * seq_len)
        tokens[HEAD] = float(dec)
    else:
        tokens[HEAD] = float(batch * s if head_all or shape.head_on_all_positions else batch)
    if shape.coef[POOLER]:
        tokens[POOLER] = float(batch)
    if shape.patch_tokens:
        tokens[PATCH] = float(batch * shape.patch_tokens)
    return tokens


#: Passes by input. A sweep varies the GPU, precision or layout around one (batch, length) far more
#: often than the passes change; the shape is held next to its passes so its id stays unique.
_PASSES: dict[tuple[object, ...], tuple[ModelShape, Pass]] = {}
_PASSES_SIZE = 4096


def _cached(key: tuple[object, ...], shape: ModelShape) -> Pass | None:
    hit = _PASSES.get(key)
    return hit[1] if hit is not None and hit[0] is shape else None


def _keep(key: tuple[object, ...], shape: ModelShape, p: Pass) -> Pass:
    if len(_PASSES) >= _PASSES_SIZE:
        _PASSES.clear()
    _PASSES[key] = (shape, p)
    return p


def full_pass(
    shape: ModelShape,
    batch: int,
    seq_len: int,
    discount: float,
    *,
    head_all: bool = True,
    lora_targets: int = 0,
    lora_rank: int = 0,
) -> Pass:
    """Forward (``head_all``) or prefill over ``batch`` x ``seq_len`` tokens (cached, shared)."""
    rank = lora_rank if lora_targets else 0  # the rank matters only with adapters
    key = ("full", id(shape), batch, seq_len, discount, head_all, lora_targets, rank)
    return _cached(key, shape) or _keep(
        key, shape, _full_pass(shape, batch, seq_len, discount, head_all, lora_targets, rank)
    )


def _full_pass(
    shape: ModelShape,
    batch: int,
    seq_len: int,
    discount: float,
    head_all: bool,
    lora_targets: int,
    lora_rank: int,
) -> Pass:
    tokens = full_pass_tokens(shape, batch, seq_len, head_all=head_all)
    s = shape.tokens_per_sample or seq_len
    dec_len = seq_len if head_all else 1
    attention = no_grad_attention = 0.0
    terms: list[tuple[AttentionGroup, float, float, float]] = []
    for group in shape.attention:
        if group.query_stream == MAIN:
            q = kv = s
        elif group.cross:
            q, kv = dec_len, seq_len
        else:
            q = kv = dec_len
        pairs = float(q * kv)
        if discount and group.causal and q == kv:
            pairs -= discount * (pairs - causal_pairs(q, group.window))
        flops = _attention_flops(group, batch, pairs)
        attention += flops
        no_grad_attention += flops if group.no_grad else 0.0
        terms.append((group, float(q), float(kv), pairs))
    gemm, block = _gemm(shape, tokens)
    patch = shape.coef[PATCH] * tokens.get(PATCH, 0.0)
    lora = _lora(shape, tokens, lora_targets, lora_rank) if lora_targets else 0.0
    recurrent = sum(g.layers * scan_flops(g.mixer, s) for g in shape.recurrent) * batch
    backward = sum(g.layers * scan_backward_flops(g.mixer, s) for g in shape.recurrent) * batch
    no_grad = sum(shape.no_grad_coef.get(stream, 0.0) * count for stream, count in tokens.items())
    return Pass(tokens, gemm, block, attention, patch, lora, terms, recurrent, backward, no_grad, no_grad_attention)


def decode_contexts(shape: ModelShape, seq_len: int, gen_len: int, fraction: float) -> tuple[float, float]:
    """(self-attention context, encoder length) of an average decode step."""
    if shape.is_seq2seq:
        return max(1.0, fraction * gen_len), float(seq_len)
    return seq_len + fraction * gen_len, float(seq_len)


def decode_step(
    shape: ModelShape, batch: int, seq_len: int, gen_len: int, fraction: float, latent: bool
) -> Pass:
    """:func:`_decode_step`, cached and shared like :func:`full_pass`."""
    key = ("decode", id(shape), batch, seq_len, gen_len, fraction, latent)
    found = _cached(key, shape)
    return found or _keep(key, shape, _decode_step(shape, batch, seq_len, gen_len, fraction, latent))


def _decode_step(
    shape: ModelShape, batch: int, seq_len: int, gen_len: int, fraction: float, latent: bool
) -> Pass:
    """One decode step: ``batch`` new tokens, each attending to the cached context.

    Sliding-window layers read at most ``window`` cached tokens (the cache keeps no more). MLA
    caches its compressed latent; with ``latent`` it attends in that space (weight absorption, as
    vLLM / SGLang do), otherwise every cached latent is re-expanded through ``kv_b_proj`` at every
    step before attention over per-head K/V (as transformers does); that re-expansion is counted
    with the attention products.
    """
    ctx, enc_len = decode_contexts(shape, seq_len, gen_len, fraction)
    tokens = {DEC if shape.is_seq2seq else MAIN: float(batch), HEAD: float(batch)}
    attention = 0.0
    terms: list[tuple[AttentionGroup, float, float, float]] = []
    for group in shape.attention:
        if shape.is_seq2seq and group.query_stream == MAIN:
            continue  # the encoder ran once, in prefill
        kv = enc_len if group.cross else ctx
        if group.window is not None:
            kv = min(kv, group.window)
        attention += _attention_flops(group, batch, kv, latent)
        if group.expand and not latent:  # the new token's own expansion is in the matmuls already
            attention += 2.0 * batch * max(kv - 1.0, 0.0) * group.expand * group.layers
        terms.append((group, 1.0, kv, kv))
    gemm, block = _gemm(shape, tokens)
    recurrent = sum(g.layers * step_flops(g.mixer) for g in shape.recurrent) * batch
    return Pass(tokens, gemm, block, attention, 0.0, 0.0, terms, recurrent)


@dataclass(slots=True)
class TrainingFlops:
    forward: float
    backward: float
    recompute: float

    @property
    def step(self) -> float:
        return self.forward + self.backward + self.recompute


def training_flops(fwd: Pass, frozen: bool, recompute: str) -> TrainingFlops:
    """Backward and recompute FLOPs of a training forward pass ``fwd``.

    ``frozen``: base weights frozen (LoRA/QLoRA); ``recompute``: "none", "selective" or "full".
    """
    if frozen:
        backward = (fwd.gemm - fwd.patch) + 2.0 * fwd.attention + 2.0 * fwd.lora
    else:
        backward = 2.0 * fwd.gemm - fwd.patch + 2.0 * fwd.attention
    if fwd.recurrent_backward:
        backward += fwd.recurrent_backward
    # Work under torch.no_grad (DeepSeek-V3.2's indexer) has no backward.
    backward -= (1.0 if frozen else 2.0) * fwd.no_grad_gemm + 2.0 * fwd.no_grad_attention
    if recompute == "full":
        again = fwd.block_gemm + fwd.attention + fwd.lora + fwd.recurrent
    elif recompute == "selective":
        again = fwd.attention
    else:
        again = 0.0
    return TrainingFlops(fwd.total, backward, again)
