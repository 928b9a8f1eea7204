"""Parameter arithmetic, checked by hand-written formulas and invariants.

The exact agreement with transformers lives in tests/validation; these tests need no torch.
"""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbench.core.model import (
    EncoderDecoderConfig,
    Head,
    MLAConfig,
    ModelArchitecture,
    ModelKind,
    MoEConfig,
    NormKind,
    PositionEmbedding,
    VisionConfig,
)
from workbench.core.params import (
    BREAKDOWN_KEYS,
    count_parameters,
    embedding_parameters,
    final_norm_parameters,
    layer_active_parameters,
    layer_breakdown,
    layer_parameters,
    lm_head_parameters,
)


def llama31_8b(**changes: object) -> ModelArchitecture:
    fields: dict[str, object] = {
        "name": "Llama-3.1-8B", "num_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
        "num_kv_heads": 8, "head_dim": 128, "intermediate_size": 14336, "vocab_size": 128256,
    }
    fields.update(changes)
    return ModelArchitecture(**fields)


def test_llama_by_hand() -> None:
    h, heads, kv, hd, inner, vocab, layers = 4096, 32, 8, 128, 14336, 128256, 32
    attention = h * heads * hd + 2 * h * kv * hd + heads * hd * h
    mlp = 3 * h * inner
    expected = 2 * vocab * h + layers * (attention + mlp + 2 * h) + h
    count = count_parameters(llama31_8b())
    assert count.total == expected
    # meta-llama/Llama-3.1-8B on Hugging Face: safetensors metadata total 8,030,261,248.
    assert count.total == 8_030_261_248
    assert count.active == count.total
    assert count.buffers == 0
    assert count.breakdown["lm_head"] == vocab * h
    assert count.breakdown["embedding"] == vocab * h
    assert count.breakdown["attention"] == layers * attention
    assert count.breakdown["mlp"] == layers * mlp
    assert count.breakdown["norms"] == layers * 2 * h + h
    assert count.breakdown["experts"] == 0


def test_tied_embeddings_drop_the_head() -> None:
    untied = count_parameters(llama31_8b())
    tied = count_parameters(llama31_8b(tie_word_embeddings=True))
    assert untied.total - tied.total == 128256 * 4096
    assert tied.breakdown["lm_head"] == 0


def test_biases_and_qk_norm() -> None:
    base = count_parameters(llama31_8b()).total
    q, kv, h = 32 * 128, 8 * 128, 4096
    assert count_parameters(llama31_8b(attention_bias=True)).total - base == 32 * (q + 2 * kv)
    assert count_parameters(llama31_8b(attention_out_bias=True)).total - base == 32 * h
    assert count_parameters(llama31_8b(mlp_bias=True)).total - base == 32 * (2 * 14336 + h)
    assert count_parameters(llama31_8b(qk_norm=True)).total - base == 32 * 2 * 128
    assert count_parameters(llama31_8b(lm_head_bias=True)).total - base == 128256
    with_ln = llama31_8b(norm_kind=NormKind.LAYERNORM, norm_bias=True)
    assert count_parameters(with_ln).total - base == 32 * 2 * h + h


def test_plain_mlp_and_learned_positions() -> None:
    gpt2 = ModelArchitecture(
        name="gpt2", num_layers=12, hidden_size=768, num_attention_heads=12, num_kv_heads=12, head_dim=64,
        intermediate_size=3072, gated_mlp=False, vocab_size=50257, tie_word_embeddings=True,
        norm_kind=NormKind.LAYERNORM, norm_bias=True, attention_bias=True, attention_out_bias=True,
        mlp_bias=True, position_embedding=PositionEmbedding.LEARNED, max_position_embeddings=1024,
    )
    # openai-community/gpt2 on Hugging Face: 124,439,808 parameters ("124M" on the model card).
    assert count_parameters(gpt2).total == 124_439_808


def mixtral() -> ModelArchitecture:
    return ModelArchitecture(
        name="Mixtral-8x7B", num_layers=32, hidden_size=4096, num_attention_heads=32, num_kv_heads=8,
        head_dim=128, intermediate_size=14336, vocab_size=32000,
        moe=MoEConfig(num_experts=8, experts_per_token=2, expert_intermediate_size=14336),
    )


def test_moe_total_and_active() -> None:
    count = count_parameters(mixtral())
    expert = 3 * 4096 * 14336
    router = 8 * 4096
    attention = 4096 * 4096 * 2 + 2 * 4096 * 1024
    assert count.breakdown["experts"] == 32 * (8 * expert + router)
    assert count.breakdown["mlp"] == 0
    assert count.total - count.active == 32 * 6 * expert
    assert count.breakdown["attention"] == 32 * attention
    # Mistral AI, "Mixtral of experts" (2023-12-11): 46.7B total, 12.9B used per token.
    assert count.total == pytest.approx(46.7e9, rel=0.002)
    assert count.active == pytest.approx(12.9e9, rel=0.002)


def test_shared_experts_gate_and_dense_layers() -> None:
    arch = ModelArchitecture(
        name="moe", num_layers=4, hidden_size=64, num_attention_heads=4, num_kv_heads=4, head_dim=16,
        intermediate_size=128, vocab_size=100,
        moe=MoEConfig(
            num_experts=4, experts_per_token=2, expert_intermediate_size=32, num_shared_experts=1,
            shared_expert_intermediate_size=48, shared_expert_gate=True, dense_layers=(0,),
        ),
    )
    dense = layer_breakdown(arch, 0)
    sparse = layer_breakdown(arch, 1)
    assert dense.mlp == 3 * 64 * 128 and dense.experts == 0
    assert sparse.experts == 4 * 3 * 64 * 32 + 4 * 64 + 3 * 64 * 48 + 64
    assert sparse.inactive == 2 * 3 * 64 * 32
    assert layer_active_parameters(arch, 1) == layer_parameters(arch, 1) - sparse.inactive


def test_moe_layer_interval() -> None:
    arch = mixtral().model_copy(
        update={"moe": MoEConfig(num_experts=8, experts_per_token=2, expert_intermediate_size=14336,
                                 moe_layer_interval=2)}
    )
    assert [arch.is_moe_layer(i) for i in range(4)] == [False, True, False, True]
    assert layer_breakdown(arch, 0).experts == 0
    assert layer_breakdown(arch, 1).mlp == 0


def deepseek_v3() -> ModelArchitecture:
    return ModelArchitecture(
        name="DeepSeek-V3", num_layers=61, hidden_size=7168, num_attention_heads=128, num_kv_heads=128,
        head_dim=192, intermediate_size=18432, vocab_size=129280,
        mla=MLAConfig(q_lora_rank=1536, kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128,
                      v_head_dim=128),
        moe=MoEConfig(num_experts=256, experts_per_token=8, expert_intermediate_size=2048,
                      num_shared_experts=1, router_bias=True, dense_layers=(0, 1, 2)),
    )


def test_mla_attention_by_hand() -> None:
    arch = deepseek_v3()
    h, heads = 7168, 128
    q = h * 1536 + 1536 * heads * 192
    kv = h * (512 + 64) + 512 * heads * (128 + 128)
    o = heads * 128 * h
    layer = layer_breakdown(arch, 0)
    assert layer.attention == q + kv + o
    assert layer.norms == 2 * h + 1536 + 512


def test_deepseek_v3_totals_and_router_buffer() -> None:
    count = count_parameters(deepseek_v3())
    # DeepSeek-V3 Technical Report (arXiv:2412.19437), abstract: 671B total, 37B activated per token.
    assert count.total == pytest.approx(671e9, rel=0.001)
    assert count.active == pytest.approx(37e9, rel=0.02)
    # e_score_correction_bias: one per routed expert on each of the 58 MoE layers, a buffer.
    assert count.buffers == 58 * 256
    assert count.stored == count.total + 58 * 256


def test_mla_without_q_lora_and_biases() -> None:
    arch = deepseek_v3().model_copy(
        update={"mla": MLAConfig(kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128),
                "attention_bias": True, "attention_out_bias": True}
    )
    layer = layer_breakdown(arch, 0)
    h = 7168
    assert layer.attention == h * 128 * 192 + h * 576 + 576 + 512 * 128 * 256 + 128 * 128 * h + h
    assert layer.norms == 2 * h + 512


def t5_base(**changes: object) -> ModelArchitecture:
    fields: dict[str, object] = {
        "name": "t5-base", "kind": ModelKind.ENCODER_DECODER, "head": Head.SEQ2SEQ_LM, "num_layers": 12,
        "hidden_size": 768, "num_attention_heads": 12, "num_kv_heads": 12, "head_dim": 64,
        "intermediate_size": 3072, "gated_mlp": False, "vocab_size": 32128, "tie_word_embeddings": True,
        "position_embedding": PositionEmbedding.RELATIVE_BIAS,
        "encoder_decoder": EncoderDecoderConfig(num_decoder_layers=12),
    }
    fields.update(changes)
    return ModelArchitecture(**fields)


def test_encoder_decoder() -> None:
    arch = t5_base()
    h = 768
    attn = 4 * h * h
    mlp = 2 * h * 3072
    encoder = 12 * (attn + mlp + 2 * h)
    decoder = 12 * (2 * attn + mlp + 3 * h)
    expected = 32128 * h + encoder + decoder + 2 * 32 * 12 + 2 * h
    count = count_parameters(arch)
    assert count.total == expected
    # Raffel et al. 2020 (T5), section 3.1: "about 220 million parameters"; HF t5-base: 222,903,552.
    assert count.total == 222_903_552
    assert layer_parameters(arch, 0) == attn + mlp + 2 * h + 32 * 12
    assert layer_parameters(arch, 12) == 2 * attn + mlp + 3 * h + 32 * 12
    assert layer_parameters(arch, 13) == 2 * attn + mlp + 3 * h
    untied = count_parameters(t5_base(tie_word_embeddings=False))
    assert untied.total - count.total == 32128 * h


def test_bert_base_model_with_pooler() -> None:
    arch = ModelArchitecture(
        name="bert", kind=ModelKind.ENCODER, head=Head.BASE, num_layers=12, hidden_size=768,
        num_attention_heads=12, num_kv_heads=12, head_dim=64, intermediate_size=3072, gated_mlp=False,
        vocab_size=30522, norm_kind=NormKind.LAYERNORM, norm_bias=True, final_norm=False, embedding_norm=True,
        attention_bias=True, attention_out_bias=True, mlp_bias=True,
        position_embedding=PositionEmbedding.LEARNED, max_position_embeddings=512, type_vocab_size=2,
        pooler=True,
    )
    count = count_parameters(arch)
    # bert-base-uncased as BertModel (with pooler): 109,482,240 (Devlin et al. 2019 round it to 110M).
    assert count.total == 109_482_240
    assert count.breakdown["other"] == 768 * 768 + 768
    masked = arch.model_copy(update={"head": Head.MASKED_LM, "pooler": False, "tie_word_embeddings": True})
    assert lm_head_parameters(masked) == 768 * 768 + 768 + 2 * 768 + 30522


def test_vit_patch_embedding() -> None:
    arch = ModelArchitecture(
        name="vit", kind=ModelKind.ENCODER, head=Head.BASE, num_layers=12, hidden_size=768,
        num_attention_heads=12, num_kv_heads=12, head_dim=64, intermediate_size=3072, gated_mlp=False,
        vocab_size=1, norm_kind=NormKind.LAYERNORM, norm_bias=True, attention_bias=True,
        attention_out_bias=True, mlp_bias=True, position_embedding=PositionEmbedding.LEARNED, pooler=True,
        vision=VisionConfig(image_size=224, patch_size=16),
    )
    emb, _ = embedding_parameters(arch)
    assert emb == 3 * 16 * 16 * 768 + 768 + 197 * 768 + 768
    # google/vit-base-patch16-224-in21k as ViTModel: 86,389,248 (Dosovitskiy et al. 2021, Table 1: 86M).
    assert count_parameters(arch).total == 86_389_248


def test_extra_parameters_are_dense() -> None:
    base = count_parameters(mixtral())
    more = count_parameters(mixtral().model_copy(update={"extra_parameters": 1000}))
    assert more.total - base.total == 1000
    assert more.active - base.active == 1000
    assert more.breakdown["other"] == 1000


def test_layer_index_bounds() -> None:
    with pytest.raises(IndexError):
        layer_parameters(llama31_8b(), 32)
    with pytest.raises(IndexError):
        layer_parameters(llama31_8b(), -1)


def test_is_fast() -> None:
    arch = deepseek_v3()
    start = time.perf_counter()
    for _ in range(2000):
        count_parameters(arch)
    assert time.perf_counter() - start < 2.0  # ~0.1 ms each; generous for slow CI machines


# --- invariants over generated architectures -------------------------------------------------


@st.composite
def architectures(draw: st.DrawFn) -> ModelArchitecture:
    kv = draw(st.integers(1, 8))
    heads = kv * draw(st.integers(1, 4))
    layers = draw(st.integers(1, 12))
    moe = None
    if draw(st.booleans()):
        experts = draw(st.integers(1, 16))
        moe = MoEConfig(
            num_experts=experts,
            experts_per_token=draw(st.integers(1, experts)),
            expert_intermediate_size=draw(st.integers(1, 256)),
            num_shared_experts=draw(st.integers(0, 2)),
            shared_expert_gate=draw(st.booleans()),
            router_bias=draw(st.booleans()),
            dense_layers=tuple(sorted(draw(st.sets(st.integers(0, layers - 1), max_size=layers)))),
            moe_layer_interval=draw(st.integers(1, 3)),
        )
    mla = None
    if draw(st.booleans()):
        mla = MLAConfig(
            q_lora_rank=draw(st.one_of(st.none(), st.integers(1, 64))),
            kv_lora_rank=draw(st.integers(1, 64)),
            qk_rope_head_dim=draw(st.integers(1, 32)),
            qk_nope_head_dim=draw(st.integers(1, 32)),
            v_head_dim=draw(st.integers(1, 32)),
        )
    enc_dec = draw(st.booleans())
    return ModelArchitecture(
        name="generated",
        kind=ModelKind.ENCODER_DECODER if enc_dec else ModelKind.DECODER,
        head=draw(st.sampled_from(list(Head))),
        num_layers=layers,
        hidden_size=draw(st.integers(1, 512)),
        num_attention_heads=heads,
        num_kv_heads=kv,
        head_dim=draw(st.integers(1, 128)),
        intermediate_size=draw(st.integers(1, 1024)),
        gated_mlp=draw(st.booleans()),
        vocab_size=draw(st.integers(1, 5000)),
        tie_word_embeddings=draw(st.booleans()),
        norm_bias=draw(st.booleans()),
        norms_per_layer=draw(st.integers(0, 4)),
        qk_norm=draw(st.booleans()),
        attention_bias=draw(st.booleans()),
        mlp_bias=draw(st.booleans()),
        position_embedding=draw(st.sampled_from(list(PositionEmbedding))),
        pooler=draw(st.booleans()),
        moe=moe,
        mla=mla,
        encoder_decoder=EncoderDecoderConfig(num_decoder_layers=draw(st.integers(1, 6))) if enc_dec else None,
        extra_parameters=draw(st.integers(0, 10**6)),
    )


@settings(max_examples=200, deadline=None)
@given(architectures())
def test_parts_add_up(arch: ModelArchitecture) -> None:
    count = count_parameters(arch)
    assert set(count.breakdown) == set(BREAKDOWN_KEYS)
    assert all(v >= 0 for v in count.breakdown.values())
    assert count.total == sum(count.breakdown.values())
    assert 0 < count.active <= count.total
    emb, emb_norm = embedding_parameters(arch)
    layers = sum(layer_parameters(arch, i) for i in range(arch.total_layers))
    pooler = arch.hidden_size**2 + arch.hidden_size if arch.pooler else 0
    assert count.total == (
        emb + emb_norm + layers + final_norm_parameters(arch) + lm_head_parameters(arch) + pooler
        + arch.extra_parameters
    )
    active_layers = sum(layer_active_parameters(arch, i) for i in range(arch.total_layers))
    assert count.total - count.active == layers - active_layers
    if arch.moe is None:
        assert count.active == count.total and count.buffers == 0


@settings(max_examples=100, deadline=None)
@given(architectures())
def test_more_layers_never_fewer_parameters(arch: ModelArchitecture) -> None:
    deeper = arch.model_copy(update={"num_layers": arch.num_layers + 1})
    assert count_parameters(deeper).total > count_parameters(arch).total
