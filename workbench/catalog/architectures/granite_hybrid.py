"""Granite-4.0-H (``granitemoehybrid``): Mamba-2 and attention blocks, each with a shared MLP and,
when the config has experts, a mixture of experts beside it."""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import Cfg, decoder_base
from workbench.catalog.architectures.registry import reads
from workbench.catalog.architectures.ssm import hybrid_layer_types, mamba2_from_keys
from workbench.core.model import LayerMixer, MoEConfig, PositionEmbedding


@reads(
    "granitemoehybrid",
    family="granite",
    reference="GraniteMoeHybridForCausalLM",
    defaults={
        "vocab_size": 32000,
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "hidden_act": "silu",
        "max_position_embeddings": 2048,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "shared_intermediate_size": 1024,
        "position_embedding_type": None,
        "mamba_n_heads": 128,
        "mamba_n_groups": 1,
        "mamba_d_state": 256,
        "mamba_d_head": "auto",
        "mamba_d_conv": 4,
        "mamba_expand": 2,
        "mamba_chunk_size": 256,
        "mamba_conv_bias": True,
        "mamba_proj_bias": False,
    },
)
def read_granitemoehybrid(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = decoder_base(c, notes)
    n, hidden = f["num_layers"], f["hidden_size"]
    mixers = hybrid_layer_types(c, "layer_types" if c.has("layer_types") else "layers_block_type", n,
                                default=["linear_attention"] * n)
    bias = c.flag("attention_bias")
    shared = c.integer("shared_intermediate_size")
    experts = c.integer("num_local_experts", minimum=0)
    # Every block has the shared MLP (input_linear -> 2 x shared, gated; output_linear), no biases;
    # with experts (num_local_experts > 0) the routed experts (of intermediate_size) sit beside it.
    moe = None
    if experts:
        moe = MoEConfig(
            num_experts=experts,
            experts_per_token=c.integer("num_experts_per_tok"),
            expert_intermediate_size=f["intermediate_size"],
            num_shared_experts=1,
            shared_expert_intermediate_size=shared,
        )
    rope = c.text("position_embedding_type") == "rope"
    f.update(
        intermediate_size=shared,
        attention_bias=bias,
        attention_out_bias=bias,
        sliding_window=None,
        position_embedding=PositionEmbedding.ROPE if rope else PositionEmbedding.NONE,
        rope_theta=f["rope_theta"] if rope else None,
        rope_scaling=f["rope_scaling"] if rope else None,
        moe=moe,
        layer_mixers=tuple(mixers),
        recurrent=mamba2_from_keys(c, hidden) if LayerMixer.RECURRENT in mixers else None,
    )
    return f
