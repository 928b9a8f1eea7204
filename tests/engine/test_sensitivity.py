"""Tornado analysis: documented ranges, bars against direct estimates, recommendation changes."""

from __future__ import annotations

import pytest
from workbench_performance.efficiency import RANGES

from workbench.api import engine, make_scenario, resolve
from workbench.catalog.resolve import resolve_scenario
from workbench.core.errors import InputError
from workbench.engine import sensitivity as S
from workbench.engine.compare import Candidate, Targets


@pytest.fixture(scope="module")
def eng():  # type: ignore[no-untyped-def]
    return engine()


def test_documented_ranges_are_the_plugins_range_tables(eng) -> None:  # type: ignore[no-untyped-def]
    """Read from each assumption's source text, they equal the performance plugin's RANGES table
    and the cost plugin's stated ranges (docs/validation.md, Assumptions)."""
    for ident, (slow, fast) in RANGES.items():
        assert S.documented_range(eng.assumptions[ident]) == pytest.approx(sorted((slow, fast))), ident
    assert S.documented_range(eng.assumptions["cost.idle_power_fraction"]) == pytest.approx((0.10, 0.30))
    assert S.documented_range(eng.assumptions["cost.host_power_fraction"]) == pytest.approx((0.3, 0.8))
    assert S.documented_range(eng.assumptions["memory.fragmentation"]) is None


def test_factor_ranges_fallback_and_exclusions(eng) -> None:  # type: ignore[no-untyped-def]
    frag = S.assumption_factor(eng.assumptions["memory.fragmentation"], 0.15)
    assert (frag.low, frag.high) == pytest.approx((0.105, 0.195)) and frag.range_source == S.FALLBACK_SOURCE
    assert S.assumption_factor(eng.assumptions["memory.quant_keeps_16bit"], 1.0) is None  # a switch
    assert (
        S.assumption_factor(eng.assumptions["compute.causal_attention_discount"], 0.0) is None
    )  # 0, no range
    # An override keeps the relative width of the documented range.
    matmul = S.assumption_factor(eng.assumptions["perf.kernel_efficiency_scale"], 0.325)
    assert (matmul.low, matmul.high) == pytest.approx((0.325 * 0.65 / 0.76, 0.325 * 0.84 / 0.76))
    # Allowed bounds clamp the swing.
    overlap = S.assumption_factor(eng.assumptions["perf.dp_comm_overlap"], 0.8)
    assert overlap.high == 1.0


def test_tornado_bars_match_direct_estimates(eng) -> None:  # type: ignore[no-untyped-def]
    r = resolve(
        make_scenario(model="llama-3.1-70b", gpu="h100-sxm", num_gpus=4, parallel={"tp": 4}, batch_size=32)
    )
    sens = S.tornado(eng, r)
    base = eng.run(r)
    assert sens.metric == "cost.usd_per_million_tokens" and sens.base == base.get(sens.metric)
    swings = [b.swing for b in sens.bars]
    assert swings == sorted(swings, reverse=True)
    bars = {b.factor.id: b for b in sens.bars}
    # Cost is proportional to the rental price: +-30% of it.
    price = bars["price.rental"]
    assert (price.at_low, price.at_high) == pytest.approx((0.7 * sens.base, 1.3 * sens.base))
    # An assumption bar is the estimate with that assumption at the end of its range.
    bw = bars["perf.bandwidth_efficiency_scale"]
    for at, value in ((bw.factor.low, bw.at_low), (bw.factor.high, bw.at_high)):
        swung = r.scenario.model_copy(update={"assumptions": {"perf.bandwidth_efficiency_scale": at}})
        assert value == eng.run(r.with_scenario(swung)).get(sens.metric)
    assert bw.at_low > sens.base > bw.at_high  # slower memory, dearer tokens
    # Ownership figures do not move the rental $/M tokens.
    assert bars["pricing.utilization"].swing == 0
    for span in sens.spans:
        assert span.low <= span.likely <= span.high


def test_training_tornado_and_metric_choice(eng) -> None:  # type: ignore[no-untyped-def]
    r = resolve(
        make_scenario(
            model="llama-3.1-8b",
            gpu="h100-sxm",
            workload="pretrain",
            num_gpus=8,
            parallel={"dp": 8, "zero_stage": 1},
            train_tokens=1e10,
        )
    )
    sens = S.tornado(eng, r)
    assert sens.metric == "cost.total_usd"
    assert sens.bars[0].swing > 0
    days = S.tornado(eng, r, metric="performance.train_time_days")
    assert days.unit == "days" and days.base == eng.run(r).get("performance.train_time_days")
    with pytest.raises(InputError, match="no result"):
        S.tornado(eng, r, metric="performance.nonsense")
    # No price: the headline falls back to speed.
    unpriced = resolve(make_scenario(model="llama-3.1-8b", gpu="h200-nvl"))  # no public rental price
    assert S.tornado(eng, unpriced).metric == "performance.tokens_per_s"


def test_recommendation_change_is_reported(eng) -> None:  # type: ignore[no-untyped-def]
    """B200 (1 GPU) is the cheapest under a TPOT ceiling it meets by a hair; slower memory
    kernels push it over, and the H100 takes the recommendation."""
    scenario = make_scenario(model="llama-3.1-70b", gpu="h100-sxm", batch_size=16)
    candidates = [Candidate("b200"), Candidate("h100-sxm")]
    tpot = eng.run(resolve(scenario.model_copy(update={"gpu": "b200"}))).get("performance.tpot_s")
    comparison, sens = S.comparison_tornado(
        eng, [scenario], candidates, resolve_scenario, Targets(max_tpot_s=tpot * 1.02)
    )
    assert comparison.recommendation == Candidate("b200") and sens.recommendation == "b200"
    bars = {b.factor.id: b for b in sens.bars}
    bw = bars["perf.bandwidth_efficiency_scale"]
    assert (
        bw.recommendation_changes
        and bw.recommendation_at_low == "h100-sxm"
        and bw.recommendation_at_high == "b200"
    )
    assert not bars["price.rental"].recommendation_changes  # every price scales alike
    assert sens.base == comparison.scenarios[0].recommendation.cost
    doc = sens.as_dict()
    assert doc["bars"][0]["swing"] >= doc["bars"][-1]["swing"]


@pytest.mark.parametrize(
    "fields",
    [
        {"model": "llama-3.1-8b", "gpu": "h100-sxm", "batch_size": 16},
        {"model": "mixtral-8x7b", "gpu": "h100-sxm", "num_gpus": 2, "parallel": {"tp": 2}, "dtype": "fp8"},
        {"model": "llama-3.1-70b", "gpu": "mi300x", "num_gpus": 4, "parallel": {"tp": 2, "pp": 2},
         "serving": {"chunked_prefill": True}, "assumptions": {"perf.kernel_efficiency_scale": 0.6}},
        {"model": "llama-3.1-8b", "gpu": "h100-sxm", "workload": "pretrain", "num_gpus": 8, "parallel": {"dp": 8}},
    ],
)
def test_swings_run_as_one_group_give_the_numbers_of_one_estimate_per_end(eng, fields) -> None:  # type: ignore[no-untyped-def]
    """The assumption swings the serving speed model takes as arrays run as one point group; each
    bar still reads exactly what an estimate with that one factor at that end gives."""
    resolved = resolve(make_scenario(**fields))
    calls: list[int] = []
    run = eng.run

    def counting_run(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return run(*args, **kwargs)

    eng.run = counting_run
    try:
        sens = S.tornado(eng, resolved)
    finally:
        del eng.run
    assumption_bars = [b for b in sens.bars if b.factor.kind == "assumption"]
    assert assumption_bars
    for bar in sens.bars:
        f = bar.factor
        direct = [S._number(eng.run(f.apply_resolved(resolved, v)).get(sens.metric)) for v in (f.low, f.high)]
        assert [bar.at_low, bar.at_high] == direct, f.id
    batched = [b for b in assumption_bars if eng.takes_assumption_arrays(resolved.scenario, (b.factor.id,), (sens.metric,))]
    # one run for the base, two per factor not in the group
    assert len(calls) == 1 + 2 * (len(sens.bars) - len(batched))
    if resolved.scenario.is_training:
        # the training speed model reads its assumptions point by point (for now); the cost
        # model's power fractions run as arrays whatever the workload, and an assumption no
        # estimator of the metric's run reads (the cluster plugin's) needs no run at all
        assert all(b.factor.id.startswith("cost.") or not eng.reads_any((b.factor.id,), (sens.metric,))
                   for b in batched)  # fmt: skip
        assert not any(b.factor.id.startswith("perf.") for b in batched)
    else:
        assert len(batched) >= 4


def test_comparison_swings_from_one_group_equal_one_comparison_per_end(eng) -> None:  # type: ignore[no-untyped-def]
    """comparison_tornado runs the assumption swings together (compare_draws); each bar's metric
    and the recommendation at each end are what a comparison of the swung scenarios gives."""
    from workbench.engine.compare import compare

    scenarios = [make_scenario(name="chat", model="llama-3.1-8b", gpu="h100-sxm", batch_size=32),
                 make_scenario(name="rag", model="llama-3.1-8b", gpu="h100-sxm", batch_size=8, seq_len=8192)]
    candidates = [Candidate("h100-sxm"), Candidate("a100-80gb-sxm"), Candidate("l40s"), Candidate("mi300x")]
    targets = Targets(max_tpot_s=0.04)
    base, sens = S.comparison_tornado(eng, scenarios, candidates, resolve_scenario, targets)
    lead = base.scenarios[0].recommendation or base.scenarios[0].results[0]
    swung_by_group = [b for b in sens.bars if b.factor.kind == "assumption"]
    assert len(swung_by_group) >= 4
    for bar in swung_by_group:
        f = bar.factor
        for at, value, pick in ((f.low, bar.at_low, bar.recommendation_at_low),
                                (f.high, bar.at_high, bar.recommendation_at_high)):
            swung = compare(eng, [f.apply(s, at) for s in scenarios], candidates, resolve_scenario, targets)
            row = next(r for r in swung.scenarios[0].results if r.candidate == lead.candidate)
            assert value == S._number(row.values.get(lead.cost_metric)), f.id
            assert pick == (None if swung.recommendation is None else swung.recommendation.label), f.id
