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

The training phase is the step's weight GEMMs alone (:func:`training_roofline`): their operands
at the compute dtype, once per GEMM. Attention products at training lengths are compute-bound
and left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.core.dtypes import DType, WeightFormat
from workbench.core.hardware import Accelerator
from workbench_compute.flops import Pass
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
    """One phase on one GPU (cached by its inputs and shared: see :func:`phase_roofline`)."""

    flops: float
    weight_bytes: float
    activation_bytes: float
    attention_bytes: float
    #: weight + activation + attention bytes, and FLOPs per byte: fixed once built (read often)
    bytes: float = field(init=False)
    intensity: float = field(init=False)

    def __post_init__(self) -> None:
        total = self.weight_bytes + self.activation_bytes + self.attention_bytes
        object.__setattr__(self, "bytes", total)
        object.__setattr__(self, "intensity", self.flops / total if total else 0.0)

    def attainable_tflops(self, peak_tflops: float, bandwidth_gbps: float) -> float:
        return min(peak_tflops, self.intensity * bandwidth_gbps / 1000.0)


def _touched(shape: ModelShape, tokens: float, ep: int) -> float:
    """Expected fraction of a GPU's local experts that ``tokens`` (per DP rank) route to."""
    if not shape.moe_experts:
        return 0.0
    return 1.0 - (1.0 - shape.moe_top_k / shape.moe_experts) ** (tokens * ep)


def _weights_and_activations(
    shape: ModelShape,
    gpu: PerGpu,
    tokens: dict[str, float],
    ep: int,
    weight_bytes: float,
    act_bytes: float,
    expert_bytes: float = 0.0,
) -> tuple[float, float, float]:
    """``expert_bytes``: bytes per routed-expert weight when they differ (gpt-oss's MXFP4 experts)."""
    flops = weights = experts = act = 0.0
    for stream, count in tokens.items():
        if not count:
            continue
        flops += gpu.flops[stream] * count
        act += gpu.act[stream] * count
        weights += gpu.weights[stream]
        if gpu.expert_weights[stream]:
            experts += gpu.expert_weights[stream] * _touched(shape, count, ep)
    return flops, weights * weight_bytes + experts * (expert_bytes or weight_bytes), act * act_bytes


#: Rooflines by input (the pass by identity: passes are cached too). The GPU model is not an
#: input, so a sweep over GPUs computes each once; shape and pass are held so their ids stay unique.
_ROOFS: dict[tuple[object, ...], tuple[ModelShape, Pass, PhaseRoofline]] = {}
_ROOFS_SIZE = 4096


def _roof(key: tuple[object, ...], shape: ModelShape, p: Pass) -> PhaseRoofline | None:
    hit = _ROOFS.get(key)
    return hit[2] if hit is not None and hit[0] is shape and hit[1] is p else None


def _keep(key: tuple[object, ...], shape: ModelShape, p: Pass, roof: PhaseRoofline) -> PhaseRoofline:
    if len(_ROOFS) >= _ROOFS_SIZE:
        _ROOFS.clear()
    _ROOFS[key] = (shape, p, roof)
    return roof


def phase_roofline(
    shape: ModelShape,
    p: Pass,
    batch: int,
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
    """Prefill / forward (``decode=False``) or one decode step, per GPU (cached, shared).

    ``expert_bytes`` (0: ``weight_bytes``) prices the routed experts' weights apart, for a
    checkpoint that stores them in a format of their own (gpt-oss: MXFP4)."""
    key = (
        "phase", id(shape), id(p), batch, tp, pp, ep, decode, eager, latent, weight_bytes, act_bytes, kv_bytes,
        expert_bytes,
    )  # fmt: skip
    found = _roof(key, shape, p)
    if found is None:
        found = _keep(
            key, shape, p,
            _phase_roofline(
                shape, p, batch, tp, pp, ep, decode, eager, latent, weight_bytes, act_bytes, kv_bytes, expert_bytes
            ),
        )  # fmt: skip
    return found


def _phase_roofline(
    shape: ModelShape,
    p: Pass,
    batch: int,
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
    gpu = per_gpu(shape, tp, ep)
    flops, weights, act = _weights_and_activations(
        shape, gpu, p.tokens, ep, weight_bytes, act_bytes, expert_bytes
    )
    flops += p.attention / tp
    attention = 0.0
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
                elems += 4.0 * batch * heads * pairs * act_bytes
        attention += elems * group.layers
    if p.recurrent:
        flops += p.recurrent / tp
        if decode:
            attention += batch * _state_traffic(shape, tp, kv_bytes)
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
    """:func:`_training_roofline`, cached and shared like :func:`phase_roofline`."""
    key = ("training", id(shape), id(p), tp, pp, ep, passes, act_bytes)
    found = _roof(key, shape, p)
    if found is None:
        found = _keep(key, shape, p, _training_roofline(shape, p, tp, pp, ep, passes, act_bytes))
    return found


def _training_roofline(
    shape: ModelShape, p: Pass, tp: int, pp: int, ep: int, passes: float, act_bytes: float
) -> PhaseRoofline:
    """The weight matmuls of one training micro-batch step, per GPU.

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


def compute_dtype(dtype: DType, weights: WeightFormat) -> DType:
    """The dtype the matmuls run in.

    ``dtype`` (the scenario's compute precision), except that fp8 needs fp8 (or fp4) weights too:
    with wider weights the activations are upcast. Weight-only quantized formats (int8, int4,
    nf4, fp8 weights with 16-bit activations) are dequantized and multiply at the activation
    precision (:attr:`WeightFormat.compute_dtype` for the formats that have one).
    """
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
