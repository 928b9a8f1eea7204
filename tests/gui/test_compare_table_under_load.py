"""The window's Compare table: simulated p99 and goodput columns with a load, hidden without."""

from __future__ import annotations

from PySide6.QtCore import Qt

from workbench.api import engine, make_scenario
from workbench.catalog.resolve import resolve_scenario
from workbench.engine.compare import Candidate, compare
from workbench.gui.compare.compare_table import COLUMN_INDEX, ComparisonTableModel

SIM_COLUMNS = {"sim_ttft_p99", "sim_tpot_p99", "sim_goodput"}


def _model(serving: dict) -> ComparisonTableModel:  # type: ignore[type-arg]
    scenario = make_scenario(name="s", model="llama-3.1-8b", gpu="h100-sxm", batch_size=16, serving=serving)
    model = ComparisonTableModel()
    model.set_comparison(compare(engine(), [scenario], [Candidate("h100-sxm")], resolve_scenario))
    return model


def test_simulated_columns_show_with_units_under_a_load(qapp) -> None:  # type: ignore[no-untyped-def]
    model = _model({"arrival_rate": 4, "requests": 100})
    assert not SIM_COLUMNS & model.empty_columns()
    header = model.headerData(COLUMN_INDEX["sim_tpot_p99"], Qt.Orientation.Horizontal)
    assert header == "TPOT p99\nunder load (ms)"
    p99 = model.result(0).values["sim_tpot_p99_s"]
    text = model.data(model.index(0, COLUMN_INDEX["sim_tpot_p99"]))
    assert float(text) == float(f"{p99 * 1000:.3g}")


def test_simulated_columns_hidden_without_a_load(qapp) -> None:  # type: ignore[no-untyped-def]
    assert SIM_COLUMNS <= _model({}).empty_columns()
