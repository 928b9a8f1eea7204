"""Serving-time model: prefill, decode steps, TTFT, TPOT and throughput as functions of batch size.

All work figures are per GPU of one replica (TP x PP GPUs). A pass is the kernels of the
per-operator model (:mod:`workbench_performance.operators`): every GEMM, attention and
memory-bound kernel of a stage at the efficiency its shape reaches on the GPU's architecture:

    decode step   = PP x sum over kernels of max(compute, memory, minimum kernel time)
                    + TP/EP/PP communication + perf.step_overhead_s

With PP stages the batch is split into PP micro-batches that keep every stage busy; a token
crosses all stages, so its step takes PP stage times. Serving policies (``scenario.serving``):

* continuous batching (default): each finished request is replaced by a new one whose prompt is
  prefilled between decode steps, stalling them: per output token ``b/G x prefill(1 prompt)``;
  TTFT = prefill + half a decode step + M/D/1 queueing behind other prompts;
* chunked prefill: prompts are cut into chunks that ride along with decode steps; the
  amortized prompt tokens per step (``b x S / G``) fill the compute a memory-bound step leaves
  idle; TTFT = ceil(S / chunk) mixed steps;
* static batching (continuous batching off): the batch is prefilled together, then decoded;
* disaggregated prefill/decode: prompts run on a separate pool sized to keep up; TPOT has no
  prefill stalls; TTFT adds the KV-cache transfer;
* speculative decoding: k draft tokens per step, each accepted with probability alpha; a step
  yields ``(1 - alpha^(k+1)) / (1 - alpha)`` tokens on average (Leviathan et al. 2023, eq. 1)
  and costs k draft steps plus one target pass over k+1 tokens per sequence.

:func:`throughput_latency_curve` evaluates the model over a list of batch sizes (concurrency);
build its input once with :func:`inference_inputs` from an estimate.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from workbench_performance.arrays import ceil, first_largest, is_array, maximum, minimum, point_of
from workbench_performance.communication import CommLayout, Link, forward_comm_s, p2p_s
from workbench_performance.efficiency import Efficiency
from workbench_performance.operators.cost import GraphArrays, PassKernels, pass_kernels
from workbench_performance.operators.profiles import KernelProfile


# Not frozen: built several times per estimate on the hot path (a frozen dataclass costs 4x to
# build); nothing writes to one after it is built.
@dataclass(slots=True)
class InferenceInputs:
    """What the serving model needs, per GPU of one replica (one pipeline stage); batch-independent.

    The GEMMs of a pass come from the kernel graph (``ops``); what the graph does not hold is
    the attention work (FLOPs: Q K^T and P V; bytes: the KV cache a decode step reads), which the
    compute and memory plugins count exactly and is carried here per sequence.

    Built for one configuration (plain numbers) or for a point group: then the figures that
    depend on batch and lengths (``batch``, ``seq_len``, ``gen_len``, the per-sequence work, the
    KV-cache capacity) are arrays of one entry per point, and every function below returns arrays.
    """

    peak_flops: float  # FLOP/s of one GPU at the compute dtype
    bandwidth: float  # B/s of one GPU's memory
    weight_bytes: float  # bytes per stored weight element
    decode_kv_bytes: float  # per sequence of a decode step: the KV cache read at the average context
    decode_attention_flops: float  # per sequence of a decode step
    prompt_attention_flops: float  # per prompt
    model_decode_flops_per_seq: float  # whole model, one sequence, one decode step
    model_prefill_flops_per_seq: float  # whole model, one prompt
    kv_bytes_per_token: float  # whole replica (the KV a disaggregated prefill hands over)
    seq_len: int
    gen_len: int
    batch: int
    tp: int
    pp: int
    dp: int
    ep: int
    num_gpus: int
    generates: bool
    continuous: bool
    chunked: bool
    chunk_tokens: int
    disaggregated: bool
    spec_tokens: int  # 0: no speculative decoding
    spec_acceptance: float
    draft_weight_bytes: float  # per GPU
    draft_flops_per_token: float  # per GPU
    draft_bytes_per_seq: float  # per GPU
    max_concurrency: float | None
    comm: CommLayout
    transfer_link: Link
    ops: GraphArrays  # the kernels of a forward pass of one stage, by shape
    profile: KernelProfile  # kernel efficiencies of the GPU's architecture
    compute_dtype: str  # the matmuls' dtype (roofline.compute_dtype)
    act_bytes: float  # bytes per activation element
    eager: bool  # eager attention: the score matrices are written and read
    #: bytes per routed-expert weight element when the checkpoint stores them apart (gpt-oss:
    #: MXFP4) and the scenario serves its weights; 0: ``weight_bytes``
    expert_weight_bytes: float = 0.0
    #: FLOP/s of one GPU's vector (non-tensor) cores at FP32: the weight-only quantized GEMV path
    #: (operators/quantized.py); 0 where the catalog has no figure (every GEMM costed dense)
    vector_flops: float = 0.0
    #: token rows up to which quantized weights run as a GEMV (GGUF: llama.cpp's limit; 0: never)
    gemv_rows: float = 0.0

    def at(self, i: int) -> InferenceInputs:
        """Point ``i`` of a point group's inputs (itself when built for one configuration)."""
        return point_of(self, i)


# Not frozen: built several times per estimate on the hot path (a frozen dataclass costs 4x to
# build); nothing writes to one after it is built.
@dataclass(slots=True)
class Pass:
    """One forward pass of a replica: its time and what bounds it."""

    time_s: float
    memory_s: float  # kernel time of the memory-bound kernels (all stages on the token's path)
    compute_s: float  # kernel time of the compute-bound kernels
    comm_s: float
    overhead_s: float

    @property
    def bound(self):  # noqa: ANN201 - str, or an array of them over a point group
        return first_largest(
            ("memory bandwidth", "compute", "communication", "overhead"),
            (self.memory_s, self.compute_s, self.comm_s, self.overhead_s),
        )

    @property
    def kernel_s(self) -> float:
        return self.memory_s + self.compute_s


# Not frozen: built several times per estimate on the hot path (a frozen dataclass costs 4x to
# build); nothing writes to one after it is built.
@dataclass(slots=True)
class ServePoint:
    """Serving at one concurrency (batch per replica)."""

    batch: int
    ttft_s: float
    tpot_s: float | None  # None: the model generates nothing
    e2e_s: float
    tokens_per_s: float  # output tokens per second, all replicas (input tokens when nothing is generated)
    tokens_per_s_per_gpu: float
    input_tokens_per_s: float
    requests_per_s: float
    decode_step_s: float | None
    prefill_s: float
    prefill_share: float  # share of GPU time spent on prompts
    busy: float  # share of time the GPUs run kernels (for power)
    bound: str
    spec_tokens_per_step: float | None
    prefill_gpus: int | None  # disaggregated prefill pool
    gpus: int  # GPUs the throughput needs (decode replicas + prefill pool)
    model_flops_per_s: float  # useful (model) FLOP/s of all GPUs
    fits: bool | None  # batch within the KV-cache capacity

    @property
    def tokens_per_s_per_user(self):  # noqa: ANN201 - float | None, or an array over a point group
        if self.tpot_s is None:
            return None
        return 1.0 / self.tpot_s if is_array(self.tpot_s) or self.tpot_s else None

    def at(self, i: int) -> ServePoint:
        """Point ``i`` of a point group's serving figures (itself for one configuration)."""
        return point_of(self, i)


def kernels(
    inp: InferenceInputs,
    eff: Efficiency,
    *,
    tokens: float,
    head_rows: float,
    attention_flops: float,
    attention_bytes: float,
    context: float,
    square_prompts: float = 0.0,
    breakdown: bool = False,
) -> PassKernels:
    """The per-operator kernel times of one forward pass of one stage (:mod:`.operators.cost`)."""
    return pass_kernels(
        inp.ops,
        inp.profile,
        dtype=inp.compute_dtype,
        peak_flops=inp.peak_flops,
        bandwidth=inp.bandwidth,
        tokens=tokens,
        prompts=head_rows,
        ep=inp.ep,
        act_bytes=inp.act_bytes,
        weight_bytes=inp.weight_bytes,
        expert_weight_bytes=inp.expert_weight_bytes,
        attention_flops=attention_flops,
        attention_bytes=attention_bytes,
        context=context,
        gemm_scale=eff.matmul,
        bandwidth_scale=eff.bandwidth,
        load_imbalance=eff.load_imbalance,
        gemm_override=eff.mfu,
        square_prompts=square_prompts,
        eager=inp.eager,
        breakdown=breakdown,
        vector_flops=inp.vector_flops,
        gemv_rows=inp.gemv_rows,
    )


def decode_kernels(
    inp: InferenceInputs,
    eff: Efficiency,
    batch: float,
    tokens_per_seq: float = 1.0,
    prefill_tokens: float = 0.0,
    *,
    breakdown: bool = False,
) -> PassKernels:
    """Kernels of one stage in a decode step of ``batch`` sequences (see :func:`decode_pass`)."""
    pp, s = inp.pp, inp.seq_len
    mb = maximum(batch / pp, 1.0) if pp > 1 else batch
    pre = prefill_tokens / pp
    decode_tokens = mb * tokens_per_seq
    return kernels(
        inp,
        eff,
        tokens=decode_tokens + pre,
        head_rows=decode_tokens + pre / s,
        attention_flops=decode_tokens * inp.decode_attention_flops + pre * inp.prompt_attention_flops / s,
        attention_bytes=mb * inp.decode_kv_bytes,
        context=s + 0.5 * inp.gen_len,
        breakdown=breakdown,
    )


def prefill_kernels(
    inp: InferenceInputs, eff: Efficiency, prompts: float, tokens_per_prompt: float | None = None,
    *, breakdown: bool = False,
) -> PassKernels:
    """Kernels of one stage prefilling one micro-batch of ``prompts`` (see :func:`prefill_pass`)."""
    s = inp.seq_len if tokens_per_prompt is None else tokens_per_prompt
    share = s / inp.seq_len
    m = minimum(maximum(prompts, 1.0), inp.pp)
    per_mb = prompts / m
    return kernels(
        inp,
        eff,
        tokens=per_mb * s,
        head_rows=per_mb,
        attention_flops=per_mb * inp.prompt_attention_flops * share * share,
        attention_bytes=0.0,
        context=s,
        square_prompts=per_mb,
        breakdown=breakdown,
    )


def decode_pass(
    inp: InferenceInputs,
    eff: Efficiency,
    batch: float,
    tokens_per_seq: float = 1.0,
    prefill_tokens: float = 0.0,
) -> Pass:
    """One decode step of ``batch`` sequences (``tokens_per_seq`` > 1: a speculative verify pass),
    optionally carrying ``prefill_tokens`` prompt tokens (chunked prefill)."""
    pp = inp.pp
    mb = maximum(batch / pp, 1.0) if pp > 1 else batch
    tokens = mb * tokens_per_seq + prefill_tokens / pp
    k = decode_kernels(inp, eff, batch, tokens_per_seq, prefill_tokens)
    memory, compute, latency = k.memory_s, k.compute_s, k.latency_s
    comm = forward_comm_s(inp.comm, tokens, eff)
    return Pass(
        pp * (memory + compute + latency) + comm + eff.step_overhead_s,
        pp * memory,
        pp * compute,
        comm,
        eff.step_overhead_s + pp * latency,
    )


def prefill_pass(
    inp: InferenceInputs, eff: Efficiency, prompts: float, tokens_per_prompt: float | None = None
) -> Pass:
    """Prefill of ``prompts`` prompts (of ``tokens_per_prompt`` tokens, default seq_len) together.

    With PP, min(prompts, PP) micro-batches flow through the stages: (m + PP - 1) stage times.
    """
    s = inp.seq_len if tokens_per_prompt is None else tokens_per_prompt
    pp = inp.pp
    m = minimum(maximum(prompts, 1.0), pp)
    tokens = prompts / m * s
    k = prefill_kernels(inp, eff, prompts, tokens_per_prompt)
    memory, compute, latency = k.memory_s, k.compute_s, k.latency_s
    stages = m + pp - 1
    comm = forward_comm_s(inp.comm, tokens, eff) * (stages / pp)
    return Pass(
        stages * (memory + compute + latency) + comm + eff.step_overhead_s,
        stages * memory,
        stages * compute,
        comm,
        eff.step_overhead_s + stages * latency,
    )


def accepted_per_step(k: int, alpha: float) -> float:
    """Expected tokens a speculative step yields: (1 - alpha^(k+1)) / (1 - alpha) (Leviathan et al. 2023)."""
    if alpha >= 1.0:
        return k + 1.0
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


def _draft_pass(inp: InferenceInputs, eff: Efficiency, batch: float) -> float:
    """A draft model's decode step: its weights at the achieved bandwidth, its FLOPs at the
    profile's GEMM efficiency for ``mb`` rows (the draft's own layer shapes are not known)."""
    pp = inp.pp
    mb = maximum(batch / pp, 1.0) if pp > 1 else batch
    prof = inp.profile
    bw = inp.bandwidth * minimum(prof.bandwidth_efficiency * eff.bandwidth, 1.0)
    fill = minimum(mb / prof.tile_m, 1.0)
    gemm = eff.mfu or minimum(prof.gemm_efficiency_for(inp.compute_dtype) * eff.matmul, 1.0)
    t_mem = (inp.draft_weight_bytes + mb * inp.draft_bytes_per_seq) / bw
    t_comp = mb * inp.draft_flops_per_token / (inp.peak_flops * gemm * fill)
    return pp * maximum(t_mem, t_comp) + eff.step_overhead_s


def serve(inp: InferenceInputs, eff: Efficiency, batch) -> ServePoint:  # noqa: ANN001 - int or array
    """TTFT, TPOT, end-to-end latency and throughput at ``batch`` concurrent requests per replica.

    ``batch`` and the inputs' lengths may be arrays over a point group whose points either all
    generate tokens or all do not (the policy's branch is the group's).
    """
    b = maximum(batch if is_array(batch) else int(batch), 1)
    s, g, dp = inp.seq_len, inp.gen_len, inp.dp
    fits = None if inp.max_concurrency is None else b <= inp.max_concurrency
    prefill_one = prefill_pass(inp, eff, 1)
    prompt_flops = inp.model_prefill_flops_per_seq
    if not generating(inp):
        whole = prefill_pass(inp, eff, b)
        rate = dp * b / whole.time_s
        return ServePoint(
            b,
            whole.time_s,
            None,
            whole.time_s,
            rate * s,
            rate * s / inp.num_gpus,
            rate * s,
            rate,
            None,
            whole.time_s,
            1.0,
            _busy(whole),
            whole.bound,
            None,
            None,
            inp.num_gpus,
            rate * prompt_flops,
            fits,
        )

    step = decode_pass(inp, eff, b)
    spec = None
    token_s = step.time_s
    if inp.spec_tokens:
        k = inp.spec_tokens
        spec = accepted_per_step(k, inp.spec_acceptance)
        verify = decode_pass(inp, eff, b, tokens_per_seq=k + 1)
        token_s = (k * _draft_pass(inp, eff, b) + verify.time_s) / spec

    prefill_gpus = None
    gpus = inp.num_gpus
    if inp.disaggregated:
        tpot = token_s
        transfer = p2p_s(s * inp.kv_bytes_per_token / (inp.tp * inp.pp), inp.transfer_link, eff)
        ttft = prefill_one.time_s + transfer
        rate = dp * b / (g * tpot)  # requests per second the decode pool completes
        replicas = ceil(rate * prefill_one.time_s - 1e-9)
        prefill_gpus = maximum(replicas, 1) * inp.tp * inp.pp
        gpus = gpus + prefill_gpus
        share = prefill_gpus / gpus
        e2e = ttft + (g - 1) * tpot
        out = dp * b / tpot
    elif not inp.continuous:
        batch_prefill = prefill_pass(inp, eff, b)
        tpot = token_s
        ttft = batch_prefill.time_s
        cycle = ttft + (g - 1) * tpot
        e2e = cycle
        out = dp * b * g / cycle
        share = ttft / cycle
    else:
        if inp.chunked:
            extra = decode_pass(inp, eff, b, prefill_tokens=b * s / g).time_s - step.time_s
            chunk = minimum(inp.chunk_tokens, s)
            ttft = ceil(s / chunk) * decode_pass(inp, eff, b, prefill_tokens=chunk).time_s
        else:
            extra = b / g * prefill_one.time_s
            ttft = prefill_one.time_s + 0.5 * step.time_s
        tpot = token_s + maximum(extra, 0.0)
        share = maximum(extra, 0.0) / tpot
        if not inp.chunked:
            rho = minimum(share, 0.99)
            ttft = ttft + rho / (2.0 * (1.0 - rho)) * prefill_one.time_s
        e2e = ttft + (g - 1) * tpot
        out = dp * b / tpot
    requests = out / g
    flops = out * inp.model_decode_flops_per_seq + requests * prompt_flops
    if is_array(share):
        bound = np.where(share > 0.5, prefill_one.bound, step.bound)
    else:
        bound = prefill_one.bound if share > 0.5 else step.bound
    busy = share * _busy(prefill_one) + (1.0 - share) * _busy(step)
    return ServePoint(
        b,
        ttft,
        tpot,
        e2e,
        out,
        out / gpus,
        requests * s,
        requests,
        step.time_s,
        prefill_one.time_s,
        share,
        busy,
        bound,
        spec,
        prefill_gpus,
        gpus,
        flops,
        fits,
    )


def generating(inp: InferenceInputs) -> bool:
    """Whether the configuration (every point of the group) generates tokens."""
    g = inp.gen_len
    if not inp.generates:
        return False
    if isinstance(g, np.ndarray):
        some = bool(g.any())
        if some and not g.all():
            raise ValueError("a point group mixes prefill-only points (gen_len 0) with generating ones")
        return some
    return bool(g)


def _busy(p: Pass):  # noqa: ANN202 - float, or an array over a point group
    kernel, time = p.memory_s + p.compute_s, p.time_s  # p.kernel_s / p.time_s
    if isinstance(time, np.ndarray):
        return np.divide(kernel, time, out=np.zeros_like(time), where=time != 0)
    return kernel / time if time else 0.0



def throughput_latency_curve(
    inputs: InferenceInputs, batches: Iterable[int], efficiency: Efficiency
) -> list[ServePoint]:
    """Serving at each concurrency in ``batches``: the throughput-latency trade-off.

    ``inputs`` and ``efficiency`` come from :func:`inference_inputs` (once per scenario); each
    point is plain arithmetic (tens of microseconds), so curves of thousands of points are cheap.
    Points whose batch exceeds the KV-cache capacity are returned with ``fits=False``.
    """
    return [serve(inputs, efficiency, b) for b in batches]
