"""Apple unified memory: the GPU may wire only macOS's working-set share of the RAM
(memory.unified_gpu_share); discrete GPUs and other unified-memory chips keep their whole memory."""

from __future__ import annotations

import pytest
from engine_fixtures import GPU, LLAMA_8B, NODE
from workbench_memory.kv_cache import KvCacheEstimator
from workbench_memory.stack import MemoryStackEstimator

from workbench.core import Cluster, Scenario
from workbench.core.resolved import ResolvedScenario
from workbench.engine.pipeline import Engine

ENGINE = Engine([KvCacheEstimator(), MemoryStackEstimator()])
GIB = 2**30


def capacity(gpu, **assumptions: float):  # noqa: ANN001, ANN201
    scenario = Scenario(model="m", gpu=gpu.id, weights="q4_k_m", assumptions=assumptions)
    est = ENGINE.run(ResolvedScenario(scenario, LLAMA_8B, Cluster(accelerator=gpu, node=NODE, num_gpus=1)))
    assert not est.failures, est.failures
    return est


def apple(gib: int):  # noqa: ANN201
    return GPU.model_copy(update={"id": f"apple-{gib}", "vendor": "apple", "category": "soc", "memory_gib": gib})


@pytest.mark.parametrize(("gib", "share"), [(16, 2 / 3), (32, 2 / 3), (64, 0.75), (128, 0.75)])
def test_macos_default_working_set(gib: int, share: float) -> None:
    """16 and 32 GB Macs report 2/3 of their RAM as recommendedMaxWorkingSetSize, 64 GB 3/4."""
    est = capacity(apple(gib))
    assert est.get("memory.gpu_capacity") == pytest.approx(gib * GIB * share, rel=1e-12)
    assert "memory.unified_gpu_share" in est.assumptions.used


def test_a_set_share_replaces_the_default_and_moves_the_fit() -> None:
    est = capacity(apple(16), **{"memory.unified_gpu_share": 0.9})
    assert est.get("memory.gpu_capacity") == pytest.approx(16 * GIB * 0.9, rel=1e-12)
    assert est.get("memory.usable_capacity") > capacity(apple(16)).get("memory.usable_capacity")


def test_discrete_and_non_apple_unified_memory_are_whole() -> None:
    assert capacity(GPU).get("memory.gpu_capacity") == GPU.memory_gib * GIB
    spark = GPU.model_copy(update={"id": "spark-like", "category": "soc", "memory_gib": 128})
    assert capacity(spark).get("memory.gpu_capacity") == 128 * GIB
