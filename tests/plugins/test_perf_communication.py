"""Collectives in the alpha-beta model, with NCCL's volumes (nccl-tests doc/PERFORMANCE.md): all-reduce
2(n-1)/n x S per rank, reduce-scatter and all-gather (n-1)/n x S, and the link the group uses."""

from __future__ import annotations

import math

import pytest
from engine_fixtures import NODE, resolved
from test_perf_support import engine_with
from workbench_performance.communication import (
    Link,
    all_reduce_s,
    all_to_all_s,
    group_link,
    p2p_s,
    reduce_scatter_s,
    ring_all_reduce_volume,
)
from workbench_performance.efficiency import Efficiency

EFF = Efficiency(
    matmul=1.0,
    bandwidth=1.0,
    step_overhead_s=0.001,
    tp_overlap=0.0,
    dp_overlap=0.8,
    ep_overlap=0.0,
    load_imbalance=1.0,
    link=0.8,
    alpha_intra_s=5e-6,
    alpha_inter_s=1.5e-5,
)
NVLINK = Link(450.0, True, "NVSwitch")
IB = Link(50.0, False, "IB NDR")


def test_ring_all_reduce_moves_two_n_minus_one_over_n() -> None:
    assert ring_all_reduce_volume(1e9, 8) == pytest.approx(2 * 7 / 8 * 1e9)
    assert ring_all_reduce_volume(1e9, 1) == 0


def test_large_all_reduce_is_bandwidth_bound() -> None:
    nbytes = 1e9
    t = all_reduce_s(nbytes, 8, NVLINK, EFF)
    beta = 2 * 7 / 8 * nbytes / (450e9 * 0.8)
    steps = 2 * math.ceil(math.log2(8))  # tree beats the ring's 14 steps
    assert t == pytest.approx(beta + steps * 5e-6)


def test_small_all_reduce_is_latency_bound_and_uses_the_tree() -> None:
    t = all_reduce_s(1024, 64, IB, EFF)
    assert t == pytest.approx(2 * 6 * 1.5e-5 + 2 * 63 / 64 * 1024 / (50e9 * 0.8))
    assert t < 2 * 63 * 1.5e-5  # the ring would take 126 steps


def test_reduce_scatter_plus_all_gather_equals_all_reduce_bandwidth() -> None:
    """Sequence parallelism swaps each all-reduce for a reduce-scatter and an all-gather: same bytes."""
    big = 4e9
    rs = reduce_scatter_s(big, 8, NVLINK, EFF)
    ar = all_reduce_s(big, 8, NVLINK, EFF)
    assert 2 * rs == pytest.approx(ar, rel=1e-3)


def test_all_to_all_and_p2p() -> None:
    assert all_to_all_s(8e6, 8, IB, EFF) == pytest.approx(7 * 1.5e-5 + 7 / 8 * 8e6 / 40e9)
    assert p2p_s(4e6, NVLINK, EFF) == pytest.approx(5e-6 + 4e6 / 360e9)
    for fn in (all_reduce_s, reduce_scatter_s, all_to_all_s):
        assert fn(1e6, 1, NVLINK, EFF) == 0.0


def test_group_link_is_intra_node_only_when_the_group_fits() -> None:
    assert group_link(NODE, 8, 1).intra
    assert not group_link(NODE, 8, 2).intra  # DP of 8 over TP 2 spans two nodes
    assert not group_link(NODE, 16, 1).intra
    assert group_link(NODE, 2, 4).gbps == NODE.intra_node_gbps
    assert group_link(NODE, 4, 4).gbps == NODE.inter_node_gbps


def test_estimator_reports_tp_traffic_of_a_decode_step() -> None:
    est = engine_with().run(resolved(num_gpus=2, parallel={"tp": 2}, batch_size=8, seq_len=512, gen_len=64))
    per_token = 8 * 4096 * 2.0  # 8 tokens x hidden 4096 x bf16
    collectives = 2 * 32  # two all-reduces per block, 32 blocks
    assert est.get("communication.tp.bytes_per_step") == pytest.approx(
        collectives * per_token
    )  # 2(n-1)/n = 1
    assert est.get("communication.tp.time_s") == pytest.approx(
        collectives * all_reduce_s(per_token, 2, Link(NODE.intra_node_gbps, True, ""), EFF)
    )
    assert est.get("communication.dp.time_s") == 0
    assert est.get("communication.ep.link") == "none"
    assert est.get("communication.total_s") == pytest.approx(est.get("communication.tp.time_s"))


def test_training_traffic_crosses_nodes_when_the_group_does() -> None:
    est = engine_with().run(
        resolved(
            workload="pretrain",
            num_gpus=16,
            batch_size=1,
            seq_len=512,
            global_batch_size=16,
            parallel={"tp": 2, "dp": 8, "sequence_parallel": True},
        )
    )
    assert "inter-node" in est.get("communication.dp.link")
    assert "intra-node" in est.get("communication.tp.link")
    assert est.get("communication.tp.time_s") > 0 and est.get("communication.dp.time_s") > 0
    assert "reduce-scatter" in est.values["communication.tp.time_s"].formula
