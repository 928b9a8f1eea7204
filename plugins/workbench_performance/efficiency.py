"""How much of the datasheet a real stack achieves: the efficiency assumptions of the time model.

Kernel times come from the per-operator model (:mod:`workbench_performance.operators`): every
kernel at the efficiency its shape reaches on the GPU's architecture, from kernel-level
profiles with their sources. Two assumptions scale those profiles within their plausible
ranges (the low/high bounds of every speed figure); the others cover what is not a kernel:
per-step overhead, overlap of communication with compute, link efficiency and latency.
``scenario.mfu`` (``--mfu``) replaces the profile's compute efficiency for inference and fixes
the MFU of a training step outright.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from workbench.engine.assumptions import Assumption, AssumptionSet
from workbench_performance.arrays import Num, maximum, minimum, point_of, where

MATMUL = "perf.kernel_efficiency_scale"
BANDWIDTH = "perf.bandwidth_efficiency_scale"
STEP_OVERHEAD = "perf.step_overhead_s"
TP_OVERLAP = "perf.tp_comm_overlap"
DP_OVERLAP = "perf.dp_comm_overlap"
EP_OVERLAP = "perf.ep_comm_overlap"
IMBALANCE = "moe.load_imbalance"
LINK = "comm.bandwidth_efficiency"
ALPHA_INTRA = "comm.latency_intra_node_s"
ALPHA_INTER = "comm.latency_inter_node_s"

ASSUMPTIONS: tuple[Assumption, ...] = (
    Assumption(
        MATMUL,
        "Sustained share of the kernel profiles' compute efficiency in whole runs",
        0.76,
        "factor",
        "The profiles (workbench_performance/operators/profiles.yaml) hold what kernel benchmarks reach "
        "on each architecture; whole training and serving runs reach less (clocks under sustained power, "
        "kernels sharing the memory system, gaps between kernels). Fitted on 2026-11-24 to the fit part of "
        "tests/data/published_speed (dense regimes, 20 records, median |error| 13.0%; "
        "tests/validation/fit_sustained_scales.py), never to the held-out part. Range 0.65-0.84 (0.85-1.10 "
        "of the fitted value).",
        "Multiplies every GEMM and attention kernel's efficiency: 0.76 = 76% of what its kernel "
        "benchmark reaches.",
        0.01,
        2.0,
    ),
    Assumption(
        BANDWIDTH,
        "Sustained share of the stream-benchmark bandwidth in whole runs",
        0.80,
        "factor",
        "The profiles hold the bandwidth stream benchmarks reach on each GPU; decode kernels with scattered "
        "KV pages and weight tiles interleaved with other kernels reach less. Fitted with "
        "perf.kernel_efficiency_scale on the fit part of tests/data/published_speed (see there). "
        "Range 0.72-0.84 (0.90-1.05 of the fitted value).",
        "Multiplies the achieved memory bandwidth of every memory-bound kernel.",
        0.01,
        2.0,
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
        EP_OVERLAP,
        "Share of expert-parallel all-to-all hidden behind compute (training)",
        0.0,
        "fraction",
        "Megatron-Core runs the token dispatch/combine all-to-all on the critical path unless "
        "--overlap-moe-expert-parallel-comm (overlap with the other micro-batch's compute in 1F1B) is "
        "on; DeepSeek-V3's DualPipe (DeepSeek-AI 2024, sec. 3.2.1) hides it almost fully. Range 0-0.9.",
        "0: every dispatch and combine of a training step adds to its time; 1: all hidden.",
        0.0,
        1.0,
    ),
    Assumption(
        IMBALANCE,
        "Tokens the busiest expert-parallel rank computes, relative to the average",
        1.1,
        "factor",
        "Routers trained with a load-balancing loss keep the busiest expert near the mean but not at it: "
        "Switch Transformer (Fedus et al. 2021, sec. 2.2) sizes expert buffers with capacity factors of "
        "1.0-1.25 and GShard (Lepikhin et al. 2020) with 1.25 for that reason; benchmark runs that force "
        "balanced routing sit at 1.0. Range 1.0-1.3.",
        "Multiplies the rows of the routed-expert GEMMs: the grouped GEMM of a step waits for the rank "
        "with the most routed tokens.",
        1.0,
        4.0,
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
    MATMUL: (0.65, 0.84),  # 0.85-1.10 of the default
    BANDWIDTH: (0.72, 0.84),  # 0.90-1.05 of the default
    STEP_OVERHEAD: (0.003, 0.0003),
    TP_OVERLAP: (0.0, 0.5),
    EP_OVERLAP: (0.0, 0.9),
    IMBALANCE: (1.3, 1.0),
    DP_OVERLAP: (0.5, 1.0),
    LINK: (0.60, 0.90),
    ALPHA_INTRA: (1e-5, 2e-6),
    ALPHA_INTER: (3e-5, 8e-6),
}

_DEFAULTS = {a.id: a.default for a in ASSUMPTIONS}


@dataclass(frozen=True, slots=True)
class Efficiency:
    """Resolved efficiencies for one estimate (central, pessimistic or optimistic)."""

    matmul: float  # scale on the profile's GEMM and attention efficiencies
    bandwidth: float  # scale on the profile's achieved bandwidth
    step_overhead_s: float
    tp_overlap: float
    dp_overlap: float
    ep_overlap: float
    load_imbalance: float
    link: float
    alpha_intra_s: float
    alpha_inter_s: float
    #: the scenario's --mfu: replaces the compute efficiency of every kernel (None: the profile's)
    mfu: float | None = None

    def at(self, i: int) -> Efficiency:
        """Point ``i``'s efficiencies (itself unless drawn assumption values made some arrays)."""
        return point_of(self, i)


_FIELDS = (
    MATMUL,
    BANDWIDTH,
    STEP_OVERHEAD,
    TP_OVERLAP,
    DP_OVERLAP,
    EP_OVERLAP,
    IMBALANCE,
    LINK,
    ALPHA_INTRA,
    ALPHA_INTER,
)
#: Compute dtypes (``roofline.compute_dtype``) of 8 bits or fewer (their profile column differs).
NARROW_DTYPES = frozenset({"fp8", "int8", "fp6", "fp4", "int4"})


def _clamp(ident: str, value: Num) -> Num:
    if ident in (TP_OVERLAP, DP_OVERLAP, EP_OVERLAP, LINK):
        return minimum(maximum(value, 0.0), 1.0)
    return maximum(value, 0.0)


def efficiencies(
    assumptions: AssumptionSet, *, training: bool, mfu: float | None = None
) -> tuple[Efficiency, Efficiency, Efficiency]:
    """(central, pessimistic, optimistic) efficiencies from the scenario's assumption values.

    Only the assumptions a workload of this kind depends on are read (and so listed as used);
    the others keep their defaults. ``mfu`` (the scenario's override) replaces the compute
    efficiency of every kernel in all three: the user has said how fast they run, so that part
    carries no range of ours. (The profiles hold their 8-bit efficiencies per dtype.)
    A point group that draws assumption values (a sensitivity swing, a Monte Carlo sample) gets
    efficiencies whose drawn fields are arrays of one value per point.
    """
    ids = _READ[training]
    values = tuple(_from(ids, assumptions.read(ids)))
    if any(isinstance(v, np.ndarray) for v in values):
        return _bounds(values, mfu)
    return _resolve(values, mfu)


def _from(ids: tuple[str, ...], values: tuple[float, ...]) -> list[float]:
    read = dict(zip(ids, values))
    return [read[ident] if ident in read else _DEFAULTS[ident] for ident in _FIELDS]


@lru_cache(maxsize=512)
def _resolve(central_values: tuple[float, ...], mfu: float | None) -> tuple[Efficiency, Efficiency, Efficiency]:
    return _bounds(central_values, mfu)


def _bounds(central_values: tuple[Num, ...], mfu: float | None) -> tuple[Efficiency, Efficiency, Efficiency]:
    """The central values and the ends of their ranges (numbers, or arrays over a point group)."""
    central = list(central_values)
    low, high = [], []
    for ident, value in zip(_FIELDS, central):
        lo, hi = RANGES[ident]
        default = _DEFAULTS[ident]
        if default:
            scale = value / default
            lo, hi = lo * scale, hi * scale
        else:  # a range in absolute terms, widened to take in a value set outside it
            lo, hi = where(value != 0, minimum(value, lo), lo), where(value != 0, maximum(value, hi), hi)
        low.append(_clamp(ident, lo))
        high.append(_clamp(ident, hi))
    return Efficiency(*central, mfu=mfu), Efficiency(*low, mfu=mfu), Efficiency(*high, mfu=mfu)


def assumption_ids(*, training: bool) -> tuple[str, ...]:
    """The assumption ids a performance figure of this kind depends on (for ``Quantity.assumptions``)."""
    if training:
        return (MATMUL, BANDWIDTH, TP_OVERLAP, DP_OVERLAP, EP_OVERLAP, IMBALANCE, LINK, ALPHA_INTRA, ALPHA_INTER)
    return (MATMUL, BANDWIDTH, IMBALANCE, STEP_OVERHEAD, LINK, ALPHA_INTRA, ALPHA_INTER)


#: What :func:`efficiencies` reads, in order.
_READ = {training: assumption_ids(training=training) for training in (False, True)}
