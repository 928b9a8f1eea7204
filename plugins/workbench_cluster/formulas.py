"""The cluster plugin's formulas, as plain functions of numbers (the estimator explains them).

Storage bandwidth the job gets::

    local  : per drive x drives per node x nodes
    shared : min(per unit x units, nodes x per-node storage network)
    object : min(per prefix x prefixes, nodes x per-node storage network)

Checkpoints hold each piece of training state once (Megatron-LM's distributed checkpoint and
PyTorch DCP de-duplicate data-parallel replicas)::

    size = weights per rank x ranks / weight copies + optimizer states per rank x ranks / optimizer copies

where weight copies are DP unless ZeRO-3 shards them, and optimizer copies are DP unless ZeRO
(any stage) shards them; the optimizer states already hold the fp32 master weights.

Failures and goodput (first-order model of Young 1974 and Daly 2006)::

    MTBF          = 1 / (rate x GPUs [+ preemptions x nodes])
    interval      = sqrt(2 x MTBF x stall)                  (Young/Daly; or the user's)
    lost/failure  = interval / 2 + restart + restore read
    wall          = useful x (1 + stall / interval) / (1 - lost / MTBF)
    goodput       = useful / wall,  interruptions = wall / MTBF
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

GB = 1e9
#: A float, or a float64 array with one entry per point of a group.
Floats = float | np.ndarray


def job_bandwidth_gbps(kind: str, per_unit: float, units: int, nodes: int, node_gbps: float) -> float:
    """Aggregate GB/s a job of ``nodes`` nodes gets from ``units`` units of a storage system."""
    if kind == "local":
        return per_unit * units * nodes
    return min(per_unit * units, nodes * node_gbps)


def job_iops(kind: str, per_unit: float, units: int, nodes: int) -> float:
    """Random reads per second the job gets (local drives multiply with the nodes)."""
    return per_unit * units * (nodes if kind == "local" else 1)


def stored_token_bytes(vocab_size: int) -> int:
    """Bytes per token id in a pre-tokenized dataset, as Megatron-LM's indexed dataset chooses them
    (``DType.optimal_dtype``: uint16 for vocabularies below 65,500 ids, int32 otherwise)."""
    return 2 if vocab_size < 65500 else 4


def checkpoint_bytes(
    weights_per_rank: float, optimizer_per_rank: float, ranks: int, dp: int, zero_stage: int
) -> float:
    """Training state held once: weights and optimizer states (master weights included)."""
    weight_copies = 1 if zero_stage >= 3 else dp
    optimizer_copies = 1 if zero_stage >= 1 else dp
    return weights_per_rank * ranks / weight_copies + optimizer_per_rank * ranks / optimizer_copies


def young_daly_interval_s(mtbf_s: Floats, stall_s: Floats) -> Floats:
    """The checkpoint interval that minimises lost time to first order: sqrt(2 x MTBF x stall)."""
    return (2.0 * mtbf_s * stall_s) ** 0.5


@dataclass(frozen=True, slots=True)
class Goodput:
    """Floats for floats, arrays (one entry per point) for arrays."""

    wall_s: Floats  # inf where failures come faster than work is saved
    goodput: Floats  # 0 there
    interruptions: Floats
    lost_per_failure_s: Floats


def goodput(useful_s: Floats, mtbf_s: float, interval_s: Floats, stall_s: Floats, restart_s: float,
            restore_s: Floats) -> Goodput:  # fmt: skip
    """Wall-clock time, goodput and interruptions of ``useful_s`` seconds of training."""
    lost = interval_s / 2.0 + restart_s + restore_s
    if not math.isfinite(mtbf_s):  # no failures assumed: only the checkpoint stalls cost time
        wall = useful_s * (1.0 + stall_s / interval_s)
        return Goodput(wall, useful_s / wall, wall * 0.0, lost)
    progress = 1.0 - lost / mtbf_s
    if not any(isinstance(x, np.ndarray) for x in (useful_s, interval_s, stall_s, restore_s)):
        if progress <= 0.0:
            return Goodput(math.inf, 0.0, math.inf, lost)
        wall = useful_s * (1.0 + stall_s / interval_s) / progress
        return Goodput(wall, useful_s / wall, wall / mtbf_s, lost)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # a vanishing progress: an endless run
        wall = np.where(progress > 0.0, useful_s * (1.0 + stall_s / interval_s) / np.maximum(progress, 1e-300), np.inf)
        share = np.where(progress > 0.0, useful_s / wall, 0.0)
    return Goodput(_plain(wall), _plain(share), _plain(wall / mtbf_s), lost)


def _plain(x: np.ndarray) -> Floats:
    """A 0-d result of float inputs as a Python float; arrays as they are."""
    return float(x) if np.ndim(x) == 0 else x


def expected_interruptions(rate_per_gpu_hour: float, gpus: int, hours: float) -> float:
    """rate x GPUs x hours."""
    return rate_per_gpu_hour * gpus * hours
