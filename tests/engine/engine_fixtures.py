"""Small, explicit inputs for engine tests (no catalog files involved)."""

from __future__ import annotations

import datetime as dt

from workbench.core import Accelerator, Cluster, ModelArchitecture, NodeShape, Scenario, Source
from workbench.core.resolved import ResolvedScenario

SOURCE = Source(title="test figure", retrieved=dt.date(2026, 11, 22))

GPU = Accelerator(
    id="test-gpu", name="Test GPU 80GB", vendor="nvidia", category="datacenter", memory_gib=80,
    memory_type="HBM3", memory_bandwidth_gbps=3350, dense_tflops={"bf16": 989.4, "fp8": 1978.9, "fp32": 66.9},
    tdp_watts=700, form_factor="SXM", launch_year=2023,
)
NODE = NodeShape(id="test-node", name="8x test", gpus_per_node=8, intra_node="NVSwitch", intra_node_gbps=450,
                 inter_node="IB NDR", inter_node_gbps=50)
LLAMA_8B = ModelArchitecture(
    name="Llama-3.1-8B", family="llama", num_layers=32, hidden_size=4096, num_attention_heads=32,
    num_kv_heads=8, head_dim=128, intermediate_size=14336, vocab_size=128256, max_position_embeddings=131072,
)


def resolved(**scenario_fields: object) -> ResolvedScenario:
    scenario = Scenario(model="llama-3.1-8b", gpu="test-gpu", **scenario_fields)
    return ResolvedScenario(scenario, LLAMA_8B, Cluster(accelerator=GPU, node=NODE, num_gpus=scenario.num_gpus))
