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
