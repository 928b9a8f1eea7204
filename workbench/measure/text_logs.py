"""Readers of text results: MLPerf Inference summaries and training logs.

* MLPerf LoadGen ``mlperf_log_summary.txt``: ``Scenario : Offline|Server``, ``Samples per
  second: X`` (Offline), ``Completed samples per second`` (Server), ``Tokens per second: X``,
  ``Result is : VALID``, and for LLM Server runs ``Mean First Token latency (ns)`` /
  ``Mean Time to Output Token (ns)`` -- e.g. the published
  mlcommons/inference_results_v4.1@a2f5d66d17e8f75c02fd74dfe810ecca6a046696:closed/NVIDIA/results/
  DGX-H100_H100-SXM-80GBx8_TRT/llama2-70b-99.9/Offline/performance/run_1/mlperf_log_summary.txt.
  The system folder name (``..._H100-SXM-80GBx8_...``) gives the GPU and its count when the file
  still sits in it.
* Megatron-LM ``training_log``: `` iteration N/ M | ... | elapsed time per iteration (ms): X |
  ... | global batch size: G |`` -- NVIDIA/Megatron-LM@86df799dc4c78e4bd7fbae972b3ee743e8b14f02:
  megatron/training/training.py.
* torchtitan ``MetricsProcessor.log``: ``step: N  loss: ...  memory: ...  tps: 6,528  tflops: ...
  mfu: ...%`` where tps is tokens per second per GPU -- pytorch/torchtitan@
  c594d8ac89f0b850a8fc1443796916dfa6ab06b1:torchtitan/components/metrics.py.

Training logs: the first logged step is warm-up (compilation, allocator growth) and is left out;
the median of the other steps is the measurement.
"""

from __future__ import annotations

import re
import statistics
from pathlib import PurePath

from workbench.measure.errors import MeasurementError
from workbench.measure.model import Measurement

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SUMMARY_LINE = re.compile(r"^\s*([A-Za-z][^:]*?)\s*:\s*(.+?)\s*$")
_SYSTEM = re.compile(r"(?:^|_)([A-Za-z0-9][A-Za-z0-9-]*?)x(\d+)(?:_|$)")


def is_mlperf_summary(text: str) -> bool:
    return "MLPerf Results Summary" in text[:2000]


def read_mlperf_summary(text: str, where: str, path: str) -> list[Measurement]:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        match = _SUMMARY_LINE.match(line)
        if match and match[1] not in fields:
            fields[match[1]] = match[2]
    scenario = fields.get("Scenario")
    if scenario not in ("Offline", "Server"):
        raise MeasurementError(f"{where}: MLPerf scenario {scenario!r} is not Offline or Server "
                               "(only those measure LLM serving throughput)")
    result = fields.get("Result is", "")
    if result.upper() != "VALID":
        raise MeasurementError(f"{where}: the MLPerf result is {result or 'not stated'}, not VALID")

    def value(key: str, required: bool = True) -> float | None:
        raw = fields.get(key)
        if raw is None:
            if required:
                raise MeasurementError(f"{where}: missing line '{key}'")
            return None
        try:
            number = float(raw)
        except ValueError:
            raise MeasurementError(f"{where}: '{key}' is {raw[:40]!r}, not a number") from None
        if not number > 0 or number == float("inf"):
            raise MeasurementError(f"{where}: '{key}' is {raw[:40]}; it must be more than 0")
        return number

    samples_key = "Samples per second" if scenario == "Offline" else "Completed samples per second"
    samples = value(samples_key)
    tokens = value("Tokens per second", required=False)
    metrics: dict[str, float] = {"requests_per_s": samples}  # type: ignore[dict-item]
    if tokens is not None:
        metrics["output_tokens_per_s"] = tokens
    ttft = value("Mean First Token latency (ns)", required=False)
    tpot = value("Mean Time to Output Token (ns)", required=False)
    if ttft is not None:
        metrics["ttft_mean_s"] = ttft * 1e-9
    if tpot is not None:
        metrics["tpot_mean_s"] = tpot * 1e-9
    gpu, count = _system_from_path(path)
    return [Measurement(
        source_format="mlperf-inference",
        file_name="",
        record=scenario,
        gpu=gpu,
        num_gpus=count,
        # Offline mean output length: tokens / samples (LoadGen counts both over the same run)
        output_tokens=(tokens / samples) if tokens and samples else None,  # type: ignore[operator]
        request_rate=value("target_qps", required=False) if scenario == "Server" else None,
        metrics=metrics,
    )]


def _system_from_path(path: str) -> tuple[str | None, int | None]:
    """``DGX-H100_H100-SXM-80GBx8_TRT`` -> ("H100-SXM-80GB", 8): MLPerf's system folder names."""
    for part in reversed(PurePath(path).parts[:-1]):
        match = _SYSTEM.search(part)
        if match and any(ch.isalpha() for ch in match[1]):
            return match[1], int(match[2])
    return None, None


# --- training logs -------------------------------------------------------------------------------

_MEGATRON = re.compile(r"iteration\s+(\d+)/\s*(?:\d+|infinity)\s*\|.*?elapsed time per iteration \(ms\):\s*([0-9.eE+-]+)")
_MEGATRON_BATCH = re.compile(r"global batch size:\s*(\d+)")
_TITAN = re.compile(r"step:\s*(\d+)\s.*?tps:\s*([0-9][0-9,]*(?:\.[0-9]+)?)")


def is_megatron_log(text: str) -> bool:
    return _MEGATRON.search(text) is not None


def is_torchtitan_log(text: str) -> bool:
    return _TITAN.search(_ANSI.sub("", text)) is not None


def _steady(values: list[tuple[int, float]], where: str, what: str) -> tuple[float, str]:
    if not values:
        raise MeasurementError(f"{where}: no {what} lines")
    values = sorted(values)
    steady = values[1:] if len(values) > 1 else values
    for step, number in steady:
        if not number > 0 or number == float("inf"):
            raise MeasurementError(f"{where}: step {step}: {what} is {number:g}; it must be more than 0")
    record = f"steps {steady[0][0]}-{steady[-1][0]}" if len(steady) > 1 else f"step {steady[0][0]}"
    return statistics.median(v for _, v in steady), record


def read_megatron(text: str, where: str) -> list[Measurement]:
    rows: list[tuple[int, float]] = []
    batches: set[int] = set()
    for line in text.splitlines():
        match = _MEGATRON.search(line)
        if match:
            try:
                rows.append((int(match[1]), float(match[2])))
            except ValueError:
                raise MeasurementError(f"{where}: unreadable iteration time {match[2][:20]!r}") from None
            batch = _MEGATRON_BATCH.search(line)
            if batch:
                batches.add(int(batch[1]))
    step_ms, record = _steady(rows, where, "'elapsed time per iteration (ms)'")
    if len(batches) > 1:
        raise MeasurementError(f"{where}: the global batch size changes during the log "
                               f"({', '.join(str(b) for b in sorted(batches))}); import one phase at a time")
    return [Measurement(source_format="megatron-lm", file_name="", record=record, workload="training",
                        engine="megatron-lm", metrics={"step_time_s": step_ms * 1e-3})]


def read_torchtitan(text: str, where: str) -> list[Measurement]:
    rows: list[tuple[int, float]] = []
    for line in _ANSI.sub("", text).splitlines():
        match = _TITAN.search(line)
        if match and "validate" not in line:
            rows.append((int(match[1]), float(match[2].replace(",", ""))))
    tps, record = _steady(rows, where, "'tps'")
    return [Measurement(source_format="torchtitan", file_name="", record=record, workload="training",
                        engine="torchtitan", metrics={"train_tokens_per_s_per_gpu": tps})]
