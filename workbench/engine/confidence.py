"""Decision confidence: how often each candidate is the recommendation when the uncertain
assumptions are drawn over their documented ranges (a Monte Carlo over the comparison).

The factors are those Sensitivity swings for the comparison's estimates (:func:`sensitivity.factors`)
that are assumptions whose source documents a plausible range (the speed model's efficiencies and
latencies, the cost model's power fractions; the memory model's fixed reservations have none and
keep their values): each draw takes every one of them uniformly in [low, high],
independently, from a seeded generator (the same draws every run). Prices and pricing fields are
not drawn: they are the user's inputs, not our uncertainty. All draws are compared at once
(:func:`compare.compare_draws`: one point group per candidate and layout), and the share of draws
in which each candidate is the cheapest that meets the targets is its confidence; the shares and
the share of draws with no recommendation sum to one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.core.errors import InputError
from workbench.core.scenario import Scenario
from workbench.engine.compare import Candidate, Comparison, Progress, Resolve, Targets, compare, compare_draws
from workbench.engine.pipeline import Engine
from workbench.engine.sensitivity import Factor, factors

#: Draws a user may ask for (a thousand is the issue's figure; more only tightens the shares).
MAX_DRAWS = 100_000


@dataclass(slots=True)
class Confidence:
    """Shares of the draws each candidate is recommended in (label -> fraction of draws)."""

    draws: int
    seed: int
    drawn: list[Factor]
    shares: dict[str, float]
    no_recommendation: float
    base: Comparison
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "draws": self.draws,
            "seed": self.seed,
            "drawn": [{"id": f.id, "title": f.title, "low": f.low, "high": f.high, "unit": f.unit} for f in self.drawn],
            "shares": dict(self.shares),
            "no_recommendation": self.no_recommendation,
            "notes": list(self.notes),
        }


def decision_confidence(
    engine: Engine,
    scenarios: Sequence[Scenario],
    candidates: Sequence[Candidate],
    resolve: Resolve,
    targets: Targets | None = None,
    *,
    draws: int = 1000,
    seed: int = 0,
    max_gpus: int | None = None,
    progress: Progress | None = None,
) -> Confidence:
    """The comparison of ``scenarios`` on ``candidates``, and how often each candidate wins it
    over ``draws`` draws of the assumptions (module docstring)."""
    if not 1 <= draws <= MAX_DRAWS:
        raise InputError(f"confidence: the number of draws must be 1..{MAX_DRAWS:,}, got {draws}")
    extra = {} if max_gpus is None else {"max_gpus": max_gpus}
    base = compare(engine, scenarios, candidates, resolve, targets, **extra)
    estimates = [r.estimate for r in base.rows() if r.estimate is not None]
    swung = factors(engine, estimates) if estimates else []
    drawn = [f for f in swung if f.kind == "assumption" and f.range_source.startswith("documented range")]
    notes = []
    first = scenarios[0].assumptions
    if any(s.assumptions.get(f.target) != first.get(f.target) for s in scenarios for f in drawn):
        notes.append("the scenarios set some drawn assumption differently: each draw sets it for all of them")
    if not drawn:
        shares = {c.label: float(base.recommendation is not None and base.recommendation.label == c.label)
                  for c in candidates}  # fmt: skip
        notes.append("no assumption with a range moves these estimates: nothing to draw")
        return Confidence(draws, seed, [], shares, float(base.recommendation is None), base, notes)
    rng = np.random.default_rng(seed)
    values = {f.target: rng.uniform(f.low, f.high, size=draws) for f in drawn}
    picks = Counter(
        None if c.recommendation is None else c.recommendation.label
        for c in compare_draws(engine, scenarios, candidates, resolve, values, targets, progress=progress, **extra)
    )
    shares = {c.label: picks.get(c.label, 0) / draws for c in candidates}
    return Confidence(draws, seed, drawn, shares, picks.get(None, 0) / draws, base, notes)
