"""Our FLOP counts against what PyTorch executes, and against published formulas.

Reference implementation: ``torch.utils.flop_counter.FlopCounterMode`` counting the matmuls
(``mm``/``addmm``/``bmm``: 2 FLOPs per multiply-accumulate, bias adds ignored) that Hugging Face
transformers models run, built from configs with no download. What the counter sees, and how
the tests take it:

* SDPA on CPU dispatches to ``_scaled_dot_product_flash_attention_for_cpu``, which has no FLOP
  formula in torch 2.13's registry: it counts 0. The SDPA runs therefore pin the MATH backend
  (``sdpa_kernel(SDPBackend.MATH)``), whose ``bmm`` over the full ``s x s`` score matrix is
  what a dense kernel computes; on the meta device SDPA decomposes into the same ``bmm``.
* transformers' MoE layers default to grouped kernels (``torch._grouped_mm``, not in the
  registry either). The tests pick ``experts_implementation="eager"`` (a loop over the experts hit,
  each on the tokens routed to it: exactly tokens x top_k rows) or ``"batched_mm"`` (one ``bmm``
  row per (token, expert) pair; no data-dependent shapes, so it also runs on the meta device).
* ``model(input_ids)`` computes logits for every position (our ``flops.forward``);
  ``model(input_ids, logits_to_keep=1)`` is what ``generate()`` runs for a prompt (our
  ``flops.prefill``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import pytest
from engine_fixtures import GPU, NODE
from workbench_compute import ComputeEstimator

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
)
from workbench.core.model import NormKind, PositionEmbedding
from workbench.core.resolved import ResolvedScenario
from workbench.engine.estimate import Estimate
from workbench.engine.pipeline import Engine

pytestmark = pytest.mark.validation
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

ENGINE = Engine([ComputeEstimator()])
TOLERANCE = 0.01  # the bar; the dense families agree to the FLOP


def ours(arch: ModelArchitecture, **fields: object) -> Estimate:
    scenario = Scenario(model=arch.name, gpu=GPU.id, **fields)
    est = ENGINE.run(
        ResolvedScenario(scenario, arch, Cluster(accelerator=GPU, node=NODE, num_gpus=scenario.num_gpus))
    )
    assert not est.failures, est.failures
    return est


def counted(fn: Callable[[], object]) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


@contextlib.contextmanager
def attention_kernel(impl: str) -> Iterator[None]:
    if impl == "sdpa":
        with sdpa_kernel(SDPBackend.MATH):
            yield
    else:
        yield


def assert_close(our: float, torch_flops: int, what: str) -> None:
    error = abs(our - torch_flops) / torch_flops
    assert error <= TOLERANCE, f"{what}: ours {our:.6g} vs FlopCounterMode {torch_flops:.6g} ({error:.3%})"


# --- tiny models, real tensors --------------------------------------------------------------------
# Each entry: (transformers config class name, config kwargs, our architecture of the same model).

LLAMA = {
    "hidden_size": 64,
    "intermediate_size": 176,
    "num_hidden_layers": 2,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "vocab_size": 1000,
}
LLAMA_ARCH = ModelArchitecture(
    name="tiny-llama-gqa",
    family="llama",
    num_layers=2,
    hidden_size=64,
    num_attention_heads=8,
    num_kv_heads=2,
    head_dim=8,
    intermediate_size=176,
    vocab_size=1000,
)

MIXTRAL = {
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "vocab_size": 1000,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
}
MIXTRAL_ARCH = ModelArchitecture(
    name="tiny-mixtral",
    family="mixtral",
    num_layers=2,
    hidden_size=64,
    num_attention_heads=8,
    num_kv_heads=2,
    head_dim=8,
    intermediate_size=96,
    vocab_size=1000,
    moe=MoEConfig(num_experts=4, experts_per_token=2, expert_intermediate_size=96),
)

DEEPSEEK = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "moe_intermediate_size": 32,
    "num_hidden_layers": 3,
    "first_k_dense_replace": 1,
    "n_routed_experts": 8,
    "num_experts_per_tok": 2,
    "n_shared_experts": 1,
    "n_group": 1,
    "topk_group": 1,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "q_lora_rank": 24,
    "kv_lora_rank": 16,
    "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 16,
    "v_head_dim": 16,
    "vocab_size": 1000,
}
DEEPSEEK_ARCH = ModelArchitecture(
    name="tiny-deepseek-v3",
    family="deepseek",
    num_layers=3,
    hidden_size=64,
    num_attention_heads=4,
    num_kv_heads=4,
    head_dim=24,
    intermediate_size=128,
    vocab_size=1000,
    moe=MoEConfig(
        num_experts=8,
        experts_per_token=2,
        expert_intermediate_size=32,
        num_shared_experts=1,
        router_bias=True,
        dense_layers=(0,),
    ),
    mla=MLAConfig(q_lora_rank=24, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16),
)

GPT2 = {
    "n_embd": 64,
    "n_layer": 2,
    "n_head": 4,
    "vocab_size": 1000,
    "n_positions": 128,
    "bos_token_id": 0,
    "eos_token_id": 0,
}
GPT2_ARCH = ModelArchitecture(
    name="tiny-gpt2",
    family="gpt2",
    num_layers=2,
    hidden_size=64,
    num_attention_heads=4,
    num_kv_heads=4,
    head_dim=16,
    intermediate_size=256,
    gated_mlp=False,
    activation="gelu_new",
    vocab_size=1000,
    tie_word_embeddings=True,
    norm_kind=NormKind.LAYERNORM,
    norm_bias=True,
    attention_bias=True,
    attention_out_bias=True,
    mlp_bias=True,
    position_embedding=PositionEmbedding.LEARNED,
    max_position_embeddings=128,
)

# Qwen3: q/k norms, head_dim independent of hidden/heads, and sliding-window attention on the
# layers from max_window_layers on (window 8 < seq 32, so a dense kernel still computes 32 x 32).
QWEN3 = {
    "hidden_size": 64,
    "intermediate_size": 160,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "vocab_size": 1000,
    "use_sliding_window": True,
    "sliding_window": 8,
    "max_window_layers": 1,
}
QWEN3_ARCH = ModelArchitecture(
    name="tiny-qwen3-swa",
    family="qwen3",
    num_layers=3,
    hidden_size=64,
    num_attention_heads=4,
    num_kv_heads=2,
    head_dim=32,
    intermediate_size=160,
    vocab_size=1000,
    qk_norm=True,
    sliding_window=SlidingWindow(window=8, layers=(1, 2)),
)

FAMILIES = {
    "llama-gqa": ("LlamaConfig", LLAMA, LLAMA_ARCH, "eager"),
    "mixtral-moe": ("MixtralConfig", MIXTRAL, MIXTRAL_ARCH, "eager"),
    "deepseek-v3-mla-moe": ("DeepseekV3Config", DEEPSEEK, DEEPSEEK_ARCH, "eager"),
    "gpt2": ("GPT2Config", GPT2, GPT2_ARCH, None),
    "qwen3-sliding-window": ("Qwen3Config", QWEN3, QWEN3_ARCH, None),
}
BATCH, SEQ = 2, 32


def build(family: str, attn: str, *, experts: str | None = None) -> torch.nn.Module:
    config_class, kwargs, _, default_experts = FAMILIES[family]
    config = getattr(transformers, config_class)(**kwargs)
    extra = {}
    if experts or default_experts:
        extra["experts_implementation"] = experts or default_experts
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation=attn, **extra)
    return model


def input_ids(batch: int = BATCH, seq: int = SEQ, device: str = "cpu") -> torch.Tensor:
    return torch.randint(0, 1000, (batch, seq), device=device)


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_forward_and_prefill_match_flop_counter(family: str, attn: str) -> None:
    arch = FAMILIES[family][2]
    model = build(family, attn).eval()
    ids = input_ids()
    with torch.no_grad(), attention_kernel(attn):
        forward = counted(lambda: model(ids))
        prefill = counted(lambda: model(ids, logits_to_keep=1))
    est = ours(arch, batch_size=BATCH, seq_len=SEQ)
    assert_close(est.get("flops.forward"), forward, f"{family}/{attn} forward")
    assert_close(est.get("flops.prefill"), prefill, f"{family}/{attn} prefill")


@pytest.mark.parametrize("family", list(FAMILIES))
def test_training_step_matches_flop_counter(family: str) -> None:
    arch = FAMILIES[family][2]
    model = build(family, "eager").train()
    ids = input_ids()

    def step() -> None:
        model(ids, labels=ids).loss.backward()

    est = ours(arch, workload="pretrain", batch_size=BATCH, seq_len=SEQ)
    assert_close(est.get("flops.training_step"), counted(step), f"{family} training step")


@pytest.mark.parametrize("family", ["llama-gqa", "deepseek-v3-mla-moe"])
def test_full_recompute_matches_gradient_checkpointing(family: str) -> None:
    """HF activation (gradient) checkpointing re-runs each decoder layer in backward: one more forward of the
    blocks, not of the LM head (Narayanan et al. 2021 and Megatron-LM count it the same way).

    PyTorch's non-reentrant checkpoint stops recomputing once every tensor backward needs is back
    ("early stop", on by default): the last matmul of a block, whose output nobody saved, is not
    re-run. Switched off, the counter sees the full recompute we (and Megatron-LM) count."""
    arch = FAMILIES[family][2]
    model = build(family, "eager").train()
    model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    ids = input_ids()
    with torch.utils.checkpoint.set_checkpoint_early_stop(False):
        measured = counted(lambda: model(ids, labels=ids).loss.backward())
    est = ours(arch, workload="pretrain", batch_size=BATCH, seq_len=SEQ, recompute="full")
    assert_close(est.get("flops.training_step"), measured, f"{family} step with full recompute")
    without = ours(arch, workload="pretrain", batch_size=BATCH, seq_len=SEQ)
    assert est.get("flops.recompute") > 0 and without.get("flops.recompute") == 0
    if family == "llama-gqa":  # with early stop, exactly each block's down projection is not re-run
        early = counted(lambda: model(ids, labels=ids).loss.backward())
        down_proj = 2 * BATCH * SEQ * arch.intermediate_size * arch.hidden_size * arch.num_layers
        assert early == est.get("flops.training_step") - down_proj


@pytest.mark.parametrize("family", list(FAMILIES))
def test_decode_step_matches_flop_counter(family: str) -> None:
    """One generated token per sequence with a KV cache of SEQ prompt tokens: the new token attends
    to SEQ + 1 keys, our context seq_len + fraction x gen_len with gen_len = 2. transformers caches
    MLA's latent and re-expands all of it through kv_b_proj at every step, with no weight
    absorption: the MLA run sets compute.mla_absorbed_decode = 0. Sliding-window layers keep only
    the window in their cache (8 keys here, not 33)."""
    arch = FAMILIES[family][2]
    model = build(family, "eager").eval()
    ids = input_ids()
    with torch.no_grad():
        cache = model(ids, use_cache=True).past_key_values
        step = counted(lambda: model(input_ids(BATCH, 1), past_key_values=cache, use_cache=True))
    est = ours(arch, batch_size=BATCH, seq_len=SEQ, gen_len=2, assumptions={"compute.mla_absorbed_decode": 0})
    assert_close(est.get("flops.decode_step"), step, f"{family} decode step")


class LoRALinear(torch.nn.Module):
    """A frozen linear plus a trainable low-rank update ``B A x`` (Hu et al. 2021), like PEFT's."""

    def __init__(self, base: torch.nn.Linear, rank: int) -> None:
        super().__init__()
        self.base = base.requires_grad_(False)
        self.lora_a = torch.nn.Linear(base.in_features, rank, bias=False)
        self.lora_b = torch.nn.Linear(rank, base.out_features, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + self.lora_b(self.lora_a(x))


def add_lora(model: torch.nn.Module, rank: int, names: tuple[str, ...]) -> None:
    model.requires_grad_(False)
    for module in list(model.modules()):
        for child_name, child in list(module.named_children()):
            if child_name in names and isinstance(child, torch.nn.Linear):
                setattr(module, child_name, LoRALinear(child, rank))


LINEAR_ATTENTION = (
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "q_a_proj",
    "q_b_proj",
    "kv_a_proj_with_mqa",
    "kv_b_proj",
)
LINEAR_MLP = ("gate_proj", "up_proj", "down_proj")


@pytest.mark.parametrize(
    ("family", "targets"),
    [
        ("llama-gqa", "all-linear"),
        ("llama-gqa", "attention"),
        ("deepseek-v3-mla-moe", "all-linear"),
    ],
)
def test_lora_backward_matches_flop_counter(family: str, targets: str) -> None:
    """Frozen matrices cost only their input gradient; adapters their full forward + backward.

    Adapters go where PEFT's target sets put them: every nn.Linear but the LM head ("all-linear":
    attention, MLA projections, dense and shared-expert MLPs; transformers 5 keeps routed experts
    as 3-D parameters, so they get none) or the attention projections only. The router stays
    frozen. ``enable_input_require_grads`` (what PEFT switches on with gradient checkpointing)
    makes autograd compute the first block's input gradient too, as our convention counts it."""
    rank = 4
    arch = FAMILIES[family][2]
    model = build(family, "eager").train()
    add_lora(model, rank, LINEAR_ATTENTION + (LINEAR_MLP if targets == "all-linear" else ()))
    model.enable_input_require_grads()
    ids = input_ids()
    measured = counted(lambda: model(ids, labels=ids).loss.backward())
    est = ours(
        arch,
        workload="finetune",
        method="lora",
        lora_rank=rank,
        lora_targets=targets,
        batch_size=BATCH,
        seq_len=SEQ,
    )
    assert_close(est.get("flops.training_step"), measured, f"{family} LoRA ({targets}) step")
    full = ours(arch, workload="finetune", batch_size=BATCH, seq_len=SEQ)
    assert est.get("flops.backward") < full.get("flops.backward")


# --- encoder-decoder (T5) and encoder-only (BERT masked LM) ---------------------------------------------

T5 = {
    "d_model": 64,
    "d_kv": 16,
    "d_ff": 128,
    "num_layers": 2,
    "num_decoder_layers": 2,
    "num_heads": 4,
    "vocab_size": 1000,
    "feed_forward_proj": "relu",
    "decoder_start_token_id": 0,
    "pad_token_id": 0,
}
T5_ARCH = ModelArchitecture(
    name="tiny-t5",
    family="t5",
    kind=ModelKind.ENCODER_DECODER,
    head=Head.SEQ2SEQ_LM,
    num_layers=2,
    hidden_size=64,
    num_attention_heads=4,
    num_kv_heads=4,
    head_dim=16,
    intermediate_size=128,
    gated_mlp=False,
    activation="relu",
    vocab_size=1000,
    tie_word_embeddings=True,
    position_embedding=PositionEmbedding.RELATIVE_BIAS,
    encoder_decoder=EncoderDecoderConfig(num_decoder_layers=2),
)
BERT = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "vocab_size": 1000,
    "max_position_embeddings": 64,
}
BERT_ARCH = ModelArchitecture(
    name="tiny-bert",
    family="bert",
    kind=ModelKind.ENCODER,
    head=Head.MASKED_LM,
    num_layers=2,
    hidden_size=64,
    num_attention_heads=4,
    num_kv_heads=4,
    head_dim=16,
    intermediate_size=128,
    gated_mlp=False,
    activation="gelu",
    vocab_size=1000,
    tie_word_embeddings=True,
    position_embedding=PositionEmbedding.LEARNED,
    max_position_embeddings=64,
    type_vocab_size=2,
    norm_kind=NormKind.LAYERNORM,
    norm_bias=True,
    embedding_norm=True,
    attention_bias=True,
    attention_out_bias=True,
    mlp_bias=True,
)


def test_t5_encoder_decoder_forward_prefill_decode_and_training() -> None:
    """Encoder over seq_len, decoder over a target of seq_len (forward, training) or its first token
    (prefill); a decode step runs the decoder only, cross-attending to the cached encoder K/V."""
    model = transformers.AutoModelForSeq2SeqLM.from_config(
        transformers.T5Config(**T5), attn_implementation="eager"
    )
    model.eval()
    ids = input_ids()
    with torch.no_grad():
        forward = counted(lambda: model(input_ids=ids, decoder_input_ids=ids))
        prefill = counted(lambda: model(input_ids=ids, decoder_input_ids=ids[:, :1]))
        encoded = model.get_encoder()(input_ids=ids)
        first = model(encoder_outputs=encoded, decoder_input_ids=ids[:, :1], use_cache=True)
        decode = counted(
            lambda: model(
                encoder_outputs=encoded,
                decoder_input_ids=ids[:, 1:2],
                past_key_values=first.past_key_values,
                use_cache=True,
            )
        )
    est = ours(T5_ARCH, batch_size=BATCH, seq_len=SEQ, gen_len=4)  # decode context 0.5 x 4 = 2 decoder tokens
    assert_close(est.get("flops.forward"), forward, "T5 forward")
    assert_close(est.get("flops.prefill"), prefill, "T5 prefill")
    assert_close(est.get("flops.decode_step"), decode, "T5 decode step")
    model.train()
    step = counted(lambda: model(input_ids=ids, labels=ids).loss.backward())
    est = ours(T5_ARCH, workload="pretrain", batch_size=BATCH, seq_len=SEQ)
    assert_close(est.get("flops.training_step"), step, "T5 training step")


def test_bert_masked_lm_forward_and_training() -> None:
    """The MLM head (dense transform + tied decoder) runs on every position, in prefill too."""
    model = transformers.AutoModelForMaskedLM.from_config(
        transformers.BertConfig(**BERT), attn_implementation="eager"
    )
    ids = input_ids()
    with torch.no_grad():
        forward = counted(lambda: model.eval()(input_ids=ids))
    step = counted(lambda: model.train()(input_ids=ids, labels=ids).loss.backward())
    est = ours(BERT_ARCH, workload="pretrain", batch_size=BATCH, seq_len=SEQ)
    assert_close(est.get("flops.forward"), forward, "BERT forward")
    assert_close(est.get("flops.prefill"), forward, "BERT prefill")
    assert_close(est.get("flops.training_step"), step, "BERT training step")


# --- real-size models on the meta device (no memory, shapes only) ---------------------------------

LLAMA_31_8B = {
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
}
LLAMA_31_8B_ARCH = ModelArchitecture(
    name="Llama-3.1-8B",
    family="llama",
    num_layers=32,
    hidden_size=4096,
    num_attention_heads=32,
    num_kv_heads=8,
    head_dim=128,
    intermediate_size=14336,
    vocab_size=128256,
    max_position_embeddings=131072,
)
MIXTRAL_8X7B = {
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 32000,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
}
MIXTRAL_8X7B_ARCH = ModelArchitecture(
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


def meta_model(config_class: str, kwargs: dict[str, object], **extra: object) -> torch.nn.Module:
    config = getattr(transformers, config_class)(**kwargs)
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa", **extra)


@pytest.mark.slow
def test_llama_31_8b_real_size_on_meta_device() -> None:
    model = meta_model("LlamaConfig", LLAMA_31_8B).train()
    ids = input_ids(1, 2048, device="meta")
    forward = counted(lambda: model(ids))
    step = counted(lambda: model(ids, labels=ids).loss.backward())
    est = ours(LLAMA_31_8B_ARCH, workload="pretrain", batch_size=1, seq_len=2048)
    assert_close(est.get("flops.forward"), forward, "Llama-3.1-8B forward")
    assert_close(est.get("flops.training_step"), step, "Llama-3.1-8B training step")


@pytest.mark.slow
def test_mixtral_8x7b_real_size_on_meta_device() -> None:
    model = meta_model("MixtralConfig", MIXTRAL_8X7B, experts_implementation="batched_mm").eval()
    ids = input_ids(1, 1024, device="meta")
    with torch.no_grad():
        forward = counted(lambda: model(ids))
    est = ours(MIXTRAL_8X7B_ARCH, batch_size=1, seq_len=1024)
    assert_close(est.get("flops.forward"), forward, "Mixtral-8x7B forward")


DEEPSEEK_V3 = {
    "vocab_size": 129280,
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "n_shared_experts": 1,
    "n_routed_experts": 256,
    "num_experts_per_tok": 8,
    "n_group": 8,
    "topk_group": 4,
    "first_k_dense_replace": 3,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
}
DEEPSEEK_V3_ARCH = ModelArchitecture(
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


@pytest.mark.slow
def test_deepseek_v3_671b_real_size_on_meta_device() -> None:
    """MLA (q/kv low-rank projections, non-absorbed as transformers runs it), 3 dense layers, 256
    routed experts top-8 plus a shared expert, group-limited routing: forward and training step."""
    model = meta_model("DeepseekV3Config", DEEPSEEK_V3, experts_implementation="batched_mm").train()
    ids = input_ids(1, 512, device="meta")
    forward = counted(lambda: model(ids))
    step = counted(lambda: model(ids, labels=ids).loss.backward())
    est = ours(DEEPSEEK_V3_ARCH, workload="pretrain", batch_size=1, seq_len=512)
    assert_close(est.get("flops.forward"), forward, "DeepSeek-V3 forward")
    assert_close(est.get("flops.training_step"), step, "DeepSeek-V3 training step")


# --- published formulas ----------------------------------------------------------------------------

GPT3_175B = ModelArchitecture(
    name="GPT-3 175B",
    family="gpt3",
    num_layers=96,
    hidden_size=12288,
    num_attention_heads=96,
    num_kv_heads=96,
    head_dim=128,
    intermediate_size=4 * 12288,
    gated_mlp=False,
    activation="gelu",
    vocab_size=51200,
    tie_word_embeddings=True,
    norm_kind=NormKind.LAYERNORM,
    norm_bias=True,
    attention_bias=True,
    attention_out_bias=True,
    mlp_bias=True,
    position_embedding=PositionEmbedding.LEARNED,
)


def test_narayanan_2021_flops_per_iteration_with_full_recompute() -> None:
    """Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
    Megatron-LM", sec. 5.1 eq. (3): F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) FLOPs per iteration,
    with activation recomputation (forward, 2x backward, one recomputed forward of the blocks)."""
    B, s, l, h, V = 4, 2048, 96, 12288, 51200
    est = ours(GPT3_175B, workload="pretrain", batch_size=B, seq_len=s, recompute="full")
    paper = 96 * B * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
    assert est.get("flops.training_step") == pytest.approx(paper, rel=1e-12)


def test_kaplan_2020_forward_and_6nd() -> None:
    """Kaplan et al. 2020, "Scaling Laws for Neural Language Models", Table 1: forward FLOPs per token
    C_forward = 2N + 2 n_layer n_ctx d_attn with N = 12 n_layer d_model^2 the non-embedding parameters,
    training C = 6N per token. Table 1 counts the attention logits (QK^T) only; the value product PV
    costs the same again, and the de-embedding (LM head, 2 d_model n_vocab) is listed but not in N.
    So ours = 2N + 4 n_layer n_ctx d_attn + 2 d_model n_vocab per token, and training is
    6N (1 + n_ctx / (6 d_model) + n_vocab / (12 n_layer d_model)): within 3.2% of 6N at s = 2048."""
    l, h, s, V = 96, 12288, 2048, 51200
    n = 12 * l * h * h
    est = ours(GPT3_175B, workload="pretrain", batch_size=1, seq_len=s)
    assert est.get("flops.per_token_forward") == pytest.approx(2 * n + 4 * l * s * h + 2 * h * V, rel=1e-12)
    per_token_training = est.get("flops.training_step") / s
    assert per_token_training == pytest.approx(6 * n * (1 + s / (6 * h) + V / (12 * l * h)), rel=1e-12)
    assert 1.0 < per_token_training / (6 * n) < 1.032


def test_chinchilla_appendix_f_forward_without_embeddings_and_softmax() -> None:
    """Hoffmann et al. 2022, "Training Compute-Optimal Large Language Models", Appendix F: forward FLOPs =
    embeddings 2 s V d + L x [QKV 2 s 3 d (k n_h) + logits 2 s^2 (k n_h) + softmax 3 n_h s^2
    + softmax@value 2 s^2 (k n_h) + final linear 2 s (k n_h) d + dense 2 s (2 d f)] + logits 2 s d V;
    backward = 2 x forward. Our convention leaves out the two non-matmul terms (the embedding
    lookup, counted there as a one-hot matmul, and the softmax), and nothing else."""
    l, d, nh, k, f, s, V = 96, 12288, 96, 128, 4 * 12288, 2048, 51200
    embeddings, softmax = 2 * s * V * d, l * 3 * nh * s * s
    forward = (
        embeddings
        + l
        * (
            2 * s * 3 * d * k * nh
            + 2 * s * s * k * nh
            + 3 * nh * s * s
            + 2 * s * s * k * nh
            + 2 * s * k * nh * d
            + 2 * s * 2 * d * f
        )
        + 2 * s * d * V
    )
    est = ours(GPT3_175B, workload="pretrain", batch_size=1, seq_len=s)
    assert est.get("flops.forward") == pytest.approx(forward - embeddings - softmax, rel=1e-12)
    assert est.get("flops.training_step") == pytest.approx(3 * (forward - embeddings - softmax), rel=1e-12)
