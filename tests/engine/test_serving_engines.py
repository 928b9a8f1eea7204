"""The serving engine as a scenario input: documented defaults, explicit knobs, memory rules.

Sources of the expected values (read 2026-11-25; resources/engines/serving.yaml carries them):
- vLLM: vllm-project/vllm@c1d86421:vllm/config/cache.py (gpu_memory_utilization 0.9),
  @1c0d9ecf:vllm/platforms/cuda.py (block_size 16 on CUDA), @99d7eb5d:vllm/engine/arg_utils.py
  (_set_default_args: chunked prefill on; OPENAI_API_SERVER max_num_batched_tokens 8192 and
  max_num_seqs 1024 at >= 70 GiB unless an A100, else 2048 and 256).
- SGLang: python/sglang/srt/server_args.py, ServerArgs._handle_gpu_memory_settings
  (chunked_prefill_size and cuda_graph_max_bs by memory band; mem_fraction_static =
  round((MiB - reserved) / MiB, 3), reserved = 512 + 1.5 x chunk + 2 x graph batch + 128 x TP x PP,
  at least 10240 MiB above 60 GiB).
- TensorRT-LLM: NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py (KvCacheConfig
  free_gpu_memory_fraction 0.9 of the free memory, tokens_per_block 32; enable_chunked_prefill
  False; max_num_tokens 8192; max_batch_size 2048).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from workbench.catalog.accelerators import get_accelerator
from workbench.catalog.resolve import resolve_scenario as resolve_catalog
from workbench.cli.main import build_parser
from workbench.cli.scenario_flags import scenario_from_args
from workbench.core.project import Project
from workbench.core.scenario import SCENARIO_PAYLOAD_NEWEST, Batching, Scenario, ServingEngine, ServingOptions
from workbench.core.units import GiB
from workbench.engine import serving_engines
from workbench.pluginhost import default_engine
from workbench.store.project_file import open_project, save_project


def _values(engine: str, gpu: str, tp: int = 1) -> dict[str, object]:
    defaults = serving_engines.engine_defaults(ServingEngine(engine), get_accelerator(gpu), tp)
    return {k: d.value for k, d in defaults.items()}


def test_vllm_defaults_follow_device_memory_and_the_a100_exception() -> None:
    # arg_utils.py _set_default_args, OPENAI_API_SERVER context
    assert _values("vllm", "h100-sxm") == {
        "gpu_memory_utilization": 0.9, "kv_block_size": 16, "batching": Batching.CHUNKED,
        "prefill_chunk_tokens": 8192, "max_running_sequences": 1024,
    }
    a100 = _values("vllm", "a100-80gb-sxm")  # 80 GiB, but "a100" in the name: the small defaults
    assert (a100["prefill_chunk_tokens"], a100["max_running_sequences"]) == (2048, 256)
    l4 = _values("vllm", "l4")  # 24 GiB
    assert (l4["prefill_chunk_tokens"], l4["max_running_sequences"]) == (2048, 256)


@pytest.mark.parametrize(
    ("gpu", "tp", "chunk", "graph_batch"),
    [("h100-sxm", 1, 8192, 256), ("h100-sxm", 8, 8192, 512), ("l4", 1, 2048, 24), ("h200-sxm", 1, 8192, 256)],
)
def test_sglang_memory_fraction_is_its_rule_by_hand(gpu: str, tp: int, chunk: int, graph_batch: int) -> None:
    accelerator = get_accelerator(gpu)
    mib = accelerator.memory_gib * 1024
    reserved = 512 + 1.5 * max(chunk, 2048) + 2 * graph_batch + tp * 1 / 8 * 1024
    if accelerator.memory_gib > 60:
        reserved = max(reserved, 10 * 1024)
    values = _values("sglang", gpu, tp)
    assert values["gpu_memory_utilization"] == round((mib - reserved) / mib, 3)
    assert values["prefill_chunk_tokens"] == chunk
    assert values["batching"] is Batching.CHUNKED
    # page_size and max_running_requests are not in the data: the generic values stay
    assert values["kv_block_size"] is None and values["max_running_sequences"] is None


def test_sglang_on_an_h100_claims_0_836() -> None:
    # 81920 MiB - (512 + 12288 + 512 + 128) MiB reserved = 0.836 of the device
    assert _values("sglang", "h100-sxm")["gpu_memory_utilization"] == 0.836


def test_tensorrt_llm_defaults() -> None:
    assert _values("tensorrt-llm", "h100-sxm") == {
        "gpu_memory_utilization": 0.9, "kv_block_size": 32, "batching": Batching.CONTINUOUS,
        "prefill_chunk_tokens": 8192, "max_running_sequences": 2048,
    }
    assert serving_engines.memory_rule(ServingEngine.TENSORRT_LLM) == "free"
    assert serving_engines.memory_rule(ServingEngine.VLLM) == "total"


def test_every_default_names_its_source() -> None:
    for engine in ServingEngine:
        for name, default in serving_engines.engine_defaults(engine, get_accelerator("h100-sxm")).items():
            assert default.source.strip(), (engine, name)
            if engine is not ServingEngine.GENERIC and default.value is not None:
                assert "/" in default.source and ".py" in default.source, (engine, name, default.source)


def _cli_scenario(*flags: str) -> Scenario:
    args = build_parser().parse_args(["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", *flags])
    return scenario_from_args(args)


def test_explicit_flags_win_over_the_engine_defaults() -> None:
    scenario = _cli_scenario("--engine", "vllm", "--gpu-mem-util", "0.8", "--batching", "static",
                             "--kv-block-size", "32")
    serving = serving_engines.resolve_scenario(scenario, get_accelerator("h100-sxm")).serving
    assert (serving.gpu_memory_utilization, serving.batching, serving.kv_block_size) == (0.8, Batching.STATIC, 32)
    # the knobs not given take vLLM's defaults
    assert (serving.prefill_chunk_tokens, serving.max_running_sequences) == (8192, 1024)


def test_a_bad_engine_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["estimate", "--model", "llama-3.1-8b", "--engine", "tgi"])
    assert exc.value.code == 2
    assert "invalid choice: 'tgi'" in capsys.readouterr().err


def test_generic_leaves_the_scenario_and_its_payload_as_they_were() -> None:
    scenario = Scenario(model="llama-3.1-8b", gpu="h100-sxm")
    assert serving_engines.resolve_scenario(scenario, get_accelerator("h100-sxm")) is scenario
    dumped = scenario.serving.model_dump(mode="json")
    assert "engine" not in dumped and "max_running_sequences" not in dumped
    assert dumped["gpu_memory_utilization"] == 0.9 and dumped["kv_block_size"] == 16


def test_resolution_keeps_the_filled_knobs_unset_and_follows_the_gpu() -> None:
    scenario = Scenario(model="llama-3.1-8b", gpu="h100-sxm", serving={"engine": "vllm"})
    on_h100 = serving_engines.resolve_scenario(scenario, get_accelerator("h100-sxm"))
    assert on_h100.serving.prefill_chunk_tokens == 8192
    assert "prefill_chunk_tokens" not in on_h100.serving.model_fields_set
    again = serving_engines.resolve_scenario(on_h100, get_accelerator("a100-80gb-sxm"))
    assert again.serving.prefill_chunk_tokens == 2048


def test_kv_capacity_under_tensorrt_llms_free_memory_rule_by_hand() -> None:
    # Llama 3.1 8B (32 layers, 8 KV heads of 128, bf16 KV): 2 x 32 x 8 x 128 x 2 B = 128 KiB per token;
    # a 2048 + 512 token sequence (a multiple of TensorRT-LLM's 32-token blocks) holds 320 MiB.
    scenario = Scenario(model="llama-3.1-8b", gpu="h100-sxm", batch_size=64, seq_len=2048, gen_len=512,
                        serving={"engine": "tensorrt-llm"})
    est = default_engine().run(resolve_catalog(scenario))
    capacity = 80 * GiB
    kv = est.get("memory.per_gpu.kv_cache")
    per_sequence = 2560 * 131072
    assert kv == 64 * per_sequence
    others = est.get("memory.per_gpu.total") - kv  # weights + workspace + overhead
    # free_gpu_memory_fraction 0.9 of what the rest leaves free
    assert est.get("memory.usable_capacity") == pytest.approx(others + 0.9 * (capacity - others), rel=1e-12)
    assert est.get("kv_cache.max_concurrency") == math.floor(0.9 * (capacity - others) / per_sequence)
    assert est.get("memory.fits") is True
    # under vLLM's rule the same server keeps less: 0.9 of the whole GPU, less the rest
    vllm = default_engine().run(resolve_catalog(scenario.model_copy(
        update={"serving": scenario.serving.model_copy(update={"engine": ServingEngine.VLLM})})))
    assert vllm.get("memory.usable_capacity") == pytest.approx(0.9 * capacity)
    assert vllm.get("kv_cache.max_concurrency") < est.get("kv_cache.max_concurrency")


def test_explain_names_the_engine_and_each_defaults_source() -> None:
    from workbench.explain import render

    scenario = Scenario(model="llama-3.1-8b", gpu="h100-sxm", serving={"engine": "tensorrt-llm", "kv_block_size": 64})
    text = render(default_engine().run(resolve_catalog(scenario)), explain=True)
    assert "Serving engine: TensorRT-LLM" in text
    assert "set explicitly" in text
    assert "free_gpu_memory_fraction" in text and "NVIDIA/TensorRT-LLM@fcd3f316" in text


def test_a_project_saved_without_the_field_opens_and_an_engines_unset_knobs_survive(tmp_path: Path) -> None:
    old = Scenario.model_validate_json(
        '{"model": "llama-3.1-8b", "gpu": "h100-sxm", "serving": {"gpu_memory_utilization": 0.9, '
        '"paged_kv": true, "kv_block_size": 16, "batching": "continuous", "prefill_chunk_tokens": 2048}}'
    )
    assert old.serving.engine is ServingEngine.GENERIC
    engine = Scenario(name="trt", model="llama-3.1-8b", gpu="h100-sxm",
                      serving={"engine": "tensorrt-llm", "gpu_memory_utilization": 0.85})
    path = tmp_path / "p.gpuwb"
    save_project(Project(scenarios=(old, engine)), path)
    back = open_project(path).scenarios
    assert back[0] == old and back[0].serving.model_dump() == old.serving.model_dump()
    assert back[1].serving.engine is ServingEngine.TENSORRT_LLM
    assert back[1].serving.model_fields_set & {"gpu_memory_utilization", "kv_block_size"} == {"gpu_memory_utilization"}


def test_a_scenario_with_an_engine_is_recorded_as_payload_version_2(tmp_path: Path) -> None:
    import sqlite3

    from workbench.core.errors import InputError

    path = tmp_path / "p.gpuwb"
    generic = Scenario(name="a", model="llama-3.1-8b", gpu="h100-sxm")
    vllm = Scenario(name="b", model="llama-3.1-8b", gpu="h100-sxm", serving={"engine": "vllm"})
    save_project(Project(scenarios=(generic, vllm)), path)
    with sqlite3.connect(path) as conn:
        versions = dict(conn.execute("select name, schema_version from scenarios"))
    assert versions == {"a": 1, "b": 2}  # a reader of version 1 refuses b as newer, not as damaged
    newer = SCENARIO_PAYLOAD_NEWEST + 1
    with sqlite3.connect(path) as conn:
        conn.execute(f"update scenarios set schema_version = {newer} where name = 'b'")
    conn.close()
    with pytest.raises(InputError, match=f"payload version {newer}, newer than this workbench reads"):
        open_project(path)


def test_the_simulator_runs_at_most_the_engines_running_sequences() -> None:
    # vLLM on an A100 runs at most 256 sequences (max_num_seqs); 300 users: 44 wait for a slot
    scenario = Scenario(model="llama-3.1-8b", gpu="a100-80gb-sxm", batch_size=300, seq_len=512, gen_len=64,
                        serving={"engine": "vllm", "requests": 400, "slo_ttft_s": 10.0})
    est = default_engine().run(resolve_catalog(scenario))
    formula = est.values["performance.sim.ttft_p50_s"].formula
    assert "vLLM" in formula and "chunked batching, at most 256 sequences, 2,048-token budget" in formula
    generic = default_engine().run(resolve_catalog(scenario.model_copy(update={"serving": ServingOptions(requests=400, slo_ttft_s=10.0)})))
    assert "at most 300 sequences" in generic.values["performance.sim.ttft_p50_s"].formula
