"""The real app under Xvfb (a real X server, the xcb platform): screenshots of several states.

Saved to ``$WORKBENCH_SCREENSHOT_DIR`` (or a temp folder). Skipped where Xvfb is not installed
(``apt-get install -y --no-install-recommends xvfb libxcb-icccm4 libxcb-keysyms1``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QImage
from xvfb_server import xvfb

DRIVER = Path(__file__).resolve().parents[1] / "gui_screenshots.py"
STATES = ("fits", "out-of-memory", "roofline-training", "moe-serving", "hybrid-state", "kernels", "compare", "sensitivity",
          "sensitivity-no-panels", "dark")


@pytest.fixture
def xvfb_display():  # type: ignore[no-untyped-def]
    with xvfb("1600x1000x24") as number:
        yield number


def _distinct_colours(image: QImage) -> int:
    step = max(1, image.width() // 256)  # dense enough to meet the anti-aliased text of any real window
    return len({image.pixel(x, y) for x in range(0, image.width(), step) for y in range(0, image.height(), step)})


@pytest.mark.slow
def test_screenshots_of_the_real_window(xvfb_display: str, tmp_path: Path) -> None:
    out = Path(os.environ.get("WORKBENCH_SCREENSHOT_DIR") or tmp_path / "screenshots")
    env = {**os.environ, "DISPLAY": xvfb_display, "QT_QPA_PLATFORM": "xcb",
           "WORKBENCH_USER_DIR": str(tmp_path / "user")}
    result = subprocess.run([sys.executable, str(DRIVER), str(out)], env=env, capture_output=True, text=True,
                            timeout=180, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((out / "screenshots.json").read_text())
    assert report["files"] == [f"{state}.png" for state in STATES]
    for state in STATES:
        image = QImage(str(out / f"{state}.png"))
        assert image.width() >= 1500 and image.height() >= 900, state
        assert _distinct_colours(image) > 50, f"{state}.png looks blank"
    dark = QImage(str(out / "dark.png"))
    light = QImage(str(out / "fits.png"))
    assert QImage.pixelColor(dark, 5, dark.height() // 2).lightness() < QImage.pixelColor(
        light, 5, light.height() // 2).lightness()
