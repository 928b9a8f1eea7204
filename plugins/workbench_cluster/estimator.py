"""The cluster estimator: storage and the data pipeline, checkpoints, failures and goodput.

An array estimator: the storage, the failure rate and (usually) the checkpoint are the same at
every point of a group; the data read rate, the step time and the run's goodput follow each
point's throughput. The same formulas run over Python floats for a group of one point (a single
estimate) and over float64 arrays otherwise; a figure another plugin left without a value is NaN
here, and the key has no value at that point, with the reason as its formula.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from workbench.core.scenario import DatasetFormat, FinetuneMethod, Scenario, Workload
from workbench.engine.estimator import EstimatorInfo
from workbench.engine.points import (
    Column,
    PointOutputs,
    PointsContext,
    PointWarning,
    SharedColumn,
    at,
    column_for,
)
from workbench.engine.quantity import FixedQuantity
from workbench.engine.storage_catalog import StorageSystem, storage_system
from workbench_cluster import assumptions as A
from workbench_cluster import formulas as F
from workbench_cluster.formulas import Floats
from workbench_cluster.keys import CLUSTER, label, unit

VERSION = "1.0.0"

NEEDS = (
    "memory.average_gpu.weights",
    "memory.average_gpu.optimizer_states",
    "performance.tokens_per_s",
    "performance.step_time_s",
    "performance.train_time_s",
    "cost.total_usd",
)

_TRAINING_ONLY = tuple(k for k, v in CLUSTER.items() if v[1] == "training")
_INFERENCE_ONLY = tuple(k for k, v in CLUSTER.items() if v[1] == "inference")
_CHECKPOINT_AND_RUN = tuple(k for k in _TRAINING_ONLY if k.startswith(("cluster.checkpoint.", "cluster.failures.",
                                                                      "cluster.goodput")))  # fmt: skip
_RUN_KEYS = ("cluster.failures.expected_interruptions", "cluster.goodput", "cluster.goodput_days",
             "cluster.goodput_usd")  # fmt: skip
_NAN = float("nan")

Formula = Callable[[int], str]


@lru_cache(maxsize=128)
def _null(key: str, why: str) -> SharedColumn:
    """``key`` with no value at any point, the reason as its formula and note (made once)."""
    return SharedColumn(FixedQuantity(None, unit(key), label(key), why, (), why))


def _size(n: float) -> str:
    for step, name in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB")):
        if n >= step:
            return f"{n / step:,.3g} {name}"
    return f"{n:,.0f} B"


def _float(value: object) -> float:
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_)):
        return float(value)
    return _NAN


def _read(ctx: PointsContext, key: str) -> Floats:
    """``key``'s numbers, NaN where it has none: a float for a group of one point (or a value every
    point shares), else a float64 array."""
    if ctx.n == 1:
        return _float(ctx.values.value(key, 0)) if key in ctx.values else _NAN
    if key not in ctx.values:
        return _NAN
    values = ctx.value(key)
    if not isinstance(values, np.ndarray):
        return _float(values)
    if values.dtype.kind in "fiu":
        return values.astype(np.float64)
    if values.dtype.kind == "O":
        return np.array([_float(x) for x in values.tolist()], dtype=np.float64)
    return np.full(ctx.n, _NAN)


def _where(cond: bool | np.ndarray) -> tuple[bool, np.ndarray | None]:
    """(any point, the mask for a PointWarning: None when every point) of a condition."""
    if not isinstance(cond, np.ndarray):
        return bool(cond), None
    count = int(np.count_nonzero(cond))
    return count > 0, (None if count == cond.size else cond)


class _Out:
    """The columns being built, one per key."""

    def __init__(self, ctx: PointsContext) -> None:
        self.n = ctx.n
        self.values: dict[str, Column] = {}
        self.warnings: list[PointWarning] = []

    def null(self, keys: tuple[str, ...], why: str) -> None:
        for key in keys:
            self.values[key] = _null(key, why)

    def put(self, key: str, values: Floats, formula: Formula | str, ids: tuple[str, ...] = (), note: str = "",
            why: str = "") -> None:  # fmt: skip
        """``values`` (NaN: no value at that point, ``why`` says why) with its formula of point i."""
        n = self.n
        if n == 1:
            x = float(np.asarray(values).reshape(-1)[0])
            if math.isnan(x):
                self.values[key] = _null(key, why)
                return
            self.values[key] = column_for(1, x, unit(key), label(key), formula, ids, note)
            return
        array = np.broadcast_to(np.asarray(values, dtype=np.float64), (n,))
        missing = np.isnan(array)
        if missing.all():
            self.values[key] = _null(key, why)
            return
        if not missing.any():
            self.values[key] = Column(np.array(array), unit(key), label(key), formula, ids, note)
            return
        held = array.astype(object)
        held[missing] = None
        shown = formula if callable(formula) else (lambda _i: formula)
        self.values[key] = Column(held, unit(key), label(key), lambda i: why if missing[i] else shown(i), ids, note)

    def text(self, key: str, value: str | np.ndarray, formula: Formula | str, note: str = "") -> None:
        if self.n == 1 and isinstance(value, np.ndarray):
            value = str(value.reshape(-1)[0])
        self.values[key] = column_for(self.n, value, "", label(key), formula, (), note)

    def warn(self, cond: bool | np.ndarray, code: str, message: Formula | str, severity: str, fix: str) -> None:
        found, mask = _where(cond)
        if found:
            self.warnings.append(PointWarning(code, message, severity, fix, mask))


class ClusterEstimator:
    info = EstimatorInfo(
        id="cluster",
        title="Storage, checkpoints, failures and goodput",
        version=VERSION,
        produces=tuple(CLUSTER),
        needs=NEEDS,
        assumptions=A.ASSUMPTIONS,
        description="Storage bandwidth and IOPS for the data loader and when storage sets the step time; "
        "checkpoint size, write/restore time and interval (Young/Daly); expected interruptions, goodput and "
        "goodput-adjusted days and cost (spot capacity optional); model load time for serving cold starts.",
    )

    def estimate_points(self, ctx: PointsContext) -> PointOutputs:
        out = _Out(ctx)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            self._estimate(ctx, out)
        return PointOutputs(out.values, out.warnings)

    def _estimate(self, ctx: PointsContext, out: _Out) -> None:
        sc = ctx.scenario
        try:
            system = storage_system(sc.cluster.storage)
        except KeyError as exc:
            why = str(exc.args[0])
            out.warn(True, "storage-unknown", f"{why}: storage, checkpoints and goodput are not estimated", "error",
                     "name one with --storage (see `catalog storage`)")  # fmt: skip
            out.null(tuple(CLUSTER), why)
            return
        gpus_per_node = ctx.cluster.node.gpus_per_node
        nodes = max(1, math.ceil(sc.num_gpus / gpus_per_node))
        bw = _storage(out, sc, system, nodes, ctx.assumptions[A.NODE_STORAGE_GBPS.id])
        weights = _weights(ctx, out, sc)
        if not sc.is_training:
            out.null(_TRAINING_ONLY, "does not apply to inference")
            _model_load(out, sc, system, weights, bw)
            return
        out.null(_INFERENCE_ONLY, "training: the restore time is cluster.checkpoint.read_s")
        _data(ctx, out, sc, system, bw, gpus_per_node)
        _checkpoint_and_goodput(ctx, out, sc, bw, nodes)


class _Bandwidth:
    __slots__ = ("read", "write", "iops", "how")

    def __init__(self, read: float, write: float, iops: float | None, how: str) -> None:
        self.read, self.write, self.iops, self.how = read, write, iops, how


def _storage(out: _Out, sc: Scenario, s: StorageSystem, nodes: int, node_gbps: float) -> _Bandwidth:
    units = sc.cluster.storage_count or s.count
    kind = s.kind.value
    what = {"local": "drives per node", "shared": "units", "object": "prefixes"}[kind]
    ids = () if kind == "local" else (A.NODE_STORAGE_GBPS.id,)
    if sc.cluster.storage_gbps is not None:
        read = write = sc.cluster.storage_gbps
        how = f"{read:,.4g} GB/s (scenario storage_gbps)"
        read_text = write_text = how
        ids = ()
    else:
        read = F.job_bandwidth_gbps(kind, s.read_gbps, units, nodes, node_gbps)
        write = F.job_bandwidth_gbps(kind, s.write_gbps, units, nodes, node_gbps)

        def text(per: float) -> str:
            if kind == "local":
                return f"{per:g} GB/s per drive x {units} {what} x {nodes:,} nodes"
            return f"min({per:g} GB/s x {units} {what}, {nodes:,} nodes x {node_gbps:g} GB/s per node)"

        read_text, write_text, how = text(s.read_gbps), text(s.write_gbps), s.name
    source = f"{s.source.title} (read {s.source.retrieved})"
    out.text("cluster.storage.name", s.name, f"{s.id}: {kind}", source)
    out.put("cluster.storage.read_gbps", read, read_text, ids, source)
    out.put("cluster.storage.write_gbps", write, write_text, ids, source)
    iops = None
    if s.random_read_iops is None:
        out.null(("cluster.storage.read_iops",), f"{s.name}: no published random-read figure")
    else:
        iops = F.job_iops(kind, s.random_read_iops, units, nodes)
        mult = f" x {nodes:,} nodes" if kind == "local" else ""
        out.put("cluster.storage.read_iops", iops, f"{s.random_read_iops:,.0f} per unit x {units} {what}{mult}", (),
                source)  # fmt: skip
    return _Bandwidth(read, write, iops, how)


def _weights(ctx: PointsContext, out: _Out, sc: Scenario) -> Floats:
    """One replica's weights: the average rank's weights x ranks / weight copies."""
    per_rank = _read(ctx, "memory.average_gpu.weights")
    p = sc.parallel
    ranks = p.world_size
    copies = 1 if (sc.is_training and p.zero_stage >= 3) else p.dp
    total = per_rank * ranks / copies
    out.put("cluster.checkpoint.weights_bytes", total,
            lambda i: f"{_size(at(per_rank, i))} per GPU (average) x {ranks:,} GPUs / {copies:,} copies",
            why="the memory plugin gave no weights per GPU")  # fmt: skip
    return total


def _model_load(out: _Out, sc: Scenario, s: StorageSystem, weights: Floats, bw: _Bandwidth) -> None:
    replicas = sc.parallel.dp
    seconds = weights * replicas / (bw.read * F.GB)
    out.put("cluster.checkpoint.model_load_s", seconds,
            lambda i: f"{_size(at(weights, i))} x {replicas:,} replicas / {bw.read:,.4g} GB/s ({bw.how})",
            why="no weight size")  # fmt: skip
    out.warn(seconds > 600, "slow-cold-start",
             lambda i: f"A cold start reads the weights for {at(seconds, i) / 60:,.0f} minutes from {s.name}", "info",
             "faster storage (--storage), more units (--storage-count), or weights cached on local NVMe")  # fmt: skip


def _data(ctx: PointsContext, out: _Out, sc: Scenario, s: StorageSystem, bw: _Bandwidth, gpus_per_node: int) -> None:
    text = sc.cluster.dataset_format is DatasetFormat.TEXT
    if text:
        per_token = ctx.assumptions[A.TEXT_BYTES_PER_TOKEN.id]
        out.put("cluster.data.bytes_per_token", per_token, f"raw text: {per_token:g} B/token",
                (A.TEXT_BYTES_PER_TOKEN.id,))  # fmt: skip
    else:
        vocab = ctx.model.vocab_size
        per_token = float(F.stored_token_bytes(vocab))
        kind, rel = ("uint16", "<") if per_token == 2 else ("int32", ">=")
        out.put("cluster.data.bytes_per_token", per_token, f"{kind} token ids: vocabulary {vocab:,} {rel} 65,500",
                (), "Megatron-LM indexed dataset (DType.optimal_dtype)")  # fmt: skip
    tokens_s = _read(ctx, "performance.tokens_per_s")
    tokens_s = np.where(tokens_s > 0, tokens_s, _NAN) if isinstance(tokens_s, np.ndarray) else (
        tokens_s if tokens_s > 0 else _NAN)  # fmt: skip
    no_rate = "no training throughput (see performance.tokens_per_s)"
    seq = ctx.points["seq_len"]
    seq_len: Any = int(seq[0]) if ctx.n == 1 else seq.astype(np.float64)
    read = tokens_s * per_token / F.GB
    iops = tokens_s / seq_len
    out.put("cluster.data.read_gbps", read, lambda i: f"{at(tokens_s, i):,.0f} tokens/s x {per_token:g} B",
            why=no_rate)  # fmt: skip
    out.put("cluster.data.read_iops", iops,
            lambda i: f"{at(tokens_s, i):,.0f} tokens/s / {at(seq_len, i):,.0f} tokens per sequence", why=no_rate)  # fmt: skip
    util = read / bw.read
    if bw.iops is not None:
        util = np.maximum(util, iops / bw.iops)

    def util_text(i: int) -> str:
        shown = f"{at(read, i):,.4g} / {bw.read:,.4g} GB/s"
        return shown if bw.iops is None else f"max({shown}, {at(iops, i):,.0f} / {bw.iops:,.0f} IOPS)"

    out.put("cluster.data.storage_utilization", util, util_text, why=no_rate)
    unknown = np.isnan(util)
    if np.all(unknown):
        out.null(("cluster.data.bound",), no_rate)
    else:
        bound = np.where(util > 1.0, "storage", "gpu").astype(object)
        bound[unknown] = None
        out.text("cluster.data.bound", bound if bound.ndim else str(bound),
                 lambda i: (no_rate if math.isnan(at(util, i)) else
                            f"storage utilization {at(util, i):.3g} {'>' if at(util, i) > 1 else '<='} 1"))  # fmt: skip
    step = _read(ctx, "performance.step_time_s")
    slower = np.maximum(1.0, util)
    out.put("cluster.data.step_time_s", step * slower,
            lambda i: f"step {at(step, i):.4g} s x max(1, storage utilization {at(util, i):.3g})",
            why="no step time or training throughput")  # fmt: skip
    iops_text = "" if bw.iops is None else f" and {bw.iops:,.0f} reads/s"
    out.warn(
        (util > 1.0) & ~np.isnan(step),
        "storage-bound",
        lambda i: (f"Storage, not the GPUs, sets the step time: the data loader needs {at(read, i):,.3g} GB/s and "
                   f"{at(iops, i):,.0f} reads/s, {s.name} gives the job {bw.read:,.3g} GB/s{iops_text}; a step takes "
                   f"{at(step, i) * at(util, i):.3g} s instead of {at(step, i):.3g} s"),
        "warning",
        "more storage units (--storage-count), faster storage (--storage), or pre-tokenized data",
    )  # fmt: skip
    workers = ctx.assumptions[A.LOADER_WORKERS_PER_GPU.id]
    cores: Floats = workers * gpus_per_node
    ids: tuple[str, ...] = (A.LOADER_WORKERS_PER_GPU.id,)
    if not text:
        out.put("cluster.data.loader_cores_per_node", cores, f"{workers:g} workers x {gpus_per_node} GPUs", ids)
        return
    per_core = ctx.assumptions[A.TOKENIZE_MB_PER_CORE_S.id]
    node_mb = read * 1000.0 * gpus_per_node / sc.num_gpus
    cores = cores + node_mb / per_core
    ids += (A.TOKENIZE_MB_PER_CORE_S.id, A.TEXT_BYTES_PER_TOKEN.id)
    out.put("cluster.data.loader_cores_per_node", cores,
            lambda i: (f"{workers:g} workers x {gpus_per_node} GPUs + {at(node_mb, i):,.4g} MB/s of text per node / "
                       f"{per_core:g} MB/s per core"), ids, why=no_rate)  # fmt: skip


def _checkpoint_and_goodput(ctx: PointsContext, out: _Out, sc: Scenario, bw: _Bandwidth, nodes: int) -> None:
    p = sc.parallel
    weights = _read(ctx, "memory.average_gpu.weights")
    optimizer = _read(ctx, "memory.average_gpu.optimizer_states")
    no_state = "the memory plugin gave no weights or optimizer states per GPU"
    if np.all(np.isnan(weights)) or np.all(np.isnan(optimizer)):
        out.null(_CHECKPOINT_AND_RUN, no_state)
        return
    ranks = p.world_size
    wc = 1 if p.zero_stage >= 3 else p.dp
    oc = 1 if p.zero_stage >= 1 else p.dp
    if sc.workload is Workload.FINETUNE and sc.method is not FinetuneMethod.FULL:
        # The frozen base weights are not saved: the adapters' fp32 master copy is in the optimizer states.
        size = F.checkpoint_bytes(0.0, optimizer, ranks, p.dp, p.zero_stage)

        def size_text(i: int) -> str:
            return (f"{sc.method.value}: optimizer states {_size(at(optimizer, i))} per GPU x {ranks:,} GPUs / "
                    f"{oc:,} copies (frozen base weights not saved)")  # fmt: skip
    else:
        size = F.checkpoint_bytes(weights, optimizer, ranks, p.dp, p.zero_stage)

        def size_text(i: int) -> str:
            return (f"weights {_size(at(weights, i))} x {ranks:,} GPUs / {wc:,} copies + optimizer states "
                    f"{_size(at(optimizer, i))} x {ranks:,} GPUs / {oc:,} copies (ZeRO {p.zero_stage}, DP {p.dp})")

    note = "with EP, expert shards on different EP ranks are distinct: the size is a lower bound" if p.ep > 1 else ""
    out.put("cluster.checkpoint.bytes", size, size_text, (), note, no_state)
    write_s = size / (bw.write * F.GB)
    read_s = size / (bw.read * F.GB)
    out.put("cluster.checkpoint.write_s", write_s,
            lambda i: f"{_size(at(size, i))} / {bw.write:,.4g} GB/s ({bw.how})", why=no_state)  # fmt: skip
    out.put("cluster.checkpoint.read_s", read_s,
            lambda i: f"{_size(at(size, i))} / {bw.read:,.4g} GB/s ({bw.how})", why=no_state)  # fmt: skip
    if sc.cluster.async_checkpoint:
        copy = ctx.assumptions[A.HOST_COPY_GBPS.id]
        shard = size / ranks
        stall = shard / (copy * F.GB)
        out.put("cluster.checkpoint.stall_s", stall,
                lambda i: f"asynchronous: {_size(at(shard, i))} per GPU / {copy:g} GB/s to host",
                (A.HOST_COPY_GBPS.id,), why=no_state)  # fmt: skip
    else:
        stall = write_s
        out.put("cluster.checkpoint.stall_s", stall, lambda i: f"synchronous: the write, {at(write_s, i):.4g} s",
                why=no_state)  # fmt: skip

    rate = ctx.assumptions[A.FAILURE_RATE.id]
    restart = ctx.assumptions[A.RESTART_S.id]
    per_hour = rate * sc.num_gpus
    ids: tuple[str, ...] = (A.FAILURE_RATE.id,)
    mtbf_text = f"1 / ({rate:.4g} per GPU-h x {sc.num_gpus:,} GPUs"
    if sc.cluster.spot:
        preempt = ctx.assumptions[A.SPOT_PREEMPTIONS.id]
        per_hour += preempt * nodes
        mtbf_text += f" + {preempt:.3g} preemptions per node-h x {nodes:,} nodes"
        ids += (A.SPOT_PREEMPTIONS.id,)
    mtbf_h = 1.0 / per_hour if per_hour > 0 else math.inf
    mtbf_s = mtbf_h * 3600.0
    out.put("cluster.failures.per_gpu_hour", rate, f"assumption {A.FAILURE_RATE.id}", (A.FAILURE_RATE.id,))
    out.put("cluster.failures.mtbf_h", mtbf_h if math.isfinite(mtbf_h) else _NAN, mtbf_text + ")", ids,
            why="no failures assumed")  # fmt: skip
    user = sc.cluster.checkpoint_interval_s
    if user is not None:
        interval: Floats = user + 0.0 * size  # the size's shape: NaN where it has no value
        interval_text: Formula | str = f"scenario checkpoint_interval_s {user:g}"
    elif math.isfinite(mtbf_s):
        optimum = F.young_daly_interval_s(mtbf_s, stall)
        interval = np.maximum(optimum, write_s) if sc.cluster.async_checkpoint else optimum

        def optimum_text(i: int) -> str:
            shown = f"Young/Daly: sqrt(2 x MTBF {mtbf_s:,.0f} s x stall {at(stall, i):.4g} s)"
            if sc.cluster.async_checkpoint and at(optimum, i) < at(write_s, i):
                shown += f", at least the background write {at(write_s, i):.4g} s"
            return shown

        interval_text = optimum_text
    else:
        interval = _NAN
        interval_text = "no failures assumed: no checkpoint needed for recovery"
    out.put("cluster.checkpoint.interval_s", _plain(interval), interval_text, ids,
            why="no failures assumed: no checkpoint needed for recovery" if not math.isfinite(mtbf_s) else no_state)  # fmt: skip
    lost = interval / 2.0 + restart + read_s
    out.put("cluster.failures.lost_per_failure_s", _plain(lost),
            lambda i: f"interval {at(interval, i):,.4g} s / 2 + restart {restart:g} s + restore {at(read_s, i):.4g} s",
            (A.RESTART_S.id,), why="no checkpoint interval")  # fmt: skip
    useful = _read(ctx, "performance.train_time_s")
    if np.all(np.isnan(useful)):
        out.null(_RUN_KEYS, "set --train-tokens to estimate a run")
        return
    if math.isfinite(mtbf_s):
        g = F.goodput(useful, mtbf_s, interval, stall, restart, read_s)
    else:  # no failures, no checkpoints: the run's own length
        g = F.Goodput(useful, useful / useful, useful * 0.0, lost)
    run_ids = (*ids, A.RESTART_S.id)
    never = np.asarray(g.goodput <= 0.0)
    no_run = "set --train-tokens to estimate a run"

    def wall_text(i: int) -> str:
        return (f"useful {at(useful, i) / 86400:,.2f} days x (1 + stall {at(stall, i):.3g} s / interval "
                f"{at(interval, i):,.4g} s) / (1 - lost {at(lost, i):,.4g} s / MTBF {mtbf_s:,.0f} s)")

    out.put("cluster.failures.expected_interruptions", _plain(np.where(never, _NAN, g.interruptions)),
            lambda i: f"wall {at(g.wall_s, i) / 3600:,.1f} h / MTBF {mtbf_h:.4g} h", run_ids, why=no_run)  # fmt: skip
    share = _plain(np.where(never, _NAN, g.goodput))
    never_why = "the run never finishes: each interruption loses more time than passes between interruptions"
    out.put("cluster.goodput", share, lambda i: f"useful / wall: {wall_text(i)}", run_ids,
            why=no_run if not np.any(never) else never_why)  # fmt: skip
    out.put("cluster.goodput_days", _plain(np.where(never, _NAN, g.wall_s / 86400.0)), wall_text, run_ids,
            why=no_run if not np.any(never) else never_why)  # fmt: skip
    cost = _read(ctx, "cost.total_usd")
    factor, cost_ids, spot_text = 1.0, run_ids, ""
    if sc.cluster.spot:
        gpu = ctx.gpu
        if sc.pricing.cloud_usd_per_gpu_hour is None and gpu.cloud_spot_usd_per_hour and gpu.cloud_usd_per_hour:
            # the catalog's own dated spot quote for this accelerator, against the on-demand one costed
            factor = gpu.cloud_spot_usd_per_hour / gpu.cloud_usd_per_hour
            spot_text = f" x catalog spot/on-demand {gpu.cloud_spot_usd_per_hour:g}/{gpu.cloud_usd_per_hour:g}"
        else:
            discount = ctx.assumptions[A.SPOT_DISCOUNT.id]
            factor, cost_ids = 1.0 - discount, (*run_ids, A.SPOT_DISCOUNT.id)
            spot_text = f" x (1 - spot discount {discount:g})"
    usd = cost / share * factor
    out.put("cluster.goodput_usd", usd, lambda i: f"${at(cost, i):,.0f} / goodput {at(share, i):.4g}{spot_text}",
            cost_ids, why="no rental cost (see cost.total_usd), or no goodput")  # fmt: skip
    out.warn(never & ~np.isnan(useful), "no-progress",
             lambda i: (f"Interruptions come every {mtbf_s / 60:,.0f} minutes and each loses {at(lost, i) / 60:,.0f}: "
                        "the run never finishes"), "error",
             "shorter restarts, asynchronous checkpoints (--async-checkpoint), or faster storage")  # fmt: skip
    out.warn((share < 0.8) & ~never, "low-goodput",
             lambda i: (f"Only {at(share, i):.0%} of the wall-clock time trains: {at(g.interruptions, i):,.0f} "
                        f"interruptions, {at(lost, i) / 60:,.0f} minutes lost each"), "warning",
             f"asynchronous checkpoints (--async-checkpoint), faster restarts (--set {A.RESTART_S.id}=...), or "
             "faster storage")  # fmt: skip


def _plain(x: Floats) -> Floats:
    """A 0-d array (numpy's answer for float inputs) as a Python float."""
    return float(x) if np.ndim(x) == 0 else x
