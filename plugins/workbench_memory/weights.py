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

A llama.cpp GGUF preset (q4_k_m, ...) picks a ggml type per tensor; its rates come from the
tensor-by-tensor sum of :func:`workbench.core.gguf.preset_bytes`: the blocks' matrices and the routed
experts at their average bytes per parameter, ``token_embd`` and ``output`` at their own types, and
1-D tensors (norms, biases) in F32. At one stage the sum is exact; pipeline stages share the
blocks' average (llama-quantize gives the first and last eighth of the blocks more bits).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from workbench.core.dtypes import DType, WeightFormat, weight_bits
from workbench.core.model import ModelArchitecture
from workbench.core.scenario import Scenario

#: Bits of a weight kept unquantized next to quantized ones (bf16/fp16).
UNQUANTIZED_BITS = 16.0
#: Bytes of a GGUF 1-D tensor (norms, biases) and MoE router: llama-quantize leaves them F32.
GGUF_PLAIN_BYTES = 4.0


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
    #: GGUF: bytes per word-embedding / LM-head parameter at the preset's types (0: ``plain``)
    embedding: float = 0.0
    head: float = 0.0

    def ends(self, word_embedding: float, lm_head: float) -> float:
        """Bytes the embedding and head of a stage take beyond ``plain`` per parameter (GGUF)."""
        if not (self.embedding or self.head):
            return 0.0
        return word_embedding * (self.embedding - self.plain) + lm_head * ((self.head or self.embedding) - self.plain)

    @property
    def routed(self) -> float:
        """Bytes per routed-expert parameter."""
        return self.expert or self.linear

    @property
    def quantized(self) -> bool:
        return self.bits < UNQUANTIZED_BITS

    def describe(self) -> str:
        if self.fmt in (WeightFormat.MLX4, WeightFormat.MLX8):
            return f"{self.fmt.value} (MLX: linear layers, embedding and head {self.bits:g} bits = {self.linear:g} B/param, norms 16-bit)"
        if self.fmt.is_gguf:
            text = (
                f"{self.fmt.value} (llama.cpp, tensor by tensor: block matrices {self.linear:.4g} B/param, "
                f"token_embd {self.embedding:.4g} B"
                + (f", output {self.head:.4g} B" if self.head else "")
                + (f", routed experts {self.expert:.4g} B" if self.expert else "")
                + f", 1-D tensors F32 {self.plain:g} B)"
            )
            return text
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
    scenario: Scenario,
    keep_16bit: Callable[[], float],
    expert_format: WeightFormat | None = None,
    model: ModelArchitecture | None = None,
) -> WeightBytes:
    """``keep_16bit()`` reads the ``memory.quant_keeps_16bit`` switch (only for quantized formats);
    ``expert_format`` is the checkpoint's own routed-expert format (``MoEConfig.expert_weight_format``);
    ``model`` is needed for a GGUF preset, whose bytes are the model's own tensor by tensor."""
    fmt, bits = format_bits(scenario)
    if fmt.is_gguf:
        if model is None:
            raise ValueError(f"{fmt.value}: a GGUF preset needs the model to size its tensors")
        return _gguf_bytes(model, fmt, bits)
    if fmt in (WeightFormat.MLX4, WeightFormat.MLX8):
        # mlx.nn.quantize quantizes every Linear and Embedding (the head included); norms stay 16-bit
        # (ml-explore/mlx@29a620cab2a8a9e68d540be27a5bdb05fc62003d:python/mlx/nn/layers/quantized.py).
        rate = bits / 8
        return WeightBytes(fmt, bits, rate, UNQUANTIZED_BITS / 8, 2.0, embedding=rate, head=rate)
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
        fmt = WeightFormat(scenario.weight_format)  # an unvalidated model_copy may hold the string
        found = _FORMATS[key] = (fmt, weight_bits(fmt, scenario.quant_group_size))
    return found


def _gguf_bytes(model: ModelArchitecture, fmt: WeightFormat, bits: float) -> WeightBytes:
    from workbench.core.gguf import preset_bytes  # GGUF scenarios only: its tables load on first use
    pb = preset_bytes(model, fmt.value)
    return WeightBytes(
        fmt,
        bits,
        linear=pb.per_param("linear"),
        plain=GGUF_PLAIN_BYTES,
        adapter=2.0,
        expert=pb.per_param("expert"),
        embedding=pb.per_param("embedding"),
        head=pb.per_param("head"),
    )
