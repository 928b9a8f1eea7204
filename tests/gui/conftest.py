"""GUI test fixtures: temp settings, catalogs read once, and a small deterministic engine
(gui_fakes.py). One test in test_main_window.py runs the real engine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from gui_fakes import FakeMemory, FakePerformance, FakeRoofline
from PySide6.QtCore import QSettings

from workbench.core.project import Project
from workbench.core.scenario import Scenario
from workbench.engine.pipeline import Engine
from workbench.gui.catalogs import Catalogs
from workbench.gui.controller import ProjectController


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The offscreen platform's harmless notices must not fail GUI tests (qt_log_level_fail)."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.qt_log_ignore("does not support (propagateSizeHints|raise)", extend=True))


@pytest.fixture(scope="session")
def catalogs() -> Catalogs:
    return Catalogs.load()


@pytest.fixture
def fake_engine() -> Engine:
    return Engine([FakeMemory(), FakeRoofline(), FakePerformance()])


@pytest.fixture(autouse=True)
def _temp_qsettings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No test reads or writes the real user settings."""
    folder = tmp_path_factory.mktemp("qsettings")
    for fmt in (QSettings.Format.NativeFormat, QSettings.Format.IniFormat):
        QSettings.setPath(fmt, QSettings.Scope.UserScope, str(folder))
    yield


@pytest.fixture
def settings(tmp_path: Path) -> QSettings:
    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def project() -> Project:
    return Project(name="Test", scenarios=(
        Scenario(name="A", model="llama-3.1-8b", gpu="h100-sxm", batch_size=4, seq_len=1024),
        Scenario(name="B", model="llama-3.1-70b", gpu="h100-sxm", num_gpus=8, workload="finetune", method="lora",
                 parallel={"tp": 8}),
    ))


@pytest.fixture
def controller(qtbot, catalogs: Catalogs, project: Project) -> ProjectController:  # type: ignore[no-untyped-def]
    return ProjectController(catalogs, project)


@pytest.fixture
def window(qtbot, settings: QSettings, fake_engine: Engine, catalogs: Catalogs, project: Project):  # type: ignore[no-untyped-def]
    from workbench.gui.main_window import MainWindow

    win = MainWindow(settings=settings, engine=fake_engine, catalogs=catalogs, project=project)
    win.ask_before_discard = False
    qtbot.addWidget(win)
    with qtbot.waitSignal(win.estimate_shown, timeout=5000):
        win.show()
    return win
