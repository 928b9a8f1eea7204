"""Decision confidence: Monte Carlo draws of the documented assumption ranges over a comparison."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.api import engine, make_scenario
from workbench.catalog.resolve import resolve_scenario
from workbench.core.errors import InputError
from workbench.engine.compare import Candidate, Targets, compare
from workbench.engine.confidence import decision_confidence

SCENARIO = make_scenario(name="chat", model="llama-3.1-8b", gpu="h100-sxm", batch_size=64)


@pytest.fixture(scope="module")
def eng():  # type: ignore[no-untyped-def]
    return engine()


def _tie_price(eng) -> float:  # type: ignore[no-untyped-def]
    """The MI300X rental price at which it costs what an H100 at $2/h costs per million tokens."""
    rows = {r.candidate.label: r.cost for r in compare(
        eng, [SCENARIO], [Candidate("h100-sxm", None, 2.0), Candidate("mi300x", None, 2.0)], resolve_scenario
    ).rows()}  # fmt: skip
    return 2.0 * rows["h100-sxm"] / rows["mi300x"]


def test_shares_sum_to_one_and_the_seed_repeats_them(eng) -> None:  # type: ignore[no-untyped-def]
    candidates = [Candidate("h100-sxm", None, 2.0), Candidate("mi300x", None, _tie_price(eng))]
    one = decision_confidence(eng, [SCENARIO], candidates, resolve_scenario, draws=200, seed=3)
    again = decision_confidence(eng, [SCENARIO], candidates, resolve_scenario, draws=200, seed=3)
    assert sum(one.shares.values()) + one.no_recommendation == pytest.approx(1.0)
    assert one.shares == again.shares
    drawn = {f.id for f in one.drawn}
    assert {"perf.kernel_efficiency_scale", "perf.bandwidth_efficiency_scale"} <= drawn
    assert not any(i.startswith("memory.") for i in drawn)  # fixed reservations document no range


def test_a_dominant_candidate_wins_every_draw(eng) -> None:  # type: ignore[no-untyped-def]
    candidates = [Candidate("h100-sxm", None, 2.0), Candidate("h200-sxm", None, 1000.0)]
    result = decision_confidence(eng, [SCENARIO], candidates, resolve_scenario, Targets(max_tpot_s=0.2), draws=100)
    assert result.shares == {"h100-sxm": 1.0, "h200-sxm": 0.0} and result.no_recommendation == 0.0


def test_a_near_tie_splits_the_draws_and_a_clear_price_gap_does_not(eng) -> None:  # type: ignore[no-untyped-def]
    """At the price where both cost the same per million tokens the draws decide both ways; 5%
    cheaper, the MI300X wins nearly all of them (the assumptions move both GPUs alike)."""
    tie = _tie_price(eng)
    near = decision_confidence(eng, [SCENARIO], [Candidate("h100-sxm", None, 2.0), Candidate("mi300x", None, tie)],
                               resolve_scenario, draws=300)  # fmt: skip
    assert 0.2 < near.shares["mi300x"] < 0.8
    clear = decision_confidence(eng, [SCENARIO], [Candidate("h100-sxm", None, 2.0),
                                                  Candidate("mi300x", None, tie * 0.95)], resolve_scenario, draws=300)  # fmt: skip
    assert clear.shares["mi300x"] > 0.9


def test_each_draw_is_the_comparison_with_those_values(eng) -> None:  # type: ignore[no-untyped-def]
    """The recommendation of draw k is that of a plain comparison with draw k's values set."""
    candidates = [Candidate("h100-sxm", None, 2.0), Candidate("mi300x", None, _tie_price(eng))]
    result = decision_confidence(eng, [SCENARIO], candidates, resolve_scenario, draws=6, seed=11)
    rng = np.random.default_rng(11)
    values = {f.target: rng.uniform(f.low, f.high, size=6) for f in result.drawn}
    wins = {c.label: 0 for c in candidates}
    for k in range(6):
        swung = SCENARIO.model_copy(update={"assumptions": {i: float(v[k]) for i, v in values.items()}})
        pick = compare(eng, [swung], candidates, resolve_scenario).recommendation
        wins[pick.label] += 1
    assert {label: n / 6 for label, n in wins.items()} == result.shares


def test_the_number_of_draws_is_checked(eng) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match="draws"):
        decision_confidence(eng, [SCENARIO], [Candidate("h100-sxm")], resolve_scenario, draws=0)


def test_progress_reaches_its_total(eng) -> None:  # type: ignore[no-untyped-def]
    seen: list[tuple[int, int]] = []
    candidates = [Candidate("h100-sxm", None, 2.0), Candidate("h200-sxm", None, 3.0)]
    decision_confidence(eng, [SCENARIO], candidates, resolve_scenario, draws=20,
                        progress=lambda done, total: seen.append((done, total)))  # fmt: skip
    assert seen and seen[-1][0] == seen[-1][1] and [d for d, _ in seen] == sorted(d for d, _ in seen)
