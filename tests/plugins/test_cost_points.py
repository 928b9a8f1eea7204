"""Cost keys over point groups where the performance figures have gaps: no throughput (None), a
throughput of 0, no prompt rate, no optimistic bound, no time to train, at some points of a group
and not at others.

The performance figures come from stubs keyed on the batch size, so each point's expected value is
the cost plugin's own arithmetic on known numbers. Every point of a group must equal the single
estimate of that point (value and type, unit, label, formula, assumptions, note, warnings), and the
gaps must give what the cost plugin gives for them: None with the reason, or a value computed from
the figures that are there.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from engine_fixtures import GPU, LLAMA_8B, NODE
from workbench_cost import CostEstimator
from workbench_cost.estimator import NEEDS
from workbench_cost.keys import COST

from workbench.core import Cluster, Scenario
from workbench.core.resolved import ResolvedScenario
from workbench.engine.estimator import EstimatorInfo
from workbench.engine.pipeline import Engine
from workbench.engine.points import PointOutputs, PointsContext, col
from workbench.engine.points_estimate import PointsEstimate
from workbench.engine.quantity import Outputs, q

PRICED = GPU.model_copy(update={"cloud_usd_per_hour": 2.0, "list_price_usd": 25000.0})
BASE: dict[str, Any] = {
    "performance.tokens_per_s": 1000.0,
    "performance.tokens_per_s_low": 800.0,
    "performance.tokens_per_s_high": 1250.0,
    "performance.input_tokens_per_s": 4000.0,
    "performance.prefill_time_fraction": 0.25,
    "performance.train_time_s": 86400.0 * 10,
    "performance.train_time_days_low": 8.0,
    "performance.train_time_days_high": 13.0,
    "performance.gpu_utilization": 0.8,
    "performance.gpus": 4,
}
#: What the performance plugin leaves out at each batch size (batch 6: nothing).
GAPS: dict[int, dict[str, Any]] = {
    1: {"performance.tokens_per_s": None, "performance.tokens_per_s_low": None, "performance.tokens_per_s_high": None},
    2: {"performance.tokens_per_s": 0.0},
    3: {"performance.input_tokens_per_s": None, "performance.prefill_time_fraction": None},
    4: {"performance.train_time_s": None, "performance.train_time_days_low": None,
        "performance.train_time_days_high": None},
    5: {"performance.tokens_per_s_high": None, "performance.gpu_utilization": None, "performance.gpus": None},
    6: {},
}  # fmt: skip
BATCHES = [1, 2, 3, 4, 5, 6] * 2
GENS = [64] * 6 + [0] * 6


def figures(batch: int) -> dict[str, Any]:
    return BASE | GAPS[batch]


class ScalarStub:
    """The performance plugin as it is today: one point at a time."""

    info = EstimatorInfo(id="perf-stub", title="stub", version="1", produces=NEEDS)

    def estimate(self, ctx):  # type: ignore[no-untyped-def]
        return Outputs({k: q(v, "", k) for k, v in figures(ctx.scenario.batch_size).items()})


class ArrayStub:
    """The same figures from an array estimator, in every form a column takes: a float64 array, an
    object array of floats and None, an int64 array, one shared value (None or a number)."""

    info = EstimatorInfo(id="perf-stub", title="stub", version="1", produces=NEEDS)

    def estimate_points(self, ctx: PointsContext) -> PointOutputs:
        batches = ctx.points["batch_size"].tolist()
        out = {}
        for key in NEEDS:
            values = [figures(b)[key] for b in batches]
            if len(set(map(repr, values))) == 1:
                out[key] = col(values[0], "", key)
            elif None in values:
                out[key] = col(np.array(values, dtype=object), "", key)
            elif all(type(v) is int for v in values):
                out[key] = col(np.array(values, dtype=np.int64), "", key)
            else:
                out[key] = col(np.array(values, dtype=np.float64), "", key)
        return PointOutputs(out)


def resolved(gpu=PRICED, **fields: Any) -> ResolvedScenario:  # type: ignore[no-untyped-def]
    fields.setdefault("num_gpus", 4)
    scenario = Scenario(model="llama-3.1-8b", gpu=gpu.id, parallel={"dp": fields["num_gpus"]}, **fields)
    return ResolvedScenario(scenario, LLAMA_8B, Cluster(accelerator=gpu, node=NODE, num_gpus=scenario.num_gpus))


def at(base: ResolvedScenario, i: int) -> ResolvedScenario:
    update = {"batch_size": BATCHES[i], "gen_len": GENS[i]}
    return ResolvedScenario(base.scenario.model_copy(update=update), base.model, base.cluster)


def described(est: Any) -> dict[str, Any]:
    return {
        "values": {
            k: (type(x.value), x.value, x.unit, x.label, x.formula, tuple(x.assumptions), x.note)
            for k, x in est.values.items()
        },
        "warnings": [(w.code, w.message, w.severity, w.fix) for w in est.warnings],
        "failures": [(f.estimator, f.message) for f in est.failures],
    }


def group_and_singles(base: ResolvedScenario, stub: Any, wanted: tuple[str, ...] | None = None) -> tuple[Any, list[Any]]:
    group = Engine([stub, CostEstimator()]).run_points(base, {"batch_size": BATCHES, "gen_len": GENS}, wanted)
    singles = [Engine([ScalarStub(), CostEstimator()]).run(at(base, i), wanted) for i in range(len(BATCHES))]
    return group, singles


VARIANTS = {
    "serving": {},
    "serving, no prices": {"gpu": GPU},
    "serving, no power figure": {"gpu": PRICED.model_copy(update={"tdp_watts": None})},
    "training": {"workload": "pretrain", "train_tokens": 1e12, "pricing": {"grid_kg_co2_per_kwh": 0.3}},
    "training, cheap rental": {"workload": "pretrain", "train_tokens": 1e12,
                               "pricing": {"cloud_usd_per_gpu_hour": 0.05, "purchase_usd_per_gpu": 90000}},
    "training, no run length": {"workload": "pretrain"},
    "serving, renting barely dearer": {"pricing": {"cloud_usd_per_gpu_hour": 0.1, "years": 10}},
    "serving, buying pays back late": {"pricing": {"cloud_usd_per_gpu_hour": 0.7, "years": 10}},
    "training, no purchase price": {"workload": "pretrain", "train_tokens": 1e12,
                                    "gpu": GPU.model_copy(update={"cloud_usd_per_hour": 2.0})},
}  # fmt: skip


@pytest.mark.parametrize("stub", [ScalarStub, ArrayStub], ids=["scalar performance", "array performance"])
@pytest.mark.parametrize("variant", VARIANTS, ids=list(VARIANTS))
def test_every_point_equals_its_single_estimate(variant: str, stub: type) -> None:
    base = resolved(**VARIANTS[variant])
    group, singles = group_and_singles(base, stub())
    assert isinstance(group, PointsEstimate) and not group.failures  # one array run, not split
    for i, alone in enumerate(singles):
        assert not alone.failures, alone.failures
        got, want = described(group.estimate(i)), described(alone)
        assert set(got["values"]) == set(COST) | set(NEEDS)
        for key in COST:
            assert got["values"][key] == want["values"][key], f"{variant}, point {i}: {key}"
        assert got["warnings"] == want["warnings"], f"{variant}, point {i}"


@pytest.mark.parametrize("stub", [ScalarStub, ArrayStub], ids=["scalar performance", "array performance"])
def test_each_key_alone_over_the_group(stub: type) -> None:
    """A run for one key (a sweep's column) reads only what that key needs, gaps included."""
    for variant in ("serving", "training"):
        base = resolved(**VARIANTS[variant])
        for key in COST:
            group, singles = group_and_singles(base, stub(), (key,))
            for i, alone in enumerate(singles):
                got = group.estimate(i).values[key]
                want = alone.values[key]
                assert type(got.value) is type(want.value) and got.value == want.value, f"{variant} {key} point {i}"
                assert (got.formula, got.label, got.note) == (want.formula, want.label, want.note), key


def test_no_throughput_leaves_per_token_keys_empty_with_the_reason() -> None:
    group, _ = group_and_singles(resolved(), ScalarStub())
    hourly = 4 * 2.0
    no_gen_no_rate = BATCHES.index(1, 6)  # batch 1 without generated tokens: nothing to divide by
    for key in ("cost.usd_per_million_tokens", "cost.usd_per_million_tokens_low",
                "cost.energy_kwh_per_million_tokens", "cost.co2_kg_per_million_tokens"):  # fmt: skip
        x = group.estimate(no_gen_no_rate).values[key]
        assert x.value is None and x.note == "no throughput" == x.formula, key
    # With generated tokens the prompt rate still counts: a price per token, but no bound (no
    # output rate to scale) and no split (nothing generated is measured).
    est = group.estimate(BATCHES.index(1))
    assert est.get("cost.usd_per_million_tokens") == hourly / (4000.0 * 3600.0) * 1e6
    low = est.values["cost.usd_per_million_tokens_low"]
    assert low.value is None and low.formula == "at performance.tokens_per_s_high" and low.note == ""
    for key in ("cost.usd_per_million_input_tokens", "cost.usd_per_million_output_tokens"):
        assert est.values[key].value is None and est.values[key].note == "the model generates no tokens"
    # A throughput of 0 is no throughput either; a missing prompt rate leaves output tokens only.
    zero = group.estimate(BATCHES.index(2, 6))
    assert zero.get("cost.usd_per_million_tokens") is None
    assert zero.values["cost.usd_per_million_tokens"].note == "no throughput"
    no_prompt = group.estimate(BATCHES.index(3))
    assert no_prompt.get("cost.usd_per_million_tokens") == hourly / (1000.0 * 3600.0) * 1e6
    assert no_prompt.get("cost.usd_per_million_input_tokens") is None
    # The other points of the same group keep their numbers, as floats.
    full = group.estimate(BATCHES.index(6))
    assert full.get("cost.usd_per_million_tokens") == hourly / (5000.0 * 3600.0) * 1e6
    assert type(full.get("cost.usd_per_million_output_tokens")) is float
    assert full.values["cost.usd_per_million_tokens"].label == "Cost per million input + output tokens"
    assert group.estimate(BATCHES.index(6, 6)).values["cost.usd_per_million_tokens"].label == (
        "Cost per million input tokens"
    )


def test_missing_gpus_and_utilization_fall_back_to_the_scenario_and_idle_power() -> None:
    group, _ = group_and_singles(resolved(), ScalarStub())
    est = group.estimate(BATCHES.index(5))
    assert est.get("cost.usd_per_hour") == 4 * 2.0  # scenario GPUs
    assert est.get("cost.power_kw") == 4 * (700 * (0.15 + 0.85 * 0.0) * 1.5 * 1.3) / 1000.0
    assert est.values["cost.usd_per_million_tokens_low"].value is None  # no optimistic rate
    assert type(est.get("cost.usd_per_million_tokens_high")) is float


def test_no_time_to_train_at_some_points() -> None:
    group, _ = group_and_singles(resolved(**VARIANTS["training"]), ScalarStub())
    untimed = group.estimate(BATCHES.index(4))
    for key in ("cost.total_usd", "cost.total_usd_low", "cost.gpu_hours", "cost.energy_kwh", "cost.co2_kg",
                "cost.run_owned_usd"):  # fmt: skip
        x = untimed.values[key]
        assert x.value is None and x.note == "set --train-tokens to cost a run", key
    timed = group.estimate(BATCHES.index(6))
    assert timed.get("cost.gpu_hours") == 4 * (864000.0 / 3600.0)
    assert timed.get("cost.total_usd_high") == 4 * 2.0 * (13.0 * 24.0)
    owned = timed.get("cost.tco.owned_usd_per_gpu_hour") * 4 * 864000.0 / 3600.0
    assert timed.get("cost.run_owned_usd") == owned
    assert untimed.get("cost.tco.buy_usd") == timed.get("cost.tco.buy_usd")  # buy-vs-rent needs no run


def test_break_even_and_its_warning_per_point() -> None:
    """Buy-vs-rent varies with the utilization: idle GPUs (no utilization at batch 5) cost less
    power to own, so buying pays back there and nowhere else, or sooner there than elsewhere."""
    group, _ = group_and_singles(resolved(**VARIANTS["serving, renting barely dearer"]), ScalarStub())
    idle, busy = group.estimate(BATCHES.index(5)), group.estimate(BATCHES.index(6))
    assert busy.get("cost.tco.break_even_months") is None
    assert busy.values["cost.tco.break_even_months"].formula.endswith("never")
    assert type(idle.get("cost.tco.break_even_months")) is float
    assert [w.code for w in idle.warnings] == ["buy-does-not-pay-back"] and busy.warnings == []
    group, _ = group_and_singles(resolved(**VARIANTS["serving, buying pays back late"]), ScalarStub())
    idle, busy = group.estimate(BATCHES.index(5)), group.estimate(BATCHES.index(6))
    assert idle.get("cost.tco.break_even_months") < 120 < busy.get("cost.tco.break_even_months")
    assert idle.warnings == [] and [w.code for w in busy.warnings] == ["buy-does-not-pay-back"]
    assert {idle.get("cost.tco.cheaper"), busy.get("cost.tco.cheaper")} <= {"buy", "rent"}
