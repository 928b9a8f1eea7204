"""Parameter counts: the whole model (what memory holds) and per token (what compute uses)."""

from __future__ import annotations

from workbench.core.units import format_count
from workbench.engine.estimator import EstimatorInfo
from workbench.engine.points import PointOutputs, PointsContext, col


class ParametersEstimator:
    info = EstimatorInfo(
        id="memory.parameters",
        title="Parameters",
        version="1.0.0",
        produces=("parameters.total", "parameters.active"),
        description="Exact parameter count (as transformers instantiates the model) and the active count "
        "per token of a mixture of experts.",
    )

    def estimate_points(self, ctx: PointsContext) -> PointOutputs:
        count = ctx.params
        total, active = count.total, count.active
        breakdown = count.breakdown

        def total_formula(_: int) -> str:
            parts = " + ".join(f"{k} {format_count(v)}" for k, v in breakdown.items() if v)
            return f"{parts} = {total:,}"

        def active_formula(_: int) -> str:
            if active == total:
                return f"dense model: every parameter is used by every token = {total:,}"
            return f"{total:,} - routed experts a token skips {total - active:,} = {active:,}"

        # The same for every point of a group: one value each, not an array.
        return PointOutputs(
            {
                "parameters.total": col(total, "params", "Parameters", total_formula),
                "parameters.active": col(active, "params", "Active parameters per token", active_formula),
            }
        )
