"""Training-step model: compute, communication, pipeline bubble and optimizer per optimizer step.

Per GPU (one pipeline stage of one TP group), for one micro-batch of ``b`` sequences::

    t_mb = forward + backward + recompute kernels (per-operator model, b x s token rows)
           + (TP + EP collectives of forward, backward and recompute) x (1 - perf.tp_comm_overlap)
           + pipeline sends (activations forward, gradients backward; x v chunks when interleaved)

    step = m x t_mb x (1 + bubble) + exposed DP gradient exchange + optimizer update
    bubble = (p - 1) / m            1F1B and GPipe (Narayanan et al. 2021, sec. 2.2.1)
           = (p - 1) / (v x m)      interleaved 1F1B with v model chunks per rank (sec. 2.2.2)

``m`` micro-batches per optimizer step (gradient accumulation), ``p`` pipeline stages. The DP
gradient exchange overlaps the backward of the last micro-batch (all micro-batches under ZeRO-3,
whose parameter gathers are spread over the step) up to ``perf.dp_comm_overlap``.

Utilization follows PaLM (Chowdhery et al. 2022, appendix B): MFU counts the model FLOPs of a
step (forward + backward, 6N + 12 LHQT per token for a dense decoder) without recomputation;
HFU adds the recomputed forward. ``scenario.mfu`` fixes the MFU, so the step time is
``model FLOPs / (GPUs x peak x mfu)``.

The same expressions run on one configuration (plain Python numbers) or on a point group: then
the figures that depend on the micro-batch and the sequence length (tokens, FLOPs, micro-batches
per step) are numpy arrays of one entry per point and so is every time that follows from them.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench_performance.arrays import as_float, first_largest, maximum, minimum, point_of, ratio
from workbench_performance.communication import CommLayout, forward_comm, gradient_sync, p2p_s
from workbench_performance.efficiency import NARROW_DTYPES, Efficiency
from workbench_performance.operators.cost import GraphArrays, PassKernels, gemm_flops, pass_kernels
from workbench_performance.operators.profiles import KernelProfile


# Not frozen: built several times per estimate on the hot path (a frozen dataclass costs 4x to
# build); nothing writes to one after it is built.
@dataclass(slots=True)
class TrainingInputs:
    peak_flops: float
    bandwidth: float
    fwd_flops: float  # per GPU, one micro-batch
    bwd_flops: float
    recompute_flops: float
    model_flops_step: float  # whole job, one optimizer step: forward + backward
    hardware_flops_step: float  # ... plus recompute
    tokens_mb: float  # tokens of one micro-batch on one data-parallel rank
    tokens_step: float  # tokens of one optimizer step, all ranks
    microbatches: int
    pp: int
    virtual_stages: int  # 1 unless the interleaved schedule is used
    world: int  # GPUs that compute: TP x PP x DP
    tp_passes: float  # passes whose TP/EP collectives are paid: forward, backward (+ full recompute)
    grad_bytes: float  # gradient bytes per GPU exchanged over DP
    zero_stage: int
    optimizer_bytes: float  # bytes the optimizer update reads and writes on one GPU
    offload_bytes: float  # bytes over PCIe per step when the optimizer runs on the CPU
    pcie_gbps: float
    mfu: float | None  # scenario override
    comm: CommLayout
    ops: GraphArrays  # the kernels of one stage's forward pass, by shape
    profile: KernelProfile
    compute_dtype: str
    act_bytes: float
    seq_len: int
    ep: int
    weight_bytes: float  # bytes per weight element the GEMMs read
    sequences: int  # sequences per micro-batch (each attends its causal square)
    eager: bool  # eager attention: the score matrices are written and read

    def at(self, i: int) -> TrainingInputs:
        """Point ``i`` of a point group's inputs (itself when built for one configuration)."""
        return point_of(self, i)


# Not frozen: built several times per estimate on the hot path (a frozen dataclass costs 4x to
# build); nothing writes to one after it is built.
@dataclass(slots=True)
class TrainStep:
    step_s: float
    compute_s: float  # per GPU, all micro-batches
    recompute_s: float
    comm_s: float  # exposed TP/EP/PP + DP communication
    tp_ep_s: float  # TP and EP collectives on the critical path
    pp_s: float
    dp_s: float  # whole gradient exchange, exposed or not
    dp_exposed_s: float
    bubble_s: float
    bubble_fraction: float
    optimizer_s: float
    mfu: float
    hfu: float
    tokens_per_s: float
    busy: float
    overridden: bool

    def at(self, i: int) -> TrainStep:
        """Point ``i`` of a point group's step figures (itself for one configuration)."""
        return point_of(self, i)

    @property
    def bound(self):  # noqa: ANN201 - str, or an array of them over a point group
        return first_largest(
            ("compute", "communication", "pipeline bubble", "optimizer"),
            (self.compute_s, self.comm_s, self.bubble_s, self.optimizer_s),
        )


def bubble_fraction(pp: int, microbatches, virtual_stages: int):  # microbatches: an int, or an array
    """Pipeline bubble relative to the ideal time: (p-1)/(v m)."""
    if pp <= 1:
        return 0.0
    return (pp - 1) / (max(virtual_stages, 1) * maximum(microbatches, 1))


def forward_kernels(inp: TrainingInputs, eff: Efficiency, *, breakdown: bool = False) -> PassKernels:
    """The forward kernels of one micro-batch on one stage; the attention kernels get the FLOPs
    the compute plugin counts beyond the GEMMs (its forward FLOPs are exact)."""
    return _pass(inp, eff, maximum(inp.fwd_flops - _gemm_flops(inp), 0.0), breakdown)


def _gemm_flops(inp: TrainingInputs) -> float:
    """The forward GEMMs' own FLOPs, routed evenly: load imbalance makes the busiest rank slower,
    it adds no FLOPs to the model (those are the compute plugin's, exact)."""
    return gemm_flops(inp.ops, tokens=inp.tokens_mb, prompts=inp.tokens_mb, ep=inp.ep)


def _pass(inp: TrainingInputs, eff: Efficiency, attention_flops: float, breakdown: bool) -> PassKernels:
    return pass_kernels(
        inp.ops,
        inp.profile,
        dtype=inp.compute_dtype,
        peak_flops=inp.peak_flops,
        bandwidth=inp.bandwidth,
        tokens=inp.tokens_mb,
        prompts=inp.tokens_mb,
        ep=inp.ep,
        act_bytes=inp.act_bytes,
        weight_bytes=inp.weight_bytes,
        expert_weight_bytes=0.0,
        attention_flops=attention_flops,
        attention_bytes=0.0,
        context=inp.seq_len,
        gemm_scale=eff.matmul,
        bandwidth_scale=eff.bandwidth,
        load_imbalance=eff.load_imbalance,
        casts=inp.compute_dtype in NARROW_DTYPES,
        square_prompts=as_float(inp.sequences),
        eager=inp.eager,
        breakdown=breakdown,
    )


def pass_times(inp: TrainingInputs, eff: Efficiency) -> tuple[float, float, float]:
    """(forward, backward, recompute) time of one micro-batch on one stage.

    Backward GEMMs do twice the forward's work (input and weight gradients) at the same shapes;
    backward attention gets the FLOPs the compute plugin counts beyond them, at the profile's
    backward efficiency; memory-bound kernels move twice the bytes. Recomputation repeats the
    forward in proportion to the FLOPs it recomputes.
    """
    gemms = _gemm_flops(inp)
    att_fwd_flops = maximum(inp.fwd_flops - gemms, 0.0)
    k = _pass(inp, eff, att_fwd_flops, False)
    t_f = k.memory_s + k.compute_s + k.latency_s
    attention_bwd = maximum(inp.bwd_flops - 2.0 * gemms, 0.0)
    per_flop = ratio(k.attention_s, att_fwd_flops)
    t_b = 2.0 * k.gemm_s + attention_bwd * per_flop / inp.profile.attention_backward_ratio + 2.0 * k.elementwise_s
    t_r = ratio(t_f * inp.recompute_flops, inp.fwd_flops)
    return t_f, t_b, t_r


def train_step(inp: TrainingInputs, eff: Efficiency) -> TrainStep:
    t_f, t_b, t_r = pass_times(inp, eff)
    comm = forward_comm(inp.comm, inp.tokens_mb, eff)
    pp = inp.pp
    # forward_comm covers every stage of the pipeline; a GPU pays its own stage's share
    tp_ep = (comm.tp_s * (1.0 - eff.tp_overlap) + comm.ep_s * (1.0 - eff.ep_overlap)) / pp * inp.tp_passes
    send = 2.0 * inp.virtual_stages * p2p_s(comm.pp_bytes, inp.comm.pp_link, eff) if pp > 1 else 0.0
    t_mb = t_f + t_b + t_r + tp_ep + send
    m = inp.microbatches
    beta = bubble_fraction(pp, m, inp.virtual_stages)
    pipe = m * t_mb * (1.0 + beta)
    dp_s, _ = gradient_sync(inp.comm, inp.grad_bytes, inp.zero_stage, eff)
    window = t_b * (m if inp.zero_stage >= 3 else 1)
    dp_exposed = dp_s - minimum(eff.dp_overlap * dp_s, window)
    optimizer = inp.optimizer_bytes / (inp.bandwidth * eff.bandwidth)
    if inp.offload_bytes:
        optimizer += inp.offload_bytes / (inp.pcie_gbps * 1e9 * eff.link)
    step = pipe + dp_exposed + optimizer
    overridden = inp.mfu is not None
    if inp.mfu is not None:
        step = inp.model_flops_step / (inp.world * inp.peak_flops * inp.mfu)
    compute = m * (t_f + t_b + t_r)
    peak_all = inp.world * inp.peak_flops * step
    busy = (
        minimum(inp.hardware_flops_step / peak_all / inp.profile.gemm_efficiency_for(inp.compute_dtype), 1.0)
        if overridden
        else minimum((compute + optimizer) / step, 1.0)
    )
    return TrainStep(
        step_s=step,
        compute_s=compute,
        recompute_s=m * t_r,
        comm_s=m * (tp_ep + send) + dp_exposed,
        tp_ep_s=m * tp_ep,
        pp_s=m * send,
        dp_s=dp_s,
        dp_exposed_s=dp_exposed,
        bubble_s=m * t_mb * beta,
        bubble_fraction=beta,
        optimizer_s=optimizer,
        mfu=inp.model_flops_step / peak_all,
        hfu=inp.hardware_flops_step / peak_all,
        tokens_per_s=inp.tokens_step / step,
        busy=busy,
        overridden=overridden,
    )
