"""Pareto fronts per candidate: against brute-force dominance on the same configurations."""

from __future__ import annotations

import pytest

from workbench.api import engine, make_scenario
from workbench.catalog.resolve import resolve_scenario
from workbench.core.errors import InputError
from workbench.engine.compare import Candidate
from workbench.engine.pareto import BATCHES, cost_front, pareto_fronts, throughput_front

SCENARIO = make_scenario(model="llama-3.1-70b", gpu="h100-sxm", weights="fp8", gen_len=256)
CANDIDATES = [Candidate("h100-sxm"), Candidate("mi300x"), Candidate("l40s")]


@pytest.fixture(scope="module")
def fronts():  # type: ignore[no-untyped-def]
    return pareto_fronts(engine(), SCENARIO, CANDIDATES, resolve_scenario)


def _dominates(a, b, better) -> bool:  # type: ignore[no-untyped-def]
    """``a`` at least as good as ``b`` on both axes and better on one (``better`` gives (x, y),
    larger is better)."""
    (ax, ay), (bx, by) = better(a), better(b)
    return ax >= bx and ay >= by and (ax > bx or ay > by)


@pytest.mark.parametrize(
    ("front", "better"),
    [
        ("throughput", lambda p: (p.tokens_per_s_per_gpu, p.tokens_per_s_per_user)),
        ("cost", lambda p: (-p.usd_per_million_tokens, -p.tpot_s)),
    ],
)
def test_a_front_is_exactly_the_configurations_nothing_dominates(fronts, front, better) -> None:  # type: ignore[no-untyped-def]
    for f in fronts:
        points = [p for p in f.points if front == "throughput" or p.usd_per_million_tokens is not None]
        want = {p for p in points if not any(_dominates(q, p, better) for q in points)}
        got = set(getattr(f, front))
        # equal points (the same figures twice) keep one: the brute force keeps both
        assert got <= want and {better(p) for p in got} == {better(p) for p in want}, f.candidate.label
        assert len(got) >= 2, f.candidate.label  # concurrency always trades one axis for the other here


def test_every_configuration_runs_and_each_candidate_keeps_its_own(fronts) -> None:  # type: ignore[no-untyped-def]
    eng = engine()
    for f in fronts:
        assert f.points, f.candidate.label
        for p in f.points:
            assert p.batch in BATCHES and p.gpus == p.tp
            alone = eng.run(resolve_scenario(SCENARIO.model_copy(update={
                "gpu": f.candidate.accelerator, "batch_size": p.batch, "num_gpus": p.tp,
                "parallel": SCENARIO.parallel.model_copy(update={"tp": p.tp}),
            })))  # fmt: skip
            assert alone.get("memory.fits") is True
            assert alone.get("performance.tpot_s") == p.tpot_s
            assert alone.get("performance.tokens_per_s_per_gpu") == p.tokens_per_s_per_gpu


def test_front_helpers_on_hand_made_points() -> None:
    from workbench.engine.pareto import FrontPoint

    def pt(gpu: float, user: float, usd: float | None, tpot: float) -> FrontPoint:
        return FrontPoint(1, 1, 1, gpu, user, tpot, 0.1, usd)

    a, b, c, d = pt(100, 10, 1.0, 0.05), pt(80, 20, 1.5, 0.03), pt(70, 15, 2.0, 0.04), pt(50, 30, None, 0.02)
    assert throughput_front([c, a, d, b]) == [a, b, d]  # c: b beats it on both
    assert cost_front([c, a, d, b]) == [a, b]  # d has no price; c is dearer and slower than b


def test_training_and_prefill_only_are_refused() -> None:
    eng = engine()
    with pytest.raises(InputError, match="serving"):
        pareto_fronts(eng, make_scenario(model="llama-3.1-8b", gpu="h100-sxm", workload="pretrain"), CANDIDATES, resolve_scenario)
    with pytest.raises(InputError, match="gen-len"):
        pareto_fronts(eng, make_scenario(model="llama-3.1-8b", gpu="h100-sxm", gen_len=1), CANDIDATES, resolve_scenario)
