"""How the confidence at equal service level reads on its page: each candidate's share of the draws,
the break-even thresholds of the assumptions and of the rental prices, and the engine's notes, in
the window's words (names, not ids; values in their units)."""

from __future__ import annotations

from html import escape

from workbench.engine.compare import Candidate
from workbench.engine.iso_confidence import BreakEven, IsoConfidence
from workbench.engine.iso_sla import IsoResult
from workbench.engine.sensitivity import Factor
from workbench.gui.compare.compare_format import short_name


def share_text(confidence: IsoConfidence, label: str) -> str:
    """"68% of draws" for a candidate that wins some, "0%" for one that never does."""
    share = confidence.shares.get(label, 0.0)
    if not share:
        return "0%"
    return f"{share:.0%} of draws" if share >= 0.005 else "<1% of draws"


def assumption_name(factor: Factor) -> str:
    """``perf.kernel_efficiency_scale`` -> ``kernel efficiency`` (the title is in the tooltip)."""
    name = factor.id.split(".", 1)[-1]
    for suffix in ("_scale", "_s"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name.replace("_", " ")


def value_text(value: float, unit: str) -> str:
    """An assumption's value in its unit: seconds as ms or µs, fractions and factors bare."""
    if unit == "s":
        return f"{value * 1e3:.3g} ms" if abs(value) >= 1e-3 else f"{value * 1e6:.3g} µs"
    return f"{value:.3g}"


def break_even_text(item: BreakEven, names: dict[str, str]) -> str:
    """"MI300X wins if kernel efficiency is at most 0.678 (range 0.65–0.84)"."""
    f = item.factor
    who = ("no candidate meets the targets" if item.winner is None
           else f"{short_name(names.get(item.winner, item.winner))} wins")
    return (f"{who} if {assumption_name(f)} is {item.direction} {value_text(item.threshold, f.unit)} "
            f"(range {value_text(f.low, f.unit)}–{value_text(f.high, f.unit)})")


def price_lines(results: list[IsoResult], names: dict[Candidate, str]) -> list[str]:
    """Each losing candidate that meets the targets: the rental price below which it would win."""
    return [f"{short_name(names.get(r.candidate, r.candidate.label))} would win below "
            f"${r.break_even_usd_per_gpu_hour:,.2f}/GPU-h"
            for r in results if r.break_even_usd_per_gpu_hour is not None]


def confidence_html(confidence: IsoConfidence, names: dict[Candidate, str], note_colour: str) -> str:
    """The shares, the thresholds, the price break-evens and the notes (in ``note_colour``), one
    block of lines: on the page, not in a tooltip (a note can say a share is overstated)."""
    by_label = {c.label: n for c, n in names.items()}
    ranked = sorted(((s, label) for label, s in confidence.shares.items() if s > 0), reverse=True)
    shares = ", ".join(f"<b>{escape(short_name(by_label.get(label, label)))}</b> in {s:.0%}" for s, label in ranked)
    drawn = len(confidence.drawn)
    head = (f"<b>Confidence</b> over {confidence.draws:,} draws of {drawn} assumption{'s' * (drawn != 1)} "
            f"(each uniform over its documented range): cheapest at equal service level "
            f"{shares or 'no candidate in any draw'}")
    if confidence.no_recommendation:
        head += f"; none meets the targets in {confidence.no_recommendation:.0%}"
    lines = [head + "."]
    thresholds = [break_even_text(b, by_label) for b in confidence.break_even]
    if thresholds:
        lines.append("Break-even: " + "; ".join(escape(t) for t in thresholds) + ".")
    elif drawn:
        lines.append("Break-even: no assumption moved alone within its range changes the winner.")
    prices = price_lines(confidence.base, names)
    if prices:
        lines.append("Rental break-even: " + "; ".join(escape(p) for p in prices) + ".")
    lines.extend(f"<span style='color:{note_colour}'>Note: {escape(note)}.</span>" for note in confidence.notes)
    return "<br>".join(lines)
