"""Inverse questions about the current scenario, one click each, each answer applicable as one
undoable edit.

* the cheapest accelerator (and how many) that meets the targets, among the compare view's
  candidates (:func:`workbench.engine.compare.cheapest`);
* the fewest GPUs that train N tokens in D days (:func:`workbench.engine.solvers.train_within`);
* the largest context or batch that keeps TPOT under a target
  (:func:`workbench.engine.solvers.largest_under_tpot`);
* the best parallel layout for a GPU count (:class:`workbench.engine.solvers.LayoutSearch`).

Solving runs on the panel's worker thread. An answer is the solved scenario; Apply writes the
fields it changed into the current scenario through the controller, wrapped in one undo macro
(so it never merges with a neighbouring edit of the same field).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any, Protocol

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from workbench.core.errors import InputError
from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.engine import solvers
from workbench.engine.compare import Candidate, Targets, cheapest, format_seconds
from workbench.engine.pipeline import Engine
from workbench.engine.variations import with_fields
from workbench.gui import theme
from workbench.gui.background import BackgroundRunner, Report, Stale
from workbench.gui.catalogs import Catalogs
from workbench.gui.compare.compare_format import gui_words, headline, number, short_name
from workbench.gui.controller import ProjectController

EngineSource = Callable[[], Engine]
QUESTIONS = ("cheapest", "train", "largest", "layout")
_TOKENS = re.compile(r"^\s*([0-9][0-9,_]*\.?[0-9]*(?:e[+-]?[0-9]+)?)\s*([kmbt]?)\s*$", re.IGNORECASE)
_SCALE = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


class CompareSetup(Protocol):
    """Where the cheapest-accelerator question takes its candidates and targets from (the compare
    view)."""

    def candidates(self) -> tuple[Candidate, ...]: ...

    def targets(self) -> Targets: ...

    def scenarios(self) -> tuple[Scenario, ...]: ...


@dataclass
class Answer:
    """A solver's answer: words for people, and the edit that applies it (None: nothing to apply)."""

    question: str
    html: str
    scenario_name: str
    base: Scenario
    changes: dict[str, Any] | None = None
    undo_text: str = ""
    details: dict[str, Any] = field(default_factory=dict)


def parse_amount(text: str) -> float | None:
    """``1e12``, ``2T``, ``300B``, ``1,500,000`` -> a positive number; None when it is not one."""
    match = _TOKENS.match(text.replace(" ", ""))
    if match is None:
        return None
    try:
        value = float(match[1].replace(",", "").replace("_", "")) * _SCALE[match[2].lower()]
    except ValueError:
        return None
    return value if value > 0 else None


def scenario_changes(before: Scenario, after: Scenario) -> dict[str, Any]:
    """The field paths (``num_gpus``, ``parallel.tp``) whose values differ, with the new values."""
    old, new = before.model_dump(), after.model_dump()
    changes: dict[str, Any] = {}
    for key, value in new.items():
        if key == "name" or old.get(key) == value:
            continue
        if isinstance(value, dict) and isinstance(old.get(key), dict):
            changes.update({f"{key}.{sub}": v for sub, v in value.items() if old[key].get(sub) != v})
        else:
            changes[key] = value
    return changes


def _layout_words(scenario: Scenario) -> str:
    par = scenario.parallel
    return f"TP {par.tp} × PP {par.pp} × DP {par.dp}"


# --- the questions (worker thread; no Qt) -----------------------------------------------------------


def solve_cheapest(engine: Engine, project: Project, scenario: Scenario, catalogs: Catalogs,
                   candidates: Sequence[Candidate], targets: Targets) -> Answer:
    if not candidates:
        raise InputError("tick at least one candidate accelerator in the Compare tab")
    result = cheapest(engine, scenario, list(candidates), lambda s: catalogs.resolve(s, project), targets)
    best = result.recommendation
    answer = Answer("cheapest", "", scenario.name, scenario, details={"comparison": result})
    if best is None or best.estimate is None:
        answer.html = f"No candidate qualifies: {escape(gui_words(result.why_no_recommendation or ''))}"
        return answer
    sized = best.estimate.resolved.scenario
    answer.changes = scenario_changes(scenario, sized)
    answer.undo_text = f"Apply cheapest accelerator: {best.gpus} x {short_name(best.accelerator_name)}"
    runner_up = next((r for r in result.results if r is not best and r.meets_targets), None)
    html = (f"Cheapest that meets the targets, of {len(candidates)} candidates:<br><b>{escape(headline(best))}</b>"
            f"<br>{escape(_layout_words(sized))}")
    if runner_up is not None and runner_up.cost and best.cost:
        html += f"<br>Next: {escape(headline(runner_up))} ({runner_up.cost / best.cost:.2f}x)"
    answer.html = html
    return answer


def solve_train(engine: Engine, project: Project, scenario: Scenario, catalogs: Catalogs,
                tokens: float, days: float) -> Answer:
    if not scenario.is_training:
        raise InputError("this question needs a training scenario (fine-tuning or pre-training)")
    base = scenario.model_copy(update={"train_tokens": tokens})
    layout = solvers.train_within(engine, catalogs.resolve(base, project), days)
    answer = Answer("train", "", scenario.name, scenario)
    if layout is None:
        answer.html = (f"No GPU count up to {solvers.MAX_GPUS:,} trains {number(tokens)} tokens within "
                       f"{days:g} days on this accelerator.")
        return answer
    sized = layout.estimate.resolved.scenario
    took = layout.estimate.get("performance.train_time_days")
    answer.changes = scenario_changes(scenario, sized)
    answer.undo_text = f"Apply fewest GPUs to train in {days:g} days: {sized.num_gpus}"
    took_text = f"{took:.3g} days" if isinstance(took, (int, float)) else "time unknown"
    answer.html = (f"<b>{sized.num_gpus:,} GPUs</b> ({escape(_layout_words(sized))}) train "
                   f"{number(tokens)} tokens in {took_text} (target {days:g} days).")
    return answer


def solve_largest(engine: Engine, project: Project, scenario: Scenario, catalogs: Catalogs,
                  field_name: str, max_tpot_s: float) -> Answer:
    if scenario.is_training:
        raise InputError("TPOT applies to serving: this question needs an inference scenario")
    found = solvers.largest_under_tpot(engine, catalogs.resolve(scenario, project), field_name, max_tpot_s)
    what = "context" if field_name == "seq_len" else "batch"
    unit = "tokens" if field_name == "seq_len" else "concurrent requests"
    answer = Answer("largest", "", scenario.name, scenario)
    if found is None:
        answer.html = f"Even a {what} of 1 misses TPOT ≤ {escape(format_seconds(max_tpot_s))} or does not fit."
        return answer
    value, estimate = found
    tpot = estimate.get("performance.tpot_s")
    answer.changes = scenario_changes(scenario, with_fields(scenario, {field_name: value}))
    answer.undo_text = f"Apply largest {what} under TPOT {format_seconds(max_tpot_s)}: {value:,}"
    tpot_text = format_seconds(tpot) if isinstance(tpot, (int, float)) else "unknown"
    bound = "at least " if solvers.at_search_limit(field_name, value) else ""  # the search's own limit
    answer.html = (f"Largest {what}: <b>{bound}{value:,} {unit}</b> (TPOT {escape(tpot_text)} ≤ "
                   f"{escape(format_seconds(max_tpot_s))}, fits in memory).")
    return answer


def solve_layout(engine: Engine, project: Project, scenario: Scenario, catalogs: Catalogs, gpus: int) -> Answer:
    resolved = catalogs.resolve(scenario, project)
    search = solvers.LayoutSearch(engine, resolved)
    best = search.best(gpus)
    answer = Answer("layout", "", scenario.name, scenario)
    if best is None:
        fewest = solvers.fewest_gpus(engine, resolved, search=search)
        hint = "" if fewest is None else (
            f" The fewest GPUs that fit: {fewest.tp * fewest.pp * fewest.dp:,} "
            f"(TP {fewest.tp} × PP {fewest.pp} × DP {fewest.dp}).")
        answer.html = f"No parallel layout of {gpus:,} GPUs fits in memory and runs.{hint}"
        return answer
    sized = best.estimate.resolved.scenario
    speed = best.estimate.get("performance.tokens_per_s")
    answer.changes = scenario_changes(scenario, sized)
    answer.undo_text = f"Apply best layout for {gpus} GPUs: {_layout_words(sized)}"
    ranked = search.ranked(gpus)
    speed_text = f", {number(speed)} tokens/s" if isinstance(speed, (int, float)) else ""
    answer.html = (f"Best of {len(ranked)} layouts that fit: <b>{escape(_layout_words(sized))}</b>"
                   f"{speed_text}.")
    return answer


# --- the panel ---------------------------------------------------------------------------------------


class SolverPanel(QWidget):
    #: The newest answer is on screen (its question id).
    solved = Signal(str)

    def __init__(self, controller: ProjectController, catalogs: Catalogs, engine_source: EngineSource,
                 setup: CompareSetup, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("solver_panel")
        self.controller = controller
        self.catalogs = catalogs
        self.engine_source = engine_source
        self.setup = setup
        self.runner = BackgroundRunner(self)
        self.runner.finished.connect(self._on_answer)
        self.runner.failed.connect(self._on_failed)
        self.answer: Answer | None = None
        self._applied = False

        self.intro = QLabel(self)
        self.intro.setWordWrap(True)
        self.cheapest_button = QPushButton("Cheapest accelerator", self)
        self.cheapest_button.setToolTip("The cheapest candidate (and how many of it) that meets the targets: "
                                        "the candidates and targets of the Compare tab")
        self.train_button = QPushButton("Fewest GPUs to train in time", self)
        self.train_button.setToolTip("The fewest GPUs of this scenario's accelerator that train the tokens "
                                     "within the days (training scenarios)")
        self.tokens_edit = QLineEdit(self)
        self.tokens_edit.setPlaceholderText("tokens, e.g. 2T")
        self.tokens_edit.setToolTip("Tokens to train on: 1e12, 2T, 300B")
        self.days_spin = QDoubleSpinBox(self)
        self.days_spin.setRange(0.01, 3650)
        self.days_spin.setDecimals(1)
        self.days_spin.setValue(30)
        self.days_spin.setSuffix(" days")
        self.largest_button = QPushButton("Largest context or batch under TPOT", self)
        self.largest_button.setToolTip("The largest context (prompt) or batch that fits and keeps the time per "
                                       "output token under the target (inference scenarios)")
        self.largest_field = QComboBox(self)
        self.largest_field.addItem("context", "seq_len")
        self.largest_field.addItem("batch", "batch_size")
        self.tpot_spin = QDoubleSpinBox(self)
        self.tpot_spin.setRange(0.1, 100_000)
        self.tpot_spin.setDecimals(1)
        self.tpot_spin.setValue(50)
        self.tpot_spin.setSuffix(" ms")
        self.layout_button = QPushButton("Best parallel layout", self)
        self.layout_button.setToolTip("The fastest TP × PP × DP split of this many GPUs that fits and runs")
        self.gpus_spin = QSpinBox(self)
        self.gpus_spin.setRange(1, solvers.MAX_GPUS)
        self.gpus_spin.setSuffix(" GPUs")

        # One block per question: its button, then its inputs (the panel is a narrow column).
        blocks = QVBoxLayout()
        blocks.setSpacing(3)
        for button, inputs in (
            (self.cheapest_button, [QLabel("among the ticked candidates, meeting the targets", self)]),
            (self.train_button, [self.tokens_edit, QLabel("tokens in", self), self.days_spin]),
            (self.largest_button, [self.largest_field, QLabel("with TPOT ≤", self), self.tpot_spin]),
            (self.layout_button, [QLabel("of", self), self.gpus_spin]),
        ):
            blocks.addSpacing(4)
            blocks.addWidget(button)
            row = _row(*inputs)
            row.setContentsMargins(12, 0, 0, 0)
            blocks.addLayout(row)
        self.answer_label = QLabel("", self)
        self.answer_label.setObjectName("solver_answer")
        self.answer_label.setWordWrap(True)
        self.answer_label.setTextFormat(Qt.TextFormat.RichText)
        self.answer_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.apply_button = QPushButton("Apply to scenario", self)
        self.apply_button.setEnabled(False)
        self.apply_button.setToolTip("Write the answer into the current scenario (one step of Edit > Undo)")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.intro)
        layout.addLayout(blocks)
        layout.addSpacing(6)
        layout.addWidget(self.answer_label)
        layout.addWidget(self.apply_button, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addStretch(1)

        self.cheapest_button.clicked.connect(lambda: self.solve("cheapest"))
        self.train_button.clicked.connect(lambda: self.solve("train"))
        self.largest_button.clicked.connect(lambda: self.solve("largest"))
        self.layout_button.clicked.connect(lambda: self.solve("layout"))
        self.apply_button.clicked.connect(self.apply)
        controller.changed.connect(self._on_changed)
        controller.project_replaced.connect(self._prefill)
        self._prefilled_for: str | None = None
        self._on_changed()

    # --- state --------------------------------------------------------------------------------

    def _prefill(self) -> None:
        """Inputs from the selected scenario (its GPU count, its tokens) when the selection changes."""
        scenario = self.controller.scenario
        self._prefilled_for = self.controller.current
        if scenario is None:
            return
        self.gpus_spin.setValue(scenario.num_gpus)
        if scenario.train_tokens:
            self.tokens_edit.setText(f"{scenario.train_tokens:.3g}")
        elif not self.tokens_edit.text():
            self.tokens_edit.setText("1e12")
        targets = self.setup.targets()
        if targets.max_tpot_s:
            self.tpot_spin.setValue(targets.max_tpot_s * 1000)
        if targets.deadline_days:
            self.days_spin.setValue(targets.deadline_days)

    def _on_changed(self) -> None:
        scenario = self.controller.scenario
        if self.controller.current != self._prefilled_for:
            self._prefill()
        training = scenario is not None and scenario.is_training
        self.train_button.setEnabled(training)
        self.largest_button.setEnabled(scenario is not None and not training)
        for button in (self.cheapest_button, self.layout_button):
            button.setEnabled(scenario is not None)
        name = escape(self.controller.current or "no scenario")
        self.intro.setText(f"Answers for the current scenario <b>{name}</b>; Apply changes it (undoable).")
        self._update_apply()

    def _update_apply(self) -> None:
        answer = self.answer
        current = answer is not None and self.controller.scenario is answer.base
        if current:
            self._applied = False  # back on the solved scenario (an undo): it can be applied again
        self.apply_button.setEnabled(bool(current and answer and answer.changes and not self._applied))
        if answer is None:
            return
        if self._applied:
            self.apply_button.setText("Applied")
        elif not current:
            self.apply_button.setText("Scenario changed: solve again")
        elif answer.changes == {}:
            self.apply_button.setText("Already the scenario's value")
        else:
            self.apply_button.setText("Apply to scenario")

    # --- solving ------------------------------------------------------------------------------

    def solve(self, question: str) -> int:
        """Start one question for the current scenario; returns the job's generation number."""
        scenario = self.controller.scenario
        project = self.controller.project
        if scenario is None:
            return 0
        catalogs, source = self.catalogs, self.engine_source
        if question == "cheapest":
            candidates, targets = self.setup.candidates(), self.setup.targets()

            def job(stale: Stale, report: Report) -> Answer:
                return solve_cheapest(source(), project, scenario, catalogs, candidates, targets)
        elif question == "train":
            tokens = parse_amount(self.tokens_edit.text())
            if tokens is None:
                self._show_error("enter the tokens to train on as a positive number, e.g. 2T or 1e12")
                return 0
            days = self.days_spin.value()

            def job(stale: Stale, report: Report) -> Answer:
                return solve_train(source(), project, scenario, catalogs, tokens, days)
        elif question == "largest":
            field_name, tpot = str(self.largest_field.currentData()), self.tpot_spin.value() / 1000

            def job(stale: Stale, report: Report) -> Answer:
                return solve_largest(source(), project, scenario, catalogs, field_name, tpot)
        elif question == "layout":
            gpus = self.gpus_spin.value()

            def job(stale: Stale, report: Report) -> Answer:
                return solve_layout(source(), project, scenario, catalogs, gpus)
        else:
            raise ValueError(f"unknown question {question!r}")
        self.answer = None
        self._applied = False
        self.apply_button.setEnabled(False)
        self.apply_button.setText("Apply to scenario")
        self.answer_label.setStyleSheet("")
        self.answer_label.setText("Solving…")
        return self.runner.submit(job)

    def _on_answer(self, generation: int, answer: Answer) -> None:
        self.answer = answer
        self._applied = False
        self.answer_label.setStyleSheet("")
        self.answer_label.setText(answer.html)
        self._update_apply()
        self.solved.emit(answer.question)

    def _on_failed(self, generation: int, message: str) -> None:
        self._show_error(message)
        self.solved.emit("")

    def _show_error(self, message: str) -> None:
        self.answer = None
        self.answer_label.setStyleSheet(f"color: {theme.BAD_COLOUR}")
        self.answer_label.setText(escape(gui_words(message)))
        self.apply_button.setEnabled(False)

    # --- applying -----------------------------------------------------------------------------

    def apply(self) -> bool:
        """Write the answer into its scenario as one undo step; False when it no longer applies."""
        answer = self.answer
        if answer is None or not answer.changes or self.controller.scenario is not answer.base:
            return False
        _, error = self.controller.propose(answer.changes)
        if error is not None:
            self._show_error(f"cannot apply: {error}")
            return False
        stack = self.controller.undo_stack
        stack.beginMacro(answer.undo_text)
        try:
            self.controller.set_fields(answer.changes, answer.undo_text)
        finally:
            stack.endMacro()
        self._applied = True
        self._update_apply()
        return True

    def shutdown(self) -> None:
        self.runner.shutdown()


def _row(*widgets: QWidget) -> QHBoxLayout:
    row = QHBoxLayout()
    row.setSpacing(4)
    for widget in widgets:
        row.addWidget(widget, 1 if isinstance(widget, (QLineEdit, QDoubleSpinBox, QSpinBox)) else 0)
        if isinstance(widget, QLabel):
            widget.setWordWrap(True)
    return row
