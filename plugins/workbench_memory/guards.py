"""Guard-rails: layouts that cannot run or run differently than asked, and plans that do not fit."""

from __future__ import annotations

from workbench.core.model import ModelArchitecture
from workbench.core.scenario import Offload, Recompute, Scenario
from workbench.core.units import format_bytes, format_count
from workbench.engine.estimator import EstimatorInfo
from workbench.engine.points import PointOutputs, PointsContext, PointWarning
from workbench.engine.quantity import Warning

#: Display names of the memory parts, by result key suffix.
PART_NAMES = {
    "weights": "weights",
    "gradients": "gradients",
    "optimizer_states": "optimizer states",
    "activations": "activations",
    "kv_cache": "KV cache",
    "recurrent_state": "recurrent state",
    "overhead": "runtime overhead",
}


def layout_warnings(model: ModelArchitecture, scenario: Scenario) -> list[Warning]:
    par = scenario.parallel
    tp, pp, ep = par.tp, par.pp, par.ep
    out: list[Warning] = []
    heads, kv = model.num_attention_heads, model.num_kv_heads
    if heads % tp:
        out.append(
            Warning(
                "tp-not-dividing-heads",
                f"TP {tp} does not divide the {heads} attention heads: Megatron-LM and vLLM refuse "
                "this layout.",
                "error",
                f"use a TP degree that divides {heads}",
            )
        )
    elif model.mla is None and kv % tp and tp % kv:
        out.append(
            Warning(
                "tp-not-dividing-heads",
                f"TP {tp} and the {kv} KV heads do not divide one another: the KV heads cannot be split or "
                "replicated evenly.",
                "error",
                f"use a TP degree that divides {kv} or a multiple of it",
            )
        )
    elif model.mla is None and kv < tp:
        out.append(
            Warning(
                "tp-not-dividing-heads",
                f"TP {tp} exceeds the {kv} KV heads: each KV head is replicated on {tp // kv} ranks "
                "(vLLM), so "
                "the K/V projections and the KV cache take that many times their even share per GPU; "
                "Megatron-LM requires TP to divide the KV heads.",
                "warning",
                f"TP {kv} or less splits the KV heads without replication",
            )
        )
    layers = model.total_layers
    if pp > layers:
        out.append(
            Warning(
                "pp-not-dividing-layers",
                f"PP {pp} exceeds the {layers} blocks: some stages would hold no block.",
                "error",
                f"use PP {layers} or less",
            )
        )
    elif layers % pp:
        out.append(
            Warning(
                "pp-not-dividing-layers",
                f"PP {pp} does not divide the {layers} blocks: the first {layers % pp} stages hold "
                f"{layers // pp + 1} blocks, the rest {layers // pp}; the largest stage sets the memory "
                "and the "
                "pipeline's pace (Megatron-LM needs an explicit uneven split).",
                "warning",
                f"use a PP degree that divides {layers}",
            )
        )
    moe = model.moe
    if moe is not None and ep > 1 and moe.num_experts % ep:
        out.append(
            Warning(
                "ep-not-dividing-experts",
                f"EP {ep} does not divide the {moe.num_experts} routed experts: vLLM and Megatron-LM refuse "
                f"this; here the busiest rank holds {-(-moe.num_experts // ep)} experts.",
                "error",
                f"use an EP degree that divides {moe.num_experts}",
            )
        )
    elif moe is None and ep > 1:
        out.append(
            Warning(
                "ep-not-dividing-experts",
                f"EP {ep} is set but {model.name} has no experts: it has no effect.",
                "info",
                "set EP to 1",
            )
        )
    if scenario.is_training and par.offload_params is not Offload.NONE and par.zero_stage != 3:
        out.append(
            Warning(
                "offload-params-needs-zero3",
                "Parameter offload works with ZeRO-3 only (DeepSpeed offload_param); the weights stay "
                "on the GPU.",
                "warning",
                "set ZeRO stage 3 or turn parameter offload off",
            )
        )
    return out


def moe_warning(model: ModelArchitecture, total: int, active: int) -> Warning | None:
    if model.moe is None:
        return None
    return Warning(
        "moe-total-params",
        f"{model.name} is a mixture of experts: memory holds all {format_count(total)} parameters while "
        f"each token computes with {format_count(active)} ({active / total:.0%}).",
        "info",
        "expert parallelism (EP) spreads the experts over GPUs",
    )


def out_of_memory(
    scenario: Scenario,
    parts: dict[str, float],
    total: float,
    usable: float,
    stage: int,
    pp: int,
    min_gpus: int | None,
    min_layout: tuple[int, int, int] | None = None,
) -> Warning:
    top = _top_two(parts)
    largest = " and ".join(f"{PART_NAMES[k]} ({format_bytes(v)})" for v, k in top)
    where = f" on pipeline stage {stage + 1} of {pp}" if pp > 1 else ""
    message = (
        f"Needs {format_bytes(total)} per GPU{where} but {format_bytes(usable)} is usable; "
        f"the largest parts are {largest}."
    )
    return Warning("out-of-memory", message, "error", out_of_memory_fix(scenario, {k for _, k in top}, min_gpus,
                                                                         min_layout))  # fmt: skip


def _top_two(parts: dict[str, float]) -> list[tuple[float, str]]:
    return sorted(((v, k) for k, v in parts.items()), reverse=True)[:2]


def largest_parts(parts: dict[str, float]) -> list[str]:
    """The names of the two largest parts (what the out-of-memory fix is about)."""
    return [k for _, k in _top_two(parts)]


def out_of_memory_fix(
    scenario: Scenario, largest: set[str], min_gpus: int | None, min_layout: tuple[int, int, int] | None
) -> str:
    """The out-of-memory warning's fix for a scenario whose largest parts are ``largest``."""
    return "; ".join(_fixes(scenario, largest, min_gpus, min_layout))


def _fixes(
    scenario: Scenario, largest: set[str], min_gpus: int | None, min_layout: tuple[int, int, int] | None
) -> list[str]:
    par = scenario.parallel
    fixes: list[str] = []
    if min_gpus is not None and min_gpus > scenario.num_gpus:
        fixes.append(f"use at least {min_gpus} GPUs")
    elif min_gpus is not None and min_layout is not None and min_layout[:2] != (par.tp, par.pp):
        # Enough GPUs, the wrong split: more model parallelism shards what DP cannot.
        tp, pp, dp = min_layout
        fixes.append(
            f"more model parallelism (TP or PP): even {min_gpus} GPUs fit, as TP {tp} x PP {pp} x DP {dp}; "
            f"the layouts solver (solve layouts) ranks those of these {scenario.num_gpus}"
        )
    if scenario.is_training:
        if largest & {"optimizer_states", "gradients", "weights"} and par.zero_stage < 3:
            fixes.append("ZeRO-3 (FSDP) to shard weights, gradients and optimizer states over DP")
        if "optimizer_states" in largest and par.offload_optimizer is Offload.NONE:
            fixes.append("offload optimizer states to CPU")
        if "activations" in largest:
            if scenario.recompute is not Recompute.FULL:
                fixes.append("activation recomputation (gradient checkpointing)")
            fixes.append("a smaller micro-batch or sequence")
        if "weights" in largest:
            fixes.append("LoRA/QLoRA or lower-precision weights")
    else:
        if "weights" in largest:
            fixes.append("more tensor parallelism or quantized weights (fp8, int4)")
        if "kv_cache" in largest:
            fixes.append("fewer concurrent sequences, a shorter context, or an fp8 KV cache")
        if "recurrent_state" in largest:
            fixes.append("fewer concurrent sequences (the recurrent state is fixed per sequence)")
        if "activations" in largest:
            fixes.append("chunked prefill")
    if not fixes:
        fixes.append("more GPUs or lower precision")
    return fixes


class LayoutChecks:
    """Divisibility and plausibility checks of the parallel layout (warnings only)."""

    info = EstimatorInfo(
        id="memory.layout-checks",
        title="Layout checks",
        version="1.0.0",
        produces=(),
        description="TP/PP/EP divisibility, KV-head replication, MoE sizing and offload guard-rails.",
    )

    def estimate_points(self, ctx: PointsContext) -> PointOutputs:
        # Layout and model alone decide these: every point of the group gets the same warnings.
        warnings = layout_warnings(ctx.model, ctx.scenario)
        moe = moe_warning(ctx.model, ctx.params.total, ctx.params.active)
        if moe is not None:
            warnings.append(moe)
        return PointOutputs(warnings=[PointWarning(w.code, w.message, w.severity, w.fix) for w in warnings])
