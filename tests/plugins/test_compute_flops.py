"""FLOP counts of the compute plugin: hand-derived values, training variants and invariants."""

from __future__ import annotations

import pytest
from engine_fixtures import GPU, LLAMA_8B, NODE
from hypothesis import given, settings
from hypothesis import strategies as st
from workbench_compute import ComputeEstimator
from workbench_compute.flops import causal_pairs

from workbench.core import (
    Cluster,
    EncoderDecoderConfig,
    Head,
    MLAConfig,
    ModelArchitecture,
    ModelKind,
    MoEConfig,
    Scenario,
    SlidingWindow,
    VisionConfig,
)
from workbench.core.params import count_parameters
from workbench.core.resolved import ResolvedScenario
from workbench.engine.estimate import Estimate
from workbench.engine.pipeline import Engine

ENGINE = Engine([ComputeEstimator()])

MIXTRAL = ModelArchitecture(
    name="Mixtral-8x7B",
    family="mixtral",
    num_layers=32,
    hidden_size=4096,
    num_attention_heads=32,
    num_kv_heads=8,
    head_dim=128,
    intermediate_size=14336,
    vocab_size=32000,
    moe=MoEConfig(num_experts=8, experts_per_token=2, expert_intermediate_size=14336),
)
DEEPSEEK = ModelArchitecture(
    name="DeepSeek-V3",
    family="deepseek",
    num_layers=61,
    hidden_size=7168,
    num_attention_heads=128,
    num_kv_heads=128,
    head_dim=192,
    intermediate_size=18432,
    vocab_size=129280,
    moe=MoEConfig(
        num_experts=256,
        experts_per_token=8,
        expert_intermediate_size=2048,
        num_shared_experts=1,
        router_bias=True,
        dense_layers=(0, 1, 2),
    ),
    mla=MLAConfig(
        q_lora_rank=1536, kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128
    ),
)


def run(arch: ModelArchitecture = LLAMA_8B, **fields: object) -> Estimate:
    scenario = Scenario(model=arch.name, gpu=GPU.id, **fields)
    est = ENGINE.run(
        ResolvedScenario(scenario, arch, Cluster(accelerator=GPU, node=NODE, num_gpus=scenario.num_gpus))
    )
    assert not est.failures, est.failures
    return est


# Llama-3.1-8B by hand: per layer q,o 4096^2, k,v 4096 x 1024, gate/up/down 4096 x 14336; head 4096 x 128256.
L, H, KV, FF, V, HEADS, HD = 32, 4096, 1024, 14336, 128256, 32, 128
LAYER_WEIGHTS = 2 * H * H + 2 * H * KV + 3 * H * FF
HEAD_WEIGHTS = H * V


def llama_attention(batch: int, pairs: float) -> float:
    return 2 * batch * HEADS * (HD + HD) * pairs * L


def test_llama_8b_forward_prefill_and_decode_by_hand() -> None:
    b, s, g = 2, 1000, 100
    est = run(batch_size=b, seq_len=s, gen_len=g)
    matmuls = 2 * b * s * (L * LAYER_WEIGHTS + HEAD_WEIGHTS)
    assert est.get("flops.forward") == matmuls + llama_attention(b, s * s)
    assert est.get("flops.prefill") == 2 * b * s * L * LAYER_WEIGHTS + 2 * b * HEAD_WEIGHTS + llama_attention(
        b, s * s
    )
    ctx = s + g / 2
    assert est.get("flops.decode_step") == 2 * b * (L * LAYER_WEIGHTS + HEAD_WEIGHTS) + llama_attention(
        b, ctx
    )
    assert est.get("flops.per_token_forward") == pytest.approx(est.get("flops.forward") / (b * s))


def test_per_token_forward_is_two_times_active_parameters_plus_attention() -> None:
    """The 2N rule (Kaplan et al. 2020): per token, 2 x the active parameters (all but the input
    embedding, a lookup; norms and biases are not matmuls, < 0.1%) plus 2 x heads x (d_qk + d_v) x s
    per layer of attention: 6% of 2N for Llama-8B at 4k context, 27% for DeepSeek-V3's 128-head MLA."""
    s = 4096
    for arch, d in ((LLAMA_8B, 256), (MIXTRAL, 256), (DEEPSEEK, 192 + 128)):
        count = count_parameters(arch)
        two_n = 2 * (count.active - count.breakdown["embedding"])
        attention = 2 * arch.num_attention_heads * d * s * arch.num_layers
        per_token = run(arch, seq_len=s).get("flops.per_token_forward")
        assert per_token == pytest.approx(two_n + attention, rel=1e-3), arch.name
        assert per_token < two_n + attention


def test_moe_counts_router_and_top_k_experts_and_warns() -> None:
    est = run(MIXTRAL, batch_size=1, seq_len=1, gen_len=0)
    layer = 2 * H * H + 2 * H * KV + H * 8 + 2 * 3 * H * FF  # attention, router, two of eight experts
    attention = 2 * 1 * HEADS * (HD + HD) * 1 * L  # one key: the token itself
    assert est.get("flops.decode_step") == 2 * (L * layer + H * 32000) + attention
    warning = {w.code: w for w in est.warnings}["moe-active-compute"]
    assert warning.severity == "info" and "active" in warning.message


def test_causal_discount_and_sliding_window() -> None:
    s = 4096
    dense = run(seq_len=s)
    causal = run(seq_len=s, assumptions={"compute.causal_attention_discount": 1.0})
    gemm = dense.get("flops.forward") - llama_attention(1, s * s)
    assert causal.get("flops.forward") == pytest.approx(gemm + llama_attention(1, s * (s + 1) / 2))
    assert "compute.causal_attention_discount" in {a["id"] for a in causal.assumptions_used()}
    windowed = LLAMA_8B.model_copy(update={"sliding_window": SlidingWindow(window=1024)})
    assert run(windowed, seq_len=s).get("flops.forward") == dense.get(
        "flops.forward"
    )  # dense kernel: no saving
    skip = run(windowed, seq_len=s, assumptions={"compute.causal_attention_discount": 1.0})
    assert skip.get("flops.forward") == pytest.approx(gemm + llama_attention(1, causal_pairs(s, 1024)))
    assert causal_pairs(4, 2) == 1 + 2 + 2 + 2
    # decode: the window bounds what a new token reads
    assert run(windowed, seq_len=s, gen_len=0).get("flops.decode_step") == pytest.approx(
        2 * (L * LAYER_WEIGHTS + HEAD_WEIGHTS) + llama_attention(1, 1024)
    )


def test_training_step_is_forward_backward_recompute_and_variants() -> None:
    b, s = 2, 2048
    base = run(workload="pretrain", batch_size=b, seq_len=s)
    fwd = base.get("flops.forward")
    assert base.get("flops.backward") == 2 * fwd
    assert base.get("flops.recompute") == 0
    assert base.get("flops.training_step") == 3 * fwd
    selective = run(workload="pretrain", batch_size=b, seq_len=s, recompute="selective")
    assert selective.get("flops.recompute") == llama_attention(b, s * s)
    full = run(workload="pretrain", batch_size=b, seq_len=s, recompute="full")
    assert full.get("flops.recompute") == fwd - 2 * b * s * HEAD_WEIGHTS  # blocks only, not the LM head
    assert full.get("flops.training_step") == 4 * fwd - 2 * b * s * HEAD_WEIGHTS


@pytest.mark.parametrize("method", ["lora", "qlora"])
@pytest.mark.parametrize("targets", ["all-linear", "attention"])
def test_lora_backward_by_hand(method: str, targets: str) -> None:
    b, s, r = 1, 1024, 16
    est = run(workload="finetune", method=method, lora_rank=r, lora_targets=targets, batch_size=b, seq_len=s)
    t = b * s
    attention_widths = (H + H) + 2 * (H + KV) + (H + H)  # (in + out) of q, k, v, o
    widths = attention_widths + (3 * (H + FF) if targets == "all-linear" else 0)
    adapters = 2 * t * r * widths * L
    frozen_matmuls = 2 * t * (L * LAYER_WEIGHTS + HEAD_WEIGHTS)
    attention = llama_attention(b, s * s)
    assert est.get("flops.forward") == frozen_matmuls + attention + adapters
    assert est.get("flops.backward") == frozen_matmuls + 2 * attention + 2 * adapters
    assert est.get("flops.training_step") == 2 * frozen_matmuls + 3 * attention + 3 * adapters
    full = run(workload="finetune", batch_size=b, seq_len=s)
    assert est.get("flops.backward") < 0.6 * full.get("flops.backward")


def test_lora_needs_finetune() -> None:
    """A LoRA method on a pre-training scenario trains every weight (method is a fine-tuning option)."""
    pre = run(workload="pretrain", method="lora")
    assert pre.get("flops.backward") == 2 * pre.get("flops.forward")


def test_inference_has_no_training_quantities() -> None:
    est = run()
    for key in ("flops.backward", "flops.recompute", "flops.training_step", "roofline.training.bound"):
        assert key in est and est.get(key) is None
        assert est.values[key].note == "inference scenario: no training step"
    doc = est.to_json()
    assert doc["flops"]["training_step"] is None and doc["flops"]["forward"] > 0


def test_mla_decode_absorbed_vs_transformers_style() -> None:
    b, s, g = 4, 4096, 0
    absorbed = run(DEEPSEEK, batch_size=b, seq_len=s, gen_len=g)
    naive = run(DEEPSEEK, batch_size=b, seq_len=s, gen_len=g, assumptions={"compute.mla_absorbed_decode": 0})
    heads, layers = 128, 61
    latent_attention = 2 * b * heads * ((512 + 64) + 512) * s * layers
    explicit_attention = 2 * b * heads * (192 + 128) * s * layers
    expansion = 2 * b * (s - 1) * 512 * heads * (128 + 128) * layers
    assert absorbed.get("flops.decode_step") - naive.get("flops.decode_step") == pytest.approx(
        latent_attention - explicit_attention - expansion
    )
    assert naive.get("flops.decode_step") > 10 * absorbed.get("flops.decode_step")
    assert "compute.mla_absorbed_decode" in absorbed.values["flops.decode_step"].assumptions


def test_decode_context_fraction_assumption() -> None:
    half = run(seq_len=1000, gen_len=1000)
    end = run(seq_len=1000, gen_len=1000, assumptions={"compute.decode_context_fraction": 1.0})
    assert end.get("flops.decode_step") - half.get("flops.decode_step") == pytest.approx(
        llama_attention(1, 500)
    )


BERT = ModelArchitecture(
    name="bert-base",
    family="bert",
    kind=ModelKind.ENCODER,
    head=Head.MASKED_LM,
    num_layers=12,
    hidden_size=768,
    num_attention_heads=12,
    num_kv_heads=12,
    head_dim=64,
    intermediate_size=3072,
    gated_mlp=False,
    vocab_size=30522,
    tie_word_embeddings=True,
    position_embedding="learned",
    max_position_embeddings=512,
    norm_kind="layernorm",
    norm_bias=True,
    attention_bias=True,
    attention_out_bias=True,
    mlp_bias=True,
    type_vocab_size=2,
    embedding_norm=True,
)
T5 = ModelArchitecture(
    name="t5-small",
    family="t5",
    kind=ModelKind.ENCODER_DECODER,
    head=Head.SEQ2SEQ_LM,
    num_layers=6,
    hidden_size=512,
    num_attention_heads=8,
    num_kv_heads=8,
    head_dim=64,
    intermediate_size=2048,
    gated_mlp=False,
    vocab_size=32128,
    tie_word_embeddings=True,
    position_embedding="relative-bias",
    encoder_decoder=EncoderDecoderConfig(num_decoder_layers=6),
)
VIT = ModelArchitecture(
    name="vit-base",
    family="vit",
    kind=ModelKind.ENCODER,
    head=Head.BASE,
    num_layers=12,
    hidden_size=768,
    num_attention_heads=12,
    num_kv_heads=12,
    head_dim=64,
    intermediate_size=3072,
    gated_mlp=False,
    vocab_size=1,
    position_embedding="learned",
    norm_kind="layernorm",
    norm_bias=True,
    pooler=True,
    vision=VisionConfig(image_size=224, patch_size=16),
)


def test_encoder_only_model_has_no_decode_and_prefill_is_forward() -> None:
    est = run(BERT, batch_size=8, seq_len=512)
    assert est.get("flops.decode_step") is None and est.get("roofline.decode.bound") is None
    assert est.get("flops.prefill") == est.get("flops.forward")
    assert est.get("roofline.phase") == "prefill"
    layer = 4 * 768 * 768 + 2 * 768 * 3072
    head = 768 * 768 + 768 * 30522  # MLM transform + tied decoder, every position
    assert est.get("flops.forward") == 2 * 8 * 512 * (12 * layer + head) + 2 * 8 * 12 * 128 * 512 * 512 * 12


def test_encoder_decoder_and_vision_models() -> None:
    b, s, g = 2, 512, 128
    t5 = run(T5, batch_size=b, seq_len=s, gen_len=g)
    enc_layer, dec_layer = 4 * 512 * 512 + 2 * 512 * 2048, 8 * 512 * 512 + 2 * 512 * 2048
    attention = 2 * b * 8 * 128 * (s * s * 6 + s * s * 6 + s * s * 6)  # encoder, decoder self, cross
    assert t5.get("flops.forward") == 2 * b * s * (6 * enc_layer + 6 * dec_layer + 512 * 32128) + attention
    assert t5.get("flops.decode_step") > 0
    vit = run(VIT, batch_size=4, seq_len=2048)  # seq_len does not apply: 196 patches + [CLS]
    tokens = 197
    layer = 4 * 768 * 768 + 2 * 768 * 3072
    expected = (
        2 * 4 * tokens * 12 * layer
        + 2 * 4 * 12 * 128 * tokens * tokens * 12
        + 2 * 4 * 196 * 3 * 16 * 16 * 768
        + 2 * 4 * 768 * 768
    )
    assert vit.get("flops.forward") == expected
    assert vit.get("flops.decode_step") is None


# --- invariants ---------------------------------------------------------------------------------------

ARCHS = st.sampled_from([LLAMA_8B, MIXTRAL, DEEPSEEK, BERT, T5])
RECOMPUTE = st.sampled_from(["none", "selective", "full"])
METHOD = st.sampled_from(["full", "lora", "qlora"])


@settings(max_examples=60, deadline=None)
@given(
    arch=ARCHS,
    batch=st.integers(1, 64),
    seq=st.integers(1, 32768),
    recompute=RECOMPUTE,
    method=METHOD,
    discount=st.sampled_from([0.0, 0.5, 1.0]),
)
def test_training_step_equals_its_parts(
    arch: ModelArchitecture, batch: int, seq: int, recompute: str, method: str, discount: float
) -> None:
    est = run(
        arch,
        workload="finetune",
        method=method,
        batch_size=batch,
        seq_len=seq,
        recompute=recompute,
        assumptions={"compute.causal_attention_discount": discount},
    )
    parts = est.get("flops.forward") + est.get("flops.backward") + est.get("flops.recompute")
    assert est.get("flops.training_step") == pytest.approx(parts, rel=1e-12)
    assert 0 <= est.get("flops.recompute") <= est.get("flops.forward")
    assert est.get("flops.forward") <= est.get("flops.backward") <= 2 * est.get("flops.forward")


@settings(max_examples=60, deadline=None)
@given(
    arch=ARCHS,
    batch=st.integers(1, 64),
    seq=st.integers(1, 32768),
    gen=st.integers(0, 4096),
    more_batch=st.integers(0, 64),
    more_seq=st.integers(0, 4096),
    recompute=RECOMPUTE,
)
def test_flops_grow_with_batch_and_sequence(
    arch: ModelArchitecture, batch: int, seq: int, gen: int, more_batch: int, more_seq: int, recompute: str
) -> None:
    small = run(arch, workload="pretrain", batch_size=batch, seq_len=seq, gen_len=gen, recompute=recompute)
    bigger = [
        run(
            arch,
            workload="pretrain",
            batch_size=batch + more_batch,
            seq_len=seq,
            gen_len=gen,
            recompute=recompute,
        ),
        run(
            arch,
            workload="pretrain",
            batch_size=batch,
            seq_len=seq + more_seq,
            gen_len=gen,
            recompute=recompute,
        ),
    ]
    for key in ("flops.forward", "flops.prefill", "flops.decode_step", "flops.training_step"):
        if small.get(key) is None:
            continue
        for big in bigger:
            assert big.get(key) >= small.get(key), key
    assert small.get("flops.prefill") <= small.get("flops.forward")
