"""A folder that is read-only for real, for tests of read-only projects.

Permissions do not stop root, so as root the folder is seen through a read-only bind mount
(CI runs as root too); otherwise its permissions are removed. Skips when neither works.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def _run(*argv: str) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=30, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@contextmanager
def read_only_view(folder: Path) -> Iterator[Path]:
    """``folder`` (with its files) as a read-only folder; yields the path to use."""
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [folder, *folder.iterdir()]}
        for path, mode in modes.items():
            path.chmod(stat.S_IMODE(mode) & ~0o222)
        try:
            yield folder
        finally:
            for path, mode in modes.items():
                path.chmod(stat.S_IMODE(mode))
        return
    view = folder.with_name(folder.name + "-read-only")
    view.mkdir()
    if not _run("mount", "--bind", str(folder), str(view)):
        view.rmdir()
        pytest.skip("cannot bind-mount a folder here (needed to make a folder read-only for root)")
    if not _run("mount", "-o", "remount,bind,ro", str(view)):
        _run("umount", str(view))
        view.rmdir()
        pytest.skip("cannot remount a bind mount read-only here")
    try:
        yield view
    finally:
        if not _run("umount", str(view)):
            _run("umount", "-l", str(view))
        view.rmdir()
