"""Render resources/icons/gpu-workbench.svg to the PNG sizes desktops look for.

    python packaging/render_icons.py OUT_DIR   ->  OUT_DIR/<N>x<N>/apps/gpu-workbench.png

The SVG stays the one source; the PNGs are build output (hicolor layout, for the .desktop file).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
SVG = Path(__file__).resolve().parent.parent / "resources" / "icons" / "gpu-workbench.svg"


def render(out_dir: Path) -> list[Path]:
    renderer = QSvgRenderer(str(SVG))
    if not renderer.isValid():
        raise SystemExit(f"cannot read {SVG}")
    written = []
    for size in SIZES:
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
        target = out_dir / f"{size}x{size}" / "apps" / "gpu-workbench.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        if not image.save(str(target)):
            raise SystemExit(f"cannot write {target}")
        written.append(target)
    return written


if __name__ == "__main__":
    app = QGuiApplication(sys.argv[:1])
    for path in render(Path(sys.argv[1])):
        print(path)
