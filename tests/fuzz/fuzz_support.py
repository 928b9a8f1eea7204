"""Shared pieces of the fuzzing suite: one bounded hypothesis profile, a hang guard, the CLI in-process.

Every fuzz test asserts the same contract: a valid answer, or the documented one-line error
type; never another exception, never a hang, and the input file byte-for-byte unchanged.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

from hypothesis import HealthCheck, settings

from workbench.cli import main

#: Bounded and reproducible: the same examples on every run (no example database), no
#: per-example deadline (CI machines stall), and the size/time health checks off because some
#: generated inputs are deliberately large.
FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
#: Longest one example may take before it counts as a hang.
HANG_SECONDS = 10.0


class Hang(Exception):
    """An example ran longer than :data:`HANG_SECONDS`."""


@contextlib.contextmanager
def no_hang(seconds: float = HANG_SECONDS) -> Iterator[None]:
    """Turn a hang into a test failure (POSIX main thread; elsewhere the CI timeout is the guard)."""
    if not hasattr(signal, "setitimer") or sys.platform == "win32":
        yield
        return

    def expired(signum: int, frame: object) -> None:
        raise Hang(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assert_one_line(exc: BaseException) -> None:
    message = str(exc)
    assert message and "\n" not in message and "\r" not in message, repr(message)


def run_cli(*argv: str) -> tuple[int, str, str]:
    """``gpu-workbench ARGV`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse usage errors
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def assert_cli_contract(code: int, out: str, err: str) -> None:
    """Exit 0 with an answer, or exit 2 with one line on stderr and nothing on stdout."""
    assert "Traceback" not in err, err
    if code == 0:
        assert out.strip()
        return
    assert code == 2, (code, err)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu-workbench: error: "), err


_OPENED: list[str] | None = None


def _audit(event: str, args: tuple[object, ...]) -> None:
    if _OPENED is not None and event == "open" and isinstance(args[0], str | bytes | os.PathLike):
        _OPENED.append(os.path.realpath(os.fsdecode(args[0])))


sys.addaudithook(_audit)


@contextlib.contextmanager
def opened_files() -> Iterator[list[str]]:
    """Every file opened (real paths) while the block runs; audit hooks cannot be removed, so a
    module-level switch turns recording on and off."""
    global _OPENED
    _OPENED = []
    try:
        yield _OPENED
    finally:
        _OPENED = None
