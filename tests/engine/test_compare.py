"""Comparisons: sizing, metrics, targets in words, ranking and the recommendation."""

from __future__ import annotations

import pytest

from workbench.api import engine, make_scenario, resolve
from workbench.catalog.resolve import resolve_scenario
from workbench.core.errors import InputError
from workbench.engine import solvers
from workbench.engine.compare import (
    METRICS,
    Candidate,
    Targets,
    compare,
    cost_metric,
    format_metric,
)

CANDIDATES = [
    Candidate("h100-sxm"),
    Candidate("h200-sxm"),
    Candidate("mi300x"),
    Candidate("l40s"),
    Candidate("b200"),
]


@pytest.fixture(scope="module")
def eng():  # type: ignore[no-untyped-def]
    return engine()


@pytest.fixture(scope="module")
def serving():  # type: ignore[no-untyped-def]
    return make_scenario(name="chat", model="llama-3.1-70b", gpu="h100-sxm", batch_size=16)


def test_each_row_is_the_sized_scenarios_full_estimate(eng, serving) -> None:  # type: ignore[no-untyped-def]
    result = compare(eng, [serving], CANDIDATES, resolve_scenario)
    for row in result.rows():
        assert row.fits
        sized = serving.model_copy(
            update={
                "gpu": row.candidate.accelerator,
                "num_gpus": row.gpus,
                "parallel": serving.parallel.model_copy(update={"tp": row.tp, "pp": row.pp, "dp": row.dp}),
            }
        )
        again = eng.run(resolve(sized))
        for metric in METRICS:
            if metric.key is not None:
                assert row.values[metric.id] == again.get(metric.key), (row.candidate.label, metric.id)
        rate, kw = again.get("performance.tokens_per_s"), again.get("cost.power_kw")
        assert row.values["tokens_per_kwh"] == pytest.approx(rate * 3600 / kw)


def test_sizing_keeps_regrows_or_gives_up(eng) -> None:  # type: ignore[no-untyped-def]
    # 70B in bf16 on one GPU: fits on MI300X (192 GB) as given, grows to the fewest on H100.
    scenario = make_scenario(model="llama-3.1-70b", gpu="h100-sxm", batch_size=4)
    rows = {r.candidate.accelerator: r for r in compare(eng, [scenario], CANDIDATES, resolve_scenario).rows()}
    assert rows["mi300x"].sizing == "as given" and rows["mi300x"].gpus == 1
    h100 = solvers.min_gpus(eng, resolve(scenario))
    assert rows["h100-sxm"].gpus == h100.tp * h100.pp * h100.dp
    assert rows["h100-sxm"].sizing.startswith(f"grown to {rows['h100-sxm'].gpus} GPUs, the fewest that fit")
    # Training data-parallel over 8 GPUs without ZeRO does not fit; TP inside the same 8 does.
    train = make_scenario(
        model="llama-3.1-8b",
        gpu="h100-sxm",
        workload="pretrain",
        num_gpus=8,
        parallel={"dp": 8},
        batch_size=4,
        train_tokens=1e10,
    )
    row = compare(eng, [train], [Candidate("h100-sxm")], resolve_scenario).rows()[0]
    assert row.gpus == 8 and row.tp > 1 and row.sizing.startswith("re-laid out")
    # Nothing fits: a 405B model with a huge batch of long prompts on 24 GB cards, up to 8 of them.
    huge = make_scenario(model="llama-3.1-405b", gpu="rtx-4090", batch_size=64, seq_len=131072)
    row = compare(eng, [huge], [Candidate("rtx-4090")], resolve_scenario, max_gpus=8).rows()[0]
    assert not row.fits and row.failures == ("does not fit in memory on up to 8 GPUs",)
    assert row.verdict == "does not fit in memory on up to 8 GPUs"


def test_targets_are_judged_in_words(eng, serving) -> None:  # type: ignore[no-untyped-def]
    targets = Targets(max_tpot_s=0.05, max_ttft_s=0.3, min_tokens_per_s=400)
    rows = {
        r.candidate.accelerator: r
        for r in compare(eng, [serving], CANDIDATES, resolve_scenario, targets).rows()
    }
    l40s = rows["l40s"]
    tpot = l40s.values["tpot_s"]
    assert tpot > 0.05
    assert f"TPOT {tpot * 1000:.3g} ms > target 50 ms" in l40s.failures
    assert any(f.startswith("TTFT ") and f.endswith("> target 300 ms") for f in l40s.failures)
    assert any(f.startswith("throughput ") and f.endswith("< target 400 tokens/s") for f in l40s.failures)
    # The catalog has no rental price for the H200 NVL.
    unpriced = compare(eng, [serving], [Candidate("h200-nvl")], resolve_scenario, targets).rows()[0]
    assert "no price: enter --usd-per-gpu-hour" in unpriced.failures
    assert not unpriced.meets_targets


def test_budget_reason_names_the_gpus_and_the_amount(eng) -> None:  # type: ignore[no-untyped-def]
    scenario = make_scenario(model="llama-3.1-70b", gpu="h100-sxm", batch_size=16, pricing={"years": 3})
    row = compare(
        eng, [scenario], [Candidate("h100-sxm")], resolve_scenario, Targets(budget_usd=100_000)
    ).rows()[0]
    cheaper = min(row.values["tco_buy_usd"], row.values["tco_rent_usd"])
    assert cheaper > 100_000
    text = [f for f in row.failures if "budget" in f]
    assert text == [
        f"needs 4 GPUs: 3-year cost (buy) {format_metric('run_usd', cheaper)}, over the budget $100K"
    ]
    ok = compare(
        eng, [scenario], [Candidate("h100-sxm")], resolve_scenario, Targets(budget_usd=cheaper * 1.01)
    )
    assert ok.rows()[0].meets_targets
    # Capex basis: GPUs x list price x (1 + server overhead).
    capex = compare(
        eng,
        [scenario],
        [Candidate("h100-sxm")],
        resolve_scenario,
        Targets(budget_usd=1000, budget_basis="capex"),
    ).rows()[0]
    assert any("buying costs $180K" in f for f in capex.failures)


def test_ranking_and_recommendation(eng, serving) -> None:  # type: ignore[no-untyped-def]
    targets = Targets(max_tpot_s=0.05)
    result = compare(eng, [serving], CANDIDATES, resolve_scenario, targets)
    rows = result.scenarios[0].results
    assert [r.rank for r in rows] == list(range(1, len(rows) + 1))
    qualified = [r for r in rows if r.meets_targets]
    assert qualified and rows[: len(qualified)] == qualified  # meeting the targets ranks first
    costs = [r.cost for r in qualified]
    assert costs == sorted(costs)
    best = result.scenarios[0].recommendation
    assert best is qualified[0] and best.recommended and result.recommendation == best.candidate
    assert best.verdict.startswith("recommended")
    for r in qualified[1:]:
        assert (
            r.verdict.startswith("meets the targets;")
            and f"the recommended {best.candidate.label}" in r.verdict
        )
        # break-even: at that rental price its cost equals the recommended one's (cost is linear in it)
        price = r.values["usd_per_gpu_hour"]
        if price is not None:
            assert r.break_even_usd_per_gpu_hour == pytest.approx(price * best.cost / r.cost)
            assert r.break_even_usd_per_gpu_hour < price and "would win below $" in r.verdict
            again = compare(eng, [serving], [best.candidate, Candidate(r.candidate.accelerator, r.candidate.node,
                            r.break_even_usd_per_gpu_hour * 0.99)], resolve_scenario, targets)  # fmt: skip
            assert again.scenarios[0].recommendation.candidate.accelerator == r.candidate.accelerator
    assert best.break_even_usd_per_gpu_hour is None
    # The natural cost: $/M tokens for serving, $ of the run for training with a token count.
    assert cost_metric(serving) == "usd_per_m_tokens"
    assert cost_metric(make_scenario(model="m", gpu="g", workload="pretrain", train_tokens=1e9)) == "run_usd"


def test_no_recommendation_says_why(eng, serving) -> None:  # type: ignore[no-untyped-def]
    result = compare(eng, [serving], CANDIDATES, resolve_scenario, Targets(max_tpot_s=0.001))
    assert result.recommendation is None
    assert result.why_no_recommendation.startswith("no candidate meets the targets; closest: ")
    unpriced = compare(eng, [serving], [Candidate("h200-nvl")], resolve_scenario)
    assert unpriced.why_no_recommendation == (
        "the candidates that meet the targets have no price (h200-nvl): enter --usd-per-gpu-hour"
    )


def test_prices_candidate_first_scenario_for_its_own_gpu(eng) -> None:  # type: ignore[no-untyped-def]
    scenario = make_scenario(model="llama-3.1-8b", gpu="h100-sxm", pricing={"cloud_usd_per_gpu_hour": 1.5})
    rows = {
        r.candidate.accelerator: r
        for r in compare(
            eng,
            [scenario],
            [Candidate("h100-sxm"), Candidate("a100-80gb-sxm"), Candidate("mi300x", usd_per_gpu_hour=2.5)],
            resolve_scenario,
        ).rows()
    }
    assert rows["h100-sxm"].values["usd_per_gpu_hour"] == 1.5  # the scenario's price for its GPU
    assert rows["a100-80gb-sxm"].values["usd_per_gpu_hour"] == 1.79  # catalog, not the H100 price
    assert rows["mi300x"].values["usd_per_gpu_hour"] == 2.5
    scaled = compare(eng, [scenario], [Candidate("a100-80gb-sxm")], resolve_scenario, price_scale=0.5).rows()[
        0
    ]
    assert scaled.values["usd_per_gpu_hour"] == pytest.approx(0.895)


def test_several_scenarios_and_overall_pick(eng, serving) -> None:  # type: ignore[no-untyped-def]
    train = make_scenario(
        name="tune",
        model="llama-3.1-8b",
        gpu="h100-sxm",
        workload="finetune",
        method="lora",
        train_tokens=1e9,
        batch_size=4,
    )
    cands = [Candidate("h100-sxm"), Candidate("a100-80gb-sxm"), Candidate("b200")]
    result = compare(eng, [serving, train], cands, resolve_scenario)
    assert [s.scenario.name for s in result.scenarios] == ["chat", "tune"]
    assert result.scenarios[1].cost_metric == "run_usd"
    assert len(result.rows()) == 6
    # Overall: lowest geometric mean of cost relative to each scenario's cheapest.
    ratios = {}
    for c in cands:
        per = [
            next(r for r in s.results if r.candidate == c).cost / s.recommendation.cost
            for s in result.scenarios
        ]
        ratios[c] = (per[0] * per[1]) ** 0.5
    assert result.recommendation == min(ratios, key=ratios.get)


def test_bad_input_is_refused(eng, serving) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match="positive"):
        Targets(max_tpot_s=-1)
    with pytest.raises(InputError, match="budget basis"):
        Targets(budget_basis="forever")
    with pytest.raises(InputError, match="candidate"):
        compare(eng, [serving], [], resolve_scenario)
    with pytest.raises(InputError, match="no-such-gpu"):
        compare(eng, [serving], [Candidate("no-such-gpu")], resolve_scenario)


def test_as_dict_is_plain_data(eng, serving) -> None:  # type: ignore[no-untyped-def]
    import json

    doc = compare(eng, [serving], CANDIDATES[:2], resolve_scenario, Targets(max_tpot_s=0.05)).as_dict()
    again = json.loads(json.dumps(doc))
    assert again == doc
    assert [m["id"] for m in doc["metrics"]] == [m.id for m in METRICS]
    assert doc["scenarios"][0]["results"][0]["values"].keys() == {m.id for m in METRICS}


def _comparable(comparison) -> dict:  # type: ignore[no-untyped-def]
    doc = comparison.as_dict()
    return doc


@pytest.mark.parametrize(
    ("scenarios", "draws", "targets"),
    [
        # as given on most candidates; a 70B re-laid out or resized elsewhere
        (
            [make_scenario(name="chat", model="llama-3.1-8b", gpu="h100-sxm", batch_size=32),
             make_scenario(name="big", model="llama-3.1-70b", gpu="h100-sxm", batch_size=8)],
            {"perf.kernel_efficiency_scale": [0.5, 0.76, 0.95, 0.7],
             "perf.bandwidth_efficiency_scale": [0.8, 0.6, 0.9, 0.85]},
            Targets(max_tpot_s=0.03),
        ),
        # a drawn value memory reads: every draw sized on its own
        (
            [make_scenario(name="chat", model="llama-3.1-8b", gpu="h100-sxm", batch_size=64)],
            {"memory.fragmentation": [0.05, 0.3]},
            None,
        ),
    ],
)
def test_a_comparison_per_draw_equals_the_comparison_of_the_scenarios_with_those_overrides(
    eng, scenarios, draws, targets  # type: ignore[no-untyped-def]
) -> None:
    """compare_draws (one point group per candidate for all draws) gives, draw by draw, exactly the
    comparison of the scenarios with that draw's values as overrides: every row, rank, verdict and
    the recommendation."""
    from workbench.engine.compare import compare_draws

    got = compare_draws(eng, scenarios, CANDIDATES, resolve_scenario, draws, targets)
    n = len(next(iter(draws.values())))
    assert len(got) == n
    for i in range(n):
        overridden = [
            s.model_copy(update={"assumptions": {**s.assumptions, **{k: v[i] for k, v in draws.items()}}})
            for s in scenarios
        ]
        want = compare(eng, overridden, CANDIDATES, resolve_scenario, targets)
        assert _comparable(got[i]) == _comparable(want), i
    picks = {None if c.recommendation is None else c.recommendation.label for c in got}
    assert picks  # the draws are compared, whatever they pick
