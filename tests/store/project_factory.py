"""Projects for store tests: hand-made ones and hypothesis strategies."""

from __future__ import annotations

import datetime as dt

from hypothesis import strategies as st

from workbench.core import Accelerator, ModelArchitecture, Project, Scenario, Source
from workbench.core.project import Comparison

SOURCE = Source(title="NVIDIA H100 Tensor Core GPU Datasheet", retrieved=dt.date(2026, 11, 22))

CUSTOM_GPU = Accelerator(
    id="my-h100-cloud", name="H100 SXM at our cloud price", vendor="nvidia", category="datacenter",
    memory_gib=80, memory_type="HBM3", memory_bandwidth_gbps=3350, dense_tflops={"bf16": 989.4, "fp8": 1978.9},
    tdp_watts=700, form_factor="SXM", launch_year=2023, cloud_usd_per_hour=2.1,
    provenance={"memory_gib": SOURCE}, custom=True,
)
TINY = ModelArchitecture(name="tiny", num_layers=2, hidden_size=64, num_attention_heads=4, num_kv_heads=2,
                         head_dim=16, intermediate_size=128, vocab_size=1000)


def sample_project(scenarios: int = 3) -> Project:
    base = Scenario(model="llama-3.1-8b", gpu="h100-sxm")
    return Project(
        name="Sizing for Q3", author="Planner", notes="Keep the H200 option open.",
        created=dt.datetime(2026, 11, 1, 9, 30, tzinfo=dt.timezone.utc),
        modified=dt.datetime(2026, 11, 2, 10, 0, tzinfo=dt.timezone.utc),
        models={"tiny": TINY}, accelerators={CUSTOM_GPU.id: CUSTOM_GPU},
        scenarios=tuple(base.model_copy(update={"name": f"scenario {i}", "batch_size": i + 1}) for i in range(scenarios)),
    )


names = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30)

scenarios = st.builds(
    Scenario,
    name=names,
    model=st.sampled_from(["llama-3.1-8b", "mixtral-8x7b", "tiny", "/data/models/x/config.json"]),
    gpu=st.sampled_from(["h100-sxm", "a100-80gb-sxm", "my-h100-cloud"]),
    workload=st.sampled_from(["inference", "finetune", "pretrain"]),
    batch_size=st.integers(1, 4096),
    seq_len=st.integers(1, 1 << 20),
    gen_len=st.integers(0, 100_000),
    dtype=st.sampled_from(["bf16", "fp16", "fp8", "fp32"]),
    num_gpus=st.just(64),
    parallel=st.builds(dict, tp=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2]),
                       zero_stage=st.integers(0, 3)),
    assumptions=st.dictionaries(st.from_regex(r"[a-z]{1,8}\.[a-z_]{1,12}", fullmatch=True),
                                st.floats(0, 10, allow_nan=False), max_size=3),
)

targets = st.one_of(st.none(), st.floats(1e-6, 1e9, allow_nan=False, allow_infinity=False))

comparisons = st.builds(
    Comparison,
    name=names,
    accelerators=st.lists(st.sampled_from(["h100-sxm", "h200-sxm", "mi300x", "my-h100-cloud"]),
                          unique=True).map(tuple),
    scenarios=st.lists(names, max_size=3).map(tuple),
    max_ttft_s=targets,
    max_tpot_s=targets,
    min_tokens_per_s=targets,
    deadline_days=targets,
    budget_usd=targets,
    budget_basis=st.sampled_from(["auto", "run", "tco", "capex"]),
)

projects = st.builds(
    Project,
    name=names,
    author=st.text(max_size=20),
    notes=st.text(max_size=200),
    created=st.datetimes(min_value=dt.datetime(2000, 1, 1), max_value=dt.datetime(2100, 1, 1),
                         timezones=st.just(dt.timezone.utc)).map(lambda d: d.replace(microsecond=0)),
    scenarios=st.lists(scenarios, max_size=6, unique_by=lambda s: s.name).map(tuple),
    models=st.dictionaries(names, st.just(TINY), max_size=2),
    accelerators=st.just({CUSTOM_GPU.id: CUSTOM_GPU}),
    comparisons=st.lists(comparisons, max_size=3, unique_by=lambda c: c.name).map(tuple),
    current_scenario=st.one_of(st.just(""), names),
)
