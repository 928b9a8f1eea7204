"""Value axes whose tick labels stay short: 50k, 1.5M, 0.25.

pyqtgraph prints a tick as the full number ("150000"); on a narrow plot the labels of large values
run into one another ("50000100000150000"). With its SI prefix turned off (a unit like tokens/s
must not turn into "ktokens/s" in the axis title) nothing shortens them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pyqtgraph as pg

_SUFFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def compact(value: float, spacing: float) -> str:
    """A tick label: ``spacing`` (the distance between ticks) decides the decimals to keep."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    for scale, suffix in _SUFFIXES:
        if magnitude >= scale:
            return _plain(value / scale, spacing / scale) + suffix
    return _plain(value, spacing)


def _plain(value: float, spacing: float) -> str:
    # Enough decimals to tell neighbouring ticks apart, no trailing zeros.
    decimals = max(0, -math.floor(math.log10(spacing))) if spacing > 0 else 0
    text = f"{value:,.{min(decimals, 6)}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


class CompactAxis(pg.AxisItem):
    """A linear axis with :func:`compact` tick labels."""

    def __init__(self, orientation: str, **kwargs: object) -> None:
        super().__init__(orientation, **kwargs)  # type: ignore[arg-type]
        self.enableAutoSIPrefix(False)

    def tickStrings(self, values: Sequence[float], scale: float, spacing: float) -> list[str]:  # noqa: N802
        return [compact(v * scale, spacing * scale) for v in values]


class LogCompactAxis(pg.AxisItem):
    """An axis of a plot in log mode, labelled 20, 50, 100, 1k rather than pyqtgraph's "2·10¹": the
    1-2-5 ticks of each decade get a label, the others stay unlabelled grid lines (nine labels a
    decade run into one another). A range too short for any of them labels every tick."""

    def __init__(self, orientation: str, **kwargs: object) -> None:
        super().__init__(orientation, **kwargs)  # type: ignore[arg-type]
        self.enableAutoSIPrefix(False)

    def logTickStrings(self, values: Sequence[float], scale: float, spacing: float) -> list[str]:  # noqa: N802
        plain = [10 ** v * scale for v in values]
        labelled = [_is_125(v) for v in plain]
        if not any(labelled):
            labelled = [True] * len(plain)
        return [compact(v, v / 10) if keep else "" for v, keep in zip(plain, labelled)]


def _is_125(value: float) -> bool:
    """Whether ``value`` is 1, 2 or 5 times a power of ten."""
    if value <= 0:
        return False
    mantissa = value / 10 ** math.floor(math.log10(value) + 1e-9)
    return any(abs(mantissa - m) < 1e-6 * m for m in (1.0, 2.0, 5.0))
