"""The memory stack per GPU: the most-loaded rank, the average rank, and whether the plan fits.

``memory.per_gpu.*`` is the rank with the largest total (the pipeline stage that holds the most,
with the busiest expert-parallel share); ``memory.average_gpu.*`` averages every rank. Usable
memory is the whole device for training (context, NCCL and fragmentation are in the stack as
``overhead``) and ``gpu_memory_utilization x capacity`` for inference, which is what vLLM claims
up front; what the server leaves after weights, workspace and overhead becomes KV cache, which
gives ``kv_cache.max_concurrency``. See :mod:`workbench_memory.sharding` for the layout rules and
:mod:`workbench_memory.fit` for ``memory.min_gpus``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workbench.core.units import format_bytes
from workbench.engine.assumptions import Assumption
from workbench.engine.estimator import EstimateContext, EstimatorInfo
from workbench.engine.quantity import Outputs, Quantity, Warning, q
from workbench_memory import assumptions as A
from workbench_memory.fit import MAX_GPUS, fewest_gpus, max_concurrency
from workbench_memory.guards import out_of_memory
from workbench_memory.sharding import Plan, Stage, build_stages, make_plan

PARTS = ("weights", "gradients", "optimizer_states", "activations", "kv_cache", "overhead")
_LABELS = {
    "weights": "Weights",
    "gradients": "Gradients",
    "optimizer_states": "Optimizer states",
    "activations": "Activations",
    "kv_cache": "KV cache",
    "overhead": "Runtime overhead",
    "total": "Total",
}
_OVERHEAD_IDS = (A.CUDA_CONTEXT_GIB.id, A.NCCL_GIB_PER_GROUP.id, A.FRAGMENTATION.id)


def _activation_assumptions() -> tuple[Assumption, ...]:
    """The activation model's own switches, declared here so the engine knows and lists them."""
    try:
        from workbench_memory.activations import ASSUMPTIONS
    except ImportError:
        return ()
    return tuple(
        Assumption(a.id, a.title, a.default, a.unit, a.source, a.description, a.minimum, a.maximum)
        for a in ASSUMPTIONS
    )


_ACTIVATION_ASSUMPTIONS = _activation_assumptions()
_ACTIVATION_IDS = tuple(a.id for a in _ACTIVATION_ASSUMPTIONS)


_activation_fn: Callable[..., Any] | None = None


def activation_function() -> tuple[Callable[..., Any] | None, str]:
    """The activation model (``workbench_memory.activations``), imported on first use."""
    global _activation_fn
    if _activation_fn is None:
        try:
            from workbench_memory.activations import activation_memory
        except ImportError as exc:
            return None, str(exc)
        _activation_fn = activation_memory
    return _activation_fn, ""


_KEYS = tuple(
    (
        k,
        f"memory.per_gpu.{k}",
        f"{_LABELS[k]} per GPU (most-loaded)",
        f"memory.average_gpu.{k}",
        f"{_LABELS[k]} per GPU (average)",
    )
    for k in PARTS
)


def stage_parts(s: Stage, dp: int, fragmentation: float) -> tuple[float, ...]:
    """One rank's memory in :data:`PARTS` order."""
    return (s.weights(dp), s.grads(dp), s.optimizer(dp), s.activations, s.kv, s.overhead(dp, fragmentation))


def _where(s: Stage, pp: int) -> str:
    if pp == 1:
        return f"{s.layers} blocks"
    ends = (", embeddings" if s.is_first else "") + (", LM head" if s.is_last else "")
    return f"stage {s.index + 1} of {pp}: blocks {s.first}-{s.first + s.layers - 1}{ends}"


class _Explainer:
    """Formula text for the most-loaded rank, rendered only when someone reads it."""

    def __init__(self, p: Plan, s: Stage, tp: int, pp: int, dp: int) -> None:
        self.p, self.s, self.tp, self.pp, self.dp = p, s, tp, pp, dp

    def weights(self, value: float) -> str:
        p, s, w = self.p, self.s, self.p.w
        terms = [
            f"{s.linear:,.0f} linear x {w.linear:g} B",
            f"{s.plain:,.0f} embedding/head/norm x {w.plain:g} B",
        ]
        if s.experts:
            terms.append(f"{s.experts:,.0f} routed-expert x {w.linear:g} B")
        if s.adapters:
            terms.append(f"{s.adapters:,.0f} LoRA adapter x {w.adapter:g} B")
        text = f"{_where(s, self.pp)}, TP {self.tp}: " + " + ".join(terms)
        if p.zero == 3:
            if p.offload_params:
                text += f"; ZeRO-3 with parameter offload keeps only {p.live_layers:g} gathered blocks"
            else:
                text += f"; ZeRO-3 shards over DP {self.dp} plus {p.live_layers:g} gathered blocks"
        return f"{text} = {format_bytes(value)}  [{w.describe()}]"

    def gradients(self, value: float) -> str:
        p, s = self.p, self.s
        if not p.training:
            return "inference: no gradients"
        shard = f" / DP {self.dp} (ZeRO-{p.zero})" if p.zero >= 2 else ""
        return f"{s.trainable:,.0f} trainable params x {p.t.grad:g} B{shard} = {format_bytes(value)}"

    def optimizer_states(self, value: float) -> str:
        p, s = self.p, self.s
        if not p.training:
            return "inference: no optimizer"
        if p.offload_optimizer:
            return f"offloaded to {p.scenario.parallel.offload_optimizer.value}: 0 B on the GPU"
        shard = f" / DP {self.dp} (ZeRO-{p.zero})" if p.zero >= 1 else ""
        return f"{s.trainable:,.0f} trainable params x [{p.t.describe()}]{shard} = {format_bytes(value)}"

    def activations(self, value: float) -> str:
        p, s = self.p, self.s
        if p.activation_fn is None:
            return "no activation model installed: 0 B"
        breakdown = p.activation_breakdown(self.tp, s.layers, s.is_first, s.is_last)
        detail = getattr(breakdown, "formula", "")
        if not p.training:
            return f"peak forward workspace: {detail} = {format_bytes(value)}"
        schedule = p.scenario.parallel.pipeline_schedule.value if self.pp > 1 else "no pipeline"
        once = (
            f" + {format_bytes(s.once_activations)} step peak (loss or one block's backward)"
            if s.once_activations
            else ""
        )
        return (
            f"{format_bytes(s.micro_activations)} per micro-batch x {s.inflight:g} in flight "
            f"({schedule}){once} "
            f"= {format_bytes(value)}; per micro-batch: {detail}"
        )

    def kv_cache(self, value: float) -> str:
        p, s = self.p, self.s
        if p.training:
            return "training keeps no KV cache"
        per_token = p.c.kv_elems_per_rank(self.tp, p.kv_decompressed)
        return (
            f"{p.batch} sequences x {format_bytes(s.kv_per_sequence)} per sequence on this rank "
            f"({_where(s, self.pp)}; {per_token:g} cached elements per token and layer x {p.kv_bytes:g} B) "
            f"= {format_bytes(value)}"
        )

    def overhead(self, value: float) -> str:
        p, s = self.p, self.s
        groups = round((s.comm - p.cuda_context) / p.nccl) if p.nccl else 0
        groups += 1 if (self.dp > 1 and p.training) else 0
        return (
            f"CUDA context {format_bytes(p.cuda_context)} + NCCL {groups} group(s) x {format_bytes(p.nccl)} "
            f"+ fragmentation {p.fragmentation:g} x activations {format_bytes(s.activations)} "
            f"= {format_bytes(value)}"
        )


class MemoryStackEstimator:
    info = EstimatorInfo(
        id="memory.stack",
        title="Memory per GPU",
        version="1.0.0",
        produces=(
            *(f"memory.per_gpu.{k}" for k in (*PARTS, "total")),
            *(f"memory.average_gpu.{k}" for k in (*PARTS, "total")),
            "memory.gpu_capacity",
            "memory.usable_capacity",
            "memory.fits",
            "memory.min_gpus",
            "memory.headroom",
            "kv_cache.max_concurrency",
        ),
        assumptions=A.ALL + _ACTIVATION_ASSUMPTIONS,
        description="Weights, gradients, optimizer states, activations, KV cache and overhead on the "
        "most-loaded and the average GPU under TP/PP/DP/EP, ZeRO and offload; fit and fewest GPUs.",
    )

    def estimate(self, ctx: EstimateContext) -> Outputs:
        scenario = ctx.scenario
        par = scenario.parallel
        tp, pp, ep, dp = par.tp, par.pp, par.ep, par.dp
        activation_fn, missing = activation_function()
        p = make_plan(ctx.model, scenario, ctx.assumptions.__getitem__, activation_fn)
        for ident in _ACTIVATION_IDS:  # the activation model reads them from the scenario itself
            ctx.assumptions[ident]
        frag = p.fragmentation
        stages = build_stages(p, tp, pp, ep)
        worst = stages[0] if pp == 1 else max(stages, key=lambda s: s.total(dp, frag))
        parts = stage_parts(worst, dp, frag)
        total = sum(parts)
        c = p.c
        uneven_experts = bool(c.num_experts) and c.num_experts % ep != 0
        if pp == 1 and not uneven_experts:
            average = parts
        else:
            rows = [
                stage_parts(s, dp, frag)
                for s in (build_stages(p, tp, pp, ep, worst=False) if uneven_experts else stages)
            ]
            average = tuple(sum(column) / pp for column in zip(*rows))
        average_total = sum(average)

        capacity = ctx.gpu.memory_bytes
        utilization = 1.0 if p.training else scenario.serving.gpu_memory_utilization
        usable = capacity * utilization
        fits = total <= usable
        headroom = usable - total
        fit = fewest_gpus(p, tp, pp, ep, usable, ctx.cluster.node.gpus_per_node, stages)
        concurrency = None if p.training else max_concurrency(stages, usable, dp, frag)

        used = _assumption_ids(p)
        everything = tuple(i for ids in used for i in ids)
        explain = _Explainer(p, worst, tp, pp, dp)
        out: dict[str, Quantity] = {}
        for (name, per_key, per_label, avg_key, avg_label), value, avg, ids in zip(
            _KEYS, parts, average, used
        ):
            out[per_key] = q(value, "B", per_label, _bind(getattr(explain, name), value), ids)
            out[avg_key] = q(avg, "B", avg_label, _average_formula(avg, pp, uneven_experts), ids)
        out["memory.per_gpu.total"] = q(
            total,
            "B",
            "Total per GPU (most-loaded)",
            lambda: (
                " + ".join(f"{_LABELS[k].lower()} {format_bytes(v)}" for k, v in zip(PARTS, parts))
                + f" = {format_bytes(total)} ({_where(worst, pp)})"
            ),
            everything,
        )
        out["memory.average_gpu.total"] = q(
            average_total,
            "B",
            "Total per GPU (average)",
            lambda: " + ".join(format_bytes(v) for v in average) + f" = {format_bytes(average_total)}",
            everything,
        )
        gib = ctx.gpu.memory_gib
        out["memory.gpu_capacity"] = q(capacity, "B", "GPU memory", lambda: f"{gib:g} GiB x 2^30 B")
        out["memory.usable_capacity"] = q(
            usable,
            "B",
            "Usable GPU memory",
            (
                lambda: (
                    f"training: the whole {format_bytes(capacity)}; context, NCCL and fragmentation are "
                    "counted as overhead"
                )
            )
            if p.training
            else (
                lambda: (
                    f"{format_bytes(capacity)} x gpu_memory_utilization {utilization:g} (vLLM claims this "
                    f"fraction up front) = {format_bytes(usable)}"
                )
            ),
        )
        out["memory.fits"] = q(
            fits,
            "",
            "Fits in GPU memory",
            lambda: f"{format_bytes(total)} {'<=' if fits else '>'} {format_bytes(usable)} usable",
            everything,
        )
        out["memory.headroom"] = q(
            headroom,
            "B",
            "Headroom on the most-loaded GPU",
            lambda: f"{format_bytes(usable)} - {format_bytes(total)} = {format_bytes(headroom)}",
            everything,
        )
        out["memory.min_gpus"] = q(
            fit.gpus if fit else None,
            "GPUs",
            "Fewest GPUs that fit",
            (
                lambda: (
                    f"TP {fit.tp} x PP {fit.pp} x DP {fit.dp} = {fit.gpus} (scenario's TP/PP/EP/ZeRO "
                    "kept; DP "
                    "added as ZeRO needs, then TP and PP doubled)"
                )
            )
            if fit
            else (
                lambda: (
                    f"no layout up to {MAX_GPUS} GPUs fits: the per-sequence or per-micro-batch memory alone "
                    "exceeds a GPU"
                )
            ),
            everything,
        )
        out["kv_cache.max_concurrency"] = q(
            concurrency,
            "sequences",
            "Concurrent sequences the KV cache holds",
            _concurrency_formula(p, concurrency, scenario.seq_len + scenario.gen_len, usable),
            everything,
        )
        warnings: list[Warning] = []
        if missing:
            warnings.append(
                Warning(
                    "activations-unavailable",
                    f"The activation model could not be loaded ({missing}); activations are left out "
                    "of the totals.",
                    "error",
                    "reinstall the workbench_memory plugin",
                )
            )
        if not fits:
            warnings.append(
                out_of_memory(
                    scenario,
                    dict(zip(PARTS, parts)),
                    total,
                    usable,
                    worst.index,
                    pp,
                    fit.gpus if fit else None,
                )
            )
        return Outputs(out, warnings)


def _assumption_ids(p: Plan) -> tuple[tuple[str, ...], ...]:
    """Assumption ids behind each part, in :data:`PARTS` order."""
    weights: tuple[str, ...] = (A.QUANT_KEEPS_16BIT.id,) if p.w.quantized else ()
    if p.zero == 3:
        weights += (A.ZERO3_LIVE_LAYERS.id,)
    optimizer = (A.ADAFACTOR_MOMENTUM_BYTES.id,) if p.training and p.t.factored else ()
    kv = (A.KV_MLA_DECOMPRESSED.id,) if p.c.mla and not p.training else ()
    return weights, (), optimizer, _ACTIVATION_IDS, kv, _OVERHEAD_IDS


def _bind(render: Callable[[float], str], value: float) -> Callable[[], str]:
    return lambda: render(value)


def _average_formula(value: float, pp: int, uneven_experts: bool) -> Callable[[], str]:
    def render() -> str:
        over = f"mean over the {pp} pipeline stages" if pp > 1 else "every rank holds the same"
        experts = "; experts averaged over EP ranks" if uneven_experts else ""
        return f"{over}{experts} = {format_bytes(value)}"

    return render


def _concurrency_formula(p: Plan, value: int | None, tokens: int, usable: float) -> Callable[[], str]:
    def render() -> str:
        if p.training:
            return "training: no KV cache"
        if value is None:
            return "the model caches no keys or values"
        paged = f", paged in blocks of {p.tokens.block} tokens" if p.tokens.block else ""
        return (
            f"per rank: ({format_bytes(usable)} usable - weights - workspace - overhead) / KV of one "
            f"{tokens}-token sequence{paged}, fullest rank = {value}"
        )

    return render
