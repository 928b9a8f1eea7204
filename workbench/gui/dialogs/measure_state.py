"""The window's side of measurements and calibration: which profile is applied, and the writes
to the open project file.

Measurements and profiles are rows of the project file beside the project (see
:mod:`workbench.store.measurements`), written at once under the lock the window already holds,
never through the undo stack: they are evidence, not edits of the plan. The applied profile is a
view setting of the window, like the chosen chart axis: it changes which assumption values the
estimates use (those of the profile's GPU and engine) and every place that shows an estimate says
so, but the project's scenarios are left as they are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from workbench.core.errors import InputError
from workbench.core.scenario import Scenario
from workbench.measure.profile import CalibrationProfile, apply_where_fitted, fitted_for


class CalibrationState(QObject):
    """The applied calibration profile (or None); ``changed`` after Apply or Remove."""

    changed = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.profile: CalibrationProfile | None = None

    def apply(self, profile: CalibrationProfile | None) -> None:
        if profile is None and self.profile is None:
            return  # nothing to remove: no re-estimate
        self.profile = profile
        self.changed.emit()

    def status_text(self) -> str:
        """What the status bar says after Apply or Remove."""
        p = self.profile
        if p is None:
            return "Calibration removed: estimates use the assumptions' own values"
        return f"Calibration '{p.name}' applied: estimates on {p.gpu} / {p.engine} are {p.mark()}"

    def scenario(self, scenario: Scenario) -> Scenario:
        """``scenario`` as it is estimated: calibrated when it runs on the profile's GPU and engine."""
        return scenario if self.profile is None else apply_where_fitted(self.profile, scenario)

    def mark(self, scenario: Scenario | None) -> str | None:
        """'calibrated on N measurements (date)' when the profile calibrates ``scenario``."""
        if self.profile is None or scenario is None or not fitted_for(self.profile, scenario):
            return None
        return self.profile.mark()


def project_file(window: Any) -> Path:
    """The open project's file; measurements are kept in it, so an untitled project is refused."""
    path = getattr(window, "project_path", None)
    if path is None:
        raise InputError("Save the project first: measurements and calibrations are kept in its file")
    return Path(path)


def holds_lock(window: Any) -> bool:
    return getattr(window, "_lock", None) is not None
