"""Third-party plugins through real entry points: the example plugin loads, ``WORKBENCH_PLUGINS``
limits which ones load, and broken ones (import error, wrong hook signature, raising hook, raising
estimator, invalid registered data) are reported while the app and every other plugin keep working.

Each test runs the real ``gpu-workbench`` in a subprocess with a throwaway site folder on
PYTHONPATH: the example plugin installed there by pip, the broken ones as hand-made
``*.dist-info`` folders with an ``entry_points.txt``, as an installer would leave them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from workbench.pluginhost import FIRST_PARTY, PluginHost

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).with_name("gpu-workbench")
EXAMPLE = ROOT / "plugins" / "example_price_list"

#: entry-point name -> module source. Every one is broken in its own way but ``tp_working``.
BROKEN: dict[str, str] = {
    "tp_import_error": "import a_package_nobody_installed\n",
    "tp_bad_signature": """
        import pluggy
        hookimpl = pluggy.HookimplMarker("workbench")

        @hookimpl
        def workbench_register_estimators(register, extra):
            pass
    """,
    "tp_raising_hook": """
        import pluggy
        hookimpl = pluggy.HookimplMarker("workbench")

        @hookimpl
        def workbench_register_estimators(register):
            raise RuntimeError("the plugin's hook blew up")
    """,
    "tp_raising_estimator": """
        import pluggy
        from workbench.engine.estimator import EstimatorInfo
        hookimpl = pluggy.HookimplMarker("workbench")

        class Raising:
            info = EstimatorInfo(id="tp.raising", title="t", version="1", produces=("tp.raising.value",),
                                 needs=("memory.per_gpu.total",))

            def estimate(self, ctx):
                raise ZeroDivisionError("estimator bug")

        @hookimpl
        def workbench_register_estimators(register):
            register(Raising())
    """,
    "tp_invalid_data": """
        import pluggy
        hookimpl = pluggy.HookimplMarker("workbench")

        @hookimpl
        def workbench_register_estimators(register):
            register("not an estimator")

        @hookimpl
        def workbench_register_accelerators(register):
            register({"id": "tp-gpu", "name": "Bad GPU", "memory_gib": -1})

        @hookimpl
        def workbench_register_models(register):
            register(("tp-model", {"num_layers": "many"}))
    """,
    "tp_working": """
        import pluggy
        from workbench.engine.estimator import EstimatorInfo
        from workbench.engine.quantity import Outputs, q
        hookimpl = pluggy.HookimplMarker("workbench")

        class Working:
            info = EstimatorInfo(id="tp.working", title="t", version="1", produces=("tp.working.value",))

            def estimate(self, ctx):
                return Outputs({"tp.working.value": q(1.0, "count")})

        @hookimpl
        def workbench_register_estimators(register):
            register(Working())
    """,
}
_EXPECTED_ERRORS = {
    "tp_import_error": "ModuleNotFoundError: No module named 'a_package_nobody_installed'",
    "tp_bad_signature": "extra",
    "tp_raising_hook": "workbench_register_estimators: RuntimeError: the plugin's hook blew up",
    "tp_invalid_data": "workbench_register_estimators: TypeError: estimator 'not an estimator' has no "
                       "EstimatorInfo",
}


def _dist_info(site: Path, name: str, module: str, version: str = "0.1") -> None:
    """What pip leaves for a distribution with one entry point in ``workbench.plugins`` (the folder
    name spells the distribution with underscores: importlib.metadata reads the name up to the first
    dash)."""
    folder = site / f"{name.replace('-', '_')}-{version}.dist-info"
    folder.mkdir()
    (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (folder / "entry_points.txt").write_text(f"[workbench.plugins]\n{module} = {module}\n")
    (folder / "RECORD").write_text("")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("site-packages")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
         "--no-build-isolation", "--no-index", "--target", str(folder), str(EXAMPLE)],
        check=True, capture_output=True, text=True, timeout=300,
    )
    for module, source in BROKEN.items():
        (folder / f"{module}.py").write_text(textwrap.dedent(source))
        _dist_info(folder, module.replace("_", "-"), module)
    return folder


def _run(site: Path, *args: str, only: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("WORKBENCH_NO_ENTRY_POINTS", "WORKBENCH_PLUGINS")}
    env["PYTHONPATH"] = str(site)
    if only is not None:
        env["WORKBENCH_PLUGINS"] = only
    return subprocess.run([str(CLI), *args], env=env, capture_output=True, text=True, timeout=120)


def _plugins(site: Path, only: str | None = None) -> dict[str, dict]:
    done = _run(site, "plugins", "--json", only=only)
    assert done.returncode == 0, done.stderr
    return {p["name"]: p for p in json.loads(done.stdout)["plugins"]}


ESTIMATE = ("estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--json")


def test_the_example_plugin_loads_through_its_entry_point(site: Path) -> None:
    plugins = _plugins(site, only="example_price_list")
    example = plugins["example_price_list"]
    assert example["status"] == "loaded" and example["error"] is None
    assert example["version"] == "1.0.0"
    assert example["origin"] == "entry point (workbench-example-price-list 1.0.0)"
    assert example["registered"] == {"estimators": 2, "accelerators": 1}
    done = _run(site, *ESTIMATE, only="example_price_list")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["errors"] == []
    assert doc["private_price"]["usd_per_gpu_hour"] == 2.10
    assert doc["cuda_graphs"]["headroom"] > 0
    assert "vllm.cuda_graph_gib" in {a["id"] for a in doc["assumptions"]}


def test_workbench_plugins_limits_the_third_party_plugins(site: Path) -> None:
    plugins = _plugins(site, only="tp_working")
    assert plugins["tp_working"]["status"] == "loaded"
    third_party = set(BROKEN) - {"tp_working"} | {"example_price_list"}
    assert {name: plugins[name]["status"] for name in third_party} == dict.fromkeys(third_party, "disabled")
    assert all(plugins[name]["status"] == "loaded" for name in FIRST_PARTY)  # never limited
    doc = json.loads(_run(site, *ESTIMATE, only="tp_working").stdout)
    assert doc["tp"]["working"]["value"] == 1.0 and "private_price" not in doc and doc["errors"] == []


def test_no_entry_points_loads_no_third_party_plugin(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(site))
    done = subprocess.run([str(CLI), "plugins", "--json"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "WORKBENCH_NO_ENTRY_POINTS": "1"})
    names = [p["name"] for p in json.loads(done.stdout)["plugins"]]
    assert names == list(FIRST_PARTY)


def test_broken_plugins_are_reported_and_the_rest_keep_working(site: Path) -> None:
    plugins = _plugins(site)
    for name, expected in _EXPECTED_ERRORS.items():
        assert plugins[name]["status"] == "failed", name
        assert expected in plugins[name]["error"], (name, plugins[name]["error"])
    invalid = plugins["tp_invalid_data"]["error"]
    assert "workbench_register_accelerators" in invalid and "workbench_register_models" in invalid
    # A raising estimator is found out only when it runs: the plugin itself loads.
    assert plugins["tp_raising_estimator"]["status"] == "loaded"
    for name in (*FIRST_PARTY, "example_price_list", "tp_working"):
        assert plugins[name]["status"] == "loaded", (name, plugins[name]["error"])

    done = _run(site, *ESTIMATE)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["errors"] == [{"estimator": "tp.raising", "message": "ZeroDivisionError: estimator bug"}]
    assert doc["memory"]["per_gpu"]["total"] > 0 and doc["cost"]["usd_per_hour"] > 0
    assert doc["tp"]["working"]["value"] == 1.0 and doc["private_price"]["usd_per_gpu_hour"] == 2.10

    text = _run(site, "plugins")
    assert text.returncode == 0
    assert "error: ModuleNotFoundError: No module named 'a_package_nobody_installed'" in text.stdout


def test_a_disabled_entry_point_is_not_imported(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("WORKBENCH_NO_ENTRY_POINTS", raising=False)
    monkeypatch.delenv("WORKBENCH_PLUGINS", raising=False)
    loaded_before = set(sys.modules)
    host = PluginHost((), disabled=set(BROKEN))
    for name in set(sys.modules) - loaded_before:  # the example plugin, imported from the throwaway site
        if name.startswith("workbench_example_prices"):
            del sys.modules[name]
    statuses = {s.name: s.status for s in host.status_list()}
    assert statuses["tp_import_error"] == "disabled" and statuses["example_price_list"] == "loaded"
    assert "a_package_nobody_installed" not in sys.modules
    estimators = {e.info.id for e in host.registry.estimators}
    assert estimators == {"example.private-prices", "example.vllm-cuda-graphs"}
