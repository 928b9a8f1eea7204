"""Hostile plugins against the real CLI: each one alone, and all of them at once next to working
plugins. Whatever a plugin does (sys.exit, KeyboardInterrupt or any BaseException at import, in a
hook or in an estimate; endless loops; prints, also straight to file descriptor 1; duplicate ids,
keys and assumptions; malformed metadata; cycles; NaN, huge or wrongly typed results), the CLI
exits 0 with one valid JSON document and the plugin reported as failed (or its estimator in
``errors``), or exits 2 with one line on stderr; never a traceback, never a hang.

The plugins are hand-made modules with ``*.dist-info`` entry points in a throwaway site folder on
PYTHONPATH, as in ``test_third_party_plugins.py`` (whose helper is reused).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_third_party_plugins import _dist_info

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("gpu-workbench")
EXAMPLE = ROOT / "plugins" / "example_price_list"
#: Seconds per estimate call in these tests (loading gets 6 times that).
TIMEOUT = "0.5"

PRELUDE = """
import os, sys, time
import pluggy
from workbench.engine.assumptions import Assumption
from workbench.engine.estimator import EstimatorInfo
from workbench.engine.quantity import Outputs, Warning, q
hookimpl = pluggy.HookimplMarker("workbench")


class Est:
    def __init__(self, ident, run, **fields):
        fields.setdefault("produces", (ident + ".value",))
        self.info = EstimatorInfo(id=ident, title=ident, version="1", **fields)
        self.run = run

    def estimate(self, ctx):
        return self.run(ctx)


def one(key, value=1.0, formula=None):
    return lambda ctx: Outputs({key: q(value, "count", key, formula)})


def registers(*estimators):
    @hookimpl
    def workbench_register_estimators(register):
        for est in estimators:
            register(est)
    return workbench_register_estimators
"""


@dataclass(frozen=True)
class Hostile:
    source: str
    #: Loading fails: this text is in the plugin's error in `plugins --json`.
    load_error: str | None = None
    #: Loading works, the estimate records this text for the plugin's estimator in `errors`.
    run_error: str | None = None
    #: The run disables the whole plugin (stderr names it).
    disables: bool = False
    #: Loading works and the plugin's estimator still produces this key (prints, that's all).
    produces: str | None = None


HOSTILE: dict[str, Hostile] = {
    # --- BaseException at import, in hooks ------------------------------------------------------
    "h_exit_at_import": Hostile("sys.exit(3)", load_error="import raised SystemExit: 3"),
    "h_keyboard_interrupt_at_import": Hostile("raise KeyboardInterrupt",
                                              load_error="import raised KeyboardInterrupt"),
    "h_loop_at_import": Hostile("while True:\n    pass", load_error="import timed out after 3 s"),
    "h_exit_in_hook": Hostile("""
        @hookimpl
        def workbench_register_estimators(register):
            sys.exit("bye")
    """, load_error="workbench_register_estimators raised SystemExit: bye"),
    "h_generator_exit_in_hook": Hostile("""
        @hookimpl
        def workbench_register_models(register):
            raise GeneratorExit
    """, load_error="workbench_register_models raised GeneratorExit"),
    "h_own_base_exception": Hostile("""
        class Oops(BaseException):
            pass

        @hookimpl
        def workbench_register_accelerators(register):
            raise Oops("not an Exception")
    """, load_error="workbench_register_accelerators raised Oops: not an Exception"),
    "h_recursion_in_hook": Hostile("""
        def deeper(n):
            return deeper(n + 1)

        @hookimpl
        def workbench_register_estimators(register):
            deeper(0)
    """, load_error="workbench_register_estimators: RecursionError"),
    "h_report_section_raises": Hostile("""
        @hookimpl
        def workbench_register_report_sections(register):
            raise ValueError("no sections today")
    """, load_error="workbench_register_report_sections: ValueError: no sections today"),
    "h_report_section_without_id": Hostile("""
        class Section:
            title = "No id"
            def html(self, data):
                return "<p>hi</p>"

        @hookimpl
        def workbench_register_report_sections(register):
            register(Section())
    """, load_error="a report section needs a string `id` attribute, not NoneType"),
    # --- malformed metadata, garbage, duplicates, cycles ----------------------------------------
    "h_info_missing_fields": Hostile("""
        class Missing:
            def estimate(self, ctx):
                return Outputs({})

        @hookimpl
        def workbench_register_estimators(register):
            missing = Missing()
            missing.info = EstimatorInfo(id="h.missing")
            register(missing)
    """, load_error="TypeError: EstimatorInfo.__init__() missing 3 required positional arguments"),
    "h_info_none_fields": Hostile("""
        class Nones:
            info = EstimatorInfo(id="h.nones", title=None, version=None, produces=("h.nones.value",))
            def estimate(self, ctx):
                return Outputs({})
        workbench_register_estimators = registers(Nones())
    """, load_error="estimator h.nones: title must be a string, not None"),
    "h_info_wrong_types": Hostile("""
        workbench_register_estimators = registers(Est("h.types", one("h.types.value"), produces="h.types.value"))
    """, load_error="produces must be a tuple or list of strings, not 'h.types.value'"),
    "h_needs_not_strings": Hostile("""
        workbench_register_estimators = registers(Est("h.needs", one("h.needs.value"), needs=[1, 2]))
    """, load_error="needs must be a non-empty string, not 1"),
    "h_info_not_an_estimator_info": Hostile("""
        class Fake:
            info = {"id": "h.fake", "produces": ["h.fake.value"]}
            def estimate(self, ctx):
                return Outputs({})
        workbench_register_estimators = registers(Fake())
    """, load_error="has no EstimatorInfo `info`"),
    "h_info_property_exits": Hostile("""
        class Sneaky:
            @property
            def info(self):
                sys.exit("read my info")
            def estimate(self, ctx):
                return Outputs({})
        workbench_register_estimators = registers(Sneaky())
    """, load_error="has no EstimatorInfo `info` (a plain attribute)"),
    "h_bad_assumption": Hostile("""
        BAD = Assumption("h.bad", "Bad", float("nan"), "x", "nowhere")
        workbench_register_estimators = registers(Est("h.bad", one("h.bad.value"), assumptions=(BAD,)))
    """, load_error="assumption h.bad: default must be a finite number, not nan"),
    "h_duplicate_estimator_id": Hostile("""
        workbench_register_estimators = registers(Est("memory.stack", one("h.dup.value"), produces=("h.dup.value",)))
    """, load_error="estimator id memory.stack is already registered by plugin workbench_memory"),
    "h_duplicate_key": Hostile("""
        workbench_register_estimators = registers(Est("h.key", one("memory.per_gpu.total"),
                                                      produces=("memory.per_gpu.total",)))
    """, load_error="produces memory.per_gpu.total, already produced by memory.stack (plugin workbench_memory)"),
    "h_redefines_assumption": Hostile("""
        MINE = Assumption("memory.cuda_context_gib", "Mine", 123.0, "GiB", "me")
        workbench_register_estimators = registers(Est("h.assume", one("h.assume.value"), assumptions=(MINE,)))
    """, load_error="assumption memory.cuda_context_gib is already defined differently by plugin workbench_memory"),
    "h_cycle": Hostile("""
        workbench_register_estimators = registers(
            Est("h.cycle-a", one("h.a"), produces=("h.a",), needs=("h.b",)),
            Est("h.cycle-b", one("h.b"), produces=("h.b",), needs=("h.a",)),
        )
    """, load_error="estimators depend on each other in a cycle: h.cycle-"),
    "h_hook_returns_garbage": Hostile("""
        @hookimpl
        def workbench_register_estimators(register):
            return [Est("h.returned", one("h.returned.value"))]
    """, load_error="workbench_register_estimators returned list"),
    "h_swallows_validation_error": Hostile("""
        @hookimpl
        def workbench_register_estimators(register):
            try:
                register(42)
            except TypeError:
                pass
            register(Est("h.swallow", one("h.swallow.value")))
    """, load_error="estimator 42 has no EstimatorInfo"),
    "h_invalid_accelerator": Hostile("""
        @hookimpl
        def workbench_register_accelerators(register):
            register({"id": "h-gpu", "name": "Bad", "memory_gib": -1})
    """, load_error="workbench_register_accelerators: TypeError: accelerator"),
    "h_duplicate_accelerator": Hostile("""
        from workbench.catalog.accelerators import get_accelerator
        GPU = get_accelerator("h100-sxm").model_dump()
        GPU.update(id="h-twice", name="Twice")

        @hookimpl
        def workbench_register_accelerators(register):
            register(dict(GPU))
            register(dict(GPU))
    """, load_error="accelerator id h-twice is already registered by plugin h_duplicate_accelerator"),
    # --- prints (the plugin itself works) ------------------------------------------------------
    "h_prints_at_import": Hostile("""
        print("{not json")
        os.write(1, b"raw bytes on fd 1\\n")
        workbench_register_estimators = registers(Est("h.printer", one("h.printer.value")))
    """, produces="h.printer.value"),
    "h_prints_in_estimate": Hostile("""
        def run(ctx):
            print("noise from estimate")
            sys.stdout.write("more noise")
            os.write(1, b"raw noise")
            return Outputs({"h.noisy.value": q(2.0, "count", "Noisy", lambda: print("from formula") or "2")})
        workbench_register_estimators = registers(Est("h.noisy", run))
    """, produces="h.noisy.value"),
    "h_huge_output": Hostile("""
        print("x" * 2_000_000)
        def run(ctx):
            print("y" * 2_000_000)
            return Outputs({"h.huge.value": q(3.0, "count")})
        workbench_register_estimators = registers(Est("h.huge", run))
    """, produces="h.huge.value"),
    # --- misbehaving estimates -----------------------------------------------------------------
    "h_exit_in_estimate": Hostile("""
        workbench_register_estimators = registers(Est("h.exit", lambda ctx: sys.exit(0)))
    """, run_error="plugin h_exit_in_estimate: estimate of h.exit raised SystemExit: 0", disables=True),
    "h_keyboard_interrupt_in_estimate": Hostile("""
        def run(ctx):
            raise KeyboardInterrupt
        workbench_register_estimators = registers(Est("h.ctrl-c", run))
    """, run_error="estimate of h.ctrl-c raised KeyboardInterrupt", disables=True),
    "h_loop_in_estimate": Hostile("""
        def run(ctx):
            while True:
                pass
        workbench_register_estimators = registers(Est("h.loop", run))
    """, run_error="estimate of h.loop timed out after 0.5 s", disables=True),
    "h_sleep_in_estimate": Hostile("""
        workbench_register_estimators = registers(Est("h.sleep", lambda ctx: time.sleep(3600)))
    """, run_error="estimate of h.sleep timed out after 0.5 s", disables=True),
    "h_recursion_in_estimate": Hostile("""
        def run(ctx):
            return run(ctx)
        workbench_register_estimators = registers(Est("h.recurse", run))
    """, run_error="RecursionError"),
    "h_nan": Hostile("""
        workbench_register_estimators = registers(Est("h.nan", one("h.nan.value", float("nan"))))
    """, run_error="returned nan for 'h.nan.value'"),
    "h_inf": Hostile("""
        workbench_register_estimators = registers(Est("h.inf", one("h.inf.value", float("-inf"))))
    """, run_error="returned -inf for 'h.inf.value'"),
    "h_huge_integer": Hostile("""
        workbench_register_estimators = registers(Est("h.bigint", one("h.bigint.value", 10 ** 5000)))
    """, run_error="returned an integer of 16,610 bits"),
    "h_returns_none": Hostile("""
        workbench_register_estimators = registers(Est("h.none", lambda ctx: None))
    """, run_error="estimate returned NoneType, not Outputs"),
    "h_returns_wrong_value_type": Hostile("""
        workbench_register_estimators = registers(Est("h.list", one("h.list.value", [1, 2])))
    """, run_error="returned a list value for 'h.list.value'"),
    "h_returns_plain_number": Hostile("""
        workbench_register_estimators = registers(Est("h.plain", lambda ctx: Outputs({"h.plain.value": 7})))
    """, run_error="returned int for 'h.plain.value', not a Quantity"),
    "h_bad_warning": Hostile("""
        def run(ctx):
            return Outputs({"h.warn.value": q(1.0)}, [Warning("h", "odd", severity="apocalyptic")])
        workbench_register_estimators = registers(Est("h.warn", run))
    """, run_error="a warning's severity must be one of"),
    "h_registers_late": Hostile("""
        kept = []
        def run(ctx):
            kept[0](Est("h.late-extra", one("h.late-extra.value")))
            return Outputs({"h.late.value": q(1.0)})

        @hookimpl
        def workbench_register_estimators(register):
            kept.append(register)
            register(Est("h.late", run))
    """, run_error="register() was called after the hook returned"),
    "h_formula_exits": Hostile("""
        workbench_register_estimators = registers(
            Est("h.formula", one("h.formula.value", 5.0, lambda: sys.exit("in a formula"))))
    """, produces="h.formula.value"),
}

#: Working plugins next to the hostile ones: their numbers must come through.
WORKING = {
    "h_working": """
        workbench_register_estimators = registers(Est("h.working", one("h.working.value", 42.0),
                                                      needs=("memory.per_gpu.total",)))
    """,
    # Two plugins that define one new assumption differently: whichever loads second fails.
    "h_shared_assumption_a": """
        SHARED = Assumption("h.shared", "Shared", 1.0, "x", "plugin a")
        workbench_register_estimators = registers(Est("h.shared-a", one("h.shared-a.value"), assumptions=(SHARED,)))
    """,
    "h_shared_assumption_b": """
        SHARED = Assumption("h.shared", "Shared", 2.0, "x", "plugin b")
        workbench_register_estimators = registers(Est("h.shared-b", one("h.shared-b.value"), assumptions=(SHARED,)))
    """,
}
#: Ignores every timeout: only the CLI's last resort (exit 2, one line) stops it. Run on its own.
SWALLOWER = """
    def run(ctx):
        while True:
            try:
                while True:
                    pass
            except BaseException:
                pass
    workbench_register_estimators = registers(Est("h.stubborn", run))
"""

#: Sleeps long in its estimate after saying so: the user presses Ctrl+C meanwhile.
SLEEPER = """
    def run(ctx):
        print("sleeping", flush=True)
        time.sleep(60)
    workbench_register_estimators = registers(Est("h.sleeper", run))
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile-site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
         "--no-build-isolation", "--no-index", "--target", str(folder), str(EXAMPLE)],
        check=True, capture_output=True, text=True, timeout=300,
    )
    sources = {name: h.source for name, h in HOSTILE.items()} | WORKING | {"h_swallows_timeouts": SWALLOWER,
                                                                         "h_sleeper": SLEEPER}
    for module, source in sources.items():
        (folder / f"{module}.py").write_text(PRELUDE + textwrap.dedent(source))
        _dist_info(folder, module.replace("_", "-"), module)
    return folder


def _start(site: Path, *args: str, only: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("WORKBENCH_NO_ENTRY_POINTS",)}
    env.update(PYTHONPATH=str(site), WORKBENCH_PLUGINS=only, WORKBENCH_PLUGIN_TIMEOUT=TIMEOUT)
    return subprocess.Popen([str(CLI), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(process: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    try:
        stdout, stderr = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    assert "Traceback" not in stderr, stderr[-3000:]
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def _run(site: Path, *args: str, only: str) -> subprocess.CompletedProcess[str]:
    return _finish(_start(site, *args, only=only))


def _strict_json(text: str) -> dict:
    """The one JSON document on stdout; NaN and Infinity are refused, as strict parsers do."""
    def refuse(constant: str) -> None:
        raise AssertionError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


ESTIMATE = ("estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--json")


def _errors(doc: dict) -> dict[str, str]:
    return {e["estimator"]: e["message"] for e in doc["errors"]}


def _both(site: Path, only: str) -> tuple[dict[str, dict], tuple[dict, str]]:
    """`plugins --json` and `estimate --json`, run side by side (two processes)."""
    listing, estimate = _start(site, "plugins", "--json", only=only), _start(site, *ESTIMATE, only=only)
    return _check_plugins(_finish(listing)), _check_estimate(_finish(estimate))


def _check_plugins(done: subprocess.CompletedProcess[str]) -> dict[str, dict]:
    assert done.returncode == 0, done.stderr[-2000:]
    return {p["name"]: p for p in _strict_json(done.stdout)["plugins"]}


def _check_estimate(done: subprocess.CompletedProcess[str]) -> tuple[dict, str]:
    assert done.returncode == 0, done.stderr[-2000:]
    doc = _strict_json(done.stdout)
    assert doc["memory"]["per_gpu"]["total"] > 0 and doc["cost"]["usd_per_hour"] > 0  # first-party unharmed
    return doc, done.stderr


def _estimator_of(name: str, doc: dict) -> str:
    """The id of the hostile plugin's estimator that failed (the one error not first-party)."""
    failed = [e for e in doc["errors"] if e["estimator"].startswith("h.")]
    assert len(failed) == 1, (name, doc["errors"])
    return failed[0]["message"]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_each_hostile_plugin_alone(site: Path, name: str) -> None:
    hostile = HOSTILE[name]
    plugins, (doc, stderr) = _both(site, name)
    status = plugins[name]
    if hostile.load_error is not None:
        assert status["status"] == "failed" and hostile.load_error in status["error"], status
        assert status["registered"] == {}
    else:
        assert status["status"] == "loaded", status
    if hostile.run_error is not None:
        assert hostile.run_error in _estimator_of(name, doc)
        assert (f"gpu-workbench: note: plugin {name} disabled while running" in stderr) == hostile.disables
    else:
        assert not [e for e in doc["errors"] if e["estimator"].startswith("h.")], doc["errors"]
    if hostile.produces is not None:
        group, key = hostile.produces.split(".", 1)[1].split(".")
        assert doc["h"][group][key] > 0


def test_all_hostile_plugins_at_once_next_to_working_ones(site: Path) -> None:
    everyone = ",".join([*HOSTILE, *WORKING, "example_price_list"])
    started = time.monotonic()
    plugins, (doc, stderr) = _both(site, everyone)
    for name, hostile in HOSTILE.items():
        expected = "failed" if hostile.load_error else "loaded"
        assert plugins[name]["status"] == expected, (name, plugins[name])
    assert plugins["h_working"]["status"] == plugins["example_price_list"]["status"] == "loaded"
    pair = [plugins["h_shared_assumption_a"], plugins["h_shared_assumption_b"]]
    assert sorted(p["status"] for p in pair) == ["failed", "loaded"]
    failed = next(p for p in pair if p["status"] == "failed")
    assert "assumption h.shared is already defined differently by plugin h_shared_assumption_" in failed["error"]

    errors = _errors(doc)
    assert doc["h"]["working"]["value"] == 42.0 and doc["private_price"]["usd_per_gpu_hour"] == 2.10
    for name, hostile in HOSTILE.items():
        if hostile.run_error is not None:
            assert any(hostile.run_error in message for message in errors.values()), name
        if hostile.disables:
            assert f"plugin {name} disabled while running" in stderr
    assert time.monotonic() - started < 60


def test_a_stuck_plugin_does_not_hold_up_a_sweep(site: Path) -> None:
    """Disabled at its first timeout: the other points do not wait for it again."""
    started = time.monotonic()
    done = _run(site, "sweep", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--vary", "batch=1..512",
                "--keys", "memory.per_gpu.total,h.loop.value,h.working.value", "--format", "csv",
                only="h_loop_in_estimate,h_working,h_prints_in_estimate")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = done.stdout.splitlines()
    assert rows[0] == "batch,memory.per_gpu.total,h.loop.value,h.working.value,error" and len(rows) == 11
    assert all(row.split(",")[2] == "" and row.split(",")[3] == "42.0" for row in rows[1:])
    assert time.monotonic() - started < 20
    assert "plugin h_loop_in_estimate disabled while running: estimate of h.loop timed out" in done.stderr


def test_a_plugin_that_ignores_every_timeout_ends_the_cli_with_one_line(site: Path) -> None:
    started = time.monotonic()
    done = _run(site, *ESTIMATE, only="h_swallows_timeouts")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "gpu-workbench: error: plugin h_swallows_timeouts: estimate of h.stubborn ignores its time limit; stopping"]
    assert time.monotonic() - started < 30


def test_a_bad_time_limit_is_one_line(site: Path) -> None:
    env = {**os.environ, "WORKBENCH_PLUGIN_TIMEOUT": "soon"}
    done = subprocess.run([str(CLI), "plugins"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == ("gpu-workbench: error: WORKBENCH_PLUGIN_TIMEOUT: expected seconds (e.g. 5) or 0 "
                           "for no limit, got 'soon'\n")


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix", reason="POSIX signals")
def test_the_users_ctrl_c_still_stops_the_cli_during_a_plugin_call(site: Path) -> None:
    """A plugin's own KeyboardInterrupt fails the plugin; a real SIGINT ends the command."""
    env = {k: v for k, v in os.environ.items() if k != "WORKBENCH_NO_ENTRY_POINTS"}
    env.update(PYTHONPATH=str(site), WORKBENCH_PLUGINS="h_sleeper", WORKBENCH_PLUGIN_TIMEOUT="100")
    process = subprocess.Popen([str(CLI), *ESTIMATE], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        assert process.stderr is not None
        assert process.stderr.readline() == "sleeping\n"
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130 and stdout == ""
    assert stderr == "gpu-workbench: interrupted\n"


def test_text_output_is_not_garbled_by_a_printing_plugin(site: Path) -> None:
    only = "h_prints_at_import,h_prints_in_estimate"
    listing = _run(site, "plugins", only=only)
    assert listing.returncode == 0
    rows = {line.split()[0]: line.split()[2] for line in listing.stdout.splitlines()}
    assert rows["h_prints_at_import"] == rows["h_prints_in_estimate"] == "loaded"
    assert "not json" not in listing.stdout and "raw" not in listing.stdout
    assert "raw bytes on fd 1\n" in listing.stderr and "{not json\n" in listing.stderr
    text = _run(site, "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--explain", only=only)
    assert text.returncode == 0 and "Noisy" in text.stdout
    assert not {"noise from estimate", "more noise", "raw noise", "from formula"} & set(text.stdout.splitlines())
    assert "raw noise" not in text.stdout and "more noise" not in text.stdout
    assert "noise from estimate" in text.stderr and "from formula" in text.stderr


def test_every_command_works_with_all_hostile_plugins_installed(site: Path) -> None:
    everyone = ",".join([*HOSTILE, *WORKING, "example_price_list"])
    scenario = ("--model", "llama-3.1-8b", "--gpu", "h100-sxm")
    commands = {
        "assumptions": ("assumptions", "--json"),
        "catalog": ("catalog", "gpus", "--json"),
        "solve": ("solve", "max-batch", *scenario, "--json"),
        "sweep": ("sweep", *scenario, "--vary", "batch=1,8", "--keys", "h.working.value,h.loop.value"),
    }
    running = {name: _start(site, *args, only=everyone) for name, args in commands.items()}
    docs = {}
    for name, process in running.items():
        done = _finish(process)
        assert done.returncode == 0, (name, done.stderr[-2000:])
        docs[name] = _strict_json(done.stdout)
    assert "h.shared" in {a["id"] for a in docs["assumptions"]["assumptions"]}
    defaults = {a["id"]: a["default"] for a in docs["assumptions"]["assumptions"]}
    assert defaults["memory.cuda_context_gib"] != 123.0  # the first-party definition stands
    gpus = {a["id"] for a in docs["catalog"]["accelerators"]}
    assert "h100-sxm" in gpus and "h-gpu" not in gpus and "h-twice" not in gpus
    assert docs["solve"]["answer"]["batch_size"] > 1
    assert [(p["h.working.value"], p["h.loop.value"]) for p in docs["sweep"]["points"]] == [(42.0, None)] * 2
