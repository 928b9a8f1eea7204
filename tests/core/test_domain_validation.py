"""Impossible inputs are refused with a message that names the field."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from workbench.core import ModelArchitecture, MoEConfig, Project, Scenario
from workbench.core.errors import describe_validation_error

LLAMA_8B = dict(
    name="Llama-3.1-8B", num_layers=32, hidden_size=4096, num_attention_heads=32, num_kv_heads=8,
    head_dim=128, intermediate_size=14336, vocab_size=128256,
)


def _message(exc_info: pytest.ExceptionInfo[ValidationError]) -> str:
    return describe_validation_error(exc_info.value)


def test_valid_architecture_derives_attention_kind() -> None:
    arch = ModelArchitecture(**LLAMA_8B)
    assert arch.attention_kind == "gqa"
    assert arch.gqa_group == 4
    assert ModelArchitecture(**{**LLAMA_8B, "num_kv_heads": 32}).attention_kind == "mha"
    assert ModelArchitecture(**{**LLAMA_8B, "num_kv_heads": 1}).attention_kind == "mqa"


def test_heads_not_divisible_by_kv_heads_is_refused() -> None:
    with pytest.raises(ValidationError) as info:
        ModelArchitecture(**{**LLAMA_8B, "num_kv_heads": 5})
    assert "num_attention_heads (32) must be divisible by num_kv_heads (5)" in _message(info)


@pytest.mark.parametrize("field", ["num_layers", "hidden_size", "num_attention_heads", "vocab_size", "head_dim"])
@pytest.mark.parametrize("value", [0, -4])
def test_zero_or_negative_sizes_name_the_field(field: str, value: int) -> None:
    with pytest.raises(ValidationError) as info:
        ModelArchitecture(**{**LLAMA_8B, field: value})
    assert _message(info).startswith(f"{field}: ")


def test_moe_top_k_above_expert_count_is_refused() -> None:
    with pytest.raises(ValidationError) as info:
        MoEConfig(num_experts=8, experts_per_token=9, expert_intermediate_size=100)
    assert "experts_per_token (9) exceeds num_experts (8)" in _message(info)


def test_unknown_dtype_names_the_field() -> None:
    with pytest.raises(ValidationError) as info:
        Scenario(model="m", gpu="g", dtype="bf17")
    assert _message(info).startswith("dtype: ")
    with pytest.raises(ValidationError) as info:
        Scenario(model="m", gpu="g", dtype="int4")
    assert "not a compute precision" in _message(info)


def test_parallel_layout_must_fit_the_gpu_count() -> None:
    with pytest.raises(ValidationError) as info:
        Scenario(model="m", gpu="g", num_gpus=4, parallel={"tp": 8})
    assert "TP x PP x DP = 8 needs more GPUs than num_gpus (4)" in _message(info)


def test_qlora_defaults_to_nf4_and_refuses_16_bit_weights() -> None:
    assert Scenario(model="m", gpu="g", workload="finetune", method="qlora").weight_format.value == "nf4"
    with pytest.raises(ValidationError) as info:
        Scenario(model="m", gpu="g", workload="finetune", method="qlora", weights="bf16")
    assert "QLoRA stores weights in nf4 or int4" in _message(info)


def test_every_field_has_a_description() -> None:
    """Descriptions become GUI tooltips and CLI help: none may be missing."""
    from workbench.core import hardware, model, project, scenario

    missing = []
    for module in (hardware, model, project, scenario):
        for name in dir(module):
            cls = getattr(module, name)
            fields = getattr(cls, "model_fields", None)
            if not isinstance(fields, dict) or getattr(cls, "__module__", "") != module.__name__:
                continue
            missing += [f"{cls.__name__}.{f}" for f, info in fields.items() if not info.description]
    assert missing == []


def test_project_round_trips_through_json_and_refuses_duplicate_names() -> None:
    s = Scenario(model="llama-3.1-8b", gpu="h100-sxm", name="a")
    project = Project(scenarios=(s, s.model_copy(update={"name": "b"})), models={"x": ModelArchitecture(**LLAMA_8B)})
    assert Project.model_validate_json(project.model_dump_json()) == project
    with pytest.raises(ValidationError) as info:
        Project(scenarios=(s, s))
    assert "two scenarios are named 'a'" in _message(info)


def test_shared_blocks_must_sit_on_attention_layers_with_an_ffn() -> None:
    from workbench.core.model import LayerMixer, RecurrentKind, RecurrentMixer, SharedBlocks

    mixer = RecurrentMixer(kind=RecurrentKind.MAMBA2, projections=((64, 64),), heads=2, head_dim=32,
                           state_size=8, conv_state_elements=0, ssm_state_elements=0)
    base = {**LLAMA_8B, "num_layers": 3, "recurrent": mixer,
            "layer_mixers": (LayerMixer.PARALLEL, LayerMixer.RECURRENT, LayerMixer.PARALLEL),
            "ffn_free_layers": (1,)}
    ok = ModelArchitecture(**base, shared_blocks=SharedBlocks(layers=(0, 2), count=1, input_width=8192))
    assert ok.shared_blocks is not None and ok.shared_blocks.distinct == 1
    with pytest.raises(ValidationError) as info:
        ModelArchitecture(**base, shared_blocks=SharedBlocks(layers=(0, 1), count=1, input_width=8192))
    assert "layers [1] need attention and an FFN" in _message(info)
    with pytest.raises(ValidationError) as info:
        ModelArchitecture(**base, shared_blocks=SharedBlocks(layers=(0, 3), count=1, input_width=8192))
    assert "outside 0..2" in _message(info)
