"""Vision towers on the architecture and the image arithmetic of :mod:`workbench.core.vision`.

The rules and FLOPs are checked against the transformers processors and FlopCounterMode in
tests/validation/test_vision_language.py; here: validation, the count, and hand-worked cases.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from workbench.core import ModelArchitecture
from workbench.core.model import VisionAttention, VisionTokenRule, VisionTower
from workbench.core.params import count_parameters
from workbench.core.vision import best_tile_grid, encoder_flops, image_layout, smart_resize

QWEN25 = VisionTower(
    kind="qwen2.5-vl", parameters=1000, projector_parameters=200, hidden_size=1280, num_layers=32, num_heads=16,
    intermediate_size=3420, gated_mlp=True, patch_size=14, temporal_patch_size=2, spatial_merge_size=2,
    token_rule=VisionTokenRule.SMART_RESIZE, min_pixels=3136, max_pixels=12845056,
    attention=VisionAttention.WINDOWED, window_size=112, full_attention_layers=(7, 15, 23, 31),
)
TEXT = dict(name="vl", num_layers=2, hidden_size=64, num_attention_heads=4, num_kv_heads=2, head_dim=16,
            intermediate_size=96, vocab_size=100)


def test_tower_counts_in_other_and_active() -> None:
    plain = count_parameters(ModelArchitecture(**TEXT))
    with_tower = count_parameters(ModelArchitecture(**TEXT, vision_tower=QWEN25))
    assert with_tower.total - plain.total == 1200 == with_tower.breakdown["other"] - plain.breakdown["other"]
    assert with_tower.active - plain.active == 1200


def test_a_rule_needs_its_sizes() -> None:
    with pytest.raises(ValidationError, match="smart-resize rule needs min_pixels"):
        VisionTower.model_validate(QWEN25.model_dump() | {"min_pixels": None})
    with pytest.raises(ValidationError, match="windowed attention needs window_size"):
        VisionTower.model_validate(QWEN25.model_dump() | {"window_size": None})
    with pytest.raises(ValidationError, match="full_attention_layers"):
        VisionTower.model_validate(QWEN25.model_dump() | {"full_attention_layers": (32,)})


def test_smart_resize_by_hand() -> None:
    # 1024 / 28 = 36.57 -> 37 x 28 = 1036; 1036^2 is within the budget
    assert smart_resize(1024, 1024, 28, 3136, 12845056) == (1036, 1036)
    # over budget: scaled by sqrt(area / max) then floored to multiples of 28
    assert smart_resize(1024, 1024, 28, 3136, 28 * 28 * 1280) == (980, 980)
    # under budget: scaled up and ceiled
    assert smart_resize(20, 20, 28, 3136, 12845056) == (56, 56)


def test_qwen_windows_cost_less_than_full_attention() -> None:
    layout = image_layout(QWEN25, 1024, 1024)
    assert (layout.patches, layout.placeholders, layout.prompt_tokens) == (5476, 1369, 1371)
    windowed = encoder_flops(QWEN25, 1024, 1024)
    full = encoder_flops(QWEN25.model_copy(update={"attention": VisionAttention.FULL}), 1024, 1024)
    # 28 of 32 blocks attend within 8 x 8-patch windows (64 patches each, 10 x 10 windows, edges cut)
    per_block_full = 4.0 * 5476**2 * 1280
    assert full.attention == 32 * per_block_full
    windows = sum(min(4, 37 - r) * min(4, 37 - c) * 4 for r in range(0, 37, 4) for c in range(0, 37, 4))
    assert windows == 5476
    assert windowed.attention < full.attention / 4
    assert windowed.blocks == full.blocks == 2.0 * QWEN25.layer_matmul * 5476 * 32
    assert windowed.patch_embed == 2.0 * 3 * 2 * 14 * 14 * 1280 * 5476


def test_pixtral_rows_carry_a_break_token() -> None:
    tower = VisionTower(kind="pixtral", parameters=1, hidden_size=1024, num_layers=24, num_heads=16,
                        intermediate_size=4096, gated_mlp=True, patch_size=14, spatial_merge_size=2, image_size=1540,
                        token_rule=VisionTokenRule.LONGEST_EDGE)
    # 1920 x 1080 -> ratio 1920/1540: 1540 x 866 -> 55 x 31 merged tokens, (55 + 1) x 31 in the prompt
    layout = image_layout(tower, 1920, 1080)
    assert (layout.placeholders, layout.prompt_tokens, layout.patches) == (55 * 31, 56 * 31, 55 * 31 * 4)
    # small images are not upscaled: 300 x 200 -> 11 x 8 merged tokens
    assert image_layout(tower, 300, 200).prompt_tokens == 12 * 8


def test_llama4_tiles_and_global_tile() -> None:
    tower = VisionTower(kind="llama4", parameters=1, hidden_size=1408, num_layers=34, num_heads=16,
                        intermediate_size=5632, patch_size=14, image_size=336, token_rule=VisionTokenRule.TILES,
                        max_tiles=16, pixel_shuffle_ratio=0.5, class_token=True)
    assert best_tile_grid(336, 336, 336, 16) == (1, 1)
    one = image_layout(tower, 336, 336)
    assert (one.sequences, one.placeholders, one.prompt_tokens, one.sequence_tokens) == (1, 144, 147, 577)
    # 1024 x 1024: the smallest upscale that fits is the 4 x 4 canvas (1344 px, x1.31); 16 tiles and a
    # global tile, 3 column separators and a row separator per row, start / <|image|> / end
    grid = image_layout(tower, 1024, 1024)
    assert grid.tiles == (4, 4) and grid.sequences == 17
    assert grid.prompt_tokens == 17 * 144 + 4 * 3 + 4 + 3
    # 1000 x 400: the smallest upscale is x1.008 (width 1008 = 3 tiles), reached by 2 x 3, 3 x 3, 4 x 3
    # and 5 x 3 canvases; the smallest of them wins
    assert best_tile_grid(400, 1000, 336, 16) == (2, 3)


def test_gemma_fixed_tokens_whatever_the_size() -> None:
    tower = VisionTower(kind="siglip", parameters=1, hidden_size=1152, num_layers=27, num_heads=16,
                        intermediate_size=4304, patch_size=14, image_size=896, token_rule=VisionTokenRule.FIXED,
                        tokens_per_image=256)
    for size in ((64, 64), (4000, 3000)):
        layout = image_layout(tower, *size)
        assert (layout.patches, layout.prompt_tokens) == (4096, 258)
    with pytest.raises(ValueError, match="positive"):
        image_layout(tower, 0, 10)
