"""What the CLI does around every command so that plugins cannot garble or stall it.

- Plugin calls get a time limit (``WORKBENCH_PLUGIN_TIMEOUT`` seconds per estimate call, default
  5; loading gets :data:`workbench.engine.guard.LOAD_FACTOR` times that; 0 turns it off), measured
  with SIGALRM in the main thread, and a real Ctrl+C is told apart from a plugin's
  ``raise KeyboardInterrupt`` (:func:`workbench.engine.guard.install_alarm`).
- File descriptor 1 points at stderr while the command runs and ``sys.stdout`` writes to a
  duplicate of the real stdout: a plugin's ``print()`` is sent to stderr by the guard, and this
  catches what bypasses ``sys.stdout`` (``os.write(1, ...)``, C code, child processes). ``--json``
  and CSV output stay one clean document.
- Plugins disabled during the command (an estimate that called ``sys.exit`` or timed out) are
  named on stderr afterwards, one line each.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator

from workbench.engine import guard


@contextlib.contextmanager
def guarded_command() -> Iterator[None]:
    guard.set_timeout(guard.environment_timeout())  # InputError (one line, exit 2) for a bad value
    with guard.install_alarm(), _stdout_kept_for_output():
        yield


@contextlib.contextmanager
def _stdout_kept_for_output() -> Iterator[None]:
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by a test harness or closed: leave it
        fd = -1
    if fd != 1:
        yield
        return
    original = sys.stdout
    original.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    output = io.open(saved, "w", encoding=original.encoding, errors=original.errors,  # noqa: SIM115
                     closefd=False, newline=None, buffering=1 if original.line_buffering else -1)
    sys.stdout = output
    try:
        yield
    finally:
        sys.stdout = original
        try:
            output.flush()
        except BrokenPipeError:  # the reader is gone (``| head``): what is left goes nowhere
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, saved)
            os.close(devnull)
            output.flush()
        finally:
            os.dup2(saved, 1)
            os.close(saved)


def report_runtime_faults() -> None:
    """One stderr line per plugin disabled while the command ran."""
    from workbench.pluginhost import get_host

    if get_host.cache_info().currsize == 0:
        return  # the command loaded no plugin
    for name, problem in get_host().runtime_faults:
        print(f"gpu-workbench: note: plugin {name} {problem}", file=sys.stderr)
