"""The memory plugin's tunable defaults, each with where its value comes from.

Ids start with ``memory.`` so they never collide with another plugin's. A switch is 1 (on) or
0 (off); setting an overhead to 0 turns it off. Users override any of them per scenario
(``Scenario.assumptions``) and see them in ``--explain`` and the report appendix.
"""

from __future__ import annotations

from workbench.engine.assumptions import Assumption

QUANT_KEEPS_16BIT = Assumption(
    id="memory.quant_keeps_16bit",
    title="Quantized weights keep embeddings, LM head and norms in 16-bit",
    default=1.0,
    unit="switch",
    source=(
        "transformers' quantizers replace only nn.Linear layers and keep the output head and tied "
        "weights unconverted (transformers/quantizers/base.py, get_keys_to_not_convert), so embeddings, "
        "norms and the LM head stay 16-bit under bitsandbytes int8/nf4; GPTQ/AWQ checkpoints quantize only "
        "the blocks' linear layers; vLLM fp8 keeps embeddings and lm_head unquantized"
    ),
    description="1: only the transformer blocks' linear layers use the quantized format; embeddings, "
    "LM head and norms are 16-bit. 0: every parameter uses the quantized format.",
    minimum=0,
    maximum=1,
)

KV_MLA_DECOMPRESSED = Assumption(
    id="memory.kv_mla_decompressed",
    title="MLA caches decompressed K/V instead of the latent",
    default=0.0,
    unit="switch",
    source=(
        "vLLM and SGLang MLA backends (FlashMLA) cache the compressed latent, kv_lora_rank + "
        "qk_rope_head_dim per token and layer (DeepSeek-V2 paper, Sec. 2.1); transformers >= 5 does too "
        "(huggingface/transformers PR #47761); earlier transformers DeepseekV3Attention cached the "
        "expanded per-head K (qk_nope + qk_rope) "
        "and V (v_head_dim)"
    ),
    description="0: the latent (serving engines, transformers 5). 1: per-head K and V as expanded by "
    "kv_b_proj (older transformers, engines without an MLA kernel).",
    minimum=0,
    maximum=1,
)

CUDA_CONTEXT_GIB = Assumption(
    id="memory.cuda_context_gib",
    title="CUDA context and kernel images per process",
    default=0.5,
    unit="GiB",
    source=(
        "pytorch/pytorch PR #86509: a PyTorch process's CUDA context measured 287 MB with lazy module "
        "loading and 667 MB without; pytorch/pytorch issue #34323: 781 MB at start-up; CUDA 12.2+ loads "
        "lazily by default (CUDA C Programming Guide, Lazy Loading). cuBLAS workspaces come on top"
    ),
    description="Device memory a process holds before any tensor: driver context, loaded kernels.",
    minimum=0,
    maximum=64,
)

NCCL_GIB_PER_GROUP = Assumption(
    id="memory.nccl_gib_per_group",
    title="NCCL buffers per communication group",
    default=0.5,
    unit="GiB",
    source=(
        "NVIDIA/nccl issue #964: 544 MB per 2-GPU and 688 MB per 4-GPU process group measured on A100 "
        "NVLink; "
        "NVIDIA/nccl issue #864/#986: memory grows with each communicator and with the channel count "
        "(NCCL_BUFFSIZE, 4 MiB per channel and peer by default)"
    ),
    description="Counted once per parallel group a rank belongs to (TP, PP, EP, and DP when training), "
    "only when the job spans more than one GPU.",
    minimum=0,
    maximum=64,
)

FRAGMENTATION = Assumption(
    id="memory.fragmentation",
    title="Caching-allocator fragmentation",
    default=0.15,
    unit="fraction of activations",
    source=(
        "Guo et al., 'GMLake: Efficient and Transparent GPU Memory Defragmentation for Large-scale DNN "
        "Training with Virtual Memory Stitching', ASPLOS 2024: PyTorch's caching allocator wastes 15% on "
        "average (up to 33%) across eight LLMs on A100-80GB, worst with recomputation, offload and LoRA"
    ),
    description="Memory reserved but unusable because freed blocks do not fit new requests; charged on the "
    "memory that is allocated and freed every step (activations).",
    minimum=0,
    maximum=1,
)

ZERO3_LIVE_LAYERS = Assumption(
    id="memory.zero3_live_layers",
    title="Layers gathered at once under ZeRO-3 / FSDP",
    default=2.0,
    unit="layers",
    source=(
        "PyTorch FSDP BackwardPrefetch.BACKWARD_PRE and forward_prefetch: the current and the next unit's "
        "parameters are all-gathered at the same time (torch.distributed.fsdp docs); DeepSpeed ZeRO-3 "
        "prefetches the next sub-modules likewise (stage3_prefetch_bucket_size)"
    ),
    description="Full (unsharded) transformer blocks materialized per rank during forward and backward; "
    "0 reproduces the ZeRO paper's model-state figures, which leave them out.",
    minimum=0,
    maximum=1024,
)

ADAFACTOR_MOMENTUM_BYTES = Assumption(
    id="memory.adafactor_momentum_bytes",
    title="Adafactor first-moment bytes per parameter",
    default=0.0,
    unit="B/param",
    source=(
        "Shazeer & Stern 2018, 'Adafactor: Adaptive Learning Rates with Sublinear Memory Cost', Sec. 3-4: "
        "factored second moment (row + column statistics per matrix) and no first moment (beta1 = 0); "
        "transformers.optimization.Adafactor defaults to beta1=None. Set 4 for an fp32 momentum, 2 for bf16"
    ),
    description="Adafactor keeps row and column statistics (rows + cols fp32 values per matrix, full fp32 "
    "for vectors); this adds a first moment when beta1 is used.",
    minimum=0,
    maximum=8,
)

UNIFIED_GPU_SHARE = Assumption(
    id="memory.unified_gpu_share",
    title="Share of an Apple chip's unified memory the GPU may wire",
    default=0.0,
    unit="fraction (0: macOS default)",
    source=(
        "macOS caps the GPU's working set at Metal's recommendedMaxWorkingSetSize, which llama.cpp prints at "
        "start: 10922.67 MB on a 16 GB Mac (abetlen/llama-cpp-python issue 687) and 21845.34 MB on a 32 GB Mac "
        "(ollama/ollama issue 434), two thirds of the RAM; 49152 MiB on a 64 GB Mac (ggml-org/llama.cpp issue "
        "1870), three quarters. The rest stays with macOS and the other processes; sysctl iogpu.wired_limit_mb "
        "raises the cap"
    ),
    description="0 applies macOS's default: 2/3 of the RAM up to 36 GB, 3/4 above (the 36 GB boundary lies "
    "between the observed 32 GB and 64 GB machines). A fraction replaces it (e.g. after raising "
    "iogpu.wired_limit_mb). Apple chips only: other unified-memory chips keep their whole memory.",
    minimum=0,
    maximum=1,
)

ALL = (
    QUANT_KEEPS_16BIT,
    KV_MLA_DECOMPRESSED,
    CUDA_CONTEXT_GIB,
    NCCL_GIB_PER_GROUP,
    FRAGMENTATION,
    ZERO3_LIVE_LAYERS,
    ADAFACTOR_MOMENTUM_BYTES,
    UNIFIED_GPU_SHARE,
)


def unified_gpu_share(memory_gib: float, setting: float) -> float:
    """The share of an Apple chip's unified memory its GPU may use (:data:`UNIFIED_GPU_SHARE`)."""
    if setting > 0:
        return setting
    return 2.0 / 3.0 if memory_gib <= 36 else 0.75
