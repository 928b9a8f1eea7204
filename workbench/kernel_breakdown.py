"""Where a step's time goes: the per-operator breakdown of an estimate, as the window's Kernels
chart and the report's table show it (no Qt here).

The performance plugin computes it (:func:`workbench_performance.kernels_for`); this module orders
each phase's kernel groups by time, adds each one's share of its phase, and says in one sentence
why there is nothing to show when there is not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The bounds a kernel group can have, in legend order.
BOUNDS = ("compute", "memory", "latency")

#: What the times cover (the plugin's breakdown is kernels only, per pipeline stage).
SCOPE = ("kernels only, per pipeline stage: communication and the fixed per-step overhead "
         "come on top")


@dataclass(frozen=True, slots=True)
class Row:
    name: str  # kernel group: attention.qkv, mlp.up, moe.experts.up, ...
    seconds: float
    share: float  # of the phase's kernel time, 0..1
    bound: str  # compute, memory or latency


@dataclass(frozen=True, slots=True)
class PhaseRows:
    title: str  # "decode step, 64 sequences"
    profile: str  # the kernel profile's title
    generic: bool  # no kernel data for the accelerator: generic efficiencies
    rows: tuple[Row, ...]  # longest first
    total_s: float


@dataclass(frozen=True, slots=True)
class Breakdown:
    phases: tuple[PhaseRows, ...]
    empty_reason: str  # why there are no phases ("" when there are, or when there is no estimate)

    @property
    def generic(self) -> bool:
        return any(p.generic for p in self.phases)


def _has_speed_model(estimate: Any) -> bool:
    return any(key.startswith("performance.") for key in estimate.values)


def step_breakdown(estimate: Any) -> Breakdown:
    """The phases of ``estimate`` (an :class:`~workbench.engine.estimate.Estimate` or None)."""
    if estimate is None:
        return Breakdown((), "")
    if not _has_speed_model(estimate):
        return Breakdown((), "No speed model for this scenario (the performance plugin is off or failed), "
                             "so there is no per-operator breakdown to show.")
    try:
        from workbench_performance import kernels_for

        phases = kernels_for(estimate)
    except Exception as exc:  # noqa: BLE001 - a view of the estimate must not take the window down
        return Breakdown((), f"The per-operator breakdown could not be computed: {exc}")
    if not phases:
        return Breakdown((), "No speed model for this scenario: its FLOPs could not be counted, so there "
                             "is no per-operator breakdown to show.")
    out = []
    for phase in phases:
        total = sum(max(k.seconds, 0.0) for k in phase.kernels)
        rows = sorted(
            (Row(k.name, max(k.seconds, 0.0), max(k.seconds, 0.0) / total if total > 0 else 0.0, k.bound)
             for k in phase.kernels),
            key=lambda r: r.seconds, reverse=True,
        )
        out.append(PhaseRows(phase.title, phase.profile, phase.generic, tuple(rows), total))
    return Breakdown(tuple(out), "")


def format_ms(seconds: float) -> str:
    """Milliseconds to three significant digits (0.0123 ms, 1.23 ms, 123 ms, 1,234 ms)."""
    ms = seconds * 1000.0
    if ms == 0:
        return "0 ms"
    if ms < 0.001:
        return "<0.001 ms"
    return f"{ms:,.0f} ms" if ms >= 99.95 else f"{ms:.3g} ms"


def format_share(share: float) -> str:
    """A share as a whole percentage; a sliver reads "<1%", not "0%"."""
    return "<1%" if 0 < share < 0.005 else f"{share:.0%}"


def generic_note(accelerator: str) -> str:
    return (f"Generic kernel profile: no published kernel benchmarks for {accelerator}'s architecture, "
            "so these times use generic efficiencies, not measured ones.")
