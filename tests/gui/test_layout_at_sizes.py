"""The real window under Xvfb on three screens (1280x800, 1920x1080, 2560x1440), each at 100% and
150% scaling, on every tab: no value label cut (shortened labels carry their text as a tooltip), no
wrapped label cut at its bottom, no widgets a layout stacks on each other, no table column behind a
scrollbar, no table scrolling sideways (catalog tables keep their key columns in view), no cell
shortened without a tooltip, and in every chart: the plot inside its view (at 1280x800 and 150%
the roofline's whole title made its plot 30 px wider than its view, cutting the title, the ceiling
labels and the axis title), titles, axis titles, legends and labels uncut, and a plot area of at
least ``MIN_PLOT_AREA`` (the memory stack's legend once left its bars 48 px). The checks are in
layout_check.py; layout_shots.py drives the app and saves a PNG per tab (to
``$WORKBENCH_SCREENSHOT_DIR/layout`` when set).

Skipped where Xvfb is not installed (CI has it: ``apt-get install -y --no-install-recommends xvfb
libxcb-icccm4 libxcb-keysyms1``).
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

DRIVER = Path(__file__).resolve().parent / "layout_shots.py"
SCREENS = ((1280, 800), (1920, 1080), (2560, 1440))
SCALES = ("1", "1.5")
TABS = ("charts", "out-of-memory", "kernels", "compare", "compare-confidence", "compare-pareto", "compare-iso",
        "sensitivity")


@pytest.fixture(scope="module")
def display():  # type: ignore[no-untyped-def]
    with xvfb("2560x1440x24") as number:
        yield number


@pytest.mark.slow
def test_every_tab_is_readable_at_every_screen_size_and_scale(display: str, tmp_path: Path) -> None:
    root = Path(os.environ["WORKBENCH_SCREENSHOT_DIR"]) / "layout" if os.environ.get(
        "WORKBENCH_SCREENSHOT_DIR") else tmp_path
    runs = [(w, h, scale) for w, h in SCREENS for scale in SCALES]
    results = {}
    # Two at a time: each run is mostly waiting on the estimate and the paint.
    for pair in (runs[i:i + 2] for i in range(0, len(runs), 2)):
        started = []
        for w, h, scale in pair:
            out = root / f"{w}x{h}@{scale}"
            env = {**os.environ, "DISPLAY": display, "QT_QPA_PLATFORM": "xcb", "QT_SCALE_FACTOR": scale,
                   "WORKBENCH_USER_DIR": str(out / "user")}
            started.append((out, (w, h, scale), subprocess.Popen(
                [sys.executable, str(DRIVER), str(out), f"{w}x{h}"], env=env,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
        for out, key, process in started:
            log, _ = process.communicate(timeout=120)
            assert process.returncode == 0, log[-3000:]
            results[key] = json.loads((out / "layout.json").read_text())
            for tab in TABS:
                image = QImage(str(out / f"{tab}.png"))
                assert not image.isNull(), (key, tab)
    for (w, h, scale), report in results.items():
        assert "error" not in report, report
        assert list(report["shots"]) == list(TABS)
        logical = [round(w / float(scale)), round(h / float(scale))]
        assert report["logical"] == logical
        # The window fits the screen: its minimum size is not larger than the screen.
        for tab in TABS:
            assert report["window"][tab] == logical, (w, h, scale, tab, report["window"][tab])
    problems = {f"{w}x{h} at {float(scale):.0%} {tab}": found
                for (w, h, scale), report in results.items() for tab, found in report["shots"].items() if found}
    assert not problems, json.dumps(problems, indent=1)
