"""Model architecture: everything about a network that sizing needs, and nothing about its weights.

A :class:`ModelArchitecture` is immutable and validated. Each field's description is shown as
the GUI tooltip and in the CLI help, so write them for a user, not for a developer.

The fields are rich enough that :func:`workbench.core.params.count_parameters` reproduces,
exactly, the parameter count Hugging Face transformers instantiates for the same config
(biases, norms with or without bias, q/k norms, routers, shared experts, poolers, ...).
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from workbench.core import limits
from workbench.core.dtypes import DType, WeightFormat

_FROZEN = ConfigDict(frozen=True, extra="forbid", use_enum_values=False, allow_inf_nan=False)


class ModelKind(str, Enum):
    DECODER = "decoder"
    ENCODER = "encoder"
    ENCODER_DECODER = "encoder-decoder"


class NormKind(str, Enum):
    LAYERNORM = "layernorm"
    RMSNORM = "rmsnorm"


class PositionEmbedding(str, Enum):
    ROPE = "rope"
    LEARNED = "learned"
    RELATIVE_BIAS = "relative-bias"
    ALIBI = "alibi"
    NONE = "none"


class Head(str, Enum):
    """Which output head the counted model carries, matching the transformers class."""

    CAUSAL_LM = "causal-lm"  # *ForCausalLM: LM head (possibly tied)
    SEQ2SEQ_LM = "seq2seq-lm"  # *ForConditionalGeneration (T5)
    MASKED_LM = "masked-lm"  # BertForMaskedLM: transform + tied decoder + bias
    BASE = "base"  # *Model: no head (BERT/ViT keep their pooler when ``pooler`` is set)


class MoEConfig(BaseModel):
    """Mixture-of-experts feed-forward layers."""

    model_config = _FROZEN

    num_experts: int = Field(gt=0, description="Routed experts in each MoE layer.")
    experts_per_token: int = Field(gt=0, description="Routed experts each token is sent to (top-k).")
    expert_intermediate_size: int = Field(gt=0, description="FFN inner size of one routed expert.")
    num_shared_experts: int = Field(
        0, ge=0, description="Experts every token passes through in addition to the routed ones."
    )
    shared_expert_intermediate_size: int | None = Field(
        None,
        gt=0,
        description="FFN inner size of the shared expert block (defaults to "
        "num_shared_experts x expert_intermediate_size).",
    )
    shared_expert_gate: bool = Field(
        False, description="A learned sigmoid gate scales the shared expert output (Qwen2-MoE)."
    )
    router_bias: bool = Field(
        False, description="The router carries a per-expert bias (DeepSeek-V3 score correction)."
    )
    dense_layers: tuple[int, ...] = Field(
        (),
        description="Indices of decoder layers that use a dense FFN instead of experts "
        "(DeepSeek-V3: the first 3).",
    )
    moe_layer_interval: int = Field(
        1, gt=0, description="Every n-th layer (that is not dense) is an MoE layer."
    )
    latent_size: int | None = Field(
        None,
        gt=0,
        description="Routed experts work in a latent of this width (Nemotron-3 latent MoE): the token is "
        "projected down to it before the experts and back up after; router and shared experts see the "
        "full hidden state.",
    )
    router_bias_parameter: bool = Field(
        False,
        description="The router bias is a trained parameter (ERNIE-4.5's moe_statics) rather than a "
        "buffer (DeepSeek-V3's score correction): it counts in the parameters.",
    )
    expert_weight_format: WeightFormat | None = Field(
        None,
        description="How the published checkpoint stores the routed experts' weight matrices when it "
        "differs from the rest of the model (gpt-oss: fp4 = MXFP4, 4.25 bits/weight); used when a "
        "scenario keeps the checkpoint's own weights.",
    )

    @model_validator(mode="after")
    def _check(self) -> MoEConfig:
        if self.experts_per_token > self.num_experts:
            raise ValueError(
                f"experts_per_token ({self.experts_per_token}) exceeds num_experts ({self.num_experts})"
            )
        return self

    @property
    def shared_intermediate(self) -> int:
        if self.shared_expert_intermediate_size is not None:
            return self.shared_expert_intermediate_size
        return self.num_shared_experts * self.expert_intermediate_size


class MLAConfig(BaseModel):
    """Multi-head latent attention (DeepSeek-V2/V3): K and V come from a low-rank latent."""

    model_config = _FROZEN

    q_lora_rank: int | None = Field(
        None, gt=0, description="Rank of the query down-projection (None: full-rank queries)."
    )
    kv_lora_rank: int = Field(gt=0, description="Rank of the compressed KV latent that is cached.")
    qk_rope_head_dim: int = Field(gt=0, description="Per-head dims that carry rotary position.")
    qk_nope_head_dim: int = Field(gt=0, description="Per-head query/key dims without rotary position.")
    v_head_dim: int = Field(gt=0, description="Per-head value dims.")

    @property
    def qk_head_dim(self) -> int:
        return self.qk_rope_head_dim + self.qk_nope_head_dim


class SlidingWindow(BaseModel):
    """Local attention over the last ``window`` tokens on some layers."""

    model_config = _FROZEN

    window: int = Field(gt=0, description="Tokens a sliding-window layer attends to.")
    layers: tuple[int, ...] | None = Field(
        None,
        description="Indices of layers that use the window (None: every layer).",
    )


class VisionConfig(BaseModel):
    """Patch embedding of a vision transformer (ViT)."""

    model_config = _FROZEN

    image_size: int = Field(gt=0, description="Input image side in pixels.")
    patch_size: int = Field(gt=0, description="Patch side in pixels.")
    num_channels: int = Field(3, gt=0, description="Input image channels.")
    cls_token: bool = Field(True, description="A learned [CLS] token is prepended.")

    @property
    def num_patches(self) -> int:
        return (self.image_size // self.patch_size) ** 2


class RecurrentKind(str, Enum):
    """Token mixers that keep a fixed-size state per sequence instead of a growing KV cache."""

    MAMBA = "mamba"  # Mamba-1 selective scan (Gu & Dao 2023; Jamba)
    MAMBA2 = "mamba2"  # Mamba-2 state-space duality (Dao & Gu 2024; Nemotron-H, Bamba, Falcon-H1, ...)
    GATED_DELTANET = "gated-deltanet"  # Gated DeltaNet linear attention (Yang et al. 2024; Qwen3-Next)
    KDA = "kda"  # Kimi Delta Attention (Kimi-Linear)
    SHORT_CONV = "short-conv"  # gated short convolution (LFM2)


class RecurrentMixer(BaseModel):
    """One recurrent token mixer (state-space or linear attention), as the family reader describes it.

    The reader knows each family's module layout; here it is reduced to what sizing needs. The
    parameters of one mixer are exactly ``sum(in x out for projections) + other_parameters``.
    The state a sequence keeps in one such layer does not grow with the context: a convolution
    window (``conv_state_elements``) and a recurrent state (``ssm_state_elements``: the SSM state
    of Mamba, the delta-rule memory of Gated DeltaNet / KDA).
    """

    model_config = _FROZEN

    kind: RecurrentKind = Field(description="Which recurrent mixer (Mamba-2, Gated DeltaNet, ...).")
    projections: tuple[tuple[int, int], ...] = Field(
        description="(in, out) features of each linear projection of one mixer (in/out projections, "
        "x/dt projections): what FLOPs, tensor parallelism and LoRA act on."
    )
    other_parameters: int = Field(
        0,
        ge=0,
        description="Parameters of one mixer besides the projection weights: convolution weights and "
        "biases, projection biases, dt bias, A, D, gated norms.",
    )
    heads: int = Field(gt=0, description="Heads of the recurrence (SSM heads / value heads).")
    head_dim: int = Field(gt=0, description="Value dims per head.")
    state_size: int = Field(
        ge=0,
        description="State dims per head (SSM d_state / key head dims); 0 for a mixer that keeps only "
        "a convolution window (LFM2's short convolution).",
    )
    groups: int = Field(1, gt=0, description="Groups of shared B/C (Mamba-2) or key heads (DeltaNet).")
    conv_channels: int = Field(0, ge=0, description="Channels of the causal depthwise convolution.")
    conv_kernel: int = Field(0, ge=0, description="Kernel width of the causal convolution.")
    chunk_size: int = Field(
        0, ge=0, description="Chunk length of the chunked scan kernel (0: a sequential scan)."
    )
    conv_state_elements: int = Field(
        ge=0, description="Convolution-window elements one sequence keeps per layer while generating."
    )
    ssm_state_elements: int = Field(
        ge=0, description="Recurrent-state elements one sequence keeps per layer while generating."
    )
    gated_norm: bool = Field(
        True,
        description="Mamba-2: the scan output passes a gated RMSNorm before out_proj; False: it is only "
        "multiplied by SiLU(gate) (Falcon-H1 without mamba_rms_norm).",
    )
    ssm_state_fp32: bool = Field(
        False,
        description="The recurrent state is kept in fp32 whatever the model dtype (as the family's "
        "cache allocates it).",
    )

    @property
    def projection_parameters(self) -> int:
        return sum(i * o for i, o in self.projections)

    @property
    def parameters(self) -> int:
        return self.projection_parameters + self.other_parameters


class LayerMixer(str, Enum):
    """What mixes tokens in one block."""

    ATTENTION = "attention"  # softmax attention (sliding when the layer is in sliding_window.layers)
    RECURRENT = "recurrent"  # the model's recurrent mixer
    PARALLEL = "attention+recurrent"  # both, side by side on the same input (Falcon-H1)
    NONE = "none"  # no token mixer (an FFN-only block)


class SharedBlocks(BaseModel):
    """Attention + FFN blocks whose weights several layers share (Zamba2).

    Each layer in ``layers`` runs one of ``count`` shared blocks (round robin) before its own
    recurrent mixer: attention over ``input_width`` features (Zamba2: the hidden state joined to
    the original token embeddings, 2 x hidden), then the FFN. The shared weights are stored once
    per block; each such layer adds its own low-rank adapters (rank ``adapter_rank``) on the FFN's
    gate/up projection and, with ``attention_adapters``, on q, k and v, and, with
    ``layer_projection``, a hidden x hidden projection of the block's output.
    """

    model_config = _FROZEN

    layers: tuple[int, ...] = Field(min_length=1, description="Layers that run a shared block.")
    count: int = Field(gt=0, description="Distinct shared blocks, used in turn by those layers.")
    input_width: int = Field(gt=0, description="Features the shared attention reads (q, k, v input).")
    adapter_rank: int = Field(0, ge=0, description="Rank of each layer's own adapters (0: none).")
    attention_adapters: bool = Field(
        False, description="Each layer adds its own low-rank adapters to the shared q, k and v projections."
    )
    layer_projection: bool = Field(
        False,
        description="Each layer projects the shared block's output with its own hidden x hidden linear.",
    )

    @property
    def distinct(self) -> int:
        """Shared blocks actually built: never more than the layers that use them."""
        return min(self.count, len(self.layers))


class AttentionIndexer(BaseModel):
    """DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2): scores the cached tokens so
    attention reads only the top-k of them; it caches one key of ``head_dim`` per token and layer."""

    model_config = _FROZEN

    heads: int = Field(gt=0, description="Indexer heads.")
    head_dim: int = Field(gt=0, description="Dims of an indexer query/key head.")
    top_k: int = Field(gt=0, description="Tokens each query attends to after indexing.")


class VisionTokenRule(str, Enum):
    """How an image becomes prompt tokens (each model's own image processor)."""

    SMART_RESIZE = "smart-resize"  # Qwen2-VL family: resize to multiples of patch x merge within a pixel budget
    FIXED = "fixed"  # Gemma 3: a fixed number of soft tokens per image
    LONGEST_EDGE = "longest-edge"  # Pixtral: fit the longest edge, one break token per row
    TILES = "tiles"  # Llama 4: tiles of the tile size plus a global tile


class VisionAttention(str, Enum):
    FULL = "full"  # every patch attends to every patch of its image (or tile)
    WINDOWED = "windowed"  # windows of window_size pixels, full attention on full_attention_layers


class VisionTower(BaseModel):
    """The vision encoder (and its projector into the language model) of a vision-language model.

    The family reader counts ``parameters`` and ``projector_parameters`` exactly from the config
    (as transformers builds the tower); the rest says how an image becomes patches, encoder work and
    prompt tokens (:mod:`workbench.core.vision`).
    """

    model_config = _FROZEN

    kind: str = Field(min_length=1, description="Which vision encoder (qwen2.5-vl, qwen3-vl, siglip, pixtral, llama4).")
    parameters: int = Field(ge=0, description="Parameters of the vision encoder itself.")
    projector_parameters: int = Field(
        0, ge=0, description="Parameters of the merger / projector that maps image features into the language model."
    )
    hidden_size: int = Field(gt=0, description="Width of the vision encoder.")
    num_layers: int = Field(gt=0, description="Blocks of the vision encoder.")
    num_heads: int = Field(gt=0, description="Attention heads of the vision encoder.")
    intermediate_size: int = Field(gt=0, description="FFN inner size of a vision block.")
    gated_mlp: bool = Field(False, description="The vision FFN is gated (three matrices) rather than plain (two).")
    num_channels: int = Field(3, gt=0, description="Input image channels.")
    patch_size: int = Field(gt=0, description="Patch side in pixels.")
    temporal_patch_size: int = Field(
        1, gt=0, description="Frames one patch spans (Qwen-VL: a still image is repeated to fill them)."
    )
    spatial_merge_size: int = Field(
        1, gt=0, description="Patches merged per side into one image token (2: four patches per token)."
    )
    image_size: int | None = Field(
        None, gt=0, description="Side the encoder takes an image (SigLIP), its longest edge (Pixtral) or a tile (Llama 4)."
    )
    token_rule: VisionTokenRule = Field(description="How an image's resolution becomes prompt tokens.")
    min_pixels: int | None = Field(None, gt=0, description="Smallest resized image area (smart-resize).")
    max_pixels: int | None = Field(None, gt=0, description="Largest resized image area (smart-resize).")
    tokens_per_image: int | None = Field(None, gt=0, description="Image tokens per image (fixed rule).")
    max_tiles: int | None = Field(None, gt=0, description="Most tiles an image is cut into (tiles rule).")
    pixel_shuffle_ratio: float | None = Field(
        None, gt=0, le=1, description="Pixel-shuffle ratio per side after the encoder (Llama 4: 0.5 keeps 1 token in 4)."
    )
    class_token: bool = Field(False, description="A learned class token joins each encoder sequence (Llama 4).")
    attention: VisionAttention = Field(VisionAttention.FULL, description="Full or windowed attention over the patches.")
    window_size: int | None = Field(None, gt=0, description="Attention window side in pixels (windowed attention).")
    full_attention_layers: tuple[int, ...] = Field(
        (), description="Blocks that attend over the whole image although the encoder is windowed."
    )
    projector_matmul: int = Field(
        0, ge=0, description="Matrix weights each merged image token passes through after the encoder "
        "(merger, deep-stack mergers, adapter, projector)."
    )

    @model_validator(mode="after")
    def _check(self) -> VisionTower:
        need = {
            VisionTokenRule.SMART_RESIZE: ("min_pixels", "max_pixels"),
            VisionTokenRule.FIXED: ("tokens_per_image", "image_size"),
            VisionTokenRule.LONGEST_EDGE: ("image_size",),
            VisionTokenRule.TILES: ("image_size", "max_tiles", "pixel_shuffle_ratio"),
        }[self.token_rule]
        missing = [k for k in need if getattr(self, k) is None]
        if missing:
            raise ValueError(f"vision tower: the {self.token_rule.value} rule needs {', '.join(missing)}")
        if self.attention is VisionAttention.WINDOWED and self.window_size is None:
            raise ValueError("vision tower: windowed attention needs window_size")
        bad = [i for i in self.full_attention_layers if not 0 <= i < self.num_layers]
        if bad:
            raise ValueError(f"vision tower: full_attention_layers {bad} outside 0..{self.num_layers - 1}")
        return self

    @property
    def total_parameters(self) -> int:
        return self.parameters + self.projector_parameters

    @property
    def layer_matmul(self) -> int:
        """Matrix weights one patch passes through in one block (q, k, v, o and the FFN)."""
        h = self.hidden_size
        return 4 * h * h + (3 if self.gated_mlp else 2) * h * self.intermediate_size

    @property
    def patch_matmul(self) -> int:
        """Weights of the patch embedding (a convolution or linear over one patch's pixels)."""
        return self.num_channels * self.temporal_patch_size * self.patch_size**2 * self.hidden_size


class EncoderDecoderConfig(BaseModel):
    """The decoder stack of an encoder-decoder model (T5)."""

    model_config = _FROZEN

    num_decoder_layers: int = Field(gt=0, description="Layers in the decoder stack.")
    relative_attention_num_buckets: int = Field(
        32, ge=0, description="Buckets of the learned relative position bias (T5)."
    )


class ModelArchitecture(BaseModel):
    """A transformer architecture, validated. Sizes are whole-model, not per GPU."""

    model_config = _FROZEN

    name: str = Field(
        min_length=1, max_length=limits.MAX_NAME_CHARS, description="Display name, e.g. 'Llama-3.1-8B'."
    )
    family: str = Field("custom", description="Model family, e.g. 'llama', 'qwen', 'gpt2'.")
    kind: ModelKind = Field(ModelKind.DECODER, description="Decoder-only, encoder-only or encoder-decoder.")
    hf_model_type: str | None = Field(None, description="The config's `model_type` when imported.")
    head: Head = Field(Head.CAUSAL_LM, description="Which output head the model carries.")

    num_layers: int = Field(gt=0, description="Transformer blocks (the encoder's, for encoder-decoder).")
    hidden_size: int = Field(gt=0, description="Model width d_model.")
    num_attention_heads: int = Field(gt=0, description="Query heads per attention layer.")
    num_kv_heads: int = Field(
        gt=0,
        description="Key/value heads: equal to attention heads for MHA, 1 for MQA, in between for GQA.",
    )
    head_dim: int = Field(gt=0, description="Dims per attention head (often hidden / heads, not always).")
    intermediate_size: int = Field(gt=0, description="FFN inner size of a dense layer.")
    gated_mlp: bool = Field(True, description="Gated FFN (SwiGLU/GeGLU: three matrices) or plain (two).")
    activation: str = Field("silu", description="FFN activation function.")
    vocab_size: int = Field(gt=0, description="Token vocabulary size (rows of the embedding).")
    tie_word_embeddings: bool = Field(False, description="The LM head shares the input embedding matrix.")

    norm_kind: NormKind = Field(NormKind.RMSNORM, description="LayerNorm or RMSNorm.")
    norm_bias: bool = Field(False, description="Norms carry a bias (LayerNorm usually does).")
    norms_per_layer: int = Field(
        2, ge=0, description="Norm modules per block (2 usual; 1 for Falcon-7B's parallel block; 4 Gemma 2/3)."
    )
    qk_norm: bool = Field(False, description="Per-head RMSNorm on queries and keys (Qwen3, Gemma 3).")
    qk_norm_full_width: bool = Field(
        False,
        description="The query/key norms span all heads (OLMo 2, OLMoE: q over heads x head_dim, k over "
        "kv_heads x head_dim) instead of one head.",
    )
    attention_sinks: bool = Field(
        False, description="A learned sink logit per head joins every softmax (gpt-oss)."
    )
    attention_output_gate: bool = Field(
        False,
        description="The query projection also produces a sigmoid gate on the attention output "
        "(Qwen3-Next): q_proj is twice as wide.",
    )
    final_norm: bool = Field(True, description="A norm after the last block.")
    embedding_norm: bool = Field(False, description="A norm right after the embeddings (BERT).")
    attention_bias: bool = Field(False, description="Q, K and V projections carry biases.")
    attention_out_bias: bool = Field(False, description="The attention output projection carries a bias.")
    mlp_bias: bool = Field(False, description="FFN projections carry biases.")
    lm_head_bias: bool = Field(False, description="The LM head / MLM decoder carries a bias.")
    parallel_attention_mlp: bool = Field(
        False, description="Attention and FFN read the same input in parallel (GPT-J, Falcon)."
    )

    attention_dropout: float = Field(
        0.0, ge=0, lt=1, description="Dropout probability on the attention probabilities (training)."
    )
    hidden_dropout: float = Field(
        0.0, ge=0, lt=1, description="Dropout probability on each sub-block's output before the residual add."
    )
    embedding_dropout: float = Field(0.0, ge=0, lt=1, description="Dropout probability on the embeddings.")
    attention_logit_softcap: float | None = Field(
        None, gt=0, description="Attention scores pass through cap x tanh(score / cap) (Gemma 2)."
    )
    final_logit_softcap: float | None = Field(
        None, gt=0, description="Output logits pass through cap x tanh(logit / cap) (Gemma 2)."
    )

    position_embedding: PositionEmbedding = Field(PositionEmbedding.ROPE, description="Position encoding.")
    max_position_embeddings: int = Field(
        2048, gt=0, description="Longest context the model was built for (rows of a learned table)."
    )
    rope_theta: float | None = Field(None, gt=0, description="RoPE base frequency.")
    rope_scaling: dict[str, object] | None = Field(None, description="RoPE scaling as in the config.")
    type_vocab_size: int = Field(0, ge=0, description="Token-type (segment) embeddings (BERT: 2).")
    pooler: bool = Field(False, description="A dense pooler on the first token (BERT, ViT base models).")

    moe: MoEConfig | None = Field(None, description="Mixture-of-experts layers, if any.")
    mla: MLAConfig | None = Field(None, description="Multi-head latent attention, if used.")
    sliding_window: SlidingWindow | None = Field(None, description="Sliding-window attention, if used.")
    vision: VisionConfig | None = Field(None, description="Patch embedding, for vision transformers.")
    vision_tower: VisionTower | None = Field(
        None, description="The vision encoder and projector of a vision-language model (images become prompt tokens)."
    )
    recurrent: RecurrentMixer | None = Field(
        None, description="The recurrent (state-space / linear-attention) mixer of hybrid models."
    )
    layer_mixers: tuple[LayerMixer, ...] | None = Field(
        None,
        description="Token mixer of each block (None: attention in every block). Recurrent blocks keep "
        "a fixed state per sequence instead of a KV cache.",
    )
    ffn_free_layers: tuple[int, ...] = Field(
        (), description="Indices of blocks without a feed-forward part (Mamba-2, Nemotron-H mixer blocks)."
    )
    single_part_norms: int = Field(
        1, ge=0, description="Norm modules of a block that holds only a mixer or only an FFN."
    )
    indexer: AttentionIndexer | None = Field(
        None, description="Sparse-attention indexer of each attention block (DeepSeek-V3.2)."
    )
    shared_blocks: SharedBlocks | None = Field(
        None,
        description="Attention + FFN blocks shared by several layers (Zamba2); every attention of such "
        "a model belongs to them.",
    )
    approximate: str | None = Field(
        None,
        description="Why this architecture is only an approximation (an unknown config read as a "
        "Llama-style block on request); every estimate made from it says so.",
    )
    encoder_decoder: EncoderDecoderConfig | None = Field(
        None, description="Decoder stack, for encoder-decoder models."
    )

    torch_dtype: DType | None = Field(None, description="Dtype the checkpoint was published in.")
    extra_parameters: int = Field(
        0,
        ge=0,
        description="Parameters of parts the architecture fields do not describe, counted from a "
        "checkpoint (e.g. an audio tower the importer has no reader for); they are stored and moved like weights.",
    )
    source: str | None = Field(None, description="Where this architecture came from (file or URL).")

    @model_validator(mode="after")
    def _check(self) -> ModelArchitecture:
        if self.num_attention_heads % self.num_kv_heads:
            raise ValueError(
                f"num_attention_heads ({self.num_attention_heads}) must be divisible by "
                f"num_kv_heads ({self.num_kv_heads})"
            )
        if self.kind is ModelKind.ENCODER_DECODER and self.encoder_decoder is None:
            raise ValueError("encoder_decoder: an encoder-decoder model needs its decoder stack")
        if self.kind is not ModelKind.ENCODER_DECODER and self.encoder_decoder is not None:
            raise ValueError("encoder_decoder: only an encoder-decoder model has a decoder stack")
        if self.moe is not None:
            bad = [i for i in self.moe.dense_layers if not 0 <= i < self.num_layers]
            if bad:
                raise ValueError(f"moe.dense_layers: layer indices {bad} outside 0..{self.num_layers - 1}")
        if self.layer_mixers is not None:
            if len(self.layer_mixers) != self.num_layers:
                raise ValueError(
                    f"layer_mixers: {len(self.layer_mixers)} entries for {self.num_layers} layers"
                )
            needs_recurrent = any(
                m in (LayerMixer.RECURRENT, LayerMixer.PARALLEL) for m in self.layer_mixers
            )
            if needs_recurrent and self.recurrent is None:
                raise ValueError("layer_mixers: recurrent layers need the recurrent mixer (recurrent)")
        if self.shared_blocks is not None:
            bad = [i for i in self.shared_blocks.layers if not 0 <= i < self.num_layers]
            if bad:
                raise ValueError(
                    f"shared_blocks.layers: layer indices {bad} outside 0..{self.num_layers - 1}"
                )
            plain = [
                i
                for i in self.shared_blocks.layers
                if 0 <= i < self.num_layers and not (self.has_attention(i) and self.has_ffn(i))
            ]
            if plain:
                raise ValueError(f"shared_blocks.layers: layers {plain} need attention and an FFN")
        bad = [i for i in self.ffn_free_layers if not 0 <= i < self.num_layers]
        if bad:
            raise ValueError(f"ffn_free_layers: layer indices {bad} outside 0..{self.num_layers - 1}")
        if self.sliding_window is not None and self.sliding_window.layers is not None:
            bad = [i for i in self.sliding_window.layers if not 0 <= i < self.num_layers]
            if bad:
                raise ValueError(
                    f"sliding_window.layers: layer indices {bad} outside 0..{self.num_layers - 1}"
                )
        return self

    # --- derived shapes used everywhere -------------------------------------------------------

    @property
    def gqa_group(self) -> int:
        """Query heads per KV head."""
        return self.num_attention_heads // self.num_kv_heads

    @property
    def attention_kind(self) -> Literal["mha", "gqa", "mqa", "mla"]:
        if self.mla is not None:
            return "mla"
        if self.num_kv_heads == self.num_attention_heads:
            return "mha"
        if self.num_kv_heads == 1:
            return "mqa"
        return "gqa"

    @property
    def total_layers(self) -> int:
        """All transformer blocks, decoder stack included for encoder-decoder models."""
        extra = self.encoder_decoder.num_decoder_layers if self.encoder_decoder else 0
        return self.num_layers + extra

    def mixer(self, index: int) -> LayerMixer:
        """Token mixer of block ``index`` (decoder blocks of encoder-decoder models: attention)."""
        if self.layer_mixers is None or index >= self.num_layers:
            return LayerMixer.ATTENTION
        return self.layer_mixers[index]

    def has_attention(self, index: int) -> bool:
        return self.mixer(index) in (LayerMixer.ATTENTION, LayerMixer.PARALLEL)

    def has_recurrent(self, index: int) -> bool:
        return self.mixer(index) in (LayerMixer.RECURRENT, LayerMixer.PARALLEL)

    def has_ffn(self, index: int) -> bool:
        return index not in self.ffn_free_layers

    @property
    def attention_layers(self) -> int:
        """Blocks with softmax attention (the ones that keep a KV cache when decoding)."""
        if self.layer_mixers is None:
            return self.total_layers
        return sum(self.has_attention(i) for i in range(self.total_layers))

    @property
    def recurrent_layers(self) -> int:
        if self.layer_mixers is None:
            return 0
        return sum(self.has_recurrent(i) for i in range(self.num_layers))

    @property
    def is_hybrid(self) -> bool:
        """Some blocks are not plain attention + FFN blocks."""
        return self.layer_mixers is not None or bool(self.ffn_free_layers)

    def is_moe_layer(self, index: int) -> bool:
        if self.moe is None or index in self.moe.dense_layers or index in self.ffn_free_layers:
            return False
        return (index + 1) % self.moe.moe_layer_interval == 0

    def uses_sliding_window(self, index: int) -> bool:
        if self.sliding_window is None or not self.has_attention(index):
            return False
        return self.sliding_window.layers is None or index in self.sliding_window.layers
