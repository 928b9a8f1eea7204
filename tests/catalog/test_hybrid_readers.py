"""Readers of the hybrid state-space / linear-attention families on their real configs and on bad
input. The exact totals pinned here were measured against transformers 5.24 (the validation
suite, tests/validation/test_hybrid_families.py, rebuilds them); the hand counts spell out what
a block holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from workbench.catalog.hf_config import import_hf_config
from workbench.core.errors import ModelImportError
from workbench.core.model import LayerMixer, ModelArchitecture, RecurrentKind
from workbench.core.params import count_parameters, layer_breakdown

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"


def real(name: str) -> dict[str, Any]:
    return json.loads((CONFIGS / name / "config.json").read_text(encoding="utf-8"))


def arch_of(name: str) -> ModelArchitecture:
    return import_hf_config(real(name), name=name).architecture


# name -> (total, active), as transformers 5.24 builds them (meta device, sum of numel).
EXACT = {
    "nemotron-3-nano-30b-a3b": (31_577_937_344, 3_580_073_408),
    "nemotron-h-56b-base-8k": (56_324_350_464, 56_324_350_464),
    "bamba-9b": (9_780_235_392, 9_780_235_392),
    "falcon-h1-0.5b": (521_411_104, 521_411_104),
    "ai21-jamba-1.5-mini": (51_570_323_328, 12_110_311_296),
    "lfm2-1.2b": (1_170_340_608, 1_170_340_608),
    "kimi-linear-48b-a3b-instruct": (49_122_675_072, 3_484_453_248),
    # With the vision tower (446,571,248 and 456,010,480 parameters), counted in the active ones.
    "qwen3.5-35b-a3b": (35_107_181_936, 3_901_560_176),
    "qwen3.5-397b-a17b": (396_802_360_816, 17_805_051_376),
}


@pytest.mark.parametrize("name", sorted(EXACT))
def test_exact_counts(name: str) -> None:
    count = count_parameters(arch_of(name))
    assert (count.total, count.active) == EXACT[name]


def test_nemotron_nano_blocks_are_one_part_each() -> None:
    arch = arch_of("nemotron-3-nano-30b-a3b")
    pattern = real("nemotron-3-nano-30b-a3b")["hybrid_override_pattern"]
    assert arch.num_layers == len(pattern) == 52
    assert [m.value for m in arch.layer_mixers or ()].count("recurrent") == pattern.count("M") == 23
    assert arch.attention_layers == pattern.count("*") == 6
    # Mamba and attention blocks carry no FFN; MoE blocks no mixer.
    assert set(arch.ffn_free_layers) == {i for i, ch in enumerate(pattern) if ch in "M*"}
    assert [i for i in range(52) if arch.is_moe_layer(i)] == [i for i, ch in enumerate(pattern) if ch == "E"]
    assert arch.gated_mlp is False and arch.activation == "relu2"
    rec = arch.recurrent
    assert rec is not None and rec.kind is RecurrentKind.MAMBA2
    # 64 heads x 64 = 4096 inner; conv over x, B, C: 4096 + 2 x 8 groups x 128 state.
    assert (rec.heads, rec.head_dim, rec.state_size, rec.groups) == (64, 64, 128, 8)
    assert rec.conv_channels == 4096 + 2 * 8 * 128
    assert rec.conv_state_elements == rec.conv_channels * 4
    assert rec.ssm_state_elements == 64 * 64 * 128 and rec.ssm_state_fp32
    # Hand count of one Mamba block: in_proj (2688 -> 4096 + 6144 + 64), conv (6144 x 4 + bias),
    # dt_bias / A_log / D (64 each), gated norm (4096), out_proj (4096 -> 2688), block norm (2688).
    mamba = layer_breakdown(arch, 0)
    assert mamba.recurrent == 2688 * (4096 + 6144 + 64) + 6144 * 5 + 3 * 64 + 4096 + 4096 * 2688
    assert mamba.norms == 2688 and mamba.mlp == mamba.experts == mamba.attention == 0
    # One MoE block: 128 relu2 experts (up + down, 2688 x 1856), router 128 x 2688, shared expert
    # 2688 x 3712 up and down, one norm; 6 of the 128 experts are active.
    moe = layer_breakdown(arch, 1)
    expert = 2 * 2688 * 1856
    assert moe.experts == 128 * expert + 128 * 2688 + 2 * 2688 * 3712
    assert moe.active == moe.total - 122 * expert
    assert moe.buffers == 128  # e_score_correction_bias


def test_nemotron_h_56b_mlp_blocks_and_legacy_head_dim() -> None:
    result = import_hf_config(real("nemotron-h-56b-base-8k"))
    arch = result.architecture
    assert arch.moe is None and arch.head_dim == 128
    assert not any("head_dim" in note for note in result.notes)  # attention_head_dim was read
    pattern = real("nemotron-h-56b-base-8k")["hybrid_override_pattern"]
    assert [arch.mixer(i) is LayerMixer.NONE for i in range(arch.num_layers)] == [ch == "-" for ch in pattern]


def _nemotron(**extra: Any) -> dict[str, Any]:
    return {"model_type": "nemotron_h", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
            "head_dim": 16, "intermediate_size": 96, "vocab_size": 100, "mamba_num_heads": 4,
            "mamba_head_dim": 32, "ssm_state_size": 8, "n_groups": 1, **extra}


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ({"hybrid_override_pattern": "M*X"}, "hybrid_override_pattern"),
        ({"layers_block_type": ["linear_attention", "cross_attention"]}, "cross_attention"),
        ({"hybrid_override_pattern": "ME", "mlp_bias": True}, "mlp_bias"),
    ],
)
def test_nemotron_refuses_what_it_cannot_read(extra: dict[str, Any], needle: str) -> None:
    with pytest.raises(ModelImportError, match=needle):
        import_hf_config(_nemotron(**extra))


def test_nemotron_latent_experts() -> None:
    # Nemotron-3 Super's latent MoE: routed experts between fc1_latent_proj (hidden -> latent) and
    # fc2_latent_proj (latent -> hidden); router and shared expert on the hidden state.
    arch = import_hf_config(_nemotron(
        hybrid_override_pattern="ME", n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=48,
        moe_shared_expert_intermediate_size=40, moe_latent_size=16,
    )).architecture
    assert arch.moe is not None and arch.moe.latent_size == 16
    moe = layer_breakdown(arch, 1)
    expert = 2 * 16 * 48
    assert moe.experts == 8 * expert + 8 * 64 + 2 * 64 * 40 + 2 * 64 * 16
    assert moe.active == moe.total - 6 * expert


def test_bamba_and_granite_mamba_layers() -> None:
    arch = arch_of("bamba-9b")
    assert [i for i in range(32) if arch.has_attention(i)] == [9, 18, 27]
    assert arch.recurrent_layers == 29 and not arch.ffn_free_layers
    rec = arch.recurrent
    assert rec is not None and (rec.heads, rec.head_dim, rec.state_size, rec.groups) == (128, 64, 128, 1)
    granite = import_hf_config({
        "model_type": "granitemoehybrid", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "layer_types": ["mamba", "attention"], "intermediate_size": 96, "shared_intermediate_size": 48,
        "num_local_experts": 0, "vocab_size": 100, "mamba_n_heads": 8, "mamba_d_state": 16,
    }).architecture
    # No experts: the shared MLP is the block's dense FFN; NoPE unless position_embedding_type is rope.
    assert granite.moe is None and granite.intermediate_size == 48
    assert granite.position_embedding.value == "none"
    assert granite.layer_mixers == (LayerMixer.RECURRENT, LayerMixer.ATTENTION)


def test_falcon_h1_parallel_blocks_and_width_check() -> None:
    arch = arch_of("falcon-h1-0.5b")
    assert arch.layer_mixers == (LayerMixer.PARALLEL,) * 36
    assert arch.attention_layers == arch.recurrent_layers == 36
    rec = arch.recurrent
    assert rec is not None and rec.heads * rec.head_dim == 1536
    # mamba_rms_norm false: no gated norm in the mixer.
    assert rec.other_parameters == (1536 + 2 * 128) * 5 + 3 * 24
    config = real("falcon-h1-0.5b")
    del config["mamba_d_ssm"]  # transformers' default 1024 then disagrees with 24 heads x 64
    with pytest.raises(ModelImportError, match="mamba_d_head"):
        import_hf_config(config)


def test_jamba_mamba1_mixer_and_expert_layers() -> None:
    arch = arch_of("ai21-jamba-1.5-mini")
    assert [i for i in range(32) if arch.has_attention(i)] == [4, 12, 20, 28]
    assert [i for i in range(32) if arch.is_moe_layer(i)] == list(range(1, 32, 2))
    rec = arch.recurrent
    assert rec is not None and rec.kind is RecurrentKind.MAMBA
    inner, state, rank = 8192, 16, 256  # expand 2 x 4096; dt_rank "auto" = ceil(4096 / 16)
    assert rec.projections == ((4096, 2 * inner), (inner, rank + 2 * state), (rank, inner), (inner, 4096))
    assert rec.ssm_state_elements == inner * state and rec.conv_state_elements == inner * 4


def test_lfm2_short_conv_and_ffn_width() -> None:
    arch = arch_of("lfm2-1.2b")
    assert [i for i in range(16) if arch.has_attention(i)] == [2, 5, 8, 10, 12, 14]
    # block_ff_dim 12288 overrides intermediate_size; 2/3 of it, rounded up to 256: 8192.
    assert arch.intermediate_size == 8192
    rec = arch.recurrent
    assert rec is not None and rec.kind is RecurrentKind.SHORT_CONV
    assert rec.ssm_state_elements == 0 and rec.conv_state_elements == 2048 * 3
    assert arch.tie_word_embeddings and arch.qk_norm


def test_kimi_linear_one_based_layer_lists() -> None:
    arch = arch_of("kimi-linear-48b-a3b-instruct")
    assert [i + 1 for i in range(27) if arch.has_attention(i)] == [4, 8, 12, 16, 20, 24, 27]
    assert arch.mla is not None and arch.mla.q_lora_rank is None
    assert arch.moe is not None and arch.moe.dense_layers == (0,)
    rec = arch.recurrent
    assert rec is not None and rec.kind is RecurrentKind.KDA
    assert rec.ssm_state_elements == 32 * 128 * 128
    assert rec.conv_state_elements == 3 * 32 * 128 * 4
    bad = real("kimi-linear-48b-a3b-instruct")
    bad["linear_attn_config"] = {**bad["linear_attn_config"], "kda_layers": [1, 2, 3]}
    with pytest.raises(ModelImportError, match="linear_attn_config"):
        import_hf_config(bad)


def test_qwen3_5_wrapper_reads_its_language_model() -> None:
    result = import_hf_config(real("qwen3.5-35b-a3b"))
    arch = result.architecture
    assert result.reference_class == "Qwen3_5MoeForConditionalGeneration"
    assert not result.reference_from_text_config
    # Vision tower, by hand: Conv3d patch embedding (3 x 2 x 16 x 16 -> 1152, biased), 2304 learned
    # positions, 27 blocks (2 LayerNorms, qkv, proj, fc1 1152 -> 4304, fc2; all biased), and the
    # merger: LayerNorm, 4608 x 4608 and 4608 -> 2048 (the language model's width), biased.
    h, inner, merged = 1152, 4304, 4 * 1152
    block = 4 * h + 3 * h * h + 3 * h + h * h + h + 2 * h * inner + inner + h
    merger = 2 * h + merged * merged + merged + merged * 2048 + 2048
    vision = 3 * 2 * 16 * 16 * h + h + 2304 * h + 27 * block + merger
    assert arch.extra_parameters == vision == 446_571_248
    assert any("multi-token-prediction" in note for note in result.notes)
    assert not any("intermediate_size" in note for note in result.notes)
    assert [i for i in range(40) if arch.has_attention(i)] == list(range(3, 40, 4))
    assert arch.attention_output_gate and arch.qk_norm
    rec = arch.recurrent
    assert rec is not None and rec.kind is RecurrentKind.GATED_DELTANET
    # 32 value heads of 128 x a 128 key dim each; conv over q, k (16 x 128 each) and v (32 x 128).
    assert rec.ssm_state_elements == 32 * 128 * 128
    assert rec.conv_channels == 2 * 16 * 128 + 32 * 128
    assert arch.moe is not None and arch.moe.shared_expert_gate and not arch.moe.dense_layers


def _zamba2(**extra: Any) -> dict[str, Any]:
    return {"model_type": "zamba2", "hidden_size": 64, "num_hidden_layers": 6, "num_attention_heads": 4,
            "layers_block_type": ["hybrid", "mamba", "hybrid", "hybrid", "mamba", "hybrid"],
            "n_mamba_heads": 8, "mamba_d_state": 16, "vocab_size": 100, "num_mem_blocks": 2,
            "adapter_rank": 8, **extra}


def test_zamba2_shared_blocks_are_stored_once() -> None:
    arch = import_hf_config(_zamba2()).architecture
    sb = arch.shared_blocks
    assert sb is not None and sb.layers == (0, 2, 3, 5) and sb.distinct == 2 and sb.input_width == 128
    assert arch.head_dim == 32 and arch.attention_layers == 4 and arch.recurrent_layers == 6
    assert arch.ffn_free_layers == (1, 4)
    # A hybrid layer computes with the whole shared block: attention reads 2 x hidden into q, k, v
    # (4 heads x 32), o_proj back to 64; the MLP is 4 x hidden wide and gated, with this layer's
    # own gate/up adapter (64 x 8 + 8 x 512) and its own 64 x 64 projection.
    layer = layer_breakdown(arch, 0)
    assert layer.attention == 3 * 128 * 128 + 128 * 64 + 64 * 64
    assert layer.mlp == 3 * 64 * 256 + 64 * 8 + 8 * 512
    assert layer.norms == 64 + 128 + 64
    # The model stores 2 shared blocks for its 4 hybrid layers.
    blocks = 3 * 128 * 128 + 128 * 64 + 3 * 64 * 256 + 128 + 64
    per_layer = 64 * 64 + 64 * 8 + 8 * 512  # projection and gate/up adapter
    mamba = arch.recurrent.parameters if arch.recurrent else 0
    embedding = 100 * 64
    assert count_parameters(arch).total == embedding + 2 * blocks + 4 * per_layer + 6 * (mamba + 64) + 64


def test_zamba2_untied_head_adds_only_the_head() -> None:
    # transformers 5 ties the shared blocks only when tie_word_embeddings is true (its tying
    # follows that flag), so from_config of an untied Zamba2 builds every hybrid layer its own
    # copy; the architecture shares them either way, and so does the count.
    tied = count_parameters(import_hf_config(_zamba2()).architecture).total
    untied = count_parameters(import_hf_config(_zamba2(tie_word_embeddings=False)).architecture).total
    assert untied - tied == 100 * 64


def test_zamba2_layer_count_must_match_the_types() -> None:
    with pytest.raises(ModelImportError, match="num_hidden_layers"):
        import_hf_config(_zamba2(num_hidden_layers=5))
    with pytest.raises(ModelImportError, match="transformer"):
        types = ["hybrid", "transformer", "mamba", "mamba", "mamba", "mamba"]
        import_hf_config(_zamba2(layers_block_type=types))
