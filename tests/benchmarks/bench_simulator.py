"""The serving simulator's speed: 10,000 requests of one configuration; 100 configurations x 1,000.

Cases: Server-like (Poisson) with each batching policy, the same requests as MLPerf Offline
(all at t = 0), and a load sweep of 100 configurations in one call.

Target (issue 15): 10,000 simulated requests under 0.5 s on one core. Measured here, never
asserted in tests. The workload is MLPerf Server-like: Poisson arrivals near the engine's
capacity, prompt and output lengths gamma-distributed (mean 512 and 128 tokens, CV 1), an
H100-class Llama-8B step model (5 ms per iteration, 60 us per prefill token, 150 us per decode
sequence, 8 ns per context token read), 256 sequences at most, 4,096-token budget, 40,000 KV
blocks of 16 tokens. Each case: best of 2 runs (wall and CPU time; there is nothing to warm
up: no JIT, no cache). ``--quick`` runs one.

Run: .venv/bin/python tests/benchmarks/bench_simulator.py  -> prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from typing import Any

# One core: numpy's elementwise work is single-threaded, but keep BLAS pools out of it too.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from workbench_performance.simulator import Policy, StepModel, arrivals, simulate  # noqa: E402

STEP = StepModel(overhead_s=5e-3, prefill_token_s=6e-5, decode_seq_s=1.5e-4, context_token_s=8e-9)
RATE = 12.0  # requests/s, near this step model's capacity at these lengths


def workload(rng: np.random.Generator, n: int, rate: Any) -> Any:
    prompt = arrivals.lengths(rng, n, 512, 1.0, high=8192)
    output = arrivals.lengths(rng, n, 128, 1.0, high=2048)
    return arrivals.poisson(rng, rate, prompt, output)


def timed(fn: Any, rounds: int) -> dict[str, Any]:
    walls, cpus = [], []
    for _ in range(rounds):
        w, c = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return {"wall_s": round(min(walls), 4), "cpu_s": round(min(cpus), 4), "result": result}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one round instead of best of 2")
    rounds = 1 if ap.parse_args().quick else 2
    out: dict[str, Any] = {"machine": platform.processor() or platform.machine(), "numpy": np.__version__}

    one = workload(np.random.default_rng(0), 10_000, RATE)
    for batching in ("continuous", "chunked", "static"):
        policy = Policy(batching, max_batch=256, token_budget=4096, kv_blocks=40_000)
        r = timed(lambda policy=policy: simulate(STEP, policy, one), rounds)
        s = r.pop("result").summary(slo_ttft_s=2.0, slo_tpot_s=0.05)
        for key in ("ttft_p99_s", "tpot_p50_s", "requests_per_s", "goodput_fraction"):
            r[key] = round(float(s[key][0]), 4)
        r["iterations"] = int(s["iterations"][0])
        out[f"requests_10000_x1_{batching}"] = r

    # MLPerf Offline: the same 10,000 requests all at t = 0 (a full batch all along).
    offline = arrivals.offline(one.prompt_tokens, one.output_tokens)
    for batching in ("continuous", "chunked"):
        policy = Policy(batching, max_batch=256, token_budget=4096, kv_blocks=40_000)
        r = timed(lambda policy=policy: simulate(STEP, policy, offline), rounds)
        s = r.pop("result").summary()
        r["output_tokens_per_s"] = round(float(s["output_tokens_per_s"][0]), 1)
        r["iterations"] = int(s["iterations"][0])
        out[f"requests_10000_x1_offline_{batching}"] = r

    c = 100
    rng = np.random.default_rng(1)
    many = workload(rng, 1_000, np.linspace(4.0, 16.0, c))  # a load sweep: one rate per configuration
    policy = Policy(
        np.where(np.arange(c) % 2 == 0, "continuous", "chunked"),
        max_batch=np.where(np.arange(c) % 4 < 2, 128, 256),
        token_budget=4096,
        kv_blocks=np.linspace(5_000, 40_000, c).astype(int),
    )
    r = timed(lambda: simulate(STEP, policy, many), rounds)
    s = r.pop("result").summary()
    r["configurations"] = c
    r["requests_per_configuration"] = 1_000
    r["preemptions_total"] = int(s["preemptions"].sum())
    r["us_per_request"] = round(r["wall_s"] / (c * 1_000) * 1e6, 2)
    out["requests_1000_x100"] = r
    out["target_10000_requests_s"] = 0.5
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
