"""The array path at scale: a million-configuration search in process, a million-point CSV sweep.

Targets (issue 14): a 1,000,000-configuration search under 3 s on 2 cores; a 1,000,000-point sweep
streamed to CSV under 500 MB resident.

* ``memory_fit_search_1m``: for each of 32 accelerators x TP 1, 2, 4, 8 x bf16 / fp8 (256 point
  groups), Llama-3.1-70B serving at batch 1..1024 x four prompt lengths (4,096 points per group),
  whether it fits and its memory per GPU: 1,048,576 configurations, in process (plugins and
  catalogs loaded, as in the window), each group one ``Engine.run_points`` call for the fit keys;
  the answer is the largest fitting batch per accelerator, layout, precision and prompt.
  The iso-SLA search (TPOT under a target) adds the performance model, which is still scalar.
* ``sweep_csv_1m``: ``gpu-workbench sweep`` over 1,000,000 points to CSV (to /dev/null), memory
  keys, whole process: wall time and the largest resident set of the parent and of any worker.

Run: .venv/bin/python tests/benchmarks/bench_arrays.py  -> prints one JSON object.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("gpu-workbench")
FIT_KEYS = ("memory.fits", "memory.per_gpu.total")
PROMPTS = (1024, 4096, 16384, 65536)


def memory_fit_search() -> dict[str, Any]:
    import numpy as np

    from workbench.api import make_scenario, resolve
    from workbench.catalog.accelerators import load_accelerators
    from workbench.pluginhost import default_engine

    engine = default_engine()
    catalog = load_accelerators()
    accelerators = [ident for ident, a in catalog.items() if a.memory_bytes >= 16 * 2**30][:32]
    batch = np.tile(np.arange(1, 1025), len(PROMPTS))
    seq = np.repeat(np.array(PROMPTS), 1024)
    points = {"batch_size": batch, "seq_len": seq}
    anchors = []
    for gpu in accelerators:
        for tp in (1, 2, 4, 8):
            for dtype in ("bf16", "fp8"):
                fields = dict(model="llama-3.1-70b", gpu=gpu, dtype=dtype, num_gpus=tp, parallel={"tp": tp})
                anchors.append(resolve(make_scenario(**fields)))
    engine.run_points(anchors[0], points, FIT_KEYS)  # warm: per-model caches, as in the window
    start = time.perf_counter()
    cpu = time.process_time()
    answers = 0
    for resolved in anchors:
        group = engine.run_points(resolved, points, FIT_KEYS)
        fits = group.column("memory.fits").reshape(len(PROMPTS), 1024)
        largest = np.where(fits.any(axis=1), 1024 - np.argmax(fits[:, ::-1], axis=1), 0)
        answers += int((largest > 0).sum())
    wall = time.perf_counter() - start
    return {
        "configurations": len(anchors) * batch.size,
        "groups": len(anchors),
        "wall_s": round(wall, 3),
        "cpu_s": round(time.process_time() - cpu, 3),
        "us_per_configuration": round(wall / (len(anchors) * batch.size) * 1e6, 3),
        "layouts_with_a_fitting_batch": answers,
    }


def sweep_csv_1m() -> dict[str, Any]:
    batches = ",".join(str(b) for b in range(1, 1001))
    args = [
        str(CLI), "sweep", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--vary", f"batch={batches}",
        "--vary", "seq-len=128,256,512,1024,2048,4096,8192,16384,32768,65536",
        "--vary", "gpu=h100-sxm,a100-80gb-sxm,l40s,h200-sxm,mi300x,b200,rtx-4090,l4,a10,gaudi3",
        "--vary", "dtype=bf16,fp8",
        "--vary", "tp=1,2,4,8,16",
        "--keys", "memory.per_gpu.total,memory.fits,kv_cache.bytes", "--format", "csv",
    ]  # fmt: skip
    start = time.perf_counter()
    with open(os.devnull, "w") as sink:
        done = subprocess.run(args, cwd=ROOT, stdout=sink, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"sweep failed: {done.stderr.strip()[-300:]}")
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"points": 1000 * 10 * 10 * 2 * 5, "wall_s": round(wall, 2), "largest_process_rss_mib": round(peak_kib / 1024, 1)}


def main() -> dict[str, Any]:
    return {
        "nproc": len(os.sched_getaffinity(0)),
        "memory_fit_search_1m": memory_fit_search(),
        "sweep_csv_1m": sweep_csv_1m(),
    }


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
