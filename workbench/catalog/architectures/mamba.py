"""Mamba-2 (Dao & Gu 2024): every block one Mamba-2 mixer behind one RMSNorm, no feed-forward part."""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import Cfg
from workbench.catalog.architectures.registry import reads
from workbench.core.model import LayerMixer, PositionEmbedding, RecurrentKind, RecurrentMixer


def mamba2_mixer(
    hidden: int,
    *,
    heads: int,
    head_dim: int,
    state: int,
    groups: int,
    kernel: int,
    chunk: int,
    proj_bias: bool,
    conv_bias: bool,
) -> RecurrentMixer:
    """One transformers ``Mamba2Mixer``: ``in_proj`` (hidden -> gate z, conv input x|B|C, dt per head),
    a depthwise causal conv over x|B|C, ``dt_bias``/``A_log``/``D`` per head, a gated RMSNorm over the
    inner width and ``out_proj``. Its cache keeps ``conv_kernel`` columns of the conv input and the
    (heads x head_dim x state) SSM state, which the chunked scan produces in fp32."""
    inner = heads * head_dim
    conv = inner + 2 * groups * state
    in_out = inner + conv + heads
    other = conv * kernel + (conv if conv_bias else 0) + 3 * heads + inner
    if proj_bias:
        other += in_out + hidden
    return RecurrentMixer(
        kind=RecurrentKind.MAMBA2,
        projections=((hidden, in_out), (inner, hidden)),
        other_parameters=other,
        heads=heads,
        head_dim=head_dim,
        state_size=state,
        groups=groups,
        conv_channels=conv,
        conv_kernel=kernel,
        chunk_size=chunk,
        conv_state_elements=conv * kernel,
        ssm_state_elements=heads * head_dim * state,
        ssm_state_fp32=True,
    )


@reads(
    "mamba2",
    family="mamba",
    reference="Mamba2ForCausalLM",
    defaults={
        "num_heads": 128,
        "head_dim": 64,
        "vocab_size": 32768,
        "hidden_size": 4096,
        "state_size": 128,
        "num_hidden_layers": 64,
        "expand": 2,
        "conv_kernel": 4,
        "n_groups": 8,
        "use_bias": False,
        "use_conv_bias": True,
        "hidden_act": "silu",
        "chunk_size": 256,
        "tie_word_embeddings": False,
    },
)
def read_mamba2(c: Cfg, notes: list[str]) -> dict[str, Any]:
    n = c.integer("num_hidden_layers")
    hidden = c.integer("hidden_size")
    heads = c.integer("num_heads")
    head_dim = c.integer("head_dim")
    expand = c.integer("expand")
    if hidden * expand != heads * head_dim:
        raise c.fail(
            "num_heads",
            f"x head_dim ({heads} x {head_dim}) must equal hidden_size x expand ({hidden} x {expand})",
        )
    groups = c.integer("n_groups")
    if heads % groups:
        raise c.fail("n_groups", f"({groups}) must divide num_heads ({heads})")
    mixer = mamba2_mixer(
        hidden,
        heads=heads,
        head_dim=head_dim,
        state=c.integer("state_size"),
        groups=groups,
        kernel=c.integer("conv_kernel"),
        chunk=c.integer("chunk_size"),
        proj_bias=c.flag("use_bias"),
        conv_bias=c.flag("use_conv_bias"),
    )
    # The attention fields describe no module here (no block has attention); they are filled with
    # the SSM heads so that the fields stay valid and TP limits by head count stay meaningful.
    return {
        "num_layers": n,
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_kv_heads": heads,
        "head_dim": head_dim,
        "intermediate_size": heads * head_dim,
        "vocab_size": c.integer("vocab_size"),
        "activation": c.text("hidden_act", default="silu"),
        "tie_word_embeddings": c.flag("tie_word_embeddings"),
        "position_embedding": PositionEmbedding.NONE,
        "recurrent": mixer,
        "layer_mixers": (LayerMixer.RECURRENT,) * n,
        "ffn_free_layers": tuple(range(n)),
        "single_part_norms": 1,
    }
