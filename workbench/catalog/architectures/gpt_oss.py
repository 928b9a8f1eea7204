"""gpt-oss: alternating sliding/full attention with sinks and biases, MoE with biased experts, MXFP4."""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import Cfg, decoder_base, read_window
from workbench.catalog.architectures.registry import reads
from workbench.core.dtypes import WeightFormat
from workbench.core.model import MoEConfig


def _sliding(c: Cfg, n: int) -> list[int]:
    """Sliding layers from ``layer_types``; absent, GptOssConfig alternates from layer 0."""
    if c.has("layer_types"):
        types = c.data["layer_types"]
        if not isinstance(types, list) or len(types) != n:
            raise c.fail("layer_types", f"must list one type per layer ({n})")
        unknown = sorted({t for t in types if t not in ("sliding_attention", "full_attention")})
        if unknown:
            raise c.fail("layer_types", f"holds layer types gpt-oss does not build: {unknown}")
        return [i for i, t in enumerate(types) if t == "sliding_attention"]
    return [i for i in range(n) if (i + 1) % 2]


def _mxfp4_experts(c: Cfg, notes: list[str]) -> WeightFormat | None:
    quant = c.mapping("quantization_config") or {}
    if quant.get("quant_method") != "mxfp4":
        return None
    kept = quant.get("modules_to_not_convert") or []
    if any("experts" in str(m) for m in kept):
        return None
    notes.append(
        "quantization_config mxfp4: the routed experts are stored in MXFP4 (4-bit E2M1 + one 8-bit "
        "scale per 32 weights = 4.25 bits), the rest in bf16; estimates that keep the checkpoint's "
        "weights use that"
    )
    return WeightFormat.FP4


@reads(
    "gpt_oss",
    family="gpt-oss",
    reference="GptOssForCausalLM",
    defaults={
        "vocab_size": 201088,
        "hidden_size": 2880,
        "intermediate_size": 2880,
        "num_hidden_layers": 36,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": False,
        "attention_bias": True,
        "hidden_act": "silu",
        "sliding_window": 128,
        "num_local_experts": 128,
        "num_experts_per_tok": 4,
    },
)
def read_gpt_oss(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = decoder_base(c, notes)
    n = f["num_layers"]
    bias = c.flag("attention_bias")
    expert_format = _mxfp4_experts(c, notes)
    f.update(
        attention_bias=bias,
        attention_out_bias=bias,
        attention_sinks=True,
        # Every block is an MoE block; its experts (gate_up_proj_bias, down_proj_bias) and its
        # router carry biases: mlp_bias on an MoE model means exactly that.
        mlp_bias=True,
        sliding_window=read_window(c, n, _sliding(c, n)),
        moe=MoEConfig(
            num_experts=c.integer("num_local_experts"),
            experts_per_token=c.integer("num_experts_per_tok"),
            expert_intermediate_size=f["intermediate_size"],
            expert_weight_format=expert_format,
        ),
    )
    return f
