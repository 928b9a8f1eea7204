"""Cluster plugin over stubbed inputs: each key's value by hand, and what the scenario's cluster
options (storage, dataset format, interval, asynchronous saves, spot) change.

The memory, performance and cost figures come from a stub, so these tests pin the cluster
plugin's arithmetic alone; tests/validation/test_cluster_published.py runs it behind the real plugins.
"""

from __future__ import annotations

import math

import pytest
from engine_fixtures import GPU, LLAMA_8B, NODE
from workbench_cluster import assumptions as A
from workbench_cluster.estimator import NEEDS, ClusterEstimator
from workbench_cluster.keys import CLUSTER

from workbench.core import Cluster, Scenario
from workbench.core.resolved import ResolvedScenario
from workbench.engine.estimator import EstimatorInfo
from workbench.engine.pipeline import Engine
from workbench.engine.quantity import Outputs, q

RATE = A.FAILURE_RATE.default


class Stub:
    info = EstimatorInfo(id="stub", title="stub", version="1", produces=NEEDS)

    def __init__(self, **values: float | None) -> None:
        self.values = {
            "memory.average_gpu.weights": 10e9,
            "memory.average_gpu.optimizer_states": 30e9,
            "performance.tokens_per_s": 1e6,
            "performance.step_time_s": 10.0,
            "performance.train_time_s": 864_000.0,
            "cost.total_usd": 1e6,
        } | values

    def estimate(self, ctx):  # type: ignore[no-untyped-def]
        return Outputs({k: q(v, "", k) for k, v in self.values.items()})


def run(stub: Stub | None = None, **fields):  # type: ignore[no-untyped-def]
    fields.setdefault("workload", "pretrain")
    fields.setdefault("num_gpus", 16)
    fields.setdefault("parallel", {"tp": 4, "dp": 4, "zero_stage": 1})
    scenario = Scenario(model="llama-3.1-8b", gpu=GPU.id, **fields)
    resolved = ResolvedScenario(scenario, LLAMA_8B, Cluster(accelerator=GPU, node=NODE, num_gpus=scenario.num_gpus))
    est = Engine([stub or Stub(), ClusterEstimator()]).run(resolved)
    assert not est.failures, est.failures
    return est


def test_training_keys_by_hand() -> None:
    est = run()
    # Tectonic (shared, 2,000 GB/s) capped by 2 nodes x 50 GB/s of storage network
    assert est.get("cluster.storage.read_gbps") == pytest.approx(100.0)
    assert est.get("cluster.data.bytes_per_token") == 4  # vocabulary 128,256: int32 ids
    assert est.get("cluster.data.read_gbps") == pytest.approx(1e6 * 4 / 1e9)
    assert est.get("cluster.data.read_iops") == pytest.approx(1e6 / 2048)
    assert est.get("cluster.data.bound") == "gpu"
    assert est.get("cluster.data.step_time_s") == pytest.approx(10.0)
    assert est.get("cluster.data.loader_cores_per_node") == pytest.approx(2 * 8)
    size = 10e9 * 16 / 4 + 30e9 * 16  # weights over DP 4 copies, optimizer sharded by ZeRO-1
    assert est.get("cluster.checkpoint.bytes") == pytest.approx(size)
    assert est.get("cluster.checkpoint.weights_bytes") == pytest.approx(10e9 * 16 / 4)
    write = size / 100e9
    assert est.get("cluster.checkpoint.write_s") == pytest.approx(write)
    assert est.get("cluster.checkpoint.stall_s") == pytest.approx(write)
    mtbf_s = 3600 / (RATE * 16)
    assert est.get("cluster.failures.mtbf_h") == pytest.approx(mtbf_s / 3600)
    interval = math.sqrt(2 * mtbf_s * write)
    assert est.get("cluster.checkpoint.interval_s") == pytest.approx(interval)
    lost = interval / 2 + 600 + write
    assert est.get("cluster.failures.lost_per_failure_s") == pytest.approx(lost)
    wall = 864_000 * (1 + write / interval) / (1 - lost / mtbf_s)
    assert est.get("cluster.goodput") == pytest.approx(864_000 / wall)
    assert est.get("cluster.goodput_days") == pytest.approx(wall / 86400)
    assert est.get("cluster.failures.expected_interruptions") == pytest.approx(RATE * 16 * wall / 3600)
    assert est.get("cluster.goodput_usd") == pytest.approx(1e6 * wall / 864_000)
    assert est.get("cluster.checkpoint.model_load_s") is None  # a serving figure
    for key in CLUSTER:
        assert key in est.values
        assert est.values[key].formula, key  # every key explains itself


def test_zero3_and_full_replication_change_the_checkpoint() -> None:
    assert run(parallel={"tp": 4, "dp": 4, "zero_stage": 3}).get("cluster.checkpoint.bytes") == pytest.approx(
        10e9 * 16 + 30e9 * 16
    )
    assert run(parallel={"tp": 4, "dp": 4, "zero_stage": 0}).get("cluster.checkpoint.bytes") == pytest.approx(
        (10e9 + 30e9) * 16 / 4
    )


def test_asynchronous_saves_stall_only_for_the_host_copy() -> None:
    est = run(cluster={"async_checkpoint": True})
    size = 10e9 * 16 / 4 + 30e9 * 16
    stall = size / 16 / 25e9  # each GPU's share at cluster.host_copy_gbps
    assert est.get("cluster.checkpoint.stall_s") == pytest.approx(stall)
    mtbf_s = 3600 / (RATE * 16)
    write = size / 100e9
    assert est.get("cluster.checkpoint.interval_s") == pytest.approx(max(math.sqrt(2 * mtbf_s * stall), write))
    assert est.get("cluster.goodput") > run().get("cluster.goodput")


def test_user_interval_and_local_storage() -> None:
    est = run(cluster={"checkpoint_interval_s": 3600, "storage": "nvme-gen5-pm1743", "storage_count": 2})
    assert est.get("cluster.checkpoint.interval_s") == 3600
    assert est.get("cluster.storage.write_gbps") == pytest.approx(6.6 * 2 * 2)  # per drive x drives x 2 nodes
    assert est.get("cluster.storage.read_iops") == pytest.approx(2.5e6 * 2 * 2)
    assert est.get("cluster.failures.lost_per_failure_s") == pytest.approx(
        1800 + 600 + (10e9 * 16 / 4 + 30e9 * 16) / 52e9  # restore at 13 GB/s x 2 drives x 2 nodes
    )


def test_spot_adds_preemptions_and_the_discount() -> None:
    plain, spot = run(), run(cluster={"spot": True})
    per_hour = RATE * 16 + A.SPOT_PREEMPTIONS.default * 2  # 16 GPUs, 2 nodes
    assert spot.get("cluster.failures.mtbf_h") == pytest.approx(1 / per_hour)
    assert spot.get("cluster.goodput") < plain.get("cluster.goodput")
    assert spot.get("cluster.goodput_usd") == pytest.approx(1e6 / spot.get("cluster.goodput") * (1 - 0.6))


def test_storage_sets_the_step_time_when_it_cannot_keep_up() -> None:
    est = run(cluster={"storage_gbps": 0.002, "dataset_format": "text"})
    need = 1e6 * 4.0 / 1e9  # raw text: 4 B per token
    assert est.get("cluster.data.read_gbps") == pytest.approx(need)
    assert est.get("cluster.data.storage_utilization") == pytest.approx(need / 0.002)
    assert est.get("cluster.data.bound") == "storage"
    assert est.get("cluster.data.step_time_s") == pytest.approx(10.0 * need / 0.002)
    # tokenizing 1e6 tokens/s x 4 B = 4 MB/s over 2 nodes: 2 MB/s per node / 5 MB/s per core
    assert est.get("cluster.data.loader_cores_per_node") == pytest.approx(16 + 2 / 5)
    (warning,) = [w for w in est.warnings if w.code == "storage-bound"]
    assert "Storage, not the GPUs" in warning.message


def test_failures_faster_than_progress_are_an_error() -> None:
    est = run(assumptions={"cluster.restart_s": 86400, "cluster.failures_per_gpu_hour": 0.01})
    assert est.get("cluster.goodput") is None
    assert any(w.code == "no-progress" and w.severity == "error" for w in est.warnings)


def test_no_run_length_leaves_the_run_keys_empty_with_the_reason() -> None:
    est = run(Stub(**{"performance.train_time_s": None}))
    assert est.get("cluster.goodput") is None
    assert "--train-tokens" in est.values["cluster.goodput"].note
    assert est.get("cluster.checkpoint.interval_s") is not None


def test_serving_reports_the_cold_start_only() -> None:
    est = run(workload="inference", parallel={"tp": 8, "dp": 2})
    weights = 10e9 * 16 / 2  # one replica
    assert est.get("cluster.checkpoint.weights_bytes") == pytest.approx(weights)
    assert est.get("cluster.checkpoint.model_load_s") == pytest.approx(weights * 2 / 100e9)
    assert est.get("cluster.goodput") is None
    assert "inference" in est.values["cluster.goodput"].note


def test_spot_uses_the_catalog_spot_price_where_there_is_one() -> None:
    priced = GPU.model_copy(update={"cloud_usd_per_hour": 3.0, "cloud_spot_usd_per_hour": 0.9})
    scenario = Scenario(model="llama-3.1-8b", gpu=priced.id, workload="pretrain", num_gpus=16,
                        parallel={"tp": 4, "dp": 4, "zero_stage": 1}, cluster={"spot": True})  # fmt: skip
    resolved = ResolvedScenario(scenario, LLAMA_8B, Cluster(accelerator=priced, node=NODE, num_gpus=16))
    est = Engine([Stub(), ClusterEstimator()]).run(resolved)
    assert est.get("cluster.goodput_usd") == pytest.approx(1e6 / est.get("cluster.goodput") * 0.3)
    assert "cluster.spot_discount" not in est.values["cluster.goodput_usd"].assumptions
    # a price of the scenario's own: the catalog ratio no longer applies, the assumed discount does
    own = run(cluster={"spot": True}, pricing={"cloud_usd_per_gpu_hour": 2.0})
    assert own.get("cluster.goodput_usd") == pytest.approx(1e6 / own.get("cluster.goodput") * 0.4)
