"""The guard around plugin calls, in-process: BaseExceptions become plugin faults (a real Ctrl+C
does not), stdout goes to stderr, and a deadline stops a loop or a sleep, in the main thread
(SIGALRM) and in worker threads (the watchdog), without a stray timeout afterwards."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pluggy
import pytest

from workbench.core.errors import InputError
from workbench.engine import guard
from workbench.engine.estimator import EstimatorInfo
from workbench.engine.pipeline import Engine
from workbench.engine.quantity import Outputs, q
from workbench.pluginhost.guarded import GuardedEstimator
from workbench.pluginhost.host import PluginHost

hookimpl = pluggy.HookimplMarker("workbench")


class Custom(BaseException):
    pass


def _raise(exc: BaseException) -> Callable[[], None]:
    def run() -> None:
        raise exc
    return run


def _loop() -> None:
    while True:
        pass


def _in_thread(fn: Callable[[], Any]) -> Any:
    """``fn()`` on a fresh thread: its result or the exception it raised."""
    box: list[Any] = []

    def run() -> None:
        try:
            box.append(fn())
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(20)
    assert not thread.is_alive(), "the guarded call never returned"
    return box[0]


@pytest.mark.parametrize("exc", [SystemExit(3), GeneratorExit(), Custom("custom"), KeyboardInterrupt()])
def test_base_exceptions_become_fatal_faults_off_the_main_thread(exc: BaseException) -> None:
    found = _in_thread(lambda: guard.call(_raise(exc), what="plugin p: hook", limit=None))
    assert isinstance(found, guard.PluginFault) and found.fatal
    assert str(found).startswith(f"plugin p: hook raised {type(exc).__name__}")


def test_ordinary_exceptions_pass_unchanged() -> None:
    error = ZeroDivisionError("bug")
    with pytest.raises(ZeroDivisionError) as raised:
        guard.call(_raise(error), what="x", limit=None)
    assert raised.value is error


def test_without_the_cli_handler_a_keyboard_interrupt_in_the_main_thread_is_the_users() -> None:
    with pytest.raises(KeyboardInterrupt):
        guard.call(_raise(KeyboardInterrupt()), what="x", limit=None)


def test_where_sigint_has_another_handler_a_keyboard_interrupt_comes_from_code() -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a GUI that ignores Ctrl+C
    try:
        with pytest.raises(guard.PluginFault, match="raised KeyboardInterrupt"):
            guard.call(_raise(KeyboardInterrupt()), what="x", limit=None)
    finally:
        signal.signal(signal.SIGINT, previous)


def test_print_in_plugin_code_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    guard.call(print, "from the plugin", what="x", limit=None)
    out, err = capsys.readouterr()
    assert out == "" and err == "from the plugin\n"


def test_the_watchdog_stops_a_loop_in_a_worker_thread_and_leaves_no_stray_timeout() -> None:
    started = time.monotonic()
    found = _in_thread(lambda: guard.call(_loop, what="plugin p: estimate", limit=0.2))
    assert isinstance(found, guard.PluginFault) and str(found) == "plugin p: estimate timed out after 0.2 s"
    assert time.monotonic() - started < 3

    def busy_after_quick_calls() -> float:
        for _ in range(2000):  # calls that return just around their (tiny) deadline
            try:
                guard.call(lambda: sum(range(200)), what="quick", limit=1e-5)
            except guard.PluginFault:
                pass
        end = time.monotonic() + 2 * guard.REFIRE_S
        total = 0
        while time.monotonic() < end:  # a timeout sent too late would land here
            total += 1
        return total

    assert isinstance(_in_thread(busy_after_quick_calls), int)


def test_an_inner_call_leaves_the_outer_deadline_to_the_outer_call() -> None:
    def outer() -> None:
        guard.call(_loop, what="inner", limit=60)

    found = _in_thread(lambda: guard.call(outer, what="outer", limit=0.2))
    assert isinstance(found, guard.PluginFault) and str(found) == "outer timed out after 0.2 s"


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="SIGALRM is POSIX")
def test_the_cli_alarm_stops_loops_and_sleeps_and_tells_ctrl_c_apart() -> None:
    with guard.install_alarm():
        for body in (_loop, lambda: time.sleep(3600)):
            started = time.monotonic()
            with pytest.raises(guard.PluginFault, match="timed out after 0.2 s"):
                guard.call(body, what="p", limit=0.2)
            assert time.monotonic() - started < 2
        with pytest.raises(guard.PluginFault, match="raised KeyboardInterrupt"):
            guard.call(_raise(KeyboardInterrupt()), what="p", limit=1)
        # The user's Ctrl+C (a real SIGINT) during a plugin call stops the program.
        timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            guard.call(lambda: time.sleep(10), what="p", limit=5)
        timer.join()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_the_time_limit_setting() -> None:
    assert guard.parse_timeout(None) == guard.DEFAULT_TIMEOUT_S
    assert guard.parse_timeout("2.5") == 2.5
    assert guard.parse_timeout("0") is None and guard.parse_timeout("off") is None
    for bad in ("soon", "-1", "nan", "1e9"):
        with pytest.raises(InputError, match="WORKBENCH_PLUGIN_TIMEOUT"):
            guard.parse_timeout(bad)


class Exits:
    info = EstimatorInfo(id="exits", title="Exits", version="1", produces=("exits.value",), needs=("fine.value",))

    def __init__(self) -> None:
        self.calls = 0

    def estimate(self, ctx):  # type: ignore[no-untyped-def]
        self.calls += 1
        sys.exit("bye")


class Fine:
    info = EstimatorInfo(id="fine", title="Fine", version="1", produces=("fine.value",))

    def estimate(self, ctx):  # type: ignore[no-untyped-def]
        return Outputs({"fine.value": q(1.0)})


def test_a_fatal_estimate_disables_the_plugin_and_its_code_is_not_run_again() -> None:
    from engine_fixtures import resolved

    exits = Exits()

    class Plugin:
        @hookimpl
        def workbench_register_estimators(self, register):  # type: ignore[no-untyped-def]
            register(exits)
            register(Fine())

    host = PluginHost((), entry_point_group=None, extra_plugins=[("quitter", Plugin())])
    assert all(isinstance(e, GuardedEstimator) for e in host.registry.estimators)
    engine = Engine(host.registry.estimators)
    first = engine.run(resolved())
    assert {f.estimator: f.message for f in first.failures} == {
        "exits": "plugin quitter: estimate of exits raised SystemExit: bye"}
    assert first.get("fine.value") == 1.0  # runs first (exits needs it)
    second = engine.run(resolved())
    assert exits.calls == 1
    assert {f.estimator: f.message for f in second.failures} == {
        "fine": "plugin quitter is disabled: estimate of exits raised SystemExit: bye",
        "exits": "skipped: fine.value failed"}
    status = host.statuses["quitter"]
    assert status.status == "failed" and status.error == (
        "disabled while running: estimate of exits raised SystemExit: bye")
    assert host.runtime_faults == [("quitter", status.error)]


def test_a_report_section_that_exits_fails_as_an_exception_and_disables_its_plugin() -> None:
    class Section:
        id, title = "exit-section", "Exits"

        def html(self, data):  # type: ignore[no-untyped-def]
            sys.exit("no report for you")

    class Plugin:
        @hookimpl
        def workbench_register_report_sections(self, register):  # type: ignore[no-untyped-def]
            register(Section())

    host = PluginHost((), entry_point_group=None, extra_plugins=[("sections", Plugin())])
    (section,) = host.registry.report_sections
    assert (section.id, section.title, section.description) == ("exit-section", "Exits", "")
    with pytest.raises(guard.PluginFault, match="report section exit-section raised SystemExit: no report for you"):
        section.html(None)
    assert host.statuses["sections"].status == "failed"
    with pytest.raises(guard.PluginFault, match="plugin sections is disabled"):
        section.html(None)


def test_messages_are_one_printable_line() -> None:
    assert guard.describe(ValueError("two\nlines \x1b[2J cleared")) == "ValueError: two lines \\x1b[2J cleared"
    assert guard.describe(SystemExit()) == "SystemExit"
    assert len(guard.describe(RuntimeError("x" * 5000))) == len("RuntimeError: ") + 400
