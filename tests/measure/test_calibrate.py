"""Calibration: a fit on part of a published table improves the rows it did not see, never leaves
an assumption's documented range, and does not chase noise.

The published set is the fit part of docs/validation.md: TensorRT-LLM perf-overview
(NVIDIA/TensorRT-LLM@00f37686:docs/source/performance/perf-overview.md), Llama 3.1 8B FP8 on
1x H100, rows R1-R6 -- the cases tests/validation/test_published_performance.py builds (FP8
weights, activations and KV cache, in-flight batching as chunked prefill, batch = KV-cache
capacity capped at 4096). tests/data/published_speed/README.md records that this source feeds
the fitted cases; no held-out record is used here.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import numpy as np

from workbench.catalog.resolve import resolve_scenario
from workbench.core.scenario import Scenario
from workbench.engine.pipeline import Engine
from workbench.engine.sensitivity import documented_range
from workbench.measure.calibrate import Case, calibrate
from workbench.measure.predict import comparable, predict_points
from workbench.pluginhost import default_engine

# (ISL, OSL, total output tokens/s) -- perf-overview.md (00f37686), Llama 3.1 8B FP8, 1x H100
TRTLLM_8B_H100 = [(128, 128, 28312), (128, 2048, 22714), (1000, 1000, 15220),
                  (2048, 128, 3450), (2048, 2048, 9305), (5000, 500, 3459)]


@lru_cache(maxsize=1)
def _engine() -> Engine:
    return default_engine()


def _published_case(ident: str, isl: int, osl: int, measured: float) -> Case:
    fields = dict(model="llama-3.1-8b", gpu="h100-sxm", num_gpus=1, seq_len=isl, gen_len=osl, dtype="fp8",
                  weights="fp8", kv_dtype="fp8", serving={"chunked_prefill": True})
    capacity = _engine().run(resolve_scenario(Scenario(batch_size=1, **fields))).get("kv_cache.max_concurrency")
    resolved = resolve_scenario(Scenario(batch_size=int(min(capacity, 4096)), **fields))
    metrics = {"output_tokens_per_s": float(measured)}
    return Case(ident, resolved, metrics, comparable(metrics, resolved))


def test_the_rows_come_from_a_fit_source() -> None:
    """The split is recorded per source in tests/data/published_speed: this one must be on the fit side."""
    import yaml

    data = yaml.safe_load((Path(__file__).parents[1] / "data" / "published_speed" / "measurements.yaml").read_text())
    [source] = [s for s in data["sources"] if s["id"] == "trtllm-perf-overview-v1.0"]
    assert source["split"] == "fit" and "00f37686" in source["cite"]


@lru_cache(maxsize=1)
def published() -> list[Case]:
    return [_published_case(f"R{i}", *row) for i, row in enumerate(TRTLLM_8B_H100, start=1)]


def _error(case: Case, values: dict[str, float]) -> float:
    predicted = predict_points(_engine(), case.resolved, case.keys, {k: [v] for k, v in values.items()})[0]
    return abs(predicted["output_tokens_per_s"] / case.measured["output_tokens_per_s"] - 1.0)


def _within_documented_range(fit_parameters: list) -> None:  # type: ignore[type-arg]
    definitions = _engine().assumptions
    for p in fit_parameters:
        lo, hi = documented_range(definitions[p.id])  # type: ignore[misc]
        assert lo <= p.low <= p.value <= p.high <= hi, p


def test_a_fit_on_half_the_table_improves_the_other_half() -> None:
    cases = published()
    fitted_on, held = cases[0::2], cases[1::2]  # R1, R3, R5 / R2, R4, R6
    fit = calibrate(_engine(), fitted_on)
    assert fit.overrides, "the fit part is under-predicted by 3-10%: something must move"
    _within_documented_range(fit.parameters)
    for case in held:
        assert _error(case, fit.overrides) < _error(case, {}) - 0.005, case.ident
    assert fit.median_abs("after") < fit.median_abs("before")  # type: ignore[operator]
    # leave-one-out predictions exist for every fitted row and are reported next to the fit
    assert all(r.left_out is not None for r in fit.residuals)


def test_an_assumption_never_leaves_its_range() -> None:
    # measurements far beyond what any assumption value can explain: the fit stops at the bounds
    fast = [Case(c.ident, c.resolved, {"output_tokens_per_s": c.measured["output_tokens_per_s"] * 3}, c.keys)
            for c in published()[:3]]
    slow = [Case(c.ident, c.resolved, {"output_tokens_per_s": c.measured["output_tokens_per_s"] / 3}, c.keys)
            for c in published()[:3]]
    for cases in (fast, slow):
        fit = calibrate(_engine(), cases, leave_one_out=False)
        _within_documented_range(fit.parameters)
        assert any(math.isclose(p.value, p.high if cases is fast else p.low) for p in fit.parameters)


def test_jitter_around_the_models_own_predictions_moves_nothing() -> None:
    rng = np.random.default_rng(20261125)
    cases = []
    for i, (isl, osl, batch) in enumerate([(128, 128, 8), (1000, 1000, 32), (2048, 256, 64), (512, 2048, 16),
                                           (4096, 512, 4), (256, 1024, 128), (1500, 300, 48), (800, 800, 1)]):
        resolved = resolve_scenario(Scenario(model="llama-3.1-8b", gpu="h100-sxm", seq_len=isl, gen_len=osl,
                                             batch_size=batch, serving={"engine": "vllm"}))
        keys = comparable({"output_tokens_per_s": 1.0, "ttft_mean_s": 1.0, "tpot_mean_s": 1.0}, resolved)
        own = predict_points(_engine(), resolved, keys, {})[0]
        noisy = {m: float(v) * math.exp(rng.normal(0.0, 0.03)) for m, v in own.items() if v}
        cases.append(Case(f"J{i}", resolved, noisy, keys))
    fit = calibrate(_engine(), cases, leave_one_out=False)
    for p in fit.parameters:
        assert abs(p.value / p.default - 1.0) <= 0.005, p  # 3% noise on 24 figures moves nothing
