"""The Compare tab's equal-service-level page: each candidate in the configuration that meets the
targets at the lowest cost (:func:`workbench.engine.iso_sla.iso_sla`), whatever batch the scenario
was typed with, ranked; a failing candidate says which target binds.

"At equal service level" turns the mode on: the search then runs on the page's worker thread
(progress, Cancel) whenever the page is on screen and its inputs (scenario, candidates, targets,
the weight precisions allowed, the confidence's draws) changed; a change drops the result on screen.

With a confidence (200 or 1,000 draws) the job is one :func:`iso_sla_confidence` call, whose base
ranking is the table (the search is not run twice): each candidate's share of the draws is a
column, and the break-even thresholds, the rental break-even prices and the engine's notes are
lines above the table. The choices (mode, weights, draws) are the project's: ``settings_edited``
tells the Compare tab to save them with its setup.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QColor, QFont, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.core.dtypes import WeightFormat
from workbench.core.errors import InputError
from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.engine.compare import Candidate, Targets
from workbench.engine.confidence import MAX_DRAWS
from workbench.engine.iso_confidence import IsoConfidence, iso_sla_confidence
from workbench.engine.iso_sla import IsoResult, iso_sla, objective
from workbench.engine.pipeline import Engine
from workbench.gui import exports, theme
from workbench.gui.background import BackgroundRunner, Report, Stale, engine_progress
from workbench.gui.catalogs import Catalogs
from workbench.gui.compare.compare_format import CONFIDENCE_DRAWS, gui_words, number, short_name
from workbench.gui.compare.iso_confidence_text import confidence_html, share_text
from workbench.gui.compare.progress_row import ProgressRow
from workbench.gui.elided_label import WholeLinesLabel

#: Weight precisions a user may allow (serving: fp32 weights are never the cheaper choice).
WEIGHT_CHOICES = tuple(w.value for w in WeightFormat if w is not WeightFormat.FP32)

#: The accelerator column's widest (logical pixels).
ACCELERATOR_MAX_PX = 170
#: (id, header, tooltip)
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("rank", "#", "Rank at equal service level: meeting the targets first, then by cost"),
    ("accelerator", "Accelerator", "The candidate accelerator"),
    ("config", "Won with", "The cheapest configuration that meets every target: replicas × TP degree, "
                           "concurrency (batch per replica), weight precision"),
    ("gpus", "GPUs", "GPUs of all the replicas"),
    ("cost", "Cost", "What the search minimizes"),
    ("tpot", "TPOT\n(ms)", "Mean time per output token of the winning configuration"),
    ("why", "Result: why not", "Why a candidate misses the targets (which target binds), or how it compares"),
    ("share", "Cheapest\nin", "Confidence: the share of the draws of the assumptions in which this candidate is the "
                              "cheapest that meets the targets at equal service level"),
)


COLUMN_INDEX = {ident: n for n, (ident, _, _) in enumerate(COLUMNS)}


def changes_only(report: Report) -> Report:
    """``report`` for values that differ from the last one sent. The confidence checks in (and
    is stopped by a Cancel) thousands of times a run, mostly with the same step: each report sent
    is a queued signal the GUI thread takes the GIL for, and on a loaded 2-core machine each such
    hand-over of the GIL cost the worker a wait for the scheduler (3,800 of them a run: the
    window took 3.5 s where the engine alone took 2.4 s; tests/benchmarks/bench_gui_iso.py)."""
    last: list[Any] = [object()]

    def send(value: Any) -> None:
        if value != last[0]:
            last[0] = value
            report(value)

    return send


def choose_draws(combo: QComboBox, draws: int) -> None:
    """Select ``draws`` in a confidence list, adding it when not offered (a project saved with
    another number, a test's few draws)."""
    if not 0 <= draws <= MAX_DRAWS:
        raise InputError(f"confidence: the number of draws must be 0 (off) to {MAX_DRAWS:,}, got {draws}")
    index = combo.findData(draws)
    if index < 0:
        combo.addItem(f"{draws:,} draws", draws)
        index = combo.count() - 1
    combo.setCurrentIndex(index)


def note_colour() -> str:
    """Amber for the confidence's notes, dark enough to read as text on a light window."""
    return theme.WARN_COLOUR if theme.is_dark() else "#9a5b00"


def scenario_weights(scenario: Scenario) -> str:
    return scenario.weights.value if scenario.weights else scenario.dtype.value


def cost_text(result: IsoResult, demand: bool) -> str:
    best = result.best
    value = None if best is None else objective(best, demand)
    if value is None:
        return "–" if best is None else "no price"
    return f"${value:,.2f}" if demand else f"${value:,.3g}"  # the unit is in the column's header


class IsoSlaView(QWidget):
    #: A result (or an error) is on screen (the job's generation; 0 when cleared).
    results_shown = Signal(int)
    #: The user changed the mode, the weights allowed or the confidence's draws (saved with the project).
    settings_edited = Signal()

    def __init__(self, catalogs: Catalogs, engine_source: Callable[[], Engine], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("iso_sla_view")
        self.catalogs, self.engine_source = catalogs, engine_source
        self.runner = BackgroundRunner(self)
        self.runner.finished.connect(self._on_result)
        self.runner.failed.connect(self._on_failed)
        self.runner.progress.connect(lambda _g, value: self.progress.progressed(*value))
        self.mode_button = QPushButton("At equal service level", self)
        self.mode_button.setObjectName("iso_sla_mode")
        self.mode_button.setCheckable(True)
        self.mode_button.setToolTip("Search each candidate's configurations (TP over one node's GPUs × batch 1–1,024 × "
                                    "the weight precisions allowed, replicas for the demand) for the cheapest that "
                                    "meets every target, then rank them")
        self.mode_button.toggled.connect(self._on_mode)
        self.weights_button = QToolButton(self)
        self.weights_button.setObjectName("iso_sla_weights")
        self.weights_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.weights_button.setToolTip("Weight precisions the search may choose (default: the scenario's own)")
        self.weights_menu = QMenu(self.weights_button)
        self.weight_actions: dict[str, QAction] = {}
        for value in WEIGHT_CHOICES:
            action = QAction(value, self.weights_menu)
            action.setCheckable(True)
            action.toggled.connect(lambda _on: self._on_weights_ticked())
            self.weights_menu.addAction(action)
            self.weight_actions[value] = action
        self.weights_button.setMenu(self.weights_menu)
        self.draws_choice = QComboBox(self)
        self.draws_choice.setObjectName("iso_sla_confidence")
        for draws, label in CONFIDENCE_DRAWS:
            self.draws_choice.addItem(label, draws)
        self.draws_choice.setToolTip("Confidence: search again over this many draws of the uncertain assumptions "
                                     "(each uniform over its documented range, seeded) and show how often each "
                                     "candidate is the cheapest at equal service level, with the break-even "
                                     "thresholds")
        self.draws_choice.currentIndexChanged.connect(lambda _: self._on_draws())
        draws_label = QLabel("Confidence:", self)
        draws_label.setToolTip(self.draws_choice.toolTip())
        top = QHBoxLayout()
        top.addWidget(self.mode_button)
        top.addWidget(self.weights_button)
        top.addStretch(1)
        self.progress = ProgressRow("iso_sla", self)
        self.progress.cancel_requested.connect(self.cancel)
        # The confidence on the line of the progress (as on the Ranking page): beside the mode and
        # the weights it made the page too wide for a 1280x800 screen at 150%.
        status = QHBoxLayout()
        status.setSpacing(6)
        status.addWidget(draws_label)
        status.addWidget(self.draws_choice)
        status.addWidget(self.progress, 1)
        self.summary = WholeLinesLabel("", self)
        self.summary.setObjectName("iso_sla_summary")
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.confidence_label = WholeLinesLabel("", self)
        self.confidence_label.setObjectName("iso_sla_confidence_text")
        self.confidence_label.setTextFormat(Qt.TextFormat.RichText)
        self.confidence_label.setVisible(False)
        self.table = QTableWidget(0, len(COLUMNS), self)
        self.table.setObjectName("iso_sla_table")
        self.table.setHorizontalHeaderLabels([c[1] for c in COLUMNS])
        for n, (_, _, tip) in enumerate(COLUMNS):
            self.table.horizontalHeaderItem(n).setToolTip(tip)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        header = self.table.horizontalHeader()
        header.setDefaultAlignment(Qt.AlignmentFlag.AlignCenter)
        for n, (ident, _, _) in enumerate(COLUMNS):
            mode = (QHeaderView.ResizeMode.Stretch if ident in ("config", "why") else
                    QHeaderView.ResizeMode.Interactive if ident == "accelerator" else
                    QHeaderView.ResizeMode.ResizeToContents)
            header.setSectionResizeMode(n, mode)
        self.table.setColumnWidth(1, 110)
        exports.add_table_actions(self.table, "equal-service-level")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addLayout(status)
        layout.addWidget(self.summary)
        layout.addWidget(self.confidence_label)
        layout.addWidget(self.table, 1)
        #: The scenario, candidates, targets and names to search with (None: nothing to search).
        self._inputs: tuple[Project, Scenario, tuple[Candidate, ...], Targets, dict[Candidate, str]] | None = None
        self._chosen_weights: tuple[str, ...] | None = None  # None: the scenario's own
        self._shown_key: tuple[Any, ...] | None = None
        self._running_key: tuple[Any, ...] | None = None  # what the search under way is for
        self._dirty = False
        self.results: list[IsoResult] = []
        #: The confidence on screen (None: off, or not computed yet).
        self.confidence: IsoConfidence | None = None
        self.scenario: Scenario | None = None
        self._show_weights()
        self._idle_text()

    # --- inputs -------------------------------------------------------------------------------

    def weights(self) -> tuple[str, ...]:
        """The weight precisions the search may choose."""
        if self._chosen_weights:
            return self._chosen_weights
        return (scenario_weights(self._inputs[1]),) if self._inputs is not None else ()

    def set_weights(self, values: tuple[str, ...] | None) -> None:
        """Allow these weight precisions (None or empty: the scenario's own)."""
        self._chosen_weights = tuple(v for v in WEIGHT_CHOICES if v in (values or ())) or None
        self._show_weights()
        self._changed()

    def _on_weights_ticked(self) -> None:
        ticked = tuple(v for v, a in self.weight_actions.items() if a.isChecked())
        if ticked != self.weights():
            self.set_weights(ticked)
            self.settings_edited.emit()

    def _show_weights(self) -> None:
        allowed = self.weights()
        for value, action in self.weight_actions.items():
            action.blockSignals(True)
            action.setChecked(value in allowed)
            action.blockSignals(False)
        own = "" if self._chosen_weights else " (the scenario's)"
        self.weights_button.setText(f"Weights: {', '.join(allowed) or '–'}{own}")

    def chosen_weights(self) -> tuple[str, ...]:
        """The weight precisions the user chose (empty: the scenario's own), as the project keeps them."""
        return self._chosen_weights or ()

    def draws(self) -> int:
        """Draws of the confidence (0: off)."""
        return int(self.draws_choice.currentData() or 0)

    def set_draws(self, draws: int) -> None:
        """Compute the confidence over ``draws`` draws, or not (0); a number the list does not
        offer is added to it."""
        choose_draws(self.draws_choice, draws)

    def apply_settings(self, on: bool, weights: tuple[str, ...], draws: int) -> None:
        """Show the project's saved choices (opened, undone): not an edit, so nothing is saved back."""
        for widget in (self.draws_choice, self.mode_button):
            widget.blockSignals(True)
        choose_draws(self.draws_choice, draws)
        self.mode_button.setChecked(on)
        for widget in (self.draws_choice, self.mode_button):
            widget.blockSignals(False)
        self.mode_button.setText("✓ At equal service level" if on else "At equal service level")
        self._chosen_weights = tuple(v for v in WEIGHT_CHOICES if v in weights) or None
        self._show_weights()
        if not on:
            self.runner.cancel()
            self._running_key = None
            self._clear()
        else:
            self._changed()

    def set_inputs(self, project: Project, scenario: Scenario | None, candidates: tuple[Candidate, ...],
                   targets: Targets, names: dict[Candidate, str]) -> None:
        self._inputs = None if scenario is None or not candidates else (project, scenario, candidates, targets, names)
        self._show_weights()
        self._changed()

    def _key(self) -> tuple[Any, ...] | None:
        if self._inputs is None:
            return None
        project, scenario, candidates, targets, _ = self._inputs
        return (scenario.model_dump_json(), candidates, targets, self.weights(), project.models, project.accelerators,
                self.draws())

    def _changed(self) -> None:
        key = self._key()
        if key == self._shown_key and key is not None:
            return
        shown = self._shown_key
        if (key is not None and shown is not None and key[-1] == 0 and key[:-1] == shown[:-1]
                and not self.runner.is_busy()):
            # The confidence turned off: the ranking on screen is its base ranking, kept.
            self.runner.cancel()
            self._shown_key, self.confidence = key, None
            self._show_confidence()
            return
        if self.runner.is_busy() and key == self._running_key:
            return
        self.runner.cancel()
        self._clear()
        self._dirty = True
        if self.isVisible() and self.mode_button.isChecked():
            self.refresh()

    def _clear(self) -> None:
        self.results, self.scenario, self._shown_key, self.confidence = [], None, None, None
        self.table.setRowCount(0)
        self.summary.setText("")
        self.confidence_label.setText("")
        self.confidence_label.setVisible(False)
        self.table.setColumnHidden(COLUMN_INDEX["share"], True)
        self._idle_text()
        self.results_shown.emit(0)

    def _idle_text(self) -> None:
        if not self.mode_button.isChecked():
            text = ("Off: the ranking sizes each candidate at the batch the scenario was typed with. Turn on "
                    "“At equal service level” to rank each in its cheapest configuration that meets the targets.")
        elif self._inputs is None:
            text = "Tick candidates and a serving scenario to compare at equal service level."
        else:
            text = ""
        self.progress.stopped(text)

    # The choice is saved after the search is under way: saving is a project edit the rest of the
    # window reacts to on the GUI thread, which then overlaps the worker instead of delaying it.

    def _on_draws(self) -> None:
        self._changed()
        self.settings_edited.emit()

    def _on_mode(self, on: bool) -> None:
        self.mode_button.setText("✓ At equal service level" if on else "At equal service level")
        if on:
            self._dirty = True
            if self.isVisible():
                self.refresh()
        else:
            self.runner.cancel()
            self._clear()
        self.settings_edited.emit()

    # --- running ------------------------------------------------------------------------------

    def refresh(self) -> int:
        """Search now (the mode on); returns the job's generation (0: nothing to search)."""
        self._dirty = False
        if not self.mode_button.isChecked() or self._inputs is None:
            self._idle_text()
            return 0
        project, scenario, candidates, targets, _ = self._inputs
        if scenario.is_training:
            self.progress.stopped("The equal-service-level comparison is for serving scenarios: pick a serving "
                                  "scenario's row in the ranking.")
            return 0
        catalogs, source, weights, draws = self.catalogs, self.engine_source, list(self.weights()), self.draws()

        def resolve(s: Scenario) -> Any:
            return catalogs.resolve(s, project)

        def job(stale: Stale, report: Report) -> tuple[list[IsoResult], IsoConfidence | None]:
            progress = engine_progress(stale, changes_only(report))
            if draws:
                # One call: its base ranking is iso_sla's, so the search is not run twice.
                confidence = iso_sla_confidence(source(), scenario, candidates, resolve, targets, weights=weights,
                                                draws=draws, progress=progress)
                return confidence.base, confidence
            return iso_sla(source(), scenario, candidates, resolve, targets, weights=weights, progress=progress), None

        self._running_key = self._key()
        over = f", then over {draws:,} draws of the assumptions" if draws else ""
        self.progress.started(f"Searching configurations of {len(candidates)} candidate"
                              f"{'s' * (len(candidates) != 1)} on “{scenario.name}”{over}…")
        return self.runner.submit(job)

    def cancel(self) -> None:
        self.runner.cancel()
        self._running_key = None
        self._dirty = True  # shown again, the page searches again
        self.progress.stopped("Cancelled: no result. Leave this page and come back (or change the inputs) to search "
                              "again.")

    def _on_result(self, generation: int, found: tuple[list[IsoResult], IsoConfidence | None]) -> None:
        assert self._inputs is not None
        _, scenario, _, targets, names = self._inputs
        results, self.confidence = found
        self.results, self.scenario, self._shown_key = results, scenario, self._running_key
        self._running_key = None
        demand = targets.min_tokens_per_s is not None
        self._fill(results, names, demand)
        basis = ("cost per hour of the replicas the demand needs" if demand else "cost per million tokens")
        self.progress.stopped(f"“{scenario.name}”, each candidate in its cheapest configuration of one-node replicas "
                              f"that meets the targets (by {basis}; weights {', '.join(self.weights())}).")
        self.summary.setText(summary_html(results, names, demand))
        self._show_confidence()
        self.results_shown.emit(generation)

    def _show_confidence(self) -> None:
        """The shares column and the lines above the table, or neither (confidence off)."""
        confidence = self.confidence
        self.table.setColumnHidden(COLUMN_INDEX["share"], confidence is None)
        self.confidence_label.setVisible(confidence is not None)
        if confidence is None or self._inputs is None:
            self.confidence_label.setText("")
            return
        names = self._inputs[4]
        self.confidence_label.setText(confidence_html(confidence, names, note_colour()))
        for row, result in enumerate(self.results):
            item = self.table.item(row, COLUMN_INDEX["share"])
            if item is not None:
                item.setText(share_text(confidence, result.candidate.label))

    def _on_failed(self, generation: int, message: str) -> None:
        self._running_key = None
        self.progress.stopped(f"Cannot compare at equal service level: {gui_words(message)}")
        self.results_shown.emit(generation)

    # --- the table ----------------------------------------------------------------------------

    def _fill(self, results: list[IsoResult], names: dict[Candidate, str], demand: bool) -> None:
        self.table.setRowCount(len(results))
        self.table.horizontalHeaderItem(4).setText("Cost\n($/h)" if demand else "Cost\n($/M tok)")
        self.table.horizontalHeaderItem(4).setToolTip(
            "Cost per hour of all the replicas the demand needs (what the search minimizes)" if demand else
            "Rental cost per million tokens (what the search minimizes)")
        winner = results[0] if results and results[0].meets else None
        bold = QFont(self.table.font())
        bold.setBold(True)
        green = QColor(theme.OK_COLOUR)
        green.setAlpha(70)
        for row, result in enumerate(results):
            name = names.get(result.candidate, result.candidate.label)
            texts = row_texts(result, name, winner, demand)
            tip = row_tooltip(result, name, demand)
            for col, (ident, _, _) in enumerate(COLUMNS):
                item = QTableWidgetItem(texts[ident])
                item.setToolTip(tip)
                if ident in ("rank", "gpus", "cost", "tpot", "share"):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if result is winner:
                    item.setFont(bold)
                    item.setBackground(green)
                if ident == "why" and not result.meets:
                    item.setForeground(QColor(theme.BAD_COLOUR))
                self.table.setItem(row, col, item)
        # As wide as the longest name, up to a limit (a longer one is elided, whole in its tooltip).
        widest = max((self.table.fontMetrics().horizontalAdvance(self.table.item(r, 1).text())
                      for r in range(len(results))), default=0)
        self.table.setColumnWidth(1, min(widest + 24, ACCELERATOR_MAX_PX))

    def winner(self) -> IsoResult | None:
        return self.results[0] if self.results and self.results[0].meets else None

    # --- events -------------------------------------------------------------------------------

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if self._dirty and self.mode_button.isChecked():
            self.refresh()

    def shutdown(self) -> None:
        self.runner.shutdown()


def row_texts(result: IsoResult, name: str, winner: IsoResult | None, demand: bool) -> dict[str, str]:
    best = result.best
    config = "–"
    if best is not None:
        reps = f"{best.replicas} × " if best.replicas > 1 else ""
        config = f"{reps}TP {best.tp}, batch {best.batch}, {best.weights}"
    if not result.meets:
        why = gui_words(result.reason)
    elif result is winner:
        why = "cheapest at equal service level"
    elif winner is not None and winner.best is not None and best is not None:
        mine, theirs = objective(best, demand), objective(winner.best, demand)
        why = (f"meets the targets; {mine / theirs:.2f}× the winner's cost" if mine and theirs else "meets the targets")
    else:
        why = "meets the targets"
    return {
        "rank": str(result.rank),
        "accelerator": short_name(name, 22),
        "config": config,
        "gpus": "–" if best is None else f"{best.gpus:,}",
        "cost": cost_text(result, demand),
        "tpot": "–" if best is None else number(best.tpot_s * 1e3),
        "share": "",  # filled in with the confidence
        "why": why,
    }


def row_tooltip(result: IsoResult, name: str, demand: bool) -> str:
    lines = [f"<b>{escape(name)}</b> ({escape(result.candidate.label)}), rank {result.rank}"]
    best = result.best
    if best is not None:
        reps = f"{best.replicas} replica{'s' * (best.replicas != 1)} of " if demand else ""
        lines.append(f"{escape(reps)}TP {best.tp} at batch {best.batch} with {escape(best.weights)} weights: "
                     f"{best.gpus:,} GPU{'s' * (best.gpus != 1)}")
        hourly = "no price" if best.usd_per_hour is None else f"${best.usd_per_hour:,.2f}/h"
        per_m = "no price" if best.usd_per_million_tokens is None else f"${best.usd_per_million_tokens:,.3g}/M tokens"
        lines.append(f"Cost {escape(hourly)} · {escape(per_m)}")
        lines.append(f"Mean TTFT {number(best.ttft_s * 1e3)} ms · TPOT {number(best.tpot_s * 1e3)} ms · "
                     f"{number(best.tokens_per_s)} tokens/s in all")
    lines.append("Meets the targets" if result.meets else f"Misses: {escape(gui_words(result.reason))}")
    lines.append(f"{result.searched:,} configurations that run were searched")
    lines.extend(escape(note) for note in result.notes)
    return "<br>".join(lines)


def summary_html(results: list[IsoResult], names: dict[Candidate, str], demand: bool) -> str:
    winner = results[0] if results and results[0].meets else None
    if winner is None or winner.best is None:
        return "<b>No candidate meets the targets at any configuration searched.</b>"
    name = escape(short_name(names.get(winner.candidate, winner.candidate.label)))
    meeting = sum(r.meets for r in results)
    unit = "/h" if demand else " per M tokens"
    return (f"<b>At equal service level: {name}</b>, {escape(cost_text(winner, demand))}{unit} with "
            f"{escape(winner.best.describe())} ({winner.best.gpus:,} GPU{'s' * (winner.best.gpus != 1)}). "
            f"<small>{meeting} of {len(results)} "
            f"candidates meet the targets.</small>")
