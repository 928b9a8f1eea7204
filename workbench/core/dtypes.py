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

    @property
    def bytes(self) -> float:
        """Bytes one element occupies in memory (tf32 is stored as fp32)."""
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
}

#: Dtypes an activation / KV cache / compute precision may take (narrower ones are storage only).
ACTIVATION_DTYPES = (DType.FP32, DType.BF16, DType.FP16, DType.FP8)


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

    @property
    def is_quantized(self) -> bool:
        return self in (WeightFormat.INT8, WeightFormat.INT4, WeightFormat.NF4, WeightFormat.FP4)

    @property
    def compute_dtype(self) -> DType:
        """The dtype whose Tensor Core rate a matmul with these weights can use natively."""
        return _NATIVE_COMPUTE[self]


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
}


def weight_bits(fmt: WeightFormat, group_size: int = 128) -> float:
    """Average storage bits per weight, including quantization scales and zero points.

    * int8 (LLM.int8 / per-channel): 8 bits; per-output-row scales are negligible (< 0.01%).
    * int4 (GPTQ/AWQ style): 4 bits + one fp16 scale and one packed 4-bit zero point per group
      of ``group_size`` weights -> 4 + (16 + 4) / g bits (4.156 at g=128).
    * nf4 (QLoRA, Dettmers et al. 2023, section 3): 4 bits + double-quantized absmax constants:
      8 bits per 64-weight block plus one fp32 per 256 blocks -> 4 + 8/64 + 32/(64*256) = 4.127.
    * fp4 (OCP MXFP4): 4 bits + one 8-bit shared exponent per 32-weight block -> 4.25 bits.
    """
    if group_size <= 0:
        raise ValueError("group_size must be positive")
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
