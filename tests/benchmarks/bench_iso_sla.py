"""Equal-service-level comparison speed: every catalog accelerator for one workload, with its
1,000-draw confidence.

Target (issue 17): the iso-SLA comparison of every catalog accelerator for one workload, with its
1,000-draw confidence (and the break-even thresholds), under 2 s on a 2-core machine. The workload
is the README's question: Llama-3.1-70B, 1,024-token prompts, 256-token answers, 2,000 requests/min
(8,533 output tokens/s), p99 TTFT <= 1 s and TPOT <= 50 ms, bf16 or fp8 weights; every candidate's
cheapest configurations simulated under that load until one holds at p99.

Each figure is wall time (``time.perf_counter``) and CPU time (``time.process_time``) in a warm
process (plugins and catalogs loaded, as in the window): ``first_s`` is the process's first run,
then the median of ``--runs``. The serving simulator's result cache is emptied before every run,
so that no run reuses another's simulations (the window starts each comparison the same way
after an edit).

Run: .venv/bin/python tests/benchmarks/bench_iso_sla.py  -> prints one JSON object.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import time
from typing import Any

DEMAND = 2000 / 60 * 256  # output tokens/s of 2,000 requests/min of 256 tokens


def _fresh() -> None:
    """Empty the serving simulator's result cache (a run must simulate what it needs)."""
    from workbench_performance import serving_simulation

    serving_simulation._CACHE.clear()


def _timed(fn, runs: int) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    walls, cpus = [], []
    result = None
    for _ in range(runs):
        _fresh()
        w, c = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return {"median_s": round(statistics.median(walls), 3), "min_s": round(min(walls), 3),
            "cpu_median_s": round(statistics.median(cpus), 3), "result": result}  # fmt: skip


def main(runs: int) -> dict[str, Any]:
    from workbench.api import make_scenario
    from workbench.catalog.accelerators import load_accelerators
    from workbench.catalog.resolve import resolve_scenario
    from workbench.engine.compare import Candidate, Targets
    from workbench.engine.iso_confidence import iso_sla_confidence
    from workbench.engine.iso_sla import iso_sla
    from workbench.pluginhost import default_engine

    engine = default_engine()
    candidates = [Candidate(ident) for ident in load_accelerators()]
    scenario = make_scenario(model="llama-3.1-70b", gpu="h100-sxm", gen_len=256, seq_len=1024)
    targets = Targets(max_ttft_s=1.0, max_tpot_s=0.05, min_tokens_per_s=DEMAND)
    weights = ["bf16", "fp8"]

    def with_confidence() -> Any:
        return iso_sla_confidence(engine, scenario, candidates, resolve_scenario, targets, weights=weights, draws=1000)

    _fresh()
    start = time.perf_counter()
    with_confidence()
    first_s = round(time.perf_counter() - start, 3)
    plain = _timed(lambda: iso_sla(engine, scenario, candidates, resolve_scenario, targets, weights=weights), runs)
    ranked = plain.pop("result")
    full = _timed(with_confidence, runs)
    confidence = full.pop("result")
    return {
        "date": dt.date.today().isoformat(),
        "machine": {"cpus": len(os.sched_getaffinity(0)), "python": platform.python_version(),
                    "platform": platform.platform()},  # fmt: skip
        "candidates": len(candidates),
        "target_s": 2.0,
        "first_s": first_s,
        "iso_sla": {**plain, "meeting": sum(r.meets for r in ranked), "winner": ranked[0].candidate.label},
        "iso_sla_with_confidence_1000_draws": {
            **full,
            "configurations_drawn": confidence.configurations_drawn,
            "configurations_that_run": sum(r.searched for r in confidence.base),
            "shares": {k: v for k, v in confidence.shares.items() if v},
            "break_even": [b.describe() for b in confidence.break_even],
        },
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs after the first (default 3)")
    print(json.dumps(main(parser.parse_args().runs), indent=2))
