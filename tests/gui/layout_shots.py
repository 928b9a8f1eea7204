"""Open the real app at one screen size and scale, show every tab, save a screenshot of each and
list what cannot be read (tests/gui/layout_check.py). Run under a display::

    DISPLAY=:99 QT_QPA_PLATFORM=xcb QT_SCALE_FACTOR=1.5 python tests/gui/layout_shots.py OUTDIR 1920x1080

The size is the screen's in device pixels: at 150% a 1920x1080 screen gives the window 1280x720
logical pixels, as its user sees it. The window fills the screen (as maximized). States: ``charts``
(the sample's first scenario, Scenario panel in front), ``out-of-memory`` (256 requests: the fixes at
the top of Results, Model panel in front), ``kernels`` (the Kernels tab), ``compare`` (Hardware panel
in front), ``compare-confidence`` (the ranking with its 200-draw confidence column),
``compare-pareto`` (the Pareto fronts page), ``compare-iso`` (the ranking at equal service level with its
200-draw confidence, a TPOT target set) and ``sensitivity``.
Writes ``layout.json``: {"size", "logical", "shots": {state: [problems]}}.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

sys.path.insert(0, str(Path(__file__).resolve().parent))
from layout_check import problems  # noqa: E402

from workbench.gui.app import create_application, run_app  # noqa: E402
from workbench.gui.main_window import MainWindow  # noqa: E402


class Driver:
    def __init__(self, app: QApplication, out: Path, size: tuple[int, int]) -> None:
        self.app, self.out, self.size = app, out, size
        self.report: dict[str, object] = {"size": list(size), "shots": {}}
        self.steps = [self.charts, self.out_of_memory, self.kernels, self.compare, self.compare_confidence,
                      self.compare_pareto, self.compare_iso, self.sensitivity, self.finish]
        QTimer.singleShot(0, self.attach)

    def attach(self) -> None:
        windows = [w for w in self.app.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()]
        if not windows:
            QTimer.singleShot(20, self.attach)
            return
        self.window = windows[0]
        self.window.ask_before_discard = False
        self.window.hint.dismiss()
        ratio = self.window.devicePixelRatioF() or 1.0
        logical = (round(self.size[0] / ratio), round(self.size[1] / ratio))
        self.report["logical"] = list(logical)
        self.window.setGeometry(0, 0, *logical)
        self.logical = logical
        self._settle(self._next)

    def _settle(self, then, tries: int = 0) -> None:  # type: ignore[no-untyped-def]
        runner = self.window.runner
        sweep = self.window.sweep_chart.outcome
        done = (not runner.is_busy() and runner.last_outcome is not None
                and runner.last_outcome.generation == runner.generation
                and sweep is not None and sweep.generation == runner.generation)
        if done or tries > 200:
            QTimer.singleShot(150, then)
        else:
            QTimer.singleShot(30, lambda: self._settle(then, tries + 1))

    def _wait_view(self, view, then, tries: int = 0) -> None:  # type: ignore[no-untyped-def]
        shown = view.result if hasattr(view, "result") else view.outcome
        if (shown is not None and not view.runner.is_busy()) or tries > 400:
            QTimer.singleShot(150, then)
        else:
            QTimer.singleShot(30, lambda: self._wait_view(view, then, tries + 1))

    def _wait_idle(self, runner, shown, then, tries: int = 0) -> None:  # type: ignore[no-untyped-def]
        if (shown() and not runner.is_busy()) or tries > 600:
            QTimer.singleShot(150, then)
        else:
            QTimer.singleShot(30, lambda: self._wait_idle(runner, shown, then, tries + 1))

    def _next(self) -> None:
        try:
            self.steps.pop(0)()
        except Exception as exc:  # noqa: BLE001 - say it and stop, instead of the app's error dialog
            self.report["error"] = repr(exc)
            (self.out / "layout.json").write_text(json.dumps(self.report, indent=1))
            self.app.quit()
            raise

    def _shot(self, name: str) -> None:
        self.app.processEvents()
        self.window.grab().save(str(self.out / f"{name}.png"))
        self.report["shots"][name] = problems(self.window)  # type: ignore[index]
        self.report.setdefault("window", {})[name] = [self.window.width(), self.window.height()]  # type: ignore[union-attr]
        hint = self.window.minimumSizeHint()
        self.report.setdefault("minimum", {})[name] = [hint.width(), hint.height()]  # type: ignore[union-attr]

    def charts(self) -> None:
        # Again, now that the start hint is gone (the window could not be that small with it).
        self.window.setGeometry(0, 0, *self.logical)
        self.window.docks["scenario_dock"].raise_()
        self.app.processEvents()
        self._shot("charts")
        self.window.scenario_panel.set_value("batch_size", 256)
        self.window.docks["model_dock"].raise_()
        self._settle(self._next)

    def out_of_memory(self) -> None:
        self._shot("out-of-memory")
        self.window.controller.undo_stack.undo()
        self.window.tabs.show_page("kernels")
        self._settle(self._next)

    def kernels(self) -> None:
        self._shot("kernels")
        self.window.docks["hardware_dock"].raise_()
        self.window.tabs.show_page("compare")
        self._settle(lambda: self._wait_view(self.window.compare_view, self._next))

    def compare(self) -> None:
        self._shot("compare")
        view = self.window.compare_view
        view.set_confidence_draws(200)
        self._wait_idle(view.confidence_runner, lambda: view.confidence is not None, self._next)

    def compare_confidence(self) -> None:
        self._shot("compare-confidence")
        view = self.window.compare_view
        view.result_tabs.setCurrentWidget(view.pareto_view)
        self._wait_idle(view.pareto_view.runner, lambda: bool(view.pareto_view.fronts), self._next)

    def compare_pareto(self) -> None:
        self._shot("compare-pareto")
        view = self.window.compare_view
        view.set_target("max_tpot_s", 50)
        view.result_tabs.setCurrentWidget(view.iso_view)
        view.iso_view.set_draws(200)
        view.iso_view.mode_button.setChecked(True)
        self._wait_view(view, lambda: self._wait_idle(view.iso_view.runner,
                                                      lambda: view.iso_view.confidence is not None, self._next))

    def compare_iso(self) -> None:
        self._shot("compare-iso")
        self.window.compare_view.result_tabs.setCurrentIndex(0)
        self.window.docks["scenario_dock"].raise_()
        self.window.tabs.show_page("sensitivity")
        self._wait_view(self.window.sensitivity_view, self._next)

    def sensitivity(self) -> None:
        self._shot("sensitivity")
        self._next()

    def finish(self) -> None:
        (self.out / "layout.json").write_text(json.dumps(self.report, indent=1))
        self.window.close()
        self.app.quit()


def main(argv: list[str]) -> int:
    out = Path(argv[1]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / "config", ignore_errors=True)
    os.environ["XDG_CONFIG_HOME"] = str(out / "config")  # a first launch; the user's settings untouched
    os.environ.setdefault("WORKBENCH_USER_DIR", str(out / "user"))
    width, height = argv[2].lower().split("x")
    app = create_application([])
    app.setStyle("Fusion")
    Driver(app, out, (int(width), int(height)))
    QTimer.singleShot(60_000, app.quit)  # never hang a test run
    run_app([])
    return 0 if (out / "layout.json").exists() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
