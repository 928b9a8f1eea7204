"""Calling code the workbench does not trust (third-party plugins) so that it cannot end, hang or
garble the program.

:func:`call` runs one plugin call and adds, to the ordinary ``except Exception`` the callers have:

- **BaseException.** ``sys.exit()``, ``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit`` or a
  plugin's own ``BaseException`` subclass become a :class:`PluginFault` (an ``Exception``, marked
  fatal: the caller disables the plugin). A real Ctrl+C is let through (:func:`is_user_interrupt`).
- **stdout.** ``print()`` in plugin code goes to stderr, never into ``--json`` or CSV output.
- **Time.** Past the deadline a :class:`PluginTimeout` is raised inside the plugin's Python code.
  In a main thread whose program called :func:`install_alarm` (the CLI) this is SIGALRM through
  ``signal.setitimer``, which also interrupts ``time.sleep`` and other system calls Python retries
  on EINTR. Elsewhere (the window's worker threads) a watchdog thread sends the exception with
  ``PyThreadState_SetAsyncExc``, which takes effect at the plugin's next bytecode: a plugin blocked
  inside C code (a long ``sleep``, a lock, a C extension's loop) is not interrupted there, and a
  C loop that holds the GIL is never interrupted by either mechanism.
  The timeout is sent again every :data:`REFIRE_S` seconds, so a plugin that catches it once still
  stops; one that swallows every one of them for :data:`GRACE_S` seconds ends the CLI with one line
  on stderr and exit status 2 (``os._exit``: nothing else can stop it), and in the window keeps its
  worker thread busy (the rest of the window still responds).

Ordinary exceptions pass through unchanged: callers record them as they always have.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from workbench.core.errors import InputError

T = TypeVar("T")

#: Environment variable: seconds a plugin's estimate call may take (0 or "off": no limit).
TIMEOUT_ENV = "WORKBENCH_PLUGIN_TIMEOUT"
#: An estimate takes well under a millisecond; a few seconds is a plugin that is stuck.
DEFAULT_TIMEOUT_S = 5.0
#: Importing a plugin and calling its registration hooks may load heavy libraries (numpy, torch):
#: they get this many times the estimate limit.
LOAD_FACTOR = 6.0
#: After the first timeout, it is raised again this often until the plugin returns.
REFIRE_S = 0.25
#: A plugin still running this long after its deadline ignores every timeout: the CLI gives up.
GRACE_S = 2.0
_MAX_TIMEOUT_S = 86_400.0


class PluginFault(Exception):
    """A plugin call ended in a way that disables the plugin (a BaseException or a timeout)."""

    def __init__(self, message: str, *, fatal: bool = True) -> None:
        super().__init__(message)
        self.fatal = fatal


class PluginTimeout(BaseException):
    """Raised inside plugin code at its deadline. A BaseException, so ``except Exception`` in the
    plugin does not swallow it."""


def describe(exc: BaseException) -> str:
    """One line: the exception type and its message, lines joined, at most 400 characters."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a plugin's exception whose __str__ raises
        text = ""
    text = " ".join(line.strip() for line in text.splitlines() if line.strip())
    if not text.isprintable():  # a plugin's message must not drive the terminal (escape sequences)
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    if len(text) > 400:
        text = text[:397] + "..."
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


# --- configuration -------------------------------------------------------------------------------


def parse_timeout(text: str | None) -> float | None:
    """``WORKBENCH_PLUGIN_TIMEOUT``'s value -> seconds (None: no limit). InputError if invalid."""
    if text is None or not text.strip():
        return DEFAULT_TIMEOUT_S
    text = text.strip().lower()
    if text in ("0", "off", "none"):
        return None
    try:
        seconds = float(text)
    except ValueError:
        raise InputError(f"{TIMEOUT_ENV}: expected seconds (e.g. 5) or 0 for no limit, got '{text[:40]}'") from None
    if not 0 < seconds <= _MAX_TIMEOUT_S:
        raise InputError(f"{TIMEOUT_ENV}: expected seconds between 0 and {_MAX_TIMEOUT_S:,.0f}, got '{text[:40]}'")
    return seconds


class _State:
    def __init__(self) -> None:
        self.timeout_s: float | None = DEFAULT_TIMEOUT_S
        self.configured = False
        self.alarm = False  # install_alarm() ran: the main thread times calls with SIGALRM
        self.tracking_sigint = False  # install_alarm() put its SIGINT handler in place
        self.interrupted = False  # that handler saw a real Ctrl+C
        self.main_deadline: tuple[float, str] | None = None  # (monotonic deadline, what is running)
        self.depth = threading.local()


_state = _State()


def timeout_s() -> float | None:
    """Seconds a plugin's estimate call may take (None: no limit); read from the environment once."""
    if not _state.configured:
        try:
            _state.timeout_s = parse_timeout(os.environ.get(TIMEOUT_ENV))
        except InputError:
            _state.timeout_s = DEFAULT_TIMEOUT_S  # the CLI reports a bad value; elsewhere keep the default
        _state.configured = True
    return _state.timeout_s


def load_timeout_s() -> float | None:
    limit = timeout_s()
    return None if limit is None else limit * LOAD_FACTOR


def set_timeout(seconds: float | None) -> None:
    _state.timeout_s, _state.configured = seconds, True


# --- real interrupts -----------------------------------------------------------------------------


def _on_sigint(signum: int, frame: Any) -> None:
    _state.interrupted = True
    raise KeyboardInterrupt


def is_user_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is the user's Ctrl+C rather than a KeyboardInterrupt raised by plugin code.

    A plugin may ``raise KeyboardInterrupt`` itself; only the SIGINT handler of
    :func:`install_alarm` knows a real one arrived, so where it is installed (the CLI) the flag
    decides. Without it: Python's default handler raises KeyboardInterrupt in the main thread only,
    so there a KeyboardInterrupt is taken as the user's (the program stops, as it would without
    plugins); in any other thread, or where SIGINT has another handler, it can only come from code.
    """
    if not isinstance(exc, KeyboardInterrupt):
        return False
    if _state.tracking_sigint:
        return _state.interrupted
    return (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler)


def _on_alarm(signum: int, frame: Any) -> None:
    running = _state.main_deadline
    if running is None:
        return  # the call returned between the signal and its handler
    deadline, what = running
    if time.monotonic() > deadline + GRACE_S:
        # The plugin has caught every timeout for GRACE_S seconds: nothing in Python can stop it.
        os.write(2, f"gpu-workbench: error: {what} ignores its time limit; stopping\n".encode(errors="replace"))
        os._exit(2)
    raise PluginTimeout


@contextlib.contextmanager
def install_alarm() -> Iterator[None]:
    """For the CLI: time plugin calls in the main thread with SIGALRM, and tell a real Ctrl+C from a
    plugin's KeyboardInterrupt. Restores the previous handlers on exit. Does nothing off the main
    thread or where SIGALRM does not exist (Windows: calls there use the watchdog thread)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return
    previous_alarm = signal.signal(signal.SIGALRM, _on_alarm)
    previous_int = signal.getsignal(signal.SIGINT)
    track = previous_int is signal.default_int_handler  # never replace a handler someone chose
    if track:
        signal.signal(signal.SIGINT, _on_sigint)
    _state.alarm, _state.tracking_sigint, _state.interrupted = True, track, False
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _state.alarm, _state.tracking_sigint, _state.main_deadline = False, False, None
        signal.signal(signal.SIGALRM, previous_alarm)
        if track:
            signal.signal(signal.SIGINT, previous_int)


# --- the watchdog (threads other than an alarmed main thread) -------------------------------------


def _send(thread_id: int, exc: type[BaseException] | None) -> None:
    """Raise ``exc`` in the thread at its next bytecode (None: withdraw one not yet raised)."""
    import ctypes  # here: most runs never need it, and it costs start-up time

    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc) if exc else None)


class _Watchdog:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._armed: dict[int, list[Any]] = {}  # thread id -> [deadline, sent a timeout]
        self._thread: threading.Thread | None = None
        self._wake_at = math.inf  # when the watchdog looks next (inf: when notified)

    def arm(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        with self._cond:
            self._armed[threading.get_ident()] = [deadline, False]
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="plugin-watchdog", daemon=True)
                self._thread.start()
            if deadline < self._wake_at:
                # Wake it only for a deadline sooner than the one it waits for: calls that return in
                # time then cost no thread switch (a sweep makes thousands).
                self._wake_at = deadline
                self._cond.notify()

    def disarm(self) -> None:
        ident = threading.get_ident()
        with self._cond:
            entry = self._armed.pop(ident, None)
            if entry is not None and entry[1]:
                _send(ident, None)  # a timeout sent as the call returned must not hit the caller

    def _run(self) -> None:
        with self._cond:
            while True:
                if not self._armed:
                    self._wake_at = math.inf
                    self._cond.wait()
                    continue
                now = time.monotonic()
                soonest = min(entry[0] for entry in self._armed.values())
                if soonest > now:
                    self._wake_at = soonest
                    self._cond.wait(soonest - now)
                    continue
                for ident, entry in self._armed.items():
                    if entry[0] <= now:
                        _send(ident, PluginTimeout)
                        entry[0], entry[1] = now + REFIRE_S, True


_watchdog = _Watchdog()


def _after_fork_in_child() -> None:
    # A forked child (a sweep worker) has none of the parent's threads: a watchdog of its own, and
    # no lock held by a thread that no longer exists.
    global _watchdog
    _watchdog = _Watchdog()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# --- one guarded call ----------------------------------------------------------------------------


def _arm(seconds: float, what: str) -> bool:
    """Start the clock; True if the main thread's SIGALRM timer was used."""
    if _state.alarm and threading.current_thread() is threading.main_thread():
        _state.main_deadline = (time.monotonic() + seconds, what)
        signal.setitimer(signal.ITIMER_REAL, seconds, REFIRE_S)
        return True
    _watchdog.arm(seconds)
    return False


def _disarm(alarm: bool) -> None:
    if alarm:
        _state.main_deadline = None  # first: a signal arriving now finds nothing running
        signal.setitimer(signal.ITIMER_REAL, 0)
    else:
        _watchdog.disarm()


def _disarm_surely(alarm: bool) -> None:
    """Disarm even if a timeout sent just before lands inside the disarming itself."""
    while True:
        try:
            _disarm(alarm)
            return
        except PluginTimeout:
            continue


def call(fn: Callable[..., T], /, *args: Any, what: str, limit: float | None | str = "estimate",
         **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` as plugin code: stdout to stderr, a deadline, BaseExceptions caught.

    ``what`` names the call in messages ("plugin x: estimate of x.y"). ``limit``: seconds, None for
    none, ``"estimate"`` or ``"load"`` for the configured limits. Ordinary exceptions propagate
    unchanged; anything else becomes a fatal :class:`PluginFault`; a real Ctrl+C propagates.
    A call made inside another guarded call (on the same thread) runs under the outer deadline.
    """
    seconds = timeout_s() if limit == "estimate" else load_timeout_s() if limit == "load" else limit
    depth = getattr(_state.depth, "value", 0)
    timed = seconds is not None and depth == 0
    alarm = False
    _state.depth.value = depth + 1
    # sys.stdout is swapped by hand (cheaper than redirect_stdout, and restored even if the plugin
    # replaced it). It is process-wide: in the window, two threads in guarded calls at once may
    # leave it pointing at stderr, which is harmless there (the window writes nothing to stdout);
    # the CLI calls plugins from its main thread only.
    stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        try:
            if timed:
                alarm = _arm(seconds, what)  # type: ignore[arg-type]
            try:
                return fn(*args, **kwargs)
            finally:
                if timed:
                    _disarm(alarm)
        except PluginTimeout:
            if not timed:
                raise  # the deadline of an outer call: that call reports it
            _disarm_surely(alarm)
            raise PluginFault(f"{what} timed out after {seconds:g} s") from None
        except Exception:
            raise
        except BaseException as exc:
            if is_user_interrupt(exc):
                raise
            raise PluginFault(f"{what} raised {describe(exc)}") from None
    finally:
        sys.stdout = stdout
        _state.depth.value = depth


def environment_timeout(environ: Mapping[str, str] = os.environ) -> float | None:
    """The configured estimate limit, validated (InputError for a bad value): for the CLI."""
    return parse_timeout(environ.get(TIMEOUT_ENV))
