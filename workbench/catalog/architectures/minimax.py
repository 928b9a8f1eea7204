"""MiniMax-M2: full attention with full-width q/k RMSNorms and partial RoPE, 256 routed experts."""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import Cfg, decoder_base
from workbench.catalog.architectures.registry import reads
from workbench.core.model import MoEConfig


@reads(
    "minimax_m2",
    family="minimax",
    reference="MiniMaxM2ForCausalLM",
    defaults={
        "vocab_size": 200064,
        "hidden_size": 3072,
        "intermediate_size": 1536,
        "num_hidden_layers": 62,
        "num_attention_heads": 48,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "max_position_embeddings": 196608,
        "tie_word_embeddings": False,
        "hidden_act": "silu",
        "num_local_experts": 256,
        "num_experts_per_tok": 8,
    },
)
def read_minimax_m2(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = decoder_base(c, notes)
    # transformers' MiniMaxM2Attention always builds q_norm over heads x head_dim and k_norm over
    # kv_heads x head_dim (the released "qk_norm_type": "per_layer"); `rotary_dim` only sets the
    # rotated share of each head. The router's e_score_correction_bias is a buffer.
    if c.data.get("use_qk_norm") is False or c.data.get("qk_norm_type", "per_layer") != "per_layer":
        notes.append("use_qk_norm / qk_norm_type are ignored, as transformers does: q/k norms span all heads")
    if c.data.get("shared_intermediate_size"):
        notes.append("shared_intermediate_size is ignored, as transformers' MiniMaxM2 builds no shared expert")
    if c.data.get("use_mtp") or c.data.get("num_mtp_modules"):
        notes.append(
            "the multi-token-prediction (MTP) modules are not counted: transformers does not instantiate "
            "them, and inference does not need them"
        )
    f.update(
        qk_norm=True,
        qk_norm_full_width=True,
        sliding_window=None,
        moe=MoEConfig(
            num_experts=c.integer("num_local_experts"),
            experts_per_token=c.integer("num_experts_per_tok"),
            expert_intermediate_size=f["intermediate_size"],
            router_bias=True,
        ),
    )
    return f
