"""The cluster plugin's formulas on hand-computed cases, and the published interruption count they
reproduce (Llama 3 paper, Sec. 3.3.4 and Table 5)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench_cluster import assumptions as A
from workbench_cluster import formulas as F


def test_local_storage_multiplies_with_drives_and_nodes() -> None:
    # 13 GB/s per drive x 8 drives x 4 nodes; the node network cap does not apply to local drives
    assert F.job_bandwidth_gbps("local", 13.0, 8, 4, 50.0) == pytest.approx(416.0)
    assert F.job_iops("local", 2.5e6, 8, 4) == pytest.approx(80e6)


def test_shared_storage_is_capped_by_the_nodes_network_and_by_its_own_aggregate() -> None:
    assert F.job_bandwidth_gbps("shared", 2000.0, 1, 2, 50.0) == pytest.approx(100.0)  # 2 nodes x 50
    assert F.job_bandwidth_gbps("shared", 2000.0, 1, 2048, 50.0) == pytest.approx(2000.0)  # the system's 2 TB/s
    assert F.job_bandwidth_gbps("object", 88.0, 4, 100, 50.0) == pytest.approx(352.0)  # 4 prefixes
    assert F.job_iops("object", 5500.0, 4, 100) == pytest.approx(22000.0)  # prefixes, not nodes


@pytest.mark.parametrize("vocab,expected", [(32000, 2), (50257, 2), (65499, 2), (65500, 4), (128256, 4)])
def test_stored_token_bytes_follow_megatron_optimal_dtype(vocab: int, expected: int) -> None:
    assert F.stored_token_bytes(vocab) == expected


@pytest.mark.parametrize(
    "zero,expected",
    [
        (0, 10 * 16 / 4 + 30 * 16 / 4),  # both replicated over DP 4: 40 + 120
        (1, 10 * 16 / 4 + 30 * 16),  # optimizer sharded: 40 + 480
        (2, 10 * 16 / 4 + 30 * 16),
        (3, 10 * 16 + 30 * 16),  # weights sharded too: 160 + 480
    ],
)
def test_checkpoint_holds_each_shard_once(zero: int, expected: float) -> None:
    assert F.checkpoint_bytes(10.0, 30.0, ranks=16, dp=4, zero_stage=zero) == pytest.approx(expected)


def test_young_daly_interval() -> None:
    assert F.young_daly_interval_s(3600.0, 50.0) == pytest.approx(600.0)  # sqrt(2 x 3600 x 50)


def test_goodput_by_hand() -> None:
    g = F.goodput(useful_s=100_000, mtbf_s=10_000, interval_s=600, stall_s=50, restart_s=300, restore_s=100)
    lost = 600 / 2 + 300 + 100
    wall = 100_000 * (1 + 50 / 600) / (1 - lost / 10_000)
    assert g.lost_per_failure_s == pytest.approx(700.0)
    assert g.wall_s == pytest.approx(wall) == pytest.approx(116_487.4, rel=1e-6)
    assert g.goodput == pytest.approx(100_000 / wall) == pytest.approx(0.858462, rel=1e-5)
    assert g.interruptions == pytest.approx(wall / 10_000)


def test_goodput_without_progress() -> None:
    g = F.goodput(useful_s=1000, mtbf_s=500, interval_s=600, stall_s=10, restart_s=300, restore_s=10)
    assert g.goodput == 0.0 and math.isinf(g.wall_s)


def test_llama3_interruption_count_is_reproduced() -> None:
    """Llama 3 paper, Sec. 3.3.4 / Table 5: 419 unexpected interruptions in a 54-day snapshot on
    16,384 H100 GPUs; the default rate x GPUs x hours gives that count back, and one interruption
    about every 3 hours (the paper's own reading)."""
    rate = A.FAILURE_RATE.default
    assert F.expected_interruptions(rate, 16384, 54 * 24) == pytest.approx(419.0)
    assert 1 / (rate * 16384) == pytest.approx(3.09, abs=0.01)
    assert A.FAILURE_RATE.minimum <= rate <= A.FAILURE_RATE.maximum


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    useful=st.floats(1.0, 1e8),
    mtbf=st.floats(60.0, 1e7),
    stall=st.floats(0.001, 3600.0),
    restart=st.floats(0.0, 7200.0),
)
def test_goodput_invariants(useful: float, mtbf: float, stall: float, restart: float) -> None:
    """Goodput lies in [0, 1]; wall time is never less than the useful time; more frequent
    interruptions never raise goodput."""
    interval = F.young_daly_interval_s(mtbf, stall)
    g = F.goodput(useful, mtbf, interval, stall, restart, restore_s=stall)
    assert 0.0 <= g.goodput <= 1.0
    if g.goodput > 0:
        assert g.wall_s >= useful
    worse = F.goodput(useful, mtbf / 2, interval, stall, restart, restore_s=stall)
    assert worse.goodput <= g.goodput
