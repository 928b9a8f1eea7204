"""Simulated serving percentiles: the scenario's scheduler run request by request under its load.

The closed-form serving model (:func:`~workbench_performance.inference.serve`) gives steady-state
means. Here the same per-step costs drive the iteration-level simulator
(:mod:`workbench_performance.simulator`) so that queueing, bursts and the batching policy show in
the tail: p50/p90/p99 TTFT, TPOT and end-to-end latency, throughput and goodput under the
scenario's SLO targets.

Step model (one replica). From the serving model's own passes at the scenario's settings:

* fixed per iteration: a one-sequence decode step less one sequence's share (weights read, launch
  overhead);
* per decode sequence: the slope of the decode step between 1 and ``batch`` sequences, less the
  KV-cache read, which is charged per context token instead (the KV bytes of one sequence at the
  average context / effective bandwidth, divided by that context);
* per prefill token: one prompt's prefill pass less the fixed part, over its tokens (the prompt's
  attention at the scenario's length is folded in).

Load: a trace file if given; else ``requests`` requests of the scenario's prompt and output
lengths, arriving at ``arrival_rate`` (Poisson, or gamma gaps of ``arrival_cv``) split evenly
over the DP replicas, or a closed loop of ``batch_size`` users per replica when no rate is set.
The scheduler admits at most ``batch_size`` sequences per replica and as many KV blocks as
``kv_cache.max_concurrency`` full-length sequences hold. The run is seeded (0), so an estimate
repeats exactly.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.core.errors import InputError
from workbench.core.request_trace import read_trace
from workbench.core.scenario import Batching, Scenario, ServingEngine
from workbench.engine.quantity import Quantity, q
from workbench.engine.serving_engines import title as engine_title
from workbench_performance.efficiency import Efficiency
from workbench_performance.inference import InferenceInputs, decode_pass, prefill_pass
from workbench_performance.simulator import Policy, StepModel, arrivals, simulate

SEED = 0
#: vLLM's default max_num_batched_tokens without chunked prefill is at least the model length.
_UNCHUNKED_BUDGET = 8192
_CACHE: OrderedDict[Any, Any] = OrderedDict()
_CACHE_SIZE = 64


@dataclass(frozen=True)
class SimulatedServing:
    """Percentiles and rates of one simulated run, rates scaled to all replicas."""

    percentiles: dict[str, float]  # "ttft_mean_s", "ttft_p50_s" ... "e2e_p99_s"
    output_tokens_per_s: float
    requests_per_s: float
    goodput_requests_per_s: float
    goodput_fraction: float
    step: StepModel
    requests: int
    description: str  # requests, seed, policy, load, step model: for every formula


def step_model(inp: InferenceInputs, eff: Efficiency) -> StepModel:
    """The simulator's per-iteration coefficients from the serving model's passes (module docstring)."""
    b = max(inp.batch, 2)
    one = decode_pass(inp, eff, 1).time_s
    many = decode_pass(inp, eff, b).time_s
    per_seq = max((many - one) / (b - 1), 0.0)
    context = inp.seq_len + 0.5 * inp.gen_len
    kv_seq_s = inp.decode_kv_bytes / (inp.bandwidth * eff.bandwidth) if inp.bandwidth else 0.0
    kv_seq_s = min(kv_seq_s, per_seq)
    overhead = max(one - per_seq, 1e-6)
    prefill = prefill_pass(inp, eff, 1).time_s
    return StepModel(
        overhead_s=overhead,
        prefill_token_s=max(prefill - overhead, 0.0) / max(inp.seq_len, 1),
        decode_seq_s=per_seq - kv_seq_s,
        context_token_s=kv_seq_s / context if context else 0.0,
    )


def why_not(sc: Scenario, inp: InferenceInputs) -> str | None:
    """Why the scenario is not simulated, or None."""
    if not inp.generates or not inp.gen_len:
        return "not simulated: the model generates no tokens (prefill only)"
    if inp.disaggregated:
        return "not simulated: disaggregated prefill/decode is not modelled by the simulator"
    if inp.spec_tokens:
        return "not simulated: speculative decoding is not modelled by the simulator"
    return None


def simulate_serving(sc: Scenario, inp: InferenceInputs, eff: Efficiency) -> SimulatedServing:
    """Run the simulation of one replica (cached on its inputs); InputError or ValueError if it cannot."""
    sv = sc.serving
    step = step_model(inp, eff)
    trace = read_trace(sv.trace, sv.requests) if sv.trace else None
    key = (step, sv, inp.batch, inp.seq_len, inp.gen_len, inp.dp, inp.max_concurrency, trace)
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        return hit
    result = _run(sc, inp, step, trace)
    _CACHE[key] = result
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return result


def _run(sc: Scenario, inp: InferenceInputs, step: StepModel, trace: Any) -> SimulatedServing:
    sv = sc.serving
    dp = max(inp.dp, 1)
    users = max(inp.batch, 1)
    rng = np.random.default_rng(SEED)
    if trace is not None:
        prompt = np.array(trace.prompt_tokens, dtype=np.int64)
        output = np.array(trace.output_tokens, dtype=np.int64)
        source = f"{len(prompt):,} requests of the trace {sv.trace}"
    else:
        n = sv.requests
        prompt = np.full(n, inp.seq_len, dtype=np.int64)
        output = np.full(n, inp.gen_len, dtype=np.int64)
        source = f"{n:,} requests of {inp.seq_len:,} prompt and {inp.gen_len:,} output tokens"
    if trace is not None and trace.arrival_s is not None:
        # A trace's times are the whole service's: each replica takes every dp-th request.
        arrival = np.array(trace.arrival_s)
        load = arrivals.trace(arrival[::dp], prompt[::dp], output[::dp])
        shape = "arrival times of the trace" + (f", one request in {dp} per replica" if dp > 1 else "")
    elif sv.arrival_rate is not None:
        rate = sv.arrival_rate / dp
        if sv.arrival_cv == 1.0:
            load = arrivals.poisson(rng, rate, prompt, output)
            shape = f"Poisson arrivals at {sv.arrival_rate:g} requests/s"
        else:
            load = arrivals.gamma(rng, rate, sv.arrival_cv, prompt, output)
            shape = f"gamma arrivals at {sv.arrival_rate:g} requests/s, CV {sv.arrival_cv:g}"
        if dp > 1:
            shape += f" ({rate:g} per replica)"
    else:
        load = arrivals.closed_loop(users, prompt, output)
        shape = f"closed loop of {users} users per replica"
    block = sv.kv_block_size if sv.paged_kv else int((prompt + output).max())
    kv_blocks = None
    if inp.max_concurrency is not None and inp.max_concurrency < 1:
        raise InputError("the KV cache has no room for one request of the scenario's lengths")
    if inp.max_concurrency is not None:
        # What the memory plugin found room for: max_concurrency sequences of the scenario's lengths.
        kv_blocks = max(int(inp.max_concurrency * (inp.seq_len + inp.gen_len) // block), 1)
    # The engine's cap on running sequences (vLLM max_num_seqs, TensorRT-LLM max_batch_size): more
    # users than that queue for a slot.
    running = users if sv.max_running_sequences is None else min(users, sv.max_running_sequences)
    chunked = sv.batching is Batching.CHUNKED
    budget = max(sv.prefill_chunk_tokens, running) if chunked else max(_UNCHUNKED_BUDGET, inp.seq_len, running)
    policy = Policy(
        sv.batching.value,
        max_batch=running,
        token_budget=budget,
        prefill_chunk=sv.prefill_chunk_tokens if chunked else None,
        block_size=block,
        kv_blocks=kv_blocks,
    )
    try:
        res = simulate(step, policy, load)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    slo_ttft = sv.slo_ttft_s or math.inf
    slo_tpot = sv.slo_tpot_s or math.inf
    s = res.summary(slo_ttft_s=slo_ttft, slo_tpot_s=slo_tpot)
    pct = {
        f"{m}_{q}_s": float(s[f"{m}_{q}_s"][0]) for m in ("ttft", "tpot", "e2e") for q in ("mean", "p50", "p90", "p99")
    }
    targets = ", ".join(
        t for t in (
            f"TTFT <= {sv.slo_ttft_s:g} s" if sv.slo_ttft_s else "",
            f"TPOT <= {sv.slo_tpot_s:g} s" if sv.slo_tpot_s else "",
        ) if t
    ) or "no targets set (every request counts)"
    description = (
        f"simulated: {source}, {shape}; "
        + (f"{engine_title(sv.engine)}: " if sv.engine is not ServingEngine.GENERIC else "")
        + f"{sv.batching.value} batching, at most {running} sequences, "
        f"{budget:,}-token budget, "
        + (f"{kv_blocks:,} KV blocks of {block}" if kv_blocks is not None else "KV unbounded")
        + f"; seed {SEED}; step = {step.overhead_s * 1e3:.3g} ms + {step.prefill_token_s * 1e6:.3g} us/prefill token"
        f" + {step.decode_seq_s * 1e6:.3g} us/decode sequence + {step.context_token_s * 1e9:.3g} ns/context token"
        f"; goodput targets: {targets}"
    )
    n_done = res.arrival_s.shape[1]
    return SimulatedServing(
        percentiles=pct,
        output_tokens_per_s=float(s["output_tokens_per_s"][0]) * dp,
        requests_per_s=float(s["requests_per_s"][0]) * dp,
        goodput_requests_per_s=float(s["goodput_requests_per_s"][0]) * dp,
        goodput_fraction=float(s["goodput_fraction"][0]),
        step=step,
        requests=n_done,
        description=description,
    )


#: The note of the simulated keys of a scenario that sets no load and no target.
NOT_ASKED = (
    "not simulated: set an arrival rate, a request trace or a TTFT/TPOT target "
    "(--arrival-rate, --trace, --slo-ttft, --slo-tpot) to simulate the serving load"
)


def simulated_outputs(
    sc: Scenario, inp: InferenceInputs, eff: Efficiency, used: tuple[str, ...], wanted: frozenset[str] | None
) -> dict[str, Quantity]:
    """The ``performance.sim.*`` keys.

    The simulation is the one part of an estimate whose cost grows with the requests it runs
    (about 10-30 ms for 1,000), so it runs only when the scenario describes a load or a target
    to meet; without either the keys are empty with the reason, whoever asks (a key asked for by
    name reads exactly as in the full estimate). A run for other keys only (a sweep's columns)
    leaves them out. So live typing and sweeps of many points stay fast by default, and a point
    of a group reads exactly as its own estimate.
    """
    from workbench_performance import keys as K

    sv = sc.serving
    if wanted is not None and not any(key in wanted for key in K.SIMULATED):
        return {}
    if sv.arrival_rate is None and sv.trace is None and sv.slo_ttft_s is None and sv.slo_tpot_s is None:
        return _nulls(K, NOT_ASKED, used)
    reason = why_not(sc, inp)
    result = None
    if reason is None:
        try:
            result = simulate_serving(sc, inp, eff)
        except InputError as exc:
            reason = f"not simulated: {exc}"
    if result is None:
        return _nulls(K, reason, used)
    text = result.description
    values: dict[str, float] = {f"performance.sim.{name}": value for name, value in result.percentiles.items()}
    values.update({
        "performance.sim.output_tokens_per_s": result.output_tokens_per_s,
        "performance.sim.requests_per_s": result.requests_per_s,
        "performance.sim.goodput_requests_per_s": result.goodput_requests_per_s,
        "performance.sim.goodput_fraction": result.goodput_fraction,
    })
    out: dict[str, Quantity] = {}
    for key, value in values.items():
        if value is None or not math.isfinite(value):
            why = "no request has more than one output token" if ".tpot_" in key else "no value"
            out[key] = q(None, K.unit(key), K.LABELS[key], why, used, note=why)
        else:
            out[key] = q(value, K.unit(key), K.LABELS[key], text, used, note="simulated")
    return out


def _nulls(keys: Any, why: str, used: tuple[str, ...]) -> dict[str, Quantity]:
    return {key: q(None, keys.unit(key), keys.LABELS[key], why, used, note=why) for key in keys.SIMULATED}
