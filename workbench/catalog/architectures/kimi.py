"""Kimi-Linear (Moonshot): Kimi Delta Attention blocks and MLA attention blocks, dense first
block(s) then DeepSeek-style experts with a shared expert."""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import Cfg, moe_from_layers, read_rope
from workbench.catalog.architectures.registry import reads
from workbench.catalog.architectures.ssm import hybrid_layer_types, kda_mixer
from workbench.core.model import LayerMixer, MLAConfig


def _layer_types(c: Cfg, n: int) -> list[LayerMixer]:
    """As KimiLinearConfig resolves them: ``layer_types``, else the checkpoint's 1-based
    ``linear_attn_config`` lists, else full attention on every 4th layer (not the first)."""
    if c.has("layer_types"):
        return hybrid_layer_types(c, "layer_types", n)
    linear = c.mapping("linear_attn_config") or {}
    full, kda = linear.get("full_attn_layers"), linear.get("kda_layers")
    if full is not None and kda is not None:
        listed = {i: LayerMixer.ATTENTION for i in full} | {i: LayerMixer.RECURRENT for i in kda}
        if sorted(listed) != list(range(1, n + 1)):
            raise c.fail(
                "linear_attn_config",
                f"full_attn_layers and kda_layers must name each layer 1..{n} once",
            )
        return [listed[i + 1] for i in range(n)]
    return [LayerMixer.ATTENTION if i and i % 4 == 0 else LayerMixer.RECURRENT for i in range(n)]


@reads(
    "kimi_linear",
    family="kimi",
    reference="KimiLinearForCausalLM",
    defaults={
        "vocab_size": 163840,
        "hidden_size": 2304,
        "intermediate_size": 9216,
        "moe_intermediate_size": 1024,
        "num_hidden_layers": 27,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "kv_lora_rank": 512,
        "q_lora_rank": None,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
        "qk_nope_head_dim": 128,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "attention_bias": False,
        "num_local_experts": 256,
        "num_experts_per_tok": 8,
        "n_shared_experts": 1,
        "linear_head_dim": 128,
        "linear_num_heads": 32,
        "linear_conv_kernel_dim": 4,
    },
)
def read_kimi_linear(c: Cfg, notes: list[str]) -> dict[str, Any]:
    n = c.integer("num_hidden_layers")
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    mixers = _layer_types(c, n)
    mla = MLAConfig(
        q_lora_rank=c.opt_integer("q_lora_rank"),
        kv_lora_rank=c.integer("kv_lora_rank"),
        qk_rope_head_dim=c.integer("qk_rope_head_dim"),
        qk_nope_head_dim=c.integer("qk_nope_head_dim"),
        v_head_dim=c.integer("v_head_dim"),
    )
    linear = Cfg(c.mapping("linear_attn_config") or {}, c.where, c.model_type, "linear_attn_config.")
    kda_heads = linear.integer("num_heads", default=None) or c.integer("linear_num_heads")
    kda_dim = linear.integer("head_dim", default=None) or c.integer("linear_head_dim")
    kernel = linear.integer("short_conv_kernel_size", default=None) or c.integer("linear_conv_kernel_dim")
    if c.has("mlp_layer_types"):
        kinds = c.data["mlp_layer_types"]
        if not isinstance(kinds, list) or len(kinds) != n or set(kinds) - {"dense", "sparse"}:
            raise c.fail("mlp_layer_types", f"must list 'dense' or 'sparse' for each of the {n} layers")
        sparse = [k == "sparse" for k in kinds]
    else:
        first_dense = c.integer("first_k_dense_replace", default=1, minimum=0)
        sparse = [i >= first_dense for i in range(n)]
    if c.integer("num_nextn_predict_layers", default=0, minimum=0):
        notes.append(
            "the multi-token-prediction (MTP) module (num_nextn_predict_layers) is not counted: "
            "transformers does not build it, and inference does not need it"
        )
    bias = c.flag("attention_bias")
    experts = c.integer("num_experts", "num_local_experts", "n_routed_experts")
    return {
        "num_layers": n,
        "hidden_size": hidden,
        "num_attention_heads": heads,
        # MLA: every query head has its own key/value from the latent; head_dim is the query/key width.
        "num_kv_heads": heads,
        "head_dim": mla.qk_head_dim,
        "mla": mla,
        "attention_bias": bias,
        "attention_out_bias": bias,
        "intermediate_size": c.integer("intermediate_size"),
        "vocab_size": c.integer("vocab_size"),
        "activation": c.text("hidden_act"),
        "max_position_embeddings": c.integer("model_max_length", "max_position_embeddings", default=1048576),
        "tie_word_embeddings": c.flag("tie_word_embeddings"),
        **read_rope(c),
        "layer_mixers": tuple(mixers),
        "recurrent": kda_mixer(hidden, heads=kda_heads, head_dim=kda_dim, conv_kernel=kernel)
        if LayerMixer.RECURRENT in mixers
        else None,
        "moe": moe_from_layers(
            c,
            n,
            lambda i: sparse[i],
            num_experts=experts,
            experts_per_token=c.integer("num_experts_per_token", "num_experts_per_tok"),
            expert_intermediate_size=c.integer("moe_intermediate_size"),
            num_shared_experts=c.integer("num_shared_experts", "n_shared_experts", minimum=0),
            # KimiLinearTopkRouter keeps e_score_correction_bias as a buffer, like DeepSeek-V3's.
            router_bias=True,
        ),
    }
