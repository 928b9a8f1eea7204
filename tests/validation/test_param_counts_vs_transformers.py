"""Parameter counts against the reference implementation: PyTorch + Hugging Face transformers.

For every shipped catalog model and every real config under tests/data/configs, the transformers
model is built on the meta device (no memory, no download) and
``sum(p.numel() for p in model.parameters())`` (tied weights once) must equal
``count_parameters(arch).total`` exactly. Published figures are checked too, with their sources.
The safetensors reader is checked against what the ``safetensors`` library and torch report.

Run with the reference stack installed: ``pip install -e '.[validation]'``; without it this
module skips.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest

from workbench.catalog.hf_config import (
    TYPE_DEFAULTS,
    WRAPPER_TIE_DEFAULTS,
    HFImport,
    import_hf_config,
    import_hf_path,
)
from workbench.catalog.models import CatalogModel, load_model_catalog
from workbench.catalog.safetensors_header import count_file, read_safetensors_folder
from workbench.core.model import Head, ModelArchitecture
from workbench.core.params import count_parameters, layer_parameters

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
CONFIG_MAPPING = transformers.CONFIG_MAPPING

pytestmark = pytest.mark.validation

DATA = Path(__file__).resolve().parents[1] / "data"
CONFIGS = DATA / "configs"
SAFETENSORS = DATA / "safetensors"
_TEXT_TYPES = {"llama4": "llama4_text", "mistral3": "mistral", "gemma3": "gemma3_text"}


def transformers_count(config: dict[str, Any], imported: HFImport) -> int:
    """Parameters of the transformers model the importer says the count corresponds to."""
    assert imported.reference_class is not None, f"no reference class for {imported.model_type!r}"
    if imported.reference_from_text_config:
        text = dict(config["text_config"])
        model_type = text.get("model_type") or _TEXT_TYPES[imported.model_type]
        conf = CONFIG_MAPPING[model_type].from_dict(text)
    else:
        conf = CONFIG_MAPPING[imported.model_type].from_dict(config)
    cls = getattr(transformers, imported.reference_class)
    with torch.device("meta"):
        model = cls(conf)
    if imported.model_type in ("t5", "mt5") and config.get("tie_word_embeddings") is False:
        # transformers 5 forces T5Config.tie_word_embeddings = True (configuration_t5.py: "we tie
        # weights always"), so from_config ties lm_head to the embedding. T5 v1.1 / Flan-T5
        # checkpoints store lm_head.weight separately, and from_pretrained then leaves the two
        # untied (modeling_utils.tie_weights: both present with different values -> not tied).
        # Reproduce the loaded model: give lm_head its own weight.
        model.lm_head.weight = torch.nn.Parameter(torch.empty_like(model.lm_head.weight))
    return sum(p.numel() for p in model.parameters())


def data_config(name: str) -> dict[str, Any]:
    return json.loads((CONFIGS / name / "config.json").read_text(encoding="utf-8"))


DATA_NAMES = sorted(p.name for p in CONFIGS.iterdir() if (p / "config.json").is_file())
CATALOG: dict[str, CatalogModel] = load_model_catalog()


# --- exact totals ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", DATA_NAMES)
def test_real_config_matches_transformers(name: str) -> None:
    config = data_config(name)
    imported = import_hf_config(config, name=name)
    assert count_parameters(imported.architecture).total == transformers_count(config, imported)


@pytest.mark.parametrize("model_id", sorted(CATALOG))
def test_catalog_model_matches_transformers(model_id: str) -> None:
    model = CATALOG[model_id]
    imported = import_hf_config(model.config, name=model.name)
    assert count_parameters(model.architecture).total == transformers_count(model.config, imported)


# Families no shipped real config exercises (or their variants), built from small configs so the
# rarer code paths are held to transformers too. These are synthetic, not published models.
_S = {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 3, "num_attention_heads": 4,
      "num_key_value_heads": 2, "vocab_size": 100, "pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0}
SYNTHETIC: dict[str, dict[str, Any]] = {
    "llama-biases": _S | {"model_type": "llama", "attention_bias": True, "mlp_bias": True},
    "granite": _S | {"model_type": "granite", "attention_bias": True},
    "ministral": _S | {"model_type": "ministral", "head_dim": 16},
    "qwen2-moe-sparse": _S | {"model_type": "qwen2_moe", "num_experts": 4, "num_experts_per_tok": 2,
                              "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48,
                              "decoder_sparse_step": 2, "qkv_bias": False},
    "qwen2-moe-mlp-only": _S | {"model_type": "qwen2_moe", "num_experts": 4, "num_experts_per_tok": 2,
                                "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48,
                                "mlp_only_layers": [1]},
    "qwen3-dense": _S | {"model_type": "qwen3", "head_dim": 24, "tie_word_embeddings": True},
    "gemma": _S | {"model_type": "gemma", "head_dim": 16},
    "gemma3-text": _S | {"model_type": "gemma3_text", "head_dim": 16},
    "phi": _S | {"model_type": "phi"},
    "starcoder2": _S | {"model_type": "starcoder2"},
    "deepseek-v3-no-q-lora": _S | {"model_type": "deepseek_v3", "n_routed_experts": 4,
                                   "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                                   "first_k_dense_replace": 0, "q_lora_rank": None, "kv_lora_rank": 16,
                                   "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 8,
                                   "n_group": 1, "topk_group": 1, "attention_bias": True,
                                   "n_shared_experts": 2},
    "llama4-text-interleaved": _S | {"model_type": "llama4_text", "num_local_experts": 4,
                                     "intermediate_size_mlp": 128, "interleave_moe_layer_step": 2,
                                     "head_dim": 16},
    # MoE and attention-variant families (issue 12); ERNIE-4.5-MoE and Phi-3.5-MoE have no shipped
    # real config, so only these synthetic ones hold them to transformers.
    "gpt-oss-default-layer-types": _S | {"model_type": "gpt_oss", "num_local_experts": 4, "num_experts_per_tok": 2,
                                         "head_dim": 16, "sliding_window": 8},
    "gpt-oss-no-attention-bias": _S | {"model_type": "gpt_oss", "num_local_experts": 4, "num_experts_per_tok": 2,
                                       "head_dim": 24, "attention_bias": False,
                                       "layer_types": ["full_attention", "sliding_attention", "full_attention"]},
    "glm4-moe-qk-norm-bias": _S | {"model_type": "glm4_moe", "n_routed_experts": 4, "num_experts_per_tok": 2,
                                   "moe_intermediate_size": 32, "first_k_dense_replace": 2, "use_qk_norm": True,
                                   "attention_bias": True, "head_dim": 24, "n_shared_experts": 2},
    "glm4-moe-defaults": _S | {"model_type": "glm4_moe", "n_routed_experts": 4, "moe_intermediate_size": 32,
                               "num_experts_per_tok": 2},
    "deepseek-v32-mlp-layer-types": _S | {"model_type": "deepseek_v32", "n_routed_experts": 4,
                                          "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                                          "mlp_layer_types": ["sparse", "dense", "sparse"], "q_lora_rank": 24,
                                          "kv_lora_rank": 16, "qk_rope_head_dim": 8, "qk_nope_head_dim": 8,
                                          "v_head_dim": 8, "n_group": 1, "topk_group": 1, "index_n_heads": 2,
                                          "index_head_dim": 16, "index_topk": 4, "attention_bias": True},
    "minimax-m2": _S | {"model_type": "minimax_m2", "num_local_experts": 4, "num_experts_per_tok": 2,
                        "head_dim": 16, "rotary_dim": 8, "bos_token_id": 0, "eos_token_id": 0},
    "ernie4.5-moe-defaults-tied": _S | {"model_type": "ernie4_5_moe", "moe_num_experts": 4, "moe_k": 2,
                                        "moe_intermediate_size": 32, "moe_layer_end_index": 2},
    "ernie4.5-moe-interval": _S | {"model_type": "ernie4_5_moe", "moe_num_experts": 4, "moe_k": 2,
                                   "moe_intermediate_size": 32, "moe_layer_start_index": 0,
                                   "moe_layer_end_index": 1, "moe_layer_interval": 2, "moe_num_shared_experts": 0,
                                   "tie_word_embeddings": False, "num_hidden_layers": 4},
    "phimoe": _S | {"model_type": "phimoe", "num_local_experts": 4, "num_experts_per_tok": 2},
    "phimoe-biases": _S | {"model_type": "phimoe", "num_local_experts": 4, "num_experts_per_tok": 2,
                           "attention_bias": True, "lm_head_bias": True, "tie_word_embeddings": True},
    "olmoe-gqa": _S | {"model_type": "olmoe", "num_experts": 4, "num_experts_per_tok": 2, "attention_bias": True,
                       "eos_token_id": 0},
    "olmo2-gqa-bias": _S | {"model_type": "olmo2", "attention_bias": True, "eos_token_id": 0,
                            "tie_word_embeddings": True},
    "falcon-40b-style": {"model_type": "falcon", "hidden_size": 64, "num_hidden_layers": 2,
                         "num_attention_heads": 4, "num_kv_heads": 2, "vocab_size": 100,
                         "new_decoder_architecture": True},
    "falcon-rw-style": {"model_type": "falcon", "hidden_size": 64, "num_hidden_layers": 2,
                        "num_attention_heads": 4, "vocab_size": 100, "multi_query": False,
                        "parallel_attn": False, "bias": True, "alibi": True},
    "gpt-neox-sequential-tied": {"model_type": "gpt_neox", "hidden_size": 64, "num_hidden_layers": 2,
                                 "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 100,
                                 "use_parallel_residual": False, "attention_bias": False,
                                 "tie_word_embeddings": True},
    "opt-no-bias-untied": {"model_type": "opt", "hidden_size": 64, "num_hidden_layers": 2,
                           "num_attention_heads": 4, "ffn_dim": 96, "vocab_size": 100,
                           "max_position_embeddings": 64, "enable_bias": False, "tie_word_embeddings": False,
                           "pad_token_id": 1},
    "roberta": {"model_type": "roberta", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                "intermediate_size": 96, "vocab_size": 100, "pad_token_id": 1, "max_position_embeddings": 66,
                "type_vocab_size": 1},
    "xlm-roberta": {"model_type": "xlm-roberta", "hidden_size": 64, "num_hidden_layers": 2,
                    "num_attention_heads": 4, "intermediate_size": 96, "vocab_size": 100, "pad_token_id": 1},
    "t5-uneven-stacks": {"model_type": "t5", "vocab_size": 100, "d_model": 64, "d_kv": 16, "d_ff": 96,
                         "num_layers": 2, "num_decoder_layers": 3, "num_heads": 4,
                         "relative_attention_num_buckets": 16},
    "mt5": {"model_type": "mt5", "vocab_size": 100, "d_model": 64, "d_kv": 16, "d_ff": 96, "num_layers": 2,
            "num_heads": 4, "tie_word_embeddings": False},
    "gemma3-vision-head": {"model_type": "gemma3", "mm_tokens_per_image": 4, "boi_token_index": 1,
                           "eoi_token_index": 2, "image_token_index": 3,
                           "text_config": {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
                                           "num_attention_heads": 4, "num_key_value_heads": 2,
                                           "vocab_size": 300, "head_dim": 16},
                           "vision_config": {"hidden_size": 32, "intermediate_size": 48,
                                             "num_hidden_layers": 2, "num_attention_heads": 4,
                                             "image_size": 56, "patch_size": 14}},
}


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_synthetic_config_matches_transformers(name: str) -> None:
    config = SYNTHETIC[name]
    imported = import_hf_config(config, name=name)
    assert count_parameters(imported.architecture).total == transformers_count(config, imported)


def test_masked_lm_head_matches_bert_for_masked_lm() -> None:
    config = data_config("bert-base-uncased")
    arch = import_hf_config(config).architecture.model_copy(
        update={"head": Head.MASKED_LM, "pooler": False, "tie_word_embeddings": True}
    )
    with torch.device("meta"):
        model = transformers.BertForMaskedLM(CONFIG_MAPPING["bert"].from_dict(config))
    assert count_parameters(arch).total == sum(p.numel() for p in model.parameters())


# --- the importer's defaults are transformers' defaults -----------------------------------------


def _class_default(config_class: type, key: str) -> Any:
    is_dataclass = dataclasses.is_dataclass(config_class)
    fields = {f.name: f for f in dataclasses.fields(config_class)} if is_dataclass else {}
    field = fields.get(key)
    if field is not None and field.default is not dataclasses.MISSING:
        return field.default
    if field is not None and field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return getattr(config_class(), key, "<absent>")


@pytest.mark.parametrize("model_type", sorted(TYPE_DEFAULTS))
def test_type_defaults_match_transformers(model_type: str) -> None:
    config_class = CONFIG_MAPPING[model_type]
    wrong = {
        key: (ours, _class_default(config_class, key))
        for key, ours in TYPE_DEFAULTS[model_type].items()
        if _class_default(config_class, key) != ours
    }
    assert not wrong, f"{model_type}: ours vs transformers: {wrong}"


@pytest.mark.parametrize("model_type", sorted(WRAPPER_TIE_DEFAULTS))
def test_wrapper_tie_defaults_match_transformers(model_type: str) -> None:
    transformers_default = _class_default(CONFIG_MAPPING[model_type], "tie_word_embeddings")
    assert transformers_default == WRAPPER_TIE_DEFAULTS[model_type]


# --- published figures -------------------------------------------------------------------------

# name -> (published total, published active or None, source). Published totals are rounded by
# their publishers; they must agree within 1.5% (active within 2%).
PUBLISHED: dict[str, tuple[float, float | None, str]] = {
    "llama-3.1-8b": (8.03e9, None, ("https://huggingface.co/meta-llama/Llama-3.1-8B (model card: 8B; "
                                    "safetensors total 8.03B)")),
    "llama-3.2-1b": (1.23e9, None, "https://huggingface.co/meta-llama/Llama-3.2-1B (model card: 1.23B)"),
    "llama-7b": (6.7e9, None, "Touvron et al. 2023, LLaMA (arXiv:2302.13971), Table 2: 6.7B"),
    "mistral-7b-v0.1": (7.3e9, None, "https://mistral.ai/news/announcing-mistral-7b (7.3B)"),
    "mixtral-8x7b": (46.7e9, 12.9e9, "https://mistral.ai/news/mixtral-of-experts (46.7B, 12.9B per token)"),
    "qwen3-30b-a3b": (30.5e9, 3.3e9, "https://huggingface.co/Qwen/Qwen3-30B-A3B (30.5B, 3.3B activated)"),
    "qwen1.5-moe-a2.7b": (14.3e9, 2.7e9, "https://qwenlm.github.io/blog/qwen-moe/ (14.3B, 2.7B activated)"),
    "qwen2.5-0.5b": (0.49e9, None, "https://huggingface.co/Qwen/Qwen2.5-0.5B (0.49B)"),
    "deepseek-v3": (671e9, 37e9, ("DeepSeek-V3 Technical Report (arXiv:2412.19437), abstract: 671B total, "
                                  "37B activated per token")),
    "gemma-3-4b-it": (4.301e9, None, ("Gemma 3 Technical Report (arXiv:2503.19786), Table 1: vision "
                                      "encoder 417M + embedding 675M + non-embedding 3,209M")),
    "gemma-2-2b": (2.6e9, None, "Gemma 2 report (arXiv:2408.00118), Table 1 / model card: 2.6B"),
    "gpt2": (124e6, None, "https://huggingface.co/openai-community/gpt2 (124M)"),
    "bert-base-uncased": (110e6, None, "Devlin et al. 2019, BERT (arXiv:1810.04805), section 3: 110M"),
    "t5-base": (220e6, None, "Raffel et al. 2020, T5 (arXiv:1910.10683), section 3.1: about 220 million"),
    "flan-t5-base": (250e6, None, "Chung et al. 2022, Flan (arXiv:2210.11416), Table 2: Flan-T5-Base 250M"),
    "vit-base-patch16-224-in21k": (86e6, None, "Dosovitskiy et al. 2021 (arXiv:2010.11929), Table 1: 86M"),
    "falcon-7b": (7e9, None, "https://huggingface.co/tiiuae/falcon-7b (7B)"),
    "opt-125m": (125e6, None, "Zhang et al. 2022, OPT (arXiv:2205.01068), Table 1: 125M"),
    "pythia-70m": (70_426_624, None, "Biderman et al. 2023, Pythia (arXiv:2304.01373), Table 1: 70,426,624"),
    "phi-3-mini-4k-instruct": (3.8e9, None, "Abdin et al. 2024, Phi-3 (arXiv:2404.14219): 3.8B"),
    # Qwen3-Next's "3B activated" counts no embeddings (ours, with both 0.31B tables, is 3.87B); its
    # active count is held to a hand count in test_hybrid_families.py instead.
    "qwen3-next-80b-a3b-instruct": (80e9, None, ("https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct "
                                                 "(model card: 80B total, 3B activated)")),
    # llama-2-7b: only "7B" is published (Touvron et al. 2023, Llama 2, Table 1), a size class
    # 3.9% above the 6.74B weights; its exact count is checked against transformers above.
}


def test_every_published_figure_has_a_config() -> None:
    assert set(PUBLISHED) <= set(DATA_NAMES)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_figures_of_real_configs(name: str) -> None:
    total, active, _source = PUBLISHED[name]
    count = count_parameters(import_hf_config(data_config(name)).architecture)
    assert count.total == pytest.approx(total, rel=0.015)
    if active is not None:
        assert count.active == pytest.approx(active, rel=0.02)


def mtp_parameters(arch: ModelArchitecture, config: dict[str, Any]) -> int:
    """Parameters of DeepSeek-V3's multi-token-prediction module, which transformers does not build.

    Per predicted token, the published checkpoint (model.layers.61 in deepseek-ai/DeepSeek-V3)
    holds: its own copies of embed_tokens and the output head (shared_head.head), enorm, hnorm,
    shared_head.norm (three RMSNorms), eh_proj (hidden x 2*hidden) and one full MoE decoder block.
    """
    h, vocab = arch.hidden_size, arch.vocab_size
    per_module = 2 * vocab * h + 3 * h + 2 * h * h + layer_parameters(arch, arch.num_layers - 1)
    return int(config.get("num_nextn_predict_layers") or 0) * per_module


def test_deepseek_v3_mtp_accounts_for_685b() -> None:
    # https://huggingface.co/deepseek-ai/DeepSeek-V3 (model card): "The total size of DeepSeek-V3
    # models on Hugging Face is 685B, which includes 671B of the Main Model weights and 14B of the
    # Multi-Token Prediction (MTP) Module weights." Our total is the 671B transformers builds.
    config = data_config("deepseek-v3")
    arch = import_hf_config(config).architecture
    mtp = mtp_parameters(arch, config)
    assert mtp == pytest.approx(14e9, rel=0.05)  # "14B": rounded to the billion
    assert count_parameters(arch).total + mtp == pytest.approx(685e9, rel=0.015)


# Catalog entries whose publisher gives only a size-class name, further than 1.5% from the
# weights. The exact counts of these models agree with transformers (tests above); only the
# published figure is coarse, so it is held to the rounding of a size class (6%), not 1.5%.
SIZE_CLASS_NAMES: dict[str, str] = {
    "falcon-40b": "tiiuae/falcon-40b model card: 'a 40B parameters causal decoder-only model' (41.30B)",
    "flan-t5-xl": "google/flan-t5-xl is published as '3B' (weights: 2.85B)",
    "gemma-3-27b": "gemma-3-27b model card: '27B'; the Gemma 3 report (arXiv:2503.19786) Table 1 sums to "
                   "27.43B (417M vision + 1,416M embedding + 25,600M non-embedding)",
    "gpt2-xl": "openai-community/gpt2-xl model card: 'the 1.5B parameter version' (weights: 1.558B)",
    "phi-4": "microsoft/phi-4 model card: '14B parameters' (weights: 14.66B)",
    "t5-large": "T5 paper / t5-large model card: '770 million' (tied weights: 737.7M; 770.6M if the "
                "32128 x 1024 output projection were counted separately)",
}


@pytest.mark.parametrize("model_id", sorted(m for m in CATALOG if CATALOG[m].published_parameters))
def test_catalog_published_total(model_id: str) -> None:
    model = CATALOG[model_id]
    ours = count_parameters(model.architecture).total
    published = model.published_parameters
    assert published is not None
    if math.isclose(ours, published, rel_tol=0.015):
        return
    if model_id in SIZE_CLASS_NAMES:
        assert ours == pytest.approx(published, rel=0.06), SIZE_CLASS_NAMES[model_id]
        return
    # A publisher figure that includes DeepSeek's MTP module (685B for DeepSeek-V3) counts a
    # block transformers does not build; accept it only with that block added.
    extra = mtp_parameters(model.architecture, model.config) if model.architecture.mla else 0
    assert extra and ours + extra == pytest.approx(published, rel=0.015), (
        f"{model.path}: published {published:,} vs counted {ours:,} ({(ours - published) / published:+.2%})"
        + (f"; note: {model.published_parameters_note}" if model.published_parameters_note else "")
    )


# Published active counts that follow another convention than ours (every parameter a token
# passes through, embeddings and towers included). Each publisher's convention is named, with the
# sentence it is read from, and the count is checked under it: ``basis`` says what is left out
# ("embedding": the input embedding, a lookup with no compute; "head": the output head; "tower": a
# vision tower and its projector) and ``billion`` that the figure is a whole billion the count must
# round to, instead of the usual 2%.
ACTIVE_CONVENTIONS: dict[str, tuple[tuple[str, ...], bool, str]] = {
    "gpt-oss-120b": (("embedding",), False, "openai/gpt-oss README: '117B parameters with 5.1B active' "
                     "(the model card's 5.13B leaves the embedding out)"),
    "gpt-oss-20b": (("embedding",), False, "openai/gpt-oss README: '21B parameters with 3.6B active'"),
    "deepseek-v3.2": (("embedding",), False, "DeepSeek-V3 report: '37B activated for each token'"),
    "minimax-m2.7": (("embedding",), True, "MiniMax-M2 README: '10 billion active parameters', a whole billion"),
    "glm-4.5-air": (("embedding", "head"), False, "transformers glm4_moe docs: 'GLM-4.5-Air ... 12 billion "
                    "active parameters'"),
    "qwen3-next-80b-a3b": (("embedding", "head"), True, "model card: '3B activated', a whole billion"),
    "kimi-linear-48b-a3b": ((), True, "MoonshotAI/Kimi-Linear README: '3B activated parameters', a whole "
                            "billion (3.48B with embeddings and head, 2.73B without)"),
    "llama-4-scout": (("tower",), False, "Llama 4 MODEL_CARD.md: '17B (Activated)' counts the language "
                      "model; the vision tower (0.87B) is left out"),
}


@pytest.mark.parametrize("model_id", sorted(m for m in CATALOG if CATALOG[m].active_parameters))
def test_catalog_published_active(model_id: str) -> None:
    model = CATALOG[model_id]
    count = count_parameters(model.architecture)
    active = count.active
    basis, billion, why = ACTIVE_CONVENTIONS.get(model_id, ((), False, ""))
    if "embedding" in basis:
        active -= count.breakdown["embedding"]
    if "head" in basis:
        active -= count.breakdown["lm_head"]
    if "tower" in basis:
        tower = model.architecture.vision_tower
        assert tower is not None
        active -= tower.parameters + tower.projector_parameters
    if billion:
        assert round(active / 1e9) * 1e9 == model.active_parameters, why
        return
    assert active == pytest.approx(model.active_parameters, rel=0.02), (
        f"{model.path}: published active {model.active_parameters:,} vs counted {active:,}"
    )


# --- the safetensors reader against safetensors and torch ----------------------------------------

SAFETENSORS_FILES = sorted(p for p in SAFETENSORS.rglob("*.safetensors") if p.name != "truncated.safetensors")
_TORCH_TO_SAFETENSORS = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16"}


@pytest.mark.parametrize("path", SAFETENSORS_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_header_reader_matches_safetensors_and_torch(path: Path) -> None:
    safetensors_torch = pytest.importorskip("safetensors.torch")
    tensors = safetensors_torch.load_file(str(path))
    by_dtype: dict[str, int] = {}
    for tensor in tensors.values():
        key = _TORCH_TO_SAFETENSORS[tensor.dtype]
        by_dtype[key] = by_dtype.get(key, 0) + tensor.numel()
    count = count_file(path)
    assert count.total == sum(t.numel() for t in tensors.values())
    assert count.by_dtype == by_dtype
    assert count.tensors == len(tensors)


@pytest.mark.parametrize("folder", ["tiny-llama", "tiny-deepseek-v3-sharded", "tiny-mistral3"])
def test_saved_model_folder(folder: str) -> None:
    """Header count == what from_pretrained loads (parameters, tied once, plus persistent buffers)
    == our count of the imported folder (with towers filled in from the headers where needed)."""
    path = SAFETENSORS / folder
    config = json.loads((path / "config.json").read_text())
    cls = getattr(transformers, config["architectures"][0])
    model = cls.from_pretrained(path)
    params = {id(p): p.numel() for p in model.parameters()}
    stored_buffers = set(model.state_dict())
    buffers = sum(b.numel() for n, b in model.named_buffers() if n in stored_buffers)
    checkpoint = read_safetensors_folder(path)
    assert checkpoint.total == sum(params.values()) + buffers
    imported = import_hf_path(path)
    assert count_parameters(imported.architecture).stored == checkpoint.total
