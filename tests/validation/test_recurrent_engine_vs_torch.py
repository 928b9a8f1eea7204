"""Recurrent and hybrid families (Mamba-2, Qwen3-Next) against transformers 5 on CPU.

* parameters: the transformers model built on the meta device from the config;
* the cache after a prefill: a real tiny model run with ``use_cache=True``, the bytes of every
  tensor its cache holds (KV of attention layers, conv and recurrent state of the others);
* FLOPs: ``torch.utils.flop_counter.FlopCounterMode`` over the CPU torch path of the same model.

The configs are small synthetic ones (Mamba-2 has no published config in tests/data; the real
Qwen3-Next-80B config is checked for its count in test_param_counts_vs_transformers.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from engine_fixtures import GPU, NODE
from workbench_memory.kv_cache import KvCacheEstimator

from workbench.catalog.hf_config import import_hf_config
from workbench.core import Cluster, Scenario
from workbench.core.model import ModelArchitecture
from workbench.core.params import count_parameters, expert_parameters
from workbench.core.resolved import ResolvedScenario
from workbench.engine.estimate import Estimate
from workbench.engine.pipeline import Engine

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from torch.utils.flop_counter import conv_backward_flop, conv_flop_count

pytestmark = pytest.mark.validation

_IDS = {"pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0}
QWEN_NEXT = _IDS | {
    "model_type": "qwen3_next", "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 100,
    "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8,
    "linear_value_head_dim": 12, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 48,
}  # fmt: skip
MAMBA2 = _IDS | {
    "model_type": "mamba2", "hidden_size": 64, "num_heads": 8, "head_dim": 16, "n_groups": 2,
    "state_size": 16, "num_hidden_layers": 3, "vocab_size": 100, "expand": 2, "chunk_size": 8,
}  # fmt: skip
CONFIGS: dict[str, dict[str, Any]] = {
    "mamba2": MAMBA2,
    "mamba2-biases-tied": MAMBA2 | {"use_bias": True, "use_conv_bias": False, "tie_word_embeddings": True,
                                    "n_groups": 1, "conv_kernel": 3},
    "qwen3-next": QWEN_NEXT,
    "qwen3-next-dense-layer-biases": QWEN_NEXT | {"mlp_only_layers": [1], "attention_bias": True,
                                                  "full_attention_interval": 2},
    "qwen3-next-layer-types": QWEN_NEXT | {"layer_types": ["full_attention", "linear_attention",
                                                           "linear_attention", "full_attention"],
                                           "decoder_sparse_step": 2},
}  # fmt: skip


def architecture(name: str) -> ModelArchitecture:
    return import_hf_config(CONFIGS[name], name=name).architecture


def hf_model(name: str, device: str = "meta") -> Any:
    config = CONFIGS[name]
    conf = transformers.CONFIG_MAPPING[config["model_type"]].from_dict(config)
    cls = getattr(transformers, import_hf_config(config, name=name).reference_class)
    with torch.device(device):
        return cls(conf)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parameters_match_transformers(name: str) -> None:
    model = hf_model(name)
    assert count_parameters(architecture(name)).total == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize("name", ["qwen3-next", "qwen3-next-dense-layer-biases", "qwen3-next-layer-types"])
def test_qwen3_next_active_parameters_by_hand(name: str) -> None:
    """Active = total minus the routed experts a token skips: (experts - top-k) x 3 x hidden x
    moe_intermediate in every MoE block (Qwen3NextSparseMoeBlock)."""
    config = CONFIGS[name]
    arch = architecture(name)
    n = config["num_hidden_layers"]
    step = config.get("decoder_sparse_step", 1)
    moe_layers = [i for i in range(n) if i not in config.get("mlp_only_layers", []) and (i + 1) % step == 0]
    one_expert = 3 * config["hidden_size"] * config["moe_intermediate_size"]
    assert expert_parameters(arch) == one_expert
    skipped = len(moe_layers) * (config["num_experts"] - config["num_experts_per_tok"]) * one_expert
    count = count_parameters(arch)
    assert count.active == count.total - skipped


# --- the cache after a prefill ------------------------------------------------------------------


def ours(arch: ModelArchitecture, estimators: list[Any], **fields: Any) -> Estimate:
    scenario = Scenario(model=arch.name, gpu=GPU.id, **fields)
    cluster = Cluster(accelerator=GPU, node=NODE, num_gpus=scenario.num_gpus)
    est = Engine(estimators).run(ResolvedScenario(scenario, arch, cluster))
    assert not est.failures, est.failures
    return est


def cache_bytes(cache: Any) -> tuple[int, int]:
    """(KV bytes, recurrent-state bytes) of every tensor a transformers cache holds."""
    kv = state = 0
    for layer in cache.layers:
        for name in ("keys", "values"):
            t = getattr(layer, name, None)
            if isinstance(t, torch.Tensor) and t.numel():
                kv += t.numel() * t.element_size()
        for name in ("conv_states", "recurrent_states"):
            for t in (getattr(layer, name, None) or {}).values():
                if isinstance(t, torch.Tensor):
                    state += t.numel() * t.element_size()
    return kv, state


@pytest.mark.parametrize(
    ("name", "batch", "tokens"),
    [
        ("mamba2", 2, 13),
        ("mamba2-biases-tied", 3, 2),
        ("qwen3-next", 2, 13),
        ("qwen3-next-layer-types", 1, 70),
    ],
)
def test_cache_after_prefill_matches_transformers(name: str, batch: int, tokens: int) -> None:
    """A real tiny model (fp32, CPU torch path) prefills ``tokens`` tokens with ``use_cache=True``;
    its cache's KV tensors (attention layers) and conv + recurrent states (the others) must equal
    ``kv_cache.bytes`` and ``recurrent_state.bytes`` to the byte (contiguous KV, nothing generated)."""
    torch.manual_seed(0)
    model = hf_model(name, "cpu").eval()
    with torch.no_grad():
        out = model(torch.randint(1, 90, (batch, tokens)), use_cache=True)
    kv, state = cache_bytes(out.cache)
    est = ours(
        architecture(name),
        [KvCacheEstimator()],
        batch_size=batch,
        seq_len=tokens,
        gen_len=0,
        dtype="fp32",
        serving={"paged_kv": False},
    )
    assert state > 0
    assert est.values["kv_cache.bytes"].value == kv
    assert est.values["recurrent_state.bytes"].value == state
    assert est.values["recurrent_state.bytes_per_sequence"].value * batch == state


# --- FLOPs --------------------------------------------------------------------------------------


def _conv_backward(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed,
                   _output_padding, groups, output_mask, out_shape, **kwargs):  # fmt: skip
    """torch's ``conv_backward_flop`` (torch/utils/flop_counter.py), made aware of ``groups``.

    torch 2.13 computes a convolution's weight gradient as the convolution of the input with the
    output gradient with the channels as batch, ignoring ``groups``: for the depthwise convolutions
    of Mamba-2 and Gated DeltaNet (groups = channels) it counts the weight gradient ``channels``
    times over. Each output element's weight gradient is one multiply-accumulate per weight it
    used, exactly the forward's count, which is what this returns (the input gradient is left to
    torch's formula, which is right for any ``groups`` since the weight shape carries them).
    """
    if groups == 1:
        return conv_backward_flop(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding, _dilation,
                                  transposed, _output_padding, groups, output_mask, out_shape)  # fmt: skip
    flops = 0
    if output_mask[0]:
        flops += conv_flop_count(grad_out_shape, w_shape, out_shape[0], not transposed)
    if output_mask[1]:
        flops += conv_flop_count(x_shape, w_shape, grad_out_shape, transposed)
    return flops


def torch_flops(name: str, batch: int, tokens: int) -> tuple[int, int]:
    """FlopCounterMode over the CPU torch path (eager attention, experts looped as transformers' eager
    experts implementation runs them): (forward, forward + backward of a summed loss)."""
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    config = CONFIGS[name]
    conf = transformers.CONFIG_MAPPING[config["model_type"]].from_dict(config)
    conf._attn_implementation = "eager"
    conf._experts_implementation = "eager"
    cls = getattr(transformers, import_hf_config(config, name=name).reference_class)
    model = cls(conf).train()
    ids = torch.randint(1, 90, (batch, tokens))
    mapping = {torch.ops.aten.convolution_backward: _conv_backward}
    with FlopCounterMode(display=False, custom_mapping=mapping) as forward:
        out = model(ids, use_cache=False)
    with FlopCounterMode(display=False, custom_mapping=mapping) as backward:
        out.logits.float().sum().backward()
    return forward.get_total_flops(), forward.get_total_flops() + backward.get_total_flops()


FLOP_CASES = [("mamba2", 2, 37), ("mamba2-biases-tied", 1, 16), ("qwen3-next", 2, 20), ("qwen3-next", 1, 70),
              ("qwen3-next-dense-layer-biases", 2, 64)]  # fmt: skip


@pytest.mark.parametrize(("name", "batch", "tokens"), FLOP_CASES)
def test_forward_and_training_flops_match_flop_counter(name: str, batch: int, tokens: int) -> None:
    """Forward (every position through the head) and one training step within 1% of what PyTorch
    executes; sequences that are not whole chunks included (the scans pad to whole chunks)."""
    from workbench_compute import ComputeEstimator

    est = ours(
        architecture(name), [ComputeEstimator()], batch_size=batch, seq_len=tokens, workload="pretrain"
    )
    forward, step = torch_flops(name, batch, tokens)
    assert est.values["flops.forward"].value == pytest.approx(forward, rel=0.01)
    assert est.values["flops.training_step"].value == pytest.approx(step, rel=0.01)


# --- activations saved for backward -------------------------------------------------------------

ACT_CONFIGS: dict[str, dict[str, Any]] = {
    "mamba2": {"model_type": "mamba2", "hidden_size": 256, "num_heads": 8, "head_dim": 64, "n_groups": 2,
               "state_size": 32, "num_hidden_layers": 2, "vocab_size": 1000, "expand": 2, "chunk_size": 64},
    "qwen3-next": {"model_type": "qwen3_next", "hidden_size": 256, "intermediate_size": 512,
                   "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 32,
                   "vocab_size": 1000, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
                   "linear_key_head_dim": 32, "linear_value_head_dim": 48, "num_experts": 4,
                   "num_experts_per_tok": 2, "moe_intermediate_size": 64, "shared_expert_intermediate_size": 96,
                   "max_position_embeddings": 1024,
                   # the largest kind of block last: backward rebuilds it under checkpointing
                   "layer_types": ["linear_attention", "full_attention", "linear_attention", "linear_attention"]},
}  # fmt: skip
#: (family, dtype, tokens, attention kernel, gradient checkpointing). 200 tokens are not whole chunks
#: (the scans pad to 256); Mamba-2 has no attention, so only transformers' "eager" setting applies.
ACT_CASES = [
    ("mamba2", "float32", 256, "eager", False),
    ("mamba2", "float32", 256, "eager", True),
    ("mamba2", "bfloat16", 200, "eager", False),
    ("mamba2", "bfloat16", 200, "eager", True),
    ("qwen3-next", "bfloat16", 200, "sdpa", False),
    ("qwen3-next", "bfloat16", 200, "eager", False),
    ("qwen3-next", "bfloat16", 200, "sdpa", True),
    ("qwen3-next", "bfloat16", 200, "eager", True),
]


def saved_bytes(family: str, dtype: str, tokens: int, attention: str, checkpointing: bool) -> tuple[int, int]:
    """(bytes held for backward after forward + loss, bytes first saved inside the last block)."""
    import warnings

    from saved_tensors_probe import saved_activation_bytes

    config = ACT_CONFIGS[family] | {"use_cache": False}
    conf = transformers.CONFIG_MAPPING[config["model_type"]].from_dict(config)
    conf._attn_implementation = attention
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(conf).to(getattr(torch, dtype)).train()
    ids = torch.randint(0, 1000, (2, tokens), generator=torch.Generator().manual_seed(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # transformers 5 renames gradient_checkpointing_enable
        if checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        saved = saved_activation_bytes(model, ids, block=model.base_model.layers[-1])
    return saved.bytes, saved.block_bytes


@pytest.mark.parametrize(("family", "dtype", "tokens", "attention", "checkpointing"), ACT_CASES)
def test_activations_match_saved_tensors(
    family: str, dtype: str, tokens: int, attention: str, checkpointing: bool
) -> None:
    """What one forward + loss keeps for backward (``saved_tensors_hooks``, unique storages, weights
    left out) within 2%: everything without checkpointing; with it, what is held from forward to
    backward (``kept``), and ``total`` against that plus the last block measured without it (the
    block backward rebuilds: the largest kind, which the configs put last)."""
    from workbench_memory.activations import activation_memory

    arch = import_hf_config(ACT_CONFIGS[family], name=family).architecture
    scenario = Scenario(model=family, gpu="cpu", dtype="fp32" if dtype == "float32" else "bf16",
                        batch_size=2, seq_len=tokens, attention=attention,
                        recompute="full" if checkpointing else "none", workload="pretrain")  # fmt: skip
    est = activation_memory(arch, scenario, micro_batch=2, seq_len=tokens, tp=1, sequence_parallel=False,
                            layers=arch.num_layers, first_stage=True, last_stage=True)  # fmt: skip
    held, _ = saved_bytes(family, dtype, tokens, attention, checkpointing)
    if not checkpointing:
        assert est.total == pytest.approx(held, rel=0.02)
        return
    _, block = saved_bytes(family, dtype, tokens, attention, False)
    assert est.kept == pytest.approx(held, rel=0.02)
    assert est.total == pytest.approx(held + block, rel=0.02)
