"""Zamba2 end to end against transformers 5 on CPU (``Zamba2ForCausalLM``, modeling_zamba2.py).

Zamba2 runs a few shared attention + MLP blocks at several layers ("hybrid" layers), each such
layer with its own LoRA-style adapters and output projection, in front of a Mamba-2 mixer that
every layer has. Checked here, through the engine's own outputs:

* parameters: the transformers model built on the meta device (shared weights once);
* the cache after a prefill: ``kv_cache.bytes`` + ``recurrent_state.bytes`` against the bytes of
  the tensors a real tiny model's cache holds (every hybrid layer caches its own K/V);
* FLOPs: forward and one training step within 1% of ``FlopCounterMode`` (each hybrid layer runs
  its shared block in full, with its adapters and the 2 x hidden attention input);
* activations saved for backward within 2% of the saved-tensors probe, eager and sdpa, with and
  without gradient checkpointing, bf16;
* the shared weights in the memory stack: held once, however many layers run them.

The configs are small synthetic ones; the harness is that of test_recurrent_engine_vs_torch.py.
"""

from __future__ import annotations

from typing import Any

import pytest
import test_recurrent_engine_vs_torch as harness
from test_recurrent_engine_vs_torch import cache_bytes, ours
from workbench_memory.kv_cache import KvCacheEstimator

from workbench.catalog.hf_config import import_hf_config
from workbench.core.model import ModelArchitecture
from workbench.core.params import count_parameters

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.validation

_IDS = {"pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0, "vocab_size": 100}
CONFIGS: dict[str, dict[str, Any]] = {
    # two blocks used in turn by four hybrid layers, with q/k/v adapters; those are as wide as the
    # attention input and add to k and v, so transformers runs them with MHA only
    "zamba2-two-blocks-adapters": _IDS | {
        "model_type": "zamba2", "hidden_size": 64, "num_hidden_layers": 6,
        "layers_block_type": ["hybrid", "mamba", "hybrid", "hybrid", "mamba", "hybrid"],
        "intermediate_size": 96, "n_mamba_heads": 8, "mamba_d_state": 16, "mamba_ngroups": 2,
        "chunk_size": 8, "num_mem_blocks": 2, "use_shared_attention_adapter": True, "adapter_rank": 8,
        "num_attention_heads": 4, "num_key_value_heads": 4,
    },
    # one block at three layers, GQA, rotary, biases on the linear layers
    "zamba2-one-block-gqa-rope": _IDS | {
        "model_type": "zamba2", "hidden_size": 64, "num_hidden_layers": 5,
        "layers_block_type": ["mamba", "hybrid", "hybrid", "mamba", "hybrid"],
        "n_mamba_heads": 4, "mamba_d_state": 8, "chunk_size": 8, "num_mem_blocks": 1, "adapter_rank": 4,
        "num_attention_heads": 4, "num_key_value_heads": 2, "use_mem_rope": True, "add_bias_linear": True,
    },
}  # fmt: skip


def architecture(name: str) -> ModelArchitecture:
    return import_hf_config(CONFIGS[name], name=name).architecture


def hf_model(name: str, device: str = "meta") -> Any:
    conf = transformers.Zamba2Config.from_dict(CONFIGS[name])
    with torch.device(device):
        return transformers.Zamba2ForCausalLM(conf)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parameters_match_transformers(name: str) -> None:
    model = hf_model(name)
    assert count_parameters(architecture(name)).total == sum(p.numel() for p in model.parameters())


@pytest.mark.parametrize(("name", "batch", "tokens"), [("zamba2-two-blocks-adapters", 2, 13),
                                                         ("zamba2-one-block-gqa-rope", 3, 21)])  # fmt: skip
def test_cache_after_prefill_matches_transformers(name: str, batch: int, tokens: int) -> None:
    """A real tiny model (fp32) prefills with ``use_cache=True``: every hybrid layer's own K/V and
    every layer's conv + SSM state equal ``kv_cache.bytes`` and ``recurrent_state.bytes`` exactly."""
    torch.manual_seed(0)
    model = hf_model(name, "cpu").eval()
    with torch.no_grad():
        out = model(torch.randint(1, 90, (batch, tokens)), use_cache=True)
    kv, state = cache_bytes(out.cache)
    est = ours(architecture(name), [KvCacheEstimator()], batch_size=batch, seq_len=tokens, gen_len=0,
               dtype="fp32", serving={"paged_kv": False})  # fmt: skip
    hybrid = CONFIGS[name]["layers_block_type"].count("hybrid")
    head_dim = 2 * CONFIGS[name]["hidden_size"] // CONFIGS[name]["num_attention_heads"]
    by_hand = hybrid * 2 * batch * tokens * CONFIGS[name]["num_key_value_heads"] * head_dim * 4
    assert kv == by_hand > 0 and state > 0
    assert est.values["kv_cache.bytes"].value == kv
    assert est.values["recurrent_state.bytes"].value == state


@pytest.mark.parametrize(("name", "batch", "tokens"), [("zamba2-two-blocks-adapters", 2, 37),
                                                         ("zamba2-one-block-gqa-rope", 1, 64)])  # fmt: skip
def test_forward_and_training_flops_match_flop_counter(
    name: str, batch: int, tokens: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every hybrid layer runs its shared block in full (2 x hidden attention input, adapters, the
    layer's projection): forward and one training step within 1% of what PyTorch executes."""
    from workbench_compute import ComputeEstimator

    est = ours(
        architecture(name), [ComputeEstimator()], batch_size=batch, seq_len=tokens, workload="pretrain"
    )
    monkeypatch.setitem(harness.CONFIGS, name, CONFIGS[name])  # the harness builds models by name
    forward, step = harness.torch_flops(name, batch, tokens)
    assert est.values["flops.forward"].value == pytest.approx(forward, rel=0.01)
    assert est.values["flops.training_step"].value == pytest.approx(step, rel=0.01)


# --- activations saved for backward -------------------------------------------------------------

ACT_CONFIG: dict[str, Any] = {
    "model_type": "zamba2", "hidden_size": 256, "num_hidden_layers": 4, "vocab_size": 1000,
    # the hybrid layer (the largest) last: backward rebuilds it under checkpointing
    "layers_block_type": ["hybrid", "mamba", "mamba", "hybrid"], "intermediate_size": 512,
    "n_mamba_heads": 8, "mamba_d_state": 32, "mamba_ngroups": 2, "chunk_size": 64, "num_mem_blocks": 2,
    "use_shared_attention_adapter": True, "adapter_rank": 16, "num_attention_heads": 8,
    "max_position_embeddings": 1024, "use_mem_rope": True,
}  # fmt: skip
ACT_CASES = [("eager", False), ("eager", True), ("sdpa", False), ("sdpa", True)]


def saved_bytes(tokens: int, attention: str, checkpointing: bool) -> tuple[int, int]:
    """(bytes held for backward after forward + loss, bytes first saved inside the last layer), bf16."""
    import warnings

    from saved_tensors_probe import saved_activation_bytes

    conf = transformers.Zamba2Config.from_dict(ACT_CONFIG | {"use_cache": False})
    conf._attn_implementation = attention
    torch.manual_seed(0)
    model = transformers.Zamba2ForCausalLM(conf).to(torch.bfloat16).train()
    ids = torch.randint(0, 1000, (2, tokens), generator=torch.Generator().manual_seed(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        saved = saved_activation_bytes(model, ids, block=model.model.layers[-1])
    return saved.bytes, saved.block_bytes


@pytest.mark.parametrize(("attention", "checkpointing"), ACT_CASES)
def test_activations_match_saved_tensors(attention: str, checkpointing: bool) -> None:
    """What one forward + loss keeps for backward within 2% (200 tokens: not whole scan chunks)."""
    from workbench_memory.activations import activation_memory

    from workbench.core import Scenario

    tokens = 200
    arch = import_hf_config(ACT_CONFIG, name="zamba2-act").architecture
    scenario = Scenario(model="zamba2-act", gpu="cpu", dtype="bf16", batch_size=2, seq_len=tokens,
                        attention=attention, recompute="full" if checkpointing else "none",
                        workload="pretrain")  # fmt: skip
    est = activation_memory(arch, scenario, micro_batch=2, seq_len=tokens, tp=1, sequence_parallel=False,
                            layers=arch.num_layers, first_stage=True, last_stage=True)  # fmt: skip
    held, _ = saved_bytes(tokens, attention, checkpointing)
    if not checkpointing:
        assert est.total == pytest.approx(held, rel=0.02)
        return
    _, block = saved_bytes(tokens, attention, False)
    assert est.kept == pytest.approx(held, rel=0.02)
    assert est.total == pytest.approx(held + block, rel=0.02)


# --- the shared weights in the memory stack -----------------------------------------------------


def _weights(arch: ModelArchitecture, key: str, **fields: Any) -> float:
    from engine_fixtures import GPU, NODE
    from workbench_memory.stack import MemoryStackEstimator

    from workbench.core import Cluster, Scenario
    from workbench.core.resolved import ResolvedScenario
    from workbench.engine.pipeline import Engine

    scenario = Scenario(model=arch.name, gpu=GPU.id, dtype="bf16", **fields)
    cluster = Cluster(accelerator=GPU, node=NODE, num_gpus=scenario.num_gpus)
    est = Engine([MemoryStackEstimator()]).run(ResolvedScenario(scenario, arch, cluster))
    assert not est.failures, est.failures
    return float(est.get(key))


def _block_by_hand(config: dict[str, Any]) -> int:
    """One shared block as Zamba2AttentionDecoderLayer builds it (no biases): q/k/v from 2h, o to h,
    gate_up (h -> 2i) and down (i -> h), a norm of 2h and one of h."""
    h, heads = config["hidden_size"], config["num_attention_heads"]
    i = config.get("intermediate_size", 4 * h)
    d = 2 * h // heads
    attention = 2 * h * (heads * d + 2 * config["num_key_value_heads"] * d) + heads * d * h
    return attention + 3 * h * i + 2 * h + h


@pytest.mark.parametrize(("pp", "copies"), [(2, 2), (3, 2)])
def test_shared_weights_held_once_and_once_per_pipeline_stage(pp: int, copies: int) -> None:
    """One GPU holds the transformers model's parameters (shared blocks once); under pipeline
    parallelism every stage holds each block it runs once (and, the embedding being tied, the last
    stage holds the head's copy of it, as Megatron-LM keeps it). Blocks 0, 1, 0, 1 run at layers
    0, 2, 3, 5: over stages 0-2 | 3-5 the second holds both again; over 0-1 | 2-3 | 4-5 the second
    holds block 0 again (block 1 is first used there) and the third block 1."""
    name = "zamba2-two-blocks-adapters"
    arch, config = architecture(name), CONFIGS[name]
    total = sum(p.numel() for p in hf_model(name).parameters())
    assert _weights(arch, "memory.per_gpu.weights") == 2 * total
    average = _weights(arch, "memory.average_gpu.weights", num_gpus=pp, parallel={"pp": pp})
    tied_head = config["vocab_size"] * config["hidden_size"]
    assert pp * average == pytest.approx(2 * (total + copies * _block_by_hand(config) + tied_head), rel=1e-12)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_lora_targets_are_the_models_linear_modules(name: str) -> None:
    """PEFT wraps ``nn.Linear`` module instances: transformers 5 builds a (tied) instance of the shared
    block at every layer that runs it, each holding the adapter slots of all layers sharing that
    block. The memory stack's and the time model's adapter sizes follow those modules exactly."""
    from workbench_memory.shapes import build_constants
    from workbench_performance.model_constants import lora_parameters

    linears = [
        (n, m) for n, m in hf_model(name).model.layers.named_modules() if isinstance(m, torch.nn.Linear)
    ]
    every = sum(m.in_features + m.out_features for _, m in linears)
    attention = sum(
        m.in_features + m.out_features
        for n, m in linears
        if n.rsplit(".", 1)[-1] in ("q_proj", "k_proj", "v_proj", "o_proj")
    )
    arch = architecture(name)
    c = build_constants(arch)
    assert (c.lora_io_all[c.layers], c.lora_n_all[c.layers]) == (every, len(linears))
    assert c.lora_io_attn[c.layers] == attention
    assert lora_parameters(arch, 8, attention_only=False) == 8 * every
    assert lora_parameters(arch, 8, attention_only=True) == 8 * attention


def _matrices_run_by_hand(name: str) -> int:
    """Weight-matrix elements one forward multiplies per token, from the transformers model: at each
    hybrid layer its shared block's q/k/v/o and MLP, the adapters of that layer's slot and its
    projection; every layer's Mamba in/out projections; the LM head."""
    model = hf_model(name)
    total = model.lm_head.weight.numel()
    position = 0
    for layer in model.model.layers:
        mamba = getattr(layer, "mamba_decoder", layer).mamba
        total += mamba.in_proj.weight.numel() + mamba.out_proj.weight.numel()
        block = getattr(layer, "shared_transformer", None)
        if block is None:
            continue
        attn, mlp = block.self_attn, block.feed_forward
        run = [
            attn.q_proj,
            attn.k_proj,
            attn.v_proj,
            attn.o_proj,
            mlp.gate_up_proj,
            mlp.down_proj,
            layer.linear,
        ]
        run.append(mlp.gate_up_proj_adapter_list[position])
        if CONFIGS[name].get("use_shared_attention_adapter"):
            run += [attn.linear_q_adapter_list[position], attn.linear_k_adapter_list[position],
                    attn.linear_v_adapter_list[position]]  # fmt: skip
        total += sum(
            p.numel() for module in run for n, p in module.named_parameters() if n.endswith("weight")
        )
        position += 1
    return total


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("tp", [1, 2, 4])
def test_decode_weights_are_read_at_every_application(name: str, tp: int) -> None:
    """The time model reads the shared weights once per layer that runs them (each application
    multiplies them again): the matrices the compute plugin's roofline multiplies, so weights plus
    the rest still make its per-step bytes; and three TP all-reduces per shared-block layer."""
    from workbench_compute.roofline import per_gpu
    from workbench_compute.shapes import model_shape
    from workbench_performance.model_constants import tp_collectives, weight_elements

    arch, config = architecture(name), CONFIGS[name]
    w = weight_elements(arch, tp, 1)
    assert w.dense == pytest.approx(sum(per_gpu(model_shape(arch), tp, 1).weights.values()), rel=1e-12)
    if tp == 1:
        assert w.dense == _matrices_run_by_hand(name)
    hybrid = config["layers_block_type"].count("hybrid")
    assert tp_collectives(arch) == 3 * hybrid + (config["num_hidden_layers"] - hybrid)
