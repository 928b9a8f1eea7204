"""Where the shipped resources and the user's own files live."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import platformdirs

APP_NAME = "gpu-workbench"


def resources_dir() -> Path:
    """The shipped ``resources/`` folder.

    ``WORKBENCH_RESOURCES`` overrides it; a PyInstaller bundle unpacks it beside the
    executable; otherwise it sits at the top of the source tree, beside the package.
    """
    override = os.environ.get("WORKBENCH_RESOURCES")
    if override:
        return Path(override)
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        return Path(bundle) / "resources"
    return Path(__file__).resolve().parent.parent / "resources"


def catalog_dir() -> Path:
    return resources_dir() / "catalog"


def user_data_dir() -> Path:
    """Per-user folder for custom hardware and models (``WORKBENCH_USER_DIR`` overrides it)."""
    override = os.environ.get("WORKBENCH_USER_DIR")
    if override:
        return Path(override)
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
