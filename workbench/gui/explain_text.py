"""How a result reads in the window: its value as text, and its explanation as a tooltip.

The same :class:`Quantity` the CLI's ``--explain`` prints: label, value, the formula with the
values substituted (rendered only when someone hovers), the assumptions it used.
"""

from __future__ import annotations

from html import escape

from workbench.engine.estimate import Estimate
from workbench.engine.quantity import Quantity
from workbench.explain import format_quantity
from workbench.report import numbers

NA = "n/a"


def quantity_text(quantity: Quantity) -> str:
    """As the CLI prints it, except plain floats: grouped digits instead of exponents, fractions in %."""
    value, unit = quantity.value, quantity.unit
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        # The one number policy (workbench.report.numbers), as in Compare and the PDF.
        if unit == "fraction":
            return numbers.percent(value)
        if unit == "days":
            return numbers.days(value)
        if unit.startswith("USD"):
            per = unit[3:]
            return numbers.money(value) + {"": "", "/Mtoken": " per M tokens", "/GPU-h": " per GPU-hour"}.get(per, per)
        if isinstance(value, float) and unit not in ("B", "B/token", "FLOP", "s", "count", "params", "parameters"):
            return f"{numbers.number(value)} {unit}".rstrip()
    try:
        return format_quantity(quantity)
    except (TypeError, ValueError):
        return str(value)


def value_text(estimate: Estimate | None, key: str) -> str:
    quantity = estimate.values.get(key) if estimate is not None else None
    if quantity is None or quantity.value is None:
        return NA
    return quantity_text(quantity)


def number(estimate: Estimate | None, key: str) -> float | None:
    """The value of ``key`` as a float, or None when missing or not numeric."""
    if estimate is None:
        return None
    value = estimate.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def tooltip_html(estimate: Estimate | None, key: str, extra: str = "") -> str:
    """Label, value, formula with values, assumptions (with their values), note."""
    quantity = estimate.values.get(key) if estimate is not None else None
    if quantity is None:
        return (f"<b>{escape(key)}</b><br>Not estimated: no loaded estimator produced it, or the one that "
                "does failed (see the results panel).")
    return quantity_html(quantity, key, estimate, extra)


def quantity_html(quantity: Quantity, key: str, estimate: Estimate | None = None, extra: str = "") -> str:
    parts = [f"<b>{escape(quantity.label or key)}</b>: {escape(quantity_text(quantity))}"]
    if extra:
        parts.append(extra)
    try:
        formula = quantity.formula
    except Exception as exc:  # noqa: BLE001 - a broken formula must not break the tooltip
        formula = f"(formula unavailable: {exc})"
    if formula:
        parts.append(f"<span style='font-family:monospace'>= {escape(formula)}</span>")
    if quantity.assumptions:
        rows = []
        for ident in quantity.assumptions:
            shown = escape(ident)
            if estimate is not None:
                try:
                    definition = estimate.assumptions.definition(ident)
                    value = estimate.assumptions[ident]
                    shown = f"{escape(definition.title)} = {value:g} {escape(definition.unit)} <i>({escape(ident)})</i>"
                except (KeyError, TypeError, ValueError):
                    pass
            rows.append(f"&bull; {shown}")
        parts.append("Assumes:<br>" + "<br>".join(rows))
    if quantity.note:
        parts.append(f"<i>{escape(quantity.note)}</i>")
    parts.append(f"<span style='color:gray'>key: {escape(key)}</span>")
    return "<br>".join(parts)
