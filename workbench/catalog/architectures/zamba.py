"""Zamba2 (Zyphra): a Mamba-2 stack in which some layers first run one of a few shared attention +
MLP blocks, each such layer with its own low-rank adapters and output projection.

The shared attention reads the hidden state joined to the original token embeddings (2 x hidden
features), with heads of 2 x hidden / heads dims; its weights are stored once per shared block.
"""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import Cfg, read_rope
from workbench.catalog.architectures.registry import reads
from workbench.catalog.architectures.ssm import mamba2_mixer
from workbench.core.model import LayerMixer, PositionEmbedding, SharedBlocks

#: Zamba2Config's layer pattern when the config gives none (Zamba2-2.7B's 54 layers).
_DEFAULT_TYPES = (
    ["mamba"] + (["mamba"] * 5 + ["hybrid"]) * 7 + ["mamba"] * 4 + ["hybrid"] + ["mamba"] * 3
    + ["hybrid"] + ["mamba"] * 2
)


def _layer_types(c: Cfg) -> list[str]:
    types = c.data.get("layers_block_type", c.data.get("layer_types"))
    if types is None:
        return list(_DEFAULT_TYPES)
    if not isinstance(types, list) or not types:
        raise c.fail("layers_block_type", "must be a non-empty list of layer types")
    legacy = {"mamba": "mamba", "linear_attention": "mamba", "hybrid": "hybrid"}
    bad = sorted({str(t) for t in types if t not in legacy})
    if bad:
        raise c.fail("layers_block_type", f"holds layer types {bad} Zamba2 does not have (mamba, hybrid)")
    return [legacy[t] for t in types]


@reads(
    "zamba2",
    family="zamba",
    reference="Zamba2ForCausalLM",
    defaults={
        "vocab_size": 32000,
        "max_position_embeddings": 4096,
        "hidden_size": 2560,
        "num_hidden_layers": 54,
        "mamba_d_state": 64,
        "mamba_d_conv": 4,
        "mamba_expand": 2,
        "mamba_ngroups": 1,
        "n_mamba_heads": 8,
        "chunk_size": 256,
        "add_bias_linear": False,
        "hidden_act": "gelu",
        "num_attention_heads": 32,
        "num_mem_blocks": 1,
        "use_shared_attention_adapter": False,
        "adapter_rank": 128,
        "use_mem_rope": False,
        "use_long_context": False,
        "tie_word_embeddings": True,
    },
)
def read_zamba2(c: Cfg, notes: list[str]) -> dict[str, Any]:
    types = _layer_types(c)
    n = len(types)
    layers = c.integer("num_hidden_layers")
    if layers != n:  # Zamba2Config refuses the mismatch too
        raise c.fail("num_hidden_layers", f"({layers}) must equal the {n} entries of layers_block_type")
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads")
    kv_heads = c.integer("num_key_value_heads", default=heads)
    attention_width = 2 * hidden
    if attention_width % heads or heads % kv_heads:
        raise c.fail("num_attention_heads", f"({heads}) must divide 2 x hidden_size and be a multiple of "
                     f"num_key_value_heads ({kv_heads})")
    inner = c.integer("mamba_expand") * hidden
    mamba_heads = c.integer("n_mamba_heads")
    if inner % mamba_heads:
        raise c.fail("n_mamba_heads", f"({mamba_heads}) must divide mamba_expand x hidden_size ({inner})")
    intermediate = c.opt_integer("intermediate_size") or 4 * hidden
    bias = c.flag("add_bias_linear")
    hybrid = tuple(i for i, t in enumerate(types) if t == "hybrid")
    rope = c.flag("use_mem_rope")
    fields: dict[str, Any] = {
        "num_layers": n,
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_kv_heads": kv_heads,
        "head_dim": attention_width // heads,
        "intermediate_size": intermediate,
        "activation": c.text("hidden_act"),
        "mlp_bias": bias,
        "vocab_size": c.integer("vocab_size"),
        "tie_word_embeddings": c.flag("tie_word_embeddings"),
        "max_position_embeddings": (
            16384 if c.flag("use_long_context") else c.integer("max_position_embeddings")
        ),
        **(read_rope(c) if rope else {"rope_theta": None, "rope_scaling": None}),
        "position_embedding": PositionEmbedding.ROPE if rope else PositionEmbedding.NONE,
        # Every layer has its Mamba-2 mixer (with its norm); hybrid layers first run a shared block.
        "layer_mixers": tuple(
            LayerMixer.PARALLEL if t == "hybrid" else LayerMixer.RECURRENT for t in types
        ),
        "ffn_free_layers": tuple(i for i, t in enumerate(types) if t != "hybrid"),
        "single_part_norms": 1,
        "recurrent": mamba2_mixer(
            hidden,
            heads=mamba_heads,
            head_dim=inner // mamba_heads,
            state_size=c.integer("mamba_d_state"),
            groups=c.integer("mamba_ngroups"),
            conv_kernel=c.integer("mamba_d_conv"),
            chunk_size=c.integer("chunk_size"),
            in_proj_bias=bias,
            out_proj_bias=bias,
            conv_bias=True,  # Zamba2MambaMixer always builds the conv bias (use_conv_bias is unused)
        ),
    }
    if hybrid:
        fields["shared_blocks"] = SharedBlocks(
            layers=hybrid,
            count=c.integer("num_mem_blocks"),
            input_width=attention_width,
            # The MLP's gate/up adapters are always built; q/k/v ones only with the flag.
            adapter_rank=c.integer("adapter_rank"),
            attention_adapters=c.flag("use_shared_attention_adapter"),
            layer_projection=True,
        )
    return fields
