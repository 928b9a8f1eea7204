"""Jamba (AI21): Mamba-1 and attention blocks (one attention block in ``attn_layer_period``),
each with a gated MLP or, every ``expert_layer_period`` blocks, a mixture of experts."""

from __future__ import annotations

import math
from typing import Any

from workbench.catalog.architectures.config import Cfg, decoder_base, moe_from_layers
from workbench.catalog.architectures.registry import reads
from workbench.catalog.architectures.ssm import mamba1_mixer
from workbench.core.model import LayerMixer, PositionEmbedding


@reads(
    "jamba",
    family="jamba",
    reference="JambaForCausalLM",
    defaults={
        "vocab_size": 65536,
        "tie_word_embeddings": False,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "hidden_act": "silu",
        "max_position_embeddings": 262144,
        "num_experts_per_tok": 2,
        "num_experts": 16,
        "expert_layer_period": 2,
        "expert_layer_offset": 1,
        "attn_layer_period": 8,
        "attn_layer_offset": 4,
        "mamba_d_state": 16,
        "mamba_d_conv": 4,
        "mamba_expand": 2,
        "mamba_dt_rank": "auto",
        "mamba_conv_bias": True,
        "mamba_proj_bias": False,
    },
)
def read_jamba(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = decoder_base(c, notes)
    n, hidden = f["num_layers"], f["hidden_size"]
    attn_period = c.integer("attn_layer_period")
    attn_offset = c.integer("attn_layer_offset", minimum=0)
    expert_period = c.integer("expert_layer_period")
    expert_offset = c.integer("expert_layer_offset", minimum=0)
    experts = c.integer("num_experts", "num_local_experts")
    _, rank = c.raw("mamba_dt_rank")
    dt_rank = math.ceil(hidden / 16) if rank == "auto" else c.integer("mamba_dt_rank")
    mixers = tuple(
        LayerMixer.ATTENTION if i % attn_period == attn_offset else LayerMixer.RECURRENT for i in range(n)
    )
    f.update(
        # Jamba's attention carries no position encoding (the Mamba layers carry order) and no biases.
        position_embedding=PositionEmbedding.NONE,
        rope_theta=None,
        rope_scaling=None,
        sliding_window=None,
        layer_mixers=mixers,
        recurrent=mamba1_mixer(
            hidden,
            inner=c.integer("mamba_expand") * hidden,
            state_size=c.integer("mamba_d_state"),
            dt_rank=dt_rank,
            conv_kernel=c.integer("mamba_d_conv"),
            proj_bias=c.flag("mamba_proj_bias"),
            conv_bias=c.flag("mamba_conv_bias"),
            dt_norms=True,
        )
        if LayerMixer.RECURRENT in mixers
        else None,
        moe=moe_from_layers(
            c,
            n,
            lambda i: experts > 1 and i % expert_period == expert_offset,
            num_experts=experts,
            experts_per_token=min(c.integer("num_experts_per_tok"), experts),
            expert_intermediate_size=f["intermediate_size"],
        ),
    )
    return f
