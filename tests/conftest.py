"""Test-wide setup: headless Qt, and no user files or third-party plugins leaking in."""

from __future__ import annotations

import os

# Before pytest-qt creates the QApplication: the offscreen platform needs no display.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Third-party plugins installed in the environment (the example plugin among them) must not
# change what the tests see; tests about third-party loading clear this themselves.
os.environ.setdefault("WORKBENCH_NO_ENTRY_POINTS", "1")
# The parsed-YAML cache goes to a folder of this run's own, never the user's.
if "WORKBENCH_CACHE_DIR" not in os.environ:
    import tempfile

    os.environ["WORKBENCH_CACHE_DIR"] = tempfile.mkdtemp(prefix="workbench-test-cache-")

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_user_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point the per-user folder (custom hardware, settings) at an empty temp dir."""
    if "WORKBENCH_USER_DIR" not in os.environ:
        monkeypatch.setenv("WORKBENCH_USER_DIR", str(tmp_path_factory.mktemp("user")))
