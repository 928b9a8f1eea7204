"""Inverse questions answered by repeated estimates: fewest GPUs, largest batch or context,
and the parallel layouts that fit a GPU count, best first."""

from __future__ import annotations

from dataclasses import dataclass

from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Scenario
from workbench.engine.estimate import Estimate
from workbench.engine.pipeline import Engine
from workbench.engine.variations import with_fields

MAX_GPUS = 16384


@dataclass(frozen=True, slots=True)
class Layout:
    tp: int
    pp: int
    dp: int
    estimate: Estimate

    @property
    def fits(self) -> bool:
        return bool(self.estimate.get("memory.fits"))

    def as_dict(self) -> dict[str, object]:
        return {
            "tp": self.tp,
            "pp": self.pp,
            "dp": self.dp,
            "fits": self.fits,
            "memory_per_gpu": self.estimate.get("memory.per_gpu.total"),
            "headroom": self.estimate.get("memory.headroom"),
            "tokens_per_s": self.estimate.get("performance.tokens_per_s"),
            "step_time_s": self.estimate.get("performance.step_time_s"),
        }


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _fits(engine: Engine, resolved: ResolvedScenario, scenario: Scenario) -> tuple[bool, Estimate]:
    estimate = engine.run(resolved.with_scenario(scenario))
    return bool(estimate.get("memory.fits")), estimate


def layouts(engine: Engine, resolved: ResolvedScenario, num_gpus: int | None = None) -> list[Layout]:
    """Every TP x PP x DP split of ``num_gpus`` (TP within one node), best first.

    Ranking: layouts that fit first; among them the fastest when a performance estimator ran
    (highest tokens/s), otherwise the least model parallelism (less communication), then TP
    before PP (TP stays inside the node's fast links), then the most memory headroom.
    """
    base = resolved.scenario
    n = num_gpus or base.num_gpus
    per_node = resolved.cluster.node.gpus_per_node
    found: list[Layout] = []
    for tp in _divisors(n):
        if tp > per_node:
            break
        for pp in _divisors(n // tp):
            if pp > resolved.model.total_layers:
                break
            dp = n // (tp * pp)
            ep = base.parallel.ep if (dp * tp) % base.parallel.ep == 0 else 1
            changes = {"num_gpus": n, "parallel.tp": tp, "parallel.pp": pp, "parallel.dp": dp, "parallel.ep": ep}
            scenario = with_fields(base, changes)
            estimate = engine.run(resolved.with_scenario(scenario))
            found.append(Layout(tp, pp, dp, estimate))

    def rank(layout: Layout) -> tuple[float, ...]:
        speed = layout.estimate.get("performance.tokens_per_s")
        headroom = layout.estimate.get("memory.headroom") or 0.0
        return (
            0 if layout.fits else 1,
            -float(speed) if isinstance(speed, (int, float)) else 0.0,
            layout.tp * layout.pp,
            layout.pp,
            -float(headroom),
        )

    return sorted(found, key=rank)


def min_gpus(engine: Engine, resolved: ResolvedScenario, max_gpus: int = MAX_GPUS) -> Layout | None:
    """The fewest GPUs (1, 2, 4, ... then whole nodes) on which some layout fits."""
    per_node = resolved.cluster.node.gpus_per_node
    n = 1
    while n <= max_gpus:
        best = layouts(engine, resolved, n)
        if best and best[0].fits:
            return best[0]
        n = n * 2 if n < per_node else n + per_node * max(1, n // (per_node * 4))
    return None


def largest_fitting(
    engine: Engine, resolved: ResolvedScenario, field: str, upper: int = 1 << 22
) -> tuple[int, Estimate] | None:
    """Largest ``batch_size`` or ``seq_len`` that fits (memory is monotonic in both)."""
    if field not in ("batch_size", "seq_len"):
        raise ValueError("largest_fitting solves for batch_size or seq_len")
    base = resolved.scenario

    def probe(value: int) -> tuple[bool, Estimate]:
        return _fits(engine, resolved, with_fields(base, {field: value}))

    ok, estimate = probe(1)
    if not ok:
        return None
    lo, best = 1, estimate
    hi = 2
    while hi <= upper:
        ok, estimate = probe(hi)
        if not ok:
            break
        lo, best, hi = hi, estimate, hi * 2
    hi = min(hi, upper + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        ok, estimate = probe(mid)
        if ok:
            lo, best = mid, estimate
        else:
            hi = mid
    return lo, best


