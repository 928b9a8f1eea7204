"""Roofline per phase, per GPU: FLOPs, bytes moved to and from device memory, and what bounds them.

Williams, Waterman & Patterson, "Roofline" (CACM 2009): attainable = min(peak, AI x bandwidth),
with AI = FLOPs / bytes. Everything here is for **one GPU of one model replica** in one step, so
tensor-parallel shards are taken as they are laid out (Megatron-LM): column-parallel matrices
(q/k/v, gate/up, LM head) split their outputs, row-parallel ones (o, down) their inputs, K/V
projections and the K/V cache never split below one KV head per GPU, MLA's down-projections,
the router and the MLA latent cache are replicated. Pipeline stages share layers evenly (totals
/ PP). With expert parallelism a GPU holds ``num_experts / EP`` experts and serves the
(token, expert) pairs of EP data-parallel ranks, so per-GPU expert FLOPs stay ``tokens x top_k``.

Bytes counted:

* weights read once per pass, at their storage width (quantized: with scales) for inference; for
  MoE only the experts the pass's tokens touch, expected under uniform routing:
  ``local experts x (1 - (1 - top_k / E) ** (tokens x EP))``;
* activations each matmul reads and writes once (element-wise ops assumed fused);
* attention: decode reads the K/V cache at the current context (sliding-window layers: the
  window; MLA: the latent, plus the re-expanded per-head K/V written and read again when decode
  does not absorb ``kv_b_proj``) and its query and output; a full pass reads Q, K, V and writes O
  once (FlashAttention / SDPA); the eager kernel also writes and reads the score and probability
  matrices (4 x s x s).

Figures are per point of a group (float64 arrays over the batch sizes and lengths, computed in the
single estimate's order of operations); the per-GPU coefficients depend only on the model and the
layout and are cached on the model's shape.

The training phase is the step's weight GEMMs alone (:func:`training_roofline`): their operands
at the compute dtype, once per GEMM. Attention products at training lengths are compute-bound
and left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from workbench.core.dtypes import DType, WeightFormat
from workbench.core.hardware import Accelerator
from workbench_compute.flops import Floats, Ints, Pass, nonzero, when
from workbench_compute.shapes import COL, KV, ROW, STREAMS, ModelShape


@dataclass(frozen=True, slots=True)
class PerGpu:
    """Per-GPU matmul coefficients at one (TP, EP) layout."""

    flops: dict[str, float]  # matmul FLOPs per token of each stream
    act: dict[str, float]  # activation elements a token's matmuls read and write
    weights: dict[str, float]  # dense weight elements on this GPU, per stream
    expert_weights: dict[str, float]  # routed expert weight elements on this GPU, per stream


def _shard(k: int, n: int, split: str, tp: int, kv_heads: int) -> tuple[float, float]:
    if split == COL:
        return k, n / tp
    if split == ROW:
        return k / tp, n
    if split == KV:
        return k, n / min(tp, kv_heads)
    return k, n


def per_gpu(shape: ModelShape, tp: int, ep: int) -> PerGpu:
    """Per-GPU coefficients, cached on the shape per (TP, EP)."""
    cached: PerGpu | None = shape.per_gpu_cache.get((tp, ep))
    if cached is not None:
        return cached
    flops = dict.fromkeys(STREAMS, 0.0)
    act = dict.fromkeys(STREAMS, 0.0)
    weights = dict.fromkeys(STREAMS, 0.0)
    experts = dict.fromkeys(STREAMS, 0.0)
    local_experts = shape.moe_experts / ep if shape.moe_experts else 0.0
    for g in shape.gemms:
        k, n = _shard(g.k, g.n, g.split, tp, g.kv_heads)
        flops[g.stream] += 2.0 * g.fanout * k * n * g.layers
        act[g.stream] += g.fanout * (k + n) * g.layers
        if g.expert:
            experts[g.stream] += k * n * g.layers * local_experts
        else:
            weights[g.stream] += k * n * g.layers
    result = PerGpu(flops, act, weights, experts)
    shape.per_gpu_cache[(tp, ep)] = result
    return result


@dataclass(frozen=True, slots=True)
class PhaseRoofline:
    """One phase on one GPU, per point of a group (float64 arrays, or numbers every point shares)."""

    flops: Floats
    weight_bytes: Floats
    activation_bytes: Floats
    attention_bytes: Floats
    #: weight + activation + attention bytes, and FLOPs per byte: fixed once built (read often)
    bytes: Floats = field(init=False)
    intensity: Floats = field(init=False)

    def __post_init__(self) -> None:
        total = self.weight_bytes + self.activation_bytes + self.attention_bytes
        object.__setattr__(self, "bytes", total)
        some = nonzero(total)
        if some is True:
            intensity = self.flops / total
        elif some is False:
            intensity = np.zeros_like(total, dtype=np.float64) if isinstance(total, np.ndarray) else 0.0
        else:
            intensity = np.where(some, self.flops / np.where(some, total, 1.0), 0.0)
        object.__setattr__(self, "intensity", intensity)

    def attainable_tflops(self, peak_tflops: float, bandwidth_gbps: float) -> Floats:
        """min(peak, AI x bandwidth): the peak (as given) where it is the smaller or equal one."""
        ceiling = self.intensity * bandwidth_gbps / 1000.0
        if isinstance(ceiling, np.ndarray):
            return np.where(ceiling < peak_tflops, ceiling, peak_tflops)
        return min(peak_tflops, ceiling)


def _touched(shape: ModelShape, tokens: Floats, ep: int) -> Floats:
    """Expected fraction of a GPU's local experts that ``tokens`` (per DP rank) route to."""
    if not shape.moe_experts:
        return 0.0
    base = 1.0 - shape.moe_top_k / shape.moe_experts
    exponent = tokens * ep
    if not isinstance(exponent, np.ndarray):
        return 1.0 - base**exponent
    # Python's float power (the C library's pow), point by point: numpy's vectorised power may take
    # another implementation (SIMD) whose last bit can differ from a single estimate's.
    return 1.0 - np.array([base**x for x in exponent.tolist()], dtype=np.float64)


def _weights_and_activations(
    shape: ModelShape,
    gpu: PerGpu,
    tokens: dict[str, Floats],
    ep: int,
    weight_bytes: float,
    act_bytes: float,
    expert_bytes: float = 0.0,
) -> tuple[Floats, Floats, Floats]:
    """``expert_bytes``: bytes per routed-expert weight when they differ (gpt-oss's MXFP4 experts)."""
    flops: Floats = 0.0
    weights: Floats = 0.0
    experts: Floats = 0.0
    act: Floats = 0.0
    for stream, count in tokens.items():
        some = nonzero(count)
        if some is False:
            continue
        flops = when(some, flops + gpu.flops[stream] * count, flops)
        act = when(some, act + gpu.act[stream] * count, act)
        weights = when(some, weights + gpu.weights[stream], weights)
        if gpu.expert_weights[stream]:
            experts = when(some, experts + gpu.expert_weights[stream] * _touched(shape, count, ep), experts)
    return flops, weights * weight_bytes + experts * (expert_bytes or weight_bytes), act * act_bytes


def phase_roofline(
    shape: ModelShape,
    p: Pass,
    batch: Ints,
    *,
    tp: int,
    pp: int,
    ep: int,
    decode: bool,
    eager: bool,
    latent: bool,
    weight_bytes: float,
    act_bytes: float,
    kv_bytes: float,
    expert_bytes: float = 0.0,
) -> PhaseRoofline:
    """Prefill / forward (``decode=False``) or one decode step, per GPU, per point.

    ``expert_bytes`` (0: ``weight_bytes``) prices the routed experts' weights apart, for a
    checkpoint that stores them in a format of their own (gpt-oss: MXFP4)."""
    gpu = per_gpu(shape, tp, ep)
    flops, weights, act = _weights_and_activations(
        shape, gpu, p.tokens, ep, weight_bytes, act_bytes, expert_bytes
    )
    flops = flops + p.attention / tp
    attention: Floats = 0.0
    for group, q, kv, pairs in p.attention_terms:
        heads = group.heads / tp
        per_head_kv = group.kv_elems / min(tp, group.kv_heads)
        if decode:
            if not group.expand:  # per-head K/V cache, split over TP down to one KV head per GPU
                d, cached = group.d_qk + group.d_v, per_head_kv * kv_bytes
            elif latent:  # MLA latent cache, replicated over TP, attended to in latent space
                d, cached = group.d_qk_latent + group.d_v_latent, group.kv_elems_latent * kv_bytes
            else:  # MLA latent read, re-expanded K/V written and read again
                d = group.d_qk + group.d_v
                cached = group.kv_elems_latent * kv_bytes + 2.0 * group.kv_elems / tp * act_bytes
            elems = (heads * d * act_bytes + kv * cached) * batch
        else:
            elems = (q * heads * (group.d_qk + group.d_v) + kv * per_head_kv) * batch * act_bytes
            if eager:
                elems = elems + 4.0 * batch * heads * pairs * act_bytes
        attention = attention + elems * group.layers
    some = nonzero(p.recurrent)
    if some is not False:
        flops = when(some, flops + p.recurrent / tp, flops)
        if decode:
            attention = when(some, attention + batch * _state_traffic(shape, tp, kv_bytes), attention)
    return PhaseRoofline(flops / pp, weights / pp, act / pp, attention / pp)


def _state_traffic(shape: ModelShape, tp: int, kv_bytes: float) -> float:
    """Bytes one sequence's decode step reads and writes back of the recurrent state on one GPU:
    every recurrent layer's conv window and SSM state, read once and written once (heads split
    over TP, never below one head)."""
    total = 0.0
    for group in shape.recurrent:
        m = group.mixer
        ssm = 4.0 if m.ssm_state_fp32 else kv_bytes
        per_layer = m.conv_state_elements * kv_bytes + m.ssm_state_elements * ssm
        total += 2.0 * per_layer * group.layers * -(-m.heads // tp) / m.heads
    return total


def training_roofline(
    shape: ModelShape, p: Pass, *, tp: int, pp: int, ep: int, passes: float, act_bytes: float
) -> PhaseRoofline:
    """The weight matmuls of one training micro-batch step, per GPU, per point.

    Each matmul runs ``passes`` times (forward, input gradient, weight gradient, recompute: 3 or
    4; 2 or 3 with frozen weights), every time with the same three operands, so the step's
    intensity is that of its forward GEMMs. Operands are read in the compute dtype.
    """
    gpu = per_gpu(shape, tp, ep)
    flops, weights, act = _weights_and_activations(shape, gpu, p.tokens, ep, act_bytes, act_bytes)
    return PhaseRoofline(flops * passes / pp, weights * passes / pp, act * passes / pp, 0.0)


# --- compute dtype and peak rate ------------------------------------------------------------------

_SIXTEEN_BIT = (DType.BF16, DType.FP16)
#: What a dtype without native Tensor Core support runs at, in order of preference.
_FALLBACK: dict[DType, tuple[DType, ...]] = {
    DType.FP8: (DType.BF16, DType.FP16, DType.FP32),
    DType.BF16: (DType.FP32,),
    DType.FP16: (DType.FP32,),
    DType.FP32: (DType.TF32, DType.BF16, DType.FP16),
}


def compute_dtype(dtype: DType, weights: WeightFormat, *, training: bool = False) -> DType:
    """The dtype the matmuls run in.

    ``dtype`` (the scenario's compute precision), except that serving in fp8 needs fp8 (or fp4)
    weights too: with wider weights the activations are upcast. Weight-only quantized formats
    (int8, int4, nf4, fp8 weights with 16-bit activations) are dequantized and multiply at the
    activation precision (:attr:`WeightFormat.compute_dtype` for the formats that have one).
    FP8 *training* keeps 16-bit (and fp32 master) weights and casts them to fp8 for every GEMM
    (NVIDIA Transformer Engine's recipes, as Megatron-LM and torchao's float8 training run them):
    its matmuls run in fp8 whatever the stored weights.
    """
    if dtype is DType.FP8 and training:
        return DType.FP8
    if dtype is DType.FP8:
        if weights in (WeightFormat.FP8, WeightFormat.FP4):
            return DType.FP8
        native = weights.compute_dtype
        return native if native in _SIXTEEN_BIT else DType.BF16
    return dtype


def peak_tflops(gpu: Accelerator, dtype: DType) -> tuple[float, DType]:
    """(dense peak, dtype whose rate it is): ``dtype``'s own rate or, when the GPU has none, a fallback."""
    rate = gpu.dense_tflops.get(dtype)
    if rate is not None:
        return rate, dtype
    for other in _FALLBACK.get(dtype, ()):
        rate = gpu.dense_tflops.get(other)
        if rate is not None:
            return rate, other
    other = min(gpu.dense_tflops, key=gpu.dense_tflops.__getitem__)
    return gpu.dense_tflops[other], other
