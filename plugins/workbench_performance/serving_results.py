"""Serving results: the ``performance.*`` keys of an inference scenario, with their formulas."""

from __future__ import annotations

from workbench.engine.estimator import EstimateContext
from workbench.engine.quantity import Outputs, Quantity, Warning, q
from workbench_performance import efficiency as E
from workbench_performance.communication import forward_comm
from workbench_performance.inference import InferenceInputs, ServePoint, decode_kernels, prefill_kernels, serve
from workbench_performance.operators.cost import PassKernels
from workbench_performance.inputs import Source, inference_inputs
from workbench_performance.serving_simulation import simulated_outputs
from workbench_performance.text import g, idle_gpus, kernel_profile_warning, ms, not_applicable_to, null


def serving_outputs(ctx: EstimateContext) -> Outputs:
    """TTFT, TPOT, throughput and the rest at the scenario's concurrency, with low/high bounds."""
    sc = ctx.scenario
    src = Source.of(ctx)
    central, low, high = E.efficiencies(ctx.assumptions, training=False, mfu=sc.mfu)
    inp = inference_inputs(src)
    # A run for a few keys (a sweep) builds only those, and the bounds only if one is asked for.
    want = _always if ctx.wanted is None else ctx.wanted.__contains__
    p = serve(inp, central, sc.batch_size)
    bounds = any(map(want, _BOUND_KEYS))
    slow = serve(inp, low, sc.batch_size) if bounds else None
    fast = serve(inp, high, sc.batch_size) if bounds else None
    used = E.assumption_ids(training=False)
    v: dict[str, Quantity] = {}
    warnings: list[Warning] = []
    b, s, gen = sc.batch_size, inp.seq_len, inp.gen_len
    policy = _policy(inp)
    mfu_note = " (--mfu replaces every kernel's compute efficiency)" if sc.mfu is not None else ""

    if want("performance.ttft_s"):
        v["performance.ttft_s"] = q(
            p.ttft_s, "s", "Time to first token", lambda: _ttft_formula(inp, p), used, note=policy
        )
    if want("performance.ttft_s_low"):
        v["performance.ttft_s_low"] = q(
            fast.ttft_s,
            "s",
            "TTFT, optimistic",
            lambda: "all assumptions at the fast end of their range",
            used,
        )
    if want("performance.ttft_s_high"):
        v["performance.ttft_s_high"] = q(
            slow.ttft_s,
            "s",
            "TTFT, pessimistic",
            lambda: "all assumptions at the slow end of their range",
            used,
        )
    if p.tpot_s is None:
        why = "the model generates no tokens (prefill only)"
        for key, label in (
            ("performance.tpot_s", "Time per output token"),
            ("performance.tpot_s_low", "TPOT, optimistic"),
            ("performance.tpot_s_high", "TPOT, pessimistic"),
            ("performance.tokens_per_s_per_user", "Output tokens/s per user"),
        ):
            v[key] = null(label, "s" if "tpot" in key else "tokens/s", why)
    else:
        if want("performance.tpot_s"):
            v["performance.tpot_s"] = q(
                p.tpot_s,
                "s",
                "Time per output token",
                lambda: _tpot_formula(inp, p, central),
                used,
                note=policy + mfu_note,
            )
        if want("performance.tpot_s_low"):
            v["performance.tpot_s_low"] = q(
                fast.tpot_s,
                "s",
                "TPOT, optimistic",
                lambda: "all assumptions at the fast end of their range",
                used,
            )
        if want("performance.tpot_s_high"):
            v["performance.tpot_s_high"] = q(
                slow.tpot_s,
                "s",
                "TPOT, pessimistic",
                lambda: "all assumptions at the slow end of their range",
                used,
            )
        if want("performance.tokens_per_s_per_user"):
            v["performance.tokens_per_s_per_user"] = q(
                p.tokens_per_s_per_user,
                "tokens/s",
                "Output tokens/s per user",
                lambda: f"1 / TPOT = 1 / {ms(p.tpot_s)}",
                used,
            )
    v["performance.e2e_latency_s"] = q(
        p.e2e_s,
        "s",
        "End-to-end request latency",
        lambda: (
            f"TTFT {ms(p.ttft_s)} + ({gen} - 1) x TPOT {ms(p.tpot_s)}"
            if p.tpot_s
            else f"prefill {ms(p.e2e_s)}"
        ),
        used,
    )
    if want("performance.tokens_per_s"):
        v["performance.tokens_per_s"] = q(
            p.tokens_per_s,
            "tokens/s",
            "Throughput (output tokens, all GPUs)" if gen else "Throughput (input tokens, all GPUs)",
            lambda: (
                (
                    f"{inp.dp} replicas x {b} sequences / TPOT {ms(p.tpot_s)}"
                    if p.tpot_s and policy != "static batching"
                    else f"{inp.dp} replicas x {b} x {gen or s} tokens per cycle"
                )
                + f" = {p.tokens_per_s:,.0f}"
            ),
            used,
            note=_efficiency_text(central) + mfu_note,
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
            p.tokens_per_s_per_gpu,
            "tokens/s",
            "Throughput per GPU",
            lambda: f"{p.tokens_per_s:,.0f} / {p.gpus} GPUs",
            used,
        )
    if want("performance.input_tokens_per_s"):
        v["performance.input_tokens_per_s"] = q(
            p.input_tokens_per_s,
            "tokens/s",
            "Prompt tokens processed per second",
            lambda: f"{p.requests_per_s:.4g} requests/s x {s} prompt tokens",
            used,
        )
    if want("performance.requests_per_s"):
        v["performance.requests_per_s"] = q(
            p.requests_per_s,
            "requests/s",
            "Requests completed per second",
            lambda: (
                f"{p.tokens_per_s:,.0f} tokens/s / {gen or s} tokens per request"
                if gen
                else f"{p.tokens_per_s:,.0f} / {s}"
            ),
            used,
        )
    if want("performance.prefill_s"):
        v["performance.prefill_s"] = q(
            p.prefill_s,
            "s",
            "Prefill of one prompt",
            lambda: f"{s} tokens alone on one replica: {_prefill_text(inp, central)}",
            used,
        )
    if want("performance.decode_step_s"):
        v["performance.decode_step_s"] = (
            q(
                p.decode_step_s,
                "s",
                "One decode step (whole batch)",
                lambda: f"batch {b}, no prompt stalls",
                used,
            )
            if p.decode_step_s is not None
            else null("One decode step (whole batch)", "s", "the model generates no tokens")
        )
    if want("performance.prefill_time_fraction"):
        v["performance.prefill_time_fraction"] = q(
            p.prefill_share,
            "fraction",
            "Share of GPU time spent on prompts",
            lambda: f"{policy}: {p.prefill_share:.3f}",
            used,
        )
    if p.spec_tokens_per_step is None:
        if want("performance.speculative_tokens_per_step"):
            v["performance.speculative_tokens_per_step"] = null(
                "Tokens per speculative step", "tokens", "speculative decoding is off"
            )
    else:
        k, alpha = inp.spec_tokens, inp.spec_acceptance
        if want("performance.speculative_tokens_per_step"):
            v["performance.speculative_tokens_per_step"] = q(
                p.spec_tokens_per_step,
                "tokens",
                "Tokens per speculative step",
                lambda: (
                    f"(1 - {alpha:g}^({k}+1)) / (1 - {alpha:g}) = {p.spec_tokens_per_step:.3f} "
                    "(Leviathan et al. 2023)"
                ),
            )
    if p.prefill_gpus is None:
        if want("performance.disagg_prefill_gpus"):
            v["performance.disagg_prefill_gpus"] = null(
                "Prefill pool GPUs", "GPUs", "prefill runs on the decode GPUs"
            )
    else:
        if want("performance.disagg_prefill_gpus"):
            v["performance.disagg_prefill_gpus"] = q(
                p.prefill_gpus,
                "GPUs",
                "Prefill pool GPUs (disaggregated)",
                lambda: (
                    f"ceil({p.requests_per_s:.4g} requests/s x prefill {ms(p.prefill_s)}) replicas x "
                    f"{inp.tp * inp.pp} GPUs"
                ),
                used,
            )
    if want("performance.gpus"):
        v["performance.gpus"] = q(
            p.gpus,
            "GPUs",
            "GPUs the throughput needs",
            lambda: f"{inp.num_gpus} serving" + (f" + {p.prefill_gpus} prefill" if p.prefill_gpus else ""),
        )
    peak_all = p.gpus * inp.peak_flops
    if want("performance.mfu"):
        v["performance.mfu"] = q(
            p.model_flops_per_s / peak_all if peak_all else None,
            "fraction",
            "Model FLOPs utilization while serving",
            lambda: (
                f"{g(p.model_flops_per_s)} FLOP/s (decode + prefill) / ({p.gpus} x {g(inp.peak_flops)} FLOP/s)"
            ),
            used,
        )
    if want("performance.bound"):
        v["performance.bound"] = q(
            p.bound,
            "",
            "What bounds serving",
            lambda: f"largest term of the {'prompt' if p.prefill_share > 0.5 else 'decode'} pass",
        )
    if want("performance.gpu_utilization"):
        v["performance.gpu_utilization"] = q(
            p.busy,
            "fraction",
            "GPU busy fraction",
            lambda: "time in kernels / time (communication and per-step overhead idle)",
            used,
        )
    v.update(simulated_outputs(sc, inp, central, used, ctx.wanted))
    v.update(not_applicable_to("training", "inference scenario: no training step"))

    if p.fits is False:
        warnings.append(
            Warning(
                "batch-exceeds-kv-cache",
                f"{b} concurrent sequences of {s} + {gen} tokens exceed the KV cache, which holds "
                f"{inp.max_concurrency:.0f} per replica: the server would queue or preempt requests",
                fix="lower --batch, add GPUs, or use --kv-dtype fp8",
            )
        )
    idle_gpus(sc, warnings)
    kernel_profile_warning(ctx.cluster.accelerator.name, inp.profile, warnings)
    return Outputs(v, warnings)


_EFFICIENCY_TEXT: dict[int, tuple[E.Efficiency, str]] = {}


def _efficiency_text(eff: E.Efficiency) -> str:
    """The efficiencies in words (the throughput's note). Efficiencies come from a cache, so a
    sweep sees the same few objects: their text is built once per object."""
    hit = _EFFICIENCY_TEXT.get(id(eff))
    if hit is not None and hit[0] is eff:
        return hit[1]
    text = (
        f"kernel profile x {eff.matmul:g} (compute), x {eff.bandwidth:g} (bandwidth), "
        f"overhead {ms(eff.step_overhead_s)}"
    )
    if len(_EFFICIENCY_TEXT) > 256:
        _EFFICIENCY_TEXT.clear()
    _EFFICIENCY_TEXT[id(eff)] = (eff, text)
    return text




def _policy(inp: InferenceInputs) -> str:
    if not inp.generates or not inp.gen_len:
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
