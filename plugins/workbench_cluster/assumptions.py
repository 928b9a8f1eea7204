"""The cluster plugin's tunable defaults, each with where its value comes from.

Ids start with ``cluster.``. Users override any of them per scenario (``--set ID=VALUE``) and see
them in ``--explain`` and the report appendix.
"""

from __future__ import annotations

from workbench.engine.assumptions import Assumption

#: Llama 3 405B pre-training: 419 unexpected interruptions in a 54-day snapshot on up to 16,384
#: H100 GPUs (Llama 3 paper, Sec. 3.3.4, Table 5): 419 / (16,384 x 54 x 24) per GPU-hour.
LLAMA3_INTERRUPTIONS = 419
LLAMA3_GPUS = 16384
LLAMA3_DAYS = 54
LLAMA3_RATE = LLAMA3_INTERRUPTIONS / (LLAMA3_GPUS * LLAMA3_DAYS * 24)

FAILURE_RATE = Assumption(
    id="cluster.failures_per_gpu_hour",
    title="Job interruptions per GPU-hour (hardware and software)",
    default=LLAMA3_RATE,
    unit="1/GPU-h",
    source=(
        "Llama Team, AI @ Meta, 'The Llama 3 Herd of Models' (arXiv 2407.21783, 2024), Sec. 3.3.4 and "
        "Table 5: 419 unexpected interruptions in a 54-day snapshot of 405B pre-training on up to 16,384 "
        "H100 GPUs (faulty GPUs 30.1%, HBM3 17.2%, ...): 419 / (16,384 x 54 x 24 h) = 1.97e-5 per GPU-hour, "
        "one interruption every ~3 hours at that scale. Meta's research clusters report more (Kokolis et "
        "al. 2024: 7.9 h mean time to failure for 1,024-GPU jobs, ~1.2e-4 per GPU-hour); range 1e-5 to 2e-4."
    ),
    description="Interruptions a synchronous job suffers grow with its GPUs: rate x GPUs x hours.",
    minimum=0.0,
    maximum=0.1,
)

RESTART_S = Assumption(
    id="cluster.restart_s",
    title="Time to detect a failure, replace the node and restart the job",
    default=600.0,
    unit="s",
    source=(
        "Workbench choice between published recovery times: FlashRecovery (Zhang et al. 2025, arXiv "
        "2509.03047) restores a 4,800-device job in 150 s with purpose-built detection and restart; "
        "jobs restarted by a scheduler with a spare-node swap commonly take tens of minutes. Range 60-3600 s."
    ),
    description="Added to every interruption, with the restore read and half an interval of lost work.",
    minimum=0.0,
    maximum=86400.0,
)

NODE_STORAGE_GBPS = Assumption(
    id="cluster.node_storage_gbps",
    title="Storage network bandwidth one node reaches, GB/s",
    default=50.0,
    unit="GB/s",
    source=(
        "NVIDIA DGX H100 datasheet: two 400 Gb/s ConnectX-7 ports for storage and in-band traffic, 100 GB/s "
        "line rate per node; 50 GB/s (half of it) is this workbench's sustained-throughput choice. "
        "Range 10-100 GB/s."
    ),
    description="Caps what a node reads from or writes to shared and object storage (not local drives).",
    minimum=0.1,
    maximum=10000.0,
)

HOST_COPY_GBPS = Assumption(
    id="cluster.host_copy_gbps",
    title="GPU-to-host copy bandwidth per GPU for an asynchronous checkpoint, GB/s",
    default=25.0,
    unit="GB/s",
    source=(
        "PCI Express Base Specification: a Gen5 x16 link moves ~64 GB/s per direction after encoding "
        "(Gen4 ~32 GB/s); staging a state dict to (pinned) host memory reaches a fraction of it. 25 GB/s "
        "is this workbench's choice. Range 5-64 GB/s."
    ),
    description="An asynchronous save stalls training only for this copy; the write runs in the background.",
    minimum=0.1,
    maximum=1000.0,
)

TEXT_BYTES_PER_TOKEN = Assumption(
    id="cluster.text_bytes_per_token",
    title="Bytes of raw text per token",
    default=4.0,
    unit="B/token",
    source=(
        "OpenAI, 'What are tokens and how to count them' (help center): one token is about 4 characters "
        "of common English text; UTF-8 stores such characters in one byte each. Other languages and code "
        "differ; range 2-8."
    ),
    description="Bytes the loader reads per training token when the dataset is raw text (--dataset-format text).",
    minimum=0.5,
    maximum=64.0,
)

LOADER_WORKERS_PER_GPU = Assumption(
    id="cluster.loader_workers_per_gpu",
    title="Data-loader worker processes per GPU",
    default=2.0,
    unit="cores/GPU",
    source=(
        "Megatron-LM's --num-workers default is 2 data-loader workers per rank "
        "(megatron/training/arguments.py); PyTorch's DataLoader runs each worker as its own process."
    ),
    description="CPU cores a node gives to loading pre-tokenized data, per GPU.",
    minimum=0.0,
    maximum=64.0,
)

TOKENIZE_MB_PER_CORE_S = Assumption(
    id="cluster.tokenize_mb_per_core_s",
    title="Text one CPU core tokenizes per second, MB/s",
    default=5.0,
    unit="MB/s",
    source=(
        "Read off the throughput chart of the tiktoken README (1 GB of text, GPT-2 tokenizer): a few MB/s "
        "per thread for tiktoken, less for Hugging Face tokenizers; the tokenizers README gives 'less than "
        "20 seconds to tokenize a GB of text on a server's CPU' for a whole server. Approximate; range 1-20."
    ),
    description="Cores needed to tokenize raw text on the fly = text MB/s per node / this.",
    minimum=0.01,
    maximum=1000.0,
)

SPOT_DISCOUNT = Assumption(
    id="cluster.spot_discount",
    title="Spot/preemptible discount off the on-demand price",
    default=0.6,
    unit="fraction",
    source=(
        "AWS EC2 Spot Instances: 'up to 90% off' On-Demand; GPU instances see smaller discounts. 0.6 is "
        "this workbench's typical choice; range 0.3-0.9."
    ),
    description="Used with --spot where the accelerator catalog has no spot price (or the scenario gives its own "
    "on-demand price): the run's rented cost is multiplied by (1 - discount).",
    minimum=0.0,
    maximum=0.99,
)

SPOT_PREEMPTIONS = Assumption(
    id="cluster.spot_preemptions_per_node_hour",
    title="Spot preemptions per node-hour",
    default=0.2 / 730.0,
    unit="1/node-h",
    source=(
        "AWS Spot Instance Advisor: the highest 'frequency of interruption' band is >20% of instances "
        "interrupted per month, where GPU instance types often sit; 20% / 730 h = 2.7e-4 per node-hour. "
        "Range 0 to 1e-2."
    ),
    description="Used with --spot: each preemption interrupts the whole synchronous job, as a failure does.",
    minimum=0.0,
    maximum=1.0,
)

ASSUMPTIONS: tuple[Assumption, ...] = (
    FAILURE_RATE,
    RESTART_S,
    NODE_STORAGE_GBPS,
    HOST_COPY_GBPS,
    TEXT_BYTES_PER_TOKEN,
    LOADER_WORKERS_PER_GPU,
    TOKENIZE_MB_PER_CORE_S,
    SPOT_DISCOUNT,
    SPOT_PREEMPTIONS,
)
