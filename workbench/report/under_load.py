"""The report's "Under load (simulated)" table: a serving scenario's simulated percentiles.

A serving scenario with a load (an arrival rate or a request trace) carries the serving
simulator's ``performance.sim.*`` keys in its estimate. The table shows them next to the load
that produced them (requests, arrival rate), with goodput against the scenario's TTFT/TPOT
targets, and the simulation's own description (seed, policy, step model) as a footnote, so a
reader can tell a tail from a closed-form mean. Without a load there is nothing to show: the
closed-form figures of the key-figures table stand alone.
"""

from __future__ import annotations

from html import escape
from typing import Any

from workbench.engine.compare import format_metric, has_load
from workbench.engine.estimate import Estimate

TITLE = "Under load (simulated)"
_ROWS = (("ttft", "Time to first token"), ("tpot", "Time per output token"), ("e2e", "End-to-end latency"))
_QUANTILES = ("p50", "p90", "p99")


def _seconds(value: Any) -> str:
    return format_metric("ttft_s", value)  # ms below a second, s above; "-" when unknown


def load_text(estimate: Estimate) -> str:
    """Requests and arrivals in words: "1,000 requests, Poisson arrivals at 8 requests/s"."""
    sv = estimate.resolved.scenario.serving
    if sv.trace is not None:
        return f"requests of the trace {sv.trace}"
    shape = "Poisson arrivals" if sv.arrival_cv == 1.0 else f"gamma arrivals (CV {sv.arrival_cv:g})"
    return f"{sv.requests:,} requests, {shape} at {sv.arrival_rate:g} requests/s"


def targets_text(estimate: Estimate) -> str:
    sv = estimate.resolved.scenario.serving
    parts = [
        f"{name} at most {_seconds(limit)}"
        for name, limit in (("TTFT", sv.slo_ttft_s), ("TPOT", sv.slo_tpot_s))
        if limit is not None
    ]
    return " and ".join(parts) or "no TTFT/TPOT target set (every request counts)"


def simulated(estimate: Estimate) -> bool:
    """Whether the estimate is a serving scenario with a load that the simulator ran."""
    return has_load(estimate.resolved.scenario) and estimate.get("performance.sim.ttft_p99_s") is not None


def rows(estimate: Estimate) -> list[list[str]]:
    """One row per latency (TTFT, TPOT, end-to-end): its p50, p90 and p99."""
    return [
        [label, *(_seconds(estimate.get(f"performance.sim.{metric}_{q}_s")) for q in _QUANTILES)]
        for metric, label in _ROWS
    ]


def goodput_text(estimate: Estimate) -> str:
    rate = estimate.get("performance.sim.goodput_requests_per_s")
    share = estimate.get("performance.sim.goodput_fraction")
    done = estimate.get("performance.sim.requests_per_s")
    if not isinstance(rate, (int, float)) or not isinstance(share, (int, float)):
        return "Goodput: not known."
    served = f" of {done:.3g} requests/s served" if isinstance(done, (int, float)) else ""
    return (
        f"Goodput: {rate:.3g} requests/s{served}; {share:.0%} of the requests meet "
        f"{targets_text(estimate)}."
    )


def description(estimate: Estimate) -> str:
    """The simulation's own account of itself (requests, load, policy, seed, step model)."""
    quantity = estimate.values.get("performance.sim.ttft_p99_s")
    return "" if quantity is None else quantity.formula


def build(estimate: Estimate, body: Any, named: bool) -> None:
    """The table for one estimate on ``body`` (a :class:`workbench.report.sections.Body`)."""
    if not simulated(estimate):
        return
    name = estimate.resolved.scenario.name
    body.heading(f"{TITLE}: {name}" if named else TITLE, level=3)
    body.caption(escape(load_text(estimate)))
    body.table(
        ["Latency", "p50", "p90", "p99"],
        rows(estimate),
        widths=[40, 20, 20, 20],
        align=["left", "right", "right", "right"],
        title=f"{TITLE}: {name}",
    )
    body.para(escape(goodput_text(estimate)))
    text = description(estimate)
    if text:
        body.para(escape(text[:1].upper() + text[1:]), cls="small")
