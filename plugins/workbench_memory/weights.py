"""Bytes per stored weight, by part of the model, for the scenario's weight format.

Quantized formats (int8, int4, nf4, fp4 and fp8 storage) apply to the linear layers of the blocks;
embeddings, the LM head and norms stay 16-bit, as transformers' quantizers, GPTQ/AWQ checkpoints
and vLLM's fp8 do (assumption ``memory.quant_keeps_16bit``). int4/nf4/fp4 carry their scale and
zero-point overhead (:func:`workbench.core.dtypes.weight_bits`: 4.156 bits at group size 128).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from workbench.core.dtypes import DType, WeightFormat, weight_bits
from workbench.core.scenario import Scenario

#: Bits of a weight kept unquantized next to quantized ones (bf16/fp16).
UNQUANTIZED_BITS = 16.0


@dataclass(frozen=True, slots=True)
class WeightBytes:
    """Storage cost of one parameter, by where it sits."""

    fmt: WeightFormat
    bits: float  # the format's bits per weight, scale overhead included
    linear: float  # bytes per parameter of a linear layer (blocks, router, pooler, extra towers)
    plain: float  # bytes per embedding / LM head / norm parameter
    adapter: float  # bytes per LoRA adapter parameter (the compute dtype)

    @property
    def quantized(self) -> bool:
        return self.bits < UNQUANTIZED_BITS

    def describe(self) -> str:
        if self.linear == self.plain:
            return f"{self.fmt.value} ({self.bits:g} bits = {self.linear:g} B/param)"
        return (
            f"{self.fmt.value} linear layers ({self.bits:g} bits = {self.linear:g} B/param), "
            f"embeddings/head/norms 16-bit ({self.plain:g} B)"
        )


def weight_bytes(scenario: Scenario, keep_16bit: Callable[[], float]) -> WeightBytes:
    """``keep_16bit()`` reads the ``memory.quant_keeps_16bit`` switch (only for quantized formats)."""
    fmt = scenario.weight_format
    bits = weight_bits(fmt, scenario.quant_group_size)
    linear = bits / 8
    plain = UNQUANTIZED_BITS / 8 if (bits < UNQUANTIZED_BITS and keep_16bit() >= 0.5) else linear
    adapter = 4.0 if scenario.dtype is DType.FP32 else 2.0
    return WeightBytes(fmt, bits, linear, plain, adapter)
