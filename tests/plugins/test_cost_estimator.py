"""Cost plugin: prices (scenario over catalog), $/hour and $/million tokens split into input and output,
the cost, GPU-hours, energy and CO2 of a training run, and what happens when a price is unknown.

The performance figures come from a stub, so these tests pin the arithmetic of the cost plugin alone.
"""

from __future__ import annotations

import pytest
from engine_fixtures import GPU, LLAMA_8B, NODE
from workbench_cost import CostEstimator
from workbench_cost.estimator import NEEDS
from workbench_cost.keys import COST

from workbench.core import Cluster, Scenario
from workbench.core.resolved import ResolvedScenario
from workbench.engine.estimator import EstimatorInfo
from workbench.engine.pipeline import Engine
from workbench.engine.quantity import Outputs, q

PRICED = GPU.model_copy(update={"cloud_usd_per_hour": 2.0, "list_price_usd": 25000.0})


class PerformanceStub:
    info = EstimatorInfo(id="perf-stub", title="stub", version="1", produces=NEEDS)

    def __init__(self, **values: float | None) -> None:
        self.values = {
            "performance.tokens_per_s": 1000.0,
            "performance.tokens_per_s_low": 800.0,
            "performance.tokens_per_s_high": 1250.0,
            "performance.input_tokens_per_s": 4000.0,
            "performance.prefill_time_fraction": 0.25,
            "performance.train_time_s": None,
            "performance.train_time_days_low": None,
            "performance.train_time_days_high": None,
            "performance.gpu_utilization": 0.8,
            "performance.gpus": 4,
        } | values

    def estimate(self, ctx):  # type: ignore[no-untyped-def]
        return Outputs({k: q(v, "", k) for k, v in self.values.items()})


def estimate(gpu=PRICED, stub: PerformanceStub | None = None, **fields):  # type: ignore[no-untyped-def]
    fields.setdefault("num_gpus", 4)
    scenario = Scenario(model="llama-3.1-8b", gpu=gpu.id, parallel={"dp": fields["num_gpus"]}, **fields)
    resolved = ResolvedScenario(
        scenario, LLAMA_8B, Cluster(accelerator=gpu, node=NODE, num_gpus=scenario.num_gpus)
    )
    est = Engine([stub or PerformanceStub(), CostEstimator()]).run(resolved)
    assert not est.failures, est.failures
    return est


def test_hourly_cost_uses_the_catalog_price_unless_the_scenario_gives_one() -> None:
    assert estimate().get("cost.usd_per_hour") == pytest.approx(4 * 2.0)
    est = estimate(pricing={"cloud_usd_per_gpu_hour": 3.5})
    assert est.get("cost.usd_per_gpu_hour") == 3.5
    assert est.get("cost.usd_per_hour") == pytest.approx(14.0)
    assert "scenario pricing" in est.values["cost.usd_per_gpu_hour"].formula


def test_input_and_output_token_prices_add_up_to_the_hourly_cost() -> None:
    est = estimate()
    hourly = 8.0
    per_in, per_out = (
        est.get("cost.usd_per_million_input_tokens"),
        est.get("cost.usd_per_million_output_tokens"),
    )
    assert per_in == pytest.approx(hourly * 0.25 / (4000 * 3600) * 1e6)
    assert per_out == pytest.approx(hourly * 0.75 / (1000 * 3600) * 1e6)
    spent = (per_in * 4000 + per_out * 1000) * 3600 / 1e6
    assert spent == pytest.approx(hourly)
    assert est.get("cost.usd_per_million_tokens") == pytest.approx(hourly / (5000 * 3600) * 1e6)
    assert (
        est.get("cost.usd_per_million_tokens_low")
        < est.get("cost.usd_per_million_tokens")
        < est.get("cost.usd_per_million_tokens_high")
    )


def test_power_from_utilization_host_share_and_pue() -> None:
    est = estimate(pricing={"pue": 1.2})
    gpu_w = 700 * (0.15 + 0.85 * 0.8)
    assert est.get("cost.power_kw") == pytest.approx(4 * gpu_w * 1.5 * 1.2 / 1000)
    bare = estimate(pricing={"pue": 1.0}, assumptions={"cost.host_power_fraction": 0.0})
    assert bare.get("cost.power_kw") == pytest.approx(4 * gpu_w / 1000)


def test_training_run_cost_gpu_hours_energy_and_co2() -> None:
    stub = PerformanceStub(
        **{
            "performance.train_time_s": 86400.0 * 10,
            "performance.train_time_days_low": 8.0,
            "performance.train_time_days_high": 13.0,
            "performance.prefill_time_fraction": None,
            "performance.input_tokens_per_s": None,
        }
    )
    est = estimate(stub=stub, workload="pretrain", train_tokens=1e12, pricing={"grid_kg_co2_per_kwh": 0.3})
    assert est.get("cost.gpu_hours") == pytest.approx(4 * 240)
    assert est.get("cost.total_usd") == pytest.approx(4 * 240 * 2.0)
    assert est.get("cost.total_usd_low") == pytest.approx(4 * 8 * 24 * 2.0)
    assert est.get("cost.total_usd_high") == pytest.approx(4 * 13 * 24 * 2.0)
    kwh = est.get("cost.power_kw") * 240
    assert est.get("cost.energy_kwh") == pytest.approx(kwh)
    assert est.get("cost.co2_kg") == pytest.approx(kwh * 0.3)
    assert est.get("cost.usd_per_million_tokens") == pytest.approx(8.0 / (1000 * 3600) * 1e6)
    assert est.get("cost.usd_per_million_input_tokens") is None
    owned = est.get("cost.tco.owned_usd_per_gpu_hour") * 4 * 240
    assert est.get("cost.run_owned_usd") == pytest.approx(owned)


def test_unknown_rental_price_leaves_costs_null_and_says_which_flag() -> None:
    est = estimate(gpu=GPU)  # the test GPU has no prices
    assert est.get("cost.usd_per_hour") is None
    assert est.get("cost.usd_per_million_tokens") is None
    assert est.get("cost.tco.buy_usd") is None
    fixes = {w.code: w.fix for w in est.warnings}
    assert "--usd-per-gpu-hour" in fixes["price-unknown"]
    assert "--purchase-usd" in fixes["purchase-price-unknown"]
    assert est.get("cost.energy_kwh_per_million_tokens") is not None  # power is still known


def test_unknown_power_leaves_energy_null() -> None:
    est = estimate(gpu=PRICED.model_copy(update={"tdp_watts": None}))
    assert est.get("cost.power_kw") is None
    assert est.get("cost.co2_kg_per_million_tokens") is None
    assert "power-unknown" in [w.code for w in est.warnings]
    assert est.get("cost.usd_per_hour") == pytest.approx(8.0)


def test_every_cost_key_is_produced_and_documented() -> None:
    est = estimate()
    for key in COST:
        assert key in est, key
    assert set(CostEstimator.info.produces) == set(COST)
