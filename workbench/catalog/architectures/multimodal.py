"""Multimodal wrappers: a language model in ``text_config`` plus vision (or audio) towers.

The language model is read by its own family reader; the towers are counted here, exactly where
a reader exists (:mod:`workbench.catalog.architectures.vision`: Qwen2.5-VL, Qwen3-VL, Gemma 3's
SigLIP, Pixtral, Llama 4) and otherwise left out with a note (the importer then fills them in from
the folder's safetensors headers when the weights are there).
"""

from __future__ import annotations

from workbench.catalog.architectures.config import TYPE_DEFAULTS, Cfg
from workbench.catalog.architectures.qwen3_5 import qwen3_5_vision_parameters

#: Wrapper types whose language model sits in ``text_config``, and the text model_type to use when
#: the nested config does not say.
WRAPPERS: dict[str, str] = {
    "gemma3": "gemma3_text",
    "llama4": "llama4_text",
    "mistral3": "mistral",
    "qwen2_5_vl": "qwen2_5_vl_text",
    "qwen3_vl": "qwen3_vl_text",
    "qwen3_vl_moe": "qwen3_vl_moe_text",
    "qwen3_5_moe": "qwen3_5_moe_text",
}
#: Wrappers whose published configs keep the language model's keys at the top level (transformers
#: builds ``text_config`` from them when the file has none).
FLAT_WRAPPERS = frozenset({"qwen2_5_vl"})
#: Wrapper (multimodal) types: the tie flag that counts is the wrapper's own.
WRAPPER_TIE_DEFAULTS: dict[str, bool] = {
    "gemma3": True,
    "llama4": False,
    "mistral3": True,
    "qwen2_5_vl": False,
    "qwen3_vl": False,
    "qwen3_vl_moe": False,
    "qwen3_5_moe": False,
}
#: The class a wrapper's count corresponds to when its towers are counted exactly.
WRAPPER_REFERENCE: dict[str, str] = {
    "gemma3": "Gemma3ForConditionalGeneration",
    "llama4": "Llama4ForConditionalGeneration",
    "mistral3": "Mistral3ForConditionalGeneration",
    "qwen2_5_vl": "Qwen2_5_VLForConditionalGeneration",
    "qwen3_vl": "Qwen3VLForConditionalGeneration",
    "qwen3_vl_moe": "Qwen3VLMoeForConditionalGeneration",
    "qwen3_5_moe": "Qwen3_5MoeForConditionalGeneration",
}

TYPE_DEFAULTS["siglip_vision_model"] = {
    "hidden_size": 768,
    "intermediate_size": 3072,
    "num_hidden_layers": 12,
    "num_attention_heads": 12,
    "num_channels": 3,
    "image_size": 224,
    "patch_size": 16,
    "vision_use_head": True,
}


def siglip_vision_parameters(c: Cfg) -> int:
    """Parameters of a SigLIP vision tower (``SiglipVisionModel``), exactly."""
    h = c.integer("hidden_size")
    inner = c.integer("intermediate_size")
    channels, patch, image = c.integer("num_channels"), c.integer("patch_size"), c.integer("image_size")
    emb = channels * patch * patch * h + h + (image // patch) ** 2 * h
    attn = 4 * (h * h + h)
    mlp = 2 * h * inner + inner + h
    layer = attn + mlp + 2 * (2 * h)
    total = emb + c.integer("num_hidden_layers") * layer + 2 * h
    if c.flag("vision_use_head"):
        # probe + nn.MultiheadAttention (in_proj 3h, out_proj) + LayerNorm + MLP
        total += h + 3 * h * h + 3 * h + h * h + h + 2 * h + mlp
    return total


def tower_parameters(wrapper: str, c: Cfg, text_hidden: int, notes: list[str]) -> int:
    """Exact parameters of towers no vision reader describes (:mod:`~workbench.catalog.architectures.vision`
    reads the others), or 0 with a note when we cannot count them."""
    if wrapper == "qwen3_5_moe" and c.has("vision_config"):
        return qwen3_5_vision_parameters(c, notes)
    towers = [k for k in ("vision_config", "audio_config") if c.has(k)]
    notes.append(
        f"{'/'.join(towers) or 'non-text towers'} of {wrapper!r} not counted: the count covers the language "
        "model in text_config only (import the model folder to add the rest from its safetensors)"
    )
    return 0
