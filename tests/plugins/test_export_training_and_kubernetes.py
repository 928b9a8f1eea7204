"""Training configs (DeepSpeed, Megatron-LM, torchtitan, Accelerate FSDP) and Kubernetes manifests:
every key is one the engine documents (tests/data/engine_args), and each parses back to the
scenario's values."""

from __future__ import annotations

import json
import math
import shlex
import tomllib
from typing import Any

import pytest
import yaml
from test_export_engine_args import EXPORTERS, commands, documented, parse, resolved

from workbench.core.errors import InputError
from workbench.core.resolved import ResolvedScenario
from workbench.core.scenario import Offload, Recompute
from workbench_export import megatron

TRAINING = {
    "finetune-zero3-offload": dict(
        model="llama-3.1-8b", gpu="h100-sxm", workload="finetune", num_gpus=8, parallel={
            "dp": 8, "zero_stage": 3, "offload_optimizer": "cpu", "offload_params": "cpu"},
        batch_size=4, global_batch_size=64, recompute="full", train_tokens=1.0e9,
    ),
    "pretrain-3d-fp8": dict(
        model="llama-3.1-70b", gpu="h100-sxm", workload="pretrain", num_gpus=64, parallel={
            "tp": 8, "pp": 4, "dp": 2, "sequence_parallel": True, "pipeline_schedule": "interleaved",
            "virtual_stages": 2, "zero_stage": 1},
        dtype="fp8", batch_size=1, global_batch_size=256, seq_len=8192, recompute="selective", train_tokens=1.5e12,
    ),
    "moe-zero2-fp16-sgd": dict(
        model="mixtral-8x7b", gpu="h100-sxm", workload="pretrain", num_gpus=16,
        parallel={"tp": 2, "dp": 8, "ep": 4, "zero_stage": 2}, dtype="fp16", optimizer="sgd-momentum", batch_size=2,
    ),
    "qlora-ddp": dict(
        model="qwen3-8b", gpu="l40s", workload="finetune", method="qlora", num_gpus=2, parallel={"dp": 2},
        optimizer="adamw-8bit", batch_size=8, seq_len=1024,
    ),
}


def _paths(tree: Any, prefix: str = "", stop: tuple[str, ...] = ()) -> set[str]:
    """Dotted paths of every key in nested mappings (not below a path in ``stop``)."""
    found = set()
    if isinstance(tree, dict):
        for key, value in tree.items():
            path = f"{prefix}.{key}" if prefix else key
            found.add(path)
            if path not in stop:
                found |= _paths(value, path, stop)
    return found


def _global(s: Any) -> int:
    return s.global_batch_size or s.batch_size * s.parallel.dp


@pytest.mark.parametrize("case", TRAINING)
def test_deepspeed_config_keys_are_documented_and_round_trip(case: str) -> None:
    check_deepspeed(resolved(**TRAINING[case]))


def check_deepspeed(r: ResolvedScenario) -> None:
    files = EXPORTERS["deepspeed"].export(r, None)
    doc = json.loads(files["ds_config.json"])
    assert _paths(doc, stop=("optimizer.params",)) <= set(documented("deepspeed")["keys"])
    s, p = r.scenario, r.scenario.parallel
    assert doc["train_micro_batch_size_per_gpu"] == s.batch_size
    assert doc["gradient_accumulation_steps"] == s.grad_accumulation_steps
    assert doc["train_batch_size"] == s.batch_size * s.grad_accumulation_steps * p.dp == _global(s)
    assert doc["zero_optimization"]["stage"] == p.zero_stage
    offload = doc["zero_optimization"].get("offload_optimizer", {}).get("device", "none")
    assert offload == p.offload_optimizer.value
    params = doc["zero_optimization"].get("offload_param", {}).get("device", "none")
    assert params == (p.offload_params.value if p.zero_stage == 3 else "none")
    assert doc["bf16"]["enabled"] is (s.dtype.value in ("bf16", "fp8"))
    assert doc["fp16"]["enabled"] is (s.dtype.value == "fp16")
    assert doc.get("tensor_parallel", {}).get("autotp_size", 1) == p.tp
    notes = files["ds_config.notes.txt"]
    assert f"seq_len={s.seq_len}" in notes
    for present, text in ((p.pp > 1, f"pp={p.pp}"), (s.recompute is not Recompute.NONE, "recompute="),
                          (s.dtype.value == "fp8", "dtype=fp8"), (s.method.value == "qlora", "method=qlora"),
                          (s.optimizer.value == "adamw-8bit", "optimizer=adamw-8bit")):
        assert (text in notes) is present, text


@pytest.mark.parametrize("case", TRAINING)
def test_megatron_arguments_are_documented_and_round_trip(case: str) -> None:
    check_megatron(resolved(**TRAINING[case]))


def check_megatron(r: ResolvedScenario) -> None:
    (command,) = commands(EXPORTERS["megatron"].export(r, None)["train.sh"])
    script = command.index(megatron.SCRIPT)
    assert command[0] == "torchrun"
    args = parse("megatron-lm", command[script + 1:])
    s, p, m = r.scenario, r.scenario.parallel, r.model
    assert (int(args.tensor_model_parallel_size), int(args.pipeline_model_parallel_size)) == (p.tp, p.pp)
    assert int(args.expert_model_parallel_size or 1) == p.ep
    assert args.sequence_parallel is p.sequence_parallel
    virtual = args.num_virtual_stages_per_pipeline_rank
    assert (int(virtual) if virtual else 1) == (p.virtual_stages if p.pp > 1 and p.pipeline_schedule.value ==
                                                "interleaved" else 1)
    assert (int(args.micro_batch_size), int(args.global_batch_size), int(args.seq_length)) == (
        s.batch_size, _global(s), s.seq_len)
    assert (int(args.num_layers), int(args.hidden_size), int(args.num_attention_heads)) == (
        m.num_layers, m.hidden_size, m.num_attention_heads)
    assert int(args.num_query_groups or m.num_attention_heads) == m.num_kv_heads
    assert (int(args.ffn_hidden_size), int(args.kv_channels)) == (m.intermediate_size, m.head_dim)
    if m.moe:
        assert (int(args.num_experts), int(args.moe_router_topk)) == (m.moe.num_experts, m.moe.experts_per_token)
    assert args.bf16 is (s.dtype.value in ("bf16", "fp8")) and args.fp16 is (s.dtype.value == "fp16")
    assert args.fp8_format == ("hybrid" if s.dtype.value == "fp8" else None)
    assert args.recompute_granularity == {"none": None, "selective": "selective", "full": "full"}[s.recompute.value]
    assert args.use_distributed_optimizer is (p.zero_stage >= 1)
    assert args.optimizer_cpu_offload is (p.offload_optimizer is Offload.CPU)
    if s.train_tokens:
        assert int(args.train_samples) == round(s.train_tokens / s.seq_len)
    per_node = min(s.num_gpus, r.cluster.node.gpus_per_node)
    launcher = command[:script]
    assert launcher[launcher.index("--nproc-per-node") + 1] == str(per_node)
    assert launcher[launcher.index("--nnodes") + 1] == str(math.ceil(s.num_gpus / per_node))


@pytest.mark.parametrize("case", TRAINING)
def test_torchtitan_toml_keys_are_documented_and_round_trip(case: str) -> None:
    check_torchtitan(resolved(**TRAINING[case]))


def check_torchtitan(r: ResolvedScenario) -> None:
    doc = tomllib.loads(EXPORTERS["torchtitan"].export(r, None)["train.toml"])
    leaves = {path for path in _paths(doc) if path.count(".") >= 1}
    assert leaves <= set(documented("torchtitan")["keys"])
    s, p = r.scenario, r.scenario.parallel
    par, train = doc["parallelism"], doc["training"]
    assert par["data_parallel_replicate_degree"] * par["data_parallel_shard_degree"] == p.dp
    assert par["data_parallel_shard_degree"] == (p.dp if p.zero_stage else 1)
    assert (par["tensor_parallel_degree"], par["pipeline_parallel_degree"], par["expert_parallel_degree"]) == (
        p.tp, p.pp, p.ep)
    assert (train["local_batch_size"], train["global_batch_size"], train["seq_len"]) == (
        s.batch_size, _global(s), s.seq_len)
    if s.train_tokens:
        assert train["steps"] == math.ceil(s.train_tokens / (_global(s) * s.seq_len))
    assert doc["activation_checkpoint"]["mode"] == s.recompute.value
    assert ("float8" in str(doc.get("model", {}).get("converters"))) is (s.dtype.value == "fp8")
    assert train["enable_cpu_offload"] is (p.offload_params is not Offload.NONE or
                                           p.offload_optimizer is not Offload.NONE)


@pytest.mark.parametrize("case", TRAINING)
def test_accelerate_fsdp_config_keys_are_documented_and_round_trip(case: str) -> None:
    check_accelerate(resolved(**TRAINING[case]))


def check_accelerate(r: ResolvedScenario) -> None:
    text = EXPORTERS["accelerate-fsdp"].export(r, None)["accelerate_fsdp.yaml"]
    doc = yaml.safe_load(text)
    assert _paths(doc) <= set(documented("accelerate")["keys"])
    s, p = r.scenario, r.scenario.parallel
    assert doc["distributed_type"] == "FSDP" and doc["num_processes"] == p.world_size
    assert doc["mixed_precision"] == {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "fp32": "no"}[s.dtype.value]
    fsdp = doc["fsdp_config"]
    assert fsdp["fsdp_reshard_after_forward"] is (p.zero_stage == 3)
    assert fsdp["fsdp_offload_params"] is (p.offload_params is not Offload.NONE)
    assert fsdp["fsdp_activation_checkpointing"] is (s.recompute is not Recompute.NONE)
    for degree, name in ((p.tp, "tp"), (p.pp, "pp"), (p.ep, "ep")):
        assert (f"# - {name}={degree}:" in text) is (degree > 1)


def _check_k8s(node: Any, struct: str, structs: dict[str, dict[str, Any]], where: str) -> None:
    """Every key of ``node`` is a json field of Go struct ``struct`` (or of its inline structs)."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            _check_k8s(item, struct, structs, f"{where}[{i}]")
        return
    if struct not in structs or not isinstance(node, dict):
        return  # a scalar, a map of free keys (labels, limits) or a leaf type
    fields = dict(structs[struct])
    for inline in fields.pop("<inline>", []):
        fields.update({k: v for k, v in structs[inline].items() if k != "<inline>"})
        for nested in structs[inline].get("<inline>", []):
            fields.update(structs[nested])
    for key, value in node.items():
        assert key in fields, f"{where}.{key} is not a field of {struct}"
        _check_k8s(value, fields[key], structs, f"{where}.{key}")


SERVING_K8S = {
    "vllm-one-node": dict(model="llama-3.1-70b", gpu="h100-sxm", num_gpus=8, parallel={"tp": 4, "dp": 2},
                          batch_size=64),
    "sglang-two-nodes": dict(model="llama-3.1-405b", gpu="h100-sxm", num_gpus=16, parallel={"tp": 8, "pp": 2},
                             batch_size=32, serving={"engine": "sglang"}),
    "vllm-two-nodes": dict(model="llama-3.1-405b", gpu="h100-sxm", num_gpus=16, parallel={"tp": 8, "pp": 2},
                           batch_size=32, serving={"engine": "vllm"}),
    "trtllm-replicas": dict(model="llama-3.1-8b", gpu="h100-sxm", num_gpus=4, parallel={"tp": 2, "dp": 2},
                            serving={"engine": "tensorrt-llm"}),
}


@pytest.mark.parametrize("case", SERVING_K8S)
def test_kubernetes_manifest_uses_api_fields_and_round_trips(case: str) -> None:
    check_kubernetes(resolved(**SERVING_K8S[case]))


def check_kubernetes(r: ResolvedScenario) -> None:
    docs = list(yaml.safe_load_all(EXPORTERS["kubernetes"].export(r, None)["manifest.yaml"]))
    api = documented("kubernetes")
    roots = {key.split()[-1]: struct for key, struct in api["roots"].items()}
    for doc in docs:
        _check_k8s(doc, roots[doc["kind"]], api["structs"], doc["kind"])
    s, p = r.scenario, r.scenario.parallel
    engine = s.serving.engine.value
    nvidia = r.cluster.accelerator.vendor.value == "nvidia"
    resource = "nvidia.com/gpu" if nvidia else "amd.com/gpu"
    workload = next(d for d in docs if d["kind"] in ("Deployment", "LeaderWorkerSet"))
    if workload["kind"] == "Deployment":
        pods = [workload["spec"]["template"]["spec"]]
        replicas = workload["spec"]["replicas"]
        per_pod = pods[0]["containers"][0]["resources"]["limits"][resource]
        assert replicas * per_pod == p.world_size
        argv = pods[0]["containers"][0]["command"]
    else:
        template = workload["spec"]["leaderWorkerTemplate"]
        nodes = math.ceil(p.world_size / r.cluster.node.gpus_per_node)
        assert template["size"] == nodes > 1
        pods = [template["leaderTemplate"]["spec"], template["workerTemplate"]["spec"]]
        for pod in pods:
            assert pod["containers"][0]["resources"]["limits"][resource] == r.cluster.node.gpus_per_node
        shell_line = pods[0]["containers"][0]["command"][2]
        argv = shlex.split(shell_line.split("&&")[-1])
    data = {"generic": "vllm", "vllm": "vllm", "sglang": "sglang", "tensorrt-llm": "tensorrt-llm"}[engine]
    args = parse(data, argv[: argv.index("--node-rank")] if "--node-rank" in argv else argv)
    tp = args.tensor_parallel_size if data == "vllm" else args.tp_size
    assert int(tp) == p.tp
    for pod in pods:
        mounts = {m["mountPath"]: m["name"] for m in pod["containers"][0]["volumeMounts"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes[mounts["/dev/shm"]]["emptyDir"]["medium"] == "Memory"
        assert ("nvidia.com/gpu.product" in pod.get("nodeSelector", {})) is nvidia
    server = pods[0]["containers"][0]
    for probe in ("readinessProbe", "livenessProbe"):
        assert server[probe]["httpGet"]["path"] == "/health"
        assert server[probe]["httpGet"]["port"] == server["ports"][0]["containerPort"]
    if data == "tensorrt-llm":
        config = next(d for d in docs if d["kind"] == "ConfigMap")
        extra = yaml.safe_load(config["data"]["extra_llm_api_options.yaml"])
        assert set(extra) <= set(documented("tensorrt-llm")["yaml_keys"]["top"])
        assert args.extra_llm_api_options == "/config/extra_llm_api_options.yaml"


def test_kubernetes_refuses_what_it_cannot_deploy() -> None:
    with pytest.raises(InputError, match="device plugin"):
        EXPORTERS["kubernetes"].export(resolved(model="llama-3.1-8b", gpu="tpu-v5e"), None)
    with pytest.raises(InputError, match="MPI"):
        EXPORTERS["kubernetes"].export(resolved(**{**SERVING_K8S["sglang-two-nodes"],
                                                   "serving": {"engine": "tensorrt-llm"}}), None)


@pytest.mark.parametrize("exporter", ["deepspeed", "megatron", "torchtitan", "accelerate-fsdp"])
def test_a_training_format_refuses_a_serving_scenario(exporter: str) -> None:
    with pytest.raises(InputError, match="inference scenario"):
        EXPORTERS[exporter].export(resolved(model="llama-3.1-8b", gpu="h100-sxm"), None)


def test_a_serving_format_refuses_a_training_scenario() -> None:
    with pytest.raises(InputError, match="pretrain scenario"):
        EXPORTERS["vllm"].export(resolved(**TRAINING["pretrain-3d-fp8"]), None)
