"""Exporters from plugins: checked at registration, one id per format, third-party ones guarded."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from workbench import launch_export
from workbench.catalog.resolve import resolve_scenario
from workbench.core.errors import InputError
from workbench.core.exporter import SERVING, ExporterInfo
from workbench.core.scenario import Scenario
from workbench.pluginhost import hookimpl
from workbench.pluginhost.host import FAILED, LOADED, PluginHost


class _Exporter:
    def __init__(self, ident: str, export: Any = None) -> None:
        self.info = ExporterInfo(id=ident, title=f"{ident} launcher", engine="Engine", engine_version="1.0",
                                 source="example/engine@0000000:cli.py", workloads=SERVING)
        self._export = export or (lambda resolved, estimate: {"run.sh": f"engine --tp {resolved.scenario.parallel.tp}\n"})

    def export(self, resolved: Any, estimate: Any) -> Any:
        return self._export(resolved, estimate)


class _Plugin:
    def __init__(self, *exporters: Any) -> None:
        self.exporters = exporters

    @hookimpl
    def workbench_register_exporters(self, register: Any) -> None:
        for exporter in self.exporters:
            register(exporter)


def _host(*plugins: tuple[str, Any]) -> PluginHost:
    return PluginHost(("workbench_export",), entry_point_group=None, extra_plugins=plugins)


def _resolved() -> Any:
    return resolve_scenario(Scenario(model="llama-3.1-8b", gpu="h100-sxm", parallel={"tp": 1}))


def test_a_plugins_exporter_is_registered_after_the_first_party_ones() -> None:
    host = _host(("team", _Plugin(_Exporter("team-launcher"))))
    ids = [e.info.id for e in host.registry.exporters]
    assert ids[:3] == ["vllm", "sglang", "trtllm"] and ids[-1] == "team-launcher"
    assert host.statuses["team"].status == LOADED and host.statuses["team"].registered == {"exporters": 1}
    files = launch_export.run(host.registry.exporters[-1], _resolved(), None)
    assert files == {"run.sh": "engine --tp 1\n"}


def test_a_taken_format_id_fails_the_later_plugin() -> None:
    host = _host(("team", _Plugin(_Exporter("vllm"))))
    assert host.statuses["team"].status == FAILED
    assert "exporter id vllm is already registered by plugin workbench_export" in host.statuses["team"].error
    assert [e.info.id for e in host.registry.exporters].count("vllm") == 1


@pytest.mark.parametrize("thing,problem", [
    (object(), "no ExporterInfo"),
    (type("NoExport", (), {"info": _Exporter("x").info})(), "no export(resolved, estimate)"),
])
def test_an_exporter_without_info_or_export_fails_its_plugin(thing: Any, problem: str) -> None:
    host = _host(("team", _Plugin(thing)))
    assert host.statuses["team"].status == FAILED and problem in host.statuses["team"].error


@pytest.mark.parametrize("export,message", [
    (lambda r, e: 1 / 0, "failed: ZeroDivisionError"),
    (lambda r, e: ["run.sh"], "not a mapping of file names to text"),
    (lambda r, e: {"../escape.sh": "x"}, "not a plain name"),
    (lambda r, e: {"run.sh": b"bytes"}, "holds bytes, not text"),
])
def test_a_broken_export_is_one_line(export: Any, message: str) -> None:
    host = _host(("team", _Plugin(_Exporter("team-launcher", export))))
    with pytest.raises(InputError, match=message):
        launch_export.run(host.registry.exporters[-1], _resolved(), None)


def test_an_exporter_that_exits_disables_its_plugin_only() -> None:
    host = _host(("team", _Plugin(_Exporter("team-launcher", lambda r, e: sys.exit(3)))))
    with pytest.raises(InputError, match="team"):
        launch_export.run(host.registry.exporters[-1], _resolved(), None)
    assert host.statuses["team"].status == FAILED
    assert launch_export.run(host.registry.exporters[0], _resolved(), None)["serve.sh"].startswith("#!")
