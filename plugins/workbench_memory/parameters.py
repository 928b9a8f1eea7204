"""Parameter counts: the whole model (what memory holds) and per token (what compute uses)."""

from __future__ import annotations

from workbench.core.units import format_count
from workbench.engine.estimator import EstimateContext, EstimatorInfo
from workbench.engine.quantity import Outputs, q


class ParametersEstimator:
    info = EstimatorInfo(
        id="memory.parameters",
        title="Parameters",
        version="1.0.0",
        produces=("parameters.total", "parameters.active"),
        description="Exact parameter count (as transformers instantiates the model) and the active count "
        "per token of a mixture of experts.",
    )

    def estimate(self, ctx: EstimateContext) -> Outputs:
        count = ctx.params
        total, active = count.total, count.active
        breakdown = count.breakdown

        def total_formula() -> str:
            parts = " + ".join(f"{k} {format_count(v)}" for k, v in breakdown.items() if v)
            return f"{parts} = {total:,}"

        def active_formula() -> str:
            if active == total:
                return f"dense model: every parameter is used by every token = {total:,}"
            return f"{total:,} - routed experts a token skips {total - active:,} = {active:,}"

        return Outputs(
            {
                "parameters.total": q(total, "params", "Parameters", total_formula),
                "parameters.active": q(active, "params", "Active parameters per token", active_formula),
            }
        )
