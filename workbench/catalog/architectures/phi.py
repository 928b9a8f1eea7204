"""Phi-1/2 (parallel block with LayerNorm), Phi-3 (a Mistral-style block) and Phi-3.5-MoE."""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import Cfg, decoder_base
from workbench.catalog.architectures.llama import read_mistral
from workbench.catalog.architectures.registry import reads
from workbench.core.model import MoEConfig, NormKind


@reads(
    "phi",
    family="phi",
    reference="PhiForCausalLM",
    defaults={
        "vocab_size": 51200,
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 24,
        "num_attention_heads": 32,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": False,
        "hidden_act": "gelu_new",
        "qk_layernorm": False,
    },
)
def read_phi(c: Cfg, notes: list[str]) -> dict[str, Any]:
    if c.flag("qk_layernorm"):
        raise c.fail("qk_layernorm", "is not supported (per-head LayerNorms with biases)")
    f = decoder_base(c, notes)
    f.update(
        norm_kind=NormKind.LAYERNORM,
        norm_bias=True,
        norms_per_layer=1,
        parallel_attention_mlp=True,
        gated_mlp=False,
        attention_bias=True,
        attention_out_bias=True,
        mlp_bias=True,
        lm_head_bias=True,
        # resid_dropout on the attention and on the MLP output (two masks), embed_dropout.
        hidden_dropout=c.probability("resid_pdrop"),
        embedding_dropout=c.probability("embd_pdrop"),
    )
    return f


# Phi-3 is a Mistral-style block with fused qkv / gate-up projections (same parameter count).
reads(
    "phi3",
    family="phi",
    reference="Phi3ForCausalLM",
    defaults={
        "vocab_size": 32064,
        "hidden_size": 3072,
        "intermediate_size": 8192,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": False,
        "hidden_act": "silu",
        "sliding_window": None,
    },
)(read_mistral)


@reads(
    "phimoe",
    family="phi",
    reference="PhimoeForCausalLM",
    defaults={
        "vocab_size": 32064,
        "hidden_size": 4096,
        "intermediate_size": 6400,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "lm_head_bias": False,
        "hidden_act": "silu",
        "sliding_window": None,
        "num_local_experts": 16,
        "num_experts_per_tok": 2,
    },
)
def read_phimoe(c: Cfg, notes: list[str]) -> dict[str, Any]:
    """Phi-3.5-MoE: a Mixtral-style block with biased LayerNorms; attention_bias covers q/k/v/o."""
    f = decoder_base(c, notes)
    bias = c.flag("attention_bias")
    f.update(
        norm_kind=NormKind.LAYERNORM,
        norm_bias=True,
        attention_bias=bias,
        attention_out_bias=bias,
        lm_head_bias=c.flag("lm_head_bias"),
        moe=MoEConfig(
            num_experts=c.integer("num_local_experts"),
            experts_per_token=c.integer("num_experts_per_tok"),
            expert_intermediate_size=f["intermediate_size"],
        ),
    )
    return f
