"""A private Xvfb server for the tests that drive the real app over X (the xcb platform)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


@contextmanager
def xvfb(screen: str) -> Iterator[str]:
    """Start Xvfb with one ``WIDTHxHEIGHTxDEPTH`` screen on a free display; yield ``":N"``.
    Skips the test where Xvfb is not installed or does not start."""
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed")
    read, write = os.pipe()
    server = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", screen, "-nolisten", "tcp"],
                              pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as pipe:
        number = pipe.readline().strip()
    if not number:
        server.kill()
        pytest.skip("Xvfb did not start")
    try:
        yield f":{number}"
    finally:
        server.terminate()
        server.wait(timeout=10)
