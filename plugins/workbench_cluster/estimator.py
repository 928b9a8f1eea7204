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
from dataclasses import replace
from typing import Any

import numpy as np

from workbench.engine.estimator import EstimatorInfo
from workbench.engine.points import GroupResults, PointOutputs, PointsContext, PointWarning, QuantityColumn
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

_MINE = frozenset(a.id for a in A.ASSUMPTIONS)
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

    def takes_assumption_arrays(self, scenario: object) -> bool:
        """A group that draws this plugin's assumptions (a Monte Carlo sample) runs as one group: the
        other estimators keep their array path, and this one goes point by point (see below)."""
        return True

    def estimate_points(self, ctx: PointsContext) -> PointOutputs:
        if ctx.n > 1 and _MINE & ctx.assumptions.varied.keys():
            return self._point_by_point(ctx)
        out = Out(ctx)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            self._estimate(ctx, out)
        return PointOutputs(out.values, out.warnings)

    def _point_by_point(self, ctx: PointsContext) -> PointOutputs:
        """Each point with its own drawn assumption values, as a group of one (the formulas read the
        assumptions as plain numbers); microseconds per point, the other plugins stay arrays."""
        quantities: dict[str, list[Any]] = {}
        warnings: list[PointWarning] = []
        for i in range(ctx.n):
            one = replace(ctx, assumptions=ctx.assumptions.at(i), points={k: v[i : i + 1] for k, v in ctx.points.items()},
                          n=1, values=_OnePoint(ctx.values, i))  # fmt: skip
            out = Out(one)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                self._estimate(one, out)
            for key, column in out.values.items():
                quantities.setdefault(key, []).append(column.quantity(0))
            mask = np.zeros(ctx.n, dtype=bool)
            mask[i] = True
            for w in out.warnings:
                warnings.append(PointWarning(w.code, w.at(0).message, w.severity, w.fix, mask))
        return PointOutputs({k: QuantityColumn(v) for k, v in quantities.items()}, warnings)

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


class _OnePoint:
    """Point ``i`` of a group's results, read as a group of one reads them."""

    __slots__ = ("_results", "_i")

    def __init__(self, results: GroupResults, i: int) -> None:
        self._results, self._i = results, i

    def __contains__(self, key: object) -> bool:
        return key in self._results

    def value(self, key: str, _i: int) -> Any:
        return self._results.value(key, self._i)
