"""Colours: chart background and text follow the system palette (light or dark).

Series colours are the Okabe-Ito set (distinguishable with the common colour-vision deficiencies)
and read on both light and dark backgrounds.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QColor, QGuiApplication, QPalette

#: Memory components, in stacking order (bottom first), with their display names and colours.
#: ``recurrent_state`` (the fixed per-sequence state of state-space / linear-attention layers) is
#: listed in legends only when a model has some (:data:`OPTIONAL_COMPONENTS`).
MEMORY_COMPONENTS: tuple[tuple[str, str, str], ...] = (
    ("weights", "Weights", "#0072B2"),
    ("gradients", "Gradients", "#E69F00"),
    ("optimizer_states", "Optimizer states", "#CC79A7"),
    ("activations", "Activations", "#009E73"),
    ("kv_cache", "KV cache", "#56B4E9"),
    ("recurrent_state", "Recurrent state", "#7B5EA7"),
    ("overhead", "Overhead", "#999999"),
)

OPTIONAL_COMPONENTS = frozenset({"recurrent_state"})

PHASE_COLOURS = {"prefill": "#D55E00", "decode": "#0072B2", "training": "#009E73"}
OK_COLOUR = "#1b9e4b"
BAD_COLOUR = "#d62728"
WARN_COLOUR = "#e69f00"
SERIES_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#999999")


def palette() -> QPalette:
    return QGuiApplication.palette()


def is_dark(pal: QPalette | None = None) -> bool:
    pal = pal or palette()
    return pal.color(QPalette.ColorRole.Window).lightness() < 128


def chart_background(pal: QPalette | None = None) -> QColor:
    return (pal or palette()).color(QPalette.ColorRole.Base)


def chart_foreground(pal: QPalette | None = None) -> QColor:
    return (pal or palette()).color(QPalette.ColorRole.Text)


def muted(pal: QPalette | None = None) -> QColor:
    colour = QColor(chart_foreground(pal))
    colour.setAlphaF(0.55)
    return colour


def configure_pyqtgraph() -> None:
    """Defaults for plots created from now on (existing plots are restyled by :func:`style_plot`)."""
    pg.setConfigOptions(antialias=True, background=chart_background(), foreground=chart_foreground())


def style_plot(widget: pg.GraphicsView, plot_items: list[pg.PlotItem]) -> None:
    """Apply the current palette to a plot widget and its plots (after a light/dark switch)."""
    fg = chart_foreground()
    widget.setBackground(chart_background())
    for plot in plot_items:
        for name in ("left", "bottom", "right", "top"):
            axis = plot.getAxis(name)
            if axis is None:
                continue
            axis.setPen(pg.mkPen(muted()))
            axis.setTextPen(pg.mkPen(fg))
            label_text = axis.labelText
            if label_text:
                axis.setLabel(label_text, units=axis.labelUnits or None, color=fg.name())
        title = plot.titleLabel
        if title is not None and title.text:
            title.setText(title.text, color=fg.name())
