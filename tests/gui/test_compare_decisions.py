"""The Compare tab's decision aids against the engine functions they show: the confidence column
equals decision_confidence() for the same inputs (and Cancel leaves nothing stale), the Pareto
page's hover names the configuration under the mouse and a click applies it as one undoable edit,
and the equal-service-level page shows iso_sla()'s ranking and winner. Real engine, small
candidate sets, few draws."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtTest import QTest

from workbench.catalog.resolve import resolve_scenario
from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.engine.compare import Candidate
from workbench.engine.confidence import decision_confidence
from workbench.engine.iso_sla import iso_sla
from workbench.engine.pareto import pareto_fronts
from workbench.gui.compare.compare_table import COLUMN_INDEX
from workbench.gui.compare.compare_view import CompareView
from workbench.gui.compare.pareto_view import fronts_csv
from workbench.gui.controller import ProjectController

#: Candidates whose ranking the assumptions' ranges split (about 80/20 over 200 draws).
SPLIT = ["l40s", "a100-80gb-sxm", "h100-pcie", "rtx-4090"]


@pytest.fixture(scope="module")
def engine():  # type: ignore[no-untyped-def]
    from workbench.pluginhost import default_engine

    return default_engine()


@pytest.fixture
def project() -> Project:
    return Project(name="Decide", scenarios=(
        Scenario(name="chat", model="llama-3.1-8b", gpu="h100-sxm", batch_size=16),))


@pytest.fixture
def view(qtbot, catalogs, engine, project):  # type: ignore[no-untyped-def]
    controller = ProjectController(catalogs, project)
    widget = CompareView(controller, catalogs, lambda: engine)
    qtbot.addWidget(widget)
    widget.resize(1400, 900)
    widget.set_candidates(SPLIT)
    with qtbot.waitSignal(widget.comparison_shown, timeout=20000):
        widget.show()
    qtbot.waitUntil(lambda: not widget.runner.is_busy(), timeout=20000)
    yield widget
    widget.shutdown()


def _resolver(project: Project):  # type: ignore[no-untyped-def]
    return lambda s: resolve_scenario(s, project)


def test_the_confidence_column_shows_decision_confidence_shares(qtbot, view, engine, project) -> None:  # type: ignore[no-untyped-def]
    assert view.table.isColumnHidden(COLUMN_INDEX["confidence"])  # off by default
    with qtbot.waitSignal(view.confidence_runner.finished, timeout=30000):
        view.set_confidence_draws(200)
    ref = decision_confidence(engine, list(view.scenarios()), [Candidate(i) for i in SPLIT], _resolver(project),
                              view.targets(), draws=200)
    assert 0 < max(ref.shares.values()) < 1  # a real split, not one candidate in every draw
    assert not view.table.isColumnHidden(COLUMN_INDEX["confidence"])
    model = view.table_model
    shown = {model.result(row).candidate.label: model.share(row) for row in range(model.rowCount())}
    assert shown == pytest.approx(ref.shares)
    for row in range(model.rowCount()):
        text = model.index(row, COLUMN_INDEX["confidence"]).data()
        assert text == f"{ref.shares[model.result(row).candidate.label]:.0%}"
    # The line beside the ranking names the most frequent winner with its share.
    best = max(ref.shares, key=ref.shares.__getitem__)
    assert f"cheapest in {ref.shares[best]:.0%}" in view.confidence_row.label.text()
    assert "RTX 4090" in view.confidence_row.label.text() or best != "rtx-4090"

    # An edit of the inputs drops the shares (the new table never shows the old ones) and computes
    # them again for the new comparison.
    on_new_table = []
    view.comparison_shown.connect(lambda _g: on_new_table.append(view.table_model.shares))
    with qtbot.waitSignal(view.confidence_runner.finished, timeout=30000):
        view.set_candidates(SPLIT[1:])
    assert on_new_table == [None]
    assert set(view.table_model.shares) == set(SPLIT[1:])


def test_cancel_stops_the_confidence_and_leaves_no_stale_result(qtbot, view) -> None:  # type: ignore[no-untyped-def]
    progress = []
    view.confidence_runner.progress.connect(lambda _g, value: progress.append(value))
    view.set_confidence_draws(1000)
    assert view.confidence_row.cancel_button.isVisible()
    qtbot.waitUntil(lambda: bool(progress), timeout=20000)
    qtbot.mouseClick(view.confidence_row.cancel_button, Qt.MouseButton.LeftButton)
    assert not view.confidence_runner.is_busy()
    assert not view.confidence_row.cancel_button.isVisible()
    assert view.confidence_draws() == 0  # cancelled: off, and said so
    assert "Cancelled" in view.confidence_row.label.text()
    # The search stops at its next progress step instead of running its 1,000 draws out.
    assert view.confidence_runner.pool.waitForDone(5000)
    qtbot.wait(100)  # any queued result would arrive now
    assert view.confidence is None and view.table_model.shares is None
    assert view.table.isColumnHidden(COLUMN_INDEX["confidence"])


def _show_pareto(qtbot, view):  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(view.pareto_view.fronts_shown, timeout=30000,
                          check_params_cb=lambda generation: generation > 0):
        view.result_tabs.setCurrentWidget(view.pareto_view)
    return view.pareto_view


def test_pareto_fronts_match_the_engine_and_hover_names_the_configuration(qtbot, view, engine, project) -> None:  # type: ignore[no-untyped-def]
    page = _show_pareto(qtbot, view)
    ranked = [r.candidate for r in view.chart_scenario().results]
    ref = pareto_fronts(engine, project.scenarios[0], ranked, _resolver(project))
    assert [(f.candidate, f.throughput, f.cost) for f in page.fronts] == [(f.candidate, f.throughput, f.cost)
                                                                          for f in ref]
    chart = page.chart
    front = next(f for f in page.fronts if len(f.throughput) >= 2)
    point = front.throughput[1]
    scene = chart.plot_widget.scene()
    at = chart.scene_pos_of(front.candidate, point)
    # The scene's mouse-move signal, as a real move over the plot emits it (a few pixels off the marker).
    scene.sigMouseMoved.emit(QPointF(at.x() + 3, at.y() - 2))
    assert chart.hovered == (front.candidate, point)
    text = chart.readout.text()
    name = page._inputs[3][front.candidate]
    assert text.startswith(f"{name}: TP {point.tp}, batch {point.batch}")
    assert "tokens/s per GPU" in text and "TPOT" in text and "per M tokens" in text
    assert chart.plot_widget.toolTip() == text
    # Away from every marker: no configuration named.
    scene.sigMouseMoved.emit(chart.plot.getViewBox().sceneBoundingRect().topLeft())
    assert chart.hovered is None and chart.plot_widget.toolTip() == ""
    # The other front: the markers move to $/M tokens against TPOT (ms).
    chart.set_front("cost")
    assert chart.titles.shown("bottom").endswith("(ms)")
    assert {(c, p) for c, p, _, _ in chart.drawn} >= {(f.candidate, p) for f in page.fronts for p in f.cost}
    csv_text = fronts_csv("chat", page.fronts)
    assert csv_text.count("\n") == 1 + sum(len(f.points) for f in page.fronts)


def test_clicking_a_point_applies_it_and_undo_restores_the_scenario(qtbot, view, engine, project) -> None:  # type: ignore[no-untyped-def]
    page = _show_pareto(qtbot, view)
    controller = view.controller
    before = controller.project
    # A configuration on another accelerator than the scenario's, TP above 1 where there is one.
    front = next(f for f in page.fronts if f.candidate.accelerator != "h100-sxm" and f.throughput)
    point = max(front.throughput, key=lambda p: (p.tp, p.batch != 16))
    at = page.chart.plot_widget.mapFromScene(page.chart.scene_pos_of(front.candidate, point))
    QTest.mouseClick(page.chart.plot_widget.viewport(), Qt.MouseButton.LeftButton, pos=at)
    scenario = controller.scenario
    assert (scenario.gpu, scenario.num_gpus, scenario.parallel.tp, scenario.batch_size) == (
        front.candidate.accelerator, point.tp, point.tp, point.batch)
    assert controller.undo_stack.undoText().startswith("Apply Pareto point")
    # The applied scenario is the configuration the point was estimated as.
    estimate = engine.run(resolve_scenario(scenario, controller.project), ("performance.tokens_per_s_per_gpu",))
    assert estimate.get("performance.tokens_per_s_per_gpu") == pytest.approx(point.tokens_per_s_per_gpu)
    # The edit searches the fronts again (for the edited scenario) and says what was applied.
    qtbot.waitUntil(lambda: bool(page.fronts) and not page.runner.is_busy(), timeout=30000)
    assert f"TP {point.tp} on {point.tp} GPU" in page.progress.label.text()
    controller.undo_stack.undo()
    assert controller.project == before


def test_equal_service_level_mode_shows_iso_slas_ranking(qtbot, view, engine, project) -> None:  # type: ignore[no-untyped-def]
    view.set_candidates(["h100-sxm", "l40s", "t4", "rtx-4090"])
    qtbot.waitUntil(lambda: not view.runner.is_busy() and len(view.table_model.rows) == 4, timeout=20000)
    view.set_target("max_tpot_s", 20)
    qtbot.waitUntil(lambda: not view.runner.is_busy() and view.result.request.targets.max_tpot_s == 0.02,
                    timeout=20000)
    page = view.iso_view
    view.result_tabs.setCurrentWidget(page)
    assert not page.results and "Off" in page.progress.label.text()
    with qtbot.waitSignal(page.results_shown, timeout=30000, check_params_cb=lambda g: g > 0):
        page.mode_button.click()
    candidates = [r.candidate for r in view.chart_scenario().results]
    ref = iso_sla(engine, project.scenarios[0], candidates, _resolver(project), view.targets())
    assert [(r.candidate, r.best, r.meets, r.reason) for r in page.results] == [
        (r.candidate, r.best, r.meets, r.reason) for r in ref]
    winner = ref[0]
    assert winner.meets and page.winner().candidate == winner.candidate
    table = page.table
    assert table.item(0, 2).text() == f"TP {winner.best.tp}, batch {winner.best.batch}, {winner.best.weights}"
    assert table.item(0, 4).text() == f"${winner.best.usd_per_million_tokens:,.3g}"
    assert table.horizontalHeaderItem(4).text() == "Cost\n($/M tok)"
    assert "At equal service level" in page.summary.text()
    failing = [n for n, r in enumerate(ref) if not r.meets]
    assert failing  # t4 cannot keep TPOT under 20 ms for this model, or cannot run it
    for n in failing:
        assert table.item(n, 6).text() and table.item(n, 6).toolTip()
    # More weight precisions allowed: searched again, with them.
    with qtbot.waitSignal(page.results_shown, timeout=30000, check_params_cb=lambda g: g > 0):
        page.set_weights(("bf16", "fp8"))
    ref = iso_sla(engine, project.scenarios[0], candidates, _resolver(project), view.targets(),
                  weights=["bf16", "fp8"])
    assert [(r.candidate, r.best) for r in page.results] == [(r.candidate, r.best) for r in ref]
    assert page.weights_button.text() == "Weights: bf16, fp8"


def test_cancel_stops_the_equal_service_level_search(qtbot, view) -> None:  # type: ignore[no-untyped-def]
    page = view.iso_view
    view.result_tabs.setCurrentWidget(page)
    page.mode_button.setChecked(True)
    assert page.progress.running
    qtbot.mouseClick(page.progress.cancel_button, Qt.MouseButton.LeftButton)
    assert not page.progress.running and not page.runner.is_busy()
    assert page.runner.pool.waitForDone(5000)
    qtbot.wait(100)
    assert page.results == [] and page.table.rowCount() == 0


def test_training_scenarios_say_the_pages_are_for_serving(qtbot, catalogs, engine) -> None:  # type: ignore[no-untyped-def]
    project = Project(name="Train", scenarios=(
        Scenario(name="train", model="llama-3.1-8b", gpu="h100-sxm", workload="pretrain", num_gpus=8,
                 parallel={"tp": 8}, batch_size=4, train_tokens=1e10),))
    controller = ProjectController(catalogs, project)
    view = CompareView(controller, catalogs, lambda: engine)
    qtbot.addWidget(view)
    view.set_candidates(["h100-sxm", "b200"])
    with qtbot.waitSignal(view.comparison_shown, timeout=20000):
        view.show()
    try:
        view.result_tabs.setCurrentWidget(view.pareto_view)
        assert "for serving scenarios" in view.pareto_view.progress.label.text()
        assert not view.pareto_view.runner.is_busy() and view.pareto_view.fronts == []
        view.result_tabs.setCurrentWidget(view.iso_view)
        view.iso_view.mode_button.setChecked(True)
        assert "for serving scenarios" in view.iso_view.progress.label.text()
        assert not view.iso_view.runner.is_busy()
    finally:
        view.shutdown()


def test_the_points_export_as_json_and_csv(qtbot, view, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import csv
    import json

    page = _show_pareto(qtbot, view)
    doc = json.loads(page.export_text("json"))
    assert doc["scenario"] == "chat"
    assert [f["candidate"] for f in doc["fronts"]] == [f.candidate.label for f in page.fronts]
    assert doc["fronts"][0]["points"][0] == page.fronts[0].points[0].as_dict()
    rows = list(csv.DictReader(page.export_text("csv").splitlines()))
    first = page.fronts[0].points[0]
    assert (rows[0]["candidate"], int(rows[0]["tp"]), int(rows[0]["batch"])) == (
        page.fronts[0].candidate.label, first.tp, first.batch)
    assert float(rows[0]["tokens_per_s_per_gpu"]) == first.tokens_per_s_per_gpu
    on_front = {(r["candidate"], r["tp"], r["batch"]) for r in rows if r["on_throughput_front"] == "true"}
    assert on_front == {(f.candidate.label, str(p.tp), str(p.batch)) for f in page.fronts for p in f.throughput}


def test_cancel_stops_the_pareto_search(qtbot, view) -> None:  # type: ignore[no-untyped-def]
    page = view.pareto_view
    view.result_tabs.setCurrentWidget(page)
    assert page.progress.running
    qtbot.mouseClick(page.progress.cancel_button, Qt.MouseButton.LeftButton)
    assert not page.progress.running and not page.runner.is_busy()
    assert page.runner.pool.waitForDone(5000)
    qtbot.wait(100)
    assert page.fronts == [] and page.chart.drawn == []
    assert "Cancelled" in page.progress.label.text()
    # Shown again, the page searches again.
    view.result_tabs.setCurrentIndex(0)
    with qtbot.waitSignal(page.fronts_shown, timeout=30000, check_params_cb=lambda g: g > 0):
        view.result_tabs.setCurrentWidget(page)
    assert page.fronts
