"""Gemma 1/2/3 text decoders."""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import Cfg, read_window, sliding_layers
from workbench.catalog.architectures.llama import read_llama
from workbench.catalog.architectures.registry import reads


@reads(
    "gemma",
    family="gemma",
    reference="GemmaForCausalLM",
    defaults={
        "vocab_size": 256000,
        "hidden_size": 3072,
        "intermediate_size": 24576,
        "num_hidden_layers": 28,
        "num_attention_heads": 16,
        "head_dim": 256,
        "max_position_embeddings": 8192,
        "tie_word_embeddings": True,
        "attention_bias": False,
        "hidden_act": "gelu_pytorch_tanh",
    },
)
def read_gemma(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = read_llama(c, notes)
    f["mlp_bias"] = False
    return f


@reads(
    "gemma2",
    family="gemma",
    reference="Gemma2ForCausalLM",
    defaults={
        "vocab_size": 256000,
        "hidden_size": 2304,
        "intermediate_size": 9216,
        "num_hidden_layers": 26,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 8192,
        "tie_word_embeddings": True,
        "attention_bias": False,
        "hidden_activation": "gelu_pytorch_tanh",
        "sliding_window": 4096,
        "attn_logit_softcapping": 50.0,
        "final_logit_softcapping": 30.0,
    },
)
def read_gemma2(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = read_gemma(c, notes)
    f["norms_per_layer"] = 4
    n = f["num_layers"]
    sliding = sliding_layers(c, n)
    f["sliding_window"] = read_window(c, n, sliding if sliding is not None else list(range(0, n, 2)))
    _softcaps(c, f)
    return f


def _softcaps(c: Cfg, f: dict[str, Any]) -> None:
    """Gemma 2 (and Gemma 3 when its config sets them): cap x tanh(x / cap) on the attention scores
    and on the output logits; tanh keeps its output for backward, so training keeps more."""
    f["attention_logit_softcap"] = c.number("attn_logit_softcapping")
    f["final_logit_softcap"] = c.number("final_logit_softcapping")


@reads(
    "gemma3_text",
    family="gemma",
    reference="Gemma3ForCausalLM",
    defaults={
        "vocab_size": 262208,
        "hidden_size": 2304,
        "intermediate_size": 9216,
        "num_hidden_layers": 26,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": True,
        "attention_bias": False,
        "hidden_activation": "gelu_pytorch_tanh",
        "sliding_window": 4096,
    },
)
def read_gemma3_text(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = read_gemma(c, notes)
    f.update(norms_per_layer=4, qk_norm=True)
    n = f["num_layers"]
    sliding = sliding_layers(c, n)
    if sliding is None:
        pattern = c.integer("sliding_window_pattern", default=6)
        sliding = [i for i in range(n) if (i + 1) % pattern]
    f["sliding_window"] = read_window(c, n, sliding)
    _softcaps(c, f)
    return f
