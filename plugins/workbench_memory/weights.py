"""Bytes per stored weight, by part of the model, for the scenario's weight format.

Quantized formats (int8, int4, nf4, fp4 and fp8 storage) apply to the linear layers of the blocks;
embeddings, the LM head and norms stay 16-bit, as transformers' quantizers, GPTQ/AWQ checkpoints
and vLLM's fp8 do (assumption ``memory.quant_keeps_16bit``). int4/nf4/fp4 carry their scale and
zero-point overhead (:func:`workbench.core.dtypes.weight_bits`: 4.156 bits at group size 128).

A checkpoint may store its routed experts in a format of their own (gpt-oss: MXFP4 experts, bf16
everywhere else; ``MoEConfig.expert_weight_format``). An inference scenario that names no weight
format serves the checkpoint as published, so its routed experts take that format; one that names
a format (``--weights bf16``) and training (which updates dequantized weights) get the scenario's.
The expert biases of such a checkpoint stay bf16 but are costed at the expert rate here (gpt-oss-20b:
0.07% of the checkpoint).
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
    expert: float = 0.0  # bytes per routed-expert parameter (0: same as ``linear``)
    expert_fmt: WeightFormat | None = None  # the checkpoint's own expert format, when it applies

    @property
    def routed(self) -> float:
        """Bytes per routed-expert parameter."""
        return self.expert or self.linear

    @property
    def quantized(self) -> bool:
        return self.bits < UNQUANTIZED_BITS

    def describe(self) -> str:
        if self.linear == self.plain:
            text = f"{self.fmt.value} ({self.bits:g} bits = {self.linear:g} B/param)"
        else:
            text = (
                f"{self.fmt.value} linear layers ({self.bits:g} bits = {self.linear:g} B/param), "
                f"embeddings/head/norms 16-bit ({self.plain:g} B)"
            )
        if self.expert_fmt is not None:
            text += f"; routed experts as the checkpoint stores them, {self.expert_fmt.value} ({self.expert:g} B/param)"
        return text


def weight_bytes(
    scenario: Scenario, keep_16bit: Callable[[], float], expert_format: WeightFormat | None = None
) -> WeightBytes:
    """``keep_16bit()`` reads the ``memory.quant_keeps_16bit`` switch (only for quantized formats);
    ``expert_format`` is the checkpoint's own routed-expert format (``MoEConfig.expert_weight_format``)."""
    fmt, bits = format_bits(scenario)
    keep = bits < UNQUANTIZED_BITS and keep_16bit() >= 0.5  # the switch is read only when it matters
    own_experts = scenario.expert_format(expert_format)
    key = (fmt, bits, keep, scenario.dtype is DType.FP32, own_experts)
    found = _BYTES.get(key)
    if found is None:
        linear = bits / 8
        plain = UNQUANTIZED_BITS / 8 if keep else linear
        adapter = 4.0 if key[3] else 2.0
        expert = weight_bits(own_experts) / 8 if own_experts is not None else 0.0
        found = _BYTES[key] = WeightBytes(fmt, bits, linear, plain, adapter, expert, own_experts)
    return found


# Both caches are keyed by a handful of enum values and the int4 group size: tiny, and they spare
# every estimate the enum lookups behind ``Scenario.weight_format`` and ``weight_bits``.
_FORMATS: dict[tuple[object, ...], tuple[WeightFormat, float]] = {}
_BYTES: dict[tuple[object, ...], WeightBytes] = {}


def format_bits(scenario: Scenario) -> tuple[WeightFormat, float]:
    """(``scenario.weight_format``, its bits per weight with scales), cached by what decides them."""
    key = (scenario.weights, scenario.method, scenario.dtype, scenario.quant_group_size)
    found = _FORMATS.get(key)
    if found is None:
        if len(_FORMATS) > 1024:
            _FORMATS.clear()
        fmt = scenario.weight_format
        found = _FORMATS[key] = (fmt, weight_bits(fmt, scenario.quant_group_size))
    return found
