"""Every benchmark in one command; one JSON document on stdout (~85 s on 2 cores; < 5 minutes).

    .venv/bin/python tests/benchmarks/run_all.py [--no-compare] [--bench-venv PATH]

Runs every ``bench_*.py`` beside it, each in its own process: ``bench_engine.py`` (single estimate,
10,000-point CLI sweeps, whole process), ``bench_gui.py`` (edit-to-chart latency, window ready after
launch), ``bench_store.py`` (project save/open with 500 scenarios), ``bench_report.py`` (10-scenario
PDF export) and any other, then a comparison with llm-analysis (https://github.com/cli99/llm-analysis):
the same number of estimates of a comparable configuration through each tool's Python API. llm-analysis is
installed from PyPI into its own venv (``.bench-venv/`` by default; the first run takes ~30 s).
First-party plugins only (``WORKBENCH_NO_ENTRY_POINTS=1``), and an empty user folder. See
tests/benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
LLM_ANALYSIS = "llm-analysis==0.2.2"
ESTIMATES = 1000
ROUNDS = 5

#: The comparison's configuration, in each tool's words: Llama-2-7B serving on one H100 SXM 80 GB,
#: 16 concurrent requests of 2,048 prompt and 256 generated tokens, 16-bit weights, activations, KV.
OURS = dict(model="llama-2-7b", gpu="h100-sxm", batch_size=16, seq_len=2048, gen_len=256, dtype="bf16")
THEIRS = dict(model="NousResearch_Llama-2-7b-hf", gpu="h100-sxm-80gb", dtype="w16a16e16",
              batch_size_per_gpu=16, seq_len=2048, num_tokens_to_generate=256)

OUR_LOOP = """
import json, sys, time
from workbench.api import make_scenario, resolve
from workbench.pluginhost import default_engine
fields, n, rounds = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
engine = default_engine()
resolved = resolve(make_scenario(**fields))
for _ in range(50):
    est = engine.run(resolved)
best = float("inf")
for _ in range(rounds):
    start = time.perf_counter()
    for _ in range(n):
        engine.run(resolved)
    best = min(best, time.perf_counter() - start)
print(json.dumps({"us_per_estimate": best / n * 1e6,
                  "weights_bytes": est.get("memory.per_gpu.weights"),
                  "kv_cache_bytes": est.get("memory.per_gpu.kv_cache"),
                  "tpot_s": est.get("performance.tpot_s")}))
"""

THEIR_LOOP = """
import json, logging, sys, time
from llm_analysis.analysis import LLMAnalysis
from llm_analysis.config import (ParallelismConfig, get_dtype_config_by_name, get_gpu_config_by_name,
                                 get_model_config_by_name)
from llm_analysis.logger import logger
logger.setLevel(logging.WARNING)  # its per-call INFO report would be measured, not the estimate
cfg, n, rounds = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
analysis = LLMAnalysis(get_model_config_by_name(cfg["model"]), get_gpu_config_by_name(cfg["gpu"]),
                       get_dtype_config_by_name(cfg["dtype"]), ParallelismConfig(tp_size=1))
args = dict(batch_size_per_gpu=cfg["batch_size_per_gpu"], seq_len=cfg["seq_len"],
            num_tokens_to_generate=cfg["num_tokens_to_generate"])
for _ in range(50):
    out = analysis.inference(**args)
best = float("inf")
for _ in range(rounds):
    start = time.perf_counter()
    for _ in range(n):
        analysis.inference(**args)
    best = min(best, time.perf_counter() - start)
print(json.dumps({"us_per_estimate": best / n * 1e6, "weights_bytes": out["weight_memory_per_gpu"],
                  "kv_cache_bytes": out["kv_cache_memory_per_gpu"], "tpot_s": out["decode_latency"]}))
"""


#: Sweep marginal cost: the same configurations through each tool, Llama-2-7B serving on one H100:
#: batch 1..16 x prompts of 16, 32, ... tokens (point i: batch 1 + i % 16, prompt 16 x (1 + i // 16);
#: all fit, since llm-analysis refuses a configuration that does not). Ours as one point group per
#: sweep, theirs one call per configuration. Marginal = (time of 4,096 - time of 256) / 3,840.
SWEEP_SIZES = (256, 4096)
#: Our key sets: what the array estimators compute (memory, KV, FLOPs, roofline, cost inputs),
#: and every key (every first-party estimator, the speed models included, runs the group as arrays).
SWEEP_KEYS = {
    "memory_kv_flops": ["memory.per_gpu.total", "memory.fits", "kv_cache.bytes", "flops.forward", "roofline.bound",
                        "memory.per_gpu.weights", "memory.per_gpu.kv_cache"],
    "all_keys": None,
}
OUR_SWEEP = """
import json, sys, time
from workbench.api import make_scenario, resolve
from workbench.pluginhost import default_engine
fields, sizes, keysets, rounds = (json.loads(a) for a in sys.argv[1:5])
engine = default_engine()
resolved = resolve(make_scenario(**fields))
def points(n):
    return {"batch_size": [1 + i % 16 for i in range(n)], "seq_len": [16 * (1 + i // 16) for i in range(n)]}
out = {}
for name, keys in keysets.items():
    times = {}
    for n in sizes:
        p = points(n)
        engine.run_points(resolved, p, keys)
        best = float("inf")
        for _ in range(rounds):
            start = time.perf_counter()
            engine.run_points(resolved, p, keys)
            best = min(best, time.perf_counter() - start)
        times[n] = best
    small, big = sizes
    out[name] = {"marginal_us_per_config": (times[big] - times[small]) / (big - small) * 1e6,
                 "us_per_config_at_%d" % big: times[big] / big * 1e6}
print(json.dumps(out))
"""
THEIR_SWEEP = """
import json, logging, sys, time
from llm_analysis.analysis import LLMAnalysis
from llm_analysis.config import (ParallelismConfig, get_dtype_config_by_name, get_gpu_config_by_name,
                                 get_model_config_by_name)
from llm_analysis.logger import logger
logger.setLevel(logging.WARNING)
cfg, sizes, rounds = (json.loads(a) for a in sys.argv[1:4])
analysis = LLMAnalysis(get_model_config_by_name(cfg["model"]), get_gpu_config_by_name(cfg["gpu"]),
                       get_dtype_config_by_name(cfg["dtype"]), ParallelismConfig(tp_size=1))
times = {}
for n in sizes:
    configs = [(1 + i % 16, 16 * (1 + i // 16)) for i in range(n)]
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for batch, seq in configs:
            analysis.inference(batch_size_per_gpu=batch, seq_len=seq, num_tokens_to_generate=cfg["num_tokens_to_generate"])
        best = min(best, time.perf_counter() - start)
    times[n] = best
small, big = sizes
print(json.dumps({"marginal_us_per_config": (times[big] - times[small]) / (big - small) * 1e6}))
"""

#: Arguments per benchmark script (others run with none): enough GUI samples for a p95 in ~10 s.
ARGS: dict[str, tuple[str, ...]] = {"bench_gui.py": ("--edits", "60", "--launches", "3")}


def _env() -> dict[str, str]:
    return {**os.environ, "WORKBENCH_NO_ENTRY_POINTS": "1", "QT_QPA_PLATFORM": "offscreen"}


def _json_from(stdout: str) -> Any:
    return json.loads(stdout[stdout.index("{"):])


def run_bench(script: str, *args: str, timeout: int = 180) -> dict[str, Any]:
    """One benchmark script in its own process: its JSON, and how long the whole run took."""
    path = HERE / script
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, str(path), *args], cwd=ROOT, env=_env(), capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"failed": f"timed out after {timeout} s"}
    if done.returncode != 0:
        return {"failed": (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]}
    try:
        result = _json_from(done.stdout)
    except ValueError:
        return {"failed": f"printed no JSON: {done.stdout[-200:]!r}"}
    result["run_s"] = round(time.perf_counter() - start, 1)
    return result


def bench_venv(path: Path) -> Path:
    """A venv of its own with llm-analysis (never the workbench's: its pins differ)."""
    python = path / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
        (path / ".gitignore").write_text("*\n")  # the folder ignores itself
    probe = subprocess.run([str(python), "-c", "import llm_analysis"], capture_output=True)
    if probe.returncode != 0:
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        LLM_ANALYSIS], check=True, capture_output=True, timeout=240)
    return python


def compare_llm_analysis(venv: Path) -> dict[str, Any]:
    try:
        theirs_python = bench_venv(venv)
    except (subprocess.SubprocessError, OSError) as exc:
        return {"skipped": f"could not install {LLM_ANALYSIS} into {venv}: {exc}"}
    runs = {}
    for name, python, code, config in (("ours", sys.executable, OUR_LOOP, OURS),
                                       ("llm_analysis", str(theirs_python), THEIR_LOOP, THEIRS)):
        command = [python, "-c", textwrap.dedent(code), json.dumps(config), str(ESTIMATES), str(ROUNDS)]
        done = subprocess.run(command, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            return {"failed": f"{name}: {done.stderr.strip()[-500:]}"}
        runs[name] = _json_from(done.stdout)
    sweep_args = [json.dumps(list(SWEEP_SIZES))]
    for name, command in (
        ("ours_sweep", [sys.executable, "-c", textwrap.dedent(OUR_SWEEP), json.dumps(OURS), *sweep_args,
                        json.dumps(SWEEP_KEYS), "3"]),
        ("theirs_sweep", [str(theirs_python), "-c", textwrap.dedent(THEIR_SWEEP), json.dumps(THEIRS), *sweep_args,
                          "3"]),
    ):
        done = subprocess.run(command, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            return {"failed": f"{name}: {done.stderr.strip()[-500:]}"}
        runs[name] = _json_from(done.stdout)
    ours, theirs = runs["ours"], runs["llm_analysis"]
    their_marginal = runs["theirs_sweep"]["marginal_us_per_config"]
    sweep = {
        "configurations": "batch 1..16 x prompts 16..4096 tokens in steps of 16, generate 256; marginal = "
                          "(time of 4,096 configurations - time of 256) / 3,840",
        "llm_analysis_marginal_us_per_config": round(their_marginal, 2),
        **{
            f"ours_{name}_marginal_us_per_config": round(found["marginal_us_per_config"], 2)
            for name, found in runs["ours_sweep"].items()
        },
        **{
            f"llm_analysis_over_ours_{name}": round(their_marginal / found["marginal_us_per_config"], 1)
            for name, found in runs["ours_sweep"].items()
        },
    }

    def pair(key: str, scale: float) -> list[float]:
        return [round(ours[key] * scale, 2), round(theirs[key] * scale, 2)]

    return {
        "llm_analysis_version": LLM_ANALYSIS.split("==")[1],
        "configuration": "Llama-2-7B inference, 1x H100 SXM 80GB, batch 16, prompt 2048, generate 256, "
                         "16-bit",
        "estimates": ESTIMATES,
        "method": f"Python API in a fresh process each, setup once, best of {ROUNDS} rounds of "
                  f"{ESTIMATES} estimates",
        "ours_us_per_estimate": round(ours["us_per_estimate"], 1),
        "llm_analysis_us_per_estimate": round(theirs["us_per_estimate"], 1),
        "ours_over_theirs_time_ratio": round(ours["us_per_estimate"] / theirs["us_per_estimate"], 2),
        "sweep_marginal": sweep,
        "what_each_computes": "ours: every first-party estimator (memory stack, FLOPs, roofline, speed, "
                              "communication, cost) with explanations; llm-analysis: inference() summary "
                              "(memory, latency, throughput)",
        "sanity": {"order": ["ours", "llm_analysis"], "weights_gib": pair("weights_bytes", 2**-30),
                   "kv_cache_gib": pair("kv_cache_bytes", 2**-30),
                   "time_per_output_token_ms": pair("tpot_s", 1000)},
    }


def _pick(result: dict[str, Any], *path: str) -> Any:
    for key in path:
        if not isinstance(result, dict) or key not in result:
            return None
        result = result[key]
    return result


def compile_bytecode() -> None:
    """Byte-compile the sources first, as installing a wheel does: the sweeps time whole processes,
    and an editable install under ``PYTHONDONTWRITEBYTECODE=1`` would otherwise compile every
    module from source on each start (about 0.1 s more per sweep, measured)."""
    import compileall

    for folder in ("workbench", "plugins"):
        compileall.compile_dir(str(ROOT / folder), quiet=1)


def _worst(result: dict[str, Any], group: str, key: str) -> float | None:
    """The largest ``key`` over the entries of ``result[group]`` (None when it is missing)."""
    entries = result.get(group)
    if not isinstance(entries, dict):
        return None
    values = [entry[key] for entry in entries.values() if isinstance(entry, dict) and key in entry]
    return max(values) if values else None


def run_all(bench_venv: Path, compare: bool) -> dict[str, Any]:
    start = time.perf_counter()
    compile_bytecode()
    results = {path.stem: run_bench(path.name, *ARGS.get(path.name, ()), timeout=240)
               for path in sorted(HERE.glob("bench_*.py"))}
    for expected in ("bench_engine", "bench_gui", "bench_store", "bench_report"):
        results.setdefault(expected, {"skipped": f"tests/benchmarks/{expected}.py is not in this checkout"})
    engine, gui, store, report = (results[f"bench_{name}"] for name in ("engine", "gui", "store", "report"))
    comparison = compare_llm_analysis(bench_venv) if compare else {"skipped": "--no-compare"}
    summary = {
        "single_estimate_us": _pick(engine, "single_estimate_cpu_us", "inference_llama8b_h100", "median_us"),
        "sweep_10000_points_s": _pick(engine, "sweep_inference_10000", "wall_s_best_of_3"),
        "sweep_10000_training_points_s": _pick(engine, "sweep_training_10000", "wall_s_best_of_3"),
        "edit_to_chart_ms_p50": _pick(gui, "edit_to_chart_ms", "p50"),
        "edit_to_chart_ms_p95": _pick(gui, "edit_to_chart_ms", "p95"),
        "window_ready_s": _pick(gui, "window_ready_s", "median"),
        "project_save_500_scenarios_s": _pick(store, "project_save_500_scenarios_s"),
        "project_open_500_scenarios_s": _pick(store, "project_open_500_scenarios_s"),
        "pdf_export_10_scenarios_s": _pick(report, "report_10_scenarios_s"),
        "compare_catalog_engine_ms_worst_median": _worst(results.get("bench_compare", {}), "catalog_x_1_scenario",
                                                         "median_ms"),
        "compare_view_update_ms_worst_p95": _pick(results.get("bench_compare_view", {}),
                                                  "worst_scenario_edit_p95_ms"),
        "ours_over_llm_analysis_time_ratio": comparison.get("ours_over_theirs_time_ratio"),
        "sweep_marginal_us_per_config": _pick(comparison, "sweep_marginal"),
        "fit_search_1m_configurations_s": _pick(results.get("bench_arrays", {}), "memory_fit_search_1m", "wall_s"),
        "sweep_1m_points_csv_rss_mib": _pick(results.get("bench_arrays", {}), "sweep_csv_1m", "largest_process_rss_mib"),
        "simulator_10000_requests_continuous_s": _pick(results.get("bench_simulator", {}),
                                                       "requests_10000_x1_continuous", "wall_s"),
        "iso_sla_catalog_with_1000_draws_s": _pick(results.get("bench_iso_sla", {}),
                                                   "iso_sla_with_confidence_1000_draws", "median_s"),
        "iso_sla_in_window_click_to_result_s": _pick(results.get("bench_gui_iso", {}), "click_to_result", "median_s"),
        "iso_sla_window_adds_s": _pick(results.get("bench_gui_iso", {}), "window_adds_s"),
    }
    return {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "machine": {"cpus": len(os.sched_getaffinity(0)), "python": platform.python_version(),
                    "platform": platform.platform()},
        "summary": summary,
        **results,
        "llm_analysis_comparison": comparison,
        "total_s": round(time.perf_counter() - start, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-compare", action="store_true", help="skip the llm-analysis comparison")
    parser.add_argument("--bench-venv", type=Path, default=ROOT / ".bench-venv",
                        help="venv for llm-analysis (default: .bench-venv/)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="workbench-bench-") as scratch:
        # No user catalog, settings or recovery files of the person running it.
        os.environ.update(WORKBENCH_USER_DIR=scratch, WORKBENCH_SETTINGS_DIR=scratch)
        document = run_all(args.bench_venv, compare=not args.no_compare)
    print(json.dumps(document, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
