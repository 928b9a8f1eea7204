"""How much of the datasheet a real stack achieves: the efficiency model and its assumptions.

Every speed figure of this plugin is ``work / (peak x efficiency)``. The efficiencies are
assumptions (named, sourced, overridable with ``--set ID=VALUE``), each with a *plausible range*
(:data:`RANGES`) that the estimators turn into low/high bounds of the headline numbers.

Matrix-product efficiency saturates with the number of tokens (rows) a matmul processes::

    eff(tokens) = matmul_efficiency x tokens / (tokens + matmul_half_tokens)

so a decode step of 4 sequences multiplies far below peak while a 4,096-token training
micro-batch runs at (nearly) ``matmul_efficiency``. ``scenario.mfu`` (``--mfu``) replaces
``matmul_efficiency`` for inference and fixes the MFU of a training step outright.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from workbench.engine.assumptions import Assumption, AssumptionSet

MATMUL = "perf.matmul_efficiency"
HALF_TOKENS = "perf.matmul_half_tokens"
BANDWIDTH = "perf.memory_bandwidth_efficiency"
STEP_OVERHEAD = "perf.step_overhead_s"
TP_OVERLAP = "perf.tp_comm_overlap"
DP_OVERLAP = "perf.dp_comm_overlap"
LINK = "comm.bandwidth_efficiency"
ALPHA_INTRA = "comm.latency_intra_node_s"
ALPHA_INTER = "comm.latency_inter_node_s"
LOW_PRECISION = "perf.fp8_efficiency_factor"

ASSUMPTIONS: tuple[Assumption, ...] = (
    Assumption(
        MATMUL,
        "Achieved fraction of dense peak FLOPS in large matrix products",
        0.65,
        "fraction",
        "Calibrated on published end-to-end training results, which include communication and pipeline "
        "bubbles and are therefore lower than kernel efficiency: Narayanan et al. 2021 (Megatron-LM, SC21, "
        "Table 1) 44-52% of A100 peak for GPT 1.7B-1T; Dubey et al. 2024 (Llama 3, Table 4) 38-43% BF16 MFU "
        "on 8K-16K H100; Chowdhery et al. 2022 (PaLM, Table 3) 46.2% MFU / 57.8% HFU on TPU v4. With the "
        "default this model reproduces those within docs/validation.md's errors. Plausible range 0.50-0.78.",
        "Kernel-level fraction of the datasheet dense rate that big GEMMs reach (clock throttling, tile "
        "waste, non-matmul kernels in between). Communication, bubbles and overheads are modelled apart.",
        0.01,
        1.0,
    ),
    Assumption(
        HALF_TOKENS,
        "Tokens per matmul at which efficiency is half its maximum",
        64.0,
        "tokens",
        "NVIDIA Deep Learning Performance Guide, 'Matrix Multiplication Background' (tile and wave "
        "quantization; GEMMs with a small M dimension are memory-bound and leave Tensor Cores idle). The "
        "saturating form tokens / (tokens + half) is this workbench's modelling choice. Range 32-128.",
        "Small batches (decode) multiply inefficiently; a matmul of this many token rows runs at half of "
        "perf.matmul_efficiency.",
        1.0,
        1e6,
    ),
    Assumption(
        LOW_PRECISION,
        "Efficiency of 8-bit (and narrower) matmuls relative to 16-bit",
        0.75,
        "factor",
        "Megatron-Bridge performance summary (NeMo 25.11, DGX-H100, docs/performance-summary.md): FP8 "
        "training of Llama 3 8B/70B/405B reaches 744/719/737 model TFLOP/s per GPU, 36-38% of the 1,979 "
        "TFLOPS dense FP8 peak, against 38-43% of the BF16 peak for Llama 3 405B in BF16 (Dubey et al. 2024, "
        "Table 4) and 45-52% for Megatron-LM on A100: FP8 realises about 0.75-0.85 of the fraction of its "
        "(twice as high) peak that 16-bit does (scaling and casting kernels, power-limited clocks). Range "
        "0.65-0.90.",
        "Multiplies perf.matmul_efficiency when the matmuls run in fp8, int8 or fp4.",
        0.05,
        1.0,
    ),
    Assumption(
        BANDWIDTH,
        "Achieved fraction of peak memory bandwidth (decode kernels)",
        0.80,
        "fraction",
        "Model bandwidth utilization (MBU), as defined by Databricks/MosaicML, 'LLM Inference Performance "
        "Engineering: Best Practices' (2023); optimized decode kernels (TensorRT-LLM, vLLM) are commonly put "
        "at 0.7-0.85 of peak HBM bandwidth (a rule of thumb, not one measurement); a plain copy reaches ~0.9 "
        "(Azure ND GB200 v6 blog, 2025: 7.35 TB/s measured, '92% efficiency'). The TensorRT-LLM decode-bound "
        "cases of docs/validation.md (R2, R5, R8) come out within 10% at 0.8. Range 0.70-0.88.",
        "Bytes per second that weight and KV-cache reads achieve, as a fraction of the datasheet bandwidth.",
        0.01,
        1.0,
    ),
    Assumption(
        STEP_OVERHEAD,
        "Fixed overhead per forward pass (scheduling, sampling, launches)",
        0.001,
        "s",
        "vLLM blog 'vLLM v0.6.0: 2.7x Throughput Improvement and 5x Latency Reduction' (2024-09-05): for "
        "Llama 3 8B on one H100 the HTTP API server took 33% and scheduling 29% of the execution time before "
        "v0.6 (the GPU idles meanwhile); multi-step scheduling, asynchronous output processing and CUDA "
        "graphs (vLLM, TensorRT-LLM) bring it well under a millisecond per step. Range 0.3-3 ms.",
        "Added once per decode step / forward pass, whatever its size.",
        0.0,
        60.0,
    ),
    Assumption(
        TP_OVERLAP,
        "Share of tensor-parallel communication hidden behind compute (training)",
        0.0,
        "fraction",
        "Megatron-LM runs TP all-reduces / reduce-scatters on the critical path unless "
        "--tp-comm-overlap (Transformer Engine userbuffers) is on; Narayanan et al. 2021 sec. 3.3 keep TP "
        "inside a node for that reason. Inference: never overlapped. Range 0-0.5.",
        "0: every TP collective of a training step adds to its time; 1: all hidden.",
        0.0,
        1.0,
    ),
    Assumption(
        DP_OVERLAP,
        "Share of data-parallel gradient communication hidden behind backward",
        0.8,
        "fraction",
        "Li et al. 2020, 'PyTorch Distributed: Experiences on Accelerating Data Parallel Training' (VLDB): "
        "bucketed gradient all-reduce overlaps the backward pass; Megatron-LM --overlap-grad-reduce and "
        "--overlap-param-gather; ZeRO-3/FSDP prefetch parameter all-gathers. The last bucket is never "
        "hidden. "
        "Range 0.5-1.0.",
        "0: the gradient all-reduce (ZeRO: reduce-scatter + all-gather) follows the backward; "
        "1: fully hidden.",
        0.0,
        1.0,
    ),
    Assumption(
        LINK,
        "Achieved fraction of link bandwidth in collectives",
        0.80,
        "fraction",
        "NVIDIA nccl-tests doc/PERFORMANCE.md: bus bandwidth of a collective is compared with the hardware "
        "link bandwidth; large NCCL all-reduces typically reach 70-90% of it on NVLink and InfiniBand. "
        "Range 0.60-0.90.",
        "Applied to the node shape's intra-node (NVLink/NVSwitch, PCIe) and inter-node (InfiniBand/RoCE) "
        "per-GPU bandwidth.",
        0.01,
        1.0,
    ),
    Assumption(
        ALPHA_INTRA,
        "Latency per collective step inside a node",
        5e-6,
        "s",
        "NCCL small-message latency on NVLink/NVSwitch is a few microseconds per hop (nccl-tests: 'Time is "
        "useful with small sizes, to measure the constant overhead'); vLLM/TensorRT-LLM custom all-reduce "
        "kernels for TP decode take ~5-15 us per call. Range 2-10 us.",
        "The alpha of the alpha-beta model: a ring all-reduce over n GPUs takes 2(n-1) steps, a tree "
        "2 log2(n).",
        0.0,
        1.0,
    ),
    Assumption(
        ALPHA_INTER,
        "Latency per collective step across nodes",
        1.5e-5,
        "s",
        "InfiniBand/RoCE verbs latency is 1-3 us; NCCL network collectives add proxy and protocol work, "
        "typically 10-20 us per step at small sizes (nccl-tests time column). Range 8-30 us.",
        "Alpha of the alpha-beta model for steps that cross the inter-node network.",
        0.0,
        1.0,
    ),
)

#: Plausible range of each assumption: (pessimistic, optimistic) for speed, i.e. the value that
#: makes the estimate slower first. Overridden assumptions keep their relative range.
RANGES: dict[str, tuple[float, float]] = {
    MATMUL: (0.50, 0.78),
    LOW_PRECISION: (0.65, 0.90),
    HALF_TOKENS: (128.0, 32.0),
    BANDWIDTH: (0.70, 0.88),
    STEP_OVERHEAD: (0.003, 0.0003),
    TP_OVERLAP: (0.0, 0.5),
    DP_OVERLAP: (0.5, 1.0),
    LINK: (0.60, 0.90),
    ALPHA_INTRA: (1e-5, 2e-6),
    ALPHA_INTER: (3e-5, 8e-6),
}

_DEFAULTS = {a.id: a.default for a in ASSUMPTIONS}


@dataclass(frozen=True, slots=True)
class Efficiency:
    """Resolved efficiencies for one estimate (central, pessimistic or optimistic)."""

    matmul: float
    half_tokens: float
    bandwidth: float
    step_overhead_s: float
    tp_overlap: float
    dp_overlap: float
    link: float
    alpha_intra_s: float
    alpha_inter_s: float

    def matmul_at(self, tokens: float) -> float:
        """Achieved fraction of peak for a matmul over ``tokens`` rows."""
        return self.matmul * tokens / (tokens + self.half_tokens) if tokens > 0 else self.matmul


_FIELDS = (
    MATMUL,
    HALF_TOKENS,
    BANDWIDTH,
    STEP_OVERHEAD,
    TP_OVERLAP,
    DP_OVERLAP,
    LINK,
    ALPHA_INTRA,
    ALPHA_INTER,
)
#: Compute dtypes (``roofline.compute_dtype``) whose matmuls take perf.fp8_efficiency_factor.
NARROW_DTYPES = frozenset({"fp8", "int8", "fp6", "fp4", "int4"})


def _clamp(ident: str, value: float) -> float:
    if ident in (MATMUL, BANDWIDTH, TP_OVERLAP, DP_OVERLAP, LINK):
        return min(max(value, 0.0), 1.0)
    return max(value, 0.0)


def efficiencies(
    assumptions: AssumptionSet, *, training: bool, mfu: float | None = None, narrow: bool = False
) -> tuple[Efficiency, Efficiency, Efficiency]:
    """(central, pessimistic, optimistic) efficiencies from the scenario's assumption values.

    Only the assumptions a workload of this kind depends on are read (and so listed as used);
    the others keep their defaults. ``narrow``: the matmuls run in an 8-bit or narrower dtype,
    so perf.fp8_efficiency_factor scales the matmul efficiency. ``mfu`` (the scenario's
    override) replaces the matmul efficiency in all three: the user has said how fast the
    matmuls run, so that part carries no range of ours.
    """
    ids = _READ[training, narrow]
    return _from_values(training, narrow, assumptions.read(ids), mfu)


@lru_cache(maxsize=512)
def _from_values(
    training: bool, narrow: bool, values: tuple[float, ...], mfu: float | None
) -> tuple[Efficiency, Efficiency, Efficiency]:
    """:func:`efficiencies` from the values of ``_READ[training, narrow]`` (one estimate reads them all
    in one call; the same values, as in every estimate of a sweep, give the same cached answer)."""
    read = dict(zip(_READ[training, narrow], values))
    central = tuple(read[ident] if ident in read else _DEFAULTS[ident] for ident in _FIELDS)
    factor = read[LOW_PRECISION] if narrow else None
    return _resolve(central, factor, mfu)


@lru_cache(maxsize=512)
def _resolve(
    central_values: tuple[float, ...], factor: float | None, mfu: float | None
) -> tuple[Efficiency, Efficiency, Efficiency]:
    central = list(central_values)
    low, high = [], []
    for ident, value in zip(_FIELDS, central):
        lo, hi = RANGES[ident]
        default = _DEFAULTS[ident]
        if default:
            scale = value / default
            lo, hi = lo * scale, hi * scale
        elif value:
            lo, hi = min(value, lo), max(value, hi)
        low.append(_clamp(ident, lo))
        high.append(_clamp(ident, hi))
    if factor is not None:
        lo, hi = RANGES[LOW_PRECISION]
        scale = factor / _DEFAULTS[LOW_PRECISION]
        central[0] *= factor
        low[0] *= min(lo * scale, 1.0)
        high[0] *= min(hi * scale, 1.0)
    if mfu is not None:
        central[0] = low[0] = high[0] = mfu
    return Efficiency(*central), Efficiency(*low), Efficiency(*high)


def assumption_ids(*, training: bool, narrow: bool = False) -> tuple[str, ...]:
    """The assumption ids a performance figure of this kind depends on (for ``Quantity.assumptions``)."""
    extra = (LOW_PRECISION,) if narrow else ()
    if training:
        return (
            MATMUL,
            *extra,
            HALF_TOKENS,
            BANDWIDTH,
            TP_OVERLAP,
            DP_OVERLAP,
            LINK,
            ALPHA_INTRA,
            ALPHA_INTER,
        )
    return (MATMUL, *extra, HALF_TOKENS, BANDWIDTH, STEP_OVERHEAD, LINK, ALPHA_INTRA, ALPHA_INTER)


_RELEVANT = {
    (training, narrow): frozenset(assumption_ids(training=training, narrow=narrow))
    for training in (False, True)
    for narrow in (False, True)
}
#: What :func:`efficiencies` reads, in order: the relevant fields, then the fp8 factor when narrow.
_READ = {
    key: tuple(ident for ident in _FIELDS if ident in relevant) + ((LOW_PRECISION,) if key[1] else ())
    for key, relevant in _RELEVANT.items()
}
