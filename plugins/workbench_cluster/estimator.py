"""The cluster estimator: storage and the data pipeline, checkpoints, failures and goodput.

It is a scalar estimator (the engine runs it point by point): it reads about ten figures other
plugins computed and does a few dozen float operations on them, with no per-layer work, so a
point costs microseconds; its keys are per plan, read in single estimates and comparisons, not
swept over thousands of batch sizes. Written over Python floats, each key's explanation is its
own formula with the values in it.
"""

from __future__ import annotations

import math
from functools import lru_cache

from workbench.core.scenario import DatasetFormat, FinetuneMethod, Scenario
from workbench.engine.estimator import EstimateContext, EstimatorInfo
from workbench.engine.quantity import FixedQuantity, Outputs, Quantity, Warning
from workbench.engine.storage_catalog import StorageSystem, storage_system
from workbench_cluster import assumptions as A
from workbench_cluster import formulas as F
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
_RUN_KEYS = (
    "cluster.failures.expected_interruptions",
    "cluster.goodput",
    "cluster.goodput_days",
    "cluster.goodput_usd",
)


@lru_cache(maxsize=64)
def _null(key: str, why: str) -> FixedQuantity:
    return FixedQuantity(None, unit(key), label(key), why, (), why)


def _size(n: float) -> str:
    for step, name in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB")):
        if n >= step:
            return f"{n / step:,.3g} {name}"
    return f"{n:,.0f} B"


def _number(ctx: EstimateContext, key: str) -> float | None:
    found = ctx.values.get(key)
    value = None if found is None else found.value
    if value is None or isinstance(value, (bool, str)):
        return None
    return float(value)


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

    def estimate(self, ctx: EstimateContext) -> Outputs:
        sc = ctx.scenario
        out = Outputs()
        v = out.values
        try:
            system = storage_system(sc.cluster.storage)
        except KeyError as exc:
            why = str(exc.args[0])
            out.warnings.append(Warning("storage-unknown", f"{why}: storage, checkpoints and goodput are not "
                                        "estimated", "error", "name one with --storage (see `catalog storage`)"))  # fmt: skip
            for key in CLUSTER:
                v[key] = _null(key, why)
            return out
        gpus_per_node = ctx.cluster.node.gpus_per_node
        nodes = max(1, math.ceil(sc.num_gpus / gpus_per_node))
        node_gbps = ctx.assumptions[A.NODE_STORAGE_GBPS.id]
        bw = _storage(v, sc, system, nodes, node_gbps)
        weights = _weights(ctx, v, sc)
        if not sc.is_training:
            why = "does not apply to inference"
            for key in _TRAINING_ONLY:
                v[key] = _null(key, why)
            load = _model_load(v, sc, weights, bw)
            if load is not None and load > 600:
                out.warnings.append(Warning("slow-cold-start", f"A cold start reads the weights for "
                                            f"{load / 60:,.0f} minutes from {system.name}", "info",
                                            "faster storage (--storage), more units (--storage-count), or weights "
                                            "cached on local NVMe"))  # fmt: skip
            return out
        for key in _INFERENCE_ONLY:
            v[key] = _null(key, "training: the restore time is cluster.checkpoint.read_s")
        _data(ctx, v, out.warnings, sc, system, bw, gpus_per_node)
        _checkpoint_and_goodput(ctx, v, out.warnings, sc, bw, nodes)
        return out


class _Bandwidth:
    __slots__ = ("read", "write", "iops", "how")

    def __init__(self, read: float, write: float, iops: float | None, how: str) -> None:
        self.read, self.write, self.iops, self.how = read, write, iops, how


def _storage(v: dict[str, Quantity], sc: Scenario, s: StorageSystem, nodes: int, node_gbps: float) -> _Bandwidth:
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
    iops = None
    if s.random_read_iops is not None:
        iops = F.job_iops(kind, s.random_read_iops, units, nodes)
    source = f"{s.source.title} (read {s.source.retrieved})"
    v["cluster.storage.name"] = Quantity(s.name, "", label("cluster.storage.name"), f"{s.id}: {s.kind.value}", (),
                                         source)  # fmt: skip
    v["cluster.storage.read_gbps"] = Quantity(read, "GB/s", label("cluster.storage.read_gbps"), read_text, ids, source)
    v["cluster.storage.write_gbps"] = Quantity(write, "GB/s", label("cluster.storage.write_gbps"), write_text, ids,
                                               source)  # fmt: skip
    if iops is None:
        v["cluster.storage.read_iops"] = _null("cluster.storage.read_iops",
                                               f"{s.name}: no published random-read figure")  # fmt: skip
    else:
        mult = f" x {nodes:,} nodes" if kind == "local" else ""
        v["cluster.storage.read_iops"] = Quantity(
            iops, "IOPS", label("cluster.storage.read_iops"),
            f"{s.random_read_iops:,.0f} per unit x {units} {what}{mult}", (), source,
        )  # fmt: skip
    return _Bandwidth(read, write, iops, how)


def _weights(ctx: EstimateContext, v: dict[str, Quantity], sc: Scenario) -> float | None:
    """One replica's weights: the average rank's weights x ranks / weight copies."""
    per_rank = _number(ctx, "memory.average_gpu.weights")
    key = "cluster.checkpoint.weights_bytes"
    if per_rank is None:
        v[key] = _null(key, "the memory plugin gave no weights per GPU")
        return None
    p = sc.parallel
    ranks = p.world_size
    copies = 1 if (sc.is_training and p.zero_stage >= 3) else p.dp
    total = per_rank * ranks / copies
    v[key] = Quantity(total, "B", label(key),
                      lambda: f"{_size(per_rank)} per GPU (average) x {ranks:,} GPUs / {copies:,} copies")  # fmt: skip
    return total


def _model_load(v: dict[str, Quantity], sc: Scenario, weights: float | None, bw: _Bandwidth) -> float | None:
    key = "cluster.checkpoint.model_load_s"
    if weights is None:
        v[key] = _null(key, "no weight size")
        return None
    replicas = sc.parallel.dp
    seconds = weights * replicas / (bw.read * F.GB)
    v[key] = Quantity(seconds, "s", label(key),
                      lambda: f"{_size(weights)} x {replicas:,} replicas / {bw.read:,.4g} GB/s ({bw.how})")  # fmt: skip
    return seconds


def _data(ctx: EstimateContext, v: dict[str, Quantity], warnings: list[Warning], sc: Scenario, s: StorageSystem,
          bw: _Bandwidth, gpus_per_node: int) -> None:  # fmt: skip
    tokens_s = _number(ctx, "performance.tokens_per_s")
    text = sc.cluster.dataset_format is DatasetFormat.TEXT
    if text:
        per_token = ctx.assumptions[A.TEXT_BYTES_PER_TOKEN.id]
        v["cluster.data.bytes_per_token"] = Quantity(per_token, "B/token", label("cluster.data.bytes_per_token"),
                                                     f"raw text: {per_token:g} B/token", (A.TEXT_BYTES_PER_TOKEN.id,))  # fmt: skip
    else:
        vocab = ctx.model.vocab_size
        per_token = float(F.stored_token_bytes(vocab))
        kind = "uint16" if per_token == 2 else "int32"
        v["cluster.data.bytes_per_token"] = Quantity(
            per_token, "B/token", label("cluster.data.bytes_per_token"),
            f"{kind} token ids: vocabulary {vocab:,} {'<' if per_token == 2 else '>='} 65,500",
            (), "Megatron-LM indexed dataset (DType.optimal_dtype)",
        )  # fmt: skip
    workers = ctx.assumptions[A.LOADER_WORKERS_PER_GPU.id]
    data_keys = ("cluster.data.read_gbps", "cluster.data.read_iops", "cluster.data.storage_utilization",
                 "cluster.data.bound", "cluster.data.step_time_s", "cluster.data.loader_cores_per_node")  # fmt: skip
    if tokens_s is None or tokens_s <= 0:
        for key in data_keys:
            v[key] = _null(key, "no training throughput (see performance.tokens_per_s)")
        return
    read = tokens_s * per_token / F.GB
    iops = tokens_s / sc.seq_len
    v["cluster.data.read_gbps"] = Quantity(read, "GB/s", label("cluster.data.read_gbps"),
                                           lambda: f"{tokens_s:,.0f} tokens/s x {per_token:g} B")  # fmt: skip
    v["cluster.data.read_iops"] = Quantity(iops, "IOPS", label("cluster.data.read_iops"),
                                           lambda: f"{tokens_s:,.0f} tokens/s / {sc.seq_len:,} tokens per sequence")  # fmt: skip
    util = read / bw.read
    util_text = f"{read:,.4g} / {bw.read:,.4g} GB/s"
    if bw.iops is not None:
        util = max(util, iops / bw.iops)
        util_text = f"max({util_text}, {iops:,.0f} / {bw.iops:,.0f} IOPS)"
    v["cluster.data.storage_utilization"] = Quantity(util, "fraction", label("cluster.data.storage_utilization"),
                                                     util_text)  # fmt: skip
    bound = "storage" if util > 1.0 else "gpu"
    v["cluster.data.bound"] = Quantity(bound, "", label("cluster.data.bound"),
                                       f"storage utilization {util:.3g} {'>' if util > 1 else '<='} 1")  # fmt: skip
    step = _number(ctx, "performance.step_time_s")
    if step is None:
        v["cluster.data.step_time_s"] = _null("cluster.data.step_time_s", "no step time")
    else:
        slower = max(1.0, util)
        v["cluster.data.step_time_s"] = Quantity(step * slower, "s", label("cluster.data.step_time_s"),
                                                 f"step {step:.4g} s x max(1, storage utilization {util:.3g})")  # fmt: skip
        if util > 1.0:
            warnings.append(Warning(
                "storage-bound",
                f"Storage, not the GPUs, sets the step time: the data loader needs {read:,.3g} GB/s and "
                f"{iops:,.0f} reads/s, {s.name} gives the job {bw.read:,.3g} GB/s"
                + (f" and {bw.iops:,.0f} reads/s" if bw.iops is not None else "")
                + f"; a step takes {step * util:.3g} s instead of {step:.3g} s",
                "warning",
                "more storage units (--storage-count), faster storage (--storage), or pre-tokenized data",
            ))  # fmt: skip
    cores = workers * gpus_per_node
    cores_text = f"{workers:g} workers x {gpus_per_node} GPUs"
    ids: tuple[str, ...] = (A.LOADER_WORKERS_PER_GPU.id,)
    if text:
        per_core = ctx.assumptions[A.TOKENIZE_MB_PER_CORE_S.id]
        node_mb = read * 1000.0 * gpus_per_node / max(sc.num_gpus, 1)
        tokenize = node_mb / per_core
        cores += tokenize
        cores_text += f" + {node_mb:,.4g} MB/s of text per node / {per_core:g} MB/s per core"
        ids += (A.TOKENIZE_MB_PER_CORE_S.id, A.TEXT_BYTES_PER_TOKEN.id)
    v["cluster.data.loader_cores_per_node"] = Quantity(cores, "cores", label("cluster.data.loader_cores_per_node"),
                                                       cores_text, ids)  # fmt: skip


def _checkpoint_and_goodput(ctx: EstimateContext, v: dict[str, Quantity], warnings: list[Warning], sc: Scenario,
                            bw: _Bandwidth, nodes: int) -> None:  # fmt: skip
    p = sc.parallel
    weights = _number(ctx, "memory.average_gpu.weights")
    optimizer = _number(ctx, "memory.average_gpu.optimizer_states")
    if weights is None or optimizer is None:
        for key in _TRAINING_ONLY:
            if key.startswith(("cluster.checkpoint.", "cluster.failures.", "cluster.goodput")):
                v[key] = _null(key, "the memory plugin gave no weights or optimizer states per GPU")
        return
    lora = sc.method is not FinetuneMethod.FULL and sc.workload.value == "finetune"
    ranks = p.world_size
    if lora:
        # The frozen base weights are not saved: the adapters' fp32 master copy is in the optimizer states.
        size = F.checkpoint_bytes(0.0, optimizer, ranks, p.dp, p.zero_stage)
        size_text = (f"{sc.method.value}: optimizer states {_size(optimizer)} per GPU x {ranks:,} GPUs / "
                     f"{1 if p.zero_stage >= 1 else p.dp:,} copies (frozen base weights not saved)")  # fmt: skip
    else:
        size = F.checkpoint_bytes(weights, optimizer, ranks, p.dp, p.zero_stage)
        wc = 1 if p.zero_stage >= 3 else p.dp
        oc = 1 if p.zero_stage >= 1 else p.dp
        size_text = (f"weights {_size(weights)} x {ranks:,} GPUs / {wc:,} copies + optimizer states "
                     f"{_size(optimizer)} x {ranks:,} GPUs / {oc:,} copies (ZeRO {p.zero_stage}, DP {p.dp})")  # fmt: skip
    note = "with EP, expert shards on different EP ranks are distinct: the size is a lower bound" if p.ep > 1 else ""
    v["cluster.checkpoint.bytes"] = Quantity(size, "B", label("cluster.checkpoint.bytes"), size_text, (), note)
    write_s = size / (bw.write * F.GB)
    read_s = size / (bw.read * F.GB)
    v["cluster.checkpoint.write_s"] = Quantity(write_s, "s", label("cluster.checkpoint.write_s"),
                                               f"{_size(size)} / {bw.write:,.4g} GB/s ({bw.how})")  # fmt: skip
    v["cluster.checkpoint.read_s"] = Quantity(read_s, "s", label("cluster.checkpoint.read_s"),
                                              f"{_size(size)} / {bw.read:,.4g} GB/s ({bw.how})")  # fmt: skip
    if sc.cluster.async_checkpoint:
        copy = ctx.assumptions[A.HOST_COPY_GBPS.id]
        shard = size / ranks
        stall = shard / (copy * F.GB)
        v["cluster.checkpoint.stall_s"] = Quantity(stall, "s", label("cluster.checkpoint.stall_s"),
                                                   f"asynchronous: {_size(shard)} per GPU / {copy:g} GB/s to host",
                                                   (A.HOST_COPY_GBPS.id,))  # fmt: skip
    else:
        stall = write_s
        v["cluster.checkpoint.stall_s"] = Quantity(stall, "s", label("cluster.checkpoint.stall_s"),
                                                   f"synchronous: the write, {write_s:.4g} s")  # fmt: skip

    rate = ctx.assumptions[A.FAILURE_RATE.id]
    restart = ctx.assumptions[A.RESTART_S.id]
    per_hour = rate * sc.num_gpus
    failure_ids: tuple[str, ...] = (A.FAILURE_RATE.id,)
    mtbf_text = f"1 / ({rate:.4g} per GPU-h x {sc.num_gpus:,} GPUs"
    if sc.cluster.spot:
        preempt = ctx.assumptions[A.SPOT_PREEMPTIONS.id]
        per_hour += preempt * nodes
        mtbf_text += f" + {preempt:.3g} preemptions per node-h x {nodes:,} nodes"
        failure_ids += (A.SPOT_PREEMPTIONS.id,)
    mtbf_h = 1.0 / per_hour if per_hour > 0 else math.inf
    v["cluster.failures.per_gpu_hour"] = Quantity(rate, "1/GPU-h", label("cluster.failures.per_gpu_hour"),
                                                  f"assumption {A.FAILURE_RATE.id}", (A.FAILURE_RATE.id,))  # fmt: skip
    v["cluster.failures.mtbf_h"] = Quantity(mtbf_h if math.isfinite(mtbf_h) else None, "h",
                                            label("cluster.failures.mtbf_h"), mtbf_text + ")", failure_ids,
                                            "" if math.isfinite(mtbf_h) else "no failures assumed")  # fmt: skip
    mtbf_s = mtbf_h * 3600.0
    if sc.cluster.checkpoint_interval_s is not None:
        interval = sc.cluster.checkpoint_interval_s
        interval_text = f"scenario checkpoint_interval_s {interval:g}"
    elif math.isfinite(mtbf_s) and stall > 0:
        interval = F.young_daly_interval_s(mtbf_s, stall)
        interval_text = f"Young/Daly: sqrt(2 x MTBF {mtbf_s:,.0f} s x stall {stall:.4g} s)"
        if sc.cluster.async_checkpoint and interval < write_s:
            interval = write_s
            interval_text += f", at least the background write {write_s:.4g} s"
    else:
        interval = math.inf
        interval_text = "no failures assumed: no checkpoint needed for recovery"
    v["cluster.checkpoint.interval_s"] = Quantity(interval if math.isfinite(interval) else None, "s",
                                                  label("cluster.checkpoint.interval_s"), interval_text, failure_ids)  # fmt: skip
    lost = interval / 2.0 + restart + read_s
    v["cluster.failures.lost_per_failure_s"] = Quantity(
        lost if math.isfinite(lost) else None, "s", label("cluster.failures.lost_per_failure_s"),
        f"interval {interval:,.4g} s / 2 + restart {restart:g} s + restore {read_s:.4g} s", (A.RESTART_S.id,),
    )  # fmt: skip
    useful = _number(ctx, "performance.train_time_s")
    if useful is None:
        for key in _RUN_KEYS:
            v[key] = _null(key, "set --train-tokens to estimate a run")
        return
    if not math.isfinite(interval):
        g = F.Goodput(useful, 1.0, 0.0, lost)
    else:
        g = F.goodput(useful, mtbf_s, interval, stall, restart, read_s)
    run_ids = (*failure_ids, A.RESTART_S.id)
    v["cluster.failures.expected_interruptions"] = Quantity(
        g.interruptions if math.isfinite(g.interruptions) else None, "interruptions",
        label("cluster.failures.expected_interruptions"),
        lambda: f"wall {g.wall_s / 3600:,.1f} h / MTBF {mtbf_h:.4g} h", run_ids,
    )  # fmt: skip
    wall_text = (f"useful {useful / 86400:,.2f} days x (1 + stall {stall:.3g} s / interval {interval:,.4g} s) / "
                 f"(1 - lost {lost:,.4g} s / MTBF {mtbf_s:,.0f} s)")  # fmt: skip
    if g.goodput <= 0.0:
        for key in ("cluster.goodput", "cluster.goodput_days", "cluster.goodput_usd"):
            v[key] = _null(key, f"the run never finishes: each interruption loses {lost:,.0f} s but one comes every "
                                f"{mtbf_s:,.0f} s")  # fmt: skip
        warnings.append(Warning("no-progress", f"Interruptions come every {mtbf_s / 60:,.0f} minutes and each loses "
                                f"{lost / 60:,.0f}: the run never finishes", "error",
                                "shorter restarts, asynchronous checkpoints (--async-checkpoint), or faster storage"))  # fmt: skip
        return
    v["cluster.goodput"] = Quantity(g.goodput, "fraction", label("cluster.goodput"),
                                    lambda: f"useful / wall: {wall_text}", run_ids)  # fmt: skip
    v["cluster.goodput_days"] = Quantity(g.wall_s / 86400.0, "days", label("cluster.goodput_days"),
                                         lambda: wall_text, run_ids)  # fmt: skip
    cost = _number(ctx, "cost.total_usd")
    if cost is None:
        v["cluster.goodput_usd"] = _null("cluster.goodput_usd", "no rental cost (see cost.total_usd)")
    else:
        factor, cost_ids, spot_text = 1.0, run_ids, ""
        if sc.cluster.spot:
            discount = ctx.assumptions[A.SPOT_DISCOUNT.id]
            factor, cost_ids = 1.0 - discount, (*run_ids, A.SPOT_DISCOUNT.id)
            spot_text = f" x (1 - spot discount {discount:g})"
        usd = cost / g.goodput * factor
        v["cluster.goodput_usd"] = Quantity(usd, "USD", label("cluster.goodput_usd"),
                                            f"${cost:,.0f} / goodput {g.goodput:.4g}{spot_text}", cost_ids)  # fmt: skip
    if g.goodput < 0.8:
        warnings.append(Warning("low-goodput", f"Only {g.goodput:.0%} of the wall-clock time trains: "
                                f"{g.interruptions:,.0f} interruptions, {lost / 60:,.0f} minutes lost each", "warning",
                                "asynchronous checkpoints (--async-checkpoint), faster restarts "
                                f"(--set {A.RESTART_S.id}=...), or faster storage"))  # fmt: skip
