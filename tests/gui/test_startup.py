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


def test_a_window_closed_before_its_first_figures_stays_closed(qtbot, settings, fake_engine, catalogs, project,
                                                                monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import workbench.gui.app as app_module

    monkeypatch.setattr(app_module, "FIRST_PAINT_WAIT_MS", 50)
    win = MainWindow(settings=settings, engine=fake_engine, catalogs=catalogs, project=project)
    win.ask_before_discard = False
    qtbot.addWidget(win)
    show_when_drawn(win)
    win.show()  # shown early (a recovery prompt, a user), then closed before the figures arrive
    win.close()
    qtbot.wait(300)  # the fallback timer (50 ms here) has fired
    assert not win.isVisible()
