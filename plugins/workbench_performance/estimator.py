"""The performance and communication estimators: what they read, produce and assume.

Keys (docs/validation.md has the table with units): ``performance.*`` for latency, throughput,
step time, MFU/HFU and training time; ``communication.*`` for the volume and time of each kind
of collective. Keys that do not apply to the workload (TTFT of a training run, step time of a
server) are present with value None and a note. Both estimators are array estimators: one call
covers a whole point group (configurations that differ only in batch and lengths), and a single
estimate is the same call on a group of one point. The results are built in
:mod:`~workbench_performance.serving_results`, :mod:`~workbench_performance.training_results` and
:mod:`~workbench_performance.comm_results`.
"""

from __future__ import annotations

from workbench.core.scenario import Scenario
from workbench.engine.estimator import EstimatorInfo
from workbench.engine.points import PointOutputs, PointsContext
from workbench_performance import efficiency as E
from workbench_performance import keys as K
from workbench_performance.comm_results import communication_columns
from workbench_performance.serving_results import serving_columns
from workbench_performance.training_results import training_columns

VERSION = "1.0.0"

NEEDS = (
    "flops.forward",
    "flops.per_token_forward",
    "flops.prefill",
    "flops.decode_step",
    "flops.backward",
    "flops.recompute",
    "roofline.decode.flops",
    "roofline.decode.bytes",
    "roofline.prefill.flops",
    "roofline.prefill.bytes",
    "roofline.peak_tflops",
    "roofline.bandwidth_gbps",
    "roofline.compute_dtype",
    "kv_cache.bytes_per_token",
    "kv_cache.max_concurrency",
)


PERFORMANCE_KEYS = tuple(K.PERFORMANCE)
COMM_KEYS = tuple(K.COMMUNICATION)


class PerformanceEstimator:
    """Latency, throughput, step time, MFU/HFU and time to train, with low/high bounds."""

    info = EstimatorInfo(
        id="performance",
        title="Performance: latency, throughput, step time",
        version=VERSION,
        produces=PERFORMANCE_KEYS,
        needs=NEEDS,
        assumptions=E.ASSUMPTIONS,
        description="TTFT/TPOT/throughput for serving (continuous batching, chunked prefill, disaggregation, "
        "speculative decoding); step time, MFU/HFU, pipeline bubble and time-to-train for training.",
    )

    def takes_assumption_arrays(self, scenario: Scenario) -> bool:
        """Serving takes drawn assumption values as arrays (one value per point); training reads
        them point by point (its step model's efficiencies are not arrays yet)."""
        return not scenario.is_training

    def estimate_points(self, ctx: PointsContext) -> PointOutputs:
        return training_columns(ctx) if ctx.scenario.is_training else serving_columns(ctx)


class CommunicationEstimator:
    """Volume and time of TP, DP, PP and EP communication for one step of the scenario."""

    info = EstimatorInfo(
        id="communication",
        title="Communication: collectives per step",
        version=VERSION,
        produces=COMM_KEYS,
        needs=("flops.forward", "flops.per_token_forward"),
        assumptions=E.ASSUMPTIONS,
        description="TP all-reduce (or reduce-scatter + all-gather with SP), DP gradient all-reduce / ZeRO "
        "reduce-scatter + all-gather (ZeRO-3: 1.5x), PP point-to-point and EP all-to-all, ring or tree, over "
        "the intra-node link when the group fits in a node, else the network.",
    )

    def takes_assumption_arrays(self, scenario: Scenario) -> bool:
        return not scenario.is_training

    def estimate_points(self, ctx: PointsContext) -> PointOutputs:
        return communication_columns(ctx)
