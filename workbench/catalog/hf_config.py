"""Import a Hugging Face ``config.json`` as a :class:`~workbench.core.model.ModelArchitecture`.

The importer knows, for each supported ``model_type``, which keys transformers reads, the
defaults its config class falls back to when a key is absent (real configs often leave out
``tie_word_embeddings``, ``num_key_value_heads`` or, for Gemma 3, nearly everything), and which
transformers class the resulting parameter count corresponds to:

=====================================================  ==========================================
``model_type``                                         counted as (transformers class)
=====================================================  ==========================================
llama, mistral, ministral, mixtral, qwen2, qwen2_moe,  ``AutoModelForCausalLM`` (``*ForCausalLM``)
qwen3, qwen3_moe, gemma, gemma2, gemma3_text, phi,
phi3, starcoder2, granite, deepseek_v3, falcon, gpt2
gemma3 (text + SigLIP vision)                          ``Gemma3ForConditionalGeneration``
llama4, mistral3, other ``text_config`` wrappers       the text model's ``*ForCausalLM`` (towers
                                                       other than text are not counted; a note
                                                       says so)
t5, mt5                                                ``T5ForConditionalGeneration`` /
                                                       ``MT5ForConditionalGeneration``
bert, roberta, xlm-roberta                             ``BertModel`` / ``RobertaModel`` /
                                                       ``XLMRobertaModel`` (with pooler)
vit                                                    ``ViTModel`` (with pooler)
=====================================================  ==========================================

The gemma3 count includes its SigLIP tower and projector, counted exactly; for other wrappers the
towers are left at ``extra_parameters = 0`` with a note, and :func:`import_hf_path` fills them in
from the folder's safetensors headers when the weights are there.

Two places where the count follows the checkpoint rather than ``from_config``:

* T5/mT5: transformers 5 forces ``tie_word_embeddings = True`` on their configs, yet T5 v1.1 and
  Flan-T5 checkpoints store ``lm_head`` separately and ``from_pretrained`` leaves it untied; the
  config's own ``tie_word_embeddings: false`` is kept.
* Wrappers: transformers ties by the wrapper's flag (its class default when absent); an explicit
  flag in ``text_config`` is preferred to that class default.

An unknown ``model_type`` is read with the generic keys (``num_hidden_layers``, ``hidden_size``,
``num_attention_heads``, ``intermediate_size``, ``vocab_size``) as a Llama-style block, with a
note. A size key absent from a known type's config takes the config class default, as in
transformers, with a note. Every failure raises :class:`~workbench.core.errors.ModelImportError`
with one line naming the file and the key.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from workbench.catalog.safe_read import MAX_CONFIG_BYTES, check_counts, inside_folder, load_json_object
from workbench.catalog.safetensors_header import INDEX_NAME, find_safetensors, read_safetensors_folder
from workbench.core.dtypes import DType
from workbench.core.errors import ModelImportError, describe_validation_error
from workbench.core.model import (
    EncoderDecoderConfig,
    Head,
    MLAConfig,
    ModelArchitecture,
    ModelKind,
    MoEConfig,
    NormKind,
    PositionEmbedding,
    SlidingWindow,
    VisionConfig,
)
from workbench.core.params import count_parameters


class ModelImportWarning(UserWarning):
    """Something the importer could not represent exactly (the note says what)."""


@dataclass(frozen=True)
class HFImport:
    """An imported architecture with what the user should know about it."""

    architecture: ModelArchitecture
    model_type: str
    #: Name of the transformers class whose ``parameters()`` the count reproduces (None: unknown type).
    reference_class: str | None
    #: True when that class is built from ``text_config`` alone (other towers not counted).
    reference_from_text_config: bool = False
    notes: tuple[str, ...] = field(default=())


_MISSING = object()

# Defaults of the transformers config classes (transformers 5.x) for the keys we read. The
# validation suite checks this table against the installed transformers.
TYPE_DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
              "num_attention_heads": 32, "max_position_embeddings": 2048, "tie_word_embeddings": False,
              "attention_bias": False, "mlp_bias": False, "hidden_act": "silu"},
    "granite": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
                "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048,
                "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False,
                "hidden_act": "silu"},
    "mistral": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
                "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                "max_position_embeddings": 131072, "tie_word_embeddings": False, "hidden_act": "silu",
                "sliding_window": 4096},
    "ministral": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
                  "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                  "max_position_embeddings": 131072, "tie_word_embeddings": False, "hidden_act": "silu",
                  "sliding_window": 4096},
    "mixtral": {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
                "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                "max_position_embeddings": 131072, "tie_word_embeddings": False, "hidden_act": "silu",
                "sliding_window": None, "num_local_experts": 8, "num_experts_per_tok": 2},
    "qwen2": {"vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 22016,
              "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 32768,
              "tie_word_embeddings": False, "hidden_act": "silu", "use_sliding_window": False,
              "sliding_window": 4096, "max_window_layers": 28},
    "qwen2_moe": {"vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 5632,
                  "num_hidden_layers": 24, "num_attention_heads": 16, "max_position_embeddings": 32768,
                  "tie_word_embeddings": False, "hidden_act": "silu", "use_sliding_window": False,
                  "sliding_window": 4096, "max_window_layers": 28, "qkv_bias": True, "num_experts": 60,
                  "num_experts_per_tok": 4, "moe_intermediate_size": 1408,
                  "shared_expert_intermediate_size": 5632, "decoder_sparse_step": 1},
    "qwen3": {"vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 22016,
              "num_hidden_layers": 32, "num_attention_heads": 32, "head_dim": 128,
              "max_position_embeddings": 32768, "tie_word_embeddings": False, "attention_bias": False,
              "hidden_act": "silu", "use_sliding_window": False, "sliding_window": 4096,
              "max_window_layers": 28},
    "qwen3_moe": {"vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 6144,
                  "num_hidden_layers": 24, "num_attention_heads": 32, "num_key_value_heads": 4,
                  "max_position_embeddings": 32768, "tie_word_embeddings": False, "attention_bias": False,
                  "hidden_act": "silu", "use_sliding_window": False, "sliding_window": 4096,
                  "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768,
                  "decoder_sparse_step": 1},
    "gemma": {"vocab_size": 256000, "hidden_size": 3072, "intermediate_size": 24576,
              "num_hidden_layers": 28, "num_attention_heads": 16, "head_dim": 256,
              "max_position_embeddings": 8192, "tie_word_embeddings": True, "attention_bias": False,
              "hidden_act": "gelu_pytorch_tanh"},
    "gemma2": {"vocab_size": 256000, "hidden_size": 2304, "intermediate_size": 9216,
               "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
               "max_position_embeddings": 8192, "tie_word_embeddings": True, "attention_bias": False,
               "hidden_activation": "gelu_pytorch_tanh", "sliding_window": 4096},
    "gemma3_text": {"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
                    "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
                    "head_dim": 256, "max_position_embeddings": 131072, "tie_word_embeddings": True,
                    "attention_bias": False, "hidden_activation": "gelu_pytorch_tanh",
                    "sliding_window": 4096},
    "phi": {"vocab_size": 51200, "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 24,
            "num_attention_heads": 32, "max_position_embeddings": 2048, "tie_word_embeddings": False,
            "hidden_act": "gelu_new", "qk_layernorm": False},
    "phi3": {"vocab_size": 32064, "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 32,
             "num_attention_heads": 32, "max_position_embeddings": 4096, "tie_word_embeddings": False,
             "hidden_act": "silu", "sliding_window": None},
    "starcoder2": {"vocab_size": 49152, "hidden_size": 3072, "intermediate_size": 12288,
                   "num_hidden_layers": 30, "num_attention_heads": 24, "num_key_value_heads": 2,
                   "max_position_embeddings": 4096, "tie_word_embeddings": True,
                   "hidden_act": "gelu_pytorch_tanh", "sliding_window": None, "use_bias": True},
    "deepseek_v3": {"vocab_size": 129280, "hidden_size": 7168, "intermediate_size": 18432,
                    "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
                    "max_position_embeddings": 4096, "tie_word_embeddings": False, "attention_bias": False,
                    "hidden_act": "silu", "n_routed_experts": 256, "n_shared_experts": 1,
                    "num_experts_per_tok": 8, "moe_intermediate_size": 2048, "first_k_dense_replace": 3,
                    "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                    "qk_nope_head_dim": 128, "v_head_dim": 128},
    "llama4_text": {"vocab_size": 202048, "hidden_size": 5120, "intermediate_size": 8192,
                    "intermediate_size_mlp": 16384, "num_hidden_layers": 48, "num_attention_heads": 40,
                    "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 131072,
                    "tie_word_embeddings": False, "attention_bias": False, "hidden_act": "silu",
                    "num_local_experts": 16, "num_experts_per_tok": 1, "interleave_moe_layer_step": 1},
    "falcon": {"vocab_size": 65024, "hidden_size": 4544, "num_hidden_layers": 32, "num_attention_heads": 71,
               "max_position_embeddings": 2048, "tie_word_embeddings": True, "multi_query": True,
               "new_decoder_architecture": False, "parallel_attn": True, "bias": False, "alibi": False,
               "num_ln_in_parallel_attn": None},
    "gpt_neox": {"vocab_size": 50432, "hidden_size": 6144, "num_hidden_layers": 44, "num_attention_heads": 64,
                 "intermediate_size": 24576, "hidden_act": "gelu", "max_position_embeddings": 2048,
                 "use_parallel_residual": True, "attention_bias": True, "tie_word_embeddings": False},
    "opt": {"vocab_size": 50272, "hidden_size": 768, "num_hidden_layers": 12, "ffn_dim": 3072,
            "num_attention_heads": 12, "max_position_embeddings": 2048, "do_layer_norm_before": True,
            "_remove_final_layer_norm": False, "activation_function": "relu",
            "layer_norm_elementwise_affine": True, "enable_bias": True, "tie_word_embeddings": True},
    "gpt2": {"vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12,
             "n_inner": None, "activation_function": "gelu_new", "tie_word_embeddings": True},
    "bert": {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
             "intermediate_size": 3072, "hidden_act": "gelu", "max_position_embeddings": 512,
             "type_vocab_size": 2, "tie_word_embeddings": True},
    "roberta": {"vocab_size": 50265, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                "intermediate_size": 3072, "hidden_act": "gelu", "max_position_embeddings": 512,
                "type_vocab_size": 2, "tie_word_embeddings": True},
    "xlm-roberta": {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12,
                    "num_attention_heads": 12, "intermediate_size": 3072, "hidden_act": "gelu",
                    "max_position_embeddings": 512, "type_vocab_size": 2, "tie_word_embeddings": True},
    "t5": {"vocab_size": 32128, "d_model": 512, "d_kv": 64, "d_ff": 2048, "num_layers": 6, "num_heads": 8,
           "relative_attention_num_buckets": 32, "feed_forward_proj": "relu", "tie_word_embeddings": True},
    "mt5": {"vocab_size": 250112, "d_model": 512, "d_kv": 64, "d_ff": 1024, "num_layers": 8, "num_heads": 6,
            "relative_attention_num_buckets": 32, "feed_forward_proj": "gated-gelu",
            "tie_word_embeddings": True},
    "vit": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
            "intermediate_size": 3072, "hidden_act": "gelu", "image_size": 224, "patch_size": 16,
            "num_channels": 3, "qkv_bias": True},
    "siglip_vision_model": {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
                            "num_attention_heads": 12, "num_channels": 3, "image_size": 224,
                            "patch_size": 16, "vision_use_head": True},
}
# Keys that set a model's size: taking one from the defaults above is worth a note.
_SIZE_KEYS = frozenset({
    "num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
    "intermediate_size", "intermediate_size_mlp", "vocab_size", "num_experts", "num_local_experts",
    "n_routed_experts", "n_shared_experts", "num_experts_per_tok", "moe_intermediate_size",
    "shared_expert_intermediate_size", "first_k_dense_replace", "q_lora_rank", "kv_lora_rank",
    "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "n_layer", "n_embd", "n_head", "d_model", "d_kv",
    "d_ff", "num_layers", "num_heads", "image_size", "patch_size",
})
# Wrapper (multimodal) types: the tie flag that counts is the wrapper's own.
WRAPPER_TIE_DEFAULTS: dict[str, bool] = {"gemma3": True, "llama4": False, "mistral3": True}

_REFERENCE_CLASS: dict[str, str] = {
    "llama": "LlamaForCausalLM", "granite": "GraniteForCausalLM", "mistral": "MistralForCausalLM",
    "ministral": "MinistralForCausalLM", "mixtral": "MixtralForCausalLM", "qwen2": "Qwen2ForCausalLM",
    "qwen2_moe": "Qwen2MoeForCausalLM", "qwen3": "Qwen3ForCausalLM", "qwen3_moe": "Qwen3MoeForCausalLM",
    "gemma": "GemmaForCausalLM", "gemma2": "Gemma2ForCausalLM", "gemma3_text": "Gemma3ForCausalLM",
    "gemma3": "Gemma3ForConditionalGeneration", "phi": "PhiForCausalLM", "phi3": "Phi3ForCausalLM",
    "starcoder2": "Starcoder2ForCausalLM", "deepseek_v3": "DeepseekV3ForCausalLM",
    "llama4_text": "Llama4ForCausalLM", "falcon": "FalconForCausalLM", "gpt2": "GPT2LMHeadModel",
    "gpt_neox": "GPTNeoXForCausalLM", "opt": "OPTForCausalLM",
    "bert": "BertModel", "roberta": "RobertaModel", "xlm-roberta": "XLMRobertaModel",
    "t5": "T5ForConditionalGeneration", "mt5": "MT5ForConditionalGeneration", "vit": "ViTModel",
}

_DTYPES = {
    "float32": DType.FP32, "float": DType.FP32, "fp32": DType.FP32,
    "bfloat16": DType.BF16, "bf16": DType.BF16,
    "float16": DType.FP16, "half": DType.FP16, "fp16": DType.FP16,
    "float64": DType.FP64,
}


class _Cfg:
    """Typed, error-reporting access to one (possibly nested) config dict."""

    def __init__(self, data: Mapping[str, Any], where: str, model_type: str, prefix: str = "") -> None:
        self.data = data
        self.where = where
        self.prefix = prefix
        self.model_type = model_type
        self.defaults = TYPE_DEFAULTS.get(model_type, {})
        self.defaulted: dict[str, Any] = {}

    def fail(self, key: str, problem: str) -> ModelImportError:
        return ModelImportError(f"{self.where}: '{self.prefix}{key}' {problem}")

    def raw(self, *keys: str, default: Any = _MISSING) -> tuple[str, Any]:
        """First non-null value among ``keys``; else the config class default (only for absent
        keys: an explicit ``null`` means "computed", as it does to transformers); else ``default``."""
        for key in keys:
            if self.data.get(key) is not None:
                return key, self.data[key]
        if not any(key in self.data for key in keys):
            for key in keys:
                if self.defaults.get(key) is not None:
                    if key in _SIZE_KEYS:
                        self.defaulted[self.prefix + key] = self.defaults[key]
                    return key, self.defaults[key]
        if default is _MISSING:
            names = "' / '".join(self.prefix + k for k in keys)
            raise ModelImportError(f"{self.where}: missing required key '{names}'")
        return keys[0], default

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def integer(self, *keys: str, default: Any = _MISSING, minimum: int = 1) -> int:
        key, value = self.raw(*keys, default=default)
        if value is None:
            return value  # type: ignore[return-value]  # only when the caller's default is None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"must be an integer, got {value!r}")
        if value < minimum:
            raise self.fail(key, f"must be at least {minimum}, got {value}")
        return value

    def opt_integer(self, *keys: str, minimum: int = 1) -> int | None:
        return self.integer(*keys, default=None, minimum=minimum)

    def flag(self, key: str, default: bool = False) -> bool:
        key, value = self.raw(key, default=default)
        if not isinstance(value, bool):
            raise self.fail(key, f"must be true or false, got {value!r}")
        return value

    def text(self, *keys: str, default: str | None = None) -> str | None:
        key, value = self.raw(*keys, default=default)
        if value is not None and not isinstance(value, str):
            raise self.fail(key, f"must be a string, got {value!r}")
        return value

    def number(self, *keys: str) -> float | None:
        key, value = self.raw(*keys, default=None)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise self.fail(key, f"must be a positive number, got {value!r}")
        return float(value)

    def integers(self, key: str) -> list[int]:
        _, value = self.raw(key, default=[])
        if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in value):
            raise self.fail(key, f"must be a list of integers, got {value!r}")
        return value

    def mapping(self, key: str) -> dict[str, Any] | None:
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.fail(key, f"must be an object, got {value!r}")
        return value

    def nested(self, key: str, model_type: str) -> _Cfg:
        return _Cfg(self.mapping(key) or {}, self.where, model_type, f"{self.prefix}{key}.")


# --- shared pieces ------------------------------------------------------------------------------


def _heads(c: _Cfg, hidden: int, heads_keys: tuple[str, ...] = ("num_attention_heads",)) -> dict[str, int]:
    heads = c.integer(*heads_keys)
    kv = c.integer("num_key_value_heads", default=heads)
    if heads % kv:
        raise c.fail(
            "num_key_value_heads",
            f"({kv}) must divide {c.prefix}{heads_keys[0]} ({heads}): the key/value heads (num_kv_heads) "
            "must split the query heads evenly",
        )
    head_dim = c.opt_integer("head_dim")
    if head_dim is None:
        if hidden % heads:
            raise c.fail(
                heads_keys[0], f"({heads}) must divide hidden_size ({hidden}) when head_dim is absent"
            )
        head_dim = hidden // heads
    return {"num_attention_heads": heads, "num_kv_heads": kv, "head_dim": head_dim}


def _rope(c: _Cfg) -> dict[str, Any]:
    params = c.mapping("rope_parameters") or {}
    scaling = c.mapping("rope_scaling")
    if scaling is None and params.get("rope_type", "default") != "default":
        scaling = {k: v for k, v in params.items() if k != "rope_theta"}
    theta = c.number("rope_theta")
    if theta is None and isinstance(params.get("rope_theta"), int | float):
        theta = float(params["rope_theta"])
    return {"rope_theta": theta, "rope_scaling": scaling}


def _window(c: _Cfg, num_layers: int, sliding: list[int] | None) -> SlidingWindow | None:
    window = c.opt_integer("sliding_window", minimum=0)
    if not window or sliding == []:
        return None
    if sliding is None or len(sliding) == num_layers:
        return SlidingWindow(window=window)
    return SlidingWindow(window=window, layers=tuple(sliding))


def _layer_types(c: _Cfg, num_layers: int) -> list[int] | None:
    """Sliding layers from an explicit ``layer_types`` list, if the config has one."""
    if not c.has("layer_types"):
        return None
    types = c.data["layer_types"]
    if not isinstance(types, list) or len(types) != num_layers:
        raise c.fail("layer_types", f"must list one type per layer ({num_layers})")
    return [i for i, t in enumerate(types) if t == "sliding_attention"]


def _dtype(c: _Cfg) -> DType | None:
    quant = c.mapping("quantization_config") or {}
    if quant.get("quant_method") == "fp8" or quant.get("fmt") in ("e4m3", "e5m2"):
        return DType.FP8
    _, name = c.raw("torch_dtype", "dtype", default=None)
    return _DTYPES.get(name) if isinstance(name, str) else None


def _decoder_base(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    """Fields every Llama-style decoder shares."""
    num_layers = c.integer("num_hidden_layers")
    hidden = c.integer("hidden_size")
    fields: dict[str, Any] = {
        "num_layers": num_layers,
        "hidden_size": hidden,
        **_heads(c, hidden),
        "intermediate_size": c.integer("intermediate_size"),
        "vocab_size": c.integer("vocab_size"),
        "activation": c.text("hidden_act", "hidden_activation", default="silu"),
        "max_position_embeddings": c.integer("max_position_embeddings", default=2048),
        "tie_word_embeddings": c.flag("tie_word_embeddings"),
        **_rope(c),
    }
    sliding = _layer_types(c, num_layers)
    fields["sliding_window"] = _window(c, num_layers, sliding)
    return fields


def _qwen_window(c: _Cfg, fields: dict[str, Any]) -> None:
    """Qwen: a sliding window only when ``use_sliding_window``; which layers differs by type, as in
    transformers: Qwen2/Qwen3 from ``max_window_layers`` on, Qwen2-MoE the even layers below
    ``max_window_layers``, Qwen3-MoE every layer."""
    n = fields["num_layers"]
    sliding = _layer_types(c, n)
    if sliding is None:
        if not c.flag("use_sliding_window"):
            fields["sliding_window"] = None
            return
        if c.model_type == "qwen3_moe":
            sliding = list(range(n))
        elif c.model_type == "qwen2_moe":
            limit = c.integer("max_window_layers", minimum=0)
            sliding = [i for i in range(n) if (i + 1) % 2 and i < limit]
        else:
            start = c.integer("max_window_layers", minimum=0)
            sliding = list(range(start, n))
    fields["sliding_window"] = _window(c, n, sliding)


def _moe_layers(c: _Cfg, n: int, is_moe: Callable[[int], bool], **moe: Any) -> MoEConfig | None:
    dense = tuple(i for i in range(n) if not is_moe(i))
    if len(dense) == n:
        return None
    return MoEConfig(dense_layers=dense, **moe)


# --- families -----------------------------------------------------------------------------------


def _llama(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    f = _decoder_base(c, notes)
    bias = c.flag("attention_bias")
    f.update(attention_bias=bias, attention_out_bias=bias, mlp_bias=c.flag("mlp_bias"))
    return f


def _mistral(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    return _decoder_base(c, notes)


def _mixtral(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    f = _decoder_base(c, notes)
    f["moe"] = MoEConfig(
        num_experts=c.integer("num_local_experts"),
        experts_per_token=c.integer("num_experts_per_tok"),
        expert_intermediate_size=f["intermediate_size"],
    )
    return f


def _qwen2(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    f = _decoder_base(c, notes)
    f["attention_bias"] = True  # Qwen2 q/k/v always carry biases; o_proj never
    _qwen_window(c, f)
    return f


def _qwen_moe(c: _Cfg, f: dict[str, Any], *, shared: bool) -> None:
    n = f["num_layers"]
    only_mlp = set(c.integers("mlp_only_layers"))
    step = c.integer("decoder_sparse_step")
    experts = c.integer("num_experts", "num_local_experts", minimum=0)
    shared_size = c.integer("shared_expert_intermediate_size", minimum=0) if shared else 0
    f["moe"] = _moe_layers(
        c, n, lambda i: i not in only_mlp and experts > 0 and (i + 1) % step == 0,
        num_experts=max(experts, 1),
        experts_per_token=c.integer("num_experts_per_tok"),
        expert_intermediate_size=c.integer("moe_intermediate_size"),
        num_shared_experts=1 if shared_size else 0,
        shared_expert_intermediate_size=shared_size or None,
        shared_expert_gate=bool(shared_size),
    )


def _qwen2_moe(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    f = _decoder_base(c, notes)
    f["attention_bias"] = c.flag("qkv_bias")
    _qwen_window(c, f)
    _qwen_moe(c, f, shared=True)
    return f


def _qwen3(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    f = _llama(c, notes)
    f.update(qk_norm=True, mlp_bias=False)
    _qwen_window(c, f)
    return f


def _qwen3_moe(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    f = _qwen3(c, notes)
    _qwen_moe(c, f, shared=False)
    return f


def _gemma(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    f = _llama(c, notes)
    f["mlp_bias"] = False
    return f


def _gemma2(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    f = _gemma(c, notes)
    f["norms_per_layer"] = 4
    n = f["num_layers"]
    sliding = _layer_types(c, n)
    f["sliding_window"] = _window(c, n, sliding if sliding is not None else list(range(0, n, 2)))
    return f


def _gemma3_text(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    f = _gemma(c, notes)
    f.update(norms_per_layer=4, qk_norm=True)
    n = f["num_layers"]
    sliding = _layer_types(c, n)
    if sliding is None:
        pattern = c.integer("sliding_window_pattern", default=6)
        sliding = [i for i in range(n) if (i + 1) % pattern]
    f["sliding_window"] = _window(c, n, sliding)
    return f


def _phi(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    if c.flag("qk_layernorm"):
        raise c.fail("qk_layernorm", "is not supported (per-head LayerNorms with biases)")
    f = _decoder_base(c, notes)
    f.update(
        norm_kind=NormKind.LAYERNORM, norm_bias=True, norms_per_layer=1, parallel_attention_mlp=True,
        gated_mlp=False, attention_bias=True, attention_out_bias=True, mlp_bias=True, lm_head_bias=True,
    )
    return f


def _starcoder2(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    f = _decoder_base(c, notes)
    bias = c.flag("use_bias")
    f.update(
        norm_kind=NormKind.LAYERNORM, norm_bias=True, gated_mlp=False,
        attention_bias=bias, attention_out_bias=bias, mlp_bias=bias,
    )
    return f


def _deepseek_v3(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    f = _decoder_base(c, notes)
    n = f["num_layers"]
    mla = MLAConfig(
        q_lora_rank=c.opt_integer("q_lora_rank"),
        kv_lora_rank=c.integer("kv_lora_rank"),
        qk_rope_head_dim=c.integer("qk_rope_head_dim"),
        qk_nope_head_dim=c.integer("qk_nope_head_dim"),
        v_head_dim=c.integer("v_head_dim"),
    )
    bias = c.flag("attention_bias")
    first_dense = c.integer("first_k_dense_replace", minimum=0)
    if c.integer("moe_layer_freq", default=1) != 1:
        notes.append("moe_layer_freq != 1 is ignored, as transformers' DeepseekV3 does: every layer from "
                     "first_k_dense_replace on is an MoE layer")
    if c.integer("num_nextn_predict_layers", default=0, minimum=0):
        notes.append("the multi-token-prediction (MTP) module (num_nextn_predict_layers) is not counted: "
                     "transformers does not instantiate it, and inference does not need it")
    shared = c.integer("n_shared_experts", default=0, minimum=0)
    f.update(
        # head_dim: the query/key width per head (no-RoPE + RoPE parts); the KV cache holds the latent.
        head_dim=mla.qk_head_dim,
        num_kv_heads=f["num_attention_heads"],
        mla=mla,
        attention_bias=bias,
        attention_out_bias=bias,
        moe=_moe_layers(
            c, n, lambda i: i >= first_dense,
            num_experts=c.integer("n_routed_experts"),
            experts_per_token=c.integer("num_experts_per_tok"),
            expert_intermediate_size=c.integer("moe_intermediate_size"),
            num_shared_experts=shared,
            # transformers' DeepseekV3TopkRouter always holds e_score_correction_bias (a buffer).
            router_bias=True,
        ),
    )
    return f


def _llama4_text(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    f = _llama(c, notes)
    n = f["num_layers"]
    if c.has("moe_layers"):
        moe_layers = set(c.integers("moe_layers"))
    else:
        step = c.integer("interleave_moe_layer_step")
        moe_layers = set(range(step - 1, n, step))
    expert = c.integer("intermediate_size")
    f.update(
        intermediate_size=c.integer("intermediate_size_mlp"),
        mlp_bias=False,
        sliding_window=None,
        moe=_moe_layers(
            c, n, lambda i: i in moe_layers,
            num_experts=c.integer("num_local_experts"),
            experts_per_token=c.integer("num_experts_per_tok"),
            expert_intermediate_size=expert,
            num_shared_experts=1,
        ),
    )
    if c.has("attention_chunk_size"):
        notes.append("chunked local attention (attention_chunk_size) is modelled as full attention")
    return f


def _falcon(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    hidden = c.integer("hidden_size")
    heads = c.integer("num_attention_heads", "n_head")
    if hidden % heads:
        raise c.fail("num_attention_heads", f"({heads}) must divide hidden_size ({hidden})")
    new_arch = c.flag("new_decoder_architecture")
    if new_arch:
        kv = c.integer("num_kv_heads", "n_head_kv", default=heads)
    else:
        kv = 1 if c.flag("multi_query") else heads
    if heads % kv:
        raise c.fail("num_kv_heads", f"({kv}) must divide num_attention_heads ({heads})")
    parallel = c.flag("parallel_attn")
    ln_parallel = c.opt_integer("num_ln_in_parallel_attn") or (2 if new_arch else 1)
    bias = c.flag("bias")
    return {
        "num_layers": c.integer("num_hidden_layers", "n_layer"),
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_kv_heads": kv,
        "head_dim": hidden // heads,
        "intermediate_size": c.integer("ffn_hidden_size", default=4 * hidden),
        "gated_mlp": False,
        "activation": "gelu",
        "vocab_size": c.integer("vocab_size"),
        "tie_word_embeddings": c.flag("tie_word_embeddings"),
        "norm_kind": NormKind.LAYERNORM,
        "norm_bias": True,
        "norms_per_layer": 2 if not parallel else ln_parallel,
        "attention_bias": bias,
        "attention_out_bias": bias,
        "mlp_bias": bias,
        "parallel_attention_mlp": parallel,
        "position_embedding": PositionEmbedding.ALIBI if c.flag("alibi") else PositionEmbedding.ROPE,
        "max_position_embeddings": c.integer("max_position_embeddings", default=2048),
        **_rope(c),
    }


def _gpt_neox(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    """GPT-NeoX (Pythia, GPT-NeoX-20B): LayerNorms with biases before attention and MLP (also with
    the parallel residual), fused QKV and output projections with biases (``attention_bias``), a
    4x GELU MLP with biases, rotary embeddings on part of each head (no parameters), and an
    output head of its own (``embed_out``, no bias)."""
    f = _decoder_base(c, notes)
    if f["rope_theta"] is None:  # configs before transformers 5 name the base rotary_emb_base
        f["rope_theta"] = c.number("rotary_emb_base")
    bias = c.flag("attention_bias")
    f.update(
        norm_kind=NormKind.LAYERNORM, norm_bias=True, norms_per_layer=2, gated_mlp=False,
        attention_bias=bias, attention_out_bias=bias, mlp_bias=True,
        parallel_attention_mlp=c.flag("use_parallel_residual"),
    )
    return f


def _opt(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    """OPT (Zhang et al. 2022): pre-LayerNorm blocks with biases, separate Q/K/V/out projections,
    a ReLU MLP (``ffn_dim``), learned positions with two extra rows (OPT's offset of 2, counted as
    extra parameters), and the output head tied to the embedding. OPT-350M's projected embeddings
    and post-LayerNorm are refused rather than counted wrong."""
    hidden = c.integer("hidden_size")
    heads = _heads(c, hidden)
    projected = c.opt_integer("word_embed_proj_dim")
    if projected is not None and projected != hidden:
        raise c.fail("word_embed_proj_dim", f"({projected}) differs from hidden_size ({hidden}): "
                     "projected embeddings (OPT-350M) are not supported")
    if not c.flag("do_layer_norm_before") or c.flag("_remove_final_layer_norm"):
        raise c.fail("do_layer_norm_before", "is false: post-LayerNorm OPT blocks (OPT-350M) are not supported")
    if not c.flag("layer_norm_elementwise_affine"):
        raise c.fail("layer_norm_elementwise_affine", "is false: LayerNorms without weights are not supported")
    bias = c.flag("enable_bias")
    return {
        "num_layers": c.integer("num_hidden_layers"),
        "hidden_size": hidden,
        **heads,
        "intermediate_size": c.integer("ffn_dim"),
        "gated_mlp": False,
        "activation": c.text("activation_function", default="relu"),
        "vocab_size": c.integer("vocab_size"),
        "tie_word_embeddings": c.flag("tie_word_embeddings"),
        "norm_kind": NormKind.LAYERNORM,
        "norm_bias": True,
        "norms_per_layer": 2,
        "attention_bias": bias,
        "attention_out_bias": bias,
        "mlp_bias": bias,
        "position_embedding": PositionEmbedding.LEARNED,
        "max_position_embeddings": c.integer("max_position_embeddings"),
        "extra_parameters": 2 * hidden,  # OPTLearnedPositionalEmbedding: max_position_embeddings + 2 rows
    }


def _gpt2(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    hidden = c.integer("n_embd", "hidden_size")
    heads = c.integer("n_head", "num_attention_heads")
    if hidden % heads:
        raise c.fail("n_head", f"({heads}) must divide n_embd ({hidden})")
    return {
        "num_layers": c.integer("n_layer", "num_hidden_layers"),
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_kv_heads": heads,
        "head_dim": hidden // heads,
        "intermediate_size": c.integer("n_inner", default=4 * hidden),
        "gated_mlp": False,
        "activation": c.text("activation_function", default="gelu_new"),
        "vocab_size": c.integer("vocab_size"),
        "tie_word_embeddings": c.flag("tie_word_embeddings"),
        "norm_kind": NormKind.LAYERNORM,
        "norm_bias": True,
        "attention_bias": True,
        "attention_out_bias": True,
        "mlp_bias": True,
        "position_embedding": PositionEmbedding.LEARNED,
        "max_position_embeddings": c.integer("n_positions", "max_position_embeddings"),
    }


def _bert(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    hidden = c.integer("hidden_size")
    return {
        "kind": ModelKind.ENCODER,
        "head": Head.BASE,
        "num_layers": c.integer("num_hidden_layers"),
        "hidden_size": hidden,
        **_heads(c, hidden),
        "intermediate_size": c.integer("intermediate_size"),
        "gated_mlp": False,
        "activation": c.text("hidden_act", default="gelu"),
        "vocab_size": c.integer("vocab_size"),
        "tie_word_embeddings": c.flag("tie_word_embeddings"),
        "norm_kind": NormKind.LAYERNORM,
        "norm_bias": True,
        "final_norm": False,
        "embedding_norm": True,
        "attention_bias": True,
        "attention_out_bias": True,
        "mlp_bias": True,
        "position_embedding": PositionEmbedding.LEARNED,
        "max_position_embeddings": c.integer("max_position_embeddings"),
        "type_vocab_size": c.integer("type_vocab_size", minimum=0),
        "pooler": True,
    }


def _t5(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    proj = c.text("feed_forward_proj") or "relu"
    gated = proj.startswith("gated-")
    act = proj.removeprefix("gated-")
    num_layers = c.integer("num_layers")
    heads = c.integer("num_heads")
    return {
        "kind": ModelKind.ENCODER_DECODER,
        "head": Head.SEQ2SEQ_LM,
        "num_layers": num_layers,
        "hidden_size": c.integer("d_model"),
        "num_attention_heads": heads,
        "num_kv_heads": heads,
        "head_dim": c.integer("d_kv"),
        "intermediate_size": c.integer("d_ff"),
        "gated_mlp": gated,
        "activation": "gelu_new" if act == "gelu" and gated else act,
        "vocab_size": c.integer("vocab_size"),
        "tie_word_embeddings": c.flag("tie_word_embeddings"),
        "position_embedding": PositionEmbedding.RELATIVE_BIAS,
        "max_position_embeddings": c.integer("n_positions", default=512),
        "encoder_decoder": EncoderDecoderConfig(
            num_decoder_layers=c.integer("num_decoder_layers", default=num_layers),
            relative_attention_num_buckets=c.integer("relative_attention_num_buckets"),
        ),
    }


def _vit(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    hidden = c.integer("hidden_size")
    vision = VisionConfig(
        image_size=c.integer("image_size"),
        patch_size=c.integer("patch_size"),
        num_channels=c.integer("num_channels"),
    )
    if c.integer("pooler_output_size", default=hidden) != hidden:
        raise c.fail("pooler_output_size", "must equal hidden_size to be counted")
    qkv_bias = c.flag("qkv_bias")
    return {
        "kind": ModelKind.ENCODER,
        "head": Head.BASE,
        "num_layers": c.integer("num_hidden_layers"),
        "hidden_size": hidden,
        **_heads(c, hidden),
        "intermediate_size": c.integer("intermediate_size"),
        "gated_mlp": False,
        "activation": c.text("hidden_act", default="gelu"),
        # A ViT has no token vocabulary; the field is required, and unused when ``vision`` is set.
        "vocab_size": 1,
        "norm_kind": NormKind.LAYERNORM,
        "norm_bias": True,
        "attention_bias": qkv_bias,
        "attention_out_bias": True,
        "mlp_bias": True,
        "position_embedding": PositionEmbedding.LEARNED,
        "max_position_embeddings": vision.num_patches + 1,
        "pooler": True,
        "vision": vision,
    }


#: Keys an unknown ``model_type`` must have (no config class supplies defaults).
GENERIC_REQUIRED = (
    "num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size",
)


def _generic(c: _Cfg, notes: list[str]) -> dict[str, Any]:
    missing = [c.prefix + k for k in GENERIC_REQUIRED if not c.has(k)]
    if missing:
        listed = "', '".join(missing)
        raise ModelImportError(
            f"{c.where}: missing required key{'s' if len(missing) > 1 else ''} '{listed}' "
            f"(model_type {c.data.get('model_type')!r} is not one the importer knows)"
        )
    notes.append(
        f"unknown model_type {c.data.get('model_type')!r}: read with the generic keys as a Llama-style "
        "block (RMSNorm, gated FFN, untied unless tie_word_embeddings says otherwise); check the count"
    )
    return _llama(c, notes)


_FAMILIES: dict[str, tuple[Callable[[_Cfg, list[str]], dict[str, Any]], str]] = {
    "llama": (_llama, "llama"),
    "granite": (_llama, "granite"),
    "mistral": (_mistral, "mistral"),
    "ministral": (_mistral, "mistral"),
    "mixtral": (_mixtral, "mistral"),
    "qwen2": (_qwen2, "qwen"),
    "qwen2_moe": (_qwen2_moe, "qwen"),
    "qwen3": (_qwen3, "qwen"),
    "qwen3_moe": (_qwen3_moe, "qwen"),
    "gemma": (_gemma, "gemma"),
    "gemma2": (_gemma2, "gemma"),
    "gemma3_text": (_gemma3_text, "gemma"),
    "phi": (_phi, "phi"),
    "phi3": (_mistral, "phi"),
    "starcoder2": (_starcoder2, "starcoder"),
    "deepseek_v3": (_deepseek_v3, "deepseek"),
    "llama4_text": (_llama4_text, "llama"),
    "falcon": (_falcon, "falcon"),
    "gpt2": (_gpt2, "gpt2"),
    "gpt_neox": (_gpt_neox, "gpt-neox"),
    "opt": (_opt, "opt"),
    "bert": (_bert, "bert"),
    "roberta": (_bert, "bert"),
    "xlm-roberta": (_bert, "bert"),
    "t5": (_t5, "t5"),
    "mt5": (_t5, "t5"),
    "vit": (_vit, "vit"),
}
# Wrappers whose language model sits in ``text_config``: (text model_type when the nested config
# does not say, towers counted exactly by :func:`_towers` or not).
_WRAPPERS: dict[str, str] = {"gemma3": "gemma3_text", "llama4": "llama4_text", "mistral3": "mistral"}


def _siglip_vision(c: _Cfg) -> int:
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


def _towers(wrapper: str, c: _Cfg, text_hidden: int, notes: list[str]) -> int:
    """Exact parameters of the non-text towers, or 0 with a note when we cannot count them."""
    if wrapper == "gemma3":
        vision = c.nested("vision_config", "siglip_vision_model")
        vh = vision.integer("hidden_size")
        # Gemma3MultiModalProjector: a (vision_hidden x text_hidden) projection and an RMSNorm.
        total = _siglip_vision(vision) + vh * text_hidden + vh
        if vision.defaulted:
            listed = ", ".join(f"{k}={v}" for k, v in vision.defaulted.items())
            notes.append(f"absent from the config, taken from transformers' SigLIP defaults: {listed}")
        return total
    towers = [k for k in ("vision_config", "audio_config") if c.has(k)]
    notes.append(
        f"{'/'.join(towers) or 'non-text towers'} of {wrapper!r} not counted: the count covers the language "
        "model in text_config only (import the model folder to add the rest from its safetensors)"
    )
    return 0


def import_hf_config(
    config: Mapping[str, Any], *, name: str | None = None, source: str | None = None
) -> HFImport:
    """Read a parsed ``config.json`` into an architecture, with notes and the reference class."""
    where = source or "config"
    if not isinstance(config, Mapping):
        raise ModelImportError(f"{where}: the config must be a JSON object, got {type(config).__name__}")
    check_counts(config, where)  # absurd sizes are refused before any per-layer list is built
    model_type = config.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise ModelImportError(f"{where}: 'model_type' must be a string, got {model_type!r}")
    model_type = model_type or ""
    notes: list[str] = []
    top = _Cfg(config, where, model_type)
    text_type = model_type
    text = top
    extra = 0
    from_text = False
    if model_type in _WRAPPERS or (model_type not in _FAMILIES and top.has("text_config")):
        nested = top.mapping("text_config")
        if nested is None:
            raise top.fail("text_config", "is missing: this multimodal config needs its language model")
        text_type = nested.get("model_type") or _WRAPPERS.get(model_type, "")
        if not isinstance(text_type, str):
            raise top.fail("text_config.model_type", f"must be a string, got {text_type!r}")
        text = top.nested("text_config", text_type)
    builder, family = _FAMILIES.get(text_type, (_generic, text_type or model_type or "custom"))
    fields = builder(text, notes)
    if text is not top:
        # transformers ties by the wrapper's own flag (its class default when absent). An explicit
        # flag in text_config describes the checkpoint better than that class default, and
        # from_pretrained unties weights a checkpoint stores twice, so it wins over the default.
        if top.has("tie_word_embeddings"):
            fields["tie_word_embeddings"] = top.flag("tie_word_embeddings")
        elif not text.has("tie_word_embeddings") and model_type in WRAPPER_TIE_DEFAULTS:
            fields["tie_word_embeddings"] = WRAPPER_TIE_DEFAULTS[model_type]
        extra = _towers(model_type, top, fields["hidden_size"], notes)
        from_text = extra == 0
    for cfg in (top, text) if text is not top else (top,):
        if cfg.defaulted:
            listed = ", ".join(f"{k}={v}" for k, v in cfg.defaulted.items())
            notes.append(
                f"absent from the config, taken from transformers' {cfg.model_type} defaults: {listed}"
            )
    fields.setdefault("rope_theta", None)
    extra += fields.pop("extra_parameters", 0)  # a family's own uncounted parts (OPT's offset rows)
    try:
        arch = ModelArchitecture(
            name=name or _default_name(config, model_type),
            family=family.split("_")[0],
            hf_model_type=model_type or None,
            torch_dtype=_dtype(top) or _dtype(text),
            extra_parameters=extra,
            source=source,
            **fields,
        )
    except ValidationError as exc:
        raise ModelImportError(describe_validation_error(exc, where)) from None
    if text_type in _FAMILIES:
        reference = _REFERENCE_CLASS.get(model_type if not from_text else text_type)
    else:
        reference = None
    return HFImport(arch, model_type, reference, from_text, tuple(notes))


def _default_name(config: Mapping[str, Any], model_type: str) -> str:
    path = config.get("_name_or_path")
    if isinstance(path, str) and path.strip():
        return path.rstrip("/").split("/")[-1]
    return model_type or "imported model"


def architecture_from_hf_config(
    config: Mapping[str, Any], *, name: str | None = None, source: str | None = None
) -> ModelArchitecture:
    """The architecture of a parsed ``config.json``; each note is emitted as a :class:`ModelImportWarning`."""
    result = import_hf_config(config, name=name, source=source)
    for note in result.notes:
        warnings.warn(f"{source or result.architecture.name}: {note}", ModelImportWarning, stacklevel=2)
    return result.architecture


def read_config_json(path: Path) -> dict[str, Any]:
    """Parse a ``config.json`` under the limits of :mod:`~workbench.catalog.safe_read`."""
    return load_json_object(path, MAX_CONFIG_BYTES, "config.json")


def import_hf_path(path: str | Path) -> HFImport:
    """Import a ``config.json`` file or a model folder.

    For a folder that also holds ``*.safetensors`` weights, the headers are read (never the
    tensors): towers the config does not describe are filled into ``extra_parameters`` from the
    difference, and any other disagreement becomes a note.
    """
    p = Path(path)
    if p.is_dir():
        config_path = inside_folder(p, "config.json", str(p))  # not a link out of the folder
        shards = find_safetensors(p)
        if not config_path.exists():  # present but not a file: read_config_json says what it is
            if shards:
                raise ModelImportError(
                    f"{p}: no config.json (the {len(shards)} safetensors file(s) alone do not describe "
                    "the architecture)"
                )
            raise ModelImportError(f"{p}: no config.json and no *.safetensors files in this folder")
        name = p.name
    elif p.exists():  # a FIFO or a device is refused by read_config_json, not called missing
        config_path, shards, name = p, [], None
    else:
        raise ModelImportError(f"{p}: no such file or folder")
    data = read_config_json(config_path)
    result = import_hf_config(data, name=name, source=str(config_path))
    if not shards:
        if p.is_dir() and (p / INDEX_NAME).is_file():
            note = f"{INDEX_NAME} found without its shards: the count is not checked against the weights"
            return HFImport(result.architecture, result.model_type, result.reference_class,
                            result.reference_from_text_config, (*result.notes, note))
        return result
    total = read_safetensors_folder(p).total
    notes = list(result.notes)
    if total is None:
        notes.append(f"the shards {INDEX_NAME} lists are absent: the weights are not counted")
        return HFImport(result.architecture, result.model_type, result.reference_class,
                        result.reference_from_text_config, tuple(notes))
    counted = count_parameters(result.architecture).stored
    arch = result.architecture
    difference = total - counted
    if difference > 0 and result.reference_from_text_config:
        arch = arch.model_copy(update={"extra_parameters": arch.extra_parameters + difference})
        notes.append(f"{difference:,} parameters of the other towers taken from the safetensors headers")
    elif difference:
        notes.append(
            f"the safetensors files hold {total:,} parameters, the architecture counts "
            f"{counted:,} ({difference:+,})"
        )
    return HFImport(arch, result.model_type, result.reference_class, result.reference_from_text_config,
                    tuple(notes))


def load_hf_config(path: str | Path) -> ModelArchitecture:
    """The architecture of a ``config.json`` file or a model folder (notes emitted as warnings)."""
    result = import_hf_path(path)
    for note in result.notes:
        warnings.warn(f"{path}: {note}", ModelImportWarning, stacklevel=2)
    return result.architecture
