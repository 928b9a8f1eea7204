"""The cluster estimator: storage and the data pipeline, checkpoints, failures and goodput.

An array estimator: the storage, the failure rate and (usually) the checkpoint are the same at
every point of a group; the data read rate, the step time and the run's goodput follow each
point's throughput. The same formulas run over Python floats for a group of one point (a single
estimate) and over float64 arrays otherwise (:mod:`workbench_cluster.columns`); a figure another
plugin left without a value is NaN there, and the key has no value at that point, with the reason
as its formula.
"""

from __future__ import annotations

import math

import numpy as np

from workbench.engine.estimator import EstimatorInfo
from workbench.engine.points import PointOutputs, PointsContext
from workbench.engine.storage_catalog import storage_system
from workbench_cluster import assumptions as A
from workbench_cluster.checkpoint import checkpoint_and_goodput
from workbench_cluster.columns import Out
from workbench_cluster.data import data
from workbench_cluster.keys import CLUSTER
from workbench_cluster.storage import model_load, storage, weights_bytes

VERSION = "1.0.0"

NEEDS = (
    "memory.average_gpu.weights",
    "memory.average_gpu.optimizer_states",
    "performance.tokens_per_s",
    "performance.step_time_s",
    "performance.train_time_s",
    "cost.total_usd",
)

_TRAINING_ONLY = tuple(k for k, v in CLUSTER.items() if v[1] == "training")
_INFERENCE_ONLY = tuple(k for k, v in CLUSTER.items() if v[1] == "inference")


class ClusterEstimator:
    info = EstimatorInfo(
        id="cluster",
        title="Storage, checkpoints, failures and goodput",
        version=VERSION,
        produces=tuple(CLUSTER),
        needs=NEEDS,
        assumptions=A.ASSUMPTIONS,
        description="Storage bandwidth and IOPS for the data loader and when storage sets the step time; "
        "checkpoint size, write/restore time and interval (Young/Daly); expected interruptions, goodput and "
        "goodput-adjusted days and cost (spot capacity optional); model load time for serving cold starts.",
    )

    def estimate_points(self, ctx: PointsContext) -> PointOutputs:
        out = Out(ctx)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            self._estimate(ctx, out)
        return PointOutputs(out.values, out.warnings)

    def _estimate(self, ctx: PointsContext, out: Out) -> None:
        sc = ctx.scenario
        try:
            system = storage_system(sc.cluster.storage)
        except KeyError as exc:
            why = str(exc.args[0])
            out.warn(True, "storage-unknown", f"{why}: storage, checkpoints and goodput are not estimated", "error",
                     "name one with --storage (see `catalog storage`)")  # fmt: skip
            out.null(tuple(CLUSTER), why)
            return
        gpus_per_node = ctx.cluster.node.gpus_per_node
        nodes = max(1, math.ceil(sc.num_gpus / gpus_per_node))
        bw = storage(out, sc, system, nodes, ctx.assumptions[A.NODE_STORAGE_GBPS.id])
        weights = weights_bytes(ctx, out, sc)
        if not sc.is_training:
            out.null(_TRAINING_ONLY, "does not apply to inference")
            model_load(out, sc, system, weights, bw)
            return
        out.null(_INFERENCE_ONLY, "training: the restore time is cluster.checkpoint.read_s")
        data(ctx, out, sc, system, bw, gpus_per_node)
        checkpoint_and_goodput(ctx, out, sc, bw, nodes)
