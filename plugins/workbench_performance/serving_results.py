"""Serving results: the ``performance.*`` keys of an inference point group, with their formulas.

One call covers a whole point group (batch sizes and lengths as numpy arrays: a sweep costs one
call) and a single estimate alike (a group of one point runs the same expressions on plain
numbers). Formulas are rendered for one point when someone reads them, from that point's own
inputs and figures (:meth:`InferenceInputs.at`, :meth:`ServePoint.at`), so they read exactly as
the single estimate of that point.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

import numpy as np

from workbench.engine.points import (
    Column,
    NotedColumn,
    PointOutputs,
    PointsContext,
    PointWarning,
    QuantityColumn,
    SharedColumn,
    column_for,
)
from workbench.engine.points import at as at_point
from workbench.engine.quantity import FixedQuantity, Quantity, Warning
from workbench_performance import efficiency as E
from workbench_performance import keys as K
from workbench_performance.arrays import has_arrays
from workbench_performance.communication import forward_comm
from workbench_performance.inference import (
    InferenceInputs,
    ServePoint,
    decode_kernels,
    generating,
    prefill_kernels,
    serve,
)
from workbench_performance.inputs import INFERENCE_NUMBERS, PointSource, inference_inputs
from workbench_performance.operators.cost import PassKernels
from workbench_performance.serving_simulation import NOT_ASKED, simulated_outputs
from workbench_performance.text import (
    g,
    idle_gpus,
    kernel_profile_warning,
    ms,
    not_applicable_columns,
    null_column,
)

Formula = Callable[[int], str]


def serving_columns(ctx: PointsContext) -> PointOutputs:
    """TTFT, TPOT, throughput and the rest over the group, with low/high bounds."""
    src = PointSource.of(ctx, INFERENCE_NUMBERS)
    gen = src.point("gen_len")
    if isinstance(gen, np.ndarray) and gen.any() and not gen.all():
        # Points that generate nothing follow another policy (prefill only) with other keys'
        # notes: each kind is estimated as a group of its own, and the two are put back in order.
        making = np.flatnonzero(gen != 0)
        prefill_only = np.flatnonzero(gen == 0)
        parts = [(idx, _serving(src.subset(idx), ctx.wanted)) for idx in (making, prefill_only)]
        return _merged(ctx.n, parts)
    return _serving(src, ctx.wanted)


def _serving(src: PointSource, wanted: frozenset[str] | None) -> PointOutputs:
    sc, n = src.scenario, src.n
    central, low, high = E.efficiencies(src.assumptions, training=False, mfu=sc.mfu)
    inp = inference_inputs(src)
    # A run for a few keys (a sweep) builds only those, and the bounds only if one is asked for.
    want = _always if wanted is None else wanted.__contains__
    batch = src.point("batch_size")
    p = serve(inp, central, batch)
    bounds = any(map(want, _BOUND_KEYS))
    slow = serve(inp, low, batch) if bounds else None
    fast = serve(inp, high, batch) if bounds else None
    used = E.assumption_ids(training=False)
    v: dict[str, Column] = {}
    makes = generating(inp)
    policy = _policy(inp)
    mfu_note = " (--mfu replaces every kernel's compute efficiency)" if sc.mfu is not None else ""

    def put(key: str, values: Any, label: str, formula: Formula | str, assumptions: tuple[str, ...] = used,
            note: str = "", unit: str | None = None) -> None:  # fmt: skip
        v[key] = column_for(n, values, K.unit(key) if unit is None else unit, label, formula, assumptions, note)

    def at(i: int) -> tuple[InferenceInputs, ServePoint]:
        return inp.at(i), p.at(i)

    # drawn assumption values (a sensitivity swing, a Monte Carlo sample) make the efficiencies
    # arrays: each point's texts then read its own
    drawn = has_arrays(central)

    fast_end, slow_end = "all assumptions at the fast end of their range", "all assumptions at the slow end of their range"
    if want("performance.ttft_s"):
        put("performance.ttft_s", p.ttft_s, "Time to first token", lambda i: _ttft_formula(*at(i)), note=policy)
    if want("performance.ttft_s_low"):
        put("performance.ttft_s_low", fast.ttft_s, "TTFT, optimistic", fast_end)
    if want("performance.ttft_s_high"):
        put("performance.ttft_s_high", slow.ttft_s, "TTFT, pessimistic", slow_end)
    if p.tpot_s is None:
        why = "the model generates no tokens (prefill only)"
        for key, label in (
            ("performance.tpot_s", "Time per output token"),
            ("performance.tpot_s_low", "TPOT, optimistic"),
            ("performance.tpot_s_high", "TPOT, pessimistic"),
            ("performance.tokens_per_s_per_user", "Output tokens/s per user"),
        ):
            v[key] = null_column(label, "s" if "tpot" in key else "tokens/s", why)
    else:
        if want("performance.tpot_s"):
            put("performance.tpot_s", p.tpot_s, "Time per output token",
                lambda i: _tpot_formula(*at(i), central.at(i)), note=policy + mfu_note)  # fmt: skip
        if want("performance.tpot_s_low"):
            put("performance.tpot_s_low", fast.tpot_s, "TPOT, optimistic", fast_end)
        if want("performance.tpot_s_high"):
            put("performance.tpot_s_high", slow.tpot_s, "TPOT, pessimistic", slow_end)
        if want("performance.tokens_per_s_per_user"):
            put("performance.tokens_per_s_per_user", p.tokens_per_s_per_user, "Output tokens/s per user",
                lambda i: f"1 / TPOT = 1 / {ms(at(i)[1].tpot_s)}")  # fmt: skip
    put("performance.e2e_latency_s", p.e2e_s, "End-to-end request latency", lambda i: _e2e_formula(*at(i)))
    if want("performance.tokens_per_s"):
        label = "Throughput (output tokens, all GPUs)" if makes else "Throughput (input tokens, all GPUs)"
        formula = lambda i: _throughput_formula(*at(i), policy)  # noqa: E731
        if drawn:
            v["performance.tokens_per_s"] = NotedColumn(
                np.asarray(p.tokens_per_s), K.unit("performance.tokens_per_s"), label, formula, used,
                lambda i: _efficiency_words(at_point(central.matmul, i), at_point(central.bandwidth, i),
                                            at_point(central.step_overhead_s, i)) + mfu_note,
            )  # fmt: skip
        else:
            put("performance.tokens_per_s", p.tokens_per_s, label, formula, note=_efficiency_text(central) + mfu_note)
    if want("performance.tokens_per_s_low"):
        put("performance.tokens_per_s_low", slow.tokens_per_s, "Throughput, pessimistic", slow_end)
    if want("performance.tokens_per_s_high"):
        put("performance.tokens_per_s_high", fast.tokens_per_s, "Throughput, optimistic", fast_end)
    if want("performance.tokens_per_s_per_gpu"):
        put("performance.tokens_per_s_per_gpu", p.tokens_per_s_per_gpu, "Throughput per GPU",
            lambda i: f"{at(i)[1].tokens_per_s:,.0f} / {at(i)[1].gpus} GPUs")  # fmt: skip
    if want("performance.input_tokens_per_s"):
        put("performance.input_tokens_per_s", p.input_tokens_per_s, "Prompt tokens processed per second",
            lambda i: f"{at(i)[1].requests_per_s:.4g} requests/s x {at(i)[0].seq_len} prompt tokens")  # fmt: skip
    if want("performance.requests_per_s"):
        put("performance.requests_per_s", p.requests_per_s, "Requests completed per second",
            lambda i: _requests_formula(*at(i)))  # fmt: skip
    if want("performance.prefill_s"):
        put("performance.prefill_s", p.prefill_s, "Prefill of one prompt",
            lambda i: f"{at(i)[0].seq_len} tokens alone on one replica: {_prefill_text(at(i)[0], central.at(i))}")  # fmt: skip
    if want("performance.decode_step_s"):
        if p.decode_step_s is not None:
            put("performance.decode_step_s", p.decode_step_s, "One decode step (whole batch)",
                lambda i: f"batch {at(i)[1].batch}, no prompt stalls")  # fmt: skip
        else:
            v["performance.decode_step_s"] = null_column("One decode step (whole batch)", "s", "the model generates no tokens")
    if want("performance.prefill_time_fraction"):
        put("performance.prefill_time_fraction", p.prefill_share, "Share of GPU time spent on prompts",
            lambda i: f"{policy}: {at(i)[1].prefill_share:.3f}")  # fmt: skip
    if want("performance.speculative_tokens_per_step"):
        if p.spec_tokens_per_step is None:
            v["performance.speculative_tokens_per_step"] = null_column(
                "Tokens per speculative step", "tokens", "speculative decoding is off"
            )
        else:
            k, alpha, spec = inp.spec_tokens, inp.spec_acceptance, p.spec_tokens_per_step
            put("performance.speculative_tokens_per_step", spec, "Tokens per speculative step",
                f"(1 - {alpha:g}^({k}+1)) / (1 - {alpha:g}) = {spec:.3f} (Leviathan et al. 2023)", ())  # fmt: skip
    if want("performance.disagg_prefill_gpus"):
        if p.prefill_gpus is None:
            v["performance.disagg_prefill_gpus"] = null_column("Prefill pool GPUs", "GPUs", "prefill runs on the decode GPUs")
        else:
            put("performance.disagg_prefill_gpus", p.prefill_gpus, "Prefill pool GPUs (disaggregated)",
                lambda i: _disagg_formula(*at(i)))  # fmt: skip
    if want("performance.gpus"):
        put("performance.gpus", p.gpus, "GPUs the throughput needs", lambda i: _gpus_formula(*at(i)), ())
    if want("performance.mfu"):
        put("performance.mfu", _mfu(p, inp), "Model FLOPs utilization while serving", lambda i: _mfu_formula(*at(i)))
    if want("performance.bound"):
        put("performance.bound", p.bound, "What bounds serving",
            lambda i: f"largest term of the {'prompt' if at(i)[1].prefill_share > 0.5 else 'decode'} pass", ())  # fmt: skip
    if want("performance.gpu_utilization"):
        put("performance.gpu_utilization", p.busy, "GPU busy fraction",
            "time in kernels / time (communication and per-step overhead idle)")  # fmt: skip
    v.update(_simulated(sc, inp, central, used, wanted, src.n))
    v.update(not_applicable_columns("training", "inference scenario: no training step"))

    warnings: list[PointWarning] = []
    fits = p.fits
    if fits is not None:
        too_many = ~fits if isinstance(fits, np.ndarray) else fits is False
        if np.any(too_many):
            warnings.append(
                PointWarning(
                    "batch-exceeds-kv-cache",
                    lambda i: _kv_message(*at(i)),
                    fix="lower --batch, add GPUs, or use --kv-dtype fp8",
                    where=too_many if isinstance(too_many, np.ndarray) else None,
                )
            )
    fixed: list[Warning] = []
    idle_gpus(sc, fixed)
    kernel_profile_warning(src.cluster.accelerator.name, inp.profile, fixed)
    warnings.extend(PointWarning(w.code, w.message, w.severity, w.fix) for w in fixed)
    return PointOutputs(v, warnings)


# --- parts of the group's keys ------------------------------------------------------------------


def _mfu(p: ServePoint, inp: InferenceInputs) -> Any:
    """Model FLOP/s over the peak of the GPUs the throughput needs (None where the peak is unknown)."""
    peak_all = p.gpus * inp.peak_flops
    if isinstance(peak_all, np.ndarray):
        if peak_all.all():
            return p.model_flops_per_s / peak_all
        ratio = np.array([None] * len(peak_all), dtype=object)
        known = peak_all != 0
        ratio[known] = (np.broadcast_to(p.model_flops_per_s, peak_all.shape)[known] / peak_all[known]).tolist()
        return ratio
    return p.model_flops_per_s / peak_all if peak_all else None


def _simulated(
    sc: Any, inp: InferenceInputs, eff: E.Efficiency, used: tuple[str, ...], wanted: frozenset[str] | None, n: int
) -> dict[str, Column]:
    """The ``performance.sim.*`` keys: one simulation per point when the scenario sets a load
    (each point's own request stream), the same empty keys for every point otherwise."""
    sv = sc.serving
    asked = sv.arrival_rate is not None or sv.trace is not None or sv.slo_ttft_s is not None or sv.slo_tpot_s is not None
    if not asked:
        if wanted is not None and not any(key in wanted for key in K.SIMULATED):
            return {}
        return _not_simulated(used)
    if n == 1:
        return {key: _column_of(q) for key, q in simulated_outputs(sc, inp, eff, used, wanted).items()}
    per_point = [simulated_outputs(sc, inp.at(i), eff.at(i), used, wanted) for i in range(n)]
    return {key: QuantityColumn([out[key] for out in per_point]) for key in per_point[0]}


@cache
def _not_simulated(used: tuple[str, ...]) -> Mapping[str, Column]:
    """The simulated keys of a scenario that sets no load: empty with the reason, in every group."""
    return {
        key: SharedColumn(FixedQuantity(None, K.unit(key), K.LABELS[key], NOT_ASKED, used, note=NOT_ASKED))
        for key in K.SIMULATED
    }


def _column_of(quantity: Quantity) -> Column:
    """A quantity every point shares, as a column."""
    if isinstance(quantity, FixedQuantity):
        return SharedColumn(quantity)
    return SharedColumn(FixedQuantity(quantity.value, quantity.unit, quantity.label, quantity.formula,
                                      quantity.assumptions, quantity.note))  # fmt: skip


def _merged(n: int, parts: list[tuple[np.ndarray, PointOutputs]]) -> PointOutputs:
    """Outputs of sub-groups (each with the indices of its points in the group) as one group's:
    each key point by point as its sub-group gave it, warnings with their masks moved over.
    A key that only one sub-group has was not asked for (the other left it out): dropped."""
    slots: list[tuple[int, int]] = [(0, 0)] * n  # point -> (part, position in the part)
    for part, (idx, _) in enumerate(parts):
        for position, i in enumerate(idx.tolist()):
            slots[i] = (part, position)
    keys = [key for key in parts[0][1].values if all(key in out.values for _, out in parts[1:])]
    values: dict[str, Column] = {}
    for key in keys:
        columns = [out.values[key] for _, out in parts]
        values[key] = QuantityColumn([columns[part].quantity(position) for part, position in slots])
    warnings = []
    for part, (idx, out) in enumerate(parts):
        for w in out.warnings:
            where = np.zeros(n, dtype=bool)
            where[idx] = True if w.where is None else w.where
            message = w.message
            if callable(message):
                message = _shifted(message, slots)
            warnings.append(PointWarning(w.code, message, w.severity, w.fix, where))
    return PointOutputs(values, warnings)


def _shifted(message: Callable[[int], str], slots: list[tuple[int, int]]) -> Callable[[int], str]:
    return lambda i: message(slots[i][1])


# --- texts ----------------------------------------------------------------------------------------

_EFFICIENCY_TEXT: dict[int, tuple[E.Efficiency, str]] = {}


def _efficiency_text(eff: E.Efficiency) -> str:
    """The efficiencies in words (the throughput's note). Efficiencies come from a cache, so a
    sweep sees the same few objects: their text is built once per object."""
    hit = _EFFICIENCY_TEXT.get(id(eff))
    if hit is not None and hit[0] is eff:
        return hit[1]
    text = _efficiency_words(eff.matmul, eff.bandwidth, eff.step_overhead_s)
    if len(_EFFICIENCY_TEXT) > 256:
        _EFFICIENCY_TEXT.clear()
    _EFFICIENCY_TEXT[id(eff)] = (eff, text)
    return text


def _efficiency_words(matmul: float, bandwidth: float, overhead_s: float) -> str:
    return f"kernel profile x {matmul:g} (compute), x {bandwidth:g} (bandwidth), overhead {ms(overhead_s)}"


def _policy(inp: InferenceInputs) -> str:
    if not generating(inp):
        return "prefill only"
    if inp.disaggregated:
        return "disaggregated prefill/decode"
    if not inp.continuous:
        return "static batching"
    return "continuous batching, chunked prefill" if inp.chunked else "continuous batching"


def _prefill_text(inp: InferenceInputs, eff: E.Efficiency) -> str:
    k = prefill_kernels(inp, eff, 1, breakdown=True)
    return f"PP {inp.pp} x [{kernel_breakdown(k, inp)}] + TP communication + overhead"


def _ttft_formula(inp: InferenceInputs, p: ServePoint) -> str:
    policy = _policy(inp)
    if policy == "continuous batching":
        return (
            f"prefill {ms(p.prefill_s)} + half a decode step {ms((p.decode_step_s or 0) / 2)} "
            "+ queueing behind "
            f"other prompts (M/D/1, load {p.prefill_share:.2f}) = {ms(p.ttft_s)}"
        )
    if policy == "continuous batching, chunked prefill":
        return (
            f"ceil({inp.seq_len} / {inp.chunk_tokens}) mixed steps of batch {p.batch} + a chunk "
            f"= {ms(p.ttft_s)}"
        )
    if policy == "disaggregated prefill/decode":
        return f"prefill {ms(p.prefill_s)} + KV transfer of {inp.seq_len} tokens = {ms(p.ttft_s)}"
    if policy == "static batching":
        return f"prefill of the whole batch ({p.batch} x {inp.seq_len} tokens) = {ms(p.ttft_s)}"
    return f"prefill of {p.batch} x {inp.seq_len} tokens = {ms(p.ttft_s)}"


def _tpot_formula(inp: InferenceInputs, p: ServePoint, eff: E.Efficiency) -> str:
    mb = max(p.batch / inp.pp, 1.0) if inp.pp > 1 else p.batch
    comm = forward_comm(inp.comm, mb, eff)
    k = decode_kernels(inp, eff, p.batch, breakdown=True)
    text = (
        f"PP {inp.pp} x [{kernel_breakdown(k, inp)}] + TP {ms(comm.tp_s)} + EP {ms(comm.ep_s)} "
        "+ PP sends "
        f"{ms(comm.pp_s)} + overhead {ms(eff.step_overhead_s)} = decode step {ms(p.decode_step_s)}"
    )
    if p.spec_tokens_per_step:
        text += (
            f"; speculative: (k draft steps + verify of k+1 tokens) / {p.spec_tokens_per_step:.3f} "
            "tokens per step"
        )
    if p.prefill_share and _policy(inp).startswith("continuous"):
        text += f"; + prompt stalls ({p.prefill_share:.1%} of time)"
    return text + f" = {ms(p.tpot_s)}"


def _e2e_formula(inp: InferenceInputs, p: ServePoint) -> str:
    if p.tpot_s:
        return f"TTFT {ms(p.ttft_s)} + ({inp.gen_len} - 1) x TPOT {ms(p.tpot_s)}"
    return f"prefill {ms(p.e2e_s)}"


def _throughput_formula(inp: InferenceInputs, p: ServePoint, policy: str) -> str:
    gen = inp.gen_len
    if p.tpot_s and policy != "static batching":
        text = f"{inp.dp} replicas x {inp.batch} sequences / TPOT {ms(p.tpot_s)}"
    else:
        text = f"{inp.dp} replicas x {inp.batch} x {gen or inp.seq_len} tokens per cycle"
    return text + f" = {p.tokens_per_s:,.0f}"


def _requests_formula(inp: InferenceInputs, p: ServePoint) -> str:
    gen, s = inp.gen_len, inp.seq_len
    if gen:
        return f"{p.tokens_per_s:,.0f} tokens/s / {gen or s} tokens per request"
    return f"{p.tokens_per_s:,.0f} / {s}"


def _disagg_formula(inp: InferenceInputs, p: ServePoint) -> str:
    return (
        f"ceil({p.requests_per_s:.4g} requests/s x prefill {ms(p.prefill_s)}) replicas x "
        f"{inp.tp * inp.pp} GPUs"
    )


def _gpus_formula(inp: InferenceInputs, p: ServePoint) -> str:
    return f"{inp.num_gpus} serving" + (f" + {p.prefill_gpus} prefill" if p.prefill_gpus else "")


def _mfu_formula(inp: InferenceInputs, p: ServePoint) -> str:
    return f"{g(p.model_flops_per_s)} FLOP/s (decode + prefill) / ({p.gpus} x {g(inp.peak_flops)} FLOP/s)"


def _kv_message(inp: InferenceInputs, p: ServePoint) -> str:
    return (
        f"{inp.batch} concurrent sequences of {inp.seq_len} + {inp.gen_len} tokens exceed the KV cache, which holds "
        f"{inp.max_concurrency:.0f} per replica: the server would queue or preempt requests"
    )


def kernel_breakdown(k: PassKernels, inp: InferenceInputs) -> str:
    """The kernels of one stage's pass in words: group, time, what bounds it (the per-operator
    breakdown --explain shows)."""
    rows = ", ".join(f"{name} {ms(float(t))} ({bound})" for name, t, bound in k.rows or ())
    return f"kernels on {inp.profile.title} profile: {rows}"


def _always(key: str) -> bool:
    return True


#: The keys read from the pessimistic and optimistic runs of the serving model.
_BOUND_KEYS = (
    "performance.ttft_s_low",
    "performance.ttft_s_high",
    "performance.tpot_s_low",
    "performance.tpot_s_high",
    "performance.tokens_per_s_low",
    "performance.tokens_per_s_high",
)
