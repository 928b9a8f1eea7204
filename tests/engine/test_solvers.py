"""Solvers agree with brute force over the same engine."""

from __future__ import annotations

import pytest

from workbench.api import engine, make_scenario, resolve
from workbench.engine import solvers
from workbench.engine.variations import with_fields


@pytest.fixture(scope="module")
def eng():  # type: ignore[no-untyped-def]
    return engine()


def test_largest_batch_matches_brute_force(eng) -> None:  # type: ignore[no-untyped-def]
    r = resolve(make_scenario(model="llama-3.1-8b", gpu="l4", seq_len=4096, gen_len=512))
    best, estimate = solvers.largest_fitting(eng, r, "batch_size")
    fits = [b for b in range(1, 64) if eng.run(r.with_scenario(with_fields(r.scenario, {"batch_size": b}))).get("memory.fits")]
    assert best == max(fits)
    assert fits == list(range(1, best + 1))  # monotonic: everything below fits
    assert estimate.get("memory.fits") is True


def test_largest_context_matches_brute_force_at_coarse_steps(eng) -> None:  # type: ignore[no-untyped-def]
    r = resolve(make_scenario(model="mistral-7b-v0.1", gpu="rtx-4090", batch_size=4))
    best, _ = solvers.largest_fitting(eng, r, "seq_len")

    def fits(n: int) -> bool:
        return bool(eng.run(r.with_scenario(with_fields(r.scenario, {"seq_len": n}))).get("memory.fits"))

    assert fits(best) and not fits(best + 1)


def test_nothing_fits_is_none(eng) -> None:  # type: ignore[no-untyped-def]
    r = resolve(make_scenario(model="llama-3.1-405b", gpu="l4"))
    assert solvers.largest_fitting(eng, r, "batch_size") is None


def test_min_gpus_matches_brute_force(eng) -> None:  # type: ignore[no-untyped-def]
    r = resolve(make_scenario(model="llama-3.1-70b", gpu="h100-sxm"))
    found = solvers.min_gpus(eng, r)
    assert found is not None and found.fits
    n = found.tp * found.pp * found.dp
    for fewer in range(1, n):
        assert not any(layout.fits for layout in solvers.layouts(eng, r, fewer)), fewer


def test_layouts_cover_every_split_and_rank_fitting_first(eng) -> None:  # type: ignore[no-untyped-def]
    r = resolve(make_scenario(model="llama-3.1-70b", gpu="h100-sxm", num_gpus=16, workload="pretrain",
                              parallel={"zero_stage": 1, "dp": 16}, recompute="full"))
    found = solvers.layouts(eng, r)
    splits = {(l.tp, l.pp, l.dp) for l in found}
    assert all(tp * pp * dp == 16 for tp, pp, dp in splits)
    assert (1, 1, 16) in splits and (8, 2, 1) in splits
    assert all(tp <= 8 for tp, _, _ in splits)  # TP stays inside one 8-GPU node
    flags = [l.fits for l in found]
    assert flags == sorted(flags, reverse=True)
    fitting = [l for l in found if l.fits]
    speeds = [l.estimate.get("performance.tokens_per_s") for l in fitting]
    assert speeds == sorted(speeds, reverse=True)
