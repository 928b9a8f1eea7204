"""Result keys of the performance plugin with their units and meaning (the documented contract).

docs/validation.md prints this table; a test checks that every produced key is in it.
"""

from __future__ import annotations

#: key -> (unit, applies to, meaning)
PERFORMANCE: dict[str, tuple[str, str, str]] = {
    "performance.tokens_per_s": (
        "tokens/s",
        "both",
        (
            "Throughput of all GPUs: output tokens/s when serving "
            "(input tokens/s for prefill-only models), training tokens/s when training"
        ),
    ),
    "performance.tokens_per_s_low": (
        "tokens/s",
        "both",
        ("Throughput with every efficiency assumption at the slow end of its plausible range"),
    ),
    "performance.tokens_per_s_high": ("tokens/s", "both", "Throughput with every assumption at the fast end"),
    "performance.tokens_per_s_per_gpu": ("tokens/s", "both", "Throughput divided by the GPUs it needs"),
    "performance.mfu": (
        "fraction",
        "both",
        (
            "Model FLOPs utilization: model FLOPs per second / (GPUs x dense peak) "
            "(PaLM definition; serving: prefill + decode FLOPs of the useful tokens)"
        ),
    ),
    "performance.bound": (
        "text",
        "both",
        (
            "What bounds the time: memory bandwidth, compute, communication, "
            "overhead, pipeline bubble or optimizer"
        ),
    ),
    "performance.gpu_utilization": (
        "fraction",
        "both",
        "Share of time the GPUs run kernels (drives power draw)",
    ),
    "performance.gpus": (
        "GPUs",
        "both",
        (
            "GPUs the throughput needs (training: TP x PP x DP; serving: the GPUs "
            "plus a disaggregated prefill pool)"
        ),
    ),
    "performance.ttft_s": (
        "s",
        "inference",
        "Time to first token of a request at the scenario's concurrency",
    ),
    "performance.ttft_s_low": ("s", "inference", "TTFT, optimistic end"),
    "performance.ttft_s_high": ("s", "inference", "TTFT, pessimistic end"),
    "performance.tpot_s": (
        "s",
        "inference",
        ("Time per output token in steady state (prompt stalls and speculative decoding included)"),
    ),
    "performance.tpot_s_low": ("s", "inference", "TPOT, optimistic end"),
    "performance.tpot_s_high": ("s", "inference", "TPOT, pessimistic end"),
    "performance.e2e_latency_s": ("s", "inference", "TTFT + (gen_len - 1) x TPOT"),
    "performance.tokens_per_s_per_user": (
        "tokens/s",
        "inference",
        "Output tokens per second one user sees: 1 / TPOT",
    ),
    "performance.input_tokens_per_s": (
        "tokens/s",
        "inference",
        "Prompt tokens processed per second, all GPUs",
    ),
    "performance.requests_per_s": ("requests/s", "inference", "Requests completed per second, all GPUs"),
    "performance.prefill_s": ("s", "inference", "Prefill of one prompt alone on one replica"),
    "performance.decode_step_s": (
        "s",
        "inference",
        "One decode step of the whole batch, without prompt stalls",
    ),
    "performance.prefill_time_fraction": (
        "fraction",
        "inference",
        ("Share of GPU time spent on prompts (splits cost between input and output tokens)"),
    ),
    "performance.speculative_tokens_per_step": (
        "tokens",
        "inference",
        ("Expected tokens per speculative step: (1 - a^(k+1)) / (1 - a); null when off"),
    ),
    "performance.disagg_prefill_gpus": (
        "GPUs",
        "inference",
        ("GPUs of the prefill pool when prefill and decode are disaggregated; null otherwise"),
    ),
    "performance.step_time_s": ("s", "training", "Time of one optimizer step (global batch)"),
    "performance.step_time_s_low": ("s", "training", "Step time, optimistic end"),
    "performance.step_time_s_high": ("s", "training", "Step time, pessimistic end"),
    "performance.hfu": ("fraction", "training", "Hardware FLOPs utilization: MFU plus recomputed FLOPs"),
    "performance.compute_s": ("s", "training", "Compute time of one step on one GPU (all micro-batches)"),
    "performance.pipeline_bubble_fraction": (
        "fraction",
        "training",
        ("(p-1)/m for 1F1B and GPipe, (p-1)/(v m) interleaved"),
    ),
    "performance.pipeline_bubble_s": ("s", "training", "Idle pipeline time per step"),
    "performance.recompute_overhead_fraction": ("fraction", "training", "Recomputed FLOPs / model FLOPs"),
    "performance.comm_exposed_s": ("s", "training", "Communication per step not hidden behind compute"),
    "performance.optimizer_s": (
        "s",
        "training",
        "Optimizer update per step (memory-bound; PCIe when offloaded)",
    ),
    "performance.microbatches": (
        "count",
        "training",
        "Micro-batches per optimizer step (gradient accumulation)",
    ),
    "performance.train_time_s": ("s", "training", "Time to train on scenario.train_tokens"),
    "performance.train_time_days": ("days", "training", "The same in days"),
    "performance.train_time_days_low": ("days", "training", "Time to train, optimistic end"),
    "performance.train_time_days_high": ("days", "training", "Time to train, pessimistic end"),
}


#: Simulated serving (:mod:`workbench_performance.serving_simulation`): an iteration-level run of
#: the scenario's scheduler under its load, per replica, scaled to all replicas for rates.
SIMULATED: dict[str, tuple[str, str, str]] = {}
for _metric, _unit, _what in (
    ("ttft", "s", "time to first token"),
    ("tpot", "s", "time per output token (end-to-end minus TTFT, over output tokens - 1)"),
    ("e2e", "s", "end-to-end request latency"),
):
    SIMULATED[f"performance.sim.{_metric}_mean_s"] = (
        _unit, "inference", f"Simulated {_what}, mean over the simulated requests"
    )
    for _q in (50, 90, 99):
        SIMULATED[f"performance.sim.{_metric}_p{_q}_s"] = (
            _unit, "inference", f"Simulated {_what}, {_q}th percentile over the simulated requests"
        )
SIMULATED.update({
    "performance.sim.output_tokens_per_s": (
        "tokens/s", "inference", "Simulated output tokens per second, all replicas (from the first arrival to the last completion)"
    ),
    "performance.sim.requests_per_s": ("requests/s", "inference", "Simulated requests completed per second, all replicas"),
    "performance.sim.goodput_requests_per_s": (
        "requests/s", "inference", "Simulated requests per second that meet the TTFT and TPOT targets, all replicas"
    ),
    "performance.sim.goodput_fraction": (
        "fraction", "inference", "Share of the simulated requests that meet the TTFT and TPOT targets"
    ),
})
PERFORMANCE.update(SIMULATED)

COMMUNICATION: dict[str, tuple[str, str, str]] = {
    "communication.step": (
        "text",
        "both",
        "The step the figures are for (one decode step / one optimizer step)",
    ),
    "communication.total_s": ("s", "both", "Sum of the collective times below, before any overlap"),
}
for _group, _what in (
    ("tp", "tensor-parallel all-reduces (reduce-scatter + all-gather with SP)"),
    ("dp", "data-parallel gradient all-reduce / ZeRO reduce-scatter + all-gather"),
    ("pp", "pipeline point-to-point sends"),
    ("ep", "expert-parallel all-to-all"),
):
    COMMUNICATION[f"communication.{_group}.bytes_per_step"] = (
        "B",
        "both",
        f"Bytes one GPU sends per step: {_what}",
    )
    COMMUNICATION[f"communication.{_group}.time_s"] = (
        "s",
        "both",
        (f"Time of the {_group.upper()} collectives per step, alpha-beta model"),
    )
    COMMUNICATION[f"communication.{_group}.link"] = (
        "text",
        "both",
        (f"Link the {_group.upper()} group uses (intra-node when the group fits in a node)"),
    )


LABELS: dict[str, str] = {
    "performance.ttft_s": "Time to first token",
    "performance.ttft_s_low": "TTFT, optimistic",
    "performance.ttft_s_high": "TTFT, pessimistic",
    "performance.tpot_s": "Time per output token",
    "performance.tpot_s_low": "TPOT, optimistic",
    "performance.tpot_s_high": "TPOT, pessimistic",
    "performance.e2e_latency_s": "End-to-end request latency",
    "performance.tokens_per_s_per_user": "Output tokens/s per user",
    "performance.input_tokens_per_s": "Prompt tokens processed per second",
    "performance.requests_per_s": "Requests completed per second",
    "performance.prefill_s": "Prefill of one prompt",
    "performance.decode_step_s": "One decode step (whole batch)",
    "performance.prefill_time_fraction": "Share of GPU time spent on prompts",
    "performance.speculative_tokens_per_step": "Tokens per speculative step",
    "performance.disagg_prefill_gpus": "Prefill pool GPUs (disaggregated)",
    "performance.step_time_s": "Optimizer step time",
    "performance.step_time_s_low": "Step time, optimistic",
    "performance.step_time_s_high": "Step time, pessimistic",
    "performance.hfu": "Hardware FLOPs utilization (HFU)",
    "performance.compute_s": "Compute per step (one GPU)",
    "performance.pipeline_bubble_fraction": "Pipeline bubble",
    "performance.pipeline_bubble_s": "Pipeline bubble per step",
    "performance.recompute_overhead_fraction": "Recompute cost (share of model FLOPs)",
    "performance.comm_exposed_s": "Exposed communication per step",
    "performance.optimizer_s": "Optimizer update per step",
    "performance.microbatches": "Micro-batches per step (gradient accumulation)",
    "performance.train_time_s": "Time to train",
    "performance.train_time_days": "Time to train (days)",
    "performance.train_time_days_low": "Time to train, optimistic",
    "performance.train_time_days_high": "Time to train, pessimistic",
    **{f"performance.sim.{m}_{q}_s": f"{name} {q} (simulated)" for m, name in (
        ("ttft", "TTFT"), ("tpot", "TPOT"), ("e2e", "End-to-end latency")) for q in ("mean", "p50", "p90", "p99")},
    "performance.sim.output_tokens_per_s": "Output tokens/s (simulated)",
    "performance.sim.requests_per_s": "Requests/s (simulated)",
    "performance.sim.goodput_requests_per_s": "Goodput, requests/s (simulated)",
    "performance.sim.goodput_fraction": "Requests meeting the targets (simulated)",
}


def keys_for(workload: str) -> tuple[str, ...]:
    """Performance keys that apply only to ``workload`` ("inference" or "training")."""
    return tuple(key for key, (_unit, applies, _what) in PERFORMANCE.items() if applies == workload)


def unit(key: str) -> str:
    entry = PERFORMANCE.get(key) or COMMUNICATION.get(key)
    return "" if entry is None or entry[0] == "text" else entry[0]
