"""The solver panel: each inverse question answers what the engine's solver answers, and Apply
writes the answer into the current scenario as ONE undoable edit."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.engine import solvers
from workbench.engine.compare import Candidate, Targets, cheapest
from workbench.gui.compare.solver_panel import SolverPanel, parse_amount, scenario_changes
from workbench.gui.controller import ProjectController

CANDIDATES = (Candidate("h100-sxm"), Candidate("a100-80gb-sxm"), Candidate("l40s"), Candidate("gh200"),
              Candidate("b200"))


@pytest.fixture(scope="module")
def engine():  # type: ignore[no-untyped-def]
    from workbench.pluginhost import default_engine

    return default_engine()


class Setup:
    """Stands in for the compare view: the candidates and targets the cheapest question uses."""

    def __init__(self, targets: Targets | None = None) -> None:
        self._targets = targets or Targets()

    def candidates(self) -> tuple[Candidate, ...]:
        return CANDIDATES

    def targets(self) -> Targets:
        return self._targets


@pytest.fixture
def controller(qtbot, catalogs) -> ProjectController:  # type: ignore[no-untyped-def]
    project = Project(name="Solve", scenarios=(
        Scenario(name="chat", model="llama-3.1-70b", gpu="h100-sxm", num_gpus=4, parallel={"tp": 4},
                 batch_size=16),
        Scenario(name="pretrain", model="llama-3.1-8b", gpu="h100-sxm", workload="pretrain", num_gpus=8,
                 parallel={"tp": 8}, batch_size=4, train_tokens=1e11),
    ))
    return ProjectController(catalogs, project)


@pytest.fixture
def panel(qtbot, controller, catalogs, engine):  # type: ignore[no-untyped-def]
    widget = SolverPanel(controller, catalogs, lambda: engine, Setup(Targets(max_tpot_s=0.03)))
    qtbot.addWidget(widget)
    widget.show()
    yield widget
    widget.shutdown()


def _solve(qtbot, panel: SolverPanel, click) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(panel.solved, timeout=30000):
        click()


def _resolve(controller, catalogs):  # type: ignore[no-untyped-def]
    return lambda s: catalogs.resolve(s, controller.project)


def _apply_and_undo(qtbot, panel: SolverPanel, controller: ProjectController, expected: dict) -> None:  # type: ignore[type-arg]
    before = controller.scenario
    steps = controller.undo_stack.count()
    assert panel.apply_button.isEnabled()
    qtbot.mouseClick(panel.apply_button, Qt.MouseButton.LeftButton)
    after = controller.scenario
    for path, value in expected.items():
        head, _, tail = path.partition(".")
        assert getattr(getattr(after, head), tail) == value if tail else getattr(after, head) == value, path
    assert controller.undo_stack.count() == steps + 1  # one edit
    assert controller.undo_stack.undoText() == panel.answer.undo_text
    assert not panel.apply_button.isEnabled() and panel.apply_button.text() == "Applied"
    controller.undo_stack.undo()
    assert controller.scenario == before
    assert panel.apply_button.isEnabled()  # back on the solved scenario: it can be applied again
    controller.undo_stack.redo()
    assert controller.scenario == after


def test_cheapest_accelerator_answer_and_apply(qtbot, panel, controller, catalogs, engine) -> None:  # type: ignore[no-untyped-def]
    _solve(qtbot, panel, panel.cheapest_button.click)
    targets = Targets(max_tpot_s=0.03)
    ref = cheapest(engine, controller.scenario, list(CANDIDATES), _resolve(controller, catalogs), targets)
    best = ref.recommendation
    assert best is not None
    sized = best.estimate.resolved.scenario
    assert panel.answer.changes == scenario_changes(controller.scenario, sized)
    assert "Cheapest that meets the targets" in panel.answer_label.text()
    _apply_and_undo(qtbot, panel, controller, {"gpu": best.candidate.accelerator, "num_gpus": sized.num_gpus,
                                                "parallel.tp": sized.parallel.tp, "parallel.dp": sized.parallel.dp})


def test_fewest_gpus_to_train_in_days(qtbot, panel, controller, catalogs, engine) -> None:  # type: ignore[no-untyped-def]
    controller.set_current("pretrain")
    assert panel.train_button.isEnabled() and not panel.largest_button.isEnabled()
    assert parse_amount(panel.tokens_edit.text()) == 1e11  # from the scenario
    panel.tokens_edit.setText("300B")
    panel.days_spin.setValue(3)
    _solve(qtbot, panel, panel.train_button.click)
    base = controller.scenario.model_copy(update={"train_tokens": 3e11})
    ref = solvers.train_within(engine, catalogs.resolve(base, controller.project), 3)
    assert ref is not None
    n = ref.tp * ref.pp * ref.dp
    assert f"{n:,} GPUs" in panel.answer_label.text()
    _apply_and_undo(qtbot, panel, controller, {"train_tokens": 3e11, "num_gpus": n, "parallel.tp": ref.tp,
                                                "parallel.pp": ref.pp, "parallel.dp": ref.dp})


def test_largest_context_under_a_tpot_target(qtbot, panel, controller, catalogs, engine) -> None:  # type: ignore[no-untyped-def]
    assert not panel.train_button.isEnabled()
    assert panel.tpot_spin.value() == pytest.approx(30)  # from the targets
    panel.largest_field.setCurrentIndex(panel.largest_field.findData("seq_len"))
    _solve(qtbot, panel, panel.largest_button.click)
    ref = solvers.largest_under_tpot(engine, catalogs.resolve(controller.scenario, controller.project), "seq_len",
                                     0.03)
    assert ref is not None
    assert panel.answer.changes == {"seq_len": ref[0]}
    _apply_and_undo(qtbot, panel, controller, {"seq_len": ref[0]})


def test_best_layout_for_the_gpu_count(qtbot, panel, controller, catalogs, engine) -> None:  # type: ignore[no-untyped-def]
    assert panel.gpus_spin.value() == 4
    panel.gpus_spin.setValue(8)
    _solve(qtbot, panel, panel.layout_button.click)
    resolved = catalogs.resolve(controller.scenario, controller.project)
    ref = solvers.LayoutSearch(engine, resolved).best(8)
    assert ref is not None and ref.fits
    # The brute-force ranking agrees on the winner.
    brute = [layout for layout in solvers.layouts(engine, resolved, 8) if solvers.runnable(layout.estimate)]
    assert (brute[0].tp, brute[0].pp, brute[0].dp) == (ref.tp, ref.pp, ref.dp)
    _apply_and_undo(qtbot, panel, controller, {"num_gpus": 8, "parallel.tp": ref.tp, "parallel.pp": ref.pp,
                                                "parallel.dp": ref.dp})


def test_apply_never_merges_with_the_edit_before_it(qtbot, panel, controller) -> None:  # type: ignore[no-untyped-def]
    """The panel's edit is its own undo step even right after a user's edit of the same field."""
    panel.largest_field.setCurrentIndex(panel.largest_field.findData("batch_size"))
    controller.set_field("batch_size", 8)
    _solve(qtbot, panel, panel.largest_button.click)
    assert panel.apply()
    controller.undo_stack.undo()
    assert controller.scenario.batch_size == 8


def test_an_answer_for_an_older_scenario_is_not_applied(qtbot, panel, controller) -> None:  # type: ignore[no-untyped-def]
    _solve(qtbot, panel, panel.layout_button.click)
    controller.set_field("batch_size", 2)
    assert not panel.apply_button.isEnabled()
    assert "solve again" in panel.apply_button.text()
    steps = controller.undo_stack.count()
    assert not panel.apply()
    assert controller.undo_stack.count() == steps


def test_questions_that_do_not_apply_say_why(qtbot, panel, controller) -> None:  # type: ignore[no-untyped-def]
    _solve(qtbot, panel, lambda: panel.solve("train"))  # a serving scenario
    assert panel.answer is None and "training scenario" in panel.answer_label.text()
    panel.tokens_edit.setText("lots")
    controller.set_current("pretrain")
    panel.tokens_edit.setText("lots")
    assert panel.solve("train") == 0 and "positive number" in panel.answer_label.text()
    assert [parse_amount(t) for t in ("2T", "1.5e12", "300B", "1,000", "0", "x")] == [2e12, 1.5e12, 3e11, 1000,
                                                                                     None, None]
