"""The compare view: it ranks as compare() ranks, highlights compare()'s recommendation, re-runs on
targets and scenario edits off the GUI thread, and drops stale results. Real engine (the metrics
need the cost and performance plugins)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from workbench.catalog.resolve import resolve_scenario
from workbench.core.hardware import Accelerator
from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.engine.compare import Candidate, compare
from workbench.gui import theme
from workbench.gui.compare.compare_format import short_name
from workbench.gui.compare.compare_table import COLUMN_INDEX
from workbench.gui.compare.compare_view import CompareView
from workbench.gui.controller import ProjectController

CANDIDATES = ["h100-sxm", "a100-80gb-sxm", "l40s", "gh200", "b200", "h200-sxm", "mi300x", "t4"]


@pytest.fixture(scope="module")
def engine():  # type: ignore[no-untyped-def]
    from workbench.pluginhost import default_engine

    return default_engine()


@pytest.fixture
def serving_project() -> Project:
    return Project(name="Compare", scenarios=(
        Scenario(name="chat", model="llama-3.1-70b", gpu="h100-sxm", batch_size=16),
        Scenario(name="train", model="llama-3.1-8b", gpu="h100-sxm", workload="pretrain", num_gpus=8,
                 parallel={"tp": 8}, batch_size=4, train_tokens=1e10),
    ))


@pytest.fixture
def view(qtbot, catalogs, engine, serving_project):  # type: ignore[no-untyped-def]
    controller = ProjectController(catalogs, serving_project)
    widget = CompareView(controller, catalogs, lambda: engine)
    qtbot.addWidget(widget)
    widget.resize(1400, 900)
    widget.set_candidates(CANDIDATES)
    with qtbot.waitSignal(widget.comparison_shown, timeout=20000):
        widget.show()
    yield widget
    widget.shutdown()


def _wait(qtbot, view: CompareView, action) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(view.comparison_shown, timeout=20000):
        action()
    qtbot.waitUntil(lambda: not view.runner.is_busy(), timeout=20000)


def _reference(engine, view: CompareView, project: Project):  # type: ignore[no-untyped-def]
    """compare() itself, with the documented resolver, on what the view shows."""
    return compare(engine, list(view.scenarios()), [Candidate(i) for i in view._ticked_ids()],
                   lambda s: resolve_scenario(s, project), view.targets())


def _shown(view: CompareView) -> list[tuple[str, str]]:
    """(scenario, accelerator id) of each table row, top to bottom as sorted on screen."""
    rows = []
    for row in range(view.proxy.rowCount()):
        result = view.table_model.result(view.proxy.mapToSource(view.proxy.index(row, 0)).row())
        rows.append((result.scenario, result.candidate.accelerator))
    return rows


def test_the_table_ranks_as_compare_ranks(qtbot, view, engine, serving_project) -> None:  # type: ignore[no-untyped-def]
    assert [s.name for s in view.scenarios()] == ["chat"]  # follows the selected scenario
    ref = _reference(engine, view, serving_project)
    assert _shown(view) == [(r.scenario, r.candidate.accelerator) for r in ref.rows()]
    for row, result in enumerate(ref.rows()):
        index = view.proxy.index(row, COLUMN_INDEX["rank"])
        assert index.data().endswith(str(result.rank))
        gpus = view.proxy.index(row, COLUMN_INDEX["gpus"]).data()
        assert gpus == (f"{result.gpus:,}" if result.fits else "–")
    # Units are in the headers; a single scenario hides the scenario column, serving hides training columns.
    header = view.table_model.headerData(COLUMN_INDEX["tpot"], Qt.Orientation.Horizontal)
    assert "(ms)" in header
    assert view.table.isColumnHidden(COLUMN_INDEX["scenario"])
    assert view.table.isColumnHidden(COLUMN_INDEX["run_usd"])
    assert not view.table.isColumnHidden(COLUMN_INDEX["usd_per_m_tokens"])


def test_the_highlighted_row_is_compares_recommendation(qtbot, view, engine, serving_project) -> None:  # type: ignore[no-untyped-def]
    ref = _reference(engine, view, serving_project)
    best = ref.scenarios[0].recommendation
    assert best is not None
    highlighted = view.recommended_proxy_rows()
    assert [_shown(view)[r] for r in highlighted] == [("chat", best.candidate.accelerator)]
    row = highlighted[0]
    assert view.proxy.index(row, 1).data(Qt.ItemDataRole.FontRole).bold()
    colour = view.proxy.index(row, 1).data(Qt.ItemDataRole.BackgroundRole)
    assert isinstance(colour, QColor) and colour.rgb() == QColor(theme.OK_COLOUR).rgb()
    assert f"Recommended: {best.gpus:,} x {short_name(best.accelerator_name)}" in view.banner_text
    assert "/M tokens" in view.banner_text and "TPOT" in view.banner_text
    # Every other row says why it loses, in the verdict column and the tooltip.
    for r in range(view.proxy.rowCount()):
        if r == row:
            continue
        verdict = view.proxy.index(r, COLUMN_INDEX["verdict"]).data()
        assert verdict and "recommended" not in verdict.split(";")[0]
        assert "Verdict:" in view.proxy.index(r, COLUMN_INDEX["gpus"]).data(Qt.ItemDataRole.ToolTipRole)
    # The bars show the fitting candidates in rank order, the recommendation first.
    fitting = [r for r in ref.scenarios[0].results if r.fits]
    assert [r.candidate for r in view.chart.results] == [r.candidate for r in fitting][:len(view.chart.results)]
    assert view.chart.cost.values[0] == pytest.approx(best.values["usd_per_m_tokens"])


def test_changing_a_target_reruns_and_moves_the_highlight(qtbot, view, engine, serving_project) -> None:  # type: ignore[no-untyped-def]
    before = _reference(engine, view, serving_project).scenarios[0].recommendation
    tpot_ms = before.values["tpot_s"] * 1000
    edit = view.target_edits["max_tpot_s"]
    # Typed by hand, as a user would: the view re-runs off the GUI thread (debounced).
    _wait(qtbot, view, lambda: qtbot.keyClicks(edit, f"{tpot_ms * 0.98:.4f}"))
    assert view.targets().max_tpot_s == pytest.approx(tpot_ms * 0.98 / 1000, rel=1e-6)
    after = _reference(engine, view, serving_project)
    best = after.scenarios[0].recommendation
    assert best is not None and best.candidate != before.candidate
    assert [_shown(view)[r] for r in view.recommended_proxy_rows()] == [("chat", best.candidate.accelerator)]
    assert _shown(view) == [(r.scenario, r.candidate.accelerator) for r in after.rows()]
    old = _shown(view).index(("chat", before.candidate.accelerator))
    assert "TPOT" in view.proxy.index(old, COLUMN_INDEX["verdict"]).data()
    # Only the targets changed: every pair was kept, none sized again.
    assert view.result.sized == 0
    # An impossible target: no recommendation, and the banner says why.
    _wait(qtbot, view, lambda: view.set_target("max_tpot_s", 0.001))
    assert view.recommended_proxy_rows() == []
    assert "No recommendation" in view.banner_text
    # Not a number: marked, and treated as no target.
    _wait(qtbot, view, lambda: view.set_target("max_tpot_s", None))
    view.target_edits["min_tokens_per_s"].setText("fast")
    assert view.targets().min_tokens_per_s is None and not view.targets_error.isHidden()


def test_sorting_by_a_column_puts_unknowns_last(qtbot, view) -> None:  # type: ignore[no-untyped-def]
    column = COLUMN_INDEX["usd_per_m_tokens"]
    for order in (Qt.SortOrder.AscendingOrder, Qt.SortOrder.DescendingOrder):
        view.table.sortByColumn(column, order)
        keys = [view.proxy.index(r, column).data(Qt.UserRole + 1) for r in range(view.proxy.rowCount())]
        known = [k for k in keys if k is not None]
        assert keys[:len(known)] == known  # no price: last either way
        assert known == sorted(known, reverse=order == Qt.SortOrder.DescendingOrder)


def test_several_scenarios_and_the_overall_recommendation(qtbot, view, engine, serving_project) -> None:  # type: ignore[no-untyped-def]
    _wait(qtbot, view, lambda: view.set_scenarios(["chat", "train"]))
    ref = _reference(engine, view, serving_project)
    assert _shown(view) == [(r.scenario, r.candidate.accelerator) for r in ref.rows()]
    assert not view.table.isColumnHidden(COLUMN_INDEX["scenario"])
    assert not view.table.isColumnHidden(COLUMN_INDEX["run_usd"])
    recommended = {_shown(view)[r] for r in view.recommended_proxy_rows()}
    assert recommended == {(s.scenario.name, s.recommendation.candidate.accelerator)
                           for s in ref.scenarios if s.recommendation is not None}
    if ref.recommendation is not None:
        assert "Recommended for all 2 scenarios" in view.banner_text
    else:
        assert "No recommendation" in view.banner_text


def test_editing_a_scenario_reruns_and_stale_results_are_dropped(qtbot, view, engine, serving_project) -> None:  # type: ignore[no-untyped-def]
    controller = view.controller
    _wait(qtbot, view, lambda: controller.set_field("batch_size", 64))
    assert view.result.request.scenarios[0].batch_size == 64
    assert view.result.sized == len(CANDIDATES)  # a new scenario: every pair sized again
    assert _shown(view) == [(r.scenario, r.candidate.accelerator)
                            for r in _reference(engine, view, controller.project).rows()]
    # Two requests back to back: only the newer one reaches the table.
    shown: list[int] = []
    view.comparison_shown.connect(shown.append)
    controller.set_field("batch_size", 8)
    first = view.refresh()
    controller.set_field("batch_size", 32)
    second = view.refresh()
    qtbot.waitUntil(lambda: second in shown, timeout=20000)
    qtbot.wait(50)
    assert first not in shown
    assert view.result.request.scenarios[0].batch_size == 32


def test_a_hidden_view_computes_nothing_until_shown(qtbot, view) -> None:  # type: ignore[no-untyped-def]
    view.hide()
    generation = view.runner.generation
    view.controller.set_field("seq_len", 4096)
    qtbot.wait(150)
    assert view.runner.generation == generation
    _wait(qtbot, view, view.show)
    assert view.result.request.scenarios[0].seq_len == 4096


def test_candidate_filters_and_custom_accelerators(qtbot, view, catalogs) -> None:  # type: ignore[no-untyped-def]
    view.vendor_filter.setCurrentIndex(view.vendor_filter.findData("amd"))
    shown = [view.candidate_list.item(i) for i in range(view.candidate_list.count())
             if not view.candidate_list.item(i).isHidden()]
    assert shown and all(catalogs.accelerators[i.data(Qt.UserRole)].vendor.value == "amd" for i in shown)
    _wait(qtbot, view, view.select_all_button.click)
    amd = {a.id for a in catalogs.accelerators.values() if a.vendor.value == "amd"}
    assert amd | set(CANDIDATES) == set(view._ticked_ids())
    _wait(qtbot, view, view.select_none_button.click)
    assert set(view._ticked_ids()) == set(CANDIDATES) - amd
    view.vendor_filter.setCurrentIndex(0)
    view.search.setText("h100")
    assert all("h100" in view.candidate_list.item(i).data(Qt.UserRole)
               for i in range(view.candidate_list.count()) if not view.candidate_list.item(i).isHidden())
    # A custom accelerator of the project joins the list ticked, and the comparison.
    custom = catalogs.accelerators["h100-sxm"].model_dump()
    custom.update(id="my-h100", name="My discounted H100", cloud_usd_per_hour=1.0)
    _wait(qtbot, view, lambda: view.controller.upsert_accelerator(Accelerator.model_validate(custom), select=False))
    assert "my-h100" in view._ticked_ids()
    assert ("chat", "my-h100") in _shown(view)


def test_the_window_has_a_compare_tab_with_a_shortcut(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    actions = {a.objectName(): a for a in window.findChildren(type(window.undo_action)) if a.objectName()}
    assert actions["show_compare"].shortcut().toString() == "Ctrl+Shift+C"
    with qtbot.waitSignal(window.compare_view.comparison_shown, timeout=20000):
        actions["show_compare"].trigger()
    assert window.tabs.currentWidget() is window.compare_view
    assert window.compare_view.isVisible() and not window.memory_chart.isVisible()
    # The fake engine has no cost estimator: nothing can be priced, and the banner says so.
    assert "No recommendation" in window.compare_view.banner_text
    # The corner button hides the side panels for a wide table, and brings back the same ones.
    open_docks = {name for name, dock in window.docks.items() if dock.toggleViewAction().isChecked()}
    window.tabs.focus_button.click()
    assert not any(dock.isVisible() for dock in window.docks.values())
    window.tabs.focus_button.click()
    assert {name for name, dock in window.docks.items() if dock.toggleViewAction().isChecked()} == open_docks
    actions["show_charts"].trigger()
    QApplication.processEvents()
    assert window.memory_chart.isVisible()


def test_the_setup_is_kept_in_the_project_saved_and_restored(qtbot, view, catalogs, engine, tmp_path,  # type: ignore[no-untyped-def]
                                                              monkeypatch) -> None:
    """Candidates, scenarios and targets are the project's saved comparison: a file saved and opened
    again shows the same setup; undo brings back the one before."""
    from workbench.gui import controller as controller_module
    from workbench.store import open_project, save_project

    monkeypatch.setattr(controller_module, "MERGE_WINDOW_S", -1.0)  # one undo step per edit here
    controller = view.controller
    _wait(qtbot, view, lambda: view.set_scenarios(["chat", "train"]))
    _wait(qtbot, view, lambda: view.set_target("max_tpot_s", 80))  # ms on screen, seconds saved
    saved = controller.project.comparisons[0]
    assert set(saved.accelerators) == set(CANDIDATES)
    assert saved.scenarios == ("chat", "train") and saved.max_tpot_s == pytest.approx(0.08)
    assert controller.undo_stack.count() >= 1 and not controller.undo_stack.isClean()

    path = tmp_path / "kept.gpuwb"
    save_project(controller.project, path)
    reopened = ProjectController(catalogs, open_project(path))
    again = CompareView(reopened, catalogs, lambda: engine)
    qtbot.addWidget(again)
    try:
        assert set(again._ticked_ids()) == set(CANDIDATES)
        assert again._ticked_scenarios() == ["chat", "train"]
        assert again.target_edits["max_tpot_s"].text() == "80"
        assert again.targets().max_tpot_s == pytest.approx(0.08)
        assert reopened.undo_stack.count() == 0  # showing a saved setup is not an edit
    finally:
        again.shutdown()

    # Undo brings back the setup before; a renamed scenario stays in the setup.
    _wait(qtbot, view, lambda: view.set_candidates(["h100-sxm", "b200"]))
    controller.undo_stack.undo()
    QApplication.processEvents()
    assert set(view._ticked_ids()) == set(CANDIDATES)
    controller.undo_stack.undo()
    QApplication.processEvents()
    assert view.target_edits["max_tpot_s"].text() == ""
    controller.undo_stack.redo()
    QApplication.processEvents()
    assert view.target_edits["max_tpot_s"].text() == "80"
    controller.set_current("train")
    assert controller.rename_scenario("pre-train") is None
    assert controller.project.comparisons[0].scenarios == ("chat", "pre-train")
    assert view._ticked_scenarios() == ["chat", "pre-train"]
