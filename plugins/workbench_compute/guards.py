"""Guard-rails on compute: dtypes the GPU cannot multiply natively, Tensor-Core-unfriendly shapes, MoE.

Alignment follows NVIDIA's "Matrix Multiplication Background User's Guide" (section "Tensor Core
Requirements", https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/):
Tensor Cores are used most efficiently when the GEMM dimensions are multiples of 16 bytes (8
elements for FP16/BF16, 16 for INT8/FP8, 4 for TF32); larger multiples (64 or 128 elements) tile
better still. The companion "Linear/Fully-Connected Layers User's Guide" shows the output layer's
vocabulary padded to such a multiple; nanoGPT pads GPT-2's 50,257 to 50,304 (64 x 786) for the
same reason. A misaligned dimension is flagged once per (TP degree, compute dtype), whole-model
and per tensor-parallel shard.
"""

from __future__ import annotations

from workbench.core.dtypes import DType
from workbench.core.hardware import Accelerator
from workbench.engine.quantity import Warning
from workbench_compute.shapes import ModelShape

_ALIGN_BYTES = 16
_VOCAB_PAD = 64


def alignment_multiple(dtype: DType) -> int:
    """Elements in 16 bytes of ``dtype``: the Tensor Core alignment of a GEMM dimension."""
    return max(1, int(_ALIGN_BYTES / dtype.bytes))


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def misaligned_dims(
    shape: ModelShape, heads: int, kv_heads: int, head_dim: int, tp: int, multiple: int
) -> list[str]:
    """Named dimensions (whole model and per-TP shard) that are not multiples of ``multiple``."""
    bad = [f"{name} {value}" for name, value in shape.dims.items() if value % multiple]
    if tp > 1:
        dims = shape.dims
        shards = (
            ("vocab_size", dims.get("vocab_size", 0) / tp),
            ("intermediate_size", dims.get("intermediate_size", 0) / tp),
            ("expert_intermediate_size", dims.get("expert_intermediate_size", 0) / tp),
            ("query heads x head_dim", heads * head_dim / tp),
            ("kv heads x head_dim", max(kv_heads / tp, 1) * head_dim),
        )
        for name, shard in shards:
            if shard and (shard != int(shard) or int(shard) % multiple):
                bad.append(f"{name} per TP shard {shard:g}")
    return bad


def alignment_warning(
    shape: ModelShape, heads: int, kv_heads: int, head_dim: int, tp: int, dtype: DType
) -> Warning | None:
    multiple = alignment_multiple(dtype)
    bad = misaligned_dims(shape, heads, kv_heads, head_dim, tp, multiple)
    if not bad:
        return None
    fix = (
        f"pad the misaligned sizes to multiples of {multiple} (better: 64 elements); "
        "frameworks pad the vocabulary for you: Megatron-LM --make-vocab-size-divisible-by, "
        "HF resize_token_embeddings(pad_to_multiple_of=...)"
    )
    vocab = shape.dims.get("vocab_size", 0)
    if vocab and (vocab % multiple or (tp > 1 and (vocab // tp) % multiple)):
        padded = _round_up(vocab, _VOCAB_PAD * tp)
        fix = f"pad the vocabulary from {vocab:,} to {padded:,} (a multiple of {_VOCAB_PAD * tp}); " + fix
    return Warning(
        "tensor-core-alignment",
        f"{', '.join(bad)}: not a multiple of {multiple} ({dtype.value}). Tensor Core GEMMs run "
        f"fastest when every dimension is a multiple of 16 bytes ({multiple} {dtype.value} elements; "
        "NVIDIA Matrix Multiplication Background guide); these matmuls will run below the rates "
        "estimated here.",
        "warning",
        fix,
    )


def dtype_warning(wanted: DType, used: DType, rate: float, gpu: Accelerator) -> Warning | None:
    """``wanted`` has no rate on ``gpu``, so its matmuls run at ``used``'s ``rate``."""
    if wanted is used:
        return None
    how = "emulated / upcast" if wanted is DType.FP8 else f"without native {wanted.value} support"
    width = "16-bit " if used in (DType.BF16, DType.FP16) else ""
    suggest, suggest_rate = used, rate
    other = {DType.BF16: DType.FP16, DType.FP16: DType.BF16}.get(wanted)
    if other is not None and other in gpu.dense_tflops:  # V100, Apple M-series: fp16 but no bf16
        suggest, suggest_rate = other, gpu.dense_tflops[other]
    newer = " (Hopper, Ada, Blackwell, MI300)" if wanted is DType.FP8 else ""
    return Warning(
        "dtype-not-native",
        f"{gpu.name} has no native {wanted.value} matmul rate: {wanted.value} work will run {how} at the "
        f"{width}{used.value} rate ({rate:g} TFLOPS dense), and the compute estimates use that rate.",
        "warning",
        f"compute in {suggest.value} ({suggest_rate:g} TFLOPS dense on this GPU), or pick a GPU with native "
        f"{wanted.value}{newer}",
    )


def moe_warning(active: int, total: int, top_k: int, experts: int) -> Warning:
    return Warning(
        "moe-active-compute",
        f"Mixture of experts: each token runs {top_k} of {experts} experts, so compute follows the "
        f"{active / 1e9:.2f}B active parameters while memory holds all {total / 1e9:.2f}B.",
        "info",
        "",
    )
