"""The window appears with its first figures drawn, not with empty placeholder axes."""

from __future__ import annotations

from workbench.gui.app import show_when_drawn
from workbench.gui.main_window import MainWindow


def test_the_window_shows_once_the_charts_hold_the_first_estimate(qtbot, settings, fake_engine, catalogs, project) -> None:  # type: ignore[no-untyped-def]
    win = MainWindow(settings=settings, engine=fake_engine, catalogs=catalogs, project=project)
    win.ask_before_discard = False
    qtbot.addWidget(win)
    seen: list[tuple[bool, bool]] = []
    win.estimate_shown.connect(lambda *_: seen.append((win.isVisible(), win.memory_chart._estimate is not None)))
    show_when_drawn(win)
    assert not win.isVisible()
    qtbot.waitUntil(win.isVisible, timeout=5000)
    # It was not on screen before the charts had the estimate, and it has the sweep too.
    assert seen and seen[0] == (False, True)
    assert win.sweep_chart.outcome is not None
