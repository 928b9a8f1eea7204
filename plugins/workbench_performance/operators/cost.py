"""Time of the kernels of one forward pass: each kernel at the efficiency of its shape.

Every kernel costs ``max(compute time, memory time) + kernel latency``:

* **GEMM** of ``M`` token rows by a ``K x N`` weight: ``2 M N K`` FLOPs at
  ``peak x gemm_efficiency[dtype] x fill(M) x M/(M + m_half) x K/(K + k_half) x N/(N + n_half)``,
  the saturating factors being the cost of few rows per expert in a grouped (MoE) GEMM, 1 for
  plain GEMMs (256 rows per expert run at two thirds of the rate of 4,096) and the
  prologue/epilogue of thin matrices;
  bytes: the weight plus the activations it reads and
  writes, at the achieved copy bandwidth. ``fill(M) = min(M / tile_m, 1)``: a GEMM of fewer rows
  than the smallest M-tile pays for a whole tile (8 decode rows in a 64-row tile use an eighth of
  the tensor cores); above it, libraries pick tiles that fit (no wave-quantization steps, so more
  rows never make a pass faster). Routed experts: a grouped GEMM per layer over the
  experts the tokens touch, each with the rows routed to it.
* **Attention**: prefill FLOPs at ``attention_efficiency[dtype] x s / (s + attention_half_seq)``;
  decode reads the KV cache at the achieved bandwidth.
* **Memory-bound kernels** (norms + residual adds, activation, rotary; router, permutation and
  un-permutation in MoE layers): their bytes at the achieved bandwidth.
* Every kernel adds ``min_kernel_s``: launch, ramp-up and tail, during which it neither computes
  nor streams at its rate (a 64-row FP8 GEMM that streams 15 MB of weights on an H800 reaches
  1.7 TB/s, not the 3 TB/s of a long copy, because of these microseconds).
* **Weight-only quantized GEMMs** (weights stored in fewer bytes than the activations, math in
  16 bits; serving only): a vector-core GEMV up to the engine's row limit (llama.cpp: 8 rows),
  above it a dequantizing tensor-core GEMM padded to a 16-row tile (:mod:`.quantized`), never
  the 64-row tile of a dense GEMM, which made a batch-1 decode of 4-bit weights compute-bound.

The efficiencies are kernel-level data per GPU architecture (:mod:`.profiles`). All arithmetic is
numpy over the GEMM groups, and over configurations when ``tokens`` (and the other per-pass
figures) are arrays of shape ``(points,)``: one call costs a whole sweep's passes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from workbench_performance.arrays import power
from workbench_performance.operators.graph import ForwardGraph
from workbench_performance.operators.profiles import KernelProfile
from workbench_performance.operators.quantized import GEMV_FLOPS_PER_WEIGHT_ROW, QUANT_TILE_M


@dataclass(slots=True)
class GraphArrays:
    """The GEMM groups of a :class:`ForwardGraph` as arrays, per pipeline stage."""

    names: tuple[str, ...]
    n: np.ndarray
    k: np.ndarray
    count: np.ndarray  # GEMMs per forward pass of one stage
    kernels: np.ndarray  # kernel launches per forward pass of one stage (a grouped GEMM: one per layer)
    expert: np.ndarray  # bool
    head: np.ndarray  # bool
    graph: ForwardGraph
    pp: int
    has_head: bool  # an output head, whose rows differ from the tokens' in prefill (one per prompt)
    ones: np.ndarray  # one per group


def graph_arrays(graph: ForwardGraph, pp: int) -> GraphArrays:
    gemms = graph.gemms
    count = np.array([g.count for g in gemms], dtype=float) / pp
    expert = np.array([g.expert for g in gemms], dtype=bool)
    local = graph.local_experts or 1.0
    kernels = np.where(expert, count / local, count)
    return GraphArrays(
        tuple(g.name for g in gemms),
        np.array([g.n for g in gemms], dtype=float),
        np.array([g.k for g in gemms], dtype=float),
        count,
        kernels,
        expert,
        np.array([g.head for g in gemms], dtype=bool),
        graph,
        pp,
        bool(any(g.head for g in gemms)),
        np.ones(len(gemms)),
    )


@dataclass(slots=True)
class PassKernels:
    """Kernel times of one forward pass of one stage, by what bounds each kernel."""

    memory_s: object  # float or array over points: kernels bound by memory bandwidth
    compute_s: object  # kernels bound by compute
    latency_s: object  # launch and tail latency of every kernel
    gemm_s: object  # all GEMMs (any bound), for the breakdown
    attention_s: object
    elementwise_s: object
    gemm_flops: object
    rows: tuple[tuple[str, object, str], ...] | None = None  # (kernel group, time, bound) when asked


def pass_kernels(
    ga: GraphArrays,
    prof: KernelProfile,
    *,
    dtype: str,
    peak_flops: float,
    bandwidth: float,
    tokens,  # noqa: ANN001 - float or array (points,): token rows of the pass on one stage
    prompts,  # noqa: ANN001 - rows of the output head (prefill: one per prompt; decode: tokens)
    ep: int,
    act_bytes: float,
    weight_bytes: float,
    expert_weight_bytes: float,
    attention_flops,  # noqa: ANN001 - attention FLOPs of the pass on one stage
    attention_bytes,  # noqa: ANN001 - KV-cache bytes the attention kernels read (decode)
    context,  # noqa: ANN001 - keys per query the attention kernel runs over
    gemm_scale: float = 1.0,
    bandwidth_scale: float = 1.0,
    gemm_override: float | None = None,
    casts: bool = False,
    load_imbalance: float = 1.0,
    square_prompts=0.0,  # noqa: ANN001 - prompts (or sequences) whose whole causal square this pass attends
    eager: bool = False,
    breakdown: bool = False,
    vector_flops: float = 0.0,
    gemv_rows: float = 0.0,
) -> PassKernels:
    """Kernel times of one forward pass of one stage.

    ``gemm_scale`` and ``bandwidth_scale`` multiply the profile's GEMM/attention and bandwidth
    efficiencies (the assumptions' plausible ranges); ``gemm_override`` (the scenario's --mfu)
    replaces both compute efficiencies outright. ``vector_flops`` (the GPU's non-tensor FP32
    FLOP/s) turns on the weight-only quantized kernels for the GEMM groups whose weights are
    narrower than the activations; 0 (training, or no figure) keeps every GEMM dense. Up to
    ``gemv_rows`` token rows those run as a GEMV on the vector cores (llama.cpp's dispatch for
    GGUF weights; 0: always the tensor-core path).
    """
    graph = ga.graph
    st = _static(ga, prof, dtype, weight_bytes, expert_weight_bytes, act_bytes, casts)
    # (the scales are arrays over a point group that draws assumption values)
    bw = bandwidth * _min(prof.bandwidth_efficiency * bandwidth_scale, 1.0)
    eff_max = gemm_override or _min(prof.gemm_efficiency_for(dtype) * gemm_scale, 1.0)
    att_max = gemm_override or _min(prof.attention_efficiency_for(dtype) * gemm_scale, 1.0)
    floor = prof.min_kernel_s
    drawn = [x for x in (bw, eff_max, att_max, load_imbalance) if isinstance(x, np.ndarray)]
    if drawn and not isinstance(tokens, np.ndarray):  # one pass shape, many assumption draws
        tokens = np.full(drawn[0].shape, float(tokens))
    array = isinstance(tokens, np.ndarray)
    rows, count = _rows_and_count(ga, tokens, prompts, ep, _per_row(load_imbalance))
    flops = rows * st.two_nk * count
    nbytes = (st.w_nk + rows * st.act_kn) * count
    group = 1.0
    if graph.num_experts:
        # a grouped expert GEMM with few rows per expert runs below a plain one of as many rows in
        # all (measured from gemm_group_rows_min rows per expert up: held at that value below,
        # where the tile fill already charges the empty rows)
        grouped = np.maximum(rows, prof.gemm_group_rows_min)
        group = np.where(ga.expert, grouped / (grouped + prof.gemm_half_m), 1.0)
    rate = peak_flops * _per_row(eff_max)
    t_comp = flops / (rate * (np.minimum(rows * (1.0 / prof.tile_m), 1.0) * group) * st.thin)
    if vector_flops and st.quantized.any():
        t_comp = np.where(st.quantized, _quantized_compute(rows, count, flops, st, rate * group, vector_flops, gemv_rows), t_comp)
    t_mem = nbytes * (1.0 / _per_row(bw))
    core = np.maximum(t_comp, t_mem)
    comp_b = t_comp >= t_mem
    gemm_core = core.sum(axis=-1)
    compute = (t_comp * comp_b).sum(axis=-1)
    memory = gemm_core - compute
    latency = st.gemm_latency * floor

    # Attention kernels (one per attention layer of the stage). The FLOPs are the whole score
    # square, as PyTorch counts them. A fused (flash) kernel skips the masked half of a causal
    # prompt's square -- the kernel benchmarks behind the profile count only the unmasked half --
    # at the profile's attention efficiency; an eager attention computes the whole square as two
    # batched GEMMs at GEMM efficiency and writes, softmaxes and re-reads the score matrices.
    # (Plain Python numbers for one configuration, arrays for many: the same expressions.)
    layers = st.attention_layers
    ctx, a_flops = context, attention_flops
    a_mem = attention_bytes / bw
    if eager:
        a_eff = eff_max * _min(ctx / prof.tile_m, 1.0)
        a_comp = a_flops / (peak_flops * a_eff)
        scores = layers * graph.heads * square_prompts * ctx * ctx
        a_mem = a_mem + scores * 4.0 * act_bytes / bw  # write, softmax read + write, read for P V
    else:
        a_eff = att_max * ctx / (ctx + prof.attention_half_seq)
        # the unmasked share of the FLOPs: square prompts run half of their square
        square = (np.asarray(square_prompts) > 0) * st.causal if isinstance(square_prompts, np.ndarray) else (
            float(square_prompts > 0) * st.causal
        )
        a_comp = a_flops * (1.0 - 0.5 * square) / (peak_flops * a_eff)
    a_lat = layers * floor
    a_core = _max(a_comp, a_mem)
    t_att = a_core + a_lat
    a_is_comp = a_comp >= a_mem

    # Memory-bound kernels: per layer two fused residual-add + norm (read x and the residual,
    # write both), the MLP activation (read gate and up, write one), rotary on q and k; per MoE
    # layer router top-k, permutation and un-permutation of the routed copies (and FP8 casts).
    e_mem = tokens * st.elementwise_bytes_per_token / bw
    e_lat = st.elementwise_kernels * floor
    t_elem = e_mem + e_lat

    memory = memory + a_core * (1 - a_is_comp) + e_mem
    compute = compute + a_core * a_is_comp
    latency = latency + a_lat + e_lat
    t_gemm = core + ga.kernels * floor
    if array:  # every figure per configuration, also those that do not vary with the tokens
        zeros = np.zeros_like(tokens, dtype=float)
        memory, compute, latency, t_att = memory + zeros, compute + zeros, latency + zeros, t_att + zeros
    out = PassKernels(
        _plain(memory),
        _plain(compute),
        _plain(latency),
        _plain(gemm_core + st.gemm_latency * floor),
        _plain(t_att),
        _plain(t_elem),
        _plain(flops.sum(axis=-1)),
    )
    if breakdown:
        names = ga.names
        listed = []
        for i, name in enumerate(names):
            bound = _bound(comp_b[..., i], t_comp[..., i], t_mem[..., i], ga.kernels[i] * floor)
            listed.append((name, _plain(t_gemm[..., i]), bound))
        listed.append(("attention", _plain(t_att), _bound(a_is_comp, a_comp, a_mem, a_lat)))
        listed.append(("norms, activation, rotary, routing", _plain(t_elem), _bound(False, 0.0, e_mem, e_lat)))
        out.rows = tuple(listed)
    return out


def _quantized_compute(rows, count, flops, st, rate, vector_flops, gemv_rows):  # noqa: ANN001, ANN202
    """Compute time of weight-only quantized GEMMs (:mod:`.quantized`): the GEMV path up to
    ``gemv_rows`` token rows, the tensor-core path padded to a 16-row tile above."""
    tensor = flops / (rate * np.minimum(rows * (1.0 / QUANT_TILE_M), 1.0) * st.thin)
    if not gemv_rows:
        return tensor
    gemv = rows * count * st.nk * (GEMV_FLOPS_PER_WEIGHT_ROW / vector_flops)
    return np.where(rows <= gemv_rows, gemv, tensor)


def _rows_and_count(ga: GraphArrays, tokens, prompts, ep: int, load_imbalance: float):  # noqa: ANN001, ANN202
    """Rows of each GEMM group and how many of its GEMMs run, for ``tokens`` (a number, or an
    array of configurations: then ``(points, groups)`` arrays)."""
    graph = ga.graph
    t_col = tokens[..., None] if isinstance(tokens, np.ndarray) else tokens  # against the groups
    if ga.has_head:
        rows = np.where(ga.head, np.asarray(prompts, dtype=float)[..., None], t_col)
    else:
        rows = t_col * ga.ones
    count = ga.count
    if graph.num_experts:
        # Routed rows on this rank: tokens x top_k (each EP rank's tokens spread over all ranks);
        # the experts they touch (uniform routing) each get rows / touched of them.
        share = 1.0 - power(1.0 - graph.top_k / graph.num_experts, np.maximum(t_col * ep, 0.0))
        routed = t_col * graph.top_k * graph.local_experts * ep / graph.num_experts
        touched_experts = np.maximum(graph.local_experts * share, 1e-9)
        # The grouped GEMM waits for the busiest rank: load_imbalance x its average rows.
        rows = np.where(ga.expert, load_imbalance * routed / touched_experts, rows)
        count = ga.count * np.where(ga.expert, share, 1.0)
    return rows, count


def gemm_flops(ga: GraphArrays, *, tokens, prompts, ep: int, load_imbalance: float = 1.0):  # noqa: ANN001, ANN201
    """FLOPs of a pass's GEMMs on one stage (``PassKernels.gemm_flops`` without costing the pass)."""
    rows, count = _rows_and_count(ga, tokens, prompts, ep, load_imbalance)
    return _plain((rows * (2.0 * ga.n * ga.k) * count).sum(axis=-1))


def _per_row(x):  # noqa: ANN001, ANN202
    """A figure per configuration against the (configurations, GEMM groups) arrays."""
    return x[..., None] if isinstance(x, np.ndarray) else x


def _max(a, b):  # noqa: ANN001, ANN202
    return np.maximum(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else max(a, b)


def _min(a, b):  # noqa: ANN001, ANN202
    return np.minimum(a, b) if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) else min(a, b)


@dataclass(slots=True)
class _Static:
    """What a pass's kernel costs need that does not change with its token counts (built once per
    model layout, profile and precision: a sweep or a serving curve reuses it)."""

    two_nk: np.ndarray  # 2 N K: FLOPs per row of each group
    w_nk: np.ndarray  # weight bytes of each group
    act_kn: np.ndarray  # activation bytes per row of each group
    thin: np.ndarray  # thin-matrix factor of each group
    nk: np.ndarray  # weight elements of each group
    quantized: np.ndarray  # bool: weights narrower than the activations (dequantized in registers)
    gemm_latency: float  # GEMM kernel launches of a stage (x the profile's kernel latency)
    attention_layers: float
    causal: float
    elementwise_bytes_per_token: float  # per stage
    elementwise_kernels: float  # per stage


_STATIC: dict[tuple, tuple[object, _Static]] = {}

#: compute dtypes whose GEMMs take the narrow weights as they are (W8A8 / FP8 / FP4): no
#: dequantization in registers
_NARROW_COMPUTE = frozenset({"fp8", "int8", "fp4", "int4", "fp6"})


def _static(ga, prof, dtype, weight_bytes, expert_weight_bytes, act_bytes, casts) -> _Static:  # noqa: ANN001
    key = (id(ga), id(prof), dtype, weight_bytes, expert_weight_bytes, act_bytes, casts)
    hit = _STATIC.get(key)
    if hit is not None and hit[0] is ga:
        return hit[1]
    g = ga.graph
    k_half, n_half = prof.half_widths(dtype)
    wbytes = np.where(ga.expert, expert_weight_bytes or weight_bytes, weight_bytes)
    per_token = (
        g.layers * 2 * 4 * g.hidden + g.layers * 3 * g.ffn_width + g.attention_layers * 2 * g.qk_width
    ) * act_bytes
    per_token += g.moe_layers * 4 * g.top_k * g.hidden * act_bytes
    kernels = (g.layers * prof.elementwise_kernels_per_layer + g.moe_layers * 4) / ga.pp
    if casts:
        # 8-bit GEMMs whose inputs arrive in 16 bits: a quantize kernel per GEMM input reads
        # the 16-bit activations and writes the 8-bit copy (Transformer Engine's cast kernels).
        routed = np.where(ga.expert, g.top_k / max(g.local_experts, 1e-9), 1.0)
        per_token += float((ga.k * ga.count * routed).sum()) * ga.pp * (act_bytes + 1.0)
        kernels += float(ga.kernels.sum())
    static = _Static(
        two_nk=2.0 * ga.n * ga.k,
        w_nk=ga.n * ga.k * wbytes,
        act_kn=(ga.k + ga.n) * act_bytes,
        thin=ga.k / (ga.k + k_half) * ga.n / (ga.n + n_half),
        nk=ga.n * ga.k,
        quantized=(wbytes < act_bytes) & (dtype not in _NARROW_COMPUTE),
        gemm_latency=float(ga.kernels.sum()),
        attention_layers=g.attention_layers / ga.pp,
        causal=float(g.causal),
        elementwise_bytes_per_token=per_token / ga.pp,
        elementwise_kernels=kernels,
    )
    if len(_STATIC) > 512:
        _STATIC.clear()
    _STATIC[key] = (ga, static)
    return static


def _bound(is_compute, t_comp, t_mem, t_lat) -> str:  # noqa: ANN001
    """What dominates one kernel group's time (first configuration)."""
    core = float(np.ravel(np.maximum(t_comp, t_mem))[0])
    if float(np.ravel(t_lat)[0]) > core:
        return "latency"
    return "compute" if bool(np.ravel(is_compute)[0]) else "memory"


def _plain(x):  # noqa: ANN001, ANN202
    """A Python float for one configuration, the array otherwise."""
    a = np.asarray(x)
    return float(a) if a.size == 1 else a.reshape(-1)
