"""A plain CSV of measurements: one row each, scenario columns plus measured metrics.

Columns (header names, any order; empty cells are "not stated"):

* scenario: ``model``, ``gpu``, ``num_gpus``, ``tp``, ``pp``, ``engine``, ``workload``
  (``serving`` or ``training``), ``input_tokens``, ``output_tokens``, ``concurrency``,
  ``request_rate``;
* metrics, named as :data:`~workbench.measure.model.METRICS` in their canonical unit
  (``ttft_mean_s``, ``output_tokens_per_s``, ``step_time_s``, ...), or a latency in
  milliseconds with ``_ms`` instead of ``_s`` (``ttft_p99_ms``);
* optional checks: ``duration_s`` with ``total_output_tokens`` and/or ``completed`` (the
  throughputs must equal them divided by the duration).

An unknown column is refused (a misspelt metric would otherwise be dropped without a word).
"""

from __future__ import annotations

import csv
import io
import math

from pydantic import ValidationError

from workbench.core.errors import describe_validation_error
from workbench.measure.errors import MeasurementError
from workbench.measure.model import METRICS, Measurement
from workbench.measure.source import check_rate, engine_name

_SCENARIO_INT = ("num_gpus", "tp", "pp")
_SCENARIO_FLOAT = ("input_tokens", "output_tokens", "concurrency", "request_rate")
_SCENARIO_TEXT = ("model", "gpu", "engine", "workload")
_CHECKS = ("duration_s", "total_output_tokens", "completed")
MAX_ROWS = 10_000


def _metric_column(name: str) -> tuple[str, float] | None:
    if name in METRICS:
        return name, 1.0
    if name.endswith("_ms") and f"{name[:-3]}_s" in METRICS and METRICS[f"{name[:-3]}_s"].unit == "s":
        return f"{name[:-3]}_s", 1e-3
    return None


def read_csv(text: str, where: str) -> list[Measurement]:
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in (reader.fieldnames or [])]
    if not header:
        raise MeasurementError(f"{where}: empty CSV (a header row is needed)")
    known = set(_SCENARIO_INT + _SCENARIO_FLOAT + _SCENARIO_TEXT + _CHECKS)
    unknown = [h for h in header if h not in known and _metric_column(h) is None]
    if unknown:
        raise MeasurementError(f"{where}: unknown column '{unknown[0][:40]}' (scenario columns: "
                               f"{', '.join(sorted(known - set(_CHECKS)))}; metrics: {', '.join(METRICS)})")
    if not any(_metric_column(h) for h in header):
        raise MeasurementError(f"{where}: no measured metric column (one of {', '.join(METRICS)})")
    reader.fieldnames = header
    out: list[Measurement] = []
    try:
        for number, row in enumerate(reader, start=2):
            if len(out) >= MAX_ROWS:
                raise MeasurementError(f"{where}: more than {MAX_ROWS:,} rows")
            if None in row:
                raise MeasurementError(f"{where} line {number}: more cells than header columns")
            if not any((v or "").strip() for v in row.values()):
                continue
            out.append(_row(row, f"{where} line {number}", number))
    except csv.Error as exc:
        raise MeasurementError(f"{where}: not a readable CSV ({exc})") from None
    if not out:
        raise MeasurementError(f"{where}: no data rows")
    return out


def _float(row: dict[str, str | None], key: str, where: str) -> float | None:
    raw = (row.get(key) or "").strip()
    if not raw:
        return None
    try:
        value = float(raw.replace(",", "")) if len(raw) <= 40 else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise MeasurementError(f"{where}: {key} is {raw[:40]!r}, not a finite number")
    return value


def _row(row: dict[str, str | None], where: str, line: int) -> Measurement:
    metrics: dict[str, float] = {}
    for key in row:
        column = _metric_column(key)
        value = _float(row, key, where) if column else None
        if column and value is not None:
            metrics[column[0]] = value * column[1]
    if not metrics:
        raise MeasurementError(f"{where}: no measured value in this row")
    data: dict[str, object] = {"source_format": "csv", "file_name": "", "record": f"line {line}", "metrics": metrics}
    for key in _SCENARIO_INT:
        value = _float(row, key, where)
        if value is not None:
            if value != int(value):
                raise MeasurementError(f"{where}: {key} is {value:g}, not a whole number")
            data[key] = int(value)
    for key in _SCENARIO_FLOAT:
        data[key] = _float(row, key, where)
    for key in _SCENARIO_TEXT:
        text = (row.get(key) or "").strip()
        if text:
            data[key] = text
    if "engine" in data:
        data["engine"] = engine_name(data["engine"]) or str(data["engine"]).lower()
    if data.get("workload") == "training" or any(METRICS[m].workload == "training" for m in metrics):
        data.setdefault("workload", "training")
    duration = _float(row, "duration_s", where)
    check_rate(where, "output_tokens_per_s", metrics.get("output_tokens_per_s"),
               _float(row, "total_output_tokens", where), duration)
    check_rate(where, "requests_per_s", metrics.get("requests_per_s"), _float(row, "completed", where), duration)
    try:
        measurement = Measurement.model_validate(data)
    except ValidationError as exc:
        raise MeasurementError(describe_validation_error(exc, where)) from None
    kinds = {METRICS[m].workload for m in measurement.metrics}
    if len(kinds) > 1 or kinds != {measurement.workload}:
        raise MeasurementError(f"{where}: serving and training metrics in one row (workload {measurement.workload})")
    return measurement
