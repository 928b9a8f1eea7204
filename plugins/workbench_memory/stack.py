"""The memory stack per GPU: the most-loaded rank, the average rank, and whether the plan fits.

``memory.per_gpu.*`` is the rank with the largest total (the pipeline stage that holds the most,
with the busiest expert-parallel share); ``memory.average_gpu.*`` averages every rank. Usable
memory is the whole device for training (context, NCCL and fragmentation are in the stack as
``overhead``) and ``gpu_memory_utilization x capacity`` for inference, which is what vLLM claims
up front; what the server leaves after weights, workspace and overhead becomes KV cache and
recurrent state (``recurrent_state``: the fixed per-sequence state of state-space and
linear-attention layers), which gives ``kv_cache.max_concurrency``. See :mod:`workbench_memory.sharding` for the layout rules and
:mod:`workbench_memory.fit` for ``memory.min_gpus``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from workbench.core.units import format_bytes
from workbench.engine.assumptions import Assumption
from workbench.engine.estimator import EstimateContext, EstimatorInfo
from workbench.engine.quantity import Outputs, Quantity, Warning, q
from workbench_memory import assumptions as A
from workbench_memory.fit import MAX_GPUS, fewest_gpus, max_concurrency
from workbench_memory.guards import out_of_memory
from workbench_memory.sharding import Plan, Stage, build_stages, make_plan

PARTS = ("weights", "gradients", "optimizer_states", "activations", "kv_cache", "recurrent_state", "overhead")
_LABELS = {
    "weights": "Weights",
    "gradients": "Gradients",
    "optimizer_states": "Optimizer states",
    "activations": "Activations",
    "kv_cache": "KV cache",
    "recurrent_state": "Recurrent state",
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
    return (
        s.weights(dp),
        s.grads(dp),
        s.optimizer(dp),
        s.activations,
        s.kv,
        s.state,
        s.overhead(dp, fragmentation),
    )


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
            terms.append(f"{s.experts:,.0f} routed-expert x {w.routed:g} B")
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

    def recurrent_state(self, value: float) -> str:
        p, s = self.p, self.s
        if p.training:
            return "training keeps no recurrent state between passes"
        if not s.state_per_sequence:
            return "no recurrent (state-space / linear-attention) layers on this rank: 0 B"
        return (
            f"{p.batch} sequences x {format_bytes(s.state_per_sequence)} per sequence on this rank "
            f"({_where(s, self.pp)}; conv window + recurrent state of each such layer, fixed whatever "
            f"the context) = {format_bytes(value)}"
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
        description="Weights, gradients, optimizer states, activations, KV cache, recurrent state and "
        "overhead on the "
        "most-loaded and the average GPU under TP/PP/DP/EP, ZeRO and offload; fit and fewest GPUs.",
    )

    def estimate(self, ctx: EstimateContext) -> Outputs:
        scenario = ctx.scenario
        par = scenario.parallel
        tp, pp, ep, dp = par.tp, par.pp, par.ep, par.dp
        activation_fn, missing = activation_function()
        p = make_plan(ctx.model, scenario, ctx.assumptions.__getitem__, activation_fn)
        ctx.assumptions.read(_ACTIVATION_IDS)  # the activation model reads them from the scenario itself
        frag = p.fragmentation
        stages = build_stages(p, tp, pp, ep)
        worst = stages[0] if pp == 1 else max(stages, key=lambda s: s.total(dp, frag))
        parts = stage_parts(worst, dp, frag)
        total = sum(parts)
        # A run for a few keys (a sweep) skips what nobody reads: the average rank, the fewest-GPUs
        # search (and the out-of-memory warning that names its answer), unread quantities. The
        # fit comes with the two figures it compares (callers that ask for it read them too).
        want = _always if ctx.wanted is None else _with_fit_inputs(ctx.wanted).__contains__
        c = p.c
        uneven_experts = bool(c.num_experts) and c.num_experts % ep != 0
        if pp == 1 and not uneven_experts:
            average = parts
        elif any(map(want, _AVERAGE_KEYS)):
            rows = [
                stage_parts(s, dp, frag)
                for s in (build_stages(p, tp, pp, ep, worst=False) if uneven_experts else stages)
            ]
            average = tuple(sum(column) / pp for column in zip(*rows))
        else:
            average = (0.0,) * len(PARTS)  # not read
        average_total = sum(average)

        capacity = ctx.gpu.memory_bytes
        utilization = 1.0 if p.training else scenario.serving.gpu_memory_utilization
        usable = capacity * utilization
        fits = total <= usable
        headroom = usable - total
        searched = want("memory.min_gpus")
        fit = fewest_gpus(p, tp, pp, ep, usable, ctx.cluster.node.gpus_per_node, stages) if searched else None
        concurrency = None
        if not p.training and want("kv_cache.max_concurrency"):
            concurrency = max_concurrency(stages, usable, dp, frag)

        used, everything = _assumption_ids(p)
        explain = _Explainer(p, worst, tp, pp, dp)
        out: dict[str, Quantity] = {}
        for (name, per_key, per_label, avg_key, avg_label), value, avg, ids in zip(
            _KEYS, parts, average, used
        ):
            # partial() rather than a closure factory: built in C, and still rendered only on read
            if want(per_key):
                out[per_key] = q(value, "B", per_label, partial(getattr(explain, name), value), ids)
            if want(avg_key):
                out[avg_key] = q(avg, "B", avg_label, partial(_average_text, avg, pp, uneven_experts), ids)
        if want("memory.per_gpu.total"):
            out["memory.per_gpu.total"] = q(
                total,
                "B",
                "Total per GPU (most-loaded)",
                lambda: (
                    " + ".join(
                        f"{_LABELS[k].lower()} {format_bytes(v)}"
                        for k, v in zip(PARTS, parts)
                        if v or k != "recurrent_state"
                    )
                    + f" = {format_bytes(total)} ({_where(worst, pp)})"
                ),
                everything,
            )
        if want("memory.average_gpu.total"):
            out["memory.average_gpu.total"] = q(
                average_total,
                "B",
                "Total per GPU (average)",
                lambda: (
                    " + ".join(format_bytes(v) for k, v in zip(PARTS, average) if v or k != "recurrent_state")
                    + f" = {format_bytes(average_total)}"
                ),
                everything,
            )
        gib = ctx.gpu.memory_gib
        if want("memory.gpu_capacity"):
            out["memory.gpu_capacity"] = q(capacity, "B", "GPU memory", lambda: f"{gib:g} GiB x 2^30 B")
        if want("memory.usable_capacity"):
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
        if want("memory.fits"):
            out["memory.fits"] = q(
                fits,
                "",
                "Fits in GPU memory",
                lambda: f"{format_bytes(total)} {'<=' if fits else '>'} {format_bytes(usable)} usable",
                everything,
            )
        if want("memory.headroom"):
            out["memory.headroom"] = q(
                headroom,
                "B",
                "Headroom on the most-loaded GPU",
                lambda: f"{format_bytes(usable)} - {format_bytes(total)} = {format_bytes(headroom)}",
                everything,
            )
        if searched:
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
        if want("kv_cache.max_concurrency"):
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
        if not fits and searched:
            warnings.append(
                out_of_memory(
                    scenario,
                    {k: v for k, v in zip(PARTS, parts) if v or k != "recurrent_state"},
                    total,
                    usable,
                    worst.index,
                    pp,
                    fit.gpus if fit else None,
                    (fit.tp, fit.pp, fit.dp) if fit else None,
                )
            )
        return Outputs(out, warnings)


def _always(key: str) -> bool:
    return True


_AVERAGE_KEYS = (*(keys[3] for keys in _KEYS), "memory.average_gpu.total")
_FIT_INPUTS = frozenset({"memory.per_gpu.total", "memory.usable_capacity"})
_WANTED: dict[int, tuple[frozenset[str], frozenset[str]]] = {}


def _with_fit_inputs(wanted: frozenset[str]) -> frozenset[str]:
    """``wanted``, plus the figures the fit compares when the fit is wanted (built once per set:
    the engine hands every estimate of a sweep the same set)."""
    hit = _WANTED.get(id(wanted))
    if hit is None or hit[0] is not wanted:
        if len(_WANTED) > 64:
            _WANTED.clear()
        hit = _WANTED[id(wanted)] = (wanted, wanted | _FIT_INPUTS if "memory.fits" in wanted else wanted)
    return hit[1]


def _assumption_ids(p: Plan) -> tuple[tuple[tuple[str, ...], ...], tuple[str, ...]]:
    """Assumption ids behind each part, in :data:`PARTS` order, and all of them in one tuple."""
    key = (p.w.quantized, p.zero == 3, p.training and bool(p.t.factored), p.c.mla and not p.training)
    found = _IDS.get(key)
    if found is None:
        quantized, zero3, factored, mla_kv = key
        weights: tuple[str, ...] = (A.QUANT_KEEPS_16BIT.id,) if quantized else ()
        if zero3:
            weights += (A.ZERO3_LIVE_LAYERS.id,)
        optimizer = (A.ADAFACTOR_MOMENTUM_BYTES.id,) if factored else ()
        kv = (A.KV_MLA_DECOMPRESSED.id,) if mla_kv else ()
        per_part = (weights, (), optimizer, _ACTIVATION_IDS, kv, (), _OVERHEAD_IDS)
        found = _IDS[key] = (per_part, tuple(i for ids in per_part for i in ids))
    return found


#: :func:`_assumption_ids` by the four facts that decide it (16 entries at most).
_IDS: dict[tuple[bool, ...], tuple[tuple[tuple[str, ...], ...], tuple[str, ...]]] = {}


def _average_text(value: float, pp: int, uneven_experts: bool) -> str:
    over = f"mean over the {pp} pipeline stages" if pp > 1 else "every rank holds the same"
    experts = "; experts averaged over EP ranks" if uneven_experts else ""
    return f"{over}{experts} = {format_bytes(value)}"


def _concurrency_formula(p: Plan, value: int | None, tokens: int, usable: float) -> Callable[[], str]:
    def render() -> str:
        if p.training:
            return "training: no KV cache"
        if value is None:
            return "the model caches no keys or values"
        paged = f", paged in blocks of {p.tokens.block} tokens" if p.tokens.block else ""
        state = " + its recurrent state" if p.c.state[p.c.layers] else ""
        return (
            f"per rank: ({format_bytes(usable)} usable - weights - workspace - overhead) / KV of one "
            f"{tokens}-token sequence{paged}{state}, fullest rank = {value}"
        )

    return render
