"""Llama-style decoders: Llama, Granite, Mistral/Ministral, Mixtral, Llama 4 text."""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import Cfg, decoder_base, moe_from_layers
from workbench.catalog.architectures.registry import reads
from workbench.core.model import MoEConfig


@reads(
    "llama",
    family="llama",
    reference="LlamaForCausalLM",
    defaults={
        "vocab_size": 32000,
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "mlp_bias": False,
        "hidden_act": "silu",
    },
)
@reads(
    "granite",
    family="granite",
    reference="GraniteForCausalLM",
    defaults={
        "vocab_size": 32000,
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "max_position_embeddings": 2048,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "mlp_bias": False,
        "hidden_act": "silu",
    },
)
def read_llama(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = decoder_base(c, notes)
    bias = c.flag("attention_bias")
    f.update(attention_bias=bias, attention_out_bias=bias, mlp_bias=c.flag("mlp_bias"))
    return f


@reads(
    "mistral",
    family="mistral",
    reference="MistralForCausalLM",
    defaults={
        "vocab_size": 32000,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": False,
        "hidden_act": "silu",
        "sliding_window": 4096,
    },
)
@reads(
    "ministral",
    family="mistral",
    reference="MinistralForCausalLM",
    defaults={
        "vocab_size": 32000,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": False,
        "hidden_act": "silu",
        "sliding_window": 4096,
    },
)
def read_mistral(c: Cfg, notes: list[str]) -> dict[str, Any]:
    return decoder_base(c, notes)


@reads(
    "mixtral",
    family="mistral",
    reference="MixtralForCausalLM",
    defaults={
        "vocab_size": 32000,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": False,
        "hidden_act": "silu",
        "sliding_window": None,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
    },
)
def read_mixtral(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = decoder_base(c, notes)
    f["moe"] = MoEConfig(
        num_experts=c.integer("num_local_experts"),
        experts_per_token=c.integer("num_experts_per_tok"),
        expert_intermediate_size=f["intermediate_size"],
    )
    return f


@reads(
    "llama4_text",
    family="llama",
    reference="Llama4ForCausalLM",
    defaults={
        "vocab_size": 202048,
        "hidden_size": 5120,
        "intermediate_size": 8192,
        "intermediate_size_mlp": 16384,
        "num_hidden_layers": 48,
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "hidden_act": "silu",
        "num_local_experts": 16,
        "num_experts_per_tok": 1,
        "interleave_moe_layer_step": 1,
    },
)
def read_llama4_text(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = read_llama(c, notes)
    n = f["num_layers"]
    if c.has("moe_layers"):
        moe_layers = set(c.integers("moe_layers"))
    else:
        step = c.integer("interleave_moe_layer_step")
        moe_layers = set(range(step - 1, n, step))
    expert = c.integer("intermediate_size")
    f.update(
        intermediate_size=c.integer("intermediate_size_mlp"),
        mlp_bias=False,
        sliding_window=None,
        moe=moe_from_layers(
            c,
            n,
            lambda i: i in moe_layers,
            num_experts=c.integer("num_local_experts"),
            experts_per_token=c.integer("num_experts_per_tok"),
            expert_intermediate_size=expert,
            num_shared_experts=1,
        ),
    )
    if c.has("attention_chunk_size"):
        notes.append("chunked local attention (attention_chunk_size) is modelled as full attention")
    return f
