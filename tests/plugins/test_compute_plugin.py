"""The compute plugin as the app loads it: registration, dependencies, JSON contract, explanations, speed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import workbench_compute
from engine_fixtures import GPU, LLAMA_8B, NODE, resolved
from workbench_compute import ComputeEstimator
from workbench_compute.estimator import PRODUCES

from workbench.core import Cluster, MLAConfig, ModelArchitecture, MoEConfig, Scenario
from workbench.core.resolved import ResolvedScenario
from workbench.engine.pipeline import Engine
from workbench.pluginhost.host import LOADED, PluginHost

ENGINE = Engine([ComputeEstimator()])
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


def test_plugin_host_loads_and_registers_the_estimator() -> None:
    host = PluginHost(first_party=("workbench_compute",), entry_point_group=None)
    status = host.statuses["workbench_compute"]
    assert status.status == LOADED, status.error
    assert status.version == workbench_compute.__version__ == ComputeEstimator.info.version
    assert status.registered == {"estimators": 1}
    est = Engine(host.registry.estimators).run(resolved())
    assert not est.failures and est.get("flops.forward") > 0


def test_plugin_imports_only_pluggy_and_the_public_core_and_engine() -> None:
    # numpy: the engine's array protocol hands point groups over as numpy arrays
    allowed = (
        "__future__",
        "collections",
        "dataclasses",
        "typing",
        "numpy",
        "pluggy",
        "workbench.core",
        "workbench.engine",
        "workbench_compute",
    )
    package = Path(workbench_compute.__file__).parent
    for source in package.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name == "workbench_compute" or name.startswith(allowed), (
                    f"{source.name} imports {name}"
                )


@pytest.mark.parametrize("arch", [LLAMA_8B, DEEPSEEK])
@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"workload": "pretrain", "recompute": "full"},
        {"workload": "finetune", "method": "qlora"},
        {"dtype": "fp8", "num_gpus": 8, "parallel": {"tp": 8, "ep": 8, "dp": 1}},
    ],
)
def test_every_key_is_produced_explained_and_in_the_json(
    arch: ModelArchitecture, fields: dict[str, object]
) -> None:
    scenario = Scenario(model=arch.name, gpu=GPU.id, **fields)
    est = ENGINE.run(
        ResolvedScenario(scenario, arch, Cluster(accelerator=GPU, node=NODE, num_gpus=scenario.num_gpus))
    )
    assert not est.failures
    assert set(est.values) == set(PRODUCES)
    doc = est.to_json()
    assert doc["roofline"]["decode"]["bound"] in ("compute", "memory")
    for key, quantity in est.values.items():
        formula = doc["explain"][key]["formula"]
        assert formula and quantity.label, key  # rendered lazily: every formula must render
        if quantity.value is not None and quantity.unit in ("FLOP", "B"):
            assert any(ch.isdigit() for ch in formula), key
    assert {a["id"] for a in doc["assumptions"]} >= {"compute.causal_attention_discount"}

