"""Exported launch configurations against the engines' documented argument lists.

tests/data/engine_args holds, per engine, the arguments (or config keys) that engine version
documents, read from the source named in each file (repository@commit:path). Every flag or key
an exporter writes must be in that list, and each export parses back, with an argparse parser
built from the list (command lines) or with json/yaml/tomllib (files), to the scenario's values.
"""

from __future__ import annotations

import argparse
import json
import shlex
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from workbench.catalog.resolve import resolve_scenario
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Batching, Scenario, ServingEngine
from workbench.engine import serving_engines
from workbench_export import ALL
from workbench_export.plan import DRAFT_MODEL

DATA = Path(__file__).resolve().parents[1] / "data" / "engine_args"
EXPORTERS = {e.info.id: e for e in ALL}


@cache
def documented(name: str) -> dict[str, Any]:
    return yaml.safe_load((DATA / f"{name}.yaml").read_text())


class _Refused(AssertionError):
    pass


class _StrictParser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # an unknown or malformed argument fails the test
        raise _Refused(message)


def parser_for(name: str) -> argparse.ArgumentParser:
    """An argparse parser that accepts exactly the documented flags of ``name``, by their kinds."""
    doc = documented(name)
    parser = _StrictParser(prog=" ".join(doc["command"]), allow_abbrev=False, add_help=False)
    for positional in doc["positional"]:
        parser.add_argument(positional)
    for flag, spec in doc["flags"].items():
        kind = spec["kind"]
        dest = flag.lstrip("-").replace("-", "_")
        if kind == "flag":
            parser.add_argument(flag, dest=dest, action="store_true")
        elif kind == "bool":
            parser.add_argument(flag, dest=dest, action=argparse.BooleanOptionalAction)
        elif kind == "values":
            parser.add_argument(flag, dest=dest, nargs="+", choices=spec.get("choices"))
        else:
            parser.add_argument(flag, dest=dest, choices=spec.get("choices"))
    return parser


def commands(script: str) -> list[list[str]]:
    """The commands of an exported shell script: comments and ``set`` lines dropped, line
    continuations joined, each split as the shell would."""
    joined = script.replace("\\\n", " ")
    lines = [line for line in joined.splitlines() if line.strip() and not line.lstrip().startswith(("#", "set "))]
    return [shlex.split(line) for line in lines]


def parse(name: str, argv: list[str]) -> argparse.Namespace:
    prefix = documented(name)["command"]
    assert argv[: len(prefix)] == prefix
    return parser_for(name).parse_args(argv[len(prefix):])


def resolved(**fields: Any) -> ResolvedScenario:
    return resolve_scenario(Scenario(**fields))


SERVING = {
    "dense-generic": dict(model="llama-3.1-8b", gpu="h100-sxm", batch_size=32),
    "sglang-fp8-open-loop": dict(
        model="llama-3.1-70b", gpu="h100-sxm", num_gpus=8, parallel={"tp": 4, "dp": 2}, batch_size=64,
        kv_dtype="fp8", weights="fp8",
        serving={"engine": "sglang", "arrival_rate": 5.0, "arrival_cv": 2.0, "requests": 200,
                 "slo_ttft_s": 1.0, "slo_tpot_s": 0.05},
    ),
    "moe-chunked-speculative": dict(
        model="mixtral-8x7b", gpu="h200-sxm", num_gpus=4, parallel={"tp": 2, "dp": 2, "ep": 4}, batch_size=96,
        weights="nf4", seq_len=4096, gen_len=512,
        serving={"batching": "chunked", "prefill_chunk_tokens": 1024, "max_running_sequences": 48,
                 "speculative_draft_params": 1.0e9, "speculative_tokens": 3},
    ),
    "trtllm-static": dict(
        model="qwen3-8b", gpu="l40s", num_gpus=2, parallel={"tp": 2}, batch_size=8, dtype="fp16",
        serving={"engine": "tensorrt-llm", "batching": "static", "kv_block_size": 32, "gpu_memory_utilization": 0.8},
    ),
    "vision": dict(model="qwen3-vl-8b", gpu="h100-sxm", batch_size=4, images_per_request=2),
}


def expected_serving(r: ResolvedScenario) -> dict[str, Any]:
    """The plan's serving values, read from the scenario (engine defaults for knobs left unset)."""
    s = r.scenario
    defaults = serving_engines.engine_defaults(s.serving.engine, r.cluster.accelerator, s.parallel.tp, s.parallel.pp)

    def knob(name: str) -> Any:
        default = defaults[name].value
        return getattr(s.serving, name) if s.serving.explicit(name) or default is None else default

    cap = knob("max_running_sequences")
    return {
        "tp": s.parallel.tp, "pp": s.parallel.pp, "dp": s.parallel.dp, "ep": s.parallel.ep,
        "max_len": s.seq_len + s.gen_len,
        "max_seqs": min(s.batch_size, cap) if cap else s.batch_size,
        "fraction": knob("gpu_memory_utilization"),
        "block": knob("kv_block_size"),
        "chunked": knob("batching") is Batching.CHUNKED,
        "step": knob("prefill_chunk_tokens"),
    }


@pytest.mark.parametrize("case", SERVING)
def test_vllm_command_uses_documented_flags_and_round_trips(case: str) -> None:
    check_vllm(resolved(**SERVING[case]))


def check_vllm(r: ResolvedScenario) -> None:
    files = EXPORTERS["vllm"].export(r, None)
    (serve,) = commands(files["serve.sh"])
    args = parse("vllm", serve)
    want, s = expected_serving(r), r.scenario
    assert args.model == r.model.source
    assert (int(args.tensor_parallel_size), int(args.pipeline_parallel_size), int(args.data_parallel_size)) == (
        want["tp"], want["pp"], want["dp"])
    assert bool(args.enable_expert_parallel) is (want["ep"] > 1)
    assert int(args.max_model_len) == want["max_len"]
    assert int(args.max_num_seqs) == want["max_seqs"]
    assert float(args.gpu_memory_utilization) == pytest.approx(want["fraction"])
    assert int(args.block_size) == want["block"]
    assert args.enable_chunked_prefill is want["chunked"]
    # A step's token budget: the chunk (at least one token per running sequence), or a whole prompt.
    step = int(args.max_num_batched_tokens)
    assert step == (max(want["step"], want["max_seqs"]) if want["chunked"] else max(want["max_len"], want["max_seqs"]))
    assert args.dtype == {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}[s.dtype.value]
    assert args.kv_cache_dtype == ("fp8" if s.kv_cache_dtype.value == "fp8" else None)
    assert args.quantization == {"fp8": "fp8", "nf4": "bitsandbytes"}.get(s.weight_format.value)
    if s.serving.speculative_draft_params is None:
        assert args.speculative_config is None
    else:
        spec = json.loads(args.speculative_config)
        assert set(spec) <= set(documented("vllm")["speculative_config_keys"])
        assert spec["method"] in documented("vllm")["speculative_methods"]
        assert (spec["model"], spec["num_speculative_tokens"]) == (DRAFT_MODEL, s.serving.speculative_tokens)
    if s.images_per_request:
        assert json.loads(args.limit_mm_per_prompt) == {"image": s.images_per_request}


@pytest.mark.parametrize("case", SERVING)
def test_sglang_command_uses_documented_flags_and_round_trips(case: str) -> None:
    check_sglang(resolved(**SERVING[case]))


def check_sglang(r: ResolvedScenario) -> None:
    (serve,) = commands(EXPORTERS["sglang"].export(r, None)["serve.sh"])
    args = parse("sglang", serve)
    want, s = expected_serving(r), r.scenario
    assert args.model_path == r.model.source
    assert [int(args.tp_size), int(args.pp_size), int(args.dp_size), int(args.ep_size)] == [
        want["tp"], want["pp"], want["dp"], want["ep"]]
    assert int(args.context_length) == want["max_len"]
    assert int(args.max_running_requests) == want["max_seqs"]
    assert float(args.mem_fraction_static) == pytest.approx(want["fraction"])
    assert int(args.page_size) == want["block"]
    assert int(args.chunked_prefill_size) == (want["step"] if want["chunked"] else -1)
    kv = s.kv_cache_dtype.value if s.kv_cache_dtype.value == "fp8" or s.kv_cache_dtype is not s.dtype else None
    assert args.kv_cache_dtype == {"fp8": "fp8_e4m3", "bf16": "bfloat16"}.get(kv)
    assert args.quantization == {"fp8": "fp8", "nf4": "bitsandbytes"}.get(s.weight_format.value)
    if s.serving.speculative_draft_params is not None:
        k = s.serving.speculative_tokens
        assert (args.speculative_algorithm, args.speculative_draft_model_path) == ("STANDALONE", DRAFT_MODEL)
        assert (int(args.speculative_num_steps), int(args.speculative_num_draft_tokens)) == (k, k + 1)


@pytest.mark.parametrize("case", SERVING)
def test_trtllm_command_and_yaml_use_documented_names_and_round_trip(case: str) -> None:
    check_trtllm(resolved(**SERVING[case]))


def check_trtllm(r: ResolvedScenario) -> None:
    files = EXPORTERS["trtllm"].export(r, None)
    (serve,) = commands(files["serve.sh"])
    args = parse("tensorrt-llm", serve)
    want, s = expected_serving(r), r.scenario
    assert args.model == r.model.source and args.backend == "pytorch"
    assert (int(args.tp_size), int(args.pp_size)) == (want["tp"], want["pp"])
    assert int(args.ep_size or 1) == want["ep"]
    assert int(args.max_batch_size) == want["max_seqs"]
    assert int(args.max_seq_len) == want["max_len"]
    assert int(args.max_num_tokens) == (max(want["step"], want["max_seqs"]) if want["chunked"]
                                        else max(want["max_len"], want["max_seqs"]))
    assert float(args.kv_cache_free_gpu_memory_fraction) == pytest.approx(want["fraction"])
    assert args.enable_chunked_prefill is want["chunked"]
    assert args.extra_llm_api_options == "extra_llm_api_options.yaml"
    extra = yaml.safe_load(files["extra_llm_api_options.yaml"])
    keys = documented("tensorrt-llm")["yaml_keys"]
    assert set(extra) <= set(keys["top"])
    assert set(extra["kv_cache_config"]) <= set(keys["kv_cache_config"])
    assert extra["kv_cache_config"]["free_gpu_memory_fraction"] == pytest.approx(want["fraction"])
    assert extra["enable_chunked_prefill"] is want["chunked"]
    assert ("batching_type" in extra) is (s.serving.batching is Batching.STATIC)
    if "batching_type" in extra:
        assert extra["batching_type"] in keys["batching_type"]
    spec = extra.get("speculative_config")
    assert (spec is None) is (s.serving.speculative_draft_params is None)
    if spec is not None:
        assert set(spec) <= set(keys["speculative_config"]) and spec["decoding_type"] in keys["decoding_type"]
        assert spec["max_draft_len"] == s.serving.speculative_tokens
    if want["dp"] > 1:
        assert f"dp={want['dp']}" in files["serve.sh"]  # said, not dropped
    assert "kv_block_size" in files["serve.sh"]


@pytest.mark.parametrize("exporter", ["vllm", "sglang", "trtllm"])
@pytest.mark.parametrize("case", SERVING)
def test_benchmark_command_checks_the_plans_load(exporter: str, case: str) -> None:
    check_bench(resolved(**SERVING[case]), exporter)


def check_bench(r: ResolvedScenario, exporter: str) -> None:
    files = EXPORTERS[exporter].export(r, None)
    (bench,) = commands(files["bench.sh"])
    args = parse("vllm-bench", bench)
    s = r.scenario
    assert (args.dataset_name, args.backend, args.endpoint) == ("random", "openai", "/v1/completions")
    assert (int(args.random_input_len), int(args.random_output_len)) == (s.seq_len, s.gen_len)
    assert float(args.random_range_ratio) == 0 and args.ignore_eos
    assert int(args.num_prompts) == s.serving.requests
    assert int(args.port) == {"vllm": 8000, "sglang": 30000, "trtllm": 8000}[exporter]
    if s.serving.arrival_rate is None:
        assert int(args.max_concurrency) == s.batch_size and args.request_rate is None
    else:
        assert float(args.request_rate) == s.serving.arrival_rate and args.max_concurrency is None
        # gamma gaps of shape k have a coefficient of variation 1 / sqrt(k)
        assert float(args.burstiness) ** -0.5 == pytest.approx(s.serving.arrival_cv, rel=1e-5)
    goodput = dict(item.split(":") for item in args.goodput or [])
    if s.serving.slo_ttft_s is not None:
        assert float(goodput["ttft"]) == pytest.approx(s.serving.slo_ttft_s * 1000)
    if s.serving.slo_tpot_s is not None:
        assert float(goodput["tpot"]) == pytest.approx(s.serving.slo_tpot_s * 1000)


def test_a_field_without_an_equivalent_is_said_in_the_output() -> None:
    r = resolved(**SERVING["trtllm-static"])
    vllm = EXPORTERS["vllm"].export(r, None)["serve.sh"]
    assert "batching=static" in vllm and "# Not expressed as arguments" in vllm
    sglang = EXPORTERS["sglang"].export(resolved(**SERVING["moe-chunked-speculative"]), None)["serve.sh"]
    assert "DRAFT_MODEL" in sglang and "acceptance rate" in sglang


def test_the_benchmark_states_the_numbers_it_checks() -> None:
    from workbench.pluginhost import default_engine

    r = resolved(**SERVING["sglang-fp8-open-loop"])
    text = EXPORTERS["vllm"].export(r, default_engine().run(r))["bench.sh"]
    line = next(line for line in text.splitlines() if line.startswith("# The plan expects:"))
    assert "TTFT p50" in line and "TPOT p50" in line and "output throughput" in line


def test_every_data_file_names_its_source_commit_or_says_why_not() -> None:
    for path in DATA.glob("*.yaml"):
        doc = yaml.safe_load(path.read_text())
        assert doc["version"] and doc["read"] and doc["how"], path.name
        assert "@" in doc["source"] or "names no commit" in doc["source"], path.name


def test_every_exporter_states_the_version_of_a_data_file() -> None:
    versions = {yaml.safe_load(p.read_text())["version"] for p in DATA.glob("*.yaml")}
    for exporter in ALL:
        assert exporter.info.engine_version in versions, exporter.info.id


def test_an_exported_plan_keeps_its_engines_defaults_in_another_engine() -> None:
    # An SGLang plan on an H100 ran SGLang's computed memory fraction; vLLM gets the same number.
    r = resolved(model="llama-3.1-8b", gpu="h100-sxm", serving={"engine": ServingEngine.SGLANG})
    (serve,) = commands(EXPORTERS["vllm"].export(r, None)["serve.sh"])
    args = parse("vllm", serve)
    sglang_fraction = serving_engines.engine_defaults(ServingEngine.SGLANG, r.cluster.accelerator)[
        "gpu_memory_utilization"].value
    assert float(args.gpu_memory_utilization) == pytest.approx(sglang_fraction)
    assert sglang_fraction != 0.9
