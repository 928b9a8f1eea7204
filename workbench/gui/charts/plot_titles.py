"""A plot's title and axis titles, kept to the room the plot has.

pyqtgraph gives a title a minimum width of its whole text: in a narrow chart the plot then grows
wider than its view and its right part (the title's end, the labels near the right edge, half the
axis title) is cut off by the view's edge. An axis title wider than its axis spills past both ends
of it. Here each title has a few forms, longest first ("Arithmetic intensity (FLOP/byte)",
"FLOP/byte"); whenever the plot area changes size the longest form that fits is shown, else the
shortest shortened with "…", and the whole text is the tooltip. The title never asks the layout for
more width than the plot area has.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetricsF

#: Pixels a text item adds around its text (its document's margins), plus a little air.
_SLACK = 10.0


def pick(forms: tuple[str, ...], metrics: QFontMetricsF, room: float) -> str:
    """The longest of ``forms`` (longest first) whose text fits ``room`` pixels, else the last one
    shortened with "…" to fit."""
    for text in forms:
        if metrics.horizontalAdvance(text) + _SLACK <= room:
            return text
    return metrics.elidedText(forms[-1], Qt.TextElideMode.ElideRight, max(room - _SLACK, 0.0))


class PlotTitles:
    def __init__(self, plot: pg.PlotItem) -> None:
        self.plot = plot
        self._axes: dict[str, tuple[str, ...]] = {}
        self._title: tuple[str, ...] = ()
        self._title_style: dict[str, str] = {}
        plot.getViewBox().sigResized.connect(lambda *_: self.fit())

    def set_axis(self, side: str, *forms: str) -> None:
        """The title of the axis on ``side``, as ``forms`` (longest first)."""
        self._axes[side] = tuple(forms)
        self.plot.showLabel(side, True)
        self.fit()

    def set_title(self, *forms: str, color: str = "", size: str = "9pt") -> None:
        self._title = tuple(forms)
        self._title_style = {"size": size, **({"color": color} if color else {})}
        self.fit()

    def shown(self, side: str) -> str:
        """The text the axis on ``side`` shows now ("title": the plot's title)."""
        return self.plot.titleLabel.text if side == "title" else self.plot.getAxis(side).labelText

    def _laid_out(self) -> bool:
        """The plot is on screen with its final size (before that its view box is a default 100 px)."""
        scene = self.plot.scene()
        return scene is not None and any(view.isVisible() for view in scene.views())

    def fit(self) -> None:
        box = self.plot.getViewBox()
        shown = self._laid_out()
        for side, forms in self._axes.items():
            axis = self.plot.getAxis(side)
            room = box.width() if side in ("bottom", "top") else box.height()
            text = pick(forms, QFontMetricsF(axis.label.font()), room) if shown and room > 0 else forms[0]
            if axis.labelText != text:
                axis.setLabel(text)  # keeps the axis's label style (its colour)
            axis.setToolTip(forms[0] if text != forms[0] else "")
        if self._title:
            font = QFont()
            font.setPointSizeF(float(self._title_style["size"].removesuffix("pt")))
            room = box.width()
            text = pick(self._title, QFontMetricsF(font), room) if shown and room > 0 else self._title[0]
            label = self.plot.titleLabel
            if label.text != text or not label.isVisible():
                self.plot.setTitle(text, **self._title_style)
            # Its whole text would be the title's minimum width: the plot would outgrow its view.
            label.setMinimumWidth(0)
            label.setToolTip(self._title[0] if text != self._title[0] else "")
