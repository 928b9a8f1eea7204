"""GLM-4.5 / 4.6 / 4.7 (``glm4_moe``): dense first layers, then routed + shared experts."""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import Cfg, decoder_base, moe_from_layers
from workbench.catalog.architectures.registry import reads


@reads(
    "glm4_moe",
    family="glm",
    reference="Glm4MoeForCausalLM",
    defaults={
        "vocab_size": 151552,
        "hidden_size": 4096,
        "intermediate_size": 10944,
        "num_hidden_layers": 46,
        "num_attention_heads": 96,
        "num_key_value_heads": 8,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "hidden_act": "silu",
        "n_routed_experts": 128,
        "n_shared_experts": 1,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 1408,
        "first_k_dense_replace": 1,
        "use_qk_norm": False,
    },
)
def read_glm4_moe(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = decoder_base(c, notes)
    n = f["num_layers"]
    first_dense = c.integer("first_k_dense_replace", minimum=0)
    if c.integer("num_nextn_predict_layers", default=0, minimum=0):
        notes.append(
            "the multi-token-prediction (MTP) layer (num_nextn_predict_layers) is not counted: "
            "transformers does not instantiate it, and inference does not need it"
        )
    # Glm4MoeAttention: q/k/v biases follow attention_bias, o_proj never has one; per-head q/k
    # RMSNorms only with use_qk_norm. The router's e_score_correction_bias is a buffer.
    f.update(
        attention_bias=c.flag("attention_bias"),
        attention_out_bias=False,
        qk_norm=c.flag("use_qk_norm"),
        moe=moe_from_layers(
            c,
            n,
            lambda i: i >= first_dense,
            num_experts=c.integer("n_routed_experts"),
            experts_per_token=c.integer("num_experts_per_tok"),
            expert_intermediate_size=c.integer("moe_intermediate_size"),
            num_shared_experts=c.integer("n_shared_experts", minimum=0),
            router_bias=True,
        ),
    )
    return f
