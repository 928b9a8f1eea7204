"""Training results: the ``performance.*`` keys of a training scenario, with their formulas."""

from __future__ import annotations

from workbench.core.scenario import Offload
from workbench.engine.estimator import EstimateContext
from workbench.engine.quantity import Outputs, Quantity, Warning, q
from workbench_performance import efficiency as E
from workbench_performance.training import forward_kernels
from workbench_performance.inputs import Source, training_inputs
from workbench_performance.text import g, idle_gpus, kernel_profile_warning, ms, not_applicable_to, null
from workbench_performance.training import TrainingInputs, TrainStep, train_step


def training_outputs(ctx: EstimateContext) -> Outputs:
    """Step time, MFU/HFU, bubble, exposed communication and time to train, with low/high bounds."""
    sc = ctx.scenario
    src = Source.of(ctx)
    central, low, high = E.efficiencies(ctx.assumptions, training=True)
    inp = training_inputs(src)
    # A run for a few keys (a sweep) builds only those, and the bounds only if one is asked for.
    want = _always if ctx.wanted is None else ctx.wanted.__contains__
    t = train_step(inp, central)
    bounds = any(map(want, _BOUND_KEYS))
    slow = train_step(inp, low) if bounds else None
    fast = train_step(inp, high) if bounds else None
    used = E.assumption_ids(training=True)
    v: dict[str, Quantity] = {}
    warnings: list[Warning] = []
    par = sc.parallel
    m = inp.microbatches
    mfu_note = f"step time from --mfu {sc.mfu:g}" if t.overridden else ""

    if want("performance.step_time_s"):
        v["performance.step_time_s"] = q(
            t.step_s, "s", "Optimizer step time", lambda: _step_formula(inp, t), used, note=mfu_note
        )
    if want("performance.step_time_s_low"):
        v["performance.step_time_s_low"] = q(
            fast.step_s,
            "s",
            "Step time, optimistic",
            lambda: "all assumptions at the fast end of their range",
            used,
        )
    if want("performance.step_time_s_high"):
        v["performance.step_time_s_high"] = q(
            slow.step_s,
            "s",
            "Step time, pessimistic",
            lambda: "all assumptions at the slow end of their range",
            used,
        )
    if want("performance.tokens_per_s"):
        v["performance.tokens_per_s"] = q(
            t.tokens_per_s,
            "tokens/s",
            "Training throughput (tokens, all GPUs)",
            lambda: f"{inp.tokens_step:,.0f} tokens per step / {t.step_s:.4g} s",
            used,
        )
    if want("performance.tokens_per_s_low"):
        v["performance.tokens_per_s_low"] = q(
            slow.tokens_per_s,
            "tokens/s",
            "Throughput, pessimistic",
            lambda: "all assumptions at the slow end of their range",
            used,
        )
    if want("performance.tokens_per_s_high"):
        v["performance.tokens_per_s_high"] = q(
            fast.tokens_per_s,
            "tokens/s",
            "Throughput, optimistic",
            lambda: "all assumptions at the fast end of their range",
            used,
        )
    if want("performance.tokens_per_s_per_gpu"):
        v["performance.tokens_per_s_per_gpu"] = q(
            t.tokens_per_s / inp.world,
            "tokens/s",
            "Throughput per GPU",
            lambda: f"{t.tokens_per_s:,.0f} / {inp.world} GPUs",
            used,
        )
    if want("performance.mfu"):
        v["performance.mfu"] = q(
            t.mfu,
            "fraction",
            "Model FLOPs utilization (MFU)",
            lambda: (
                f"(forward + backward) {g(inp.model_flops_step)} FLOP per step / ({inp.world} "
                f"GPUs x {g(inp.peak_flops)} FLOP/s x {t.step_s:.4g} s) (PaLM, Chowdhery et al. 2022, "
                "app. B)"
            ),
            used,
        )
    if want("performance.hfu"):
        v["performance.hfu"] = q(
            t.hfu,
            "fraction",
            "Hardware FLOPs utilization (HFU)",
            lambda: (
                f"(forward + backward + recompute) {g(inp.hardware_flops_step)} FLOP / ({inp.world}"
                f" x {g(inp.peak_flops)} x {t.step_s:.4g} s)"
            ),
            used,
        )
    if want("performance.compute_s"):
        v["performance.compute_s"] = q(
            t.compute_s,
            "s",
            "Compute per step (one GPU)",
            lambda: (
                f"{m} micro-batches x (forward + backward (2x the GEMMs, attention backward "
                f"{g(inp.bwd_flops)} FLOP in all) + recompute {g(inp.recompute_flops)} FLOP); forward "
                f"{forward_breakdown(inp, central)}"
            ),
            used,
        )
    if want("performance.pipeline_bubble_fraction"):
        v["performance.pipeline_bubble_fraction"] = q(
            t.bubble_fraction,
            "fraction",
            "Pipeline bubble",
            lambda: (
                f"(p - 1) / ({'v x ' if inp.virtual_stages > 1 else ''}m) = ({par.pp} - 1) / "
                f"({str(inp.virtual_stages) + ' x ' if inp.virtual_stages > 1 else ''}{m}) "
                f"[{par.pipeline_schedule.value}; Narayanan et al. 2021]"
            ),
        )
    if want("performance.pipeline_bubble_s"):
        v["performance.pipeline_bubble_s"] = q(
            t.bubble_s,
            "s",
            "Pipeline bubble per step",
            lambda: f"{m} x micro-batch time x {t.bubble_fraction:.4g}",
            used,
        )
    rec_share = (
        inp.recompute_flops / (inp.fwd_flops + inp.bwd_flops) if inp.fwd_flops + inp.bwd_flops else 0.0
    )
    if want("performance.recompute_overhead_fraction"):
        v["performance.recompute_overhead_fraction"] = q(
            rec_share,
            "fraction",
            "Recompute cost (share of model FLOPs)",
            lambda: (
                f"recompute {sc.recompute.value}: {g(inp.recompute_flops)} / {g(inp.fwd_flops + inp.bwd_flops)}"
            ),
        )
    if want("performance.comm_exposed_s"):
        v["performance.comm_exposed_s"] = q(
            t.comm_s,
            "s",
            "Exposed communication per step",
            lambda: (
                f"TP/EP {t.tp_ep_s:.4g} s (overlap {central.tp_overlap:g}) + PP sends {t.pp_s:.4g} s + DP "
                f"{t.dp_s:.4g} s - hidden {t.dp_s - t.dp_exposed_s:.4g} s"
            ),
            used,
        )
    if want("performance.optimizer_s"):
        v["performance.optimizer_s"] = q(
            t.optimizer_s,
            "s",
            "Optimizer update per step",
            lambda: (
                (f"{g(inp.optimizer_bytes)} B read+written / ({g(inp.bandwidth)} B/s x {central.bandwidth:g})")
                if not inp.offload_bytes
                else f"{g(inp.offload_bytes)} B over PCIe ({inp.pcie_gbps:g} GB/s)"
            ),
            used,
        )
    if want("performance.microbatches"):
        v["performance.microbatches"] = q(
            m,
            "count",
            "Micro-batches per step (gradient accumulation)",
            lambda: f"global batch / (micro-batch {sc.batch_size} x DP {par.dp}) = {m}",
        )
    if want("performance.gpus"):
        v["performance.gpus"] = q(
            inp.world, "GPUs", "GPUs computing", lambda: f"TP {par.tp} x PP {par.pp} x DP {par.dp}"
        )
    if want("performance.bound"):
        v["performance.bound"] = q(
            t.bound,
            "",
            "What bounds the step",
            lambda: (
                f"largest of compute {t.compute_s:.4g} s, communication {t.comm_s:.4g} s, "
                f"bubble {t.bubble_s:.4g} s, optimizer {t.optimizer_s:.4g} s"
            ),
        )
    if want("performance.gpu_utilization"):
        v["performance.gpu_utilization"] = q(
            t.busy, "fraction", "GPU busy fraction", lambda: "(compute + optimizer) / step time", used
        )
    tokens = sc.train_tokens
    if tokens is None:
        why = "set --train-tokens to get the time of a run"
        for key, label, unit in (
            ("performance.train_time_s", "Time to train", "s"),
            ("performance.train_time_days", "Time to train", "days"),
            ("performance.train_time_days_low", "Time to train, optimistic", "days"),
            ("performance.train_time_days_high", "Time to train, pessimistic", "days"),
        ):
            v[key] = null(label, unit, why)
    else:
        seconds = tokens / t.tokens_per_s
        if want("performance.train_time_s"):
            v["performance.train_time_s"] = q(
                seconds,
                "s",
                "Time to train",
                lambda: f"{tokens:.4g} tokens / {t.tokens_per_s:,.0f} tokens/s",
                used,
            )
        if want("performance.train_time_days"):
            v["performance.train_time_days"] = q(
                seconds / 86400, "days", "Time to train", lambda: f"{seconds:,.0f} s / 86,400", used
            )
        if want("performance.train_time_days_low"):
            v["performance.train_time_days_low"] = q(
                tokens / fast.tokens_per_s / 86400,
                "days",
                "Time to train, optimistic",
                lambda: "all assumptions at the fast end of their range",
                used,
            )
        if want("performance.train_time_days_high"):
            v["performance.train_time_days_high"] = q(
                tokens / slow.tokens_per_s / 86400,
                "days",
                "Time to train, pessimistic",
                lambda: "all assumptions at the slow end of their range",
                used,
            )
    v.update(not_applicable_to("inference", "training scenario: no serving latency"))

    if par.pp > 1 and m < par.pp:
        warnings.append(
            Warning(
                "pipeline-underfilled",
                f"{m} micro-batches for {par.pp} pipeline stages: the bubble takes "
                f"{t.bubble_fraction:.0%} of the "
                "ideal step time",
                fix="raise --global-batch or lower --batch so that micro-batches >= 4 x PP",
            )
        )
    if not t.overridden and t.step_s > 0 and t.comm_s >= 0.5 * t.step_s:
        warnings.append(
            Warning(
                "communication-bound",
                f"exposed communication takes {t.comm_s / t.step_s:.0%} of each step "
                f"({_duration(t.comm_s)} of {_duration(t.step_s)}): the GPUs compute {t.busy:.0%} of the time "
                f"(MFU {t.mfu:.1%})",
                fix="give each GPU more tokens per step (raise --batch, --seq-len or --global-batch for "
                "gradient accumulation), use fewer GPUs, or a faster interconnect",
            )
        )
    if inp.offload_bytes:
        warnings.append(
            Warning(
                "offload-optimizer-cpu",
                "optimizer offload: only the PCIe transfers are timed; the CPU optimizer step itself "
                "is not, so "
                "the step time is optimistic",
                severity="info",
            )
        )
    if par.offload_params is not Offload.NONE:
        warnings.append(
            Warning(
                "offload-params-untimed",
                "weight offload traffic is not timed: the step time is optimistic",
                severity="info",
            )
        )
    idle_gpus(sc, warnings)
    kernel_profile_warning(ctx.cluster.accelerator.name, inp.profile, warnings)
    return Outputs(v, warnings)


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


def _duration(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"


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


def forward_breakdown(inp, eff) -> str:  # noqa: ANN001
    """One micro-batch's forward kernels on one stage, in words (the per-operator breakdown)."""
    k = forward_kernels(inp, eff, breakdown=True)
    rows = ", ".join(f"{name} {ms(float(t))} ({bound})" for name, t, bound in k.rows or ())
    return f"kernels on {inp.profile.title} profile: {rows}"
