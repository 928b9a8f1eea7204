"""A measured run, as the workbench keeps it: where it came from, what ran, what was measured.

Every metric is stored in one canonical unit (seconds, tokens/s, requests/s) whatever the tool
wrote (ms, ns, tokens/sec); the readers convert. ``METRICS`` names each metric, its unit and the
estimate key it is compared with (a simulated percentile where the estimate simulated the load).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

SourceFormat = Literal[
    "vllm-bench-serve", "sglang-bench-serving", "genai-perf", "aiperf", "trtllm-bench", "mlperf-inference",
    "megatron-lm", "torchtitan", "csv",
]


@dataclass(frozen=True, slots=True)
class Metric:
    id: str
    title: str
    unit: str
    #: estimate keys to compare with, first non-null wins (a simulated figure before the closed form)
    keys: tuple[str, ...]
    workload: str  # "serving" or "training"


METRICS: dict[str, Metric] = {m.id: m for m in (
    Metric("ttft_mean_s", "TTFT mean", "s", ("performance.sim.ttft_mean_s", "performance.ttft_s"), "serving"),
    Metric("ttft_p50_s", "TTFT p50", "s", ("performance.sim.ttft_p50_s",), "serving"),
    Metric("ttft_p99_s", "TTFT p99", "s", ("performance.sim.ttft_p99_s",), "serving"),
    Metric("tpot_mean_s", "TPOT mean", "s", ("performance.sim.tpot_mean_s", "performance.tpot_s"), "serving"),
    Metric("tpot_p50_s", "TPOT p50", "s", ("performance.sim.tpot_p50_s",), "serving"),
    Metric("tpot_p99_s", "TPOT p99", "s", ("performance.sim.tpot_p99_s",), "serving"),
    # ITL is TPOT seen per gap (it differs from TPOT only in how requests are weighted)
    Metric("itl_mean_s", "ITL mean", "s", ("performance.sim.tpot_mean_s", "performance.tpot_s"), "serving"),
    Metric("output_tokens_per_s", "Output throughput", "tokens/s",
           ("performance.sim.output_tokens_per_s", "performance.tokens_per_s"), "serving"),
    Metric("requests_per_s", "Request throughput", "requests/s",
           ("performance.sim.requests_per_s", "performance.requests_per_s"), "serving"),
    Metric("train_tokens_per_s", "Training throughput", "tokens/s", ("performance.tokens_per_s",), "training"),
    Metric("train_tokens_per_s_per_gpu", "Training throughput per GPU", "tokens/s",
           ("performance.tokens_per_s_per_gpu",), "training"),
    Metric("step_time_s", "Step time", "s", ("performance.step_time_s",), "training"),
)}


class Measurement(BaseModel):
    """One measured configuration read from a result file (a file may hold several)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = Field(1, description="Format version of this payload.")
    source_format: SourceFormat = Field(description="The tool whose result file this was read from.")
    file_name: str = Field(max_length=4096, description="Name of the result file.")
    record: str = Field("", max_length=200, description="Which record of the file: a CSV line, a run, a log's steps.")
    # --- the scenario the file implies (None: the file does not say) ---
    model: str | None = Field(None, max_length=512, description="model as the file names it")
    gpu: str | None = Field(None, max_length=200, description="catalog accelerator id")
    num_gpus: int | None = Field(None, gt=0, le=1_048_576)
    tp: int | None = Field(None, gt=0, le=1_048_576)
    pp: int | None = Field(None, gt=0, le=1_048_576)
    input_tokens: float | None = Field(None, gt=0, description="mean prompt tokens per request")
    output_tokens: float | None = Field(None, gt=0, description="mean output tokens per request")
    concurrency: float | None = Field(None, gt=0, description="requests in flight (max concurrency)")
    request_rate: float | None = Field(None, gt=0, description="offered requests/s (None: all at once)")
    engine: str | None = Field(None, max_length=100, description="serving engine or trainer")
    workload: Literal["serving", "training"] = Field("serving", description="What the run measured.")
    metrics: dict[str, float] = Field(description="Measured values by metric id, in the units METRICS gives.")

    @field_validator("metrics")
    @classmethod
    def _known_finite_positive(cls, value: dict[str, float]) -> dict[str, float]:
        if not value:
            raise ValueError("no measured metric")
        for key, number in value.items():
            if key not in METRICS:
                raise ValueError(f"unknown metric '{key}'")
            if not math.isfinite(number) or number <= 0:
                raise ValueError(f"{key} must be a positive finite number, got {number!r}")
        return value

    def describe(self) -> str:
        """One line: what ran (as far as the file says)."""
        parts = [self.model or "model ?", f"{self.num_gpus or '?'} x {self.gpu or 'GPU ?'}"]
        if self.tp:
            parts.append(f"TP {self.tp}")
        if self.input_tokens or self.output_tokens:
            parts.append(f"ISL/OSL {_n(self.input_tokens)}/{_n(self.output_tokens)}")
        if self.concurrency:
            parts.append(f"concurrency {_n(self.concurrency)}")
        if self.request_rate:
            parts.append(f"{self.request_rate:g} req/s")
        if self.engine:
            parts.append(self.engine)
        return ", ".join(parts)


def _n(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"
