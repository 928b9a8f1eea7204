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
    }


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
