"""Prices per candidate in the Compare tab: typed in the table's price column, used in the cost
columns, one undo step each, saved with the project; an unpriced candidate reads "no price", never 0.
Real engine (the costs come from the cost plugin)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.gui.compare.compare_table import COLUMN_INDEX, NO_PRICE
from workbench.gui.compare.compare_view import CompareView
from workbench.gui.controller import ProjectController
from workbench.store import open_project, save_project

PRICED, UNPRICED = "a100-80gb-sxm", "a30"  # the catalog has a rental price for the first only


@pytest.fixture(scope="module")
def engine():  # type: ignore[no-untyped-def]
    from workbench.pluginhost import default_engine

    return default_engine()


def _view(qtbot, catalogs, engine, project: Project) -> CompareView:  # type: ignore[no-untyped-def]
    view = CompareView(ProjectController(catalogs, project), catalogs, lambda: engine)
    qtbot.addWidget(view)
    view.resize(1400, 800)
    with qtbot.waitSignal(view.comparison_shown, timeout=20000):
        view.show()
    return view


def _wait(qtbot, view: CompareView, action) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(view.comparison_shown, timeout=20000):
        action()
    qtbot.waitUntil(lambda: not view.runner.is_busy(), timeout=20000)


def _row(view: CompareView, accelerator: str) -> dict[str, str]:
    model = view.table_model
    for row, (_, result) in enumerate(model.rows):
        if result.candidate.accelerator == accelerator:
            return {c: model.index(row, COLUMN_INDEX[c]).data() for c in ("price", "usd_per_m_tokens",
                                                                           "tco_rent_usd")}
    raise AssertionError(f"{accelerator} is not in the table")


def _type_price(view: CompareView, accelerator: str, text: str) -> None:
    """As a user does: edit the price cell of the accelerator's row."""
    model = view.table_model
    row = next(r for r, (_, res) in enumerate(model.rows) if res.candidate.accelerator == accelerator)
    index = view.proxy.mapFromSource(model.index(row, COLUMN_INDEX["price"]))
    assert view.proxy.flags(index) & view.proxy.flags(index).ItemIsEditable
    assert view.proxy.setData(index, text)


def test_a_price_set_in_compare_is_used_undone_saved_and_reopened(qtbot, catalogs, engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    project = Project(name="Prices", scenarios=(
        Scenario(name="chat", model="llama-3.1-8b", gpu="h100-sxm", batch_size=16),))
    view = _view(qtbot, catalogs, engine, project)
    _wait(qtbot, view, lambda: view.set_candidates([PRICED, UNPRICED]))
    before = _row(view, UNPRICED)
    assert before == {"price": NO_PRICE, "usd_per_m_tokens": NO_PRICE, "tco_rent_usd": NO_PRICE}
    catalog_priced = _row(view, PRICED)
    assert catalog_priced["price"] == "$1.79"

    _wait(qtbot, view, lambda: _type_price(view, UNPRICED, "$2.50"))
    priced = _row(view, UNPRICED)
    assert priced["price"] == "$2.50"
    assert priced["usd_per_m_tokens"] not in (NO_PRICE, "–") and priced["usd_per_m_tokens"].startswith("$")
    assert view.controller.project.comparisons[0].usd_per_gpu_hour == {UNPRICED: 2.5}
    # Doubling the price doubles the cost per token (the price is what the cost columns use).
    cost = view.table_model.rows[[r.candidate.accelerator for _, r in view.table_model.rows].index(UNPRICED)][1]
    _wait(qtbot, view, lambda: _type_price(view, UNPRICED, "5"))
    doubled = next(r for _, r in view.table_model.rows if r.candidate.accelerator == UNPRICED)
    assert doubled.values["usd_per_m_tokens"] == pytest.approx(2 * cost.values["usd_per_m_tokens"], rel=1e-6)

    # Each price is one undo step; undoing the first brings back "no price".
    _wait(qtbot, view, view.controller.undo_stack.undo)
    assert _row(view, UNPRICED) == priced
    _wait(qtbot, view, view.controller.undo_stack.undo)
    assert _row(view, UNPRICED) == before
    _wait(qtbot, view, view.controller.undo_stack.redo)
    assert _row(view, UNPRICED) == priced
    # A price for a candidate with a catalog price wins over it; emptying it goes back to the catalog.
    _wait(qtbot, view, lambda: _type_price(view, PRICED, "1"))
    assert _row(view, PRICED)["price"] == "$1.00"
    _wait(qtbot, view, lambda: _type_price(view, PRICED, ""))
    assert _row(view, PRICED) == catalog_priced
    # Not a number: nothing changes, the status line says why.
    steps = view.controller.undo_stack.count()
    _type_price(view, PRICED, "cheap")
    assert view.controller.undo_stack.count() == steps and "positive number" in view.status.text()

    shown = {acc: _row(view, acc) for acc in (PRICED, UNPRICED)}
    path = tmp_path / "prices.gpuwb"
    save_project(view.controller.project, path)
    view.shutdown()

    reopened = _view(qtbot, catalogs, engine, open_project(path))
    qtbot.waitUntil(lambda: not reopened.runner.is_busy() and bool(reopened.table_model.rows), timeout=20000)
    assert reopened.prices == {UNPRICED: 2.5}
    assert {acc: _row(reopened, acc) for acc in (PRICED, UNPRICED)} == shown
    assert f"{'A30'}  ($2.50/h, yours)" in [reopened.candidate_list.item(i).text()
                                             for i in range(reopened.candidate_list.count())]
    reopened.shutdown()


def test_the_report_costs_the_comparison_with_the_prices_entered(catalogs, engine) -> None:  # type: ignore[no-untyped-def]
    from workbench.core.project import Comparison
    from workbench.report.document import ReportRequest, collect

    scenario = Scenario(name="chat", model="llama-3.1-8b", gpu="h100-sxm", batch_size=16)
    saved = Comparison(name="Compare tab", accelerators=(PRICED, UNPRICED), usd_per_gpu_hour={UNPRICED: 2.5})
    project = Project(name="Prices", scenarios=(scenario,), comparisons=(saved,))
    data = collect(ReportRequest(project=project, sections=("comparison",)), engine)
    rows = {r.candidate.accelerator: r for r in data.comparison.scenarios[0].results}
    assert rows[UNPRICED].values["usd_per_gpu_hour"] == 2.5 and rows[UNPRICED].values["usd_per_m_tokens"] > 0
    assert rows[PRICED].values["usd_per_gpu_hour"] == pytest.approx(1.79)
