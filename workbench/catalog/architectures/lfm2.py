"""LFM2 (Liquid AI): gated short-convolution blocks and attention blocks, each with a SwiGLU MLP."""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import Cfg, decoder_base
from workbench.catalog.architectures.registry import reads
from workbench.catalog.architectures.ssm import hybrid_layer_types, short_conv_mixer
from workbench.core.model import LayerMixer


def lfm2_ffn_size(c: Cfg) -> int:
    """The MLP width Lfm2MLP builds: with ``block_auto_adjust_ff_dim``, 2/3 of the configured size,
    times ``block_ffn_dim_multiplier`` and rounded up to ``block_multiple_of`` when a multiplier is
    set. The configured size is ``block_ff_dim`` when present (Lfm2Config lets it override
    ``intermediate_size``)."""
    size = c.integer("block_ff_dim", "intermediate_size")
    if not c.flag("block_auto_adjust_ff_dim"):
        return size
    size = int(2 * size / 3)
    multiplier = c.number("block_ffn_dim_multiplier")
    if multiplier is not None:
        size = int(multiplier * size)
        multiple = c.integer("block_multiple_of")
        size = multiple * ((size + multiple - 1) // multiple)
    return size


@reads(
    "lfm2",
    family="lfm2",
    reference="Lfm2ForCausalLM",
    defaults={
        "vocab_size": 65536,
        "hidden_size": 2560,
        "intermediate_size": 12288,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 128000,
        "tie_word_embeddings": True,
        "conv_bias": False,
        "conv_L_cache": 3,
        "block_multiple_of": 256,
        "block_ffn_dim_multiplier": 1.0,
        "block_auto_adjust_ff_dim": True,
    },
)
def read_lfm2(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = decoder_base(c, notes)
    n, hidden = f["num_layers"], f["hidden_size"]
    if c.has("layer_types"):
        mixers = hybrid_layer_types(c, "layer_types", n)
    else:
        attention = c.integers("full_attn_idxs") if c.has("full_attn_idxs") else list(range(n))
        mixers = [LayerMixer.ATTENTION if i in attention else LayerMixer.RECURRENT for i in range(n)]
    if c.has("tie_embedding"):
        f["tie_word_embeddings"] = c.flag("tie_embedding")
    f.update(
        intermediate_size=lfm2_ffn_size(c),
        activation="silu",
        qk_norm=True,  # q_layernorm / k_layernorm over one head
        sliding_window=None,
        layer_mixers=tuple(mixers),
        recurrent=short_conv_mixer(hidden, conv_kernel=c.integer("conv_L_cache"), bias=c.flag("conv_bias"))
        if LayerMixer.RECURRENT in mixers
        else None,
    )
    return f
