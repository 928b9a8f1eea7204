"""Training results: the ``performance.*`` keys of a training point group, with their formulas.

One call covers a whole point group (micro-batch sizes and sequence lengths as numpy arrays: a
sweep costs one call) and a single estimate alike (a group of one point runs the same
expressions on plain numbers). Formulas and warnings are rendered for one point when someone
reads them, from that point's own inputs and figures (:meth:`TrainingInputs.at`,
:meth:`TrainStep.at`), so they read exactly as the single estimate of that point.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

import numpy as np

from workbench.core.scenario import Offload
from workbench.engine.points import (
    Column,
    PointOutputs,
    PointsContext,
    PointWarning,
    column_for,
)
from workbench.engine.points import at as value_at
from workbench.engine.quantity import Warning
from workbench_performance import efficiency as E
from workbench_performance.arrays import ratio
from workbench_performance.inputs import TRAINING_NUMBERS, PointSource, training_inputs
from workbench_performance.text import (
    g,
    idle_gpus,
    kernel_profile_warning,
    ms,
    not_applicable_columns,
    null_column,
)
from workbench_performance.training import TrainingInputs, TrainStep, forward_kernels, train_step

Formula = Callable[[int], str]


def training_columns(ctx: PointsContext) -> PointOutputs:
    """Step time, MFU/HFU, bubble, exposed communication and time to train, with low/high bounds."""
    src = PointSource.of(ctx, TRAINING_NUMBERS)
    if src.n == 1:
        return _training(src, ctx.wanted)
    # A division by zero (a point whose peak FLOP/s is unknown, or whose global batch leaves it no
    # micro-batch) raises in a single estimate; it raises here too, so that the engine estimates
    # such a group point by point and each point fails (or not) exactly as alone.
    with np.errstate(divide="raise", invalid="raise", over="ignore"):
        return _training(src, ctx.wanted)


def _training(src: PointSource, wanted: frozenset[str] | None) -> PointOutputs:
    sc, n = src.scenario, src.n
    central, low, high = E.efficiencies(src.assumptions, training=True)
    inp = training_inputs(src)
    # A run for a few keys (a sweep) builds only those, and the bounds only if one is asked for.
    want = _always if wanted is None else wanted.__contains__
    t = train_step(inp, central)
    bounds = any(map(want, _BOUND_KEYS))
    slow = train_step(inp, low) if bounds else None
    fast = train_step(inp, high) if bounds else None
    used = E.assumption_ids(training=True)
    v: dict[str, Column] = {}
    par = sc.parallel
    m = inp.microbatches
    mfu_note = f"step time from --mfu {sc.mfu:g}" if t.overridden else ""

    def put(key: str, values: Any, unit: str, label: str, formula: Formula | str,
            assumptions: tuple[str, ...] = used, note: str = "") -> None:  # fmt: skip
        v[key] = column_for(n, values, unit, label, formula, assumptions, note)

    def at(i: int) -> tuple[TrainingInputs, TrainStep]:
        return inp.at(i), t.at(i)

    fast_end, slow_end = "all assumptions at the fast end of their range", "all assumptions at the slow end of their range"
    if want("performance.step_time_s"):
        put("performance.step_time_s", t.step_s, "s", "Optimizer step time", lambda i: _step_formula(*at(i)),
            note=mfu_note)  # fmt: skip
    if want("performance.step_time_s_low"):
        put("performance.step_time_s_low", fast.step_s, "s", "Step time, optimistic", fast_end)
    if want("performance.step_time_s_high"):
        put("performance.step_time_s_high", slow.step_s, "s", "Step time, pessimistic", slow_end)
    if want("performance.tokens_per_s"):
        put("performance.tokens_per_s", t.tokens_per_s, "tokens/s", "Training throughput (tokens, all GPUs)",
            lambda i: _throughput_formula(*at(i)))  # fmt: skip
    if want("performance.tokens_per_s_low"):
        put("performance.tokens_per_s_low", slow.tokens_per_s, "tokens/s", "Throughput, pessimistic", slow_end)
    if want("performance.tokens_per_s_high"):
        put("performance.tokens_per_s_high", fast.tokens_per_s, "tokens/s", "Throughput, optimistic", fast_end)
    if want("performance.tokens_per_s_per_gpu"):
        put("performance.tokens_per_s_per_gpu", t.tokens_per_s / inp.world, "tokens/s", "Throughput per GPU",
            lambda i: f"{at(i)[1].tokens_per_s:,.0f} / {inp.world} GPUs")  # fmt: skip
    if want("performance.mfu"):
        put("performance.mfu", t.mfu, "fraction", "Model FLOPs utilization (MFU)", lambda i: _mfu_formula(*at(i)))
    if want("performance.hfu"):
        put("performance.hfu", t.hfu, "fraction", "Hardware FLOPs utilization (HFU)", lambda i: _hfu_formula(*at(i)))
    if want("performance.compute_s"):
        put("performance.compute_s", t.compute_s, "s", "Compute per step (one GPU)",
            lambda i: _compute_formula(inp.at(i), central))  # fmt: skip
    if want("performance.pipeline_bubble_fraction"):
        put("performance.pipeline_bubble_fraction", t.bubble_fraction, "fraction", "Pipeline bubble",
            lambda i: _bubble_formula(inp.at(i), sc), ())  # fmt: skip
    if want("performance.pipeline_bubble_s"):
        put("performance.pipeline_bubble_s", t.bubble_s, "s", "Pipeline bubble per step",
            lambda i: f"{inp.at(i).microbatches} x micro-batch time x {t.at(i).bubble_fraction:.4g}")  # fmt: skip
    if want("performance.recompute_overhead_fraction"):
        rec_share = ratio(inp.recompute_flops, inp.fwd_flops + inp.bwd_flops)
        put("performance.recompute_overhead_fraction", rec_share, "fraction", "Recompute cost (share of model FLOPs)",
            lambda i: _recompute_formula(inp.at(i), sc), ())  # fmt: skip
    if want("performance.comm_exposed_s"):
        put("performance.comm_exposed_s", t.comm_s, "s", "Exposed communication per step",
            lambda i: _comm_formula(t.at(i), central))  # fmt: skip
    if want("performance.optimizer_s"):
        put("performance.optimizer_s", t.optimizer_s, "s", "Optimizer update per step", _optimizer_formula(inp, central))
    if want("performance.microbatches"):
        put("performance.microbatches", m, "count", "Micro-batches per step (gradient accumulation)",
            lambda i: f"global batch / (micro-batch {inp.at(i).sequences} x DP {par.dp}) = {inp.at(i).microbatches}",
            ())  # fmt: skip
    if want("performance.gpus"):
        put("performance.gpus", inp.world, "GPUs", "GPUs computing", f"TP {par.tp} x PP {par.pp} x DP {par.dp}", ())
    if want("performance.bound"):
        put("performance.bound", t.bound, "", "What bounds the step", lambda i: _bound_formula(t.at(i)), ())
    if want("performance.gpu_utilization"):
        put("performance.gpu_utilization", t.busy, "fraction", "GPU busy fraction",
            "(compute + optimizer) / step time")  # fmt: skip
    tokens = sc.train_tokens
    if tokens is None:
        v.update(_no_train_tokens())
    else:
        seconds = tokens / t.tokens_per_s
        if want("performance.train_time_s"):
            put("performance.train_time_s", seconds, "s", "Time to train",
                lambda i: f"{tokens:.4g} tokens / {t.at(i).tokens_per_s:,.0f} tokens/s")  # fmt: skip
        if want("performance.train_time_days"):
            days = seconds / 86400
            put("performance.train_time_days", days, "days", "Time to train",
                lambda i: f"{value_at(seconds, i):,.0f} s / 86,400")  # fmt: skip
        if want("performance.train_time_days_low"):
            put("performance.train_time_days_low", tokens / fast.tokens_per_s / 86400, "days",
                "Time to train, optimistic", fast_end)  # fmt: skip
        if want("performance.train_time_days_high"):
            put("performance.train_time_days_high", tokens / slow.tokens_per_s / 86400, "days",
                "Time to train, pessimistic", slow_end)  # fmt: skip
    v.update(not_applicable_columns("inference", "training scenario: no serving latency"))
    return PointOutputs(v, _warnings(src, inp, t))


def _warnings(src: PointSource, inp: TrainingInputs, t: TrainStep) -> list[PointWarning]:
    """The step's warnings, in the order a single estimate gives them; those that depend on the
    point carry the mask of the points they concern."""
    sc = src.scenario
    par = sc.parallel
    warnings: list[PointWarning] = []
    if par.pp > 1:
        where = _mask(inp.microbatches < par.pp)
        if where is not False:
            warnings.append(
                PointWarning(
                    "pipeline-underfilled",
                    lambda i: _underfilled_message(inp.at(i), t.at(i)),
                    fix="raise --global-batch or lower --batch so that micro-batches >= 4 x PP",
                    where=where,
                )
            )
    if not t.overridden:
        step, comm = t.step_s, t.comm_s
        where = _mask((step > 0) & (comm >= 0.5 * step) if isinstance(step, np.ndarray) else step > 0 and comm >= 0.5 * step)
        if where is not False:
            warnings.append(
                PointWarning(
                    "communication-bound",
                    lambda i: _communication_bound_message(t.at(i)),
                    fix="give each GPU more tokens per step (raise --batch, --seq-len or --global-batch for "
                    "gradient accumulation), use fewer GPUs, or a faster interconnect",
                    where=where,
                )
            )
    fixed: list[Warning] = []
    if inp.offload_bytes:
        fixed.append(
            Warning(
                "offload-optimizer-cpu",
                "optimizer offload: only the PCIe transfers are timed; the CPU optimizer step itself "
                "is not, so "
                "the step time is optimistic",
                severity="info",
            )
        )
    if par.offload_params is not Offload.NONE:
        fixed.append(
            Warning(
                "offload-params-untimed",
                "weight offload traffic is not timed: the step time is optimistic",
                severity="info",
            )
        )
    idle_gpus(sc, fixed)
    kernel_profile_warning(src.cluster.accelerator.name, inp.profile, fixed)
    warnings.extend(PointWarning(w.code, w.message, w.severity, w.fix) for w in fixed)
    return warnings


def _mask(condition: Any) -> Any:
    """A warning's ``where``: the bool array of a point group (False when no point is concerned),
    None (every point) or False for one configuration."""
    if isinstance(condition, np.ndarray):
        return condition if condition.any() else False
    return None if condition else False


# --- texts ----------------------------------------------------------------------------------------


def _step_formula(inp: TrainingInputs, t: TrainStep) -> str:
    if t.overridden:
        return (
            f"model FLOPs {g(inp.model_flops_step)} / ({inp.world} GPUs x {g(inp.peak_flops)} FLOP/s x MFU "
            f"{inp.mfu:g}) = {t.step_s:.4g} s"
        )
    return (
        f"{inp.microbatches} micro-batches x (compute + exposed TP/EP + PP sends) x (1 + bubble "
        f"{t.bubble_fraction:.3g}) + exposed DP {t.dp_exposed_s:.4g} s + optimizer {t.optimizer_s:.4g} s = "
        f"compute {t.compute_s:.4g} + comm {t.comm_s:.4g} + bubble {t.bubble_s:.4g} + optimizer "
        f"{t.optimizer_s:.4g} = {t.step_s:.4g} s"
    )


def _throughput_formula(inp: TrainingInputs, t: TrainStep) -> str:
    return f"{inp.tokens_step:,.0f} tokens per step / {t.step_s:.4g} s"


def _mfu_formula(inp: TrainingInputs, t: TrainStep) -> str:
    return (
        f"(forward + backward) {g(inp.model_flops_step)} FLOP per step / ({inp.world} "
        f"GPUs x {g(inp.peak_flops)} FLOP/s x {t.step_s:.4g} s) (PaLM, Chowdhery et al. 2022, "
        "app. B)"
    )


def _hfu_formula(inp: TrainingInputs, t: TrainStep) -> str:
    return (
        f"(forward + backward + recompute) {g(inp.hardware_flops_step)} FLOP / ({inp.world}"
        f" x {g(inp.peak_flops)} x {t.step_s:.4g} s)"
    )


def _compute_formula(inp: TrainingInputs, central: E.Efficiency) -> str:
    return (
        f"{inp.microbatches} micro-batches x (forward + backward (2x the GEMMs, attention backward "
        f"{g(inp.bwd_flops)} FLOP in all) + recompute {g(inp.recompute_flops)} FLOP); forward "
        f"{forward_breakdown(inp, central)}"
    )


def _bubble_formula(inp: TrainingInputs, sc: Any) -> str:
    v, m = inp.virtual_stages, inp.microbatches
    return (
        f"(p - 1) / ({'v x ' if v > 1 else ''}m) = ({sc.parallel.pp} - 1) / "
        f"({str(v) + ' x ' if v > 1 else ''}{m}) "
        f"[{sc.parallel.pipeline_schedule.value}; Narayanan et al. 2021]"
    )


def _recompute_formula(inp: TrainingInputs, sc: Any) -> str:
    return f"recompute {sc.recompute.value}: {g(inp.recompute_flops)} / {g(inp.fwd_flops + inp.bwd_flops)}"


def _comm_formula(t: TrainStep, central: E.Efficiency) -> str:
    return (
        f"TP/EP {t.tp_ep_s:.4g} s (overlap {central.tp_overlap:g}) + PP sends {t.pp_s:.4g} s + DP "
        f"{t.dp_s:.4g} s - hidden {t.dp_s - t.dp_exposed_s:.4g} s"
    )


def _optimizer_formula(inp: TrainingInputs, central: E.Efficiency) -> Formula:
    if not inp.offload_bytes:
        return lambda i: f"{g(inp.optimizer_bytes)} B read+written / ({g(value_at(inp.bandwidth, i))} B/s x {central.bandwidth:g})"
    return lambda i: f"{g(inp.offload_bytes)} B over PCIe ({inp.pcie_gbps:g} GB/s)"


def _bound_formula(t: TrainStep) -> str:
    return (
        f"largest of compute {t.compute_s:.4g} s, communication {t.comm_s:.4g} s, "
        f"bubble {t.bubble_s:.4g} s, optimizer {t.optimizer_s:.4g} s"
    )


def _underfilled_message(inp: TrainingInputs, t: TrainStep) -> str:
    return (
        f"{inp.microbatches} micro-batches for {inp.pp} pipeline stages: the bubble takes "
        f"{t.bubble_fraction:.0%} of the "
        "ideal step time"
    )


def _communication_bound_message(t: TrainStep) -> str:
    return (
        f"exposed communication takes {t.comm_s / t.step_s:.0%} of each step "
        f"({_duration(t.comm_s)} of {_duration(t.step_s)}): the GPUs compute {t.busy:.0%} of the time "
        f"(MFU {t.mfu:.1%})"
    )


def _duration(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


def forward_breakdown(inp: TrainingInputs, eff: E.Efficiency) -> str:
    """One micro-batch's forward kernels on one stage, in words (the per-operator breakdown)."""
    k = forward_kernels(inp, eff, breakdown=True)
    rows = ", ".join(f"{name} {ms(float(t))} ({bound})" for name, t, bound in k.rows or ())
    return f"kernels on {inp.profile.title} profile: {rows}"


@cache
def _no_train_tokens() -> Mapping[str, Column]:
    """The time-to-train keys of a scenario without --train-tokens: empty with the reason."""
    why = "set --train-tokens to get the time of a run"
    return {
        key: null_column(label, unit, why)
        for key, label, unit in (
            ("performance.train_time_s", "Time to train", "s"),
            ("performance.train_time_days", "Time to train", "days"),
            ("performance.train_time_days_low", "Time to train, optimistic", "days"),
            ("performance.train_time_days_high", "Time to train, pessimistic", "days"),
        )
    }


def _always(key: str) -> bool:
    return True


#: The keys read from the pessimistic and optimistic runs of the step model.
_BOUND_KEYS = (
    "performance.step_time_s_low",
    "performance.step_time_s_high",
    "performance.tokens_per_s_low",
    "performance.tokens_per_s_high",
    "performance.train_time_days_low",
    "performance.train_time_days_high",
)
