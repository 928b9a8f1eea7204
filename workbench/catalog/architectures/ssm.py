"""Recurrent token mixers shared by the hybrid families: their parameters and per-sequence state.

Each function returns the :class:`~workbench.core.model.RecurrentMixer` of one layer as
transformers 5 builds it, so a family reader only maps its own config keys onto the arguments.
The state sizes are what the transformers cache holds for one sequence after a prefill (the
validation suite sums the cache's tensors to check them); the recurrent state is kept in fp32
whatever the model dtype, as those caches allocate it.
"""

from __future__ import annotations

from workbench.catalog.architectures.config import Cfg
from workbench.core.model import LayerMixer, RecurrentKind, RecurrentMixer


def mamba2_mixer(
    hidden: int,
    *,
    heads: int,
    head_dim: int,
    state_size: int,
    groups: int,
    conv_kernel: int,
    chunk_size: int,
    in_proj_bias: bool = False,
    out_proj_bias: bool = False,
    conv_bias: bool = True,
    gated_norm: bool = True,
) -> RecurrentMixer:
    """A Mamba-2 mixer (Dao & Gu 2024) with ``heads x head_dim`` inner channels.

    in_proj: hidden -> z, x, B, C, dt (2 x inner + 2 x groups x state + heads); a depthwise causal
    conv over x, B and C (inner + 2 x groups x state channels, ``conv_kernel`` taps); ``dt_bias``,
    ``A_log`` and ``D`` per head; a gated RMSNorm of inner width (absent in some Falcon-H1
    configs); out_proj: inner -> hidden. The state per sequence: the conv window of every conv
    channel and a ``head_dim x state`` SSM state per head.
    """
    inner = heads * head_dim
    conv_channels = inner + 2 * groups * state_size
    in_width = inner + conv_channels + heads
    other = conv_channels * conv_kernel + (conv_channels if conv_bias else 0)
    other += 3 * heads  # dt_bias, A_log, D
    other += inner if gated_norm else 0
    other += in_width if in_proj_bias else 0
    other += hidden if out_proj_bias else 0
    return RecurrentMixer(
        kind=RecurrentKind.MAMBA2,
        projections=((hidden, in_width), (inner, hidden)),
        other_parameters=other,
        heads=heads,
        head_dim=head_dim,
        state_size=state_size,
        groups=groups,
        conv_channels=conv_channels,
        conv_kernel=conv_kernel,
        chunk_size=chunk_size,
        conv_state_elements=conv_channels * conv_kernel,
        ssm_state_elements=heads * head_dim * state_size,
        ssm_state_fp32=True,
        gated_norm=gated_norm,
    )


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


def mamba1_mixer(
    hidden: int,
    *,
    inner: int,
    state_size: int,
    dt_rank: int,
    conv_kernel: int,
    proj_bias: bool = False,
    conv_bias: bool = True,
    dt_norms: bool = False,
) -> RecurrentMixer:
    """A Mamba-1 selective-scan mixer (Gu & Dao 2023), as Jamba builds it.

    in_proj: hidden -> x, z (2 x inner); a depthwise causal conv over x; x_proj: inner -> dt, B, C
    (dt_rank + 2 x state, no bias); dt_proj: dt_rank -> inner (always biased); ``A_log``
    (inner x state) and ``D`` (inner); out_proj: inner -> hidden. Jamba adds RMSNorms on dt, B
    and C (``dt_norms``). Described as one head of ``inner`` channels, each with its own
    ``state_size`` state: the SSM state is inner x state per sequence.
    """
    other = inner * conv_kernel + (inner if conv_bias else 0)
    other += inner  # dt_proj bias
    other += inner * state_size + inner  # A_log, D
    other += (2 * inner + hidden) if proj_bias else 0  # in_proj and out_proj biases
    other += (dt_rank + 2 * state_size) if dt_norms else 0
    return RecurrentMixer(
        kind=RecurrentKind.MAMBA,
        projections=(
            (hidden, 2 * inner),
            (inner, dt_rank + 2 * state_size),
            (dt_rank, inner),
            (inner, hidden),
        ),
        other_parameters=other,
        heads=1,
        head_dim=inner,
        state_size=state_size,
        groups=1,
        conv_channels=inner,
        conv_kernel=conv_kernel,
        chunk_size=0,
        conv_state_elements=inner * conv_kernel,
        ssm_state_elements=inner * state_size,
        ssm_state_fp32=True,
    )


def short_conv_mixer(hidden: int, *, conv_kernel: int, bias: bool = False) -> RecurrentMixer:
    """LFM2's gated short convolution: in_proj hidden -> B, C, x (3 x hidden); y = C * conv(B * x)
    with a depthwise causal conv of ``conv_kernel`` taps over hidden channels; out_proj hidden ->
    hidden. It keeps only the conv window per sequence, no recurrent state."""
    other = hidden * conv_kernel
    if bias:
        other += 3 * hidden + hidden + hidden  # in_proj, conv and out_proj biases
    return RecurrentMixer(
        kind=RecurrentKind.SHORT_CONV,
        projections=((hidden, 3 * hidden), (hidden, hidden)),
        other_parameters=other,
        heads=1,
        head_dim=hidden,
        state_size=0,
        groups=1,
        conv_channels=hidden,
        conv_kernel=conv_kernel,
        chunk_size=0,
        conv_state_elements=hidden * conv_kernel,
        ssm_state_elements=0,
        ssm_state_fp32=False,
    )


def gated_deltanet_mixer(
    hidden: int,
    *,
    key_heads: int,
    key_head_dim: int,
    value_heads: int,
    value_head_dim: int,
    conv_kernel: int,
    chunk_size: int = 64,
    fused: bool = True,
) -> RecurrentMixer:
    """A Gated DeltaNet mixer (Yang et al. 2024) as Qwen3-Next / Qwen3.5 build it.

    Projections from hidden: q, k (key_heads x key_dim each), v and the output gate z (value_heads
    x value_dim each), beta and the decay gate a (value_heads each). Qwen3-Next fuses them into
    in_proj_qkvz and in_proj_ba (``fused``); Qwen3.5 keeps in_proj_qkv, in_proj_z, in_proj_b and
    in_proj_a. Then a
    depthwise causal conv (no bias) over q, k and v; ``dt_bias`` and ``A_log`` per value head; a
    gated RMSNorm of one value head; out_proj: value_heads x value_dim -> hidden. The state: the
    conv window and a key_dim x value_dim memory per value head.
    """
    key_width = key_heads * key_head_dim
    value_width = value_heads * value_head_dim
    conv_channels = 2 * key_width + value_width
    return RecurrentMixer(
        kind=RecurrentKind.GATED_DELTANET,
        projections=(
            ((hidden, 2 * key_width + 2 * value_width), (hidden, 2 * value_heads), (value_width, hidden))
            if fused
            else (
                (hidden, 2 * key_width + value_width),
                (hidden, value_width),
                (hidden, value_heads),
                (hidden, value_heads),
                (value_width, hidden),
            )
        ),
        other_parameters=conv_channels * conv_kernel + 2 * value_heads + value_head_dim,
        heads=value_heads,
        head_dim=value_head_dim,
        state_size=key_head_dim,
        groups=key_heads,
        conv_channels=conv_channels,
        conv_kernel=conv_kernel,
        chunk_size=chunk_size,
        conv_state_elements=conv_channels * conv_kernel,
        ssm_state_elements=value_heads * key_head_dim * value_head_dim,
        ssm_state_fp32=True,
    )


def kda_mixer(
    hidden: int, *, heads: int, head_dim: int, conv_kernel: int, chunk_size: int = 64
) -> RecurrentMixer:
    """Kimi Delta Attention (Kimi-Linear) as transformers builds it.

    q/k/v projections hidden -> heads x head_dim; a depthwise causal conv (no bias) on each of q,
    k, v; the forget gate: a low-rank f_a (hidden -> head_dim) / f_b (head_dim -> heads x head_dim)
    with a per-channel ``dt_bias`` and a per-head ``A_log``; beta: b_proj hidden -> heads; the
    output gate: low-rank g_a / g_b like the forget gate; an RMSNorm of one head; o_proj. The
    state: three conv windows and a head_dim x head_dim memory per head.
    """
    width = heads * head_dim
    return RecurrentMixer(
        kind=RecurrentKind.KDA,
        projections=(
            (hidden, width),
            (hidden, width),
            (hidden, width),
            (hidden, head_dim),
            (head_dim, width),
            (hidden, heads),
            (hidden, head_dim),
            (head_dim, width),
            (width, hidden),
        ),
        other_parameters=3 * width * conv_kernel + width + heads + head_dim,
        heads=heads,
        head_dim=head_dim,
        state_size=head_dim,
        groups=heads,
        conv_channels=3 * width,
        conv_kernel=conv_kernel,
        chunk_size=chunk_size,
        conv_state_elements=3 * width * conv_kernel,
        ssm_state_elements=heads * head_dim * head_dim,
        ssm_state_fp32=True,
    )


#: Layer-type names in hybrid configs (transformers 5 names and the legacy ones it remaps).
_RECURRENT_NAMES = frozenset({"linear_attention", "mamba", "conv"})
_ATTENTION_NAMES = frozenset({"full_attention", "attention"})


def hybrid_layer_types(c: Cfg, key: str, n: int, default: list[str] | None = None) -> list[LayerMixer]:
    """The mixer of each of ``n`` layers from a per-layer list of type names (``layer_types``,
    ``layers_block_type``): attention names -> attention, recurrent names -> the recurrent mixer."""
    types = c.data.get(key)
    if types is None:
        if default is None:
            raise c.fail(key, "is missing: this hybrid config must say which layers are attention")
        types = default
    if not isinstance(types, list) or len(types) != n:
        raise c.fail(key, f"must list one type per layer ({n})")
    mixers = []
    for i, name in enumerate(types):
        if name in _ATTENTION_NAMES:
            mixers.append(LayerMixer.ATTENTION)
        elif name in _RECURRENT_NAMES:
            mixers.append(LayerMixer.RECURRENT)
        else:
            raise c.fail(f"{key}[{i}]", f"is {name!r}, not a layer type this family has")
    return mixers
