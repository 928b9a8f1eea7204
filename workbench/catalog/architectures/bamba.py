"""Bamba (IBM): Mamba-2 and attention blocks, each with a gated MLP (Llama-style otherwise)."""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import Cfg, decoder_base
from workbench.catalog.architectures.registry import reads
from workbench.catalog.architectures.ssm import mamba2_from_keys
from workbench.core.model import LayerMixer


@reads(
    "bamba",
    family="bamba",
    reference="BambaForCausalLM",
    defaults={
        "vocab_size": 128000,
        "tie_word_embeddings": False,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "hidden_act": "silu",
        "max_position_embeddings": 262144,
        "attention_bias": False,
        "mlp_bias": False,
        "mamba_n_heads": 128,
        "mamba_d_head": "auto",
        "mamba_n_groups": 1,
        "mamba_d_state": 256,
        "mamba_d_conv": 4,
        "mamba_expand": 2,
        "mamba_chunk_size": 256,
        "mamba_conv_bias": True,
        "mamba_proj_bias": False,
    },
)
def read_bamba(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = decoder_base(c, notes)
    n = f["num_layers"]
    attention = set(c.integers("attn_layer_indices"))
    bad = sorted(i for i in attention if not 0 <= i < n)
    if bad:
        raise c.fail("attn_layer_indices", f"holds layers {bad} outside 0..{n - 1}")
    bias = c.flag("attention_bias")
    f.update(
        attention_bias=bias,
        attention_out_bias=bias,
        mlp_bias=c.flag("mlp_bias"),
        sliding_window=None,
        layer_mixers=tuple(
            LayerMixer.ATTENTION if i in attention else LayerMixer.RECURRENT for i in range(n)
        ),
        recurrent=mamba2_from_keys(c, f["hidden_size"]),
    )
    return f
