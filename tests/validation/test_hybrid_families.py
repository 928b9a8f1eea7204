"""Hybrid state-space / linear-attention families against transformers 5: parameters, active
parameters, and the recurrent state and KV cache a prefill leaves behind.

* Parameters: every real config of these families (tests/data/configs, checked in
  test_param_counts_vs_transformers.py too) and small synthetic variants (below) are built on the
  meta device; ``count_parameters(arch).total`` must equal ``sum(p.numel())`` exactly.
* Active parameters: counted independently from the transformers model itself: every tensor
  under an ``experts`` module holds one slice per routed expert, so a token leaves
  ``(experts - top_k) / experts`` of them unused.
* State: a tiny model of each synthetic config runs a bf16 prefill with ``use_cache=True``; the
  bytes of the cache's tensors, by kind (attention keys/values, convolution windows, recurrent
  states), must equal what the architecture fields say: per recurrent layer
  ``conv_state_elements`` in the model dtype and ``ssm_state_elements`` in fp32 when
  ``ssm_state_fp32``; per attention layer and token ``2 x kv_heads x head_dim`` (the MLA latent
  plus its rotary key for Kimi-Linear).

The synthetic configs are small variations of the transformers config class defaults (sizes
shrunk, biases and options switched on), not published models.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from workbench.catalog.hf_config import HFImport, import_hf_config
from workbench.core.model import ModelArchitecture
from workbench.core.params import count_parameters

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.validation

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
_TOKENS = {"pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0}

_MAMBA2 = {"mamba_n_heads": 8, "mamba_d_state": 16, "mamba_n_groups": 2, "mamba_chunk_size": 4}
_ATTN = {"num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100, **_TOKENS}
TINY: dict[str, dict[str, Any]] = {
    "nemotron_h-all-blocks": {
        "model_type": "nemotron_h", "hidden_size": 64, "hybrid_override_pattern": "M*-EM", "head_dim": 16,
        "intermediate_size": 96, "mamba_num_heads": 8, "mamba_head_dim": 16, "ssm_state_size": 16,
        "n_groups": 2, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
        "moe_shared_expert_intermediate_size": 48, "chunk_size": 4, **_ATTN,
    },
    "nemotron_h-biases-list": {
        "model_type": "nemotron_h", "hidden_size": 64, "head_dim": 16, "intermediate_size": 96,
        "layers_block_type": ["linear_attention", "full_attention", "mlp"], "use_bias": True,
        "use_conv_bias": False, "mlp_bias": True, "mamba_num_heads": 4, "mamba_head_dim": 32,
        "ssm_state_size": 8, "n_groups": 1, "chunk_size": 4, **_ATTN,
    },
    "nemotron_h-latent-moe": {
        "model_type": "nemotron_h", "hidden_size": 64, "hybrid_override_pattern": "ME*E", "head_dim": 16,
        "intermediate_size": 96, "mamba_num_heads": 4, "mamba_head_dim": 16, "ssm_state_size": 8,
        "n_groups": 2, "n_routed_experts": 8, "num_experts_per_tok": 3, "moe_intermediate_size": 48,
        "moe_shared_expert_intermediate_size": 40, "moe_latent_size": 16, "chunk_size": 4, **_ATTN,
    },
    "bamba": {
        "model_type": "bamba", "hidden_size": 64, "num_hidden_layers": 3, "attn_layer_indices": [1],
        "intermediate_size": 96, **_MAMBA2, **_ATTN,
    },
    "bamba-biases": {
        "model_type": "bamba", "hidden_size": 64, "num_hidden_layers": 3, "attn_layer_indices": [0, 2],
        "intermediate_size": 96, "attention_bias": True, "mlp_bias": True, "mamba_proj_bias": True,
        "mamba_conv_bias": False, "mamba_expand": 1, **_MAMBA2, **_ATTN,
    },
    "granitemoehybrid-moe": {
        "model_type": "granitemoehybrid", "hidden_size": 64, "num_hidden_layers": 3,
        "layer_types": ["mamba", "attention", "mamba"], "intermediate_size": 96,
        "shared_intermediate_size": 48, "num_local_experts": 4, "num_experts_per_tok": 2,
        "position_embedding_type": "rope", **_MAMBA2, **_ATTN,
    },
    "granitemoehybrid-dense": {
        "model_type": "granitemoehybrid", "hidden_size": 64, "num_hidden_layers": 3,
        "layer_types": ["attention", "mamba", "mamba"], "intermediate_size": 96,
        "shared_intermediate_size": 48, "num_local_experts": 0, "attention_bias": True,
        "mamba_proj_bias": True, **_MAMBA2, **_ATTN,
    },
    # Granite-4.0 Micro's layout: granitemoehybrid with attention everywhere, no experts (top-k 0).
    "granitemoehybrid-all-attention": {
        "model_type": "granitemoehybrid", "hidden_size": 64, "num_hidden_layers": 2,
        "layer_types": ["attention", "attention"], "intermediate_size": 96, "shared_intermediate_size": 80,
        "num_local_experts": 0, "num_experts_per_tok": 0, "position_embedding_type": "rope", **_MAMBA2,
        **_ATTN,
    },
    "falcon_h1": {
        "model_type": "falcon_h1", "hidden_size": 64, "num_hidden_layers": 2, "head_dim": 16,
        "intermediate_size": 96, "mamba_n_heads": 8, "mamba_d_head": 16, "mamba_d_ssm": 128,
        "mamba_d_state": 16, "mamba_n_groups": 2, "mamba_chunk_size": 4, **_ATTN,
    },
    "falcon_h1-norm-biases": {
        "model_type": "falcon_h1", "hidden_size": 64, "num_hidden_layers": 2, "intermediate_size": 96,
        "mamba_n_heads": 4, "mamba_d_ssm": None, "mamba_expand": 2, "mamba_d_state": 8,
        "mamba_n_groups": 1, "mamba_chunk_size": 4, "mamba_rms_norm": True, "projectors_bias": True,
        "mamba_proj_bias": True, "attention_bias": True, "mlp_bias": True, **_ATTN,
    },
    "jamba": {
        "model_type": "jamba", "hidden_size": 64, "num_hidden_layers": 4, "attn_layer_period": 2,
        "attn_layer_offset": 1, "expert_layer_period": 2, "expert_layer_offset": 1,
        "intermediate_size": 96, "num_experts": 4, "mamba_d_state": 16, **_ATTN,
    },
    "jamba-biases-rank": {
        "model_type": "jamba", "hidden_size": 64, "num_hidden_layers": 3, "attn_layer_period": 3,
        "attn_layer_offset": 0, "expert_layer_period": 3, "expert_layer_offset": 2,
        "intermediate_size": 96, "num_experts": 4, "num_experts_per_tok": 1, "mamba_d_state": 8,
        "mamba_proj_bias": True, "mamba_dt_rank": 7, "mamba_expand": 1, **_ATTN,
    },
    "lfm2": {
        "model_type": "lfm2", "hidden_size": 64, "num_hidden_layers": 3,
        "layer_types": ["conv", "full_attention", "conv"], "intermediate_size": 96, "block_multiple_of": 16,
        **_ATTN,
    },
    "lfm2-bias-idxs": {
        "model_type": "lfm2", "hidden_size": 64, "num_hidden_layers": 3, "full_attn_idxs": [2],
        "intermediate_size": 96, "block_auto_adjust_ff_dim": False, "conv_bias": True, "conv_L_cache": 4,
        "tie_word_embeddings": False, **_ATTN,
    },
    "kimi_linear": {
        "model_type": "kimi_linear", "hidden_size": 64, "num_hidden_layers": 3, "intermediate_size": 96,
        "moe_intermediate_size": 32, "num_experts": 4, "num_experts_per_token": 2, "kv_lora_rank": 16,
        "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 8, "first_k_dense_replace": 1,
        "linear_attn_config": {"kda_layers": [1, 3], "full_attn_layers": [2], "num_heads": 4,
                               "head_dim": 16, "short_conv_kernel_size": 4},
        **_ATTN, "num_key_value_heads": 4,
    },
    "kimi_linear-bias-shared": {
        "model_type": "kimi_linear", "hidden_size": 64, "num_hidden_layers": 5, "intermediate_size": 96,
        "moe_intermediate_size": 32, "num_experts": 4, "num_experts_per_token": 2, "kv_lora_rank": 16,
        "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 8, "num_shared_experts": 2,
        "attention_bias": True, "linear_num_heads": 2, "linear_head_dim": 8, **_ATTN,
        "num_key_value_heads": 4,
    },
    "qwen3_5_moe_text": {
        "model_type": "qwen3_5_moe_text", "hidden_size": 64, "num_hidden_layers": 4, "head_dim": 16,
        "linear_key_head_dim": 16, "linear_value_head_dim": 8, "linear_num_key_heads": 2,
        "linear_num_value_heads": 4, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48,
        "num_experts": 4, "num_experts_per_tok": 2, **_ATTN,
    },
    "qwen3_5_moe_text-bias-interval": {
        "model_type": "qwen3_5_moe_text", "hidden_size": 64, "num_hidden_layers": 4, "head_dim": 16,
        "full_attention_interval": 2, "attention_bias": True, "linear_key_head_dim": 8,
        "linear_value_head_dim": 8, "linear_num_key_heads": 2, "linear_num_value_heads": 2,
        "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48, "num_experts": 4,
        "num_experts_per_tok": 2, **_ATTN,
    },
    # transformers 5 ties the shared blocks' weights only when tie_word_embeddings is true (its
    # tying follows that flag); Zamba2's own default. The untied case is in test_hybrid_readers.py.
    "zamba2-adapters-two-blocks": {
        "model_type": "zamba2", "hidden_size": 64, "num_hidden_layers": 4,
        "layers_block_type": ["mamba", "hybrid", "mamba", "hybrid"],
        "intermediate_size": 96, "n_mamba_heads": 8, "mamba_d_state": 16, "mamba_ngroups": 2, "chunk_size": 4,
        "num_mem_blocks": 2, "use_shared_attention_adapter": True, "adapter_rank": 8,
        **_ATTN, "num_key_value_heads": 4,
    },
    "zamba2-one-block-biases": {
        "model_type": "zamba2", "hidden_size": 64, "num_hidden_layers": 6,
        "layers_block_type": ["hybrid", "mamba", "hybrid", "hybrid", "mamba", "hybrid"],
        "n_mamba_heads": 8, "mamba_d_state": 16, "chunk_size": 4, "num_mem_blocks": 1, "adapter_rank": 8,
        "use_shared_attention_adapter": True, "add_bias_linear": True, "use_mem_rope": True,
        # q/k/v adapters are as wide as the attention input: transformers runs them with MHA only.
        **_ATTN, "num_key_value_heads": 4,
    },
    "zamba2-two-blocks-reused-gqa": {
        "model_type": "zamba2", "hidden_size": 64, "num_hidden_layers": 6,
        "layers_block_type": ["hybrid", "mamba", "hybrid", "hybrid", "mamba", "hybrid"],
        "n_mamba_heads": 4, "mamba_d_state": 8, "chunk_size": 4, "num_mem_blocks": 2, "adapter_rank": 4,
        **_ATTN,
    },
}

REAL = [
    "nemotron-3-nano-30b-a3b", "nemotron-h-56b-base-8k", "bamba-9b", "falcon-h1-0.5b",
    "ai21-jamba-1.5-mini", "lfm2-1.2b", "kimi-linear-48b-a3b-instruct", "qwen3.5-35b-a3b",
    "qwen3.5-397b-a17b",
]


def _config_class(config: dict[str, Any], imported: HFImport) -> Any:
    if imported.reference_from_text_config:
        text = config["text_config"]
        return transformers.CONFIG_MAPPING[text["model_type"]].from_dict(text)
    return transformers.CONFIG_MAPPING[config["model_type"]].from_dict(config)


def _reference(config: dict[str, Any], imported: HFImport, device: str) -> Any:
    assert imported.reference_class is not None
    with torch.device(device):
        return getattr(transformers, imported.reference_class)(_config_class(config, imported))


def _active_from_model(model: Any, arch: ModelArchitecture) -> int:
    """Active parameters from the transformers model: routed-expert tensors hold one slice per
    expert, of which top-k are used per token."""
    total = sum(p.numel() for p in model.parameters())
    if arch.moe is None:
        return total
    routed = sum(p.numel() for name, p in model.named_parameters() if ".experts." in name)
    moe = arch.moe
    unused, rest = divmod(routed * (moe.num_experts - moe.experts_per_token), moe.num_experts)
    assert rest == 0
    return total - unused


def _real(name: str) -> dict[str, Any]:
    return json.loads((CONFIGS / name / "config.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(TINY))
def test_tiny_parameters_exact(name: str) -> None:
    config = TINY[name]
    imported = import_hf_config(config, name=name)
    model = _reference(config, imported, "meta")
    count = count_parameters(imported.architecture)
    assert count.total == sum(p.numel() for p in model.parameters())
    assert count.active == _active_from_model(model, imported.architecture)


@pytest.mark.parametrize("name", REAL)
def test_real_parameters_and_active_exact(name: str) -> None:
    config = _real(name)
    imported = import_hf_config(config, name=name)
    model = _reference(config, imported, "meta")
    count = count_parameters(imported.architecture)
    assert count.total == sum(p.numel() for p in model.parameters())
    assert count.active == _active_from_model(model, imported.architecture)
    buffers = sum(b.numel() for n, b in model.named_buffers() if n.endswith("e_score_correction_bias"))
    assert count.buffers == buffers


def test_zamba2_class_defaults_exact() -> None:
    # Zamba2Config's defaults: 54 layers, 9 of them running the one shared block.
    config = {"model_type": "zamba2"}
    imported = import_hf_config(config)
    model = _reference(config, imported, "meta")
    assert count_parameters(imported.architecture).total == sum(p.numel() for p in model.parameters())


def _cache_bytes(cache: Any) -> dict[str, int]:
    found = {"kv": 0, "conv": 0, "ssm": 0}
    for layer in cache.layers:
        for kind in ("keys", "values"):
            tensor = getattr(layer, kind, None)
            if isinstance(tensor, torch.Tensor):
                found["kv"] += tensor.numel() * tensor.element_size()
        for attr, kind in (("conv_states", "conv"), ("recurrent_states", "ssm")):
            for tensor in (getattr(layer, attr, None) or {}).values():
                if tensor is not None:
                    found[kind] += tensor.numel() * tensor.element_size()
    return found


def _expected_bytes(arch: ModelArchitecture, tokens: int, width: int) -> dict[str, int]:
    expected = {"kv": 0, "conv": 0, "ssm": 0}
    rec = arch.recurrent
    for i in range(arch.num_layers):
        if arch.has_recurrent(i):
            assert rec is not None
            expected["conv"] += rec.conv_state_elements * width
            expected["ssm"] += rec.ssm_state_elements * (4 if rec.ssm_state_fp32 else width)
        if arch.has_attention(i):
            if arch.mla is not None:
                per_token = arch.mla.kv_lora_rank + arch.mla.qk_rope_head_dim
            else:
                per_token = 2 * arch.num_kv_heads * arch.head_dim
            expected["kv"] += tokens * per_token * width
    return expected


@pytest.mark.parametrize("name", sorted(TINY))
def test_prefill_state_and_kv_bytes_exact(name: str) -> None:
    config = TINY[name]
    imported = import_hf_config(config, name=name)
    torch.manual_seed(0)
    model = _reference(config, imported, "cpu").to(torch.bfloat16).eval()
    tokens = 5
    with torch.no_grad():
        out = model(torch.randint(1, 90, (1, tokens)), use_cache=True)
    assert _cache_bytes(out.past_key_values) == _expected_bytes(imported.architecture, tokens, 2)


# Published totals (rounded by their publishers) and where they come from; the exact counts are
# the transformers ones above. Checked within 1.5% (totals) and 3% (active).
PUBLISHED: dict[str, tuple[float, float | None, str]] = {
    "nemotron-3-nano-30b-a3b": (31.6e9, 3.6e9, (
        "https://huggingface.co/nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 (model card: 31.6B total, "
        "3.2B active, 3.6B active including embeddings)")),
    "ai21-jamba-1.5-mini": (52e9, 12e9, (
        "https://huggingface.co/ai21labs/AI21-Jamba-1.5-Mini (model card: 12B active, 52B total)")),
    "qwen3.5-397b-a17b": (397e9, 17e9, (
        "https://huggingface.co/Qwen/Qwen3.5-397B-A17B (397B total with the vision tower; 17B "
        "activated per token in the language model, compared without the vision tower)")),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_figures(name: str) -> None:
    total, active, _source = PUBLISHED[name]
    arch = import_hf_config(_real(name)).architecture
    count = count_parameters(arch)
    assert count.total == pytest.approx(total, rel=0.015)
    if active is not None:
        # Towers (arch.extra_parameters) run on images, not on every generated token.
        assert count.active - arch.extra_parameters == pytest.approx(active, rel=0.03)


def test_kimi_linear_matches_its_safetensors_total() -> None:
    # A model report of moonshotai/Kimi-Linear-48B-A3B-Instruct (the source of the config, see
    # tests/data/configs/README.md) lists 49,122,681,728 tensor elements in its safetensors: the
    # parameters plus the 26 MoE layers' e_score_correction_bias buffers (256 each).
    count = count_parameters(import_hf_config(_real("kimi-linear-48b-a3b-instruct")).architecture)
    assert count.stored == 49_122_681_728
    assert count.buffers == 26 * 256
