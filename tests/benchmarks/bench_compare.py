"""Comparison speed: every catalog accelerator against one scenario, and against five at once.

Target (issue 7): the whole catalog x one scenario well under 200 ms on a 2-core machine, so the
GUI's compare view can recompute on every edit. Sizing included: candidates that do not fit as
given are re-laid out or grown to the fewest GPUs that fit.

Run: .venv/bin/python tests/benchmarks/bench_compare.py  -> prints one JSON object.
Each figure is the median of several runs in a warm process (plugins and catalogs loaded, as in
the window), wall time (``time.perf_counter``) and CPU time (``time.process_time``); ``first_ms``
is the first run of the process, caches cold.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import statistics
import time
from typing import Any

#: (name, scenario fields): serving and training, small and large models, fits and does not.
SCENARIOS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("serve_llama8b", {"model": "llama-3.1-8b", "gpu": "h100-sxm", "batch_size": 32}),
    ("serve_llama70b", {"model": "llama-3.1-70b", "gpu": "h100-sxm", "batch_size": 16}),
    (
        "serve_llama405b_fp8_tp8",
        {
            "model": "llama-3.1-405b",
            "gpu": "h100-sxm",
            "dtype": "fp8",
            "num_gpus": 8,
            "parallel": {"tp": 8},
            "batch_size": 16,
        },
    ),
    (
        "pretrain_llama8b_64gpu_zero1",
        {
            "model": "llama-3.1-8b",
            "gpu": "h100-sxm",
            "workload": "pretrain",
            "num_gpus": 64,
            "parallel": {"dp": 64, "zero_stage": 1},
            "batch_size": 4,
            "train_tokens": 1e12,
        },
    ),
    (
        "finetune_llama8b_dp8",
        {
            "model": "llama-3.1-8b",
            "gpu": "h100-sxm",
            "workload": "finetune",
            "num_gpus": 8,
            "parallel": {"dp": 8},
            "batch_size": 4,
            "train_tokens": 1e9,
        },
    ),
)


def _timed(fn, runs: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    walls, cpus = [], []
    for _ in range(runs):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append((time.perf_counter() - w) * 1000)
        cpus.append((time.process_time() - c) * 1000)
    return {
        "median_ms": round(statistics.median(walls), 1),
        "min_ms": round(min(walls), 1),
        "cpu_median_ms": round(statistics.median(cpus), 1),
    }


def main(runs: int = 7) -> dict[str, Any]:
    from workbench.api import make_scenario
    from workbench.catalog.accelerators import load_accelerators
    from workbench.catalog.resolve import resolve_scenario
    from workbench.engine.compare import Candidate, Targets, compare
    from workbench.pluginhost import default_engine

    engine = default_engine()
    candidates = [Candidate(ident) for ident in load_accelerators()]
    scenarios = [make_scenario(name=name, **fields) for name, fields in SCENARIOS]
    targets = Targets(max_tpot_s=0.05)

    start = time.perf_counter()
    compare(engine, scenarios[:1], candidates, resolve_scenario, targets)
    first_ms = round((time.perf_counter() - start) * 1000, 1)

    one: dict[str, Any] = {}
    for scenario in scenarios:
        result = compare(engine, [scenario], candidates, resolve_scenario, targets)
        rows = result.rows()
        one[scenario.name] = {
            **_timed(lambda s=scenario: compare(engine, [s], candidates, resolve_scenario, targets), runs),
            "fit_as_given": sum(r.sizing == "as given" for r in rows),
            "resized": sum(r.fits and r.sizing != "as given" for r in rows),
            "does_not_fit": sum(not r.fits for r in rows),
        }
    five = _timed(
        lambda: compare(engine, scenarios, candidates, resolve_scenario, targets), max(3, runs // 2)
    )
    swings = _swings(engine, scenarios[:1], candidates, resolve_scenario, targets)
    draws = _monte_carlo(engine, scenarios[0], resolve_scenario)
    return {
        "date": dt.date.today().isoformat(),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "candidates": len(candidates),
        "target_ms": 200,
        "first_ms": first_ms,
        "catalog_x_1_scenario": one,
        "catalog_x_5_scenarios": five,
        "assumption_swings_over_the_catalog": swings,
        "monte_carlo_1000_draws_one_group": draws,
    }


#: The serving speed model's assumptions, swung to both ends of their documented ranges.
SWUNG = ("perf.kernel_efficiency_scale", "perf.bandwidth_efficiency_scale", "perf.step_overhead_s",
         "moe.load_imbalance", "comm.bandwidth_efficiency", "comm.latency_intra_node_s", "comm.latency_inter_node_s")


def _swings(engine, scenarios, candidates, resolve, targets) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """The recommendation check of Sensitivity: the comparison with each assumption at each end of
    its range, all draws at once (compare_draws) against one comparison per end."""
    from workbench.engine.compare import compare, compare_draws
    from workbench.engine.sensitivity import assumption_factor, swing_draws

    factors = [assumption_factor(engine.assumptions[i], engine.assumptions[i].default) for i in SWUNG]
    draws = swing_draws([f for f in factors if f is not None])
    n = len(next(iter(draws.values())))

    def one_per_end() -> None:
        for i in range(n):
            swung = [s.model_copy(update={"assumptions": {k: v[i] for k, v in draws.items()}}) for s in scenarios]
            compare(engine, swung, candidates, resolve, targets)

    together = _timed(lambda: compare_draws(engine, scenarios, candidates, resolve, draws, targets), 3)
    apart = _timed(one_per_end, 1)
    return {"swings": n, "together_ms": together["median_ms"], "one_comparison_per_end_ms": apart["median_ms"]}


def _monte_carlo(engine, scenario, resolve) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """1,000 draws of the serving speed model's assumptions (uniform in their documented ranges) for
    one scenario on one accelerator: one point group, every key."""
    import random

    from workbench.engine.sensitivity import assumption_factor

    rng = random.Random(0)
    factors = [assumption_factor(engine.assumptions[i], engine.assumptions[i].default) for i in SWUNG]
    draws = {f.target: [rng.uniform(f.low, f.high) for _ in range(1000)] for f in factors if f is not None}
    resolved = resolve(scenario)
    timed = _timed(lambda: engine.run_points(resolved, None, None, draws), 5)
    group = engine.run_points(resolved, None, None, draws)
    tpot = sorted(group.column("performance.tpot_s").tolist())
    return {**timed, "array_path": type(group).__name__ == "PointsEstimate",
            "tpot_p5_p50_p95_ms": [round(tpot[k] * 1000, 3) for k in (50, 500, 950)]}


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
