"""Activation memory formula: Korthikanti et al. 2022 exactly, and how it must move (no torch here).

The numbers against PyTorch + transformers themselves are in
``tests/validation/test_activations_vs_torch.py``; a few of those measurements are pinned here so
that the fast suite notices a change of the accounting.
"""

from __future__ import annotations


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from workbench_memory.activations import (
    ALL_LOGITS,
    ASSUMPTIONS,
    DROPOUT,
    MEGATRON,
    activation_memory,
    korthikanti_per_layer,
)

from workbench.core.dtypes import DType
from workbench.core.model import ModelArchitecture, MoEConfig, NormKind, PositionEmbedding
from workbench.core.scenario import AttentionKernel, FinetuneMethod, Recompute, Scenario, Workload

# --- fixtures --------------------------------------------------------------------------------------


def gpt(name: str, a: int, h: int, layers: int, vocab: int = 51200) -> ModelArchitecture:
    """A GPT-3-style block as Korthikanti et al. assume it: MHA, 4h GeLU FFN, LayerNorm."""
    return ModelArchitecture(
        name=name,
        family="gpt3",
        num_layers=layers,
        hidden_size=h,
        num_attention_heads=a,
        num_kv_heads=a,
        head_dim=h // a,
        intermediate_size=4 * h,
        gated_mlp=False,
        activation="gelu",
        vocab_size=vocab,
        norm_kind=NormKind.LAYERNORM,
        norm_bias=True,
        attention_bias=True,
        attention_out_bias=True,
        mlp_bias=True,
        position_embedding=PositionEmbedding.LEARNED,
        max_position_embeddings=2048,
    )


#: Korthikanti et al. 2022, Table 3 (model configurations; sequence length 2048, t = 8).
PAPER_MODELS = {
    "22B": gpt("22B", a=64, h=6144, layers=48),
    "175B (GPT-3)": gpt("175B", a=96, h=12288, layers=96),
    "530B (MT-NLG)": gpt("530B", a=128, h=20480, layers=105),
    "1T": gpt("1T", a=160, h=25600, layers=128),
}

LLAMA = ModelArchitecture(  # the validation suite's dense GQA model, as the importer builds it
    name="llama",
    family="llama",
    hf_model_type="llama",
    num_layers=2,
    hidden_size=256,
    num_attention_heads=8,
    num_kv_heads=2,
    head_dim=32,
    intermediate_size=688,
    vocab_size=1000,
    max_position_embeddings=1024,
)
MIXTRAL = LLAMA.model_copy(
    update={
        "name": "mixtral",
        "family": "mixtral",
        "hf_model_type": "mixtral",
        "intermediate_size": 512,
        "moe": MoEConfig(num_experts=4, experts_per_token=2, expert_intermediate_size=512),
    }
)
LLAMA_8B = ModelArchitecture(
    name="Llama-3.1-8B",
    family="llama",
    hf_model_type="llama",
    num_layers=32,
    hidden_size=4096,
    num_attention_heads=32,
    num_kv_heads=8,
    head_dim=128,
    intermediate_size=14336,
    vocab_size=128256,
    max_position_embeddings=131072,
)


def scenario(**kw: object) -> Scenario:
    kw.setdefault("workload", Workload.PRETRAIN)
    kw.setdefault("num_gpus", 64)
    return Scenario(model="m", gpu="g", **kw)


def run(
    model: ModelArchitecture,
    sc: Scenario,
    *,
    b: int = 1,
    s: int = 2048,
    tp: int = 1,
    sp: bool = False,
    layers: int | None = None,
    first: bool = True,
    last: bool = True,
):
    return activation_memory(
        model,
        sc,
        micro_batch=b,
        seq_len=s,
        tp=tp,
        sequence_parallel=sp,
        layers=model.num_layers if layers is None else layers,
        first_stage=first,
        last_stage=last,
    )


MEGATRON_GPT = {MEGATRON: 1.0, DROPOUT: 0.1}  # their kernels, their dropout

# --- Korthikanti et al. 2022 ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "s,b,h,a,t", [(2048, 1, 12288, 96, 8), (4096, 4, 5120, 40, 4), (1024, 2, 2048, 16, 2)]
)
def test_korthikanti_table2_equations(s: int, b: int, h: int, a: int, t: int) -> None:
    """Table 2 of the paper, row by row ("Activations memory per transformer layer")."""
    sbh = s * b * h
    assert korthikanti_per_layer(s, b, h, a) == pytest.approx(sbh * (34 + 5 * a * s / h))
    assert korthikanti_per_layer(s, b, h, a, t) == pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    assert korthikanti_per_layer(s, b, h, a, t, sequence_parallel=True) == pytest.approx(
        sbh * (34 / t + 5 * a * s / (h * t))
    )
    assert korthikanti_per_layer(s, b, h, a, t, recompute="selective") == pytest.approx(sbh * (10 + 24 / t))
    assert korthikanti_per_layer(
        s, b, h, a, t, sequence_parallel=True, recompute="selective"
    ) == pytest.approx(sbh * 34 / t)
    assert korthikanti_per_layer(s, b, h, a, t, recompute="full") == pytest.approx(sbh * 2)
    with pytest.raises(ValueError):
        korthikanti_per_layer(s, b, h, a, recompute="some")


@pytest.mark.parametrize("recompute", [Recompute.NONE, Recompute.SELECTIVE, Recompute.FULL])
@pytest.mark.parametrize("tp,sp", [(1, False), (8, False), (8, True), (4, True)])
def test_architecture_aware_model_reproduces_korthikanti(recompute: Recompute, tp: int, sp: bool) -> None:
    """Given the paper's assumptions (GPT block, fp16, dropout with 1-byte masks, Megatron's fused
    kernels, unfused attention), the per-block terms add up to Table 2 exactly."""
    model = PAPER_MODELS["175B (GPT-3)"]
    sc = scenario(
        dtype=DType.FP16, attention=AttentionKernel.EAGER, recompute=recompute, assumptions=MEGATRON_GPT
    )
    got = run(model, sc, b=1, s=2048, tp=tp, sp=sp).per_layer
    if recompute is Recompute.FULL and sp:
        # Table 2's full-recompute row (2sbh) has no SP column; with SP, Megatron-LM's checkpointed
        # block input is the sequence-sharded one: 2sbh/t.
        assert got == 2 * 2048 * 12288 / tp
        return
    assert got == korthikanti_per_layer(
        2048, 1, 12288, 96, tp, sequence_parallel=sp, recompute=recompute.value
    )


def test_gpt3_per_layer_figures() -> None:
    """GPT-3 175B (a=96, h=12288, s=2048, t=8, micro-batch 1): Sec. 5 notes 5as/h = 80, larger than
    34, so selective recompute removes most of the activations; per layer, in bytes:"""
    s, h, a, t = 2048, 12288, 96, 8
    assert 5 * a * s / h == 80
    sbh = s * h
    assert korthikanti_per_layer(s, 1, h, a, t) == 23 * sbh == 578_813_952  # TP baseline: 552 MiB
    assert korthikanti_per_layer(s, 1, h, a, t, sequence_parallel=True) == 14.25 * sbh
    assert korthikanti_per_layer(s, 1, h, a, t, recompute="selective") == 13 * sbh
    assert korthikanti_per_layer(s, 1, h, a, t, sequence_parallel=True, recompute="selective") == 4.25 * sbh
    assert korthikanti_per_layer(s, 1, h, a, t, recompute="full") == 2 * sbh


@pytest.mark.parametrize("name,ratio", [("175B (GPT-3)", 80.0), ("530B (MT-NLG)", 64.0)])
def test_selective_recompute_savings_stated_in_section_5(name: str, ratio: float) -> None:
    """Sec. 5: with 5as/h = 80 (GPT-3) and 64 (MT-NLG), selective recomputation saves about 70% and
    65% of the activation memory (34 of 34 + 5as/h stays)."""
    model = PAPER_MODELS[name]
    a, h = model.num_attention_heads, model.hidden_size
    assert 5 * a * 2048 / h == ratio
    sc = scenario(dtype=DType.FP16, attention=AttentionKernel.EAGER, assumptions=MEGATRON_GPT)
    full = run(model, sc).per_layer
    selective = run(model, sc.model_copy(update={"recompute": Recompute.SELECTIVE})).per_layer
    saving = 1 - selective / full
    assert saving == pytest.approx(1 - 34 / (34 + ratio))
    assert round(saving, 2) == {80.0: 0.70, 64.0: 0.65}[ratio]


@pytest.mark.parametrize("name", list(PAPER_MODELS))
def test_paper_models_five_fold_reduction(name: str) -> None:
    """Abstract: sequence parallelism + selective recomputation cut activation memory by about 5x
    against the tensor-parallel baseline, for the paper's models (Table 3, t = 8)."""
    model = PAPER_MODELS[name]
    sc = scenario(dtype=DType.FP16, attention=AttentionKernel.EAGER, assumptions=MEGATRON_GPT)
    baseline = run(model, sc, tp=8).per_layer
    present = run(model, sc.model_copy(update={"recompute": Recompute.SELECTIVE}), tp=8, sp=True).per_layer
    assert 4.9 <= baseline / present <= 6.3


def test_megatron_output_layer() -> None:
    """The output layer in the paper's accounting: final LayerNorm input and output-projection input
    (2sbh each) and the fp32 logits the cross entropy keeps (4sbv), over t with SP: 4sbh/t (1 + v/h)."""
    model = PAPER_MODELS["175B (GPT-3)"]
    sc = scenario(dtype=DType.FP16, attention=AttentionKernel.EAGER, assumptions=MEGATRON_GPT)
    s, h, v, t = 2048, 12288, 51200, 8
    got = run(model, sc, tp=t, sp=True, layers=12).head
    assert got == pytest.approx(4 * s * h / t * (1 + v / h))


# --- PyTorch + transformers accounting, pinned from the validation suite -----------------------


@pytest.mark.parametrize(
    "model,kernel,expected,measured",
    [
        (LLAMA, AttentionKernel.SDPA, 14_321_664, 14_321_668),
        (LLAMA, AttentionKernel.EAGER, 27_658_240, 27_658_244),
        (MIXTRAL, AttentionKernel.SDPA, 19_273_728, 19_273_764),
    ],
)
def test_pinned_against_transformers_measurement(
    model: ModelArchitecture, kernel: AttentionKernel, expected: int, measured: int
) -> None:
    """bf16, batch 2 x 256 tokens, no checkpointing: the bytes of unique storages transformers 5.23 /
    torch 2.13 kept for backward (``measured``; the rest is the loss's scalars and router biases)."""
    got = run(model, scenario(attention=kernel), b=2, s=256).total
    assert got == expected
    assert got == pytest.approx(measured, rel=1e-5)


def test_llama_block_terms() -> None:
    """One Llama block in bf16 with sdpa, per token: two RMSNorms (fp32 input, rsqrt, cast: 4h+4+2h),
    q/k/v's and the FFN's inputs (2h each), q and output (2*2*a*d), k and v (2*2*kv*d), the fp32
    logsumexp (4a), the SwiGLU FFN (4 tensors of 2i bytes)."""
    h, a, kv, d, i = 256, 8, 2, 32, 688
    per_token = 2 * (6 * h + 4) + 2 * 2 * h + 4 * a * d + 4 * kv * d + 4 * a + 8 * i
    assert run(LLAMA, scenario(attention=AttentionKernel.SDPA), b=2, s=256).per_layer == 512 * per_token


# --- how the numbers move ------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    b=st.integers(1, 16),
    s=st.integers(16, 16384),
    kernel=st.sampled_from(list(AttentionKernel)),
    recompute=st.sampled_from(list(Recompute)),
    workload=st.sampled_from(list(Workload)),
    tp=st.sampled_from([1, 2, 4, 8]),
    sp=st.booleans(),
    first=st.booleans(),
    last=st.booleans(),
    model=st.sampled_from([LLAMA, MIXTRAL, LLAMA_8B, PAPER_MODELS["22B"]]),
)
def test_invariants(
    b: int,
    s: int,
    kernel: AttentionKernel,
    recompute: Recompute,
    workload: Workload,
    tp: int,
    sp: bool,
    first: bool,
    last: bool,
    model: ModelArchitecture,
) -> None:
    """Never negative; total is the sum of its parts; more batch or sequence is never less memory."""
    sc = scenario(attention=kernel, recompute=recompute, workload=workload)
    r = run(model, sc, b=b, s=s, tp=tp, sp=sp, layers=7, first=first, last=last)
    parts = (r.per_layer, r.embedding, r.head, r.workspace, r.transient)
    assert all(p >= 0 for p in parts)
    assert r.total == pytest.approx(r.per_layer * r.layers + r.embedding + r.head + r.workspace)
    assert r.layers == 7
    assert r.peak() >= r.kept
    assert r.peak(in_flight=4) >= r.peak()
    more_b = run(model, sc, b=b + 1, s=s, tp=tp, sp=sp, layers=7, first=first, last=last)
    more_s = run(model, sc, b=b, s=s + 64, tp=tp, sp=sp, layers=7, first=first, last=last)
    for bigger in (more_b, more_s):
        assert bigger.total >= r.total
        assert bigger.peak() >= r.peak()
    if workload is Workload.INFERENCE:
        assert r.per_layer == 0 and r.transient == 0
        assert r.peak() == r.total


def test_tensor_and_sequence_parallel_reduce() -> None:
    sc = scenario(attention=AttentionKernel.FLASH)
    one = run(LLAMA_8B, sc, s=8192).per_layer
    tp = run(LLAMA_8B, sc, s=8192, tp=8).per_layer
    tp_sp = run(LLAMA_8B, sc, s=8192, tp=8, sp=True).per_layer
    assert tp_sp < tp < one
    assert run(LLAMA_8B, sc, s=8192, tp=1, sp=True).per_layer == one  # SP needs TP to split anything
    # Everything is split with SP; only the 8 KV heads, one per rank at t=8, are not divided further.
    assert tp_sp == pytest.approx(one / 8, rel=0.01)


def test_kv_heads_never_split_below_one_per_rank() -> None:
    sc = scenario(attention=AttentionKernel.FLASH)
    at_8 = run(LLAMA_8B, sc, tp=8, sp=True).per_layer
    at_16 = run(LLAMA_8B, sc, tp=16, sp=True).per_layer
    kv_bytes = 2048 * 2 * 2 * 128  # k and v of the one head each rank keeps, bf16
    assert at_16 == pytest.approx(at_8 / 2 + kv_bytes / 2)


def test_recompute_reduces() -> None:
    for kernel in AttentionKernel:
        base = scenario(attention=kernel)
        none = run(LLAMA_8B, base, s=4096)
        selective = run(LLAMA_8B, base.model_copy(update={"recompute": Recompute.SELECTIVE}), s=4096)
        full = run(LLAMA_8B, base.model_copy(update={"recompute": Recompute.FULL}), s=4096)
        assert full.kept < selective.kept <= none.kept
        assert full.per_layer == 4096 * 2 * 4096  # each block's bf16 input
        assert full.workspace == none.per_layer  # the block rebuilt during backward
        assert full.total < none.total
        if kernel is AttentionKernel.EAGER:
            assert selective.kept < none.kept
        else:
            assert selective.kept == none.kept  # flash/sdpa never keep the attention core


def test_eager_grows_quadratically_and_exceeds_sdpa() -> None:
    def per_layer(kernel: AttentionKernel, s: int) -> float:
        return run(LLAMA_8B, scenario(attention=kernel), s=s).per_layer

    for s in (1024, 4096, 16384):
        assert per_layer(AttentionKernel.EAGER, s) > per_layer(AttentionKernel.SDPA, s)
    assert per_layer(AttentionKernel.SDPA, 8192) == pytest.approx(2 * per_layer(AttentionKernel.SDPA, 4096))
    assert per_layer(AttentionKernel.EAGER, 16384) > 3 * per_layer(AttentionKernel.EAGER, 8192)
    assert per_layer(AttentionKernel.SDPA, 4096) == per_layer(AttentionKernel.FLASH, 4096)


def test_moe_routed_tokens() -> None:
    """Memory follows the routed tokens (top-k), not the number of experts."""

    def moe(k: int, experts: int = 8) -> ModelArchitecture:
        return MIXTRAL.model_copy(
            update={"moe": MoEConfig(num_experts=experts, experts_per_token=k, expert_intermediate_size=512)}
        )

    sc = scenario(attention=AttentionKernel.SDPA)
    top1, top2, top4 = (run(moe(k), sc).per_layer for k in (1, 2, 4))
    assert top1 < top2 < top4
    assert top4 - top2 == pytest.approx(2 * (top2 - top1))  # linear in k
    many = run(moe(2, experts=64), sc).per_layer
    assert many - top2 == 2048 * 4 * (64 - 8)  # only the router's fp32 probabilities grow
    # top-1 over experts the dense FFN's size: the dense FFN plus the routing bookkeeping.
    dense = run(MIXTRAL.model_copy(update={"moe": None}), sc).per_layer
    assert dense < top1 < 1.3 * dense


def test_moe_with_dense_layers_uses_the_larger_block_for_the_workspace() -> None:
    deepseek_like = MIXTRAL.model_copy(
        update={
            "num_layers": 4,
            "intermediate_size": 4096,
            "moe": MoEConfig(
                num_experts=8, experts_per_token=2, expert_intermediate_size=256, dense_layers=(0,)
            ),
        }
    )
    sc = scenario(attention=AttentionKernel.SDPA)
    none = run(deepseek_like, sc)
    full = run(deepseek_like, sc.model_copy(update={"recompute": Recompute.FULL}))
    assert full.workspace > none.per_layer  # the dense block is larger than the average block


def test_dtype_and_dropout() -> None:
    sc = scenario(attention=AttentionKernel.EAGER)
    bf16 = run(LLAMA_8B, sc).per_layer
    fp32 = run(LLAMA_8B, sc.model_copy(update={"dtype": DType.FP32})).per_layer
    assert bf16 < fp32 < 2 * bf16  # norms and softmax are fp32 already
    dropped = run(LLAMA_8B, sc.model_copy(update={"assumptions": {DROPOUT: 0.1}})).per_layer
    # Dropout keeps a 1-byte mask per score and per residual element; the bf16 cast of the
    # probabilities gives way to the dropped probabilities (same size).
    a, s, h = 32, 2048, 4096
    assert dropped - bf16 == pytest.approx(2048 * (a * s * 1 + 2 * h))
    assert (
        run(LLAMA_8B, scenario(workload=Workload.INFERENCE, assumptions={DROPOUT: 0.1})).total
        == run(LLAMA_8B, scenario(workload=Workload.INFERENCE)).total
    )  # no dropout in inference


def test_lora_keeps_less() -> None:
    full = run(LLAMA_8B, scenario(workload=Workload.FINETUNE, attention=AttentionKernel.FLASH))
    lora = run(
        LLAMA_8B,
        scenario(workload=Workload.FINETUNE, method=FinetuneMethod.LORA, attention=AttentionKernel.FLASH),
    )
    attn_only = run(
        LLAMA_8B,
        scenario(
            workload=Workload.FINETUNE,
            method=FinetuneMethod.LORA,
            lora_targets="attention",
            attention=AttentionKernel.FLASH,
        ),
    )
    assert attn_only.kept < lora.kept < full.kept


def test_head_keeps_fp32_log_softmax_and_peak_adds_loss_buffers() -> None:
    """Llama-3.1-8B, 8192 tokens: the loss keeps 4 bytes per logit (4.2 GB) and its backward needs
    8 more; with full recompute those dominate the step's peak."""
    r = run(LLAMA_8B, scenario(attention=AttentionKernel.FLASH, recompute=Recompute.FULL), s=8192)
    logits = 8192 * 128256
    assert r.head > 4 * logits
    assert r.transient == 8 * logits
    assert r.peak() == r.kept + r.transient
    middle = run(LLAMA_8B, scenario(attention=AttentionKernel.FLASH), s=8192, first=False, last=False)
    assert middle.head == 0 and middle.transient < r.transient


def test_inference_working_set() -> None:
    sc = scenario(workload=Workload.INFERENCE, attention=AttentionKernel.FLASH)
    r = run(LLAMA_8B, sc, b=4, s=4096)
    assert r.per_layer == 0
    assert r.total == r.embedding + r.head + r.workspace
    assert r.head == 4 * 128256 * (2 + 4)  # last position of each sequence, bf16 and fp32
    every = run(LLAMA_8B, sc.model_copy(update={"assumptions": {ALL_LOGITS: 1.0}}), b=4, s=4096)
    assert every.head == 4096 * r.head
    training = run(LLAMA_8B, scenario(attention=AttentionKernel.FLASH), b=4, s=4096)
    assert r.total < training.per_layer  # one block's working set, not a stack of them
    eager = run(LLAMA_8B, sc.model_copy(update={"attention": AttentionKernel.EAGER}), b=4, s=4096)
    assert eager.workspace > r.workspace


def test_formula_text() -> None:
    r = run(LLAMA_8B, scenario(attention=AttentionKernel.EAGER, recompute=Recompute.FULL), tp=2, sp=True)
    text = r.formula
    assert "per layer" in text and "recomputed block" in text and "32 layers" in text
    assert "per layer" in run(LLAMA_8B, scenario(recompute=Recompute.SELECTIVE)).formula
    assert "working set" in run(LLAMA_8B, scenario(workload=Workload.INFERENCE)).formula


def test_assumptions_are_documented_data() -> None:
    ids = {a.id for a in ASSUMPTIONS}
    assert {DROPOUT, MEGATRON, ALL_LOGITS} <= ids
    for a in ASSUMPTIONS:
        assert a.id.startswith("memory.") and a.source and a.description


