"""Readers of serving-benchmark result files in JSON (one object) or JSON Lines (one per run).

Field names come from each tool's source:

* ``vllm bench serve`` / ``benchmark_serving.py --save-result``:
  vllm-project/vllm@009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1:vllm/benchmarks/serve.py -- ``result``
  (``duration``, ``completed``, ``total_input_tokens``, ``total_output_tokens``,
  ``request_throughput``, ``output_throughput``, ``mean_/median_/p99_{ttft,tpot,itl}_ms``) merged
  into ``result_json`` with ``model_id``, ``num_prompts``, ``request_rate`` (a number or ``"inf"``),
  ``burstiness``, ``max_concurrency``, ``backend``/``endpoint_type``.
* SGLang ``bench_serving --output-file`` (one JSON line per run):
  sgl-project/sglang@0033168f0f58b2bc05aa0273bd475d9c01bafb1c:python/sglang/bench_serving.py --
  ``backend``, ``dataset_name``, ``request_rate``, ``max_concurrency``, ``random_input_len``,
  ``random_output_len``, ``duration``, ``completed``, ``total_input_tokens``,
  ``total_output_tokens``, ``request_throughput``, ``output_throughput``,
  ``mean_/median_/p99_ttft_ms``, ``mean_/median_/p99_tpot_ms``, ``mean_itl_ms``. No model name.
* genai-perf / AIPerf ``profile_export_*.json``: every metric an object with ``unit`` and
  statistics (``avg``, ``p50``, ``p99``, ...): ``request_throughput`` (requests/sec),
  ``output_token_throughput`` (tokens/sec), ``time_to_first_token``, ``inter_token_latency``
  (ms), ``input_sequence_length``, ``output_sequence_length`` (tokens), ``benchmark_duration``
  (sec), ``request_count``; ``input_config`` with ``endpoint.model_names`` and
  ``loadgen.concurrency`` / ``loadgen.request_rate``; ``telemetry_data`` with ``gpu_name`` --
  ai-dynamo/aiperf@e51cbbaf65a675737a5af746010b4e4e2b589508:docs/tutorials/working-with-profile-exports.md.
* ``trtllm-bench ... --report_json``: ``engine`` (``model``, ``backend``), ``world_info``
  (``tp_size``, ``pp_size``, ``world_size``), ``request_info`` (``num_requests``,
  ``avg_num_concurrent_requests``, ``avg_input_length``, ``avg_output_length``), ``performance``
  (``total_latency_ms``, ``request_throughput_req_s``, ``system_output_throughput_tok_s``), and
  with streaming ``streaming_metrics`` (``avg_ttft_ms``, ``avg_tpot_ms``, ``ttft_percentiles``,
  ``tpot_percentiles``) -- NVIDIA/TensorRT-LLM@2787769cae353023784dce105d648bcd4d04f4d4:
  tensorrt_llm/bench/dataclasses/reporting.py (``get_statistics_dict``).
"""

from __future__ import annotations

from typing import Any

from workbench.measure.errors import MeasurementError
from workbench.measure.model import Measurement
from workbench.measure.source import check_rate, engine_name, number, positive

_MS = 1e-3


def _ms_metrics(doc: dict[str, Any], where: str) -> dict[str, float]:
    """The ``*_ms`` latency fields vLLM and SGLang share, in seconds."""
    out: dict[str, float] = {}
    for name in ("ttft", "tpot", "itl"):
        for stat, key in (("mean", "mean"), ("median", "p50"), ("p99", "p99")):
            value = number(doc, f"{stat}_{name}_ms", where, required=False)
            if value is not None and value > 0 and (name != "itl" or stat == "mean"):
                out[f"{name}_{key}_s"] = value * _MS
    return out


def _request_rate(doc: dict[str, Any], where: str) -> float | None:
    value = doc.get("request_rate")
    if value is None or (isinstance(value, str) and value.strip().lower() == "inf"):
        return None  # all requests at once: a closed loop bounded by the concurrency
    if isinstance(value, float) and value == float("inf"):
        return None
    return positive(number(doc, "request_rate", where), "request_rate", where)


def _benchmark_serving(doc: dict[str, Any], where: str, fmt: str) -> Measurement:
    duration = positive(number(doc, "duration", where), "duration", where)
    completed = positive(number(doc, "completed", where), "completed", where)
    total_in = number(doc, "total_input_tokens", where, required=False)
    total_out = positive(number(doc, "total_output_tokens", where), "total_output_tokens", where)
    out_rate = number(doc, "output_throughput", where)
    req_rate = number(doc, "request_throughput", where)
    check_rate(where, "output_throughput", out_rate, total_out, duration)
    check_rate(where, "request_throughput", req_rate, completed, duration)
    metrics = _ms_metrics(doc, where)
    metrics["output_tokens_per_s"] = positive(out_rate, "output_throughput", where)  # type: ignore[assignment]
    metrics["requests_per_s"] = positive(req_rate, "request_throughput", where)  # type: ignore[assignment]
    concurrency = number(doc, "max_concurrency", where, required=False)
    model = doc.get("model_id") if isinstance(doc.get("model_id"), str) else None
    return Measurement(
        source_format=fmt,  # type: ignore[arg-type]
        file_name="",
        model=model,
        input_tokens=(total_in / completed) if total_in else None,  # type: ignore[operator]
        output_tokens=total_out / completed,  # type: ignore[operator]
        concurrency=positive(concurrency, "max_concurrency", where),
        request_rate=_request_rate(doc, where),
        engine=engine_name(doc.get("backend") or doc.get("endpoint_type")),
        metrics=metrics,
    )


def read_vllm(doc: dict[str, Any], where: str) -> list[Measurement]:
    return [_benchmark_serving(doc, where, "vllm-bench-serve")]


def read_sglang(docs: list[dict[str, Any]], where: str) -> list[Measurement]:
    return [_benchmark_serving(doc, f"{where} line {i}", "sglang-bench-serving") for i, doc in enumerate(docs, 1)]


# --- genai-perf / AIPerf -------------------------------------------------------------------------

_UNIT_SCALE = {"ms": _MS, "s": 1.0, "sec": 1.0, "us": 1e-6, "ns": 1e-9}


def _stat(doc: dict[str, Any], key: str, stat: str, where: str, units: dict[str, float]) -> float | None:
    entry = doc.get(key)
    if entry is None:
        return None
    if not isinstance(entry, dict):
        raise MeasurementError(f"{where}: '{key}' is not an object with a unit and statistics")
    unit = str(entry.get("unit", "")).strip().lower()
    if unit not in units:
        raise MeasurementError(f"{where}: '{key}' is in '{entry.get('unit')}', expected one of {', '.join(units)}")
    value = number(entry, stat, f"{where}: {key}", required=False)
    return None if value is None else value * units[unit]


def read_profile_export(doc: dict[str, Any], where: str, fmt: str) -> list[Measurement]:
    times = _UNIT_SCALE
    rate = {"requests/sec": 1.0, "requests/s": 1.0, "req/s": 1.0}
    tokens_rate = {"tokens/sec": 1.0, "tokens/s": 1.0, "tok/s": 1.0}
    tokens = {"tokens": 1.0}
    metrics: dict[str, float] = {}
    for name, key in (("ttft", "time_to_first_token"), ("tpot", "inter_token_latency")):
        for stat, suffix in (("avg", "mean"), ("p50", "p50"), ("p99", "p99")):
            value = _stat(doc, key, stat, where, times)
            if value is not None and value > 0:
                metrics[f"{name}_{suffix}_s"] = value
    out_rate = _stat(doc, "output_token_throughput", "avg", where, tokens_rate)
    req_rate = _stat(doc, "request_throughput", "avg", where, rate)
    if out_rate is None and req_rate is None:
        raise MeasurementError(f"{where}: missing field 'output_token_throughput' (and 'request_throughput')")
    duration = _stat(doc, "benchmark_duration", "avg", where, {"sec": 1.0, "s": 1.0})
    count = _stat(doc, "request_count", "avg", where, {"requests": 1.0, "": 1.0})
    total_osl = _stat(doc, "total_osl", "avg", where, tokens)
    check_rate(where, "output_token_throughput", out_rate, total_osl, duration)
    check_rate(where, "request_throughput", req_rate, count, duration)
    if out_rate is not None:
        metrics["output_tokens_per_s"] = positive(out_rate, "output_token_throughput", where)  # type: ignore[assignment]
    if req_rate is not None:
        metrics["requests_per_s"] = positive(req_rate, "request_throughput", where)  # type: ignore[assignment]
    config = doc.get("input_config") if isinstance(doc.get("input_config"), dict) else {}
    endpoint = config.get("endpoint") if isinstance(config.get("endpoint"), dict) else {}
    names = endpoint.get("model_names") or config.get("model_names") or config.get("model")
    model = names[0] if isinstance(names, list) and names and isinstance(names[0], str) else None
    loadgen = config.get("loadgen") if isinstance(config.get("loadgen"), dict) else config
    concurrency = loadgen.get("concurrency")
    request_rate = loadgen.get("request_rate")
    return [Measurement(
        source_format=fmt,  # type: ignore[arg-type]
        file_name="",
        model=model,
        gpu=_telemetry_gpu(doc),
        input_tokens=_stat(doc, "input_sequence_length", "avg", where, tokens),
        output_tokens=_stat(doc, "output_sequence_length", "avg", where, tokens),
        concurrency=float(concurrency) if _positive_number(concurrency) else None,
        request_rate=float(request_rate) if _positive_number(request_rate) else None,
        metrics=metrics,
    )]


def _positive_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < float("inf")


def _telemetry_gpu(doc: dict[str, Any]) -> str | None:
    """The GPU name AIPerf's telemetry recorded (the catalog match happens on import)."""
    telemetry = doc.get("telemetry_data")
    if not isinstance(telemetry, dict) or not isinstance(telemetry.get("endpoints"), dict):
        return None
    for endpoint in telemetry["endpoints"].values():
        gpus = endpoint.get("gpus") if isinstance(endpoint, dict) else None
        for gpu in (gpus or {}).values():
            if isinstance(gpu, dict) and isinstance(gpu.get("gpu_name"), str):
                return gpu["gpu_name"]
    return None


# --- trtllm-bench --------------------------------------------------------------------------------


def read_trtllm_bench(doc: dict[str, Any], where: str) -> list[Measurement]:
    def section(name: str, required: bool = True) -> dict[str, Any]:
        value = doc.get(name)
        if not isinstance(value, dict):
            if required:
                raise MeasurementError(f"{where}: missing section '{name}'")
            return {}
        return value

    perf, requests, world = section("performance"), section("request_info"), section("world_info", False)
    engine, streaming = section("engine", False), section("streaming_metrics", False)
    count = positive(number(requests, "num_requests", f"{where}: request_info"), "num_requests", where)
    osl = positive(number(requests, "avg_output_length", f"{where}: request_info"), "avg_output_length", where)
    isl = number(requests, "avg_input_length", f"{where}: request_info", required=False)
    total_ms = positive(number(perf, "total_latency_ms", f"{where}: performance"), "total_latency_ms", where)
    out_rate = number(perf, "system_output_throughput_tok_s", f"{where}: performance")
    req_rate = number(perf, "request_throughput_req_s", f"{where}: performance", required=False)
    duration = total_ms * _MS  # type: ignore[operator]
    check_rate(where, "system_output_throughput_tok_s", out_rate, count * osl, duration)  # type: ignore[operator]
    check_rate(where, "request_throughput_req_s", req_rate, count, duration)
    metrics = {"output_tokens_per_s": positive(out_rate, "system_output_throughput_tok_s", where)}
    if req_rate:
        metrics["requests_per_s"] = req_rate
    for name, key in (("ttft", "avg_ttft_ms"), ("tpot", "avg_tpot_ms")):
        value = number(streaming, key, f"{where}: streaming_metrics", required=False)
        if value:
            metrics[f"{name}_mean_s"] = value * _MS
    for name, key in (("ttft", "ttft_percentiles"), ("tpot", "tpot_percentiles")):
        table = streaming.get(key)
        if isinstance(table, dict):
            for stat in ("p50", "p99"):
                value = number(table, stat, f"{where}: streaming_metrics.{key}", required=False)
                if value:
                    metrics[f"{name}_{stat}_s"] = value * _MS
    concurrency = number(requests, "avg_num_concurrent_requests", f"{where}: request_info", required=False)
    return [Measurement(
        source_format="trtllm-bench",
        file_name="",
        model=engine.get("model") if isinstance(engine.get("model"), str) else None,
        num_gpus=_count(world, "world_size", where),
        tp=_count(world, "tp_size", where),
        pp=_count(world, "pp_size", where),
        input_tokens=isl if isl and isl > 0 else None,
        output_tokens=osl,
        concurrency=concurrency if concurrency and concurrency > 0 else None,
        engine="tensorrt-llm",
        metrics=metrics,  # type: ignore[arg-type]
    )]


def _count(doc: dict[str, Any], key: str, where: str) -> int | None:
    value = number(doc, key, f"{where}: world_info", required=False)
    if value is None:
        return None
    if value < 1 or value != int(value):
        raise MeasurementError(f"{where}: world_info.{key} is {value:g}, not a GPU count")
    return int(value)
