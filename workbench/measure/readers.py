"""Which tool wrote a result file, and its measurements (all of them, or an error and none)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from workbench.core.errors import describe_validation_error
from workbench.measure import serving_json, text_logs
from workbench.measure.csv_table import read_csv
from workbench.measure.errors import MeasurementError
from workbench.measure.model import Measurement
from workbench.measure.source import display_name, read_text

FORMATS_TEXT = ("vllm bench serve JSON, SGLang bench_serving JSONL, genai-perf/AIPerf profile export JSON, "
                "trtllm-bench report JSON, MLPerf mlperf_log_summary.txt, Megatron-LM or torchtitan log, CSV")


def read_measurements(path: str | Path) -> list[Measurement]:
    """Every measurement a result file holds; :class:`MeasurementError` (one line) if any is bad."""
    text = read_text(path)
    where = display_name(path)
    if not text.strip():
        raise MeasurementError(f"{where}: empty file")
    try:
        found = _dispatch(text, where, str(path))
    except ValidationError as exc:
        raise MeasurementError(describe_validation_error(exc, where)) from None
    except RecursionError:
        raise MeasurementError(f"{where}: nested too deeply to read") from None
    return [m.model_copy(update={"file_name": where}) for m in found]


def _dispatch(text: str, where: str, path: str) -> list[Measurement]:
    stripped = text.lstrip()
    if stripped.startswith("{") or (stripped.startswith("[") and _is_json(stripped)):
        return _json(stripped, where)
    if text_logs.is_mlperf_summary(text):
        return text_logs.read_mlperf_summary(text, where, path)
    if text_logs.is_megatron_log(text):
        return text_logs.read_megatron(text, where)
    if text_logs.is_torchtitan_log(text):
        return text_logs.read_torchtitan(text, where)
    first = stripped.splitlines()[0] if stripped else ""
    if path.lower().endswith(".csv") or ("," in first and not first.startswith("#")):
        return read_csv(text, where)
    raise MeasurementError(f"{where}: not a result file this workbench reads ({FORMATS_TEXT})")


def _json(text: str, where: str) -> list[Measurement]:
    try:
        doc = json.loads(text)
        docs = [doc] if isinstance(doc, dict) else None
    except json.JSONDecodeError:
        docs = _json_lines(text, where)
    except ValueError:
        raise MeasurementError(f"{where}: a number is too large to read") from None
    if not docs:
        raise MeasurementError(f"{where}: JSON, but not an object of benchmark results")
    first = docs[0]
    if len(docs) > 1 or _is_sglang(first):
        if not all(_is_sglang(d) for d in docs):
            raise MeasurementError(f"{where}: JSON Lines, but not SGLang bench_serving results on every line")
        return serving_json.read_sglang(docs, where)
    if isinstance(first.get("performance"), dict) and isinstance(first.get("request_info"), dict):
        return serving_json.read_trtllm_bench(first, where)
    if isinstance(first.get("request_throughput"), dict) or isinstance(first.get("output_token_throughput"), dict):
        aiperf = "error_summary" in first or "was_cancelled" in first or "start_time" in first
        return serving_json.read_profile_export(first, where, "aiperf" if aiperf else "genai-perf")
    if "output_throughput" in first or "mean_ttft_ms" in first or "model_id" in first:
        return serving_json.read_vllm(first, where)
    raise MeasurementError(f"{where}: JSON, but no benchmark result fields this workbench knows ({FORMATS_TEXT})")


def _is_json(text: str) -> bool:
    """A log line may start with "[" too ("[rank0]: ..."): only a whole JSON document is JSON."""
    try:
        json.loads(text)
    except (json.JSONDecodeError, ValueError, RecursionError):
        return False
    return True


def _json_lines(text: str, where: str) -> list[dict[str, Any]]:
    docs = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            raise MeasurementError(f"{where} line {number}: not valid JSON ({exc.msg})") from None
        if not isinstance(doc, dict):
            raise MeasurementError(f"{where} line {number}: not a JSON object")
        docs.append(doc)
    return docs


def _is_sglang(doc: dict[str, Any]) -> bool:
    return "random_input_len" in doc or "total_output_tokens_retokenized" in doc or "dataset_name" in doc
