"""Place chart labels in pixels so that none covers another, a line or a marker, and none leaves
the plot.

Each label offers candidate rectangles in its order of preference (on its line, beside its point
...); labels are placed one after another, most important first, each at its first candidate
that lies inside the plot and touches nothing placed before it (nor comes within a few pixels of
it) nor any obstacle. Rectangles
(markers, labels) are hard obstacles; line segments are soft: where every candidate crosses a
line, a label still goes where it covers no marker or label (its veil keeps the text readable over
the line). When nothing is free, a secondary label is left out and any other takes the candidate
that overlaps least (a crowded tiny chart still shows its main labels). A label may ignore obstacles of its own (the line it sits on).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtCore import QLineF, QPointF, QRectF


@dataclass(frozen=True)
class Segment:
    """A drawn line the labels keep off (a ceiling, the bandwidth slope)."""

    start: QPointF
    end: QPointF


Obstacle = QRectF | Segment

#: Pixels kept free beside and above/below a placed label: two labels that merely touch read as one
#: ("decoderidge 295").
LABEL_PAD_X, LABEL_PAD_Y = 3.0, 0.0


def hits(rect: QRectF, obstacle: Obstacle) -> bool:
    """``rect`` touches ``obstacle`` (a rectangle or a line segment)."""
    if isinstance(obstacle, QRectF):
        return rect.intersects(obstacle)
    line = QLineF(obstacle.start, obstacle.end)
    if rect.contains(line.p1()) or rect.contains(line.p2()):
        return True
    edges = (QLineF(rect.topLeft(), rect.topRight()), QLineF(rect.topRight(), rect.bottomRight()),
             QLineF(rect.bottomRight(), rect.bottomLeft()), QLineF(rect.bottomLeft(), rect.topLeft()))
    return any(line.intersects(edge)[0] == QLineF.IntersectionType.BoundedIntersection for edge in edges)


def _overlap(rect: QRectF, others: Sequence[Obstacle]) -> float:
    total = 0.0
    for other in others:
        if isinstance(other, QRectF):
            common = rect.intersected(other)
            total += common.width() * common.height()
        elif hits(rect, other):
            total += rect.height() * 4  # a line through a label: as bad as a small overlap
    return total


def place(area: QRectF, candidates: Sequence[Sequence[QRectF]], obstacles: Sequence[Obstacle] = (),
          own: Sequence[Sequence[int]] = (), optional: Sequence[int] = ()) -> list[int]:
    """The index of the chosen candidate of each label (``candidates[i]``: label i's rectangles,
    preferred first; ``own[i]``: indices of the obstacles label i may cover, such as the line it
    names). A label in ``optional`` (a secondary one) that has no candidate clear of the labels
    and markers is left out: -1."""
    chosen_indices: list[int] = []
    placed: list[QRectF] = []
    for n, options in enumerate(candidates):
        skip = set(own[n]) if n < len(own) else set()
        mine = [o for i, o in enumerate(obstacles) if i not in skip]
        hard = [*placed, *(o for o in mine if isinstance(o, QRectF))]
        inside = [k for k, r in enumerate(options) if area.contains(r)] or list(range(len(options)))
        clear = [k for k in inside if not any(options[k].intersects(h) for h in hard)]
        free = [k for k in clear if not any(hits(options[k], o) for o in mine if isinstance(o, Segment))]
        if free or clear:
            chosen = (free or clear)[0]
        elif n in optional:
            chosen_indices.append(-1)
            continue
        else:
            chosen = min(inside, key=lambda k: _overlap(options[k], [*placed, *mine]))
        placed.append(options[chosen].adjusted(-LABEL_PAD_X, -LABEL_PAD_Y, LABEL_PAD_X, LABEL_PAD_Y))
        chosen_indices.append(chosen)
    return chosen_indices


def around_point(x: float, y: float, width: float, height: float, gap: float) -> list[QRectF]:
    """Rectangles of ``width`` x ``height`` beside a point, ``gap`` pixels off its centre: right
    below, right above, left above, left below, below, above."""
    return [
        QRectF(x + gap, y + gap * 0.3, width, height),
        QRectF(x + gap, y - gap * 0.3 - height, width, height),
        QRectF(x - gap - width, y - gap * 0.3 - height, width, height),
        QRectF(x - gap - width, y + gap * 0.3, width, height),
        QRectF(x - width / 2, y + gap, width, height),
        QRectF(x - width / 2, y - gap - height, width, height),
    ]
