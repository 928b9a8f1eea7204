"""KV cache bytes against the cache Hugging Face transformers really allocates (CPU, real tensors).

Small models are built from configs (Llama GQA, Mistral, Qwen2, GPTBigCode MQA, Gemma-2 with
alternating sliding-window layers, DeepSeek-V3 MLA); one forward with ``use_cache=True`` fills
``past_key_values``, and the bytes of its tensors (``numel x element_size``) are compared with
``kv_cache.bytes`` for the same batch, prompt length and dtype (paging off: transformers does not
page).

Documented differences, each asserted exactly:
* sliding-window layers: transformers' ``DynamicSlidingWindowLayer`` keeps the last ``window - 1``
  tokens (cache_utils.py), serving engines and this estimator ``window``: one token per sequence
  and sliding layer more here;
* MLA: transformers >= 5 caches the compressed latent, ``kv_lora_rank`` + ``qk_rope_head_dim`` per
  token and layer (huggingface/transformers PR #47761), as vLLM/SGLang do: our default. The
  ``memory.kv_mla_decompressed`` mode is what older transformers cached: the per-head K and V that
  ``DeepseekV3Attention.expand_kv`` rebuilds from that latent, measured here on the same model.
"""

from __future__ import annotations

import pytest
from engine_fixtures import GPU, NODE
from workbench_memory.kv_cache import KvCacheEstimator
from workbench_memory.stack import MemoryStackEstimator

from workbench.core import (
    Cluster,
    MLAConfig,
    ModelArchitecture,
    MoEConfig,
    Scenario,
    SlidingWindow,
)
from workbench.core.resolved import ResolvedScenario
from workbench.engine.pipeline import Engine

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.validation

ENGINE = Engine([KvCacheEstimator()])
BATCH, SEQ = 3, 37  # 37 is not a multiple of the 16-token page: paging would show


def hf_cache_bytes(model, batch: int = BATCH, seq: int = SEQ) -> int:  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (batch, seq))
    with torch.no_grad():
        cache = model(ids, use_cache=True).past_key_values
    return sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values))


def ours(arch: ModelArchitecture, dtype: str, paged: bool = False, **assumptions: float) -> float:
    scenario = Scenario(
        model=arch.name,
        gpu="test-gpu",
        dtype=dtype,
        batch_size=BATCH,
        seq_len=SEQ,
        gen_len=0,
        serving={"paged_kv": paged},
        assumptions=assumptions,
    )
    est = ENGINE.run(ResolvedScenario(scenario, arch, Cluster(accelerator=GPU, node=NODE, num_gpus=1)))
    assert not est.failures, est.failures
    return float(est.get("kv_cache.bytes"))


def arch(name: str, cfg, **fields: object) -> ModelArchitecture:  # type: ignore[no-untyped-def]
    """Our description of a transformers config (only what the KV cache depends on varies)."""
    heads = cfg.num_attention_heads
    base = {
        "num_layers": cfg.num_hidden_layers,
        "hidden_size": cfg.hidden_size,
        "num_attention_heads": heads,
        "num_kv_heads": getattr(cfg, "num_key_value_heads", heads),
        "head_dim": getattr(cfg, "head_dim", None) or cfg.hidden_size // heads,
        "intermediate_size": cfg.intermediate_size,
        "vocab_size": cfg.vocab_size,
    }
    base.update(fields)
    return ModelArchitecture(name=name, **base)


SMALL = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 3, "vocab_size": 128}


def build(config_cls, model_cls, dtype, **kw):  # type: ignore[no-untyped-def]
    cfg = config_cls(**kw)
    return cfg, model_cls(cfg).to(dtype).eval()


@pytest.mark.parametrize(("torch_dtype", "dtype"), [("bfloat16", "bf16"), ("float32", "fp32")])
def test_llama_gqa(torch_dtype: str, dtype: str) -> None:
    cfg, model = build(
        transformers.LlamaConfig,
        transformers.LlamaForCausalLM,
        getattr(torch, torch_dtype),
        num_attention_heads=8,
        num_key_value_heads=2,
        **SMALL,
    )
    expected = hf_cache_bytes(model)
    assert expected == BATCH * SEQ * 3 * 2 * 2 * 8 * (2 if dtype == "bf16" else 4)
    assert ours(arch("llama", cfg), dtype) == expected


def test_mistral_full_attention() -> None:
    cfg, model = build(
        transformers.MistralConfig,
        transformers.MistralForCausalLM,
        torch.bfloat16,
        num_attention_heads=8,
        num_key_value_heads=2,
        head_dim=16,
        sliding_window=None,
        **SMALL,
    )
    assert ours(arch("mistral", cfg), "bf16") == hf_cache_bytes(model)


def test_qwen2_with_qkv_bias() -> None:
    cfg, model = build(
        transformers.Qwen2Config,
        transformers.Qwen2ForCausalLM,
        torch.bfloat16,
        num_attention_heads=4,
        num_key_value_heads=2,
        **SMALL,
    )
    assert ours(arch("qwen2", cfg, attention_bias=True), "bf16") == hf_cache_bytes(model)


def test_gpt_bigcode_multi_query() -> None:
    cfg = transformers.GPTBigCodeConfig(
        n_embd=64, n_layer=3, n_head=8, multi_query=True, vocab_size=128, bos_token_id=0, eos_token_id=0
    )
    model = transformers.GPTBigCodeForCausalLM(cfg).to(torch.bfloat16).eval()
    expected = hf_cache_bytes(model)
    mqa = ModelArchitecture(
        name="bigcode",
        num_layers=3,
        hidden_size=64,
        num_attention_heads=8,
        num_kv_heads=1,
        head_dim=8,
        intermediate_size=256,
        gated_mlp=False,
        vocab_size=128,
    )
    assert mqa.attention_kind == "mqa"
    assert ours(mqa, "bf16") == expected == BATCH * SEQ * 3 * 2 * 1 * 8 * 2


def test_paged_blocks_round_each_sequence_up_to_16_tokens() -> None:
    cfg, model = build(
        transformers.LlamaConfig,
        transformers.LlamaForCausalLM,
        torch.bfloat16,
        num_attention_heads=8,
        num_key_value_heads=2,
        **SMALL,
    )
    assert ours(arch("llama", cfg), "bf16", paged=True) == hf_cache_bytes(model) * 48 / SEQ


def test_sliding_window_keeps_window_tokens_transformers_window_minus_one() -> None:
    window = 8
    cfg, model = build(
        transformers.MistralConfig,
        transformers.MistralForCausalLM,
        torch.bfloat16,
        num_attention_heads=8,
        num_key_value_heads=2,
        head_dim=16,
        sliding_window=window,
        **SMALL,
    )
    per_token_layer = 2 * 2 * 16 * 2  # K and V, 2 KV heads, 16 dims, bf16
    hf = hf_cache_bytes(model)
    assert hf == BATCH * 3 * (window - 1) * per_token_layer  # every layer capped at window - 1
    ours_sw = ours(arch("mistral-sw", cfg, sliding_window=SlidingWindow(window=window)), "bf16")
    assert ours_sw == BATCH * 3 * window * per_token_layer == hf + BATCH * 3 * per_token_layer


def test_gemma2_alternating_sliding_and_full_layers() -> None:
    window = 8
    cfg, model = build(
        transformers.Gemma2Config,
        transformers.Gemma2ForCausalLM,
        torch.bfloat16,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=4,
        vocab_size=128,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        sliding_window=window,
    )
    sliding = tuple(i for i, kind in enumerate(cfg.layer_types) if kind == "sliding_attention")
    assert 0 < len(sliding) < 4
    ours_bytes = ours(
        arch("gemma2", cfg, sliding_window=SlidingWindow(window=window, layers=sliding), norms_per_layer=4),
        "bf16",
    )
    per_token_layer = 2 * 2 * 16 * 2
    assert ours_bytes == hf_cache_bytes(model) + BATCH * len(sliding) * per_token_layer


def _tiny_deepseek_v3():  # type: ignore[no-untyped-def]
    cfg = transformers.DeepseekV3Config(
        hidden_size=64,
        intermediate_size=128,
        moe_intermediate_size=32,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=4,
        n_routed_experts=4,
        num_experts_per_tok=2,
        n_shared_experts=1,
        first_k_dense_replace=1,
        n_group=1,
        topk_group=1,
        kv_lora_rank=16,
        q_lora_rank=24,
        qk_rope_head_dim=8,
        qk_nope_head_dim=16,
        v_head_dim=16,
        vocab_size=128,
    )
    model = transformers.DeepseekV3ForCausalLM(cfg).to(torch.bfloat16).eval()
    ours_arch = ModelArchitecture(
        name="deepseek-v3-tiny",
        num_layers=3,
        hidden_size=64,
        num_attention_heads=4,
        num_kv_heads=4,
        head_dim=24,
        intermediate_size=128,
        vocab_size=128,
        mla=MLAConfig(
            q_lora_rank=24, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16
        ),
        moe=MoEConfig(
            num_experts=4,
            experts_per_token=2,
            expert_intermediate_size=32,
            num_shared_experts=1,
            dense_layers=(0,),
        ),
    )
    return model, ours_arch


def test_deepseek_v3_mla_latent_cache_matches_transformers() -> None:
    model, mla = _tiny_deepseek_v3()
    hf = hf_cache_bytes(model)
    assert hf == BATCH * SEQ * 3 * (16 + 8) * 2  # (kv_lora_rank + qk_rope_head_dim) x layers x bf16
    assert ours(mla, "bf16") == hf


def test_deepseek_v3_decompressed_mode_matches_expanded_k_and_v() -> None:
    model, mla = _tiny_deepseek_v3()
    torch.manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (BATCH, SEQ))
    with torch.no_grad():
        cache = model(ids, use_cache=True).past_key_values
        expanded = 0
        for layer_cache, block in zip(cache.layers, model.model.layers):
            keys, values = block.self_attn.expand_kv(layer_cache.keys, layer_cache.values)
            expanded += sum(t.numel() * t.element_size() for t in (keys, values))
    assert expanded == BATCH * SEQ * 3 * 4 * ((16 + 8) + 16) * 2  # heads x (K qk_head_dim + V v_head_dim)
    assert ours(mla, "bf16", **{"memory.kv_mla_decompressed": 1.0}) == expanded


def _lora_params_in_blocks(model, rank: int, attention_only: bool) -> int:  # type: ignore[no-untyped-def]
    """r x (in + out) over the nn.Linear modules of the blocks, as PEFT's target selection sees them."""
    total = 0
    for name, module in model.model.layers.named_modules():
        if isinstance(module, torch.nn.Linear) and (not attention_only or ".self_attn." in f".{name}"):
            total += rank * (module.in_features + module.out_features)
    return total


def _lora_trainable(arch_: ModelArchitecture, rank: int, targets: str) -> float:
    scenario = Scenario(
        model=arch_.name,
        gpu="test-gpu",
        workload="finetune",
        method="lora",
        lora_rank=rank,
        lora_targets=targets,
    )
    est = Engine([MemoryStackEstimator()]).run(
        ResolvedScenario(scenario, arch_, Cluster(accelerator=GPU, node=NODE, num_gpus=1))
    )
    return est.get("memory.per_gpu.gradients") / 2  # bf16 gradients of the adapters only


@pytest.mark.parametrize("targets", ["all-linear", "attention"])
def test_lora_adapters_match_the_linear_layers_transformers_builds(targets: str) -> None:
    """LoRA adapter parameters = r x (in + out) over the nn.Linear layers PEFT would target."""
    rank = 8
    cases = []
    cfg = transformers.Qwen2MoeConfig(
        hidden_size=64,
        intermediate_size=96,
        moe_intermediate_size=32,
        shared_expert_intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=128,
        num_experts=4,
        num_experts_per_tok=2,
    )
    qwen_moe = ModelArchitecture(
        name="qwen2-moe",
        num_layers=2,
        hidden_size=64,
        num_attention_heads=4,
        num_kv_heads=2,
        head_dim=16,
        intermediate_size=96,
        vocab_size=128,
        attention_bias=True,
        moe=MoEConfig(
            num_experts=4,
            experts_per_token=2,
            expert_intermediate_size=32,
            shared_expert_intermediate_size=48,
            num_shared_experts=1,
            shared_expert_gate=True,
        ),
    )
    cases.append((transformers.Qwen2MoeForCausalLM(cfg), qwen_moe))
    cfg = transformers.MixtralConfig(
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=8,
        num_key_value_heads=2,
        vocab_size=128,
        num_local_experts=4,
        num_experts_per_tok=2,
    )
    mixtral = ModelArchitecture(
        name="mixtral",
        num_layers=2,
        hidden_size=64,
        num_attention_heads=8,
        num_kv_heads=2,
        head_dim=8,
        intermediate_size=96,
        vocab_size=128,
        moe=MoEConfig(num_experts=4, experts_per_token=2, expert_intermediate_size=96),
    )
    cases.append((transformers.MixtralForCausalLM(cfg), mixtral))
    deepseek, mla = _tiny_deepseek_v3()
    cases.append((deepseek, mla))
    cfg = transformers.LlamaConfig(num_attention_heads=8, num_key_value_heads=2, **SMALL)
    cases.append((transformers.LlamaForCausalLM(cfg), arch("llama", cfg)))
    for model, ours_arch in cases:
        expected = _lora_params_in_blocks(model, rank, attention_only=targets == "attention")
        assert _lora_trainable(ours_arch, rank, targets) == expected, ours_arch.name
