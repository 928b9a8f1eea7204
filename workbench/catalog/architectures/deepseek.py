"""DeepSeek-V3 and V3.2: multi-head latent attention, fine-grained experts; V3.2 adds the indexer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workbench.catalog.architectures.config import TYPE_DEFAULTS, Cfg, decoder_base, moe_from_layers
from workbench.catalog.architectures.registry import reads
from workbench.core.model import AttentionIndexer, MLAConfig


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
    first_dense = c.integer("first_k_dense_replace", minimum=0)
    if c.integer("moe_layer_freq", default=1) != 1:
        notes.append(
            "moe_layer_freq != 1 is ignored, as transformers' DeepseekV3 does: every layer from "
            "first_k_dense_replace on is an MoE layer"
        )
    return _deepseek(c, notes, lambda i: i >= first_dense)


def _deepseek(c: Cfg, notes: list[str], is_moe: Callable[[int], bool]) -> dict[str, Any]:
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
            is_moe,
            num_experts=c.integer("n_routed_experts"),
            experts_per_token=c.integer("num_experts_per_tok"),
            expert_intermediate_size=c.integer("moe_intermediate_size"),
            num_shared_experts=shared,
            # transformers' DeepseekV3TopkRouter always holds e_score_correction_bias (a buffer).
            router_bias=True,
        ),
    )
    return f


_V32_DEFAULTS = dict(TYPE_DEFAULTS["deepseek_v3"])
_V32_DEFAULTS.update(
    {
        "max_position_embeddings": 163840,
        "index_n_heads": 64,
        "index_head_dim": 128,
        "index_topk": 2048,
    }
)


@reads("deepseek_v32", family="deepseek", reference="DeepseekV32ForCausalLM", defaults=_V32_DEFAULTS)
def read_deepseek_v32(c: Cfg, notes: list[str]) -> dict[str, Any]:
    """DeepSeek-V3.2: V3's block plus, in every attention block, the sparse-attention indexer (its
    query up-projection reads the query latent, so q_lora_rank is required)."""
    n = c.integer("num_hidden_layers")
    if c.data.get("q_lora_rank", 0) is None:
        raise c.fail("q_lora_rank", "must be set: the DeepSeek-V3.2 indexer projects its queries from the query latent")
    if c.has("mlp_layer_types"):
        types = c.data["mlp_layer_types"]
        if not isinstance(types, list) or len(types) != n or any(t not in ("dense", "sparse") for t in types):
            raise c.fail("mlp_layer_types", f"must list 'dense' or 'sparse' for each of the {n} layers")
        sparse = {i for i, t in enumerate(types) if t == "sparse"}
    else:
        first_dense = c.integer("first_k_dense_replace", minimum=0)
        sparse = set(range(first_dense, n))
    if c.has("layer_types") and any(t != "indexed_attention" for t in c.data["layer_types"]):
        raise c.fail("layer_types", "must be 'indexed_attention' for every layer (the only kind transformers builds)")
    f = _deepseek(c, notes, lambda i: i in sparse)
    f["indexer"] = AttentionIndexer(
        heads=c.integer("index_n_heads"),
        head_dim=c.integer("index_head_dim"),
        top_k=c.integer("index_topk"),
    )
    return f
