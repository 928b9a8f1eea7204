"""The example plugin: it loads through the plugin host, prices scenarios from its private list, adds
its MIG-slice accelerator, and applies vLLM's CUDA-graph memory rule."""

from __future__ import annotations

import pytest
import workbench_example_prices as plugin
from workbench_example_prices.price_list import PRICES

from workbench.api import make_scenario, resolve
from workbench.core.project import Project
from workbench.core.units import GiB
from workbench.engine.pipeline import Engine
from workbench.pluginhost import FIRST_PARTY, PluginHost


@pytest.fixture(scope="module")
def host() -> PluginHost:
    return PluginHost(FIRST_PARTY, entry_point_group=None, extra_plugins=[("example_price_list", plugin)])


@pytest.fixture(scope="module")
def engine(host: PluginHost) -> Engine:
    built = Engine(host.registry.estimators)
    assert built.rejected == []
    return built


def _estimate(engine: Engine, project: Project | None = None, **fields: object):  # type: ignore[no-untyped-def]
    fields.setdefault("model", "llama-3.1-8b")
    fields.setdefault("gpu", "h100-sxm")
    estimate = engine.run(resolve(make_scenario(**fields), project))
    assert estimate.failures == []
    return estimate


def test_the_plugin_registers_two_estimators_and_one_accelerator(host: PluginHost) -> None:
    status = host.statuses["example_price_list"]
    assert (status.status, status.version, status.error) == ("loaded", "1.0.0", None)
    assert status.registered == {"estimators": 2, "accelerators": 1}
    ids = [e.info.id for e in host.registry.estimators]
    assert "example.private-prices" in ids and "example.vllm-cuda-graphs" in ids
    (slice_,) = host.registry.accelerators
    assert slice_.id == "h100-sxm-mig-3g.40gb" and slice_.custom
    assert slice_.cloud_usd_per_hour == PRICES[slice_.id].cloud_usd_per_hour


def test_private_prices_sit_beside_the_catalog_prices(engine: Engine) -> None:
    est = _estimate(engine, num_gpus=2, parallel={"tp": 2}, batch_size=32)
    gpus = max(int(est.get("performance.gpus")), 2)
    rate = PRICES["h100-sxm"].cloud_usd_per_hour
    assert est.get("private_price.usd_per_gpu_hour") == rate
    assert est.get("private_price.usd_per_hour") == pytest.approx(gpus * rate)
    tokens_per_s = est.get("performance.tokens_per_s")
    per_million = gpus * rate / (tokens_per_s * 3600) * 1e6
    assert est.get("private_price.usd_per_million_tokens") == pytest.approx(per_million)
    assert est.get("private_price.purchase_usd") == pytest.approx(gpus * PRICES["h100-sxm"].list_price_usd)
    catalog = est.get("cost.usd_per_gpu_hour")  # the first-party cost plugin still prices from the catalog
    assert catalog is not None and catalog != rate
    assert est.get("private_price.saving_vs_catalog") == pytest.approx(1 - rate / catalog)


def test_an_accelerator_off_the_list_is_said_so(engine: Engine) -> None:
    est = _estimate(engine, gpu="rtx-4090")
    assert est.get("private_price.usd_per_hour") is None
    assert "not on the private price list" in est.values["private_price.usd_per_hour"].note
    assert [w.code for w in est.warnings if w.code.startswith("private")] == ["private-price-missing"]


def test_the_mig_slice_estimates_as_a_project_accelerator(engine: Engine) -> None:
    project = Project(name="p", accelerators={plugin.MIG_SLICE.id: plugin.MIG_SLICE})
    est = _estimate(engine, project, gpu=plugin.MIG_SLICE.id)
    assert est.get("memory.gpu_capacity") == 40 * GiB
    assert est.get("private_price.usd_per_gpu_hour") == PRICES[plugin.MIG_SLICE.id].cloud_usd_per_hour
    assert est.get("private_price.purchase_usd") is None  # a slice is rented, not bought


def test_cuda_graphs_fit_in_what_gpu_memory_utilization_leaves(engine: Engine) -> None:
    est = _estimate(engine)  # vLLM's default gpu_memory_utilization 0.9 on 80 GiB
    assert est.get("cuda_graphs.room") == pytest.approx(0.1 * 80 * GiB)
    assert est.get("cuda_graphs.bytes") == plugin.CUDA_GRAPH_GIB.default * GiB
    assert est.get("cuda_graphs.headroom") == pytest.approx((8 - plugin.CUDA_GRAPH_GIB.default) * GiB)
    assert not [w for w in est.warnings if w.code == "cuda-graphs-oom"]
    used = {a["id"]: a for a in est.assumptions_used()}
    assert "vLLM" in used["vllm.cuda_graph_gib"]["source"]


def test_too_high_a_utilization_warns_with_the_setting_that_fits(engine: Engine) -> None:
    est = _estimate(engine, serving={"gpu_memory_utilization": 0.995})
    (warning,) = [w for w in est.warnings if w.code == "cuda-graphs-oom"]
    assert "--gpu-mem-util to 0.98" in warning.fix
    assert est.get("cuda_graphs.max_gpu_memory_utilization") == pytest.approx(1 - 1 / 80)


def test_enforce_eager_is_the_assumption_at_zero(engine: Engine) -> None:
    est = _estimate(engine, serving={"gpu_memory_utilization": 0.995}, assumptions={"vllm.cuda_graph_gib": 0})
    assert est.get("cuda_graphs.headroom") == pytest.approx(est.get("cuda_graphs.room"))
    assert not [w for w in est.warnings if w.code == "cuda-graphs-oom"]


def test_training_has_no_vllm_server(engine: Engine) -> None:
    est = _estimate(engine, workload="pretrain", batch_size=1)
    assert est.get("cuda_graphs.bytes") is None
    assert est.values["cuda_graphs.bytes"].note == "training: no vLLM server"
