"""Typed, error-reporting access to a ``config.json`` and the pieces family readers share.

Each family reader (one module per family group in this package) turns a config into the fields
of a :class:`~workbench.core.model.ModelArchitecture`, reading keys through :class:`Cfg`, which
knows the transformers config class defaults of its ``model_type`` (real configs often leave out
``tie_word_embeddings``, ``num_key_value_heads`` or, for Gemma 3, nearly everything) and records
every size key it had to take from them, so the importer can say so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from workbench.core.dtypes import DType
from workbench.core.errors import ModelImportError
from workbench.core.model import MoEConfig, SlidingWindow

_MISSING = object()

#: Defaults of the transformers config classes (transformers 5.x) for the keys the readers read, by
#: ``model_type``; each family module registers its own with its readers. The validation suite
#: checks this table against the installed transformers.
TYPE_DEFAULTS: dict[str, dict[str, Any]] = {}

#: Keys that set a model's size: taking one from the defaults is worth a note.
SIZE_KEYS = frozenset(
    {
        "num_hidden_layers",
        "hidden_size",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "intermediate_size",
        "intermediate_size_mlp",
        "vocab_size",
        "num_experts",
        "num_local_experts",
        "n_routed_experts",
        "n_shared_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
        "shared_expert_intermediate_size",
        "first_k_dense_replace",
        "q_lora_rank",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "qk_nope_head_dim",
        "v_head_dim",
        "n_layer",
        "n_embd",
        "n_head",
        "d_model",
        "d_kv",
        "d_ff",
        "num_layers",
        "num_heads",
        "image_size",
        "patch_size",
    }
)

_DTYPES = {
    "float32": DType.FP32,
    "float": DType.FP32,
    "fp32": DType.FP32,
    "bfloat16": DType.BF16,
    "bf16": DType.BF16,
    "float16": DType.FP16,
    "half": DType.FP16,
    "fp16": DType.FP16,
    "float64": DType.FP64,
}


class Cfg:
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
                    if key in SIZE_KEYS:
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
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
            raise self.fail(key, f"must be a positive finite number, got {value!r}")
        return float(value)

    def probability(self, *keys: str) -> float:
        """A dropout probability: 0 when absent, else a number in [0, 1)."""
        key, value = self.raw(*keys, default=0.0)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
            raise self.fail(key, f"must be a probability in [0, 1), got {value!r}")
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

    def nested(self, key: str, model_type: str) -> Cfg:
        return Cfg(self.mapping(key) or {}, self.where, model_type, f"{self.prefix}{key}.")


# --- shared pieces ------------------------------------------------------------------------------


def read_heads(c: Cfg, hidden: int, heads_keys: tuple[str, ...] = ("num_attention_heads",)) -> dict[str, int]:
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


def read_rope(c: Cfg) -> dict[str, Any]:
    params = c.mapping("rope_parameters") or {}
    scaling = c.mapping("rope_scaling")
    if scaling is None and params.get("rope_type", "default") != "default":
        scaling = {k: v for k, v in params.items() if k != "rope_theta"}
    theta = c.number("rope_theta")
    if theta is None and isinstance(params.get("rope_theta"), int | float):
        theta = float(params["rope_theta"])
    return {"rope_theta": theta, "rope_scaling": scaling}


def read_window(c: Cfg, num_layers: int, sliding: list[int] | None) -> SlidingWindow | None:
    window = c.opt_integer("sliding_window", minimum=0)
    if not window or sliding == []:
        return None
    if sliding is None or len(sliding) == num_layers:
        return SlidingWindow(window=window)
    return SlidingWindow(window=window, layers=tuple(sliding))


def sliding_layers(c: Cfg, num_layers: int) -> list[int] | None:
    """Sliding layers from an explicit ``layer_types`` list, if the config has one."""
    if not c.has("layer_types"):
        return None
    types = c.data["layer_types"]
    if not isinstance(types, list) or len(types) != num_layers:
        raise c.fail("layer_types", f"must list one type per layer ({num_layers})")
    return [i for i, t in enumerate(types) if t == "sliding_attention"]


def checkpoint_dtype(c: Cfg) -> DType | None:
    quant = c.mapping("quantization_config") or {}
    if quant.get("quant_method") == "fp8" or quant.get("fmt") in ("e4m3", "e5m2"):
        return DType.FP8
    _, name = c.raw("torch_dtype", "dtype", default=None)
    return _DTYPES.get(name) if isinstance(name, str) else None


def decoder_base(c: Cfg, notes: list[str]) -> dict[str, Any]:
    """Fields every Llama-style decoder shares."""
    num_layers = c.integer("num_hidden_layers")
    hidden = c.integer("hidden_size")
    fields: dict[str, Any] = {
        "num_layers": num_layers,
        "hidden_size": hidden,
        **read_heads(c, hidden),
        "intermediate_size": c.integer("intermediate_size"),
        "vocab_size": c.integer("vocab_size"),
        "activation": c.text("hidden_act", "hidden_activation", default="silu"),
        "max_position_embeddings": c.integer("max_position_embeddings", default=2048),
        "tie_word_embeddings": c.flag("tie_word_embeddings"),
        "attention_dropout": c.probability("attention_dropout"),
        **read_rope(c),
    }
    sliding = sliding_layers(c, num_layers)
    fields["sliding_window"] = read_window(c, num_layers, sliding)
    return fields


def moe_from_layers(c: Cfg, n: int, is_moe: Callable[[int], bool], **moe: Any) -> MoEConfig | None:
    dense = tuple(i for i in range(n) if not is_moe(i))
    if len(dense) == n:
        return None
    return MoEConfig(dense_layers=dense, **moe)
