"""DeepSeek-V3: multi-head latent attention and fine-grained experts."""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import Cfg, decoder_base, moe_from_layers
from workbench.catalog.architectures.registry import reads
from workbench.core.model import MLAConfig


@reads(
    "deepseek_v3",
    family="deepseek",
    reference="DeepseekV3ForCausalLM",
    defaults={
        "vocab_size": 129280,
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "num_hidden_layers": 61,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "hidden_act": "silu",
        "n_routed_experts": 256,
        "n_shared_experts": 1,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 2048,
        "first_k_dense_replace": 3,
        "q_lora_rank": 1536,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
    },
)
def read_deepseek_v3(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = decoder_base(c, notes)
    n = f["num_layers"]
    mla = MLAConfig(
        q_lora_rank=c.opt_integer("q_lora_rank"),
        kv_lora_rank=c.integer("kv_lora_rank"),
        qk_rope_head_dim=c.integer("qk_rope_head_dim"),
        qk_nope_head_dim=c.integer("qk_nope_head_dim"),
        v_head_dim=c.integer("v_head_dim"),
    )
    bias = c.flag("attention_bias")
    first_dense = c.integer("first_k_dense_replace", minimum=0)
    if c.integer("moe_layer_freq", default=1) != 1:
        notes.append(
            "moe_layer_freq != 1 is ignored, as transformers' DeepseekV3 does: every layer from "
            "first_k_dense_replace on is an MoE layer"
        )
    if c.integer("num_nextn_predict_layers", default=0, minimum=0):
        notes.append(
            "the multi-token-prediction (MTP) module (num_nextn_predict_layers) is not counted: "
            "transformers does not instantiate it, and inference does not need it"
        )
    shared = c.integer("n_shared_experts", default=0, minimum=0)
    f.update(
        # head_dim: the query/key width per head (no-RoPE + RoPE parts); the KV cache holds the latent.
        head_dim=mla.qk_head_dim,
        num_kv_heads=f["num_attention_heads"],
        mla=mla,
        attention_bias=bias,
        attention_out_bias=bias,
        moe=moe_from_layers(
            c,
            n,
            lambda i: i >= first_dense,
            num_experts=c.integer("n_routed_experts"),
            experts_per_token=c.integer("num_experts_per_tok"),
            expert_intermediate_size=c.integer("moe_intermediate_size"),
            num_shared_experts=shared,
            # transformers' DeepseekV3TopkRouter always holds e_score_correction_bias (a buffer).
            router_bias=True,
        ),
    )
    return f
