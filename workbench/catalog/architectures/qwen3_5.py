"""Qwen3.5-MoE: Gated DeltaNet blocks with gated full attention every ``full_attention_interval``
blocks, every block a mixture of experts with a gated shared expert.

The published checkpoints are multimodal (``qwen3_5_moe`` with ``text_config`` and a vision
tower): the language model is read as ``qwen3_5_moe_text``, the vision tower counted here.
"""

from __future__ import annotations

from typing import Any

from workbench.catalog.architectures.config import TYPE_DEFAULTS, Cfg, decoder_base
from workbench.catalog.architectures.registry import reads
from workbench.catalog.architectures.ssm import gated_deltanet_mixer, hybrid_layer_types
from workbench.core.model import LayerMixer, MoEConfig


@reads(
    "qwen3_5_moe_text",
    family="qwen",
    reference="Qwen3_5MoeForCausalLM",
    defaults={
        "vocab_size": 248320,
        "hidden_size": 2048,
        "num_hidden_layers": 40,
        "num_attention_heads": 16,
        "num_key_value_heads": 2,
        "head_dim": 256,
        "hidden_act": "silu",
        "max_position_embeddings": 32768,
        "tie_word_embeddings": False,
        "attention_bias": False,
        "linear_conv_kernel_dim": 4,
        "linear_key_head_dim": 128,
        "linear_value_head_dim": 128,
        "linear_num_key_heads": 16,
        "linear_num_value_heads": 32,
        "moe_intermediate_size": 512,
        "shared_expert_intermediate_size": 512,
        "num_experts_per_tok": 8,
        "num_experts": 256,
    },
)
def read_qwen3_5_moe_text(c: Cfg, notes: list[str]) -> dict[str, Any]:
    # Qwen3.5-MoE has no dense MLP: intermediate_size is absent; the expert width stands in for it.
    c.defaults = {**c.defaults, "intermediate_size": c.integer("moe_intermediate_size")}
    f = decoder_base(c, notes)
    c.defaulted.pop(c.prefix + "intermediate_size", None)
    n, hidden = f["num_layers"], f["hidden_size"]
    if c.has("layer_types"):
        mixers = hybrid_layer_types(c, "layer_types", n)
    else:
        interval = c.integer("full_attention_interval", default=4)
        mixers = [LayerMixer.RECURRENT if (i + 1) % interval else LayerMixer.ATTENTION for i in range(n)]
    if c.integer("mtp_num_hidden_layers", default=0, minimum=0):
        notes.append(
            "the multi-token-prediction (MTP) layers (mtp_num_hidden_layers) are not counted: "
            "transformers does not build them, and inference does not need them"
        )
    bias = c.flag("attention_bias")
    shared = c.integer("shared_expert_intermediate_size", minimum=0)
    f.update(
        intermediate_size=c.integer("moe_intermediate_size"),
        attention_bias=bias,
        attention_out_bias=bias,
        attention_output_gate=True,
        qk_norm=True,
        sliding_window=None,
        layer_mixers=tuple(mixers),
        recurrent=gated_deltanet_mixer(
            hidden,
            key_heads=c.integer("linear_num_key_heads"),
            key_head_dim=c.integer("linear_key_head_dim"),
            value_heads=c.integer("linear_num_value_heads"),
            value_head_dim=c.integer("linear_value_head_dim"),
            conv_kernel=c.integer("linear_conv_kernel_dim"),
            fused=False,
        )
        if LayerMixer.RECURRENT in mixers
        else None,
        moe=MoEConfig(
            num_experts=c.integer("num_experts"),
            experts_per_token=c.integer("num_experts_per_tok"),
            expert_intermediate_size=c.integer("moe_intermediate_size"),
            num_shared_experts=1 if shared else 0,
            shared_expert_intermediate_size=shared or None,
            shared_expert_gate=bool(shared),
        ),
    )
    return f


TYPE_DEFAULTS["qwen3_5_moe_vision"] = {
    "depth": 27,
    "hidden_size": 1152,
    "intermediate_size": 4304,
    "in_channels": 3,
    "patch_size": 16,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "out_hidden_size": 3584,
    "num_position_embeddings": 2304,
}


def qwen3_5_vision_parameters(c: Cfg, notes: list[str]) -> int:
    """Parameters of Qwen3.5's vision tower and merger (``Qwen3_5MoeVisionModel``), exactly.

    A biased Conv3d patch embedding (channels x temporal patch x patch x patch per output), a learned
    position table, ``depth`` pre-norm ViT blocks (LayerNorms with bias, fused biased qkv, biased
    projection, a plain biased MLP), and the patch merger: a LayerNorm, then two biased linears
    from the ``spatial_merge_size``^2 merged patches to the language model's width.
    """
    vision = c.nested("vision_config", "qwen3_5_moe_vision")
    h = vision.integer("hidden_size")
    inner = vision.integer("intermediate_size")
    patch = vision.integer("patch_size")
    embed = vision.integer("in_channels") * vision.integer("temporal_patch_size") * patch * patch * h + h
    embed += vision.integer("num_position_embeddings") * h
    block = 2 * 2 * h + (3 * h * h + 3 * h) + (h * h + h) + (h * inner + inner) + (inner * h + h)
    merged = h * vision.integer("spatial_merge_size") ** 2
    out = vision.integer("out_hidden_size")
    merger = 2 * h + merged * merged + merged + merged * out + out
    if vision.defaulted:
        listed = ", ".join(f"{k}={v}" for k, v in vision.defaulted.items())
        notes.append(f"absent from the config, taken from transformers' Qwen3.5 vision defaults: {listed}")
    return embed + vision.integer("depth") * block + merger
