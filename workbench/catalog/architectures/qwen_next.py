"""Qwen3-Next: Gated DeltaNet linear attention in three of four blocks, gated full attention in the
fourth (``layer_types``), every block with a mixture-of-experts FFN and a gated shared expert."""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import Cfg
from workbench.catalog.architectures.llama import read_llama
from workbench.catalog.architectures.qwen import _qwen_moe, qwen_window
from workbench.catalog.architectures.registry import reads
from workbench.core.model import LayerMixer, RecurrentKind, RecurrentMixer

#: transformers' ``torch_chunk_gated_delta_rule`` default chunk (the model does not pass one).
DELTANET_CHUNK = 64


def gated_deltanet_mixer(
    hidden: int, *, key_heads: int, value_heads: int, key_dim: int, value_dim: int, kernel: int
) -> RecurrentMixer:
    """One transformers ``Qwen3NextGatedDeltaNet``: ``in_proj_qkvz`` (q, k, v and the output gate z),
    ``in_proj_ba`` (beta and the decay input, one each per value head), a bias-free depthwise conv
    over q|k|v, ``dt_bias`` and ``A_log`` per value head, a gated RMSNorm of one value head and
    ``out_proj``. The cache keeps ``kernel`` conv columns and a (value heads x key dim x value dim)
    fp32 state per sequence."""
    keys, values = key_heads * key_dim, value_heads * value_dim
    conv = 2 * keys + values
    return RecurrentMixer(
        kind=RecurrentKind.GATED_DELTANET,
        projections=((hidden, 2 * keys + 2 * values), (hidden, 2 * value_heads), (values, hidden)),
        other_parameters=conv * kernel + 2 * value_heads + value_dim,
        heads=value_heads,
        head_dim=value_dim,
        state_size=key_dim,
        groups=key_heads,
        conv_channels=conv,
        conv_kernel=kernel,
        chunk_size=DELTANET_CHUNK,
        conv_state_elements=conv * kernel,
        ssm_state_elements=value_heads * key_dim * value_dim,
        ssm_state_fp32=True,
    )


def layer_types(c: Cfg, n: int) -> list[str]:
    """``layer_types``, or transformers' default: full attention every ``full_attention_interval``."""
    if c.has("layer_types"):
        types = c.data["layer_types"]
        if not isinstance(types, list) or len(types) != n:
            raise c.fail("layer_types", f"must list one type per layer ({n})")
        return types
    interval = c.integer("full_attention_interval", default=4)
    return ["linear_attention" if (i + 1) % interval else "full_attention" for i in range(n)]


@reads(
    "qwen3_next",
    family="qwen",
    reference="Qwen3NextForCausalLM",
    defaults={
        "vocab_size": 151936,
        "hidden_size": 2048,
        "intermediate_size": 5632,
        "num_hidden_layers": 48,
        "num_attention_heads": 16,
        "num_key_value_heads": 2,
        "hidden_act": "silu",
        "max_position_embeddings": 32768,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "head_dim": 256,
        "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": 128,
        "linear_value_head_dim": 128,
        "linear_num_key_heads": 16,
        "linear_num_value_heads": 32,
        "decoder_sparse_step": 1,
        "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512,
        "num_experts_per_tok": 10,
        "num_experts": 512,
    },
)
def read_qwen3_next(c: Cfg, notes: list[str]) -> dict[str, Any]:
    f = read_llama(c, notes)
    n = f["num_layers"]
    types = layer_types(c, n)
    unknown = sorted({t for t in types if t not in ("linear_attention", "full_attention")})
    if unknown:
        raise c.fail("layer_types", f"holds types Qwen3-Next does not build: {', '.join(unknown)}")
    # o_proj follows attention_bias too in Qwen3NextAttention
    f.update(qk_norm=True, attention_output_gate=True, mlp_bias=False)
    qwen_window(c, f)
    _qwen_moe(c, f, shared=True)
    key_heads = c.integer("linear_num_key_heads")
    value_heads = c.integer("linear_num_value_heads")
    if value_heads % key_heads:
        raise c.fail("linear_num_value_heads", f"({value_heads}) must be a multiple of linear_num_key_heads")
    f["recurrent"] = gated_deltanet_mixer(
        f["hidden_size"],
        key_heads=key_heads,
        value_heads=value_heads,
        key_dim=c.integer("linear_key_head_dim"),
        value_dim=c.integer("linear_value_head_dim"),
        kernel=c.integer("linear_conv_kernel_dim"),
    )
    f["layer_mixers"] = tuple(
        LayerMixer.RECURRENT if t == "linear_attention" else LayerMixer.ATTENTION for t in types
    )
    return f
