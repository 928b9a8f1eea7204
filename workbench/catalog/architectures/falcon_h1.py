"""Falcon-H1 (TII): every block runs attention and a Mamba-2 mixer side by side on the same
normed input, then a gated MLP.

The µP multipliers of the config (``mlp_multipliers``, ``ssm_multipliers``, ...) scale
activations, not weights: they change no parameter count or memory.
"""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import Cfg, decoder_base
from workbench.catalog.architectures.registry import reads
from workbench.catalog.architectures.ssm import mamba2_from_keys
from workbench.core.model import LayerMixer


@reads(
    "falcon_h1",
    family="falcon",
    reference="FalconH1ForCausalLM",
    defaults={
        "vocab_size": 128000,
        "tie_word_embeddings": False,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "hidden_act": "silu",
        "max_position_embeddings": 8192,
        "attention_bias": False,
        "mlp_bias": False,
        "mamba_d_ssm": 1024,
        "mamba_n_heads": 128,
        "mamba_d_head": "auto",
        "mamba_n_groups": 1,
        "mamba_d_state": 256,
        "mamba_d_conv": 4,
        "mamba_expand": 2,
        "mamba_chunk_size": 256,
        "mamba_conv_bias": True,
        "mamba_proj_bias": False,
        "mamba_rms_norm": False,
        "projectors_bias": False,
    },
)
def read_falcon_h1(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = decoder_base(c, notes)
    bias = c.flag("attention_bias")
    f.update(
        attention_bias=bias,
        attention_out_bias=bias,
        mlp_bias=c.flag("mlp_bias"),
        sliding_window=None,
        layer_mixers=(LayerMixer.PARALLEL,) * f["num_layers"],
        # in_proj follows mamba_proj_bias, out_proj projectors_bias (FalconH1Mixer).
        recurrent=mamba2_from_keys(c, f["hidden_size"], out_bias_key="projectors_bias"),
    )
    return f
