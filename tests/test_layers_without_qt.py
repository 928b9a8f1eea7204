"""core, catalog, engine, pluginhost and store must work on a machine without Qt.

A child interpreter gets an import hook that makes PySide6 and pyqtgraph unimportable, then
imports every module of those packages and loads the catalogs.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

QT_FREE_PACKAGES = ["workbench.core", "workbench.catalog", "workbench.engine", "workbench.pluginhost", "workbench.store",
                    "workbench.measure"]

CHILD = textwrap.dedent(
    """
    import importlib, importlib.abc, pkgutil, sys

    class NoQt(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("PySide6", "pyqtgraph", "shiboken6"):
                raise ImportError(f"{name} is blocked: Qt is absent in this test")
            return None

    sys.meta_path.insert(0, NoQt())
    imported = []
    for package_name in PACKAGES:
        package = importlib.import_module(package_name)
        imported.append(package_name)
        for info in pkgutil.walk_packages(package.__path__, package_name + "."):
            importlib.import_module(info.name)
            imported.append(info.name)
    from workbench.catalog.accelerators import load_accelerators
    from workbench.catalog.models import load_model_catalog
    assert load_accelerators() and load_model_catalog()
    assert not any(m.split(".")[0] in ("PySide6", "pyqtgraph") for m in sys.modules)
    print(len(imported))
    """
)


def test_core_layers_import_and_work_with_qt_blocked() -> None:
    code = f"PACKAGES = {QT_FREE_PACKAGES!r}\n" + CHILD
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.strip()) >= len(QT_FREE_PACKAGES)


def test_the_blocker_really_blocks() -> None:
    """Guard against a hook that silently lets Qt through (a test that cannot fail)."""
    code = CHILD.split("imported = []")[0] + "import PySide6.QtCore\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "blocked" in result.stderr
