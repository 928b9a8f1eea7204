"""Images in a vision-language model: prompt tokens and the vision encoder's own work per image.

Each rule follows the model's own image processor in transformers 5 (the file is named at each
rule), so that an image of a given resolution costs the tokens the served model sees:

* smart-resize (Qwen2-VL, Qwen2.5-VL, Qwen3-VL): ``models/qwen2_vl/image_processing_qwen2_vl.py``
  ``smart_resize`` rounds each side to a multiple of ``patch x merge`` and rescales into
  [min_pixels, max_pixels]; ``get_number_of_image_patches`` gives the patches and
  ``models/qwen3_vl/processing_qwen3_vl.py`` divides by ``merge**2``; the chat template wraps them in
  ``<|vision_start|>`` / ``<|vision_end|>``.
* fixed (Gemma 3): ``models/gemma3/processing_gemma3.py``: ``mm_tokens_per_image`` soft tokens
  between ``<start_of_image>`` and ``<end_of_image>`` (pan-and-scan off, its default); the SigLIP
  tower sees the image resized to ``image_size``.
* longest-edge (Pixtral, Mistral 3): ``models/pixtral/image_processing_pixtral.py``
  ``get_resize_output_image_size`` shrinks the image to fit ``image_size`` and rounds each side up
  to ``patch x merge``; ``processing_pixtral.py`` then has ``(columns + 1) x rows`` tokens: one
  ``[IMG_BREAK]`` per row, the last one an ``[IMG_END]``.
* tiles (Llama 4): ``models/llama4/image_processing_llama4.py`` picks the canvas of up to
  ``max_tiles`` tiles that scales the image least (``get_best_fit``) and adds a global tile when it
  uses more than one; ``processing_llama4.py`` gives each tile ``(tile / patch)**2 x ratio**2``
  ``<|patch|>`` tokens, ``<|tile_x_separator|>`` between the tiles of a row, ``<|tile_y_separator|>``
  after each row, and ``<|image_start|>``, ``<|image|>``, ``<|image_end|>``.

Encoder FLOPs per image: 2 x (patch embedding weights) x patches, 2 x (block matrices) x tokens x
blocks, attention ``4 x tokens**2 x width`` per block over each sequence it attends within (the
whole image, a tile, or Qwen2.5-VL's windows on its windowed blocks), and 2 x (merger / projector
matrices) x merged tokens. Norms, activations, position interpolation are left out (< 0.5%).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from workbench.core.model import ModelArchitecture, VisionAttention, VisionTokenRule, VisionTower
from workbench.core.scenario import Scenario

#: Image resolution used when the scenario does not say (width x height, pixels).
DEFAULT_IMAGE_SIZE = (1024, 1024)


@dataclass(frozen=True, slots=True)
class ImageLayout:
    """What one image becomes: encoder sequences, merged tokens and prompt tokens."""

    #: Resized (height, width) the encoder sees (of one tile for the tiles rule).
    resized: tuple[int, int]
    #: Patches embedded (all tiles).
    patches: int
    #: Tokens of each sequence the encoder blocks run over, and how many such sequences.
    sequence_tokens: int
    sequences: int
    #: Tokens after merging / pooling (all tiles): what the projector maps, and the image
    #: placeholder tokens of the prompt, which the model's embedding scatter fills with them.
    merged_tokens: int
    #: Marker tokens around them (start/end, row breaks, tile separators).
    markers: int
    #: Tiles (Llama 4: the grid, without the global tile).
    tiles: tuple[int, int] = (1, 1)

    @property
    def placeholders(self) -> int:
        """Image placeholder tokens in the prompt: one per merged token."""
        return self.merged_tokens

    @property
    def prompt_tokens(self) -> int:
        return self.merged_tokens + self.markers


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """Qwen2-VL's resize: sides multiple of ``factor``, area in [min_pixels, max_pixels]
    (``models/qwen2_vl/image_processing_qwen2_vl.py``; Python's round, as there)."""
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def _supported_canvases(max_tiles: int) -> list[tuple[int, int]]:
    """Tile grids (rows, columns) of up to ``max_tiles`` tiles, in the order Llama 4's
    ``find_supported_resolutions`` lists them (grouped by aspect ratio, first seen first)."""
    by_ratio: dict[float, list[tuple[int, int]]] = {}
    for count in range(max_tiles, 0, -1):
        for rows in sorted(d for d in range(1, count + 1) if count % d == 0):
            by_ratio.setdefault(rows / (count // rows), []).append((rows, count // rows))
    return [grid for grids in by_ratio.values() for grid in grids]


def best_tile_grid(height: int, width: int, tile: int, max_tiles: int) -> tuple[int, int]:
    """Llama 4's ``get_best_fit``: the smallest upscale that fits, else the least downscale; ties
    go to the smaller canvas (the first of those, as ``argmin``)."""
    canvases = _supported_canvases(max_tiles)
    scales = [min(r * tile / height, c * tile / width) for r, c in canvases]
    up = [s for s in scales if s >= 1]
    chosen = min(up) if up else max(scales)
    candidates = [g for g, s in zip(canvases, scales) if s == chosen]
    return min(candidates, key=lambda g: g[0] * g[1])


def image_layout(tower: VisionTower, width: int, height: int) -> ImageLayout:
    """Patches, encoder sequences and prompt tokens of one ``width`` x ``height`` image."""
    if width <= 0 or height <= 0:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    p, m = tower.patch_size, tower.spatial_merge_size
    rule = tower.token_rule
    if rule is VisionTokenRule.SMART_RESIZE:
        assert tower.min_pixels is not None and tower.max_pixels is not None
        rh, rw = smart_resize(height, width, p * m, tower.min_pixels, tower.max_pixels)
        patches = (rh // p) * (rw // p)
        merged = patches // (m * m)
        return ImageLayout((rh, rw), patches, patches, 1, merged, 2)
    if rule is VisionTokenRule.FIXED:
        assert tower.image_size is not None and tower.tokens_per_image is not None
        side = tower.image_size
        patches = (side // p) ** 2
        tokens = tower.tokens_per_image
        return ImageLayout((side, side), patches, patches, 1, tokens, 2)
    if rule is VisionTokenRule.LONGEST_EDGE:
        assert tower.image_size is not None
        ratio = max(height / tower.image_size, width / tower.image_size)
        h, w = (math.floor(height / ratio), math.floor(width / ratio)) if ratio > 1 else (height, width)
        unit = p * m
        rows, cols = (h - 1) // unit + 1, (w - 1) // unit + 1
        patches = rows * cols * m * m
        merged = rows * cols
        return ImageLayout((rows * unit, cols * unit), patches, patches, 1, merged, rows)
    assert tower.image_size is not None and tower.max_tiles is not None and tower.pixel_shuffle_ratio is not None
    tile = tower.image_size
    grid = best_tile_grid(height, width, tile, tower.max_tiles)
    tiles = grid[0] * grid[1]
    sequences = tiles + 1 if tiles > 1 else 1
    per_tile = (tile // p) ** 2
    per_tile_tokens = int(per_tile * tower.pixel_shuffle_ratio**2)
    placeholders = sequences * per_tile_tokens
    # start + <|image|> + end; with tiles, a separator between columns and one after each row
    markers = 3 + (grid[0] * (grid[1] - 1) + grid[0] if tiles > 1 else 0)
    seq_tokens = per_tile + (1 if tower.class_token else 0)
    return ImageLayout((tile, tile), sequences * per_tile, seq_tokens, sequences, placeholders, markers, grid)


def _window_sizes(tower: VisionTower, rows: int, cols: int) -> list[int]:
    """Patches in each attention window of Qwen2.5-VL (``get_window_index``): windows of
    ``window_size / merge / patch`` merged tokens per side over the merged grid, edge windows cut."""
    m = tower.spatial_merge_size
    assert tower.window_size is not None
    side = max(tower.window_size // m // tower.patch_size, 1)
    mr, mc = rows // m, cols // m
    sizes = []
    for r in range(0, mr, side):
        for c in range(0, mc, side):
            sizes.append(min(side, mr - r) * min(side, mc - c) * m * m)
    return sizes


@dataclass(frozen=True, slots=True)
class EncoderFlops:
    """FLOPs of the vision encoder and projector for one image, by part."""

    patch_embed: float
    blocks: float
    attention: float
    projector: float

    @property
    def total(self) -> float:
        return self.patch_embed + self.blocks + self.attention + self.projector


def encoder_flops(tower: VisionTower, width: int, height: int) -> EncoderFlops:
    """Forward FLOPs the vision tower spends on one ``width`` x ``height`` image."""
    layout = image_layout(tower, width, height)
    n, seqs, h = layout.sequence_tokens, layout.sequences, tower.hidden_size
    blocks = 2.0 * tower.layer_matmul * n * seqs * tower.num_layers
    full = 4.0 * n * n * h * seqs
    if tower.attention is VisionAttention.WINDOWED:
        rows, cols = layout.resized[0] // tower.patch_size, layout.resized[1] // tower.patch_size
        windowed = 4.0 * h * sum(k * k for k in _window_sizes(tower, rows, cols))
        n_full = len(tower.full_attention_layers)
        attention = n_full * full + (tower.num_layers - n_full) * windowed
    else:
        attention = tower.num_layers * full
    return EncoderFlops(
        patch_embed=2.0 * tower.patch_matmul * layout.patches,
        blocks=blocks,
        attention=attention,
        projector=2.0 * tower.projector_matmul * layout.merged_tokens,
    )


# --- a request's images ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RequestImages:
    """What the images of one request (or training sample) add, for a model with a vision tower."""

    images: int
    layout: ImageLayout
    encoder: EncoderFlops

    @property
    def tokens(self) -> int:
        """Prompt tokens all the images add (placeholders and markers)."""
        return self.images * self.layout.prompt_tokens

    @property
    def encoder_flops(self) -> float:
        return self.images * self.encoder.total


def request_images(model: ModelArchitecture, scenario: Scenario) -> RequestImages | None:
    """The images a request of ``scenario`` carries into ``model`` (None: no images, or no tower)."""
    tower = model.vision_tower
    if tower is None or scenario.images_per_request <= 0:
        return None
    width, height = scenario.image_width, scenario.image_height
    return RequestImages(
        scenario.images_per_request, image_layout(tower, width, height), encoder_flops(tower, width, height)
    )


def describe_images(model: ModelArchitecture, scenario: Scenario, images: RequestImages) -> str:
    """One line: how the images became tokens, for the estimate's explanation."""
    tower = model.vision_tower
    assert tower is not None
    lay = images.layout
    how = {
        VisionTokenRule.SMART_RESIZE: f"resized to {lay.resized[1]}x{lay.resized[0]}, {lay.patches:,} patches "
        f"merged {tower.spatial_merge_size}x{tower.spatial_merge_size}",
        VisionTokenRule.FIXED: f"seen at {lay.resized[1]}x{lay.resized[0]} ({lay.patches:,} patches), "
        f"pooled to {lay.placeholders} tokens",
        VisionTokenRule.LONGEST_EDGE: f"resized to {lay.resized[1]}x{lay.resized[0]}, {lay.patches:,} patches "
        f"merged {tower.spatial_merge_size}x{tower.spatial_merge_size}, one break per row",
        VisionTokenRule.TILES: f"{lay.tiles[0]}x{lay.tiles[1]} tiles of {tower.image_size} px"
        + (" + a global tile" if lay.sequences > lay.tiles[0] * lay.tiles[1] else ""),
    }[tower.token_rule]
    head = (
        f"{images.images} image(s) of {scenario.image_width}x{scenario.image_height} x {lay.prompt_tokens:,} tokens "
        f"({how}; {lay.placeholders:,} image + {lay.markers} marker tokens) = {images.tokens:,} tokens join the "
    )
    total = scenario.seq_len + images.tokens
    if scenario.is_training:
        return head + (
            f"{scenario.seq_len:,}-token sample: {total:,} tokens per sequence in the language model's passes; "
            f"the {tower.kind} encoder's own training compute and activations are not counted"
        )
    return head + (
        f"{scenario.seq_len:,}-token prompt: {total:,} tokens per sequence in prefill, KV cache and context; "
        f"the {tower.kind} encoder adds {images.encoder_flops:.3g} FLOP per request"
    )
