"""The Hugging Face config importer on real published configs (tests/data/configs) and on bad input."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from workbench.catalog.hf_config import (
    HFImport,
    ModelImportWarning,
    architecture_from_hf_config,
    import_hf_config,
    import_hf_path,
    load_hf_config,
)
from workbench.core.dtypes import DType
from workbench.core.errors import ModelImportError
from workbench.core.model import Head, ModelKind, NormKind, PositionEmbedding
from workbench.core.params import count_parameters

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
SAFETENSORS = Path(__file__).resolve().parents[1] / "data" / "safetensors"


def real(name: str) -> dict[str, Any]:
    return json.loads((CONFIGS / name / "config.json").read_text(encoding="utf-8"))


def imported(name: str) -> HFImport:
    return import_hf_config(real(name), name=name, source=str(CONFIGS / name / "config.json"))


@pytest.mark.parametrize("name", sorted(p.parent.name for p in CONFIGS.glob("*/config.json")))
def test_every_real_config_imports(name: str) -> None:
    result = imported(name)
    assert result.architecture.name == name
    assert result.reference_class is not None
    assert count_parameters(result.architecture).total > 0


def test_gqa_rope_scaling_untied() -> None:
    arch = imported("llama-3.1-8b").architecture
    assert (arch.num_attention_heads, arch.num_kv_heads, arch.head_dim) == (32, 8, 128)
    assert arch.attention_kind == "gqa"
    assert arch.tie_word_embeddings is False
    assert arch.rope_theta == 500000.0
    assert arch.rope_scaling is not None and arch.rope_scaling["rope_type"] == "llama3"
    assert arch.torch_dtype is DType.BF16
    assert arch.max_position_embeddings == 131072
    assert arch.hf_model_type == "llama" and arch.family == "llama"


def test_tied_and_explicit_head_dim() -> None:
    arch = imported("llama-3.2-1b").architecture
    assert arch.tie_word_embeddings is True
    assert arch.head_dim == 64
    qwen = imported("qwen2.5-0.5b").architecture
    assert qwen.tie_word_embeddings is True
    assert qwen.attention_bias is True and qwen.attention_out_bias is False
    assert qwen.sliding_window is None  # use_sliding_window: false


def test_mha_without_num_key_value_heads() -> None:
    config = real("llama-7b")
    assert "num_key_value_heads" not in config
    arch = import_hf_config(config).architecture
    assert arch.num_kv_heads == arch.num_attention_heads == 32
    assert arch.attention_kind == "mha"
    assert imported("llama-2-7b").architecture.attention_kind == "mha"


def test_mixtral() -> None:
    arch = imported("mixtral-8x7b").architecture
    assert arch.moe is not None
    assert (arch.moe.num_experts, arch.moe.experts_per_token) == (8, 2)
    assert arch.moe.expert_intermediate_size == 14336
    assert arch.moe.dense_layers == ()
    assert arch.sliding_window is None  # "sliding_window": null


def test_qwen_moe_shared_expert_and_sparse_step() -> None:
    arch = imported("qwen1.5-moe-a2.7b").architecture
    assert arch.moe is not None
    assert arch.moe.num_experts == 60 and arch.moe.experts_per_token == 4
    assert arch.moe.shared_expert_intermediate_size == 5632 and arch.moe.shared_expert_gate
    assert arch.attention_bias is True  # Qwen2MoeConfig.qkv_bias defaults to true
    config = real("qwen1.5-moe-a2.7b") | {"decoder_sparse_step": 2, "mlp_only_layers": [1, 5]}
    sparse = import_hf_config(config).architecture
    assert sparse.moe is not None
    assert [i for i in range(8) if sparse.is_moe_layer(i)] == [3, 7]


def test_qwen3_moe_qk_norm() -> None:
    arch = imported("qwen3-30b-a3b").architecture
    assert arch.qk_norm is True
    assert arch.moe is not None and arch.moe.num_shared_experts == 0 and not arch.moe.shared_expert_gate
    assert (arch.num_attention_heads, arch.num_kv_heads, arch.head_dim) == (32, 4, 128)


def test_deepseek_v3_mla() -> None:
    result = imported("deepseek-v3")
    arch = result.architecture
    assert arch.mla is not None
    assert (arch.mla.q_lora_rank, arch.mla.kv_lora_rank) == (1536, 512)
    assert (arch.mla.qk_rope_head_dim, arch.mla.qk_nope_head_dim, arch.mla.v_head_dim) == (64, 128, 128)
    assert arch.attention_kind == "mla"
    assert arch.moe is not None
    assert arch.moe.dense_layers == (0, 1, 2)
    assert arch.moe.num_shared_experts == 1 and arch.moe.router_bias
    assert arch.torch_dtype is DType.FP8  # quantization_config: fp8 e4m3
    assert any("multi-token-prediction" in note for note in result.notes)


def test_gemma3_multimodal_defaults_and_vision_tower() -> None:
    result = imported("gemma-3-4b-it")
    arch = result.architecture
    # text_config gives only sizes; the rest are Gemma3TextConfig defaults.
    assert (arch.num_attention_heads, arch.num_kv_heads, arch.head_dim) == (8, 4, 256)
    assert arch.vocab_size == 262208
    assert arch.norms_per_layer == 4 and arch.qk_norm
    assert arch.tie_word_embeddings is True
    assert arch.sliding_window is not None and arch.sliding_window.window == 1024
    assert arch.sliding_window.layers is not None
    assert [i for i in range(12) if i not in arch.sliding_window.layers] == [5, 11]
    # SigLIP tower + projector, counted exactly on the architecture (not as extra parameters)
    assert arch.extra_parameters == 0
    assert arch.vision_tower is not None and arch.vision_tower.total_parameters > 400_000_000
    assert (arch.vision_tower.kind, arch.vision_tower.tokens_per_image) == ("siglip", 256)
    assert result.reference_class == "Gemma3ForConditionalGeneration"
    assert len(result.notes) == 1
    assert "text_config.num_attention_heads=8" in result.notes[0]
    assert "text_config.vocab_size=262208" in result.notes[0]


def test_known_type_takes_transformers_defaults_with_a_note() -> None:
    config = real("llama-3.1-8b")
    del config["hidden_size"]
    result = import_hf_config(config)
    assert result.architecture.hidden_size == 4096  # LlamaConfig's default, as transformers would
    assert any("hidden_size=4096" in note for note in result.notes)


def test_gemma2_alternating_window() -> None:
    arch = imported("gemma-2-2b").architecture
    assert arch.norms_per_layer == 4 and not arch.qk_norm
    assert arch.sliding_window is not None and arch.sliding_window.layers == tuple(range(0, 26, 2))
    assert arch.activation == "gelu_pytorch_tanh"


def test_explicit_layer_types() -> None:
    config = real("qwen2.5-0.5b") | {
        "layer_types": ["sliding_attention" if i % 3 else "full_attention" for i in range(24)],
        "sliding_window": 4096,
    }
    arch = import_hf_config(config).architecture
    assert arch.sliding_window is not None
    assert arch.sliding_window.layers == tuple(i for i in range(24) if i % 3)


def test_qwen_max_window_layers() -> None:
    config = real("qwen2.5-0.5b") | {"use_sliding_window": True, "sliding_window": 4096,
                                     "max_window_layers": 20}
    arch = import_hf_config(config).architecture
    assert arch.sliding_window is not None and arch.sliding_window.layers == (20, 21, 22, 23)


def test_mistral_window_on_every_layer() -> None:
    arch = imported("mistral-7b-v0.1").architecture
    assert arch.sliding_window is not None
    assert arch.sliding_window.window == 4096 and arch.sliding_window.layers is None


def test_gpt2_keys() -> None:
    arch = imported("gpt2").architecture
    assert (arch.num_layers, arch.hidden_size, arch.num_attention_heads) == (12, 768, 12)
    assert arch.intermediate_size == 4 * 768  # n_inner: null
    assert arch.max_position_embeddings == 1024
    assert arch.position_embedding is PositionEmbedding.LEARNED
    assert arch.tie_word_embeddings is True  # absent: GPT2Config's default
    assert not arch.gated_mlp and arch.norm_kind is NormKind.LAYERNORM


def test_t5_and_flan_t5() -> None:
    t5 = imported("t5-base")
    arch = t5.architecture
    assert arch.kind is ModelKind.ENCODER_DECODER and arch.head is Head.SEQ2SEQ_LM
    assert arch.encoder_decoder is not None and arch.encoder_decoder.num_decoder_layers == 12
    assert arch.encoder_decoder.relative_attention_num_buckets == 32
    assert arch.tie_word_embeddings is True and not arch.gated_mlp and arch.activation == "relu"
    assert t5.reference_class == "T5ForConditionalGeneration"
    flan = imported("flan-t5-base").architecture
    assert flan.gated_mlp and flan.activation == "gelu_new"
    assert flan.tie_word_embeddings is False
    assert flan.intermediate_size == 2048


def test_bert_and_vit_are_base_models_with_pooler() -> None:
    bert = imported("bert-base-uncased")
    assert bert.architecture.head is Head.BASE and bert.architecture.pooler
    assert bert.architecture.type_vocab_size == 2 and bert.architecture.embedding_norm
    assert bert.reference_class == "BertModel"
    vit = imported("vit-base-patch16-224-in21k")
    assert vit.architecture.vision is not None and vit.architecture.vision.num_patches == 196
    assert vit.reference_class == "ViTModel"


def test_falcon_variants() -> None:
    arch = imported("falcon-7b").architecture
    assert arch.num_kv_heads == 1 and arch.attention_kind == "mqa"
    assert arch.norms_per_layer == 1 and arch.parallel_attention_mlp
    assert arch.intermediate_size == 4 * 4544
    falcon40 = real("falcon-7b") | {
        "new_decoder_architecture": True, "num_kv_heads": 8, "hidden_size": 8192, "num_attention_heads": 128,
    }
    arch40 = import_hf_config(falcon40).architecture
    assert arch40.num_kv_heads == 8 and arch40.norms_per_layer == 2
    rw = real("falcon-7b") | {"multi_query": False, "parallel_attn": False, "alibi": True, "bias": True}
    arch_rw = import_hf_config(rw).architecture
    assert arch_rw.num_kv_heads == 71 and arch_rw.position_embedding is PositionEmbedding.ALIBI
    assert arch_rw.attention_bias and arch_rw.mlp_bias


def test_phi3() -> None:
    arch = imported("phi-3-mini-4k-instruct").architecture
    assert arch.sliding_window is not None and arch.sliding_window.window == 2047
    assert not arch.attention_bias and not arch.tie_word_embeddings


def test_tie_defaults_per_model_type() -> None:
    base = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128,
            "vocab_size": 100}
    assert import_hf_config(base | {"model_type": "gemma"}).architecture.tie_word_embeddings is True
    assert import_hf_config(base | {"model_type": "llama"}).architecture.tie_word_embeddings is False
    assert import_hf_config(base | {"model_type": "starcoder2"}).architecture.tie_word_embeddings is True
    assert import_hf_config(base | {"model_type": "qwen2"}).architecture.tie_word_embeddings is False


def test_unknown_model_type_uses_generic_keys_with_a_note() -> None:
    config = {"model_type": "frobnicator", "num_hidden_layers": 2, "hidden_size": 64,
              "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100}
    result = import_hf_config(config)
    assert result.reference_class is None
    assert result.architecture.num_layers == 2
    assert result.notes and "frobnicator" in result.notes[0]
    with pytest.warns(ModelImportWarning, match="frobnicator"):
        architecture_from_hf_config(config)


def test_no_warning_for_a_clean_import() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        architecture_from_hf_config(real("llama-3.1-8b"))


# --- failures: one readable line naming the file and the field ---------------------------------


def test_missing_key_names_key_and_file(tmp_path: Path) -> None:
    config = real("llama-3.1-8b") | {"model_type": "frobnicator"}
    del config["hidden_size"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(ModelImportError) as info:
        load_hf_config(path)
    message = str(info.value)
    assert str(path) in message and "'hidden_size'" in message and "\n" not in message


def test_unknown_type_missing_key() -> None:
    with pytest.raises(ModelImportError, match="x/config.json: missing required key 'vocab_size'"):
        import_hf_config({"model_type": "frobnicator", "num_hidden_layers": 2, "hidden_size": 64,
                          "num_attention_heads": 4, "intermediate_size": 128}, source="x/config.json")
    with pytest.raises(ModelImportError, match="missing required keys 'num_hidden_layers', 'hidden_size', "):
        import_hf_config({"model_type": "mystery-net", "vocab_size": 100})


def test_heads_not_divisible_by_kv_heads() -> None:
    config = real("llama-3.1-8b") | {"num_key_value_heads": 5}
    with pytest.raises(ModelImportError, match=r"'num_key_value_heads' \(5\) must divide"):
        import_hf_config(config, source="config.json")


def test_hidden_not_divisible_without_head_dim() -> None:
    config = real("llama-2-7b") | {"hidden_size": 4100}
    with pytest.raises(ModelImportError, match="num_attention_heads"):
        import_hf_config(config)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"hidden_size": "big"}, "'hidden_size' must be an integer"),
        ({"num_hidden_layers": 0}, "'num_hidden_layers' must be at least 1"),
        ({"tie_word_embeddings": "yes"}, "'tie_word_embeddings' must be true or false"),
        ({"num_hidden_layers": True}, "'num_hidden_layers' must be an integer"),
        ({"rope_scaling": [1, 2]}, "'rope_scaling' must be an object"),
        ({"model_type": 3}, "'model_type' must be a string"),
    ],
)
def test_bad_values(change: dict[str, Any], field: str) -> None:
    with pytest.raises(ModelImportError, match=field):
        import_hf_config(real("llama-3.1-8b") | change, source="config.json")


def test_nested_key_is_named_with_its_path() -> None:
    config = real("gemma-3-4b-it")
    config["text_config"]["num_hidden_layers"] = -1
    with pytest.raises(ModelImportError, match="'text_config.num_hidden_layers'"):
        import_hf_config(config)
    with pytest.raises(ModelImportError, match="'text_config'"):
        import_hf_config({"model_type": "gemma3"})


def test_not_json(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text("{not json")
    with pytest.raises(ModelImportError, match="not valid JSON"):
        load_hf_config(path)


def test_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text("[1, 2]")
    with pytest.raises(ModelImportError, match="must be a JSON object"):
        load_hf_config(path)
    with pytest.raises(ModelImportError, match="must be a JSON object"):
        import_hf_config([1, 2])  # type: ignore[arg-type]


def test_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(ModelImportError, match="no config.json and no"):
        load_hf_config(tmp_path)


def test_folder_with_weights_but_no_config(tmp_path: Path) -> None:
    weights = (SAFETENSORS / "tiny-llama" / "model.safetensors").read_bytes()
    (tmp_path / "model.safetensors").write_bytes(weights)
    with pytest.raises(ModelImportError, match="no config.json"):
        load_hf_config(tmp_path)


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ModelImportError, match="no such file or folder"):
        load_hf_config(tmp_path / "nope")


# --- folders with weights ----------------------------------------------------------------------


def test_folder_and_file_give_the_same_architecture() -> None:
    folder = load_hf_config(SAFETENSORS / "tiny-llama")
    file = load_hf_config(SAFETENSORS / "tiny-llama" / "config.json")
    assert folder.model_copy(update={"name": "x", "source": None}) == file.model_copy(
        update={"name": "x", "source": None}
    )
    assert folder.name == "tiny-llama"


def test_folder_count_matches_weights() -> None:
    result = import_hf_path(SAFETENSORS / "tiny-llama")
    assert result.notes == ()
    deepseek = import_hf_path(SAFETENSORS / "tiny-deepseek-v3-sharded")
    assert not any("safetensors files hold" in n for n in deepseek.notes)


def test_mistral3_tower_counted_as_the_checkpoint_stores_it() -> None:
    # The Pixtral tower and projector are read from the config; the tiny checkpoint written by
    # save_pretrained holds exactly that many values (no difference note, nothing filled in).
    config_only = import_hf_path(SAFETENSORS / "tiny-mistral3" / "config.json")
    tower = config_only.architecture.vision_tower
    assert tower is not None and tower.kind == "pixtral" and tower.total_parameters > 0
    assert not config_only.reference_from_text_config
    folder = import_hf_path(SAFETENSORS / "tiny-mistral3")
    assert folder.architecture.extra_parameters == 0
    assert not any("safetensors" in n for n in folder.notes)


def test_uncounted_towers_filled_from_weights(tmp_path: Path) -> None:
    # An unknown wrapper read on request: its towers are not described, the headers fill them in.
    source = SAFETENSORS / "tiny-mistral3"
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    (tmp_path / "config.json").write_text(json.dumps(config | {"model_type": "my_mistral3"}), encoding="utf-8")
    (tmp_path / "model.safetensors").write_bytes((source / "model.safetensors").read_bytes())
    config_only = import_hf_path(tmp_path / "config.json", approximate=True)
    assert config_only.architecture.extra_parameters == 0
    assert config_only.architecture.vision_tower is None
    assert config_only.reference_from_text_config
    assert any("not counted" in n for n in config_only.notes)
    folder = import_hf_path(tmp_path, approximate=True)
    assert folder.architecture.extra_parameters > 0
    assert any("taken from the safetensors headers" in n for n in folder.notes)


def test_index_without_shards_is_noted() -> None:
    result = import_hf_path(SAFETENSORS / "index-only")
    assert any("without its shards" in n for n in result.notes)


def test_wrapper_tie_flag() -> None:
    text = {"model_type": "mistral", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128, "vocab_size": 100}
    # No flag anywhere: Mistral3Config's class default (tied).
    assert import_hf_config({"model_type": "mistral3", "text_config": text}).architecture.tie_word_embeddings
    # An explicit text_config flag describes the checkpoint; it beats the wrapper's class default.
    untied = {"model_type": "mistral3", "text_config": text | {"tie_word_embeddings": False}}
    assert not import_hf_config(untied).architecture.tie_word_embeddings
    # The wrapper's own explicit flag is what transformers uses.
    assert import_hf_config(untied | {"tie_word_embeddings": True}).architecture.tie_word_embeddings
    llama4 = {"model_type": "llama4", "text_config": {
        "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 16, "intermediate_size": 32, "intermediate_size_mlp": 128, "vocab_size": 100}}
    result = import_hf_config(llama4)
    assert not result.architecture.tie_word_embeddings
    # the vision tower (config class defaults) is counted: the reference is the whole wrapper
    assert result.architecture.vision_tower is not None
    assert result.reference_class == "Llama4ForConditionalGeneration" and not result.reference_from_text_config


def test_gpt_neox_is_read_as_itself_not_as_a_llama_block() -> None:
    """Pythia-70M: 70,426,624 parameters (Biderman et al. 2023, Pythia, arXiv:2304.01373, Table 1;
    18,915,328 without the two embedding matrices). Read as a Llama-style block (gated MLP, no
    biases) it would be 76.7M; the exact match with transformers is in tests/validation."""
    config = json.loads((CONFIGS / "pythia-70m" / "config.json").read_text(encoding="utf-8"))
    imported = import_hf_config(config)
    arch = imported.architecture
    assert count_parameters(arch).total == 70_426_624
    assert count_parameters(arch).total - 2 * 50304 * 512 == 18_915_328
    assert not arch.gated_mlp and arch.norm_kind is NormKind.LAYERNORM and arch.parallel_attention_mlp
    assert arch.position_embedding is PositionEmbedding.ROPE and arch.rope_theta == 10000
    assert imported.reference_class == "GPTNeoXForCausalLM"
    assert not any("unknown model_type" in note for note in imported.notes)


def test_opt_is_read_as_itself() -> None:
    """OPT-125M: 125,239,296 parameters as transformers builds them (tests/validation), with the two
    offset rows of OPT's learned positions; OPT-350M's projected embeddings are refused by name."""
    config = json.loads((CONFIGS / "opt-125m" / "config.json").read_text(encoding="utf-8"))
    imported = import_hf_config(config)
    assert count_parameters(imported.architecture).total == 125_239_296
    assert imported.architecture.extra_parameters == 2 * 768
    assert imported.reference_class == "OPTForCausalLM"
    with pytest.raises(ModelImportError, match="word_embed_proj_dim"):
        import_hf_config({**config, "hidden_size": 1024, "ffn_dim": 4096, "num_attention_heads": 16,
                          "word_embed_proj_dim": 512})


def test_declared_dropout_and_soft_capping_are_read() -> None:
    """GPT-2 declares 0.1 dropout at three sites (its config.json: attn_pdrop, resid_pdrop,
    embd_pdrop); Gemma 2 caps attention scores at 50 and logits at 30 (its config.json). The
    activation estimate counts their masks and tanh outputs (tests/validation/test_activations_vs_torch.py)."""
    gpt2 = import_hf_config(real("gpt2")).architecture
    assert (gpt2.attention_dropout, gpt2.hidden_dropout, gpt2.embedding_dropout) == (0.1, 0.1, 0.1)
    gemma2 = import_hf_config(real("gemma-2-2b")).architecture
    assert (gemma2.attention_logit_softcap, gemma2.final_logit_softcap) == (50.0, 30.0)
    llama = import_hf_config(real("llama-3.1-8b")).architecture
    assert llama.attention_dropout == 0.0 and llama.final_logit_softcap is None
    with pytest.raises(ModelImportError, match="probability"):
        import_hf_config({**real("gpt2"), "resid_pdrop": 1.5})


def test_training_activations_use_the_config_dropout_unless_overridden() -> None:
    from workbench.catalog.resolve import resolve_scenario
    from workbench.core.scenario import Scenario
    from workbench.pluginhost import default_engine

    def activations(**assumptions: float) -> float:
        scenario = Scenario(model="gpt2", gpu="a100-80gb-sxm", workload="pretrain", batch_size=4,
                            seq_len=1024, assumptions=assumptions)
        return default_engine().run(resolve_scenario(scenario)).get("memory.per_gpu.activations")

    declared, off, on = activations(), activations(**{"memory.act_dropout": 0.0}), activations(
        **{"memory.act_dropout": 0.1})
    assert declared == on > off
