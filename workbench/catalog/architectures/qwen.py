"""Qwen 2/2.5/3 decoders, dense and mixture-of-experts."""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import (
    Cfg,
    decoder_base,
    moe_from_layers,
    read_window,
    sliding_layers,
)
from workbench.catalog.architectures.llama import read_llama
from workbench.catalog.architectures.registry import reads


def qwen_window(c: Cfg, fields: dict[str, Any]) -> None:
    """Qwen: a sliding window only when ``use_sliding_window``; which layers differs by type, as in
    transformers: Qwen2/Qwen3 from ``max_window_layers`` on, Qwen2-MoE the even layers below
    ``max_window_layers``, Qwen3-MoE every layer."""
    n = fields["num_layers"]
    sliding = sliding_layers(c, n)
    if sliding is None:
        if not c.flag("use_sliding_window"):
            fields["sliding_window"] = None
            return
        if c.model_type == "qwen3_moe":
            sliding = list(range(n))
        elif c.model_type == "qwen2_moe":
            limit = c.integer("max_window_layers", minimum=0)
            sliding = [i for i in range(n) if (i + 1) % 2 and i < limit]
        else:
            start = c.integer("max_window_layers", minimum=0)
            sliding = list(range(start, n))
    fields["sliding_window"] = read_window(c, n, sliding)


@reads(
    "qwen2",
    family="qwen",
    reference="Qwen2ForCausalLM",
    defaults={
        "vocab_size": 151936,
        "hidden_size": 4096,
        "intermediate_size": 22016,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "max_position_embeddings": 32768,
        "tie_word_embeddings": False,
        "hidden_act": "silu",
        "use_sliding_window": False,
        "sliding_window": 4096,
        "max_window_layers": 28,
    },
)
def read_qwen2(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = decoder_base(c, notes)
    f["attention_bias"] = True  # Qwen2 q/k/v always carry biases; o_proj never
    qwen_window(c, f)
    return f


def _qwen_moe(c: Cfg, f: dict[str, Any], *, shared: bool) -> None:
    n = f["num_layers"]
    only_mlp = set(c.integers("mlp_only_layers"))
    step = c.integer("decoder_sparse_step")
    experts = c.integer("num_experts", "num_local_experts", minimum=0)
    shared_size = c.integer("shared_expert_intermediate_size", minimum=0) if shared else 0
    f["moe"] = moe_from_layers(
        c,
        n,
        lambda i: i not in only_mlp and experts > 0 and (i + 1) % step == 0,
        num_experts=max(experts, 1),
        experts_per_token=c.integer("num_experts_per_tok"),
        expert_intermediate_size=c.integer("moe_intermediate_size"),
        num_shared_experts=1 if shared_size else 0,
        shared_expert_intermediate_size=shared_size or None,
        shared_expert_gate=bool(shared_size),
    )


@reads(
    "qwen2_moe",
    family="qwen",
    reference="Qwen2MoeForCausalLM",
    defaults={
        "vocab_size": 151936,
        "hidden_size": 2048,
        "intermediate_size": 5632,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "max_position_embeddings": 32768,
        "tie_word_embeddings": False,
        "hidden_act": "silu",
        "use_sliding_window": False,
        "sliding_window": 4096,
        "max_window_layers": 28,
        "qkv_bias": True,
        "num_experts": 60,
        "num_experts_per_tok": 4,
        "moe_intermediate_size": 1408,
        "shared_expert_intermediate_size": 5632,
        "decoder_sparse_step": 1,
    },
)
def read_qwen2_moe(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = decoder_base(c, notes)
    f["attention_bias"] = c.flag("qkv_bias")
    qwen_window(c, f)
    _qwen_moe(c, f, shared=True)
    return f


@reads(
    "qwen3",
    family="qwen",
    reference="Qwen3ForCausalLM",
    defaults={
        "vocab_size": 151936,
        "hidden_size": 4096,
        "intermediate_size": 22016,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "head_dim": 128,
        "max_position_embeddings": 32768,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "hidden_act": "silu",
        "use_sliding_window": False,
        "sliding_window": 4096,
        "max_window_layers": 28,
    },
)
def read_qwen3(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = read_llama(c, notes)
    f.update(qk_norm=True, mlp_bias=False)
    qwen_window(c, f)
    return f


@reads(
    "qwen3_moe",
    family="qwen",
    reference="Qwen3MoeForCausalLM",
    defaults={
        "vocab_size": 151936,
        "hidden_size": 2048,
        "intermediate_size": 6144,
        "num_hidden_layers": 24,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "max_position_embeddings": 32768,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "hidden_act": "silu",
        "use_sliding_window": False,
        "sliding_window": 4096,
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 768,
        "decoder_sparse_step": 1,
    },
)
def read_qwen3_moe(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = read_qwen3(c, notes)
    _qwen_moe(c, f, shared=False)
    return f


# The language models of Qwen2.5-VL and Qwen3-VL (their wrappers are read in multimodal.py and their
# vision towers in vision.py): Qwen2 and Qwen3 blocks, under their own config types and defaults.
@reads(
    "qwen2_5_vl_text",
    family="qwen",
    reference=None,  # no transformers class holds this text model with its LM head alone
    defaults={
        "vocab_size": 152064,
        "hidden_size": 8192,
        "intermediate_size": 29568,
        "num_hidden_layers": 80,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "max_position_embeddings": 32768,
        "hidden_act": "silu",
        "use_sliding_window": False,
        "sliding_window": 4096,
        "max_window_layers": 80,
    },
)
def read_qwen2_5_vl_text(c: Cfg, notes: list[str]) -> dict[str, Any]:
    return read_qwen2(c, notes)


@reads(
    "qwen3_vl_text",
    family="qwen",
    reference=None,
    defaults={
        "vocab_size": 151936,
        "hidden_size": 4096,
        "intermediate_size": 22016,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "head_dim": 128,
        "max_position_embeddings": 128000,
        "attention_bias": False,
        "hidden_act": "silu",
    },
)
def read_qwen3_vl_text(c: Cfg, notes: list[str]) -> dict[str, Any]:
    return read_qwen3(c, notes)


@reads(
    "qwen3_vl_moe_text",
    family="qwen",
    reference=None,
    defaults={
        "vocab_size": 151936,
        "hidden_size": 2048,
        "intermediate_size": 5632,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "max_position_embeddings": 128000,
        "tie_word_embeddings": True,
        "attention_bias": False,
        "hidden_act": "silu",
        "num_local_experts": 60,
        "num_experts_per_tok": 4,
        "moe_intermediate_size": 1408,
        "decoder_sparse_step": 1,
    },
)
def read_qwen3_vl_moe_text(c: Cfg, notes: list[str]) -> dict[str, Any]:
    return read_qwen3_moe(c, notes)
