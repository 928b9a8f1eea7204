"""Numeric formats: compute dtypes and weight storage (quantization) formats.

Two ideas are kept apart on purpose:

* a **compute dtype** is what a Tensor Core multiplies in (bf16, fp8, ...); the accelerator
  catalog gives a peak TFLOPS figure per compute dtype;
* a **weight format** is how a weight tensor is stored, which may carry per-group scales and
  zero points on top of the packed values (int4 with groups of 128, nf4 with double
  quantization, ...). Its cost is given as *bits per parameter*, overhead included.
"""

from __future__ import annotations

from enum import Enum


class DType(str, Enum):
    """A compute or storage dtype. Values are the ids used in files and on the command line."""

    FP64 = "fp64"
    FP32 = "fp32"
    TF32 = "tf32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    FP6 = "fp6"
    FP4 = "fp4"
    INT4 = "int4"
    # llama.cpp's quantized KV-cache types (--cache-type-k/-v): blocks of 32 values with one fp16
    # scale; bytes per value from ggml's block sizes (resources/formats/gguf.yaml).
    Q8_0 = "q8_0"
    Q4_0 = "q4_0"

    @property
    def bytes(self) -> float:
        """Bytes one element occupies in memory (tf32 is stored as fp32; q8_0/q4_0 with their
        per-block scale: 34 and 18 bytes per 32 values)."""
        return _DTYPE_BYTES[self]


_DTYPE_BYTES: dict[DType, float] = {
    DType.FP64: 8.0,
    DType.FP32: 4.0,
    DType.TF32: 4.0,
    DType.BF16: 2.0,
    DType.FP16: 2.0,
    DType.FP8: 1.0,
    DType.INT8: 1.0,
    DType.FP6: 0.75,
    DType.FP4: 0.5,
    DType.INT4: 0.5,
    DType.Q8_0: 34 / 32,
    DType.Q4_0: 18 / 32,
}

#: Dtypes an activation / KV cache / compute precision may take (narrower ones are storage only).
ACTIVATION_DTYPES = (DType.FP32, DType.BF16, DType.FP16, DType.FP8)
#: Dtypes a KV cache may take: the activation ones and llama.cpp's block-quantized cache types.
KV_CACHE_DTYPES = (*ACTIVATION_DTYPES, DType.Q8_0, DType.Q4_0)


class WeightFormat(str, Enum):
    """How weights are stored. Quantized formats carry scale overhead, see :func:`weight_bits`."""

    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    INT4 = "int4"
    NF4 = "nf4"
    FP4 = "fp4"
    # MLX affine quantization (mlx-lm's default: groups of 64, an fp16 scale and bias per group).
    MLX4 = "mlx4"
    MLX8 = "mlx8"
    # llama.cpp GGUF presets (llama-quantize file types): a ggml type per tensor, see
    # workbench.core.gguf and resources/formats/gguf.yaml.
    Q8_0 = "q8_0"
    Q6_K = "q6_k"
    Q5_K_M = "q5_k_m"
    Q5_K_S = "q5_k_s"
    Q5_1 = "q5_1"
    Q5_0 = "q5_0"
    Q4_K_M = "q4_k_m"
    Q4_K_S = "q4_k_s"
    Q4_1 = "q4_1"
    Q4_0 = "q4_0"
    IQ4_XS = "iq4_xs"
    IQ4_NL = "iq4_nl"
    Q3_K_L = "q3_k_l"
    Q3_K_M = "q3_k_m"
    Q3_K_S = "q3_k_s"
    IQ3_XXS = "iq3_xxs"
    Q2_K = "q2_k"
    IQ2_XS = "iq2_xs"
    IQ2_XXS = "iq2_xxs"

    @property
    def is_quantized(self) -> bool:
        return self not in (WeightFormat.FP32, WeightFormat.BF16, WeightFormat.FP16, WeightFormat.FP8)

    @property
    def is_gguf(self) -> bool:
        """A llama.cpp preset: its bytes depend on the model, tensor by tensor."""
        return self not in _NATIVE_COMPUTE

    @property
    def compute_dtype(self) -> DType:
        """The dtype whose Tensor Core rate a matmul with these weights can use natively.
        GGUF presets are costed at the 16-bit rate (llama.cpp's CUDA kernels dequantize or use
        int8 dot products; the 16-bit rate is the one every GPU in the catalog lists)."""
        return _NATIVE_COMPUTE.get(self, DType.FP16)


_NATIVE_COMPUTE: dict[WeightFormat, DType] = {
    WeightFormat.FP32: DType.FP32,
    WeightFormat.BF16: DType.BF16,
    WeightFormat.FP16: DType.FP16,
    WeightFormat.FP8: DType.FP8,
    WeightFormat.INT8: DType.INT8,
    # int4 / nf4 weights are dequantized to 16-bit before the matmul in common kernels
    # (bitsandbytes, GPTQ/AWQ Marlin), so they compute at the 16-bit rate.
    WeightFormat.INT4: DType.FP16,
    WeightFormat.NF4: DType.BF16,
    WeightFormat.FP4: DType.FP4,
    # MLX's quantized matmuls dequantize to the activation dtype.
    WeightFormat.MLX4: DType.FP16,
    WeightFormat.MLX8: DType.FP16,
}


def weight_bits(fmt: WeightFormat, group_size: int = 128) -> float:
    """Average storage bits per weight, including quantization scales and zero points.

    * int8 (LLM.int8 / per-channel): 8 bits; per-output-row scales are negligible (< 0.01%).
    * int4 (GPTQ/AWQ style): 4 bits + one fp16 scale and one packed 4-bit zero point per group
      of ``group_size`` weights -> 4 + (16 + 4) / g bits (4.156 at g=128).
    * nf4 (QLoRA, Dettmers et al. 2023, section 3): 4 bits + double-quantized absmax constants:
      8 bits per 64-weight block plus one fp32 per 256 blocks -> 4 + 8/64 + 32/(64*256) = 4.127.
    * fp4 (OCP MXFP4): 4 bits + one 8-bit shared exponent per 32-weight block -> 4.25 bits.
    * mlx4 / mlx8 (``mlx.nn.quantize``, affine mode, default group of 64): 4 or 8 bits + a 16-bit
      scale and a 16-bit bias per 64 weights -> 4.5 / 8.5 bits; embeddings and the head are
      quantized too (ml-explore/mlx@29a620cab2a8a9e68d540be27a5bdb05fc62003d:
      python/mlx/nn/layers/quantized.py).
    * GGUF presets: the bits of the preset's main ggml type (q4_k_m: Q4_K, 144 bytes per 256
      weights = 4.5). What a model really stores under a preset differs per tensor; the
      estimators take it from :func:`workbench.core.gguf.preset_bytes`.

    int4 is the GPTQ / AWQ storage (4-bit weights, fp16 scales and packed 4-bit zero points per
    group, 4.156 bits at the usual group of 128).
    """
    if group_size <= 0:
        raise ValueError("group_size must be positive")
    fmt = WeightFormat(fmt)
    if fmt in (WeightFormat.MLX4, WeightFormat.MLX8):
        return (4.0 if fmt is WeightFormat.MLX4 else 8.0) + 32.0 / 64
    if fmt.is_gguf:
        from workbench.core.gguf import preset_bits  # the tables load lazily, from resources

        return preset_bits(fmt.value)
    if fmt is WeightFormat.INT4:
        return 4.0 + (16.0 + 4.0) / group_size
    if fmt is WeightFormat.NF4:
        return 4.0 + 8.0 / 64 + 32.0 / (64 * 256)
    if fmt is WeightFormat.FP4:
        return 4.0 + 8.0 / 32
    return {
        WeightFormat.FP32: 32.0,
        WeightFormat.BF16: 16.0,
        WeightFormat.FP16: 16.0,
        WeightFormat.FP8: 8.0,
        WeightFormat.INT8: 8.0,
    }[fmt]
