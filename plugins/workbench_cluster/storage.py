"""The storage the job gets (aggregate read and write bandwidth, random reads), one replica's
weights, and the cold start of a server that reads them."""

from __future__ import annotations

from workbench.core.scenario import Scenario
from workbench.engine.points import PointsContext, at
from workbench.engine.storage_catalog import StorageSystem
from workbench_cluster import assumptions as A
from workbench_cluster import formulas as F
from workbench_cluster.columns import Out, bytes_text, figure
from workbench_cluster.formulas import Floats


class Bandwidth:
    __slots__ = ("read", "write", "iops", "how")

    def __init__(self, read: float, write: float, iops: float | None, how: str) -> None:
        self.read, self.write, self.iops, self.how = read, write, iops, how


def storage(out: Out, sc: Scenario, s: StorageSystem, nodes: int, node_gbps: float) -> Bandwidth:
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
    return Bandwidth(read, write, iops, how)


def weights_bytes(ctx: PointsContext, out: Out, sc: Scenario) -> Floats:
    """One replica's weights: the average rank's weights x ranks / weight copies."""
    per_rank = figure(ctx, "memory.average_gpu.weights")
    p = sc.parallel
    ranks = p.world_size
    copies = 1 if (sc.is_training and p.zero_stage >= 3) else p.dp
    total = per_rank * ranks / copies
    out.put("cluster.checkpoint.weights_bytes", total,
            lambda i: f"{bytes_text(at(per_rank, i))} per GPU (average) x {ranks:,} GPUs / {copies:,} copies",
            why="the memory plugin gave no weights per GPU")  # fmt: skip
    return total


def model_load(out: Out, sc: Scenario, s: StorageSystem, weights: Floats, bw: Bandwidth) -> None:
    replicas = sc.parallel.dp
    seconds = weights * replicas / (bw.read * F.GB)
    out.put("cluster.checkpoint.model_load_s", seconds,
            lambda i: f"{bytes_text(at(weights, i))} x {replicas:,} replicas / {bw.read:,.4g} GB/s ({bw.how})",
            why="no weight size")  # fmt: skip
    out.warn(seconds > 600, "slow-cold-start",
             lambda i: f"A cold start reads the weights for {at(seconds, i) / 60:,.0f} minutes from {s.name}", "info",
             "faster storage (--storage), more units (--storage-count), or weights cached on local NVMe")  # fmt: skip


