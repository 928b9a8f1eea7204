"""The training data pipeline: read rate, shuffled reads, data-loader cores, and whether storage
sets the step time."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from workbench.core.scenario import DatasetFormat, Scenario
from workbench.engine.points import PointsContext, at
from workbench.engine.storage_catalog import StorageSystem
from workbench_cluster import assumptions as A
from workbench_cluster import formulas as F
from workbench_cluster.columns import NAN, Out, figure, isnan, larger, nowhere
from workbench_cluster.formulas import Floats
from workbench_cluster.storage import Bandwidth


def data(ctx: PointsContext, out: Out, sc: Scenario, s: StorageSystem, bw: Bandwidth, gpus_per_node: int) -> None:
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
    tokens_s = figure(ctx, "performance.tokens_per_s")
    tokens_s = np.where(tokens_s > 0, tokens_s, NAN) if isinstance(tokens_s, np.ndarray) else (
        tokens_s if tokens_s > 0 else NAN)  # fmt: skip
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
        util = larger(util, iops / bw.iops)

    def util_text(i: int) -> str:
        shown = f"{at(read, i):,.4g} / {bw.read:,.4g} GB/s"
        return shown if bw.iops is None else f"max({shown}, {at(iops, i):,.0f} / {bw.iops:,.0f} IOPS)"

    out.put("cluster.data.storage_utilization", util, util_text, why=no_rate)
    if nowhere(util):
        out.null(("cluster.data.bound",), no_rate)
    else:
        bound = np.where(util > 1.0, "storage", "gpu").astype(object)
        bound[np.isnan(util)] = None
        out.text("cluster.data.bound", bound if bound.ndim else str(bound),
                 lambda i: (no_rate if math.isnan(at(util, i)) else
                            f"storage utilization {at(util, i):.3g} {'>' if at(util, i) > 1 else '<='} 1"))  # fmt: skip
    step = figure(ctx, "performance.step_time_s")
    slower = larger(1.0, util)
    out.put("cluster.data.step_time_s", step * slower,
            lambda i: f"step {at(step, i):.4g} s x max(1, storage utilization {at(util, i):.3g})",
            why="no step time or training throughput")  # fmt: skip
    iops_text = "" if bw.iops is None else f" and {bw.iops:,.0f} reads/s"
    out.warn(
        (util > 1.0) & ~np.isnan(step) if isinstance(util, np.ndarray) else util > 1.0 and not isnan(step),
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


