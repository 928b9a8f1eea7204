"""Vision towers of vision-language wrappers, counted exactly as transformers 5 builds them.

Each reader turns a wrapper's ``vision_config`` (and the projector keys beside it) into a
:class:`~workbench.core.model.VisionTower`: its parameters to the parameter (the validation suite
compares them with ``*ForConditionalGeneration`` on the meta device), its shape (what an image
costs in the encoder) and its image-token rule (:mod:`workbench.core.vision`).

The image processors' sizes (min/max pixels, Pixtral's longest edge, Llama 4's tile count) live in
each checkpoint's ``preprocessor_config.json``, not in ``config.json``; the published checkpoints'
values are used and named in a note.
"""

from __future__ import annotations

from collections.abc import Callable

from workbench.catalog.architectures.config import TYPE_DEFAULTS, Cfg
from workbench.catalog.architectures.multimodal import siglip_vision_parameters
from workbench.core.model import VisionAttention, VisionTokenRule, VisionTower

# Defaults of the transformers vision config classes (transformers 5.24), for keys a config omits.
TYPE_DEFAULTS["qwen2_5_vl_vision"] = {
    "depth": 32,
    "hidden_size": 3584,
    "intermediate_size": 3420,
    "num_heads": 16,
    "in_channels": 3,
    "patch_size": 14,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "window_size": 112,
    "out_hidden_size": 3584,
}
TYPE_DEFAULTS["qwen3_vl_vision"] = {
    "depth": 27,
    "hidden_size": 1152,
    "intermediate_size": 4304,
    "num_heads": 16,
    "in_channels": 3,
    "patch_size": 16,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "out_hidden_size": 3584,
    "num_position_embeddings": 2304,
}
# List-valued defaults (tuples in transformers), read when the config omits the key.
QWEN25_FULL_ATTENTION = (7, 15, 23, 31)
QWEN3_DEEPSTACK = (8, 16, 24)
TYPE_DEFAULTS["pixtral"] = {
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "num_channels": 3,
    "image_size": 1024,
    "patch_size": 16,
}
TYPE_DEFAULTS["llama4_vision_model"] = {
    "hidden_size": 768,
    "num_hidden_layers": 34,
    "num_attention_heads": 16,
    "num_channels": 3,
    "intermediate_size": 5632,
    "vision_output_dim": 7680,
    "image_size": 448,
    "patch_size": 14,
    "pixel_shuffle_ratio": 0.5,
    "projector_input_dim": 4096,
    "projector_output_dim": 4096,
    "multi_modal_projector_bias": False,
}

#: Image-processor sizes of the published checkpoints (``preprocessor_config.json``), by wrapper:
#: Qwen2.5-VL min_pixels 3136 / max_pixels 12845056; Qwen3-VL size shortest_edge 65536 /
#: longest_edge 16777216 (the Qwen2VLImageProcessor class defaults, 3136 / 1003520, are not what
#: the checkpoints ship); Llama 4 max_patches 16 (Llama4ImageProcessor default).
QWEN25_PIXELS = (3136, 12845056)
QWEN3_PIXELS = (65536, 16777216)
LLAMA4_MAX_TILES = 16


def _ffn(h: int, inner: int, *, gated: bool, bias: bool) -> int:
    weights = (3 if gated else 2) * h * inner
    return weights + ((2 if gated else 1) * inner + h if bias else 0)


def _qwen25(top: Cfg, text_hidden: int, notes: list[str]) -> tuple[VisionTower, Cfg]:
    v = top.nested("vision_config", "qwen2_5_vl_vision")
    h, inner, m = v.integer("hidden_size"), v.integer("intermediate_size"), v.integer("spatial_merge_size")
    channels, p, t = v.integer("in_channels", "in_chans"), v.integer("patch_size"), v.integer("temporal_patch_size")
    out = v.integer("out_hidden_size")
    # Qwen2_5_VisionTransformerPretrainedModel: Conv3d patch embedding without bias; blocks with two
    # RMSNorms, a biased fused qkv and proj, a biased gated MLP; PatchMerger: RMSNorm over the
    # vision width, then Linear(h m^2, h m^2) and Linear(h m^2, out), both biased.
    block = 2 * h + (3 * h * h + 3 * h) + (h * h + h) + _ffn(h, inner, gated=True, bias=True)
    hm = h * m * m
    depth = v.integer("depth")
    full = tuple(v.integers("fullatt_block_indexes")) if v.has("fullatt_block_indexes") else QWEN25_FULL_ATTENTION
    notes.append("image processor sizes of the published checkpoints: min_pixels 3136, max_pixels 12845056")
    return VisionTower(
        kind="qwen2.5-vl",
        parameters=channels * t * p * p * h + depth * block,
        projector_parameters=h + hm * hm + hm + hm * out + out,
        hidden_size=h,
        num_layers=depth,
        num_heads=v.integer("num_heads"),
        intermediate_size=inner,
        gated_mlp=True,
        num_channels=channels,
        patch_size=p,
        temporal_patch_size=t,
        spatial_merge_size=m,
        token_rule=VisionTokenRule.SMART_RESIZE,
        min_pixels=QWEN25_PIXELS[0],
        max_pixels=QWEN25_PIXELS[1],
        attention=VisionAttention.WINDOWED,
        window_size=v.integer("window_size"),
        full_attention_layers=tuple(i for i in full if 0 <= i < depth),
        projector_matmul=hm * hm + hm * out,
    ), v


def _qwen3(top: Cfg, text_hidden: int, notes: list[str]) -> tuple[VisionTower, Cfg]:
    v = top.nested("vision_config", "qwen3_vl_vision")
    h, inner, m = v.integer("hidden_size"), v.integer("intermediate_size"), v.integer("spatial_merge_size")
    channels, p, t = v.integer("in_channels"), v.integer("patch_size"), v.integer("temporal_patch_size")
    out = v.integer("out_hidden_size")
    depth = v.integer("depth")
    # Qwen3VLVisionModel: biased Conv3d patch embedding, a learned position table that is
    # interpolated to the grid, blocks with two LayerNorms, biased qkv/proj and a plain biased MLP;
    # the merger (LayerNorm over the vision width) and one deep-stack merger per
    # deepstack_visual_indexes entry (LayerNorm over h m^2), each Linear(h m^2, h m^2) + Linear(h m^2, out).
    block = 4 * h + (3 * h * h + 3 * h) + (h * h + h) + _ffn(h, inner, gated=False, bias=True)
    hm = h * m * m
    mlp = hm * hm + hm + hm * out + out
    stacks = len(v.integers("deepstack_visual_indexes") if v.has("deepstack_visual_indexes") else QWEN3_DEEPSTACK)
    tower = channels * t * p * p * h + h + v.integer("num_position_embeddings") * h + depth * block
    notes.append("image processor sizes of the published checkpoints: shortest_edge 65536, longest_edge 16777216 pixels")
    return VisionTower(
        kind="qwen3-vl",
        parameters=tower,
        projector_parameters=2 * h + mlp + stacks * (2 * hm + mlp),
        hidden_size=h,
        num_layers=depth,
        num_heads=v.integer("num_heads"),
        intermediate_size=inner,
        gated_mlp=False,
        num_channels=channels,
        patch_size=p,
        temporal_patch_size=t,
        spatial_merge_size=m,
        token_rule=VisionTokenRule.SMART_RESIZE,
        min_pixels=QWEN3_PIXELS[0],
        max_pixels=QWEN3_PIXELS[1],
        projector_matmul=(1 + stacks) * (hm * hm + hm * out),
    ), v


def _gemma3(top: Cfg, text_hidden: int, notes: list[str]) -> tuple[VisionTower, Cfg]:
    v = top.nested("vision_config", "siglip_vision_model")
    h = v.integer("hidden_size")
    tokens = top.integer("mm_tokens_per_image", default=256)
    # Gemma3MultiModalProjector: average pooling to mm_tokens_per_image, an RMSNorm over the vision
    # width and a (vision width x text width) projection weight.
    return VisionTower(
        kind="siglip",
        parameters=siglip_vision_parameters(v),
        projector_parameters=h * text_hidden + h,
        hidden_size=h,
        num_layers=v.integer("num_hidden_layers"),
        num_heads=v.integer("num_attention_heads"),
        intermediate_size=v.integer("intermediate_size"),
        gated_mlp=False,
        num_channels=v.integer("num_channels"),
        patch_size=v.integer("patch_size"),
        image_size=v.integer("image_size"),
        token_rule=VisionTokenRule.FIXED,
        tokens_per_image=tokens,
        projector_matmul=h * text_hidden,
    ), v


def _pixtral(top: Cfg, text_hidden: int, notes: list[str]) -> tuple[VisionTower, Cfg]:
    v = top.nested("vision_config", "pixtral")
    h, inner, heads = v.integer("hidden_size"), v.integer("intermediate_size"), v.integer("num_attention_heads")
    head_dim = v.opt_integer("head_dim") or h // heads
    channels, p = v.integer("num_channels"), v.integer("patch_size")
    layers = v.integer("num_hidden_layers")
    m = top.integer("spatial_merge_size", default=2)
    if head_dim * heads != h:
        raise v.fail("head_dim", f"({head_dim}) x heads ({heads}) must equal hidden_size ({h}) for Pixtral")
    # PixtralVisionModel: bias-free patch convolution, an RMSNorm before the blocks, blocks with two
    # RMSNorms, bias-free q/k/v/o and a gated bias-free MLP.
    block = 2 * h + 4 * h * h + _ffn(h, inner, gated=True, bias=False)
    # Mistral3MultiModalProjector: RMSNorm, PatchMerger Linear(h m^2, h), linear_1 (h x feature
    # layers -> text), linear_2 (text -> text), biased when multimodal_projector_bias.
    feature = top.data.get("vision_feature_layer", -1)
    fl = len(feature) if isinstance(feature, list) else 1
    bias = top.flag("multimodal_projector_bias")
    proj = h + h * m * m * h + h * fl * text_hidden + text_hidden * text_hidden
    proj += 2 * text_hidden if bias else 0
    notes.append("image processor of the published checkpoint: longest edge = vision_config.image_size")
    return VisionTower(
        kind="pixtral",
        parameters=channels * p * p * h + h + layers * block,
        projector_parameters=proj,
        hidden_size=h,
        num_layers=layers,
        num_heads=heads,
        intermediate_size=inner,
        gated_mlp=True,
        num_channels=channels,
        patch_size=p,
        spatial_merge_size=m,
        image_size=v.integer("image_size"),
        token_rule=VisionTokenRule.LONGEST_EDGE,
        projector_matmul=h * m * m * h + h * fl * text_hidden + text_hidden * text_hidden,
    ), v


def _llama4(top: Cfg, text_hidden: int, notes: list[str]) -> tuple[VisionTower, Cfg]:
    v = top.nested("vision_config", "llama4_vision_model")
    h, inner = v.integer("hidden_size"), v.integer("intermediate_size")
    channels, p, side = v.integer("num_channels"), v.integer("patch_size"), v.integer("image_size")
    layers = v.integer("num_hidden_layers")
    ratio = v.number("pixel_shuffle_ratio") or 0.5
    p_in, p_out, v_out = (v.integer(k) for k in ("projector_input_dim", "projector_output_dim", "vision_output_dim"))
    # Llama4VisionModel: class embedding, a position table of (side/patch)^2 + 1 rows, a bias-free
    # linear patch embedding, LayerNorms before and after the blocks, blocks with biased q/k/v/o,
    # a plain biased MLP and two LayerNorms; the pixel-shuffle adapter MLP (bias-free
    # Linear(intermediate, projector_input) and Linear(projector_output, projector_output));
    # Llama4MultiModalProjector: Linear(vision_output_dim, text width).
    block = 4 * (h * h + h) + _ffn(h, inner, gated=False, bias=True) + 4 * h
    tower = h + ((side // p) ** 2 + 1) * h + channels * p * p * h + 4 * h + layers * block
    adapter = inner * p_in + p_out * p_out
    bias = v.flag("multi_modal_projector_bias")
    proj = adapter + v_out * text_hidden + (text_hidden if bias else 0)
    notes.append(f"image processor of the published checkpoints: tiles of {side} px, at most {LLAMA4_MAX_TILES}")
    return VisionTower(
        kind="llama4",
        parameters=tower,
        projector_parameters=proj,
        hidden_size=h,
        num_layers=layers,
        num_heads=v.integer("num_attention_heads"),
        intermediate_size=inner,
        gated_mlp=False,
        num_channels=channels,
        patch_size=p,
        image_size=side,
        token_rule=VisionTokenRule.TILES,
        max_tiles=LLAMA4_MAX_TILES,
        pixel_shuffle_ratio=ratio,
        class_token=True,
        projector_matmul=adapter + v_out * text_hidden,
    ), v


#: Vision readers by wrapper model_type.
VISION_READERS: dict[str, Callable[[Cfg, int, list[str]], tuple[VisionTower, Cfg]]] = {
    "qwen2_5_vl": _qwen25,
    "qwen3_vl": _qwen3,
    "qwen3_vl_moe": _qwen3,
    "gemma3": _gemma3,
    "mistral3": _pixtral,
    "llama4": _llama4,
}


def read_vision_tower(wrapper: str, top: Cfg, text_hidden: int, notes: list[str]) -> VisionTower | None:
    """The exact vision tower of ``wrapper`` (None when the wrapper has no vision reader)."""
    reader = VISION_READERS.get(wrapper)
    if reader is None:
        return None
    tower, vision = reader(top, text_hidden, notes)
    if vision.defaulted:
        listed = ", ".join(f"{k}={val}" for k, val in vision.defaulted.items())
        notes.append(f"absent from the config, taken from transformers' {vision.model_type} defaults: {listed}")
    return tower
