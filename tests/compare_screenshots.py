"""Screenshots of the Compare and Sensitivity tabs of the real window (the real engine).

Run under a display::

    Xvfb :95 -screen 0 1600x1000x24 -nolisten tcp &
    DISPLAY=:95 QT_QPA_PLATFORM=xcb python tests/compare_screenshots.py OUTDIR

Opens the sample project (settings under ``OUTDIR/config``), ticks the accelerators with a rental
price, sets a TPOT target on the first scenario, and saves ``compare-window.png`` (the whole
window), ``compare.png`` (the Compare tab, side panels hidden), ``solver.png`` (the Solve page after the
cheapest-accelerator question), ``sensitivity.png`` (with a TPOT target that a swing breaks) and
``compare-dark.png`` (a dark palette).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from workbench.gui.app import create_application
from workbench.gui.main_window import MainWindow

SIZE = (1600, 1000)


class Driver:
    def __init__(self, app: QApplication, out: Path) -> None:
        self.app, self.out = app, out
        self.window = MainWindow()
        self.window.ask_before_discard = False
        self.window.hint.dismiss()
        self.window.resize(*SIZE)
        self.window.show()
        self.files: list[str] = []
        self.steps = [self.setup, self.compare, self.wide, self.solve, self.sensitivity, self.dark, self.finish]
        QTimer.singleShot(800, self._next)

    def _next(self) -> None:
        self.steps.pop(0)()

    def _after(self, signal, then, delay: int = 400) -> None:  # type: ignore[no-untyped-def]
        """Run ``then`` ``delay`` ms after ``signal`` (or after 60 s, whichever first)."""
        fired = []

        def go(*_: object) -> None:
            if not fired:
                fired.append(True)
                QTimer.singleShot(delay, then)

        signal.connect(go)
        QTimer.singleShot(60_000, go)

    def _shot(self, name: str, widget=None) -> None:  # type: ignore[no-untyped-def]
        self.app.processEvents()
        if widget is None:
            image = self.window.screen().grabWindow(self.window.winId())
            if image.isNull() or image.width() < 100:
                image = self.window.grab()
        else:
            image = widget.grab()
        image.save(str(self.out / f"{name}.png"))
        self.files.append(f"{name}.png")

    def setup(self) -> None:
        view = self.window.compare_view
        self.window.tabs.show_page("compare")
        view.select_priced_button.click()
        view.set_target("max_tpot_s", 15)
        view.set_target("max_ttft_s", 300)
        self._after(view.comparison_shown, self._next, 800)

    def compare(self) -> None:
        self._shot("compare-window")
        self.window.tabs.focus_button.click()  # hide the side panels
        QTimer.singleShot(500, self._next)

    def wide(self) -> None:
        self._shot("compare")
        view = self.window.compare_view
        view.setup_tabs.setCurrentIndex(2)
        view.solver_panel.solve("cheapest")
        self._after(view.solver_panel.solved, self._next)

    def solve(self) -> None:
        self._shot("solver", self.window.compare_view)
        # A TPOT target just above the pick's: slower decode kernels change the recommendation.
        self.window.compare_view.set_target("max_tpot_s", 9)
        view = self.window.sensitivity_view
        self.window.tabs.show_page("sensitivity")
        self._after(view.check_finished, self._next, 600)

    def sensitivity(self) -> None:
        self._shot("sensitivity")
        sys.path.insert(0, str(Path(__file__).parent))
        from gui_screenshots import dark_palette

        self.app.setPalette(dark_palette())
        self.window.tabs.show_page("compare")
        QTimer.singleShot(1500, self._next)

    def dark(self) -> None:
        self._shot("compare-dark")
        self._next()

    def finish(self) -> None:
        self.window.close()
        self.app.quit()


def main(argv: list[str]) -> int:
    out = Path(argv[1] if len(argv) > 1 else "screenshots").resolve()
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / "config", ignore_errors=True)
    os.environ["XDG_CONFIG_HOME"] = str(out / "config")
    app = create_application([])
    app.setStyle("Fusion")
    driver = Driver(app, out)
    QTimer.singleShot(180_000, app.quit)
    app.exec()
    print("\n".join(driver.files))
    return 0 if len(driver.files) == 5 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
