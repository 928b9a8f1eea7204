"""The performance and cost plugins over the real memory and compute plugins and the shipped catalogs:
every estimate runs without failures, honours the output contract, and stays within the time budget
(a whole estimate under 1 ms)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from workbench_cost.keys import COST
from workbench_performance import curve_for
from workbench_performance.keys import COMMUNICATION, PERFORMANCE

from workbench.catalog.resolve import resolve_scenario
from workbench.core import Scenario
from workbench.engine.pipeline import Engine
from workbench.pluginhost.host import PluginHost

HOST = PluginHost(
    first_party=("workbench_memory", "workbench_compute", "workbench_performance", "workbench_cost"),
    entry_point_group=None,
)
ENGINE = Engine(HOST.registry.estimators)

SCENARIOS = {
    "dense-serving": {
        "model": "llama-3.1-8b",
        "gpu": "h100-sxm",
        "batch_size": 16,
        "seq_len": 1024,
        "gen_len": 256,
    },
    "fp8-tp2-chunked": {
        "model": "llama-3.1-70b",
        "gpu": "h100-sxm",
        "num_gpus": 2,
        "parallel": {"tp": 2},
        "batch_size": 32,
        "dtype": "fp8",
        "weights": "fp8",
        "kv_dtype": "fp8",
        "serving": {"chunked_prefill": True},
    },
    "moe-ep": {
        "model": "mixtral-8x7b",
        "gpu": "h100-sxm",
        "num_gpus": 2,
        "parallel": {"tp": 2, "ep": 2},
        "batch_size": 8,
    },
    "moe-spec-disagg": {
        "model": "qwen3-30b-a3b",
        "gpu": "h100-sxm",
        "batch_size": 8,
        "serving": {"speculative_draft_params": 6e8, "disaggregated": True},
    },
    "mla-h200": {
        "model": "deepseek-v3",
        "gpu": "h200-sxm",
        "num_gpus": 8,
        "parallel": {"tp": 8},
        "weights": "fp8",
        "batch_size": 4,
    },
    "sliding-window": {
        "model": "gemma-2-9b",
        "gpu": "l40s",
        "batch_size": 4,
        "seq_len": 8192,
        "gen_len": 512,
    },
    "encoder-decoder": {"model": "t5-small", "gpu": "a10g", "batch_size": 8, "seq_len": 512, "gen_len": 64},
    "vision-encoder": {"model": "vit-base-patch16-224", "gpu": "l4", "batch_size": 64, "gen_len": 0},
    "int4-static": {
        "model": "qwen2.5-7b",
        "gpu": "rtx-4090",
        "weights": "int4",
        "batch_size": 4,
        "serving": {"continuous_batching": False},
    },
    "pretrain-zero3": {
        "model": "llama-3.1-8b",
        "gpu": "h100-sxm",
        "workload": "pretrain",
        "num_gpus": 8,
        "parallel": {"dp": 8, "zero_stage": 3},
        "batch_size": 1,
        "seq_len": 4096,
        "global_batch_size": 64,
        "recompute": "full",
        "train_tokens": 1e12,
    },
    "pretrain-3d": {
        "model": "llama-3.1-70b",
        "gpu": "h100-sxm",
        "workload": "pretrain",
        "num_gpus": 64,
        "parallel": {
            "tp": 8,
            "pp": 4,
            "dp": 2,
            "sequence_parallel": True,
            "pipeline_schedule": "interleaved",
            "virtual_stages": 2,
        },
        "batch_size": 1,
        "seq_len": 8192,
        "global_batch_size": 64,
        "train_tokens": 1e12,
    },
    "qlora": {
        "model": "qwen2.5-7b",
        "gpu": "l40s",
        "workload": "finetune",
        "method": "qlora",
        "batch_size": 4,
        "seq_len": 2048,
        "global_batch_size": 16,
        "train_tokens": 1e8,
    },
}


def run(fields: dict) -> object:  # type: ignore[type-arg]
    return ENGINE.run(resolve_scenario(Scenario(**fields)))


def test_all_first_party_plugins_loaded() -> None:
    assert {s.name: s.status for s in HOST.status_list()} == dict.fromkeys(
        ("workbench_memory", "workbench_compute", "workbench_performance", "workbench_cost"), "loaded"
    )
    assert not ENGINE.rejected


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_runs_and_honours_the_contract(name: str) -> None:
    fields = SCENARIOS[name]
    est = run(fields)
    assert not est.failures, est.failures  # type: ignore[attr-defined]
    for key in (*PERFORMANCE, *COMMUNICATION, *COST):
        assert key in est, key  # type: ignore[operator]
    training = fields.get("workload") in ("pretrain", "finetune")
    headline = (
        ("performance.step_time_s", "performance.mfu")
        if training
        else ("performance.ttft_s", "performance.mfu")
    )
    for key in (*headline, "performance.tokens_per_s", "performance.gpu_utilization"):
        value = est.get(key)  # type: ignore[attr-defined]
        assert isinstance(value, float) and math.isfinite(value) and value > 0, (key, value)
    assert est.get("performance.mfu") < 1  # type: ignore[attr-defined]
    low, mid, high = (est.get(f"performance.tokens_per_s{s}") for s in ("_low", "", "_high"))  # type: ignore[attr-defined]
    assert low <= mid <= high
    if training and fields.get("train_tokens"):
        assert est.get("performance.train_time_days") > 0  # type: ignore[attr-defined]
        assert est.get("cost.energy_kwh") > 0  # type: ignore[attr-defined]


def test_unknown_cloud_price_is_reported_not_invented() -> None:
    unpriced = {**SCENARIOS["mla-h200"], "gpu": "h200-nvl"}  # the catalog has no rental price for the H200 NVL
    est = run(unpriced)
    assert est.get("cost.usd_per_hour") is None  # type: ignore[attr-defined]
    assert "price-unknown" in [w.code for w in est.warnings]  # type: ignore[attr-defined]
    priced = run({**unpriced, "pricing": {"cloud_usd_per_gpu_hour": 3.5}})
    assert priced.get("cost.usd_per_hour") == pytest.approx(8 * 3.5)  # type: ignore[attr-defined]


def test_curve_over_real_plugins() -> None:
    est = run(SCENARIOS["fp8-tp2-chunked"])
    points = curve_for(est, [1, 2, 4, 8, 16, 32, 64, 128, 256])
    assert [p.batch for p in points] == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    rates = [p.tokens_per_s for p in points]
    assert rates == sorted(rates)
    assert points[5].tokens_per_s == pytest.approx(est.get("performance.tokens_per_s"))  # type: ignore[attr-defined]


def test_every_key_is_documented_with_its_unit() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "validation.md").read_text(encoding="utf-8")
    for table in (PERFORMANCE, COMMUNICATION, COST):
        for key, (unit, _applies, _what) in table.items():
            assert f"| `{key}` | {unit} |" in doc, key
    produced = {
        k
        for e in ENGINE.estimators
        if e.info.id in ("performance", "communication", "cost")
        for k in e.info.produces
    }
    assert produced == set(PERFORMANCE) | set(COMMUNICATION) | set(COST)
