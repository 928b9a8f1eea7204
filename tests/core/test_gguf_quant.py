"""GGUF types and llama-quantize presets against llama.cpp's own tables and published file sizes.

Sources (ggml-org/llama.cpp):
* @01243c587feceaa5d6a6c2305535ef2f549c48b8:ggml/src/ggml-common.h: the block structs, their
  static_assert sizes and the bits per weight stated beside them (Q2_K "2.625", Q3_K "3.4375",
  Q4_K "4.5", Q5_K "5.5", Q6_K "6.5625", IQ2_XXS "2.0625", IQ2_XS "2.3125", IQ3_XXS "3.0625").
* @007dbbf3fd17eefe9b47fee45f48f7ba5e62b714:src/llama-quant.cpp: llama_tensor_get_type_impl
  (use_more_bits, the LLM_TYPE_70B attn_v bump, the 8-expert rules, tensor_type_fallback).
* @08d0baaca6745ecaec3a75cccf63b533646ead22:tools/llama-bench/README.md: llama-bench's model size
  (the sum of the tensors' bytes): "models/Qwen2.5-7B-Instruct-Q4_K_M.gguf" model_size 4677120000,
  model_n_params 7615616512; "llama 7B mostly Q4_0 3.56 GiB 6.74 B" and "llama 13B mostly Q4_0
  6.86 GiB 13.02 B" (LLaMA 7B / 13B shapes, the same as Llama-2-7B / 13B).
"""

from __future__ import annotations

import pytest

from workbench.catalog.models import load_model_catalog
from workbench.core import gguf
from workbench.core.dtypes import DType, WeightFormat, weight_bits
from workbench.core.errors import InputError
from workbench.core.model import ModelArchitecture
from workbench.core.params import count_parameters

CATALOG = load_model_catalog()


def arch(model_id: str) -> ModelArchitecture:
    return CATALOG[model_id].architecture


@pytest.mark.parametrize(
    ("name", "bits"),
    [("Q2_K", 2.625), ("Q3_K", 3.4375), ("Q4_K", 4.5), ("Q5_K", 5.5), ("Q6_K", 6.5625), ("Q8_0", 8.5),
     ("Q4_0", 4.5), ("Q4_1", 5.0), ("Q5_0", 5.5), ("IQ4_NL", 4.5), ("IQ4_XS", 4.25), ("IQ3_XXS", 3.0625),
     ("IQ2_XS", 2.3125), ("IQ2_XXS", 2.0625), ("F16", 16.0), ("BF16", 16.0), ("F32", 32.0)],
)
def test_bits_per_weight_of_ggml_types(name: str, bits: float) -> None:
    assert gguf.tables().types[name].bits == bits


def test_kv_cache_block_types() -> None:
    # block_q8_0: fp16 d + 32 int8 = 34 B; block_q4_0: fp16 d + 16 B of nibbles = 18 B; per 32 values.
    assert DType.Q8_0.bytes == 34 / 32 and DType.Q4_0.bytes == 18 / 32


def test_other_formats_bits() -> None:
    assert weight_bits(WeightFormat.MLX4) == 4.5 and weight_bits(WeightFormat.MLX8) == 8.5
    assert weight_bits(WeightFormat.INT4, 128) == 4 + 20 / 128  # GPTQ / AWQ
    assert weight_bits(WeightFormat.Q4_K_M) == 4.5 and weight_bits(WeightFormat.Q6_K) == 6.5625
    assert WeightFormat.Q4_K_M.is_gguf and not WeightFormat.MLX4.is_gguf and not WeightFormat.INT4.is_gguf
    assert all(gguf.preset(f.value) for f in WeightFormat if f.is_gguf)


def _types(a: ModelArchitecture, preset: str) -> dict[str, str]:
    return {t.name: t.type for t in gguf.plan(a, preset)}


def test_q4_k_m_keeps_use_more_bits_layers_at_q6_k() -> None:
    types = _types(arch("llama-3.1-8b"), "q4_k_m")
    # use_more_bits(i, 32): i < 4, i >= 28, or (i - 4) % 3 == 2 -> 4 + 4 + 8 blocks.
    more = [i for i in range(32) if i < 4 or i >= 28 or (i - 4) % 3 == 2]
    assert len(more) == 16
    for i in range(32):
        want = "Q6_K" if i in more else "Q4_K"
        assert types[f"blk.{i}.attn_v.weight"] == types[f"blk.{i}.ffn_down.weight"] == want
        assert types[f"blk.{i}.attn_q.weight"] == types[f"blk.{i}.ffn_up.weight"] == "Q4_K"
    assert types["output.weight"] == "Q6_K" and types["token_embd.weight"] == "Q4_K"


def test_small_config_hand_count() -> None:
    """Q4_K_S on a 4-block toy: attn_v Q5_K in blocks 0-3 (i_attention_wv < 4), ffn_down Q5_K in
    block 0 (i < 4/8 = 0: none), output Q6_K; 1-D tensors F32."""
    a = ModelArchitecture(name="toy", num_layers=4, hidden_size=256, num_attention_heads=4, num_kv_heads=4,
                          head_dim=64, intermediate_size=512, vocab_size=1000)
    pb = gguf.preset_bytes(a, "q4_k_s")
    q = 256 * 256  # each of q, k, v, o
    ffn = 256 * 512
    blocks = 4 * ((3 * q + 3 * ffn) * 144 // 256 + q * 176 // 256)
    embd, head = 256 * 1000 * 144 // 256, 256 * 1000 * 210 // 256
    norms = (2 * 4 + 1) * 256 * 4
    assert pb.bytes == {"linear": blocks, "embedding": embd, "head": head, "plain": norms}
    assert pb.total == blocks + embd + head + norms


def test_tied_head_takes_the_output_rule_and_fallback_types() -> None:
    # hidden 288: rows are not whole 256-blocks, so K-quants fall back (Q4_K -> Q5_0, Q6_K -> Q8_0),
    # and the output rule sees nx % 256 != 0 -> Q8_0.
    a = ModelArchitecture(name="odd", num_layers=2, hidden_size=288, num_attention_heads=6, num_kv_heads=6,
                          head_dim=48, intermediate_size=768, vocab_size=512, tie_word_embeddings=True)
    types = _types(a, "q4_k_m")
    assert "output.weight" not in types
    assert types["token_embd.weight"] == "Q8_0"
    assert types["blk.0.attn_q.weight"] == "Q5_0"  # 288 % 256 != 0
    assert types["blk.1.attn_v.weight"] == "Q8_0"  # Q6_K (more bits) falls back
    assert types["blk.0.ffn_down.weight"] == "Q4_K"  # rows of 768 are whole blocks


def test_70b_attn_v_bump_and_eight_expert_rules() -> None:
    types = _types(arch("llama-3.1-70b"), "q4_k_m")
    assert types["blk.10.attn_v.weight"] == "Q5_K"  # not a more-bits block: Q4_K lifted for LLM_TYPE_70B
    assert types["blk.0.attn_v.weight"] == "Q6_K"
    mixtral = _types(arch("mixtral-8x7b"), "q4_k_m")
    assert mixtral["blk.5.attn_v.weight"] == mixtral["blk.5.attn_k.weight"] == "Q8_0"
    assert mixtral["blk.5.attn_output.weight"] == "Q5_K"
    assert mixtral["blk.5.ffn_down_exps.weight"] in ("Q4_K", "Q6_K")


def test_published_llama_bench_sizes() -> None:
    qwen = arch("qwen2.5-7b")
    assert count_parameters(qwen).total == 7_615_616_512
    assert gguf.preset_bytes(qwen, "q4_k_m").total == 4_677_120_000  # byte for byte
    assert round(gguf.preset_bytes(arch("llama-2-7b"), "q4_0").total / 2**30, 2) == 3.56
    assert round(gguf.preset_bytes(arch("llama-2-13b"), "q4_0").total / 2**30, 2) == 6.86


def test_presets_order_by_size() -> None:
    a = arch("llama-3.1-8b")
    order = ["iq2_xxs", "iq2_xs", "q2_k", "q3_k_s", "q3_k_m", "q3_k_l", "iq4_xs", "q4_k_s", "q4_k_m",
             "q5_k_s", "q5_k_m", "q6_k", "q8_0", "f16"]
    sizes = [gguf.preset_bytes(a, p).total for p in order]
    assert sizes == sorted(sizes)


@pytest.mark.parametrize("model_id", ["deepseek-v3", "bamba-9b", "t5-small", "falcon-7b", "gpt2"])
def test_layouts_not_modelled_are_refused(model_id: str) -> None:
    with pytest.raises(InputError, match="GGUF sizes"):
        gguf.plan(arch(model_id), "q4_k_m")
