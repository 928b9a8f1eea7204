"""Start the real app (``workbench.gui.app.run_app``) and save screenshots of its window in
several states.

Run under a display (tests/gui/test_screenshots_xvfb.py starts Xvfb for it)::

    DISPLAY=:99 QT_QPA_PLATFORM=xcb python tests/gui_screenshots.py OUTDIR [WIDTHxHEIGHT]

Settings go to ``OUTDIR/config`` (``XDG_CONFIG_HOME``), so every run is a first launch: the sample
project with its start hint. States: ``fits`` (Llama-3.1-8B on one H100), ``out-of-memory`` (the
same with 256 concurrent requests), ``roofline-training`` (70B pre-training on 64 H100s, hardware
panel in front), ``moe-serving`` (Mixtral on two A100s), ``hybrid-state`` (Bamba-9B serving 64 requests: the recurrent state
beside the KV cache), ``kernels`` (the Kernels tab: where the chat scenario's decode step spends
its time), ``compare`` (the Compare tab), ``sensitivity`` and ``sensitivity-no-panels``
(the Sensitivity tab with the side panels shown, then hidden) and ``dark`` (a dark palette). The
window is 1600x1000 unless a size is given. Writes ``screenshots.json`` with the file names and the
window-ready time.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

START = time.perf_counter()

from PySide6.QtCore import QTimer  # noqa: E402
from PySide6.QtGui import QColor, QPalette  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from workbench.gui.app import create_application, run_app  # noqa: E402
from workbench.gui.main_window import MainWindow  # noqa: E402

SIZE = (1600, 1000)


def dark_palette() -> QPalette:
    pal = QPalette()
    for role, colour in (
        (QPalette.ColorRole.Window, "#2b2d30"), (QPalette.ColorRole.WindowText, "#e6e6e6"),
        (QPalette.ColorRole.Base, "#1e1f22"), (QPalette.ColorRole.AlternateBase, "#26282b"),
        (QPalette.ColorRole.Text, "#e6e6e6"), (QPalette.ColorRole.Button, "#34363a"),
        (QPalette.ColorRole.ButtonText, "#e6e6e6"), (QPalette.ColorRole.Highlight, "#2f65ca"),
        (QPalette.ColorRole.HighlightedText, "#ffffff"), (QPalette.ColorRole.ToolTipBase, "#3c3f41"),
        (QPalette.ColorRole.ToolTipText, "#e6e6e6"), (QPalette.ColorRole.PlaceholderText, "#8c8c8c"),
    ):
        pal.setColor(role, QColor(colour))
    return pal


class Driver:
    def __init__(self, app: QApplication, out: Path) -> None:
        self.app, self.out = app, out
        self.files: list[str] = []
        self.ready_s = 0.0
        self.size = SIZE
        self.steps = [self.fits, self.out_of_memory, self.training, self.moe, self.hybrid, self.kernels,
                      self.compare,
                      self.sensitivity, self.sensitivity_no_panels, self.dark, self.finish]
        QTimer.singleShot(0, self.attach)

    def attach(self) -> None:
        """Find the window run_app opened (retry until it is shown)."""
        windows = [w for w in self.app.topLevelWidgets() if isinstance(w, MainWindow) and w.isVisible()]
        if not windows:
            QTimer.singleShot(20, self.attach)
            return
        self.ready_s = time.perf_counter() - START
        self.window = windows[0]
        self.window.ask_before_discard = False
        # The size is the screen's, in device pixels: at 150% scaling a 1920x1080 screen gives
        # the window 1280x720 logical pixels, as a user of that screen sees it.
        ratio = self.window.devicePixelRatioF() or 1.0
        self.window.resize(round(self.size[0] / ratio), round(self.size[1] / ratio))
        self._settle(self._next)

    # Wait until the newest estimate and its sweep are on screen, then paint, then go on.
    def _settle(self, then, tries: int = 0) -> None:  # type: ignore[no-untyped-def]
        runner = self.window.runner
        sweep = self.window.sweep_chart.outcome
        done = (not runner.is_busy() and runner.last_outcome is not None
                and runner.last_outcome.generation == runner.generation
                and sweep is not None and sweep.generation == runner.generation)
        if done or tries > 200:
            QTimer.singleShot(300, then)
        else:
            QTimer.singleShot(50, lambda: self._settle(then, tries + 1))

    def _next(self) -> None:
        self.steps.pop(0)()

    def _shot(self, name: str) -> None:
        self.app.processEvents()
        screen = self.window.screen()
        image = screen.grabWindow(self.window.winId())
        if image.isNull() or image.width() < 100:
            image = self.window.grab()
        path = self.out / f"{name}.png"
        image.save(str(path))
        self.files.append(path.name)

    def fits(self) -> None:
        self._shot("fits")
        self.window.scenario_panel.set_value("batch_size", 256)
        self._settle(self._next)

    def out_of_memory(self) -> None:
        self._shot("out-of-memory")
        self.window.controller.undo_stack.undo()
        self.window.hint.dismiss()
        self.window.controller.set_current("Llama-3.1-70B pre-training on 64x H100 (ZeRO-3)")
        self.window.docks["hardware_dock"].raise_()
        self._settle(self._next)

    def training(self) -> None:
        self._shot("roofline-training")
        self.window.docks["model_dock"].raise_()
        self.window.controller.set_current("Mixtral-8x7B serving on 2x A100")
        self._settle(self._next)

    def moe(self) -> None:
        self._shot("moe-serving")
        self.window.controller.set_current("Llama-3.1-8B chat on 1x H100")
        self.window.model_panel.table.choose("bamba-9b")  # a Mamba-2 hybrid: recurrent state beside KV
        self.window.scenario_panel.set_value("batch_size", 64)
        self._settle(self._next)

    def hybrid(self) -> None:
        self._shot("hybrid-state")
        self.window.controller.undo_stack.undo()
        self.window.controller.undo_stack.undo()
        self.window.tabs.show_page("kernels")
        self._settle(self._next)

    def kernels(self) -> None:
        self._shot("kernels")
        self.window.tabs.show_page("compare")
        self._settle(lambda: self._wait_view(self.window.compare_view, self._next))

    # The compare and sensitivity views compute on their own runners while their tab is shown.
    def _wait_view(self, view, then, tries: int = 0) -> None:  # type: ignore[no-untyped-def]
        shown = view.result if hasattr(view, "result") else view.outcome
        if (shown is not None and not view.runner.is_busy()) or tries > 400:
            QTimer.singleShot(300, then)
        else:
            QTimer.singleShot(50, lambda: self._wait_view(view, then, tries + 1))

    def compare(self) -> None:
        self._shot("compare")
        self.window.tabs.show_page("sensitivity")
        self._wait_view(self.window.sensitivity_view, self._next)

    def sensitivity(self) -> None:
        self._shot("sensitivity")
        self.window.tabs.focus_button.click()  # hide the side panels
        QTimer.singleShot(400, self._next)

    def sensitivity_no_panels(self) -> None:
        self._shot("sensitivity-no-panels")
        self.window.tabs.focus_button.click()
        self.window.tabs.show_page("charts")
        self.app.setPalette(dark_palette())
        self._settle(self._next)

    def dark(self) -> None:
        self._shot("dark")
        self._next()

    def finish(self) -> None:
        (self.out / "screenshots.json").write_text(json.dumps(
            {"files": self.files, "window_ready_s": round(self.ready_s, 3), "size": self.size}, indent=1))
        self.window.close()
        self.app.quit()


def main(argv: list[str]) -> int:
    out = Path(argv[1] if len(argv) > 1 else "screenshots").resolve()
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / "config", ignore_errors=True)
    os.environ["XDG_CONFIG_HOME"] = str(out / "config")  # a first launch, and the user's settings untouched
    app = create_application([])
    app.setStyle("Fusion")  # the same look on every machine the screenshots are taken on
    driver = Driver(app, out)
    if len(argv) > 2:
        width, height = argv[2].lower().split("x")
        driver.size = (int(width), int(height))
    QTimer.singleShot(90_000, app.quit)  # never hang a test run
    code = run_app([])
    return code if driver.files else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
