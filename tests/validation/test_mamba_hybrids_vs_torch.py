"""The Mamba-2 hybrids (Nemotron-H / Nemotron-3, Bamba, Granite-4.0-H, Falcon-H1) through the engine,
against transformers 5 on CPU, as test_recurrent_engine_vs_torch.py does for Mamba-2 and Qwen3-Next
(its cache reader, FLOP-counter mapping and the saved-tensors probe are reused):

* the cache after a prefill: ``kv_cache.bytes`` and ``recurrent_state.bytes`` equal, to the byte,
  the tensors of transformers' cache: a real tiny model run on CPU for the synthetic configs, and
  the published configs of tests/data/configs run on the meta device (shapes and dtypes only);
* FLOPs: ``flops.forward`` and ``flops.training_step`` within 1% of ``FlopCounterMode`` over the
  CPU torch path (sequences that are not whole chunks, so the scans pad);
* activations: what one forward + loss keeps for backward (``saved_tensors_hooks``) within 2%, in
  bf16, with eager and SDPA attention, with and without gradient checkpointing.

The synthetic configs are small variants of the transformers config defaults with every block kind
of each family (Nemotron-H: Mamba-2, attention, MLP and MoE blocks, Nemotron-3's latent MoE;
Granite-4.0-H: MoE next to the shared MLP, or the shared MLP alone; Falcon-H1: attention and
Mamba-2 side by side, µP multipliers away from 1, the Mamba gate with and without its RMSNorm),
biases switched on where the family has them. They are not published models.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from test_recurrent_engine_vs_torch import _conv_backward, cache_bytes, ours
from workbench_memory.kv_cache import KvCacheEstimator

from workbench.catalog.hf_config import import_hf_config
from workbench.core import Scenario
from workbench.core.model import ModelArchitecture

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = pytest.mark.validation

REAL = Path(__file__).resolve().parents[1] / "data" / "configs"
_IDS = {"pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0}
_ATTN = {"num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100, **_IDS}
_MAMBA = {"mamba_n_heads": 8, "mamba_d_state": 16, "mamba_n_groups": 2, "mamba_chunk_size": 8}
_MUP = {
    "attention_in_multiplier": 0.5, "attention_out_multiplier": 0.7, "ssm_in_multiplier": 1.5,
    "ssm_out_multiplier": 0.3, "ssm_multipliers": [0.9, 1.1, 1.2, 0.8, 2.0], "mlp_multipliers": [0.6, 1.3],
    "key_multiplier": 0.4, "embedding_multiplier": 3.0, "lm_head_multiplier": 0.2,
}  # fmt: skip
CONFIGS: dict[str, dict[str, Any]] = {
    "nemotron_h": {
        "model_type": "nemotron_h", "hidden_size": 64, "hybrid_override_pattern": "M*-EM", "head_dim": 16,
        "intermediate_size": 96, "mamba_num_heads": 8, "mamba_head_dim": 16, "ssm_state_size": 16,
        "n_groups": 2, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
        "moe_shared_expert_intermediate_size": 48, "chunk_size": 8, **_ATTN,
    },
    "nemotron_h-latent-moe-biases": {
        "model_type": "nemotron_h", "hidden_size": 64, "hybrid_override_pattern": "ME*E-M", "head_dim": 16,
        "intermediate_size": 96, "mamba_num_heads": 4, "mamba_head_dim": 16, "ssm_state_size": 8,
        "n_groups": 2, "n_routed_experts": 8, "num_experts_per_tok": 3, "moe_intermediate_size": 48,
        "moe_shared_expert_intermediate_size": 40, "moe_latent_size": 16, "chunk_size": 8,
        "use_bias": True, "use_conv_bias": False, **_ATTN,
    },
    "bamba": {
        "model_type": "bamba", "hidden_size": 64, "num_hidden_layers": 3, "attn_layer_indices": [1],
        "intermediate_size": 96, **_MAMBA, **_ATTN,
    },
    "bamba-biases": {
        "model_type": "bamba", "hidden_size": 64, "num_hidden_layers": 3, "attn_layer_indices": [0, 2],
        "intermediate_size": 96, "attention_bias": True, "mlp_bias": True, "mamba_proj_bias": True,
        "mamba_conv_bias": False, "mamba_expand": 1, **_MAMBA, **_ATTN,
    },
    "granitemoehybrid-moe": {
        "model_type": "granitemoehybrid", "hidden_size": 64, "num_hidden_layers": 3,
        "layer_types": ["mamba", "attention", "mamba"], "intermediate_size": 96,
        "shared_intermediate_size": 48, "num_local_experts": 4, "num_experts_per_tok": 2,
        "position_embedding_type": "rope", **_MAMBA, **_ATTN,
    },
    "granitemoehybrid-dense-biases": {
        "model_type": "granitemoehybrid", "hidden_size": 64, "num_hidden_layers": 3,
        "layer_types": ["attention", "mamba", "mamba"], "intermediate_size": 96,
        "shared_intermediate_size": 48, "num_local_experts": 0, "attention_bias": True,
        "mamba_proj_bias": True, **_MAMBA, **_ATTN,
    },
    "falcon_h1-mup": {
        "model_type": "falcon_h1", "hidden_size": 64, "num_hidden_layers": 2, "head_dim": 16,
        "intermediate_size": 96, "mamba_n_heads": 8, "mamba_d_head": 16, "mamba_d_ssm": 128,
        "mamba_d_state": 16, "mamba_n_groups": 2, "mamba_chunk_size": 8, **_MUP, **_ATTN,
    },
    "falcon_h1-norm-biases": {
        "model_type": "falcon_h1", "hidden_size": 64, "num_hidden_layers": 2, "intermediate_size": 96,
        "mamba_n_heads": 4, "mamba_d_ssm": None, "mamba_expand": 2, "mamba_d_state": 8,
        "mamba_n_groups": 1, "mamba_chunk_size": 8, "mamba_rms_norm": True, "mamba_norm_before_gate": False,
        "projectors_bias": True, "mamba_proj_bias": True, "attention_bias": True, "mlp_bias": True, **_ATTN,
    },
}  # fmt: skip
#: Published configs of these families in tests/data/configs (Nemotron-3 Nano: MoE without latent).
REAL_CONFIGS = ["nemotron-h-56b-base-8k", "nemotron-3-nano-30b-a3b", "bamba-9b", "falcon-h1-0.5b"]


def architecture(config: dict[str, Any], name: str) -> ModelArchitecture:
    return import_hf_config(config, name=name).architecture


def hf_model(config: dict[str, Any], name: str, device: str, **implementations: str) -> Any:
    conf = transformers.CONFIG_MAPPING[config["model_type"]].from_dict(config)
    for key, value in implementations.items():
        setattr(conf, f"_{key}_implementation", value)
    cls = getattr(transformers, import_hf_config(config, name=name).reference_class)
    with torch.device(device):
        return cls(conf)


def engine_cache(arch: ModelArchitecture, batch: int, tokens: int, dtype: str) -> tuple[float, float]:
    est = ours(arch, [KvCacheEstimator()], batch_size=batch, seq_len=tokens, gen_len=0, dtype=dtype,
               serving={"paged_kv": False})  # fmt: skip
    return est.values["kv_cache.bytes"].value, est.values["recurrent_state.bytes"].value


# --- the cache after a prefill ------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_cache_after_prefill_matches_transformers(name: str) -> None:
    """A real tiny model (fp32, CPU) prefills 2 x 13 tokens with ``use_cache=True``: the attention
    layers' keys and values, and the Mamba layers' conv windows and fp32 SSM states it caches,
    equal the engine's ``kv_cache.bytes`` and ``recurrent_state.bytes`` to the byte."""
    torch.manual_seed(0)
    model = hf_model(CONFIGS[name], name, "cpu").eval()
    with torch.no_grad():
        out = model(torch.randint(1, 90, (2, 13)), use_cache=True)
    kv, state = cache_bytes(out.cache)
    assert kv > 0 and state > 0
    assert engine_cache(architecture(CONFIGS[name], name), 2, 13, "fp32") == (kv, state)


@pytest.mark.parametrize("name", REAL_CONFIGS)
def test_cache_of_published_configs_matches_transformers(name: str) -> None:
    """The published model built on the meta device in bf16 prefills 2 x 13 tokens: the shapes and
    dtypes of its cache (bf16 KV and conv windows, fp32 SSM states) give the engine's bytes exactly."""
    config = json.loads((REAL / name / "config.json").read_text())
    model = hf_model(config, name, "meta", attn="sdpa").to(torch.bfloat16).eval()
    with torch.no_grad():
        out = model(torch.ones(2, 13, dtype=torch.long, device="meta"), use_cache=True, logits_to_keep=1)
    kv, state = cache_bytes(out.cache)
    assert kv > 0 and state > 0
    assert engine_cache(architecture(config, name), 2, 13, "bf16") == (kv, state)


# --- FLOPs --------------------------------------------------------------------------------------


def torch_flops(name: str, batch: int, tokens: int) -> tuple[int, int]:
    """FlopCounterMode over the CPU torch path (eager attention, experts looped): (forward,
    forward + backward of a summed loss); torch's depthwise-convolution backward count corrected
    as in test_recurrent_engine_vs_torch.py."""
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    model = hf_model(CONFIGS[name], name, "cpu", attn="eager", experts="eager").train()
    ids = torch.randint(1, 90, (batch, tokens))
    mapping = {torch.ops.aten.convolution_backward: _conv_backward}
    with FlopCounterMode(display=False, custom_mapping=mapping) as forward:
        out = model(ids, use_cache=False)
    with FlopCounterMode(display=False, custom_mapping=mapping) as backward:
        out.logits.float().sum().backward()
    return forward.get_total_flops(), forward.get_total_flops() + backward.get_total_flops()


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_forward_and_training_flops_match_flop_counter(name: str) -> None:
    """Forward (every position through the head) and one training step within 1%: the Mamba-2 scan
    on 21 tokens padded to 3 chunks, attention, MLPs, routed experts at their width (Nemotron-3's
    latent) with the latent projections, shared experts and routers."""
    from workbench_compute import ComputeEstimator

    arch = architecture(CONFIGS[name], name)
    est = ours(arch, [ComputeEstimator()], batch_size=2, seq_len=21, workload="pretrain")
    forward, step = torch_flops(name, 2, 21)
    assert est.values["flops.forward"].value == pytest.approx(forward, rel=0.01)
    assert est.values["flops.training_step"].value == pytest.approx(step, rel=0.01)


# --- activations saved for backward -------------------------------------------------------------

_BIG = {"vocab_size": 1000, "max_position_embeddings": 1024, **_IDS, "num_attention_heads": 8,
        "num_key_value_heads": 2}  # fmt: skip
_BIG_MAMBA = {"mamba_n_heads": 8, "mamba_d_state": 32, "mamba_n_groups": 2, "mamba_chunk_size": 64}
_NEMOTRON = {
    "model_type": "nemotron_h", "hidden_size": 256, "head_dim": 32, "intermediate_size": 512,
    "mamba_num_heads": 8, "mamba_head_dim": 64, "ssm_state_size": 32, "n_groups": 2, "n_routed_experts": 4,
    "num_experts_per_tok": 2, "moe_intermediate_size": 64, "moe_shared_expert_intermediate_size": 96,
    "chunk_size": 64, **_BIG,
}  # fmt: skip
_FALCON = {
    "model_type": "falcon_h1", "hidden_size": 256, "num_hidden_layers": 2, "head_dim": 32,
    "intermediate_size": 512, "mamba_d_head": 64, "mamba_d_ssm": 512, **_BIG_MAMBA, **_BIG,
}  # fmt: skip
#: The largest kind of block last: backward rebuilds it under checkpointing.
ACT_CONFIGS: dict[str, dict[str, Any]] = {
    "nemotron_h": _NEMOTRON | {"hybrid_override_pattern": "*-EM"},
    "nemotron_h-latent-moe": _NEMOTRON | {"hybrid_override_pattern": "*EM", "moe_latent_size": 64},
    "bamba": {"model_type": "bamba", "hidden_size": 256, "num_hidden_layers": 3, "attn_layer_indices": [1],
              "intermediate_size": 512, **_BIG_MAMBA, **_BIG},
    "granitemoehybrid": {"model_type": "granitemoehybrid", "hidden_size": 256, "num_hidden_layers": 3,
                         "layer_types": ["attention", "mamba", "mamba"], "intermediate_size": 128,
                         "shared_intermediate_size": 384, "num_local_experts": 4, "num_experts_per_tok": 2,
                         "position_embedding_type": "rope", **_BIG_MAMBA, **_BIG},
    "falcon_h1-mup": _FALCON | _MUP,
    "falcon_h1-norm-biases": _FALCON | {"mamba_rms_norm": True, "mamba_norm_before_gate": False,
                                        "attention_bias": True, "mlp_bias": True, "projectors_bias": True},
}  # fmt: skip
_MODES = [("sdpa", False), ("eager", False), ("sdpa", True), ("eager", True)]
#: (family, attention kernel, gradient checkpointing): bf16, 2 x 200 tokens (the scans pad to 256).
#: The variants (latent MoE, Mamba gate with its norm) in two of the modes, to keep the suite short.
_VARIANT_MODES = [("sdpa", False), ("eager", True)]
ACT_CASES = [
    (family, *mode)
    for family in ACT_CONFIGS
    for mode in (_VARIANT_MODES if family.endswith(("latent-moe", "norm-biases")) else _MODES)
]
TOKENS = 200


def saved_bytes(family: str, attention: str, checkpointing: bool) -> tuple[int, int]:
    """(bytes held for backward after forward + loss, bytes first saved inside the last block)."""
    from saved_tensors_probe import saved_activation_bytes

    config = ACT_CONFIGS[family] | {"use_cache": False}
    conf = transformers.CONFIG_MAPPING[config["model_type"]].from_dict(config)
    conf._attn_implementation = attention
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(conf).to(torch.bfloat16).train()
    ids = torch.randint(0, 1000, (2, TOKENS), generator=torch.Generator().manual_seed(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # transformers 5 renames gradient_checkpointing_enable
        if checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        saved = saved_activation_bytes(model, ids, block=model.base_model.layers[-1])
    return saved.bytes, saved.block_bytes


@pytest.mark.parametrize(("family", "attention", "checkpointing"), ACT_CASES)
def test_activations_match_saved_tensors(family: str, attention: str, checkpointing: bool) -> None:
    """What one forward + loss keeps for backward (unique storages, weights left out) within 2%:
    everything without checkpointing; with it, what is held from forward to backward (``kept``),
    and ``total`` against that plus the last block measured without it (the block backward
    rebuilds)."""
    from workbench_memory.activations import activation_memory

    arch = architecture(ACT_CONFIGS[family], family)
    scenario = Scenario(model=family, gpu="cpu", dtype="bf16", batch_size=2, seq_len=TOKENS,
                        attention=attention, recompute="full" if checkpointing else "none",
                        workload="pretrain")  # fmt: skip
    est = activation_memory(arch, scenario, micro_batch=2, seq_len=TOKENS, tp=1, sequence_parallel=False,
                            layers=arch.num_layers, first_stage=True, last_stage=True)  # fmt: skip
    held, _ = saved_bytes(family, attention, checkpointing)
    if not checkpointing:
        assert est.total == pytest.approx(held, rel=0.02)
        return
    _, block = saved_bytes(family, attention, False)
    assert est.kept == pytest.approx(held, rel=0.02)
    assert est.total == pytest.approx(held + block, rel=0.02)


# --- the weights the time model streams ---------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matrix_weights_match_transformers(name: str) -> None:
    """The performance plugin's matrix weights (what a token multiplies, read from memory each
    decode step) equal every weight matrix of the transformers model but the embedding and the
    depthwise convolutions: routed experts at their (latent) width, the latent projections, routers,
    shared experts and MLPs, mixers and attention; the compute plugin's roofline agrees at TP 1 and 4."""
    from workbench_compute.roofline import per_gpu
    from workbench_compute.shapes import model_shape
    from workbench_performance.model_constants import weight_elements

    arch = architecture(CONFIGS[name], name)
    model = hf_model(CONFIGS[name], name, "meta")
    embedding = model.get_input_embeddings().weight
    matrices = sum(p.numel() for n, p in model.named_parameters()
                   if p.ndim >= 2 and p is not embedding and "conv1d" not in n)  # fmt: skip
    w = weight_elements(arch, 1, 1)
    assert w.dense + w.experts == matrices
    for tp in (1, 4):
        w, gpu = weight_elements(arch, tp, 1), per_gpu(model_shape(arch), tp, 1)
        assert w.dense == pytest.approx(sum(gpu.weights.values()), rel=1e-12)
        assert w.experts == pytest.approx(sum(gpu.expert_weights.values()), rel=1e-12)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_all_linear_lora_targets_match_transformers(name: str) -> None:
    """The memory plugin's all-linear LoRA targets (adapters of ``r x (in + out)``) are the
    ``nn.Linear`` modules of the blocks: Nemotron-3's latent projections are two of them, its routed
    experts (3-D parameters) none; Granite-4.0-H's shared MLP is one fused gate|up ``input_linear``
    and an ``output_linear``."""
    from workbench_memory.shapes import model_constants

    model = hf_model(CONFIGS[name], name, "meta")
    linear = [m for m in model.base_model.layers.modules() if isinstance(m, torch.nn.Linear)]
    m = model_constants(architecture(CONFIGS[name], name))
    assert m.lora_n_all[m.layers] == len(linear)
    assert m.lora_io_all[m.layers] == sum(x.in_features + x.out_features for x in linear)
