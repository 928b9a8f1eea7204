"""A broken plugin never stops the app or the other plugins; each ends with a status record."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pluggy
import pytest

from workbench.engine.estimator import EstimatorInfo
from workbench.engine.pipeline import Engine
from workbench.engine.quantity import Outputs, q
from workbench.pluginhost.host import FIRST_PARTY, PluginHost

hookimpl = pluggy.HookimplMarker("workbench")


class GoodEstimator:
    info = EstimatorInfo(id="good", title="Good", version="1", produces=("good.value",))

    def estimate(self, ctx):  # type: ignore[no-untyped-def]
        return Outputs({"good.value": q(42, "count")})


class RaisingEstimator:
    info = EstimatorInfo(id="raiser", title="Raiser", version="1", produces=("raiser.value",))

    def estimate(self, ctx):  # type: ignore[no-untyped-def]
        raise ZeroDivisionError("plugin bug")


class GoodPlugin:
    @hookimpl
    def workbench_register_estimators(self, register):  # type: ignore[no-untyped-def]
        register(GoodEstimator())
        register(RaisingEstimator())


class RaisingHookPlugin:
    @hookimpl
    def workbench_register_estimators(self, register):  # type: ignore[no-untyped-def]
        raise RuntimeError("hook exploded")


class WrongSignaturePlugin:
    @hookimpl
    def workbench_register_estimators(self, register, surprise):  # type: ignore[no-untyped-def]
        register(GoodEstimator())


class GarbagePlugin:
    @hookimpl
    def workbench_register_estimators(self, register):  # type: ignore[no-untyped-def]
        register("not an estimator")

    @hookimpl
    def workbench_register_accelerators(self, register):  # type: ignore[no-untyped-def]
        register({"id": "bad", "name": "Bad", "memory_gib": -1})


class UnknownHookPlugin:
    @hookimpl
    def workbench_register_everything(self, register):  # type: ignore[no-untyped-def]
        pass


@pytest.fixture
def broken_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "wb_broken_plugin.py").write_text(textwrap.dedent("""
        import a_module_that_does_not_exist
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "wb_broken_plugin"
    sys.modules.pop("wb_broken_plugin", None)


def _host(extra, first_party=()) -> PluginHost:  # type: ignore[no-untyped-def]
    return PluginHost(first_party, entry_point_group=None, extra_plugins=extra)


def test_broken_plugins_are_reported_and_the_good_one_still_works(broken_module: str) -> None:
    host = _host(
        [("good", GoodPlugin()), ("raising-hook", RaisingHookPlugin()), ("wrong-sig", WrongSignaturePlugin()),
         ("garbage", GarbagePlugin()), ("unknown-hook", UnknownHookPlugin())],
        first_party=[broken_module],
    )
    status = {s.name: s for s in host.status_list()}
    assert status["good"].status == "loaded" and status["good"].registered == {"estimators": 2}
    assert status[broken_module].status == "failed"
    assert "ModuleNotFoundError" in status[broken_module].error
    assert status["raising-hook"].status == "failed" and "hook exploded" in status["raising-hook"].error
    assert status["wrong-sig"].status == "failed" and "surprise" in status["wrong-sig"].error
    assert status["garbage"].status == "failed" and "no EstimatorInfo" in status["garbage"].error
    assert status["unknown-hook"].status == "failed" and "workbench_register_everything" in status["unknown-hook"].error
    assert [e.info.id for e in host.registry.estimators] == ["good", "raiser"]
    assert host.registry.accelerators == []


def test_a_raising_estimator_does_not_stop_the_others() -> None:
    from engine_fixtures import resolved

    host = _host([("good", GoodPlugin())])
    estimate = Engine(host.registry.estimators).run(resolved())
    assert estimate.get("good.value") == 42
    assert [(f.estimator, f.message) for f in estimate.failures] == [("raiser", "ZeroDivisionError: plugin bug")]


def test_disabled_plugins_are_not_loaded() -> None:
    host = PluginHost((), entry_point_group=None, extra_plugins=[("good", GoodPlugin())], disabled={"good"})
    assert host.status_list()[0].status == "disabled"
    assert host.registry.estimators == []


def test_first_party_plugins_load() -> None:
    host = PluginHost(entry_point_group=None)
    statuses = {s.name: s.status for s in host.status_list()}
    assert statuses == {name: "loaded" for name in FIRST_PARTY}
    assert len(host.registry.estimators) >= 2
