"""OLMo 2 and OLMoE: q/k RMSNorms over the full projection width (all heads at once)."""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import Cfg, decoder_base
from workbench.catalog.architectures.registry import reads
from workbench.core.model import MoEConfig


def _olmo_block(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = decoder_base(c, notes)
    bias = c.flag("attention_bias")
    f.update(
        attention_bias=bias,
        attention_out_bias=bias,
        qk_norm=True,
        qk_norm_full_width=True,
        sliding_window=None,
    )
    return f


@reads(
    "olmo2",
    family="olmo",
    reference="Olmo2ForCausalLM",
    defaults={
        "vocab_size": 50304,
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "hidden_act": "silu",
    },
)
def read_olmo2(c: Cfg, notes: list[str]) -> dict[str, Any]:
    # OLMo 2 norms the attention and FFN outputs (post_attention_layernorm,
    # post_feedforward_layernorm) instead of their inputs: still two hidden-size norms per block.
    return _olmo_block(c, notes)


@reads(
    "olmoe",
    family="olmo",
    reference="OlmoeForCausalLM",
    defaults={
        "vocab_size": 50304,
        "hidden_size": 2048,
        "intermediate_size": 2048,
        "num_hidden_layers": 16,
        "num_attention_heads": 16,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "hidden_act": "silu",
        "num_experts": 64,
        "num_experts_per_tok": 8,
    },
)
def read_olmoe(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = _olmo_block(c, notes)
    if c.has("head_dim"):
        # OlmoeAttention sizes q_norm by hidden_size and k_norm by hidden / heads x kv_heads.
        raise c.fail("head_dim", "is not supported: OLMoE's q/k norms assume hidden_size / num_attention_heads")
    # Every block is an MoE block of num_experts experts of intermediate_size; no shared expert.
    f["moe"] = MoEConfig(
        num_experts=c.integer("num_experts"),
        experts_per_token=c.integer("num_experts_per_tok"),
        expert_intermediate_size=f["intermediate_size"],
    )
    return f
