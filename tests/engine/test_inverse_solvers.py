"""The sizing searches and inverse solvers agree with brute force over the same engine.

Brute force here means: every GPU count of :func:`solvers.gpu_counts`, every layout of it with a
full estimate (:func:`solvers.layouts`), every batch / context value one by one.
"""

from __future__ import annotations

import pytest

from workbench.api import engine, make_scenario, resolve
from workbench.catalog.accelerators import load_accelerators
from workbench.catalog.resolve import resolve_scenario
from workbench.engine import solvers
from workbench.engine.compare import Candidate, Targets, cheapest, judge, row_values
from workbench.engine.variations import with_fields


@pytest.fixture(scope="module")
def eng():  # type: ignore[no-untyped-def]
    return engine()


def _split(layout: solvers.Layout | None) -> tuple[int, int, int] | None:
    return None if layout is None else (layout.tp, layout.pp, layout.dp)


def brute_first_count(eng, r, accept, max_gpus):  # type: ignore[no-untyped-def]
    """Scan every count in order; the best runnable layout that ``accept`` takes, at the first count."""
    for n in solvers.gpu_counts(r.cluster.node.gpus_per_node, max_gpus):
        good = [x for x in solvers.layouts(eng, r, n) if solvers.runnable(x.estimate) and accept(x.estimate)]
        if good:
            return good[0]
    return None


def brute_first_meeting(eng, r, accept, max_gpus):  # type: ignore[no-untyped-def]
    """Scan every count first_count_meeting answers in (the ladder and every whole node), from the
    fewest GPUs that fit; the best runnable layout that ``accept`` takes, at the first count."""
    fits = brute_first_count(eng, r, lambda e: True, max_gpus)
    if fits is None:
        return None
    start = fits.tp * fits.pp * fits.dp
    for n in solvers.meeting_counts(r.cluster.node.gpus_per_node, max_gpus):
        if n < start:
            continue
        good = [x for x in solvers.layouts(eng, r, n) if solvers.runnable(x.estimate) and accept(x.estimate)]
        if good:
            return good[0]
    return None


def test_meeting_counts_are_the_ladder_and_every_node() -> None:
    assert solvers.meeting_counts(8, 100) == [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96]
    assert solvers.meeting_counts(72, 300) == [1, 2, 4, 8, 16, 32, 64, 72, 128, 144, 200, 216, 272, 288]


def test_gpu_counts_are_min_gpus_steps() -> None:
    assert solvers.gpu_counts(8, 100) == [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96]
    assert solvers.gpu_counts(4, 20) == [1, 2, 4, 8, 12, 16, 20]
    assert solvers.gpu_counts(1, 8) == [1, 2, 3, 4, 5, 6, 7, 8]
    counts = solvers.gpu_counts(72)
    assert counts == sorted(set(counts)) and counts[-1] <= solvers.MAX_GPUS


def test_fewest_gpus_equals_min_gpus_over_the_catalog(eng) -> None:  # type: ignore[no-untyped-def]
    """Serving Llama 3.1 70B: every catalog accelerator, the fast search against min_gpus.

    A 16 GB Mac (one device per machine, so no TP to shard the output head) has no layout at all:
    the last pipeline stage's prefill logits for 16 prompts of 2,048 tokens alone take 6.26 GiB of
    its 9.60 GiB usable, however many stages there are. Both searches must agree on that too."""
    nowhere = {"m4-16gb"}
    for gpu in load_accelerators():
        r = resolve(make_scenario(model="llama-3.1-70b", gpu=gpu, batch_size=16))
        fast, slow = solvers.fewest_gpus(eng, r), solvers.min_gpus(eng, r)
        assert _split(fast) == _split(slow), gpu
        if gpu in nowhere:
            assert fast is None, gpu
            continue
        assert fast is not None and solvers.runnable(fast.estimate)


@pytest.mark.parametrize(
    "fields",
    [
        # ZeRO-0 training: several 24 GB cards fit nowhere; others need PP 3 (an uneven split).
        {
            "model": "llama-3.1-8b",
            "workload": "pretrain",
            "batch_size": 4,
            "num_gpus": 8,
            "parallel": {"dp": 8},
        },
        # ZeRO-3: DP shards the states, so the memory-only cache must key on DP.
        {"model": "llama-3.1-8b", "workload": "pretrain", "batch_size": 2, "parallel": {"zero_stage": 3}},
        # MoE with expert parallelism.
        {"model": "mixtral-8x7b", "batch_size": 8, "num_gpus": 2, "parallel": {"dp": 2, "ep": 2}},
    ],
)
def test_fewest_gpus_matches_brute_force(eng, fields) -> None:  # type: ignore[no-untyped-def]
    gpus = [
        "v100-sxm2-32gb",
        "t4",
        "a10g",
        "l4",
        "rtx-4090",
        "a100-40gb-sxm",
        "gh200",
        "h100-sxm",
        "tpu-v5e",
        "mi300x",
    ]
    for gpu in gpus:
        r = resolve(make_scenario(gpu=gpu, **fields))
        fast = solvers.fewest_gpus(eng, r, max_gpus=64)
        slow = brute_first_count(eng, r, lambda e: True, 64)
        assert _split(fast) == _split(slow), gpu


def test_nothing_fits_anywhere_is_none(eng) -> None:  # type: ignore[no-untyped-def]
    """A 405B model with a 128K-token batch of 64 on 24 GB cards: the memory plugin agrees."""
    r = resolve(make_scenario(model="llama-3.1-405b", gpu="rtx-4090", batch_size=64, seq_len=131072))
    assert eng.run(r).get("memory.min_gpus") is None
    assert solvers.fewest_gpus(eng, r) is None


@pytest.mark.parametrize(
    ("gpu", "tokens", "days", "max_gpus"),
    [
        ("h100-sxm", 2e10, 2.0, 128),
        ("a100-80gb-sxm", 2e10, 3.0, 128),
        ("l40s", 2e10, 10.0, 128),
        # Answers between ladder counts (..., 176, 216, 264, 328, ...): whole nodes are searched there.
        ("h100-sxm", 3e11, 2.5, 512),
        ("a100-80gb-sxm", 3e11, 6.0, 512),
    ],
)
def test_train_within_matches_a_scan_of_every_count(eng, gpu, tokens, days, max_gpus) -> None:  # type: ignore[no-untyped-def]
    r = resolve(
        make_scenario(
            model="llama-3.1-8b",
            gpu=gpu,
            workload="pretrain",
            batch_size=4,
            train_tokens=tokens,
            parallel={"zero_stage": 1},
        )
    )

    def in_time(e):  # type: ignore[no-untyped-def]
        v = e.get("performance.train_time_days")
        return v is not None and v <= days

    fast = solvers.train_within(eng, r, days, max_gpus=max_gpus)
    slow = brute_first_meeting(eng, r, in_time, max_gpus)
    assert slow is not None, gpu
    assert _split(fast) == _split(slow), gpu
    assert fast.estimate.get("performance.train_time_days") <= days


def test_train_within_answers_in_whole_nodes_not_ladder_steps(eng) -> None:  # type: ignore[no-untyped-def]
    """Llama 3.1 8B on 15T tokens in 30 days: the fewest whole nodes, not the next ladder count.

    One node fewer misses the deadline; the ladder alone (2,344 then 2,928) would have answered
    2,928 GPUs, 500 more than needed.
    """
    r = resolve(make_scenario(model="llama-3.1-8b", gpu="h100-sxm", workload="pretrain", train_tokens=15e12,
                              parallel={"zero_stage": 1}))
    found = solvers.train_within(eng, r, 30)
    n = found.tp * found.pp * found.dp
    assert n % 8 == 0 and found.estimate.get("performance.train_time_days") <= 30
    fewer = solvers.LayoutSearch(eng, r).best(n - 8)
    assert fewer is not None and fewer.estimate.get("performance.train_time_days") > 30
    assert n < 2928


def test_train_within_refuses_serving_and_missing_tokens(eng) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="training scenario"):
        solvers.train_within(eng, resolve(make_scenario(model="llama-3.1-8b", gpu="h100-sxm")), 5)
    r = resolve(make_scenario(model="llama-3.1-8b", gpu="h100-sxm", workload="pretrain"))
    with pytest.raises(ValueError, match="train_tokens"):
        solvers.train_within(eng, r, 5)


def _tpot_ok(eng, r, field, value, limit):  # type: ignore[no-untyped-def]
    e = eng.run(r.with_scenario(with_fields(r.scenario, {field: value})))
    return bool(e.get("memory.fits")) and e.get("performance.tpot_s") <= limit


def test_largest_batch_under_tpot_matches_brute_force(eng) -> None:  # type: ignore[no-untyped-def]
    r = resolve(make_scenario(model="llama-3.1-8b", gpu="l4", seq_len=1024, gen_len=256))
    for limit in (0.07, 0.075, 0.085):
        found = solvers.largest_under_tpot(eng, r, "batch_size", limit)
        assert found is not None
        best, estimate = found
        flags = [_tpot_ok(eng, r, "batch_size", b, limit) for b in range(1, best + 40)]
        assert flags == [True] * best + [False] * 39, limit
        assert estimate.get("performance.tpot_s") <= limit


def test_largest_context_under_tpot_is_the_boundary(eng) -> None:  # type: ignore[no-untyped-def]
    r = resolve(make_scenario(model="llama-3.1-8b", gpu="h100-sxm", batch_size=32))
    best, _ = solvers.largest_under_tpot(eng, r, "seq_len", 0.012)
    assert _tpot_ok(eng, r, "seq_len", best, 0.012) and not _tpot_ok(eng, r, "seq_len", best + 1, 0.012)
    grid = [max(1, best * k // 100) for k in range(1, 200, 3)]
    assert [_tpot_ok(eng, r, "seq_len", n, 0.012) for n in grid] == [n <= best for n in grid]


def test_largest_under_tpot_none_and_refusals(eng) -> None:  # type: ignore[no-untyped-def]
    r = resolve(make_scenario(model="llama-3.1-70b", gpu="h100-sxm", num_gpus=4, parallel={"tp": 4}))
    assert solvers.largest_under_tpot(eng, r, "batch_size", 1e-4) is None
    with pytest.raises(ValueError):
        solvers.largest_under_tpot(eng, r, "gen_len", 0.05)
    training = resolve(make_scenario(model="llama-3.1-8b", gpu="h100-sxm", workload="pretrain"))
    with pytest.raises(ValueError, match="inference"):
        solvers.largest_under_tpot(eng, training, "batch_size", 0.05)


def test_cheapest_matches_brute_force_over_candidates(eng) -> None:  # type: ignore[no-untyped-def]
    """Serving 70B with a TPOT ceiling and a throughput floor, five candidates, up to 32 GPUs."""
    scenario = make_scenario(model="llama-3.1-70b", gpu="h100-sxm", batch_size=32)
    candidates = [
        Candidate("h100-sxm"),
        Candidate("a100-80gb-sxm"),
        Candidate("l40s"),
        Candidate("b200"),
        Candidate("mi300x", usd_per_gpu_hour=3.0),
    ]
    targets = Targets(max_tpot_s=0.03, min_tokens_per_s=2500)
    found = cheapest(eng, scenario, candidates, resolve_scenario, targets, max_gpus=32)

    brute = {}
    for c in candidates:
        price = {"cloud_usd_per_gpu_hour": c.usd_per_gpu_hour} if c.usd_per_gpu_hour else {}
        r = resolve(
            scenario.model_copy(
                update={"gpu": c.accelerator, "pricing": scenario.pricing.model_copy(update=price)}
            )
        )

        def meets(e, sc=r.scenario):  # type: ignore[no-untyped-def]
            return all(x.startswith("no price") for x in judge(targets, sc, row_values(e), True))

        brute[c.accelerator] = brute_first_count(eng, r, meets, 32)
    by_id = {res.candidate.accelerator: res for res in found.results}
    for ident, layout in brute.items():
        result = by_id[ident]
        if layout is None:
            assert not result.meets_targets, ident
        else:
            assert (result.tp, result.pp, result.dp) == _split(layout), ident
            assert result.values["usd_per_m_tokens"] == pytest.approx(
                layout.estimate.get("cost.usd_per_million_tokens")
            )
    priced = {k: x.estimate.get("cost.usd_per_million_tokens") for k, x in brute.items() if x is not None}
    assert found.recommendation is not None
    assert found.recommendation.candidate.accelerator == min(priced, key=priced.get)


@pytest.mark.parametrize("upper", [1, 2, 3, 64, 65, 1000, 1 << 20])
def test_the_grouped_search_finds_the_end_of_any_good_range(upper: int) -> None:
    """``largest_good`` (the rounds of point groups behind max-batch, max-context and the TPOT
    searches) returns the last good value for every threshold, as a one-by-one bisection would."""
    from workbench.api import make_scenario, resolve
    from workbench.engine.solvers import largest_good
    from workbench.pluginhost import default_engine

    engine = default_engine()
    resolved = resolve(make_scenario(model="llama-3.1-8b", gpu="h100-sxm"))
    for threshold in sorted({0, 1, 2, 3, 5, 63, 64, 65, 127, 999, 1000, 1001, 777_777, upper - 1, upper, upper + 5}):

        def good(group, i, threshold=threshold):  # type: ignore[no-untyped-def]
            return group.resolved(i).scenario.batch_size <= threshold

        found = largest_good(engine, resolved, "batch_size", upper, ("kv_cache.bytes",), good)
        want = None if threshold < 1 else min(threshold, upper)
        assert found == want, (threshold, upper)
