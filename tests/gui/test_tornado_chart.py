"""The tornado chart draws sensitivity()'s bars; the sensitivity view shows the current scenario's
tornado, its low / likely / high figures, and says when a swing changes the recommendation."""

from __future__ import annotations

import pytest

from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.engine import sensitivity as S
from workbench.engine.compare import Candidate, Targets, compare
from workbench.gui.charts.tornado_chart import MAX_BARS, TornadoChart, factor_range
from workbench.gui.compare import sensitivity_view
from workbench.gui.compare.compare_view import CompareView
from workbench.gui.compare.sensitivity_view import SensitivityView
from workbench.gui.controller import ProjectController

CANDIDATES = ["h100-sxm", "a100-80gb-sxm", "gh200", "b200"]


@pytest.fixture(scope="module")
def engine():  # type: ignore[no-untyped-def]
    from workbench.pluginhost import default_engine

    return default_engine()


@pytest.fixture
def controller(qtbot, catalogs) -> ProjectController:  # type: ignore[no-untyped-def]
    project = Project(name="Sensitivity", scenarios=(
        Scenario(name="chat", model="llama-3.1-70b", gpu="h100-sxm", num_gpus=4, parallel={"tp": 4}, batch_size=32),
    ))
    return ProjectController(catalogs, project)


@pytest.fixture
def views(qtbot, controller, catalogs, engine):  # type: ignore[no-untyped-def]
    compare_view = CompareView(controller, catalogs, lambda: engine)
    compare_view.set_candidates(CANDIDATES)
    view = SensitivityView(controller, catalogs, lambda: engine, compare_view)
    for widget in (compare_view, view):
        qtbot.addWidget(widget)
    view.resize(1100, 800)
    with qtbot.waitSignal(view.check_finished, timeout=60000):
        view.show()
    yield compare_view, view
    view.shutdown()
    compare_view.shutdown()


def _expected(sens: S.Sensitivity) -> list[tuple[str, float | None, float | None]]:
    return [(b.factor.id, b.at_low, b.at_high) for b in sens.bars if b.swing > 0][:MAX_BARS]


def _assert_drawn(chart: TornadoChart, sens: S.Sensitivity) -> None:
    drawn, expected = chart.drawn(), _expected(sens)
    assert [d[0] for d in drawn] == [e[0] for e in expected]
    for (_, low, high), (ident, at_low, at_high) in zip(drawn, expected):
        assert low == pytest.approx(at_low, rel=1e-9), ident
        assert high == pytest.approx(at_high, rel=1e-9), ident


def test_the_bars_equal_the_sensitivity_swings(qtbot, controller, catalogs, engine) -> None:  # type: ignore[no-untyped-def]
    sens = S.tornado(engine, catalogs.resolve(controller.scenario, controller.project))
    chart = TornadoChart()
    qtbot.addWidget(chart)
    chart.resize(900, 600)
    chart.show()
    chart.update_sensitivity(sens)
    _assert_drawn(chart, sens)
    drawn = chart.drawn()
    swings = [abs(high - low) for _, low, high in drawn]
    assert swings == sorted(swings, reverse=True)  # biggest on top
    assert swings == pytest.approx([b.swing for b in sens.bars if b.swing > 0][:MAX_BARS])
    # Each bar is labelled with its assumption and the range it is swung over; the axis has the unit.
    bars = [b for b in sens.bars if b.swing > 0]
    for label, bar in zip(chart.tick_labels, bars):
        assert label == f"{bar.factor.title} ({factor_range(bar)})"
    price = next(label for label in chart.tick_labels if label.startswith("Rental price"))
    assert "0.7x – 1.3x price" in price
    assert sens.unit in chart.plot.getAxis("bottom").labelText
    # A new sensitivity moves the same two bar items.
    low_item = chart.low_bars
    chart.update_sensitivity(S.tornado(engine, catalogs.resolve(
        controller.scenario.model_copy(update={"batch_size": 4}), controller.project)))
    assert chart.low_bars is low_item and len(chart.drawn()) > 0


def test_the_view_shows_the_current_scenarios_tornado_and_ranges(qtbot, views, controller, catalogs, engine) -> None:  # type: ignore[no-untyped-def]
    _, view = views
    sens = S.tornado(engine, catalogs.resolve(controller.scenario, controller.project))
    _assert_drawn(view.chart, sens)
    assert sens.metric_title in view.header.text()
    assert view.spans.rowCount() == len(sens.spans)
    for row, span in enumerate(sens.spans):
        assert view.spans.item(row, 0).text().startswith(span.title)
        assert view.spans.item(row, 2).text() != "n/a"
    # An edit re-runs it.
    with qtbot.waitSignal(view.check_finished, timeout=60000):
        controller.set_field("batch_size", 8)
    assert view.outcome.sensitivity.base == S.tornado(
        engine, catalogs.resolve(controller.scenario, controller.project)).base


def test_a_note_when_a_swing_changes_the_recommendation(qtbot, views, controller, catalogs, engine, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The check runs by itself only when it looks quick; on a loaded machine it may not. This test is
    # about the note, not about that timing: let it always run by itself.
    import workbench.gui.compare.sensitivity_view as sensitivity_view

    monkeypatch.setattr(sensitivity_view, "AUTO_CHECK_S", float("inf"))
    compare_view, view = views
    scenario = controller.scenario
    resolve = lambda s: catalogs.resolve(s, controller.project)  # noqa: E731
    candidates = [Candidate(c) for c in CANDIDATES]
    best = compare(engine, [scenario], candidates, resolve).recommendation
    row = next(r for r in compare(engine, [scenario], candidates, resolve).rows() if r.candidate == best)
    # A TPOT target just above the pick's: slower memory (the low end of its efficiency) breaks it.
    target_ms = row.values["tpot_s"] * 1000 * 1.02
    with qtbot.waitSignal(view.check_finished, timeout=60000):
        compare_view.set_target("max_tpot_s", target_ms)
    check = view.outcome.check
    assert check is not None and check.recommendation == best.label and check.changes
    assert "The recommendation changes" in view.notes.text()
    changed = {c.factor.id for c in check.changes}
    assert any(label.startswith("⚠") for label in view.chart.tick_labels)
    # Each change is what compare() says with that factor at that end.
    targets = compare_view.targets()
    for change in check.changes:
        swung = compare(engine, [change.factor.apply(scenario, change.at)], candidates, resolve, targets) \
            if change.factor.kind != "price" else None
        if swung is not None:
            pick = None if swung.recommendation is None else swung.recommendation.label
            assert pick == change.recommendation != best.label
    # The engine's comparison tornado flags the same factors.
    _, engine_sens = S.comparison_tornado(engine, [scenario], candidates, resolve, Targets(max_tpot_s=target_ms / 1000))
    flagged = {b.factor.id for b in engine_sens.bars if b.recommendation_changes}
    shown = {b.factor.id for b in view.outcome.sensitivity.bars}
    assert changed == flagged & shown


def test_a_slow_check_waits_for_a_click(qtbot, views, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    _, view = views
    monkeypatch.setattr(sensitivity_view, "AUTO_CHECK_S", 0.0)
    with qtbot.waitSignal(view.check_finished, timeout=60000):
        view.refresh()
    assert view.outcome.check is None and view.outcome.check_estimate_s is not None
    assert view.check_button.isVisible() and "about" in view.check_button.text()
    with qtbot.waitSignal(view.check_finished, timeout=60000):
        view.check_button.click()
    assert view.outcome.check is not None and not view.check_button.isVisible()


# --- every label readable ---------------------------------------------------------------------------


def _axis_label_rects(chart: TornadoChart) -> list[tuple[str, object]]:
    """The factor labels as the left axis draws them, each as the full rectangle of its lines (the
    axis measures 80% of a line's height), in the chart widget's coordinates."""
    from PySide6.QtCore import QPointF, QRectF
    from PySide6.QtGui import QFontMetricsF, QImage, QPainter

    axis = chart.plot.getAxis("left")
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    assert specs is not None
    metrics = QFontMetricsF(chart._tick_font)
    rects = []
    for rect, _, text in specs[2]:
        lines = text.split("\n")
        width = max(metrics.horizontalAdvance(line) for line in lines)
        height = len(lines) * metrics.lineSpacing()
        full = QRectF(rect.right() - width, rect.center().y() - height / 2, width, height)
        scene = axis.mapRectToScene(full)
        top_left = chart.plot_widget.mapTo(chart, chart.plot_widget.mapFromScene(scene.topLeft()))
        rects.append((text, QRectF(QPointF(top_left), scene.size())))
    return rects


def _value_label_rects(chart: TornadoChart) -> list[object]:
    from PySide6.QtCore import QPointF, QRectF

    out = []
    for label in [*chart.value_labels, chart.base_label]:
        if label.isVisible() and label.toPlainText():
            scene = label.sceneBoundingRect()
            top_left = chart.plot_widget.mapTo(chart, chart.plot_widget.mapFromScene(scene.topLeft()))
            out.append(QRectF(QPointF(top_left), scene.size()))
    return out


def _wait_readable(qtbot, chart: TornadoChart) -> None:  # type: ignore[no-untyped-def]
    """The labels are placed after the plot's own layout pass, which a loaded machine runs late:
    wait (up to 3 s) until they are readable, then check once more for the message."""
    def readable() -> bool:
        try:
            _assert_readable(chart)
        except AssertionError:
            return False
        return True

    try:
        qtbot.waitUntil(readable, timeout=3000)
    except Exception:  # noqa: BLE001 - the assertion below says what is wrong
        pass
    _assert_readable(chart)


def _assert_readable(chart: TornadoChart) -> None:
    from PySide6.QtCore import QRectF

    labels = _axis_label_rects(chart)
    # Every drawn bar has its label (pyqtgraph silently drops one wider than the axis).
    assert len(labels) == len(chart.bars) >= 3
    widget = QRectF(chart.rect())
    view = chart.plot.vb.sceneBoundingRect()
    view_rect = QRectF(chart.plot_widget.mapTo(chart, chart.plot_widget.mapFromScene(view.topLeft())), view.size())
    for n, (text, rect) in enumerate(labels):
        assert widget.contains(rect), (text, rect, widget)
        assert rect.right() <= view_rect.left() + 1, text  # left of the bars
        for other_text, other in labels[n + 1:]:
            assert not rect.intersects(other), (text, other_text)
    # The value at each bar end and the likely value: inside the plot, clear of one another.
    values = _value_label_rects(chart)
    assert values
    for n, rect in enumerate(values):
        assert view_rect.adjusted(-1, -1, 1, 1).contains(rect), (rect, view_rect)
        for other in values[n + 1:]:
            assert not rect.intersects(other), (rect, other)


# The Sensitivity tab's size in the window: 1280x800 and 1600x1000, side panels shown and hidden.
@pytest.mark.parametrize("size", [(560, 560), (700, 640), (1240, 600), (1560, 800)])
def test_every_factor_label_is_drawn_inside_the_chart_and_clear_of_the_others(qtbot, views, size) -> None:  # type: ignore[no-untyped-def]
    _, view = views
    view.resize(*size)
    _wait_readable(qtbot, view.chart)
    moving = [b for b in view.outcome.sensitivity.bars if b.swing > 0]
    drawn = len(view.chart.bars)
    assert drawn == min(len(moving), 16) or view.chart.more.text().startswith(f"{len(moving) - drawn} smaller")
    # A long label is wrapped rather than lost.
    for shown, full in zip(view.chart.shown_labels, view.chart.tick_labels):
        assert shown == full or "\n" in shown


def test_labels_follow_the_size_the_chart_gets_after_it_was_drawn(qtbot, controller, catalogs, engine) -> None:  # type: ignore[no-untyped-def]
    """As after a restart: the tornado arrives before the chart has its final size."""
    sens = S.tornado(engine, catalogs.resolve(controller.scenario, controller.project))
    chart = TornadoChart()
    qtbot.addWidget(chart)
    chart.update_sensitivity(sens)  # never shown, no size yet
    for size in ((1200, 700), (430, 420), (800, 900)):
        chart.resize(*size)
        chart.show()
        _wait_readable(qtbot, chart)
    assert len(chart.bars) == min(MAX_BARS, len([b for b in sens.bars if b.swing > 0]))


# --- the metric picker --------------------------------------------------------------------------------


def test_the_metric_picker_changes_what_the_bars_swing(qtbot, views, controller, catalogs, engine) -> None:  # type: ignore[no-untyped-def]
    _, view = views
    resolved = catalogs.resolve(controller.scenario, controller.project)
    natural = S.tornado(engine, resolved)
    assert view.shown_metric() == natural.metric == "cost.usd_per_million_tokens"
    offered = [view.metric_combo.itemData(i) for i in range(view.metric_combo.count())]
    # The headline figures this serving scenario has: no step time or time to train.
    assert offered == [span.key for span in natural.spans]
    assert "performance.ttft_s" in offered and "performance.train_time_days" not in offered
    assert view.metric_combo.currentData() == natural.metric
    chosen: list[str] = []
    view.metric_chosen.connect(chosen.append)
    with qtbot.waitSignal(view.check_finished, timeout=60000):
        view.metric_combo.setCurrentIndex(view.metric_combo.findData("performance.ttft_s"))
        view.metric_combo.activated.emit(view.metric_combo.currentIndex())
    assert chosen == ["performance.ttft_s"]
    ttft = S.tornado(engine, resolved, "performance.ttft_s")
    assert view.outcome.sensitivity.metric == "performance.ttft_s"
    _assert_drawn(view.chart, ttft)
    assert view.chart.drawn() != [(b.factor.id, b.at_low, b.at_high) for b in natural.bars if b.swing > 0][:MAX_BARS]
    assert "TTFT" in view.header.text() or ttft.metric_title in view.header.text()
    assert view.chart.plot.getAxis("bottom").labelText.endswith("(s)")
    # The choice holds through an edit.
    with qtbot.waitSignal(view.check_finished, timeout=60000):
        controller.set_field("batch_size", 8)
    assert view.outcome.sensitivity.metric == "performance.ttft_s"


def test_a_remembered_metric_the_scenario_lacks_falls_back_to_its_headline(qtbot, views) -> None:  # type: ignore[no-untyped-def]
    _, view = views
    view.set_preferred_metric("performance.train_time_days")  # a serving scenario has no time to train
    with qtbot.waitSignal(view.check_finished, timeout=60000):
        view.refresh()
    assert view.outcome.sensitivity.metric == "cost.usd_per_million_tokens"
    assert view.preferred_metric == "performance.train_time_days"  # kept for a training scenario
    view.set_preferred_metric("no.such.key")
    assert view.preferred_metric == ""


def test_the_metric_choice_is_kept_in_the_settings_across_a_restart(qtbot, settings, fake_engine, catalogs, project) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtCore import QSettings

    from workbench.gui.main_window import MainWindow

    def open_window() -> MainWindow:
        again = QSettings(settings.fileName(), QSettings.Format.IniFormat)
        win = MainWindow(settings=again, engine=fake_engine, catalogs=catalogs, project=project)
        win.ask_before_discard = False
        qtbot.addWidget(win)
        return win

    first = open_window()
    assert first.sensitivity_view.preferred_metric == ""
    with qtbot.waitSignal(first.sensitivity_view.check_finished, timeout=20000):
        assert first.sensitivity_view.pick_metric("performance.tpot_s")
    first.settings.sync()
    first.close()
    second = open_window()
    assert second.sensitivity_view.preferred_metric == "performance.tpot_s"
    second.close()


@pytest.mark.parametrize("size", [(1280, 800), (1600, 1000)])
def test_every_label_is_readable_in_the_window_with_and_without_the_side_panels(qtbot, settings, catalogs, engine,  # type: ignore[no-untyped-def]
                                                                                 controller, size) -> None:
    from workbench.gui.main_window import MainWindow

    win = MainWindow(settings=settings, engine=engine, catalogs=catalogs, project=controller.project)
    win.ask_before_discard = False
    qtbot.addWidget(win)
    win.resize(*size)
    win.show()
    qtbot.waitExposed(win)
    view = win.sensitivity_view
    with qtbot.waitSignal(view.sensitivity_shown, timeout=60000):
        win.tabs.show_page("sensitivity")
    # The side panels are shown (in a window under 1500 wide Model and Hardware are tabs beside Scenario).
    assert win.docks["scenario_dock"].isVisible() and win.docks["results_dock"].isVisible()
    _wait_readable(qtbot, view.chart)
    win.tabs.focus_button.click()  # hide the side panels: a wider chart
    qtbot.waitUntil(lambda: not win.docks["scenario_dock"].isVisible(), timeout=3000)
    _wait_readable(qtbot, view.chart)
    win.tabs.focus_button.click()
    view.shutdown()
