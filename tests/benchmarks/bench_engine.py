"""Engine speed: one estimate with every plugin, and 10,000-point CLI sweeps, whole process included.

Targets (the issue): a single estimate well under a millisecond; ``gpu-workbench sweep`` over
10,000 configurations in under one second on a 2-core machine, start-up included; since the
array engine, under half a second (met for array-estimated columns; the default columns read the
performance estimator, which still runs once per point).

Run: .venv/bin/python tests/benchmarks/bench_engine.py  -> prints one JSON object.
Per-estimate figures are CPU time (``time.process_time_ns``) per run, so a busy neighbour on a
shared machine does not inflate them; sweeps are wall time of the whole process, best of 3.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("gpu-workbench")

#: Single-estimate scenarios: (name, scenario fields).
SINGLE: tuple[tuple[str, dict[str, Any]], ...] = (
    ("inference_llama8b_h100", {"model": "llama-3.1-8b", "gpu": "h100-sxm", "batch_size": 16}),
    ("inference_llama70b_tp4", {"model": "llama-3.1-70b", "gpu": "h100-sxm", "num_gpus": 4,
                                "parallel": {"tp": 4}, "batch_size": 64, "seq_len": 8192}),
    ("training_llama8b_zero3_64", {"model": "llama-3.1-8b", "gpu": "h100-sxm", "workload": "pretrain",
                                   "num_gpus": 64, "parallel": {"dp": 64, "zero_stage": 3}, "batch_size": 4}),
    ("training_llama70b_tp8_pp4", {"model": "llama-3.1-70b", "gpu": "h100-sxm", "workload": "pretrain",
                                   "num_gpus": 256, "batch_size": 1, "seq_len": 4096, "recompute": "full",
                                   "parallel": {"tp": 8, "pp": 4, "dp": 8, "zero_stage": 1}}),
)

SEQ = "seq-len=128,256,512,1024,2048,4096,8192,16384,32768,65536"
GPUS = "gpu=h100-sxm,a100-80gb-sxm,l40s,h200-sxm,mi300x,b200,rtx-4090,l4,a10,gaudi3"
#: The issue's inference sweep and a training sweep of the same size (10 x 10 x 10 x 2 x 5 points).
SWEEPS: dict[str, list[str]] = {
    "sweep_inference_10000": ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--vary", "batch=1..512",
                              "--vary", SEQ, "--vary", GPUS, "--vary", "dtype=bf16,fp8",
                              "--vary", "tp=1,2,4,8,16"],
    "sweep_training_10000": ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--workload", "pretrain",
                             "--gpus", "64", "--zero", "3", "--vary", "batch=1..512", "--vary", SEQ,
                             "--vary", GPUS, "--vary", "recompute=none,full", "--vary", "tp=1,2,4,8,16"],
}


def single_estimates(runs: int = 2000) -> dict[str, dict[str, float]]:
    """Full estimates (every plugin, every key, formulas left lazy) of one scenario, repeated.

    The plugins keep per-model caches (model shapes, activation blocks) and the performance plugin
    per-input ones, so a repeated scenario measures the steady state a GUI sees while one field is
    edited; the ``distinct`` figures run every scenario at a new batch size.
    """
    from workbench.api import make_scenario, resolve
    from workbench.engine.pipeline import Engine
    from workbench.pluginhost import PluginHost

    # The first-party plugins only, so that a third-party plugin installed alongside does not
    # change the figure (the CLI sweeps below run whatever is installed, as a user would).
    engine = Engine(PluginHost(entry_point_group=None).registry.estimators)
    out = {}
    for name, fields in SINGLE:
        resolved = resolve(make_scenario(**fields))
        for _ in range(50):  # warm caches as a GUI or sweep would
            dict(engine.run(resolved).values)
        samples = []
        for _ in range(runs):
            # every key's quantity is read, as the window's results panel does: an estimate builds
            # its quantities when they are read (engine.points.PointQuantities)
            start = time.process_time_ns()
            estimate = engine.run(resolved)
            for _quantity in estimate.values.values():
                pass
            samples.append((time.process_time_ns() - start) / 1000)
        samples.sort()
        # Distinct inputs: the same scenario at batch sizes never estimated before.
        variants = [resolve(make_scenario(**{**fields, "batch_size": 1000 + i})) for i in range(runs // 4)]
        start = time.process_time_ns()
        for variant in variants:
            for _quantity in engine.run(variant).values.values():
                pass
        distinct = (time.process_time_ns() - start) / 1000 / len(variants)
        out[name] = {
            "median_us": round(statistics.median(samples), 1),
            "p95_us": round(samples[int(0.95 * len(samples))], 1),
            "distinct_inputs_mean_us": round(distinct, 1),
        }
    return out


def sweep_wall(args: list[str], repeat: int = 3) -> dict[str, float]:
    walls, cpus = [], []
    for _ in range(repeat):
        before = os.times()
        start = time.perf_counter()
        command = [str(CLI), "sweep", *args, "--format", "csv"]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        walls.append(time.perf_counter() - start)
        after = os.times()
        spent = (after.children_user + after.children_system) - (before.children_user + before.children_system)
        cpus.append(spent)
        if done.returncode != 0:
            raise SystemExit(f"sweep failed: {done.stderr}")
        lines = done.stdout.count("\n") - 1
        if lines != 10_000:
            raise SystemExit(f"sweep gave {lines} rows, not 10,000")
    return {"wall_s_best_of_3": round(min(walls), 3), "cpu_s_best_of_3": round(min(cpus), 3)}


def main() -> dict[str, Any]:
    result: dict[str, Any] = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "python": sys.version.split()[0],
        "single_estimate_cpu_us": single_estimates(),
    }
    for name, args in SWEEPS.items():
        result[name] = sweep_wall(args)
    return result


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
