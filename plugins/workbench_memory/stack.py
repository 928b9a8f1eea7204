"""The memory stack per GPU: the most-loaded rank, the average rank, and whether the plan fits.

``memory.per_gpu.*`` is the rank with the largest total (the pipeline stage that holds the most,
with the busiest expert-parallel share); ``memory.average_gpu.*`` averages every rank. Usable
memory is the whole device for training (context, NCCL and fragmentation are in the stack as
``overhead``). For inference it follows the serving engine's rule: ``fraction x capacity``
claimed up front (vLLM gpu_memory_utilization, SGLang mem_fraction_static, generic), or, for
TensorRT-LLM, everything besides the cache plus ``free_gpu_memory_fraction`` of what that leaves
free. What the server leaves after weights, workspace and overhead becomes KV cache and
recurrent state (``recurrent_state``: the fixed per-sequence state of state-space and
linear-attention layers), which gives ``kv_cache.max_concurrency``. See
:mod:`workbench_memory.sharding` for the layout rules and :mod:`workbench_memory.fit` for
``memory.min_gpus``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

from workbench.core.scenario import ServingEngine
from workbench.core.units import format_bytes
from workbench.engine.assumptions import Assumption
from workbench.engine.estimator import EstimatorInfo
from workbench.engine.points import Column, PointOutputs, PointsContext, PointWarning, col
from workbench.engine.quantity import Warning
from workbench.engine.serving_engines import memory_knob, memory_rule
from workbench.engine.serving_engines import title as engine_title
from workbench_memory import assumptions as A
from workbench_memory.fit import MAX_GPUS, Fit, fewest_gpus, max_concurrency
from workbench_memory.guards import largest_parts, out_of_memory, out_of_memory_fix
from workbench_memory.sharding import Plan, Stage, build_stages, make_plan, pick

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
            f"{s.plain:,.0f} embedding/head/norm x {w.plain:g} B"
            if not w.embedding
            else f"{s.plain:,.0f} embedding/head/norm at their own types",
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

    def estimate_points(self, ctx: PointsContext) -> PointOutputs:
        scenario = ctx.scenario
        par = scenario.parallel
        tp, pp, ep, dp = par.tp, par.pp, par.ep, par.dp
        n = ctx.n
        activation_fn, missing = activation_function()
        # A group of one point runs on its Python ints: the same arithmetic, without numpy's cost
        # per operation, which a single estimate (the GUI, the solvers' many runs) would pay.
        points = ctx.points if n > 1 else {name: int(values[0]) for name, values in ctx.points.items()}
        p = make_plan(ctx.model, scenario, ctx.assumptions.__getitem__, activation_fn, points)
        ctx.assumptions.read(_ACTIVATION_IDS)  # the activation model reads them from the scenario itself
        frag = p.fragmentation
        stages = build_stages(p, tp, pp, ep)
        # The most-loaded stage may differ from point to point (the batch moves activations and KV
        # against the fixed weights): pick it per point, the first of equals as max() did.
        if pp == 1:
            worst_index: Any = 0
            parts = stage_parts(stages[0], dp, frag)
        else:
            worst_index = np.argmax(np.stack([_full(s.total(dp, frag), n) for s in stages]), axis=0)
            if (worst_index == worst_index[0]).all():
                worst_index = int(worst_index[0])
                parts = stage_parts(stages[worst_index], dp, frag)
            else:
                rows = np.stack([np.stack([_full(v, n) for v in stage_parts(s, dp, frag)]) for s in stages])
                parts = tuple(rows[worst_index, k, np.arange(n)] for k in range(len(PARTS)))
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
            rows_avg = [
                stage_parts(s, dp, frag)
                for s in (build_stages(p, tp, pp, ep, worst=False) if uneven_experts else stages)
            ]
            average = tuple(sum(column) / pp for column in zip(*rows_avg))
        else:
            average = (0.0,) * len(PARTS)  # not read
        average_total = sum(average)

        capacity, capacity_text, capacity_ids = _gpu_capacity(ctx)
        engine = scenario.serving.engine
        utilization = 1.0 if p.training else scenario.serving.gpu_memory_utilization
        searched = want("memory.min_gpus")
        gpus_per_node = ctx.cluster.node.gpus_per_node
        if not p.training and memory_rule(engine) == "free":
            # The cache gets `utilization` of what weights, workspace and overhead leave free: the
            # search charges the cache 1/utilization against the whole GPU, which is that rule.
            search_plan = replace(p, cache_charge=1.0 / utilization)
            search_stages = build_stages(search_plan, tp, pp, ep)
            limit = capacity
            kv_index, state_index = PARTS.index("kv_cache"), PARTS.index("recurrent_state")
            others = total - parts[kv_index] - parts[state_index]
            usable: Any = _free_rule_usable(others, capacity, utilization)
            fits = _every_stage_fits(search_stages, dp, frag, capacity)
        else:
            search_plan, search_stages, limit, others = p, stages, capacity * utilization, None
            usable = limit
            fits = total <= usable
        headroom = usable - total
        fit = fewest_gpus(search_plan, tp, pp, ep, limit, gpus_per_node, search_stages, n) if searched else None
        concurrency: Any = None
        if not p.training and want("kv_cache.max_concurrency"):
            concurrency = max_concurrency(search_stages, limit, dp, frag, n)

        used, everything = _assumption_ids(p)

        def stage_at(i: int) -> Stage:
            return stages[pick(worst_index, i)].at(i)

        def explain(i: int) -> _Explainer:
            return _Explainer(p.at(i), stage_at(i), tp, pp, dp)

        out: dict[str, Column] = {}
        for (name, per_key, per_label, avg_key, avg_label), value, avg, ids in zip(
            _KEYS, parts, average, used
        ):
            # partial() rather than a closure factory: built in C, and still rendered only on read
            if want(per_key):
                formula = partial(_explain_part, explain, name, value)
                out[per_key] = col(_value(value), "B", per_label, formula, ids)
            if want(avg_key):
                out[avg_key] = col(
                    _value(avg), "B", avg_label, partial(_average_formula, avg, pp, uneven_experts), ids
                )
        if want("memory.per_gpu.total"):
            out["memory.per_gpu.total"] = col(
                _value(total),
                "B",
                "Total per GPU (most-loaded)",
                lambda i: (
                    " + ".join(
                        f"{_LABELS[k].lower()} {format_bytes(v)}"
                        for k, v in zip(PARTS, (pick(part, i) for part in parts))
                        if v or k != "recurrent_state"
                    )
                    + f" = {format_bytes(pick(total, i))} ({_where(stage_at(i), pp)})"
                ),
                everything,
            )
        if want("memory.average_gpu.total"):
            out["memory.average_gpu.total"] = col(
                _value(average_total),
                "B",
                "Total per GPU (average)",
                lambda i: (
                    " + ".join(
                        format_bytes(v)
                        for k, v in zip(PARTS, (pick(part, i) for part in average))
                        if v or k != "recurrent_state"
                    )
                    + f" = {format_bytes(pick(average_total, i))}"
                ),
                everything,
            )
        gib = ctx.gpu.memory_gib
        if want("memory.gpu_capacity"):
            out["memory.gpu_capacity"] = col(capacity, "B", "GPU memory", lambda _: capacity_text, capacity_ids)
        if want("memory.usable_capacity"):
            out["memory.usable_capacity"] = col(
                _value(usable),
                "B",
                "Usable GPU memory",
                partial(_usable_formula, p.training, engine, capacity, utilization, usable, others),
            )
        if want("memory.fits"):
            out["memory.fits"] = col(
                _value(fits),
                "",
                "Fits in GPU memory",
                lambda i: (
                    f"{format_bytes(pick(total, i))} {'<=' if pick(fits, i) else '>'} "
                    f"{format_bytes(pick(usable, i))} usable"
                ),
                everything,
            )
        if want("memory.headroom"):
            out["memory.headroom"] = col(
                _value(headroom),
                "B",
                "Headroom on the most-loaded GPU",
                lambda i: (
                    f"{format_bytes(pick(usable, i))} - {format_bytes(pick(total, i))} = "
                    f"{format_bytes(pick(headroom, i))}"
                ),
                everything,
            )
        if fit is not None:
            out["memory.min_gpus"] = col(
                _optional_ints([f.gpus if f else None for f in fit]),
                "GPUs",
                "Fewest GPUs that fit",
                partial(_min_gpus_formula, fit),
                everything,
            )
        if want("kv_cache.max_concurrency"):
            tokens = points["seq_len"] + points["gen_len"]
            out["kv_cache.max_concurrency"] = col(
                concurrency,
                "sequences",
                "Concurrent sequences the KV cache holds",
                partial(_concurrency_formula, p, concurrency, tokens, limit, others is not None),
                everything,
            )
        warnings: list[PointWarning] = []
        if missing:
            warnings.append(
                PointWarning(
                    "activations-unavailable",
                    f"The activation model could not be loaded ({missing}); activations are left out "
                    "of the totals.",
                    "error",
                    "reinstall the workbench_memory plugin",
                )
            )
        if fit is not None:
            warnings.extend(_out_of_memory(scenario, parts, total, usable, fits, worst_index, pp, fit, n))
        return PointOutputs(out, warnings)

def _full(value: Any, n: int) -> np.ndarray:
    """A per-point amount as an array of ``n`` entries."""
    return value if isinstance(value, np.ndarray) else np.full(n, value)


def _gpu_capacity(ctx: Any) -> tuple[float, str, tuple[str, ...]]:
    """The memory the GPU may use, its formula and the assumptions behind it: the whole memory of
    a discrete GPU; an Apple chip's unified memory less what macOS keeps (memory.unified_gpu_share)."""
    gpu = ctx.gpu
    gib = gpu.memory_gib
    if gpu.vendor != "apple" or gpu.category != "soc":
        return gpu.memory_bytes, f"{gib:g} GiB x 2^30 B", ()
    (setting,) = ctx.assumptions.read((A.UNIFIED_GPU_SHARE.id,))
    # (a point group that draws this assumption gets its first value: capacity is one figure)
    setting = float(np.ravel(setting)[0]) if isinstance(setting, np.ndarray) else float(setting)
    share = A.unified_gpu_share(gib, setting)
    rule = "as set" if setting > 0 else "macOS default for this RAM"
    return (
        gpu.memory_bytes * share,
        f"{gib:g} GiB unified x {share:.3g} the GPU may wire ({rule}; the rest stays with macOS)",
        (A.UNIFIED_GPU_SHARE.id,),
    )


def _free_rule_usable(others: Any, capacity: float, fraction: float) -> Any:
    """What a free-memory rule lets the rank fill: everything besides the cache, plus ``fraction``
    of what that leaves of the GPU (the whole GPU when nothing is left: it does not fit)."""
    if isinstance(others, np.ndarray):
        return np.where(others <= capacity, others + fraction * (capacity - others), capacity)
    return others + fraction * (capacity - others) if others <= capacity else capacity


def _every_stage_fits(stages: list[Stage], dp: int, fragmentation: float, capacity: float) -> Any:
    """Whether every stage (its cache charged as the search charges it) fits the whole GPU."""
    fits: Any = True
    for s in stages:
        fits = fits & (s.total(dp, fragmentation) <= capacity)
    return fits


def _usable_formula(
    training: bool, engine: ServingEngine, capacity: float, fraction: float, usable: Any, others: Any, i: int
) -> str:
    if training:
        return (
            f"training: the whole {format_bytes(capacity)}; context, NCCL and fragmentation are counted as overhead"
        )
    name, knob = engine_title(engine), memory_knob(engine)
    if others is not None:
        rest = pick(others, i)
        return (
            f"{name}: weights, workspace and overhead {format_bytes(rest)} + {knob} "
            f"{fraction:g} x ({format_bytes(capacity)} - {format_bytes(rest)} left free) = "
            f"{format_bytes(pick(usable, i))}"
        )
    # generic keeps the wording it always had (vLLM's rule, which it follows)
    claims = "vLLM claims this fraction up front" if engine is ServingEngine.GENERIC else f"{name}: claimed up front"
    return f"{format_bytes(capacity)} x {knob} {fraction:g} ({claims}) = {format_bytes(pick(usable, i))}"


def _value(value: Any) -> Any:
    """A column's values: the array, or the one Python number every point shares."""
    return value.item() if isinstance(value, np.generic) else value


def _optional_ints(values: list[int | None]) -> Any:
    """Ints per point, some None: one shared value when all agree on None, else an array (object
    where None and ints mix, so each point reads back its Python value)."""
    if all(v is None for v in values):
        return None
    if any(v is None for v in values):
        return np.array(values, dtype=object)
    return np.array(values, dtype=np.int64)


def _explain_part(explain: Callable[[int], _Explainer], name: str, value: Any, i: int) -> str:
    return getattr(explain(i), name)(pick(value, i))


def _average_formula(value: Any, pp: int, uneven_experts: bool, i: int) -> str:
    return _average_text(pick(value, i), pp, uneven_experts)


def _min_gpus_formula(fits: list[Fit | None], i: int) -> str:
    fit = fits[i]
    if fit:
        return (
            f"TP {fit.tp} x PP {fit.pp} x DP {fit.dp} = {fit.gpus} (scenario's TP/PP/EP/ZeRO "
            "kept; DP "
            "added as ZeRO needs, then TP and PP doubled)"
        )
    return (
        f"no layout up to {MAX_GPUS} GPUs fits: the per-sequence or per-micro-batch memory alone "
        "exceeds a GPU"
    )


def _out_of_memory(
    scenario: Any,
    parts: tuple[Any, ...],
    total: Any,
    usable: Any,
    fits: Any,
    worst_index: Any,
    pp: int,
    fit: list[Fit | None],
    n: int,
) -> list[PointWarning]:
    """The out-of-memory warning of each point that does not fit. Its fix names the point's largest
    parts and fewest GPUs, so points are grouped by the fix they get (a warning's fix is one text);
    the message is rendered per point when read."""
    if fits is True or (isinstance(fits, np.ndarray) and fits.all()):
        return []
    failing = np.flatnonzero(~_full(fits, n))

    def point_parts(i: int) -> dict[str, float]:
        return {k: v for k, v in zip(PARTS, (pick(part, i) for part in parts)) if v or k != "recurrent_state"}

    def point_layout(i: int) -> tuple[int | None, tuple[int, int, int] | None]:
        f = fit[i]
        return (f.gpus, (f.tp, f.pp, f.dp)) if f else (None, None)

    def message(i: int) -> str:
        return out_of_memory(scenario, point_parts(i), pick(total, i), pick(usable, i), pick(worst_index, i), pp,
                             *point_layout(i)).message  # fmt: skip

    # The fix is decided per point (its two largest parts, its fewest GPUs) but written once per
    # distinct decision; the message, with its byte counts, only for the point someone reads.
    by_fix: dict[str, list[int]] = {}
    fixes: dict[tuple[Any, ...], str] = {}
    tops = _two_largest(parts, failing)
    for j, i in enumerate(failing.tolist()):
        largest = frozenset(largest_parts(point_parts(i)) if tops is None else tops[j])
        decision = (largest, *point_layout(i))
        fix = fixes.get(decision)
        if fix is None:
            fix = fixes[decision] = out_of_memory_fix(scenario, set(largest), *point_layout(i))
        by_fix.setdefault(fix, []).append(i)
    out = []
    for fix, where in by_fix.items():
        mask = np.zeros(n, dtype=bool)
        mask[where] = True
        out.append(PointWarning("out-of-memory", message, "error", fix, mask))
    return out


def _two_largest(parts: tuple[Any, ...], points: np.ndarray) -> list[tuple[str, str]] | None:
    """The names of the two largest parts at each of ``points``, ordered as
    :func:`~workbench_memory.guards.largest_parts` orders them (by amount, then by name, both
    descending; an empty recurrent state is no part), over arrays; None when a part holds exact
    Python ints (an object array), which only that function compares exactly."""
    if any(isinstance(v, np.ndarray) and v.dtype == object for v in parts):
        return None
    m = len(points)
    amounts = np.empty((len(PARTS), m))
    for row, (name, value) in enumerate(zip(PARTS, parts)):
        amounts[row] = value[points] if isinstance(value, np.ndarray) else value
        if name == "recurrent_state":
            amounts[row][amounts[row] == 0] = -np.inf
    names = np.broadcast_to(np.array(_NAME_RANK)[:, None], amounts.shape)
    order = np.lexsort((names, amounts), axis=0)  # ascending by amount, then by name
    first, second = order[-1], order[-2]
    return [(PARTS[a], PARTS[b]) for a, b in zip(first.tolist(), second.tolist())]


#: Each part's place in name order (ties in amount are broken by name, as sorting the pairs does).
_NAME_RANK = tuple(sorted(PARTS).index(name) for name in PARTS)


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
    # A GGUF preset fixes every tensor's type itself: the keep-16-bit switch does not apply.
    keeps = p.w.quantized and not p.w.fmt.is_gguf and not p.w.embedding
    key = (keeps, p.zero == 3, p.training and bool(p.t.factored), p.c.mla and not p.training)
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


def _concurrency_formula(p: Plan, values: Any, tokens: Any, usable: float, free_rule: bool, i: int) -> str:
    if p.training:
        return "training: no KV cache"
    value = pick(values, i)
    if value is None:
        return "the model caches no keys or values"
    paged = f", paged in blocks of {p.tokens.block} tokens" if p.tokens.block else ""
    state = " + its recurrent state" if p.c.state[p.c.layers] else ""
    room = f"({format_bytes(usable)} usable - weights - workspace - overhead)"
    if free_rule:
        room = f"free_gpu_memory_fraction {p.scenario.serving.gpu_memory_utilization:g} x {room}"
    return (
        f"per rank: {room} / KV of one "
        f"{pick(tokens, i)}-token sequence{paged}{state}, fullest rank = {value}"
    )
