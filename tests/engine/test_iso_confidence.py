"""Decision confidence at equal service level: fixed seeds, small grids, against iso_sla itself."""

from __future__ import annotations

import pytest

from workbench.api import engine, make_scenario
from workbench.catalog.resolve import resolve_scenario
from workbench.core.errors import InputError
from workbench.engine.compare import Candidate, Targets
from workbench.engine.iso_confidence import iso_sla_confidence
from workbench.engine.iso_sla import iso_sla

SCENARIO = make_scenario(model="llama-3.1-70b", gpu="h100-sxm", gen_len=256, seq_len=1024)
CANDIDATES = [Candidate("h100-sxm"), Candidate("mi300x"), Candidate("b200")]
BATCHES = (1, 4, 16, 64)
WEIGHTS = ["bf16", "fp8"]
DEMAND = Targets(max_ttft_s=1.0, max_tpot_s=0.05, min_tokens_per_s=5000.0)
NO_DEMAND = Targets(max_tpot_s=0.05)


@pytest.fixture(scope="module")
def eng():  # type: ignore[no-untyped-def]
    return engine()


@pytest.fixture
def tail_by_batch(monkeypatch):  # type: ignore[no-untyped-def]
    """A simulated tail that depends on the configuration only (never on the assumptions): batches
    of 64 miss the p99, the rest hold. iso_sla and the draws then see the same tails."""
    from workbench.engine import iso_sla as module

    monkeypatch.setattr(module, "simulated_tail",
                        lambda e, s, c, r, config, d: (5.0, 5.0, 1.0) if config.batch >= 64 else (0.1, 0.01, 1.0))  # fmt: skip


def _winner_with(eng, values: dict[str, float], targets: Targets, candidates=CANDIDATES) -> str | None:  # type: ignore[no-untyped-def]
    scenario = SCENARIO.model_copy(update={"assumptions": {**SCENARIO.assumptions, **values}})
    ranked = iso_sla(eng, scenario, candidates, resolve_scenario, targets, weights=WEIGHTS, batches=BATCHES)
    return ranked[0].candidate.label if ranked[0].meets else None


@pytest.mark.parametrize("targets", [DEMAND, NO_DEMAND])
def test_shares_and_no_winner_sum_to_one(eng, targets) -> None:  # type: ignore[no-untyped-def]
    c = iso_sla_confidence(eng, SCENARIO, CANDIDATES, resolve_scenario, targets, weights=WEIGHTS, batches=BATCHES,
                           draws=200, seed=3, break_even=False)  # fmt: skip
    assert sum(c.shares.values()) + c.no_recommendation == pytest.approx(1.0)
    assert set(c.shares) == {x.label for x in CANDIDATES} and len(c.winners) == 200
    assert c.drawn and all(f.low < f.high for f in c.drawn)
    again = iso_sla_confidence(eng, SCENARIO, CANDIDATES, resolve_scenario, targets, weights=WEIGHTS,
                               batches=BATCHES, draws=200, seed=3, break_even=False)  # fmt: skip
    assert again.winners == c.winners  # seeded


def test_a_dominant_candidate_wins_every_draw(eng) -> None:  # type: ignore[no-untyped-def]
    cheap = [Candidate("h100-sxm", usd_per_gpu_hour=0.01), Candidate("mi300x"), Candidate("b200")]
    c = iso_sla_confidence(eng, SCENARIO, cheap, resolve_scenario, NO_DEMAND, weights=WEIGHTS, batches=BATCHES,
                           draws=100, seed=1)  # fmt: skip
    assert c.shares["h100-sxm"] == 1.0 and c.no_recommendation == 0.0
    assert c.break_even == []  # nothing in the ranges moves it


@pytest.mark.parametrize("targets", [DEMAND, NO_DEMAND])
def test_each_draw_is_iso_sla_with_those_assumption_values(eng, targets, tail_by_batch) -> None:  # type: ignore[no-untyped-def]
    c = iso_sla_confidence(eng, SCENARIO, CANDIDATES, resolve_scenario, targets, weights=WEIGHTS, batches=BATCHES,
                           draws=200, seed=5, break_even=False)  # fmt: skip
    import numpy as np

    rng = np.random.default_rng(5)
    values = {f.target: rng.uniform(f.low, f.high, size=200) for f in c.drawn}  # the same seeded draws
    picked = [0, 1, 2] + [i for i in range(3, 200) if c.winners[i] != c.winners[0]][:3]
    for d in picked:
        assert c.winners[d] == _winner_with(eng, {k: float(v[d]) for k, v in values.items()}, targets), d


def test_with_drawn_tails_each_draw_is_iso_sla_simulated_with_those_values(eng) -> None:  # type: ignore[no-untyped-def]
    """No stand-in tail here: the simulator runs at every draw's values, as iso_sla does with them."""
    import numpy as np

    pair = CANDIDATES[:2]
    c = iso_sla_confidence(eng, SCENARIO, pair, resolve_scenario, DEMAND, weights=WEIGHTS, batches=BATCHES, draws=6,
                           seed=2, tails="drawn", break_even=False)  # fmt: skip
    assert any("at that draw's assumption values" in n for n in c.notes)
    rng = np.random.default_rng(2)
    values = {f.target: rng.uniform(f.low, f.high, size=6) for f in c.drawn}
    for d in range(6):
        assert c.winners[d] == _winner_with(eng, {k: float(v[d]) for k, v in values.items()}, DEMAND, pair), d
    with pytest.raises(InputError, match="tails"):
        iso_sla_confidence(eng, SCENARIO, pair, resolve_scenario, DEMAND, draws=5, tails="sometimes")


def test_bounds_never_change_a_draw(eng, tail_by_batch) -> None:  # type: ignore[no-untyped-def]
    """Drawing only the configurations whose cost bound can still win gives every draw's winner
    that drawing every configuration gives."""
    kw = dict(weights=WEIGHTS, batches=BATCHES, draws=300, seed=7, break_even=False)
    for targets in (DEMAND, NO_DEMAND):
        pruned = iso_sla_confidence(eng, SCENARIO, CANDIDATES, resolve_scenario, targets, **kw)
        full = iso_sla_confidence(eng, SCENARIO, CANDIDATES, resolve_scenario, targets, prune=False, **kw)
        assert pruned.winners == full.winners
        assert pruned.configurations_drawn < full.configurations_drawn


def test_an_assumption_break_even_flips_the_winner_just_past_it(eng) -> None:  # type: ignore[no-untyped-def]
    c = iso_sla_confidence(eng, SCENARIO, CANDIDATES, resolve_scenario, NO_DEMAND, weights=WEIGHTS, batches=BATCHES,
                           draws=50, seed=0)  # fmt: skip
    base = c.base[0].candidate.label
    assert c.break_even, "this scenario has a threshold inside a range"
    for b in c.break_even:
        assert b.factor.low <= b.threshold <= b.factor.high and b.winner != base
        assert abs(b.threshold - b.before) < (b.factor.high - b.factor.low) / 1000
        assert _winner_with(eng, {b.factor.target: b.threshold}, NO_DEMAND) == b.winner
        assert _winner_with(eng, {b.factor.target: b.before}, NO_DEMAND) == base
        assert b.describe().startswith(f"{b.winner} wins if {b.factor.id} is {b.direction}")


def test_the_price_break_even_of_a_loser_flips_the_winner(eng) -> None:  # type: ignore[no-untyped-def]
    ranked = iso_sla(eng, SCENARIO, CANDIDATES, resolve_scenario, NO_DEMAND, weights=WEIGHTS, batches=BATCHES)
    loser = next(r for r in ranked[1:] if r.meets)
    price = loser.break_even_usd_per_gpu_hour
    assert price is not None and ranked[0].break_even_usd_per_gpu_hour is None
    for factor, wins in ((0.999, True), (1.001, False)):
        priced = [Candidate(x.accelerator, usd_per_gpu_hour=price * factor) if x == loser.candidate else x
                  for x in CANDIDATES]  # fmt: skip
        again = iso_sla(eng, SCENARIO, priced, resolve_scenario, NO_DEMAND, weights=WEIGHTS, batches=BATCHES)
        assert (again[0].candidate.accelerator == loser.candidate.accelerator) is wins


def test_the_tail_note_and_the_limits(eng, tail_by_batch) -> None:  # type: ignore[no-untyped-def]
    c = iso_sla_confidence(eng, SCENARIO, CANDIDATES[:1], resolve_scenario, DEMAND, weights=WEIGHTS,
                           batches=BATCHES, draws=5, break_even=False)  # fmt: skip
    assert any("simulated at the scenario's own assumption values" in n for n in c.notes)
    with pytest.raises(InputError, match="number of draws"):
        iso_sla_confidence(eng, SCENARIO, CANDIDATES, resolve_scenario, DEMAND, draws=0)


def test_progress_is_told_and_a_raise_from_it_stops(eng) -> None:  # type: ignore[no-untyped-def]
    seen: list[tuple[int, int]] = []
    iso_sla_confidence(eng, SCENARIO, CANDIDATES[:2], resolve_scenario, NO_DEMAND, batches=BATCHES, draws=10,
                       progress=lambda done, total: seen.append((done, total)))  # fmt: skip
    assert seen[-1] == (4, 4) and [d for d, _ in seen] == sorted(d for d, _ in seen)

    class Stop(Exception):
        pass

    def stop(done: int, total: int) -> None:
        raise Stop

    with pytest.raises(Stop):
        iso_sla_confidence(eng, SCENARIO, CANDIDATES[:2], resolve_scenario, NO_DEMAND, batches=BATCHES, draws=10,
                           progress=stop)  # fmt: skip

    searched: list[int] = []

    def stop_in_the_draws(done: int, total: int) -> None:
        searched.append(done)
        if searched.count(2) > 1:  # told again once the search is done: the draws are under way
            raise Stop

    with pytest.raises(Stop):
        iso_sla_confidence(eng, SCENARIO, CANDIDATES[:2], resolve_scenario, NO_DEMAND, batches=BATCHES, draws=10,
                           progress=stop_in_the_draws)  # fmt: skip
    assert 3 not in searched  # stopped before the draws were done


def test_a_winner_whose_tail_sits_at_the_target_is_flagged(eng, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from workbench.engine import iso_sla as module

    for ttft99, flagged in ((0.95, True), (0.5, False)):
        monkeypatch.setattr(module, "simulated_tail", lambda *a, t=ttft99: (t, 0.01, 1.0))
        c = iso_sla_confidence(eng, SCENARIO, CANDIDATES[:2], resolve_scenario, DEMAND, weights=WEIGHTS,
                               batches=BATCHES, draws=5, break_even=False)  # fmt: skip
        edge = [n for n in c.notes if "within 5% of its target" in n and "p99 TTFT (950 ms)" in n]
        assert bool(edge) is flagged, c.notes


def test_each_draw_is_iso_sla_when_replicas_rescue_the_tail(eng, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A stand-in tail that falls as replicas rise (and one layout that never holds): the draws
    add replicas exactly as iso_sla does."""
    from workbench.engine import iso_sla as module

    def tail(e, s, c, r, config, d):  # type: ignore[no-untyped-def]
        if config.tp == 1 and config.batch == 16:
            return (5.0, 5.0, 1.0)
        return (0.2 * config.batch / config.replicas, 0.01, 1.0)

    monkeypatch.setattr(module, "simulated_tail", tail)
    c = iso_sla_confidence(eng, SCENARIO, CANDIDATES, resolve_scenario, DEMAND, weights=WEIGHTS, batches=BATCHES,
                           draws=200, seed=4, break_even=False)  # fmt: skip
    import numpy as np

    rng = np.random.default_rng(4)
    values = {f.target: rng.uniform(f.low, f.high, size=200) for f in c.drawn}
    picked = [0, 1] + [i for i in range(2, 200) if c.winners[i] != c.winners[0]][:3]
    for d in picked:
        assert c.winners[d] == _winner_with(eng, {k: float(v[d]) for k, v in values.items()}, DEMAND), d
