"""Vision-language models against transformers: towers, image tokens and encoder FLOPs.

* Parameters: the real configs of tests/data/configs are held to ``*ForConditionalGeneration`` on
  the meta device by test_param_counts_vs_transformers.py (the towers now counted on the
  architecture); here the published totals, with their sources, and the tower part alone.
* Image tokens: the image processors of transformers 5 need torchvision / PIL, which the
  validation stack does not install, so their size arithmetic is taken from the installed source
  files themselves (the named functions, compiled and run as they are) and compared with
  :mod:`workbench.core.vision` over a spread of resolutions.
* Encoder FLOPs: ``FlopCounterMode`` over the vision tower and projector of small models built from
  configs (eager attention, and SDPA on its MATH backend, see test_flops_vs_torch.py), within 1%.
"""

from __future__ import annotations

import ast
import json
import math
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from workbench.catalog.hf_config import import_hf_config
from workbench.core.model import VisionTower
from workbench.core.params import count_parameters
from workbench.core.vision import encoder_flops, image_layout

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

pytestmark = pytest.mark.validation

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
MODELS = Path(transformers.__file__).parent / "models"
SIZES = [(1024, 1024), (640, 480), (1920, 1080), (224, 224), (4000, 3000), (333, 1001), (100, 50),
         (8000, 8000), (28, 28), (1540, 1540), (3000, 100), (1080, 1920), (513, 511)]


def real(name: str) -> dict[str, Any]:
    return json.loads((CONFIGS / name / "config.json").read_text(encoding="utf-8"))


def tower_of(name: str) -> VisionTower:
    tower = import_hf_config(real(name)).architecture.vision_tower
    assert tower is not None
    return tower


def processor_functions(relative: str, names: tuple[str, ...], **namespace: Any) -> dict[str, Any]:
    """The functions ``names`` of an installed transformers file, compiled from its source (decorators
    such as lru_cache dropped) in ``namespace``: the processor's own arithmetic without its imports."""
    tree = ast.parse((MODELS / relative).read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in names:
            node.decorator_list = []
            found.append(node)
    assert sorted(n.name for n in found) == sorted(names), f"{relative}: functions moved"
    module = ast.Module(body=found, type_ignores=[])
    scope: dict[str, Any] = {"math": math, "torch": torch, "defaultdict": defaultdict, **namespace}
    exec(compile(module, relative, "exec"), scope)  # noqa: S102 - transformers' own source
    return scope


# --- published totals ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "stored"),
    [
        # "参数总量" (sum of the safetensors tensors, bf16) of model-inspection reports quoting the
        # hub files; public-code index ids 62543607479 and 62501178117 (no repository reported).
        ("qwen3-vl-8b-instruct", 8_767_123_696),
        ("qwen3-vl-30b-a3b-instruct", 31_070_754_032),
    ],
)
def test_qwen3_vl_counts_equal_the_stored_checkpoints(name: str, stored: int) -> None:
    assert count_parameters(import_hf_config(real(name)).architecture).total == stored


def test_gemma3_27b_matches_the_report_table() -> None:
    # Gemma 3 Technical Report (arXiv:2503.19786), Table 1, 27B: vision encoder 417M, embedding
    # parameters 1,416M, non-embedding 25,600M (rounded; the split differs from the vocab x width
    # of the config, 1,409.6M, but the total agrees to 0.01%).
    arch = import_hf_config(real("gemma-3-27b-it")).architecture
    assert arch.vision_tower is not None
    assert arch.vision_tower.parameters == pytest.approx(417e6, abs=0.5e6)  # SigLIP alone: 416,866,032
    assert count_parameters(arch).total == pytest.approx((417 + 1416 + 25600) * 1e6, rel=0.0005)


def test_llama4_scout_published_total_and_active() -> None:
    # meta-llama/llama-models@038acb9f:models/llama4/MODEL_CARD.md: "17B (Activated) 109B (Total)".
    # The total holds the vision tower; the activated figure is the language model's (a text token
    # does not pass through the 0.87B tower, which our dense-part convention counts as active).
    arch = import_hf_config(real("llama-4-scout-17b-16e-instruct")).architecture
    count = count_parameters(arch)
    assert arch.vision_tower is not None
    assert count.total == pytest.approx(109e9, rel=0.015)
    assert count.active - arch.vision_tower.total_parameters == pytest.approx(17e9, rel=0.015)


def test_mistral_small_3_1_differs_from_24b_by_its_untied_head() -> None:
    """Mistral-Small-3.1-24B: "With 24 billion parameters" (model card, transformers
    docs/source/en/model_doc/mistral3.md). The config (a TensorRT-LLM fixture) sets no
    tie_word_embeddings, so Mistral3Config's default ties the head, as from_config does: 23.34B.
    The checkpoint stores lm_head separately; untied, the count is 24.01B."""
    arch = import_hf_config(real("mistral-small-3.1-24b-instruct-2503")).architecture
    assert arch.tie_word_embeddings
    untied = count_parameters(arch.model_copy(update={"tie_word_embeddings": False})).total
    assert untied == pytest.approx(24e9, rel=0.005)
    assert untied - count_parameters(arch).total == arch.vocab_size * arch.hidden_size


def test_towers_are_their_modules() -> None:
    """The tower part alone equals the vision modules transformers builds (meta device)."""
    for name, cls, prefixes in [
        ("qwen2.5-vl-3b-instruct", "Qwen2_5_VLForConditionalGeneration", ("model.visual.",)),
        ("gemma-3-27b-it", "Gemma3ForConditionalGeneration",
         ("model.vision_tower.", "model.multi_modal_projector.")),
        ("llama-4-scout-17b-16e-instruct", "Llama4ForConditionalGeneration",
         ("vision_model.", "multi_modal_projector.")),
    ]:
        config = real(name)
        conf = transformers.CONFIG_MAPPING[config["model_type"]].from_dict(config)
        with torch.device("meta"):
            model = getattr(transformers, cls)(conf)
        vision = sum(p.numel() for n, p in model.named_parameters() if n.startswith(prefixes))
        assert tower_of(name).total_parameters == vision, name


# --- image tokens by each processor's own rules -----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "min_pixels", "max_pixels"),
    [("qwen2.5-vl-7b-instruct", 3136, 12845056), ("qwen3-vl-8b-instruct", 65536, 16777216)],
)
def test_qwen_tokens_follow_smart_resize(name: str, min_pixels: int, max_pixels: int) -> None:
    tower = tower_of(name)
    fn = processor_functions("qwen2_vl/image_processing_qwen2_vl.py", ("smart_resize",))["smart_resize"]
    p, m = tower.patch_size, tower.spatial_merge_size
    for width, height in SIZES:
        rh, rw = fn(height, width, factor=p * m, min_pixels=min_pixels, max_pixels=max_pixels)
        patches = (rh // p) * (rw // p)  # get_number_of_image_patches
        layout = image_layout(tower, width, height)
        assert (layout.patches, layout.placeholders) == (patches, patches // m**2), (width, height)
        assert layout.prompt_tokens == patches // m**2 + 2  # <|vision_start|> ... <|vision_end|>


def test_qwen2_5_vl_1024_square_is_1369_tokens() -> None:
    # 1024 rounds to 37 x 28 = 1036 per side (within 12845056 pixels): 74 x 74 patches, 1369 tokens.
    layout = image_layout(tower_of("qwen2.5-vl-7b-instruct"), 1024, 1024)
    assert (layout.resized, layout.patches, layout.placeholders) == ((1036, 1036), 5476, 1369)


def test_gemma3_fixed_tokens() -> None:
    # processing_gemma3.py: full_image_sequence = boi + image_seq_length x image token + eoi, the
    # SigLIP tower sees 896 x 896 (64 x 64 patches) whatever the input (pan-and-scan off).
    source = (MODELS / "gemma3" / "processing_gemma3.py").read_text(encoding="utf-8")
    assert "{tokenizer.boi_token}{image_tokens_expanded}{tokenizer.eoi_token}" in source
    tower = tower_of("gemma-3-27b-it")
    for width, height in SIZES:
        layout = image_layout(tower, width, height)
        assert (layout.placeholders, layout.prompt_tokens, layout.patches) == (256, 258, 4096)


def test_pixtral_tokens_follow_its_resize() -> None:
    tower = tower_of("mistral-small-3.1-24b-instruct-2503")
    scope = processor_functions(
        "pixtral/image_processing_pixtral.py", ("_num_image_tokens", "get_resize_output_image_size"),
        get_image_size=lambda image, _fmt=None: image.shape[:2],
    )
    unit = tower.patch_size * tower.spatial_merge_size
    for width, height in SIZES:
        image = SimpleNamespace(shape=(height, width, 3))
        rh, rw = scope["get_resize_output_image_size"](image, size=(1540, 1540), patch_size=(unit, unit))
        # processing_pixtral.py _get_num_multimodal_tokens: (columns + 1) x rows
        expected = (rw // unit + 1) * (rh // unit)
        assert image_layout(tower, width, height).prompt_tokens == expected, (width, height)


def test_llama4_tiles_follow_get_best_fit_and_the_prompt_layout() -> None:
    tower = tower_of("llama-4-scout-17b-16e-instruct")
    scope = processor_functions(
        "llama4/image_processing_llama4.py", ("get_factors", "find_supported_resolutions", "get_best_fit")
    )
    split = processor_functions("llama4/processing_llama4.py", ("_prompt_split_image",))["_prompt_split_image"]
    canvases = torch.tensor(scope["find_supported_resolutions"](16, SimpleNamespace(height=336, width=336)))
    per_tile = (336 // 14) ** 2 // 4  # processing_llama4.py: patches // downsample_ratio (1 / 0.5**2)
    for width, height in SIZES:
        best = scope["get_best_fit"]((height, width), canvases)
        grid = (int(best[0]) // 336, int(best[1]) // 336)
        text = split(None, grid, per_tile)
        tokens = sum(text.count(t) for t in ("<|image_start|>", "<|image_end|>", "<|image|>", "<|patch|>",
                                               "<|tile_x_separator|>", "<|tile_y_separator|>"))
        layout = image_layout(tower, width, height)
        assert layout.tiles == grid, (width, height)
        assert (layout.prompt_tokens, layout.placeholders) == (tokens, text.count("<|patch|>")), (width, height)


# --- encoder FLOPs against FlopCounterMode ----------------------------------------------------------

_TEXT = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 1, "num_attention_heads": 4,
         "num_key_value_heads": 2, "vocab_size": 300, "head_dim": 16}
TINY: dict[str, dict[str, Any]] = {
    "qwen2_5_vl": {"model_type": "qwen2_5_vl", **_TEXT, "vision_config": {
        "depth": 4, "hidden_size": 64, "intermediate_size": 96, "num_heads": 4, "out_hidden_size": 64,
        "patch_size": 14, "window_size": 112, "fullatt_block_indexes": [1, 3]}},
    "qwen3_vl": {"model_type": "qwen3_vl", "text_config": _TEXT | {"model_type": "qwen3_vl_text"},
                 "vision_config": {"depth": 3, "hidden_size": 32, "intermediate_size": 48, "num_heads": 4,
                                   "out_hidden_size": 64, "num_position_embeddings": 64,
                                   "deepstack_visual_indexes": [0, 2]}},
    "gemma3": {"model_type": "gemma3", "mm_tokens_per_image": 16, "boi_token_index": 1, "eoi_token_index": 2,
               "image_token_index": 3, "text_config": _TEXT,
               "vision_config": {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
                                 "num_attention_heads": 4, "image_size": 112, "patch_size": 14,
                                 "vision_use_head": False}},
    "mistral3": {"model_type": "mistral3", "text_config": _TEXT | {"model_type": "mistral"},
                 "vision_config": {"model_type": "pixtral", "hidden_size": 32, "intermediate_size": 48,
                                   "num_hidden_layers": 2, "num_attention_heads": 4, "head_dim": 8,
                                   "image_size": 224, "patch_size": 14}},
    "llama4": {"model_type": "llama4", "text_config": _TEXT | {"intermediate_size": 32, "intermediate_size_mlp": 128},
               "vision_config": {"hidden_size": 32, "intermediate_size": 128, "num_hidden_layers": 2,
                                 "num_attention_heads": 4, "image_size": 56, "patch_size": 14,
                                 "vision_output_dim": 48, "projector_input_dim": 48,
                                 "projector_output_dim": 48}},
}
_CLASSES = {"qwen2_5_vl": "Qwen2_5_VLForConditionalGeneration", "qwen3_vl": "Qwen3VLForConditionalGeneration",
            "gemma3": "Gemma3ForConditionalGeneration", "mistral3": "Mistral3ForConditionalGeneration",
            "llama4": "Llama4ForConditionalGeneration"}


def _run_tower(kind: str, model: Any, tower: VisionTower, width: int, height: int) -> None:
    layout = image_layout(tower, width, height)
    p = tower.patch_size
    if kind in ("qwen2_5_vl", "qwen3_vl"):
        gh, gw = layout.resized[0] // p, layout.resized[1] // p
        pixels = torch.randn(gh * gw, tower.num_channels * tower.temporal_patch_size * p * p)
        model.model.get_image_features(pixels, image_grid_thw=torch.tensor([[1, gh, gw]]))
    elif kind == "gemma3":
        model.model.get_image_features(torch.randn(1, 3, tower.image_size, tower.image_size))
    elif kind == "mistral3":
        model.model.get_image_features(torch.randn(1, 3, *layout.resized),
                                       image_sizes=torch.tensor([list(layout.resized)]))
    else:  # Llama 4: get_image_features stops before the projector, which forward() applies next
        side = tower.image_size
        out = model.get_image_features(pixel_values=torch.randn(layout.sequences, 3, side, side), return_dict=True)
        features = out.last_hidden_state
        model.multi_modal_projector(features.view(-1, features.size(-1)))


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("kind", sorted(TINY))
def test_encoder_flops_match_flop_counter(kind: str, attention: str) -> None:
    config = TINY[kind]
    tower = import_hf_config(config).architecture.vision_tower
    assert tower is not None
    conf = transformers.CONFIG_MAPPING[config["model_type"]].from_dict(config)
    torch.manual_seed(0)
    model = getattr(transformers, _CLASSES[kind])._from_config(conf, attn_implementation=attention).eval()
    # Qwen2.5-VL at 392 x 280: a 14 x 10 merged grid, so its 4 x 4 windows are cut at two edges
    for width, height in [(392, 280), (280, 616)]:
        with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
            _run_tower(kind, model, tower, width, height)
        measured = counter.get_total_flops()
        assert encoder_flops(tower, width, height).total == pytest.approx(measured, rel=0.01), (width, height)
