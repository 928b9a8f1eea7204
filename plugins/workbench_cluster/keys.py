"""Result keys of the cluster plugin: key -> (unit, applies to, label, meaning).

The window's Cluster tab and the report's Cluster section read these as they are: each key is one
row with its label and unit, grouped by its second dotted part (storage, data, checkpoint,
failures) and the goodput figures.
"""

from __future__ import annotations

CLUSTER: dict[str, tuple[str, str, str, str]] = {
    "cluster.storage.name": ("text", "both", "Storage system", "The storage system costed, from the storage catalog"),
    "cluster.storage.read_gbps": (
        "GB/s", "both", "Storage read bandwidth for the job",
        "Aggregate read bandwidth the job gets: local drives x nodes, or the shared system capped by the nodes' "
        "storage network",
    ),
    "cluster.storage.write_gbps": ("GB/s", "both", "Storage write bandwidth for the job", "The same for writes"),
    "cluster.storage.read_iops": (
        "IOPS", "both", "Storage random reads per second", "Random reads per second the job gets (null: not published)",
    ),
    "cluster.data.bytes_per_token": (
        "B/token", "training", "Stored bytes per training token",
        "uint16 or int32 token ids (pre-tokenized), or raw text bytes per token",
    ),
    "cluster.data.read_gbps": ("GB/s", "training", "Training data read rate", "tokens/s x stored bytes per token"),
    "cluster.data.read_iops": (
        "IOPS", "training", "Shuffled sample reads per second", "One random read per training sequence: tokens/s / seq-len",
    ),
    "cluster.data.storage_utilization": (
        "fraction", "training", "Share of storage the data loader uses",
        "The larger of read rate / read bandwidth and sample reads / random-read IOPS; above 1 storage sets the step",
    ),
    "cluster.data.bound": ("text", "training", "Data pipeline bound by", "gpu (storage keeps up) or storage"),
    "cluster.data.step_time_s": (
        "s", "training", "Step time with the data pipeline",
        "performance.step_time_s, or longer when storage cannot deliver a step's data in time",
    ),
    "cluster.data.loader_cores_per_node": (
        "cores", "training", "Data-loader CPU cores per node",
        "Loader workers per GPU x GPUs per node, plus the cores that tokenize raw text on the fly",
    ),
    "cluster.checkpoint.bytes": (
        "B", "training", "Checkpoint size",
        "Weights and optimizer states (fp32 master weights included), each shard once over data-parallel copies",
    ),
    "cluster.checkpoint.weights_bytes": (
        "B", "both", "Model weights (one copy)", "The weights of one model replica as the plan stores them",
    ),
    "cluster.checkpoint.write_s": ("s", "training", "Checkpoint write time", "checkpoint size / storage write bandwidth"),
    "cluster.checkpoint.read_s": ("s", "training", "Checkpoint restore time", "checkpoint size / storage read bandwidth"),
    "cluster.checkpoint.stall_s": (
        "s", "training", "Training stall per checkpoint",
        "The write time (synchronous), or the copy of each GPU's shard to host memory (asynchronous)",
    ),
    "cluster.checkpoint.interval_s": (
        "s", "training", "Checkpoint interval", "Young/Daly sqrt(2 x MTBF x stall), or the scenario's own",
    ),
    "cluster.checkpoint.model_load_s": (
        "s", "inference", "Model load time (cold start)",
        "Every replica's weights read from storage at its read bandwidth",
    ),
    "cluster.failures.per_gpu_hour": (
        "1/GPU-h", "training", "Interruptions per GPU-hour", "The failure rate used (assumption cluster.failures_per_gpu_hour)",
    ),
    "cluster.failures.mtbf_h": (
        "h", "training", "Mean time between job interruptions",
        "1 / (rate x GPUs), with spot preemptions x nodes added under --spot",
    ),
    "cluster.failures.lost_per_failure_s": (
        "s", "training", "Time lost per interruption", "interval / 2 + restart + checkpoint restore",
    ),
    "cluster.failures.expected_interruptions": (
        "interruptions", "training", "Expected interruptions over the run", "wall-clock hours / MTBF",
    ),
    "cluster.goodput": (
        "fraction", "training", "Goodput", "Useful training time / wall-clock time (checkpoint stalls and lost work)",
    ),
    "cluster.goodput_days": (
        "days", "training", "Time to train with failures", "performance.train_time_s / goodput, in days",
    ),
    "cluster.goodput_usd": (
        "USD", "training", "Cost of the run with failures",
        "cost.total_usd / goodput; under --spot x the catalog's spot/on-demand price ratio, else x (1 - spot discount)",
    ),
}


def label(key: str) -> str:
    return CLUSTER[key][2]


def unit(key: str) -> str:
    u = CLUSTER[key][0]
    return "" if u == "text" else u
