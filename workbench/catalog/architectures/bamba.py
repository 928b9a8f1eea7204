"""Bamba (IBM): Mamba-2 and attention blocks, each with a gated MLP (Llama-style otherwise)."""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import Cfg, decoder_base
from workbench.catalog.architectures.registry import reads
from workbench.catalog.architectures.ssm import mamba2_mixer
from workbench.core.model import LayerMixer, RecurrentMixer


def mamba2_from_keys(c: Cfg, hidden: int, *, out_bias_key: str = "mamba_proj_bias") -> RecurrentMixer:
    """The Mamba-2 mixer of the IBM/TII hybrids, from their shared ``mamba_*`` keys (Bamba,
    Granite-4.0-H, Falcon-H1): inner width ``mamba_d_ssm`` when given (Falcon-H1), else
    ``mamba_expand x hidden``, split into ``mamba_n_heads`` heads (``mamba_d_head: auto`` derives
    the head width from that)."""
    heads = c.integer("mamba_n_heads")
    inner = c.opt_integer("mamba_d_ssm") if c.model_type == "falcon_h1" else None
    if inner is None:
        inner = c.integer("mamba_expand") * hidden
    _, head_dim = c.raw("mamba_d_head")
    head_dim = inner // heads if head_dim == "auto" else c.integer("mamba_d_head")
    if heads * head_dim != inner:
        raise c.fail(
            "mamba_d_head",
            f"({head_dim}) x mamba_n_heads ({heads}) must equal the Mamba inner width ({inner})",
        )
    proj_bias = c.flag("mamba_proj_bias")
    return mamba2_mixer(
        hidden,
        heads=heads,
        head_dim=head_dim,
        state_size=c.integer("mamba_d_state"),
        groups=c.integer("mamba_n_groups"),
        conv_kernel=c.integer("mamba_d_conv"),
        chunk_size=c.integer("mamba_chunk_size"),
        in_proj_bias=proj_bias,
        out_proj_bias=c.flag(out_bias_key),
        conv_bias=c.flag("mamba_conv_bias"),
        gated_norm=c.flag("mamba_rms_norm") if c.model_type == "falcon_h1" else True,
    )


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
