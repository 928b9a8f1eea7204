"""One number format for every place a figure is read: the Results panel, the Compare table and
chart, and the PDF report.

- Plain numbers: three significant digits, never an exponent; from 1,000 up whole numbers with
  thousands separators (0.0213, 1.27, 38.4, 412, 3,400, 12,345). ``compact=True`` (table cells,
  bar labels) writes a million and more with a suffix: 6.54M, 1.2B.
- Money: two decimals below $100 ($0.22, $2.10, $99.50); under ten cents two significant digits,
  so a small rate is never rounded to $0.00 ($0.036, $0.0084); whole dollars from $100 ($1,250);
  ``compact=True``: $26K from $10,000, $1.23M from a million.
- Durations: ``seconds()``: 850 µs, 38.2 ms, 4.10 s, 2.5 min, 3.2 h, 0.81 days -> 19.5 h.
- Shares: ``percent()``: 33%, 4.5%, 0.12%.
"""

from __future__ import annotations

import math

_SUFFIXES = ((1e12, "T"), (1e9, "B"), (1e6, "M"))


def number(value: float, compact: bool = False) -> str:
    if not math.isfinite(value):
        return str(value)
    size = abs(value)
    if compact:
        for scale, suffix in _SUFFIXES:
            if size >= scale:
                return f"{_sig3(value / scale)}{suffix}"
    if size >= 1000:
        return f"{value:,.0f}"
    return _sig3(value)


def _sig3(value: float) -> str:
    """Three significant digits, no exponent: 0.0213, 1.27, 38.4, 412 (999.7 -> 1,000)."""
    size = abs(value)
    if size == 0:
        return "0"
    if size >= 999.5:
        return f"{value:,.0f}"
    decimals = max(0, 2 - math.floor(math.log10(size)))
    text = f"{value:.{decimals}f}"
    if abs(float(text)) >= 10 ** (3 - decimals) and decimals > 0:  # 9.996 rounds up to 10.00
        text = f"{value:.{decimals - 1}f}"
    return text


def money(value: float, compact: bool = False) -> str:
    if not math.isfinite(value):
        return str(value)
    sign, size = ("-" if value < 0 else ""), abs(value)
    if compact and size >= 1e6:
        return f"{sign}${_sig3(size / 1e6)}M"
    if compact and size >= 1e4:
        return f"{sign}${size / 1e3:,.0f}K"
    if size >= 100:
        return f"{sign}${size:,.0f}"
    if size >= 0.1 or size == 0:
        return f"{sign}${size:.2f}"
    decimals = 1 - math.floor(math.log10(size))  # two significant digits
    return f"{sign}${size:.{decimals}f}"


def seconds(value: float) -> str:
    """A duration in the unit it reads best in."""
    size = abs(value)
    if size < 1e-3:
        return f"{_sig3(value * 1e6)} µs"
    if size < 1:
        return f"{_sig3(value * 1e3)} ms"
    if size < 120:
        return f"{_sig3(value)} s"
    if size < 2 * 3600:
        return f"{_sig3(value / 60)} min"
    if size < 2 * 86400:
        return f"{_sig3(value / 3600)} h"
    return f"{number(value / 86400)} days"


def days(value: float) -> str:
    return seconds(value * 86400)


def percent(fraction: float) -> str:
    value = 100 * fraction
    if abs(value) >= 10 or value == 0:
        return f"{value:.0f}%"
    return f"{value:.1f}%" if abs(value) >= 1 else f"{value:.2g}%"
