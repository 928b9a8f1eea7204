"""The formats the first-party exporters write, and the engine version each one follows.

Light data on purpose: the plugin registers its exporters from this table when the workbench starts,
and an exporter's code (command-line builders, manifests, configs) is imported only when a plan is
exported, so commands that export nothing do not pay for loading it.
"""

from __future__ import annotations

from workbench.core.exporter import SERVING, TRAINING, ExporterInfo

#: module -> (engine, the engine version whose argument names it follows, where they were read).
ENGINES: dict[str, tuple[str, str, str]] = {
    "accelerate": (
        "Accelerate",
        "1.15.0.dev0",
        "huggingface/accelerate@16cb6eb80dd9aa8b4df1a63ef57863e455d53b83:"
        "src/accelerate/commands/config/config_args.py, src/accelerate/commands/config/cluster.py",
    ),
    "bench": (
        "vLLM benchmark (vllm bench serve)",
        "0.11",
        "vllm-project/vllm@def9ce85ba1079af970a58ed3d42dd861ae35d58:vllm/benchmarks/serve.py; "
        "vllm-project/vllm@f2e97ddaf5902a9727f48b70d001b6117b8b8b12:vllm/benchmarks/datasets.py",
    ),
    "deepspeed": (
        "DeepSpeed",
        "0.19.6",
        "deepspeedai/DeepSpeed@edaa7221267243c7be7fb49c5d5f5c4fb97b4641:docs/_pages/config-json.md",
    ),
    "kubernetes": (
        "Kubernetes",
        "apps/v1, v1, leaderworkerset.x-k8s.io/v1 (LWS 0.10)",
        "kubernetes/api@10b39a39bcee995dfe7cd5e8e7b922be5e46f1e2:apps/v1/types.go, core/v1/types.go; "
        "kubernetes-sigs/lws@060ab4da17eea1f0865fcbd3236bb1075e2cea32:api/leaderworkerset/v1/leaderworkerset_types.go",
    ),
    "megatron": (
        "Megatron-LM",
        "core_v0.14.0",
        "NVIDIA/Megatron-LM@23e00ed0963c35382dfe8a5a94fb3cda4d21e133:megatron/training/arguments.py",
    ),
    "sglang": (
        "SGLang",
        "0.5 (ServerArgs as indexed, late 2025)",
        "sgl-project/sglang:python/sglang/srt/server_args.py (index file 271536807; the index names no commit)",
    ),
    "torchtitan": (
        "torchtitan",
        "v0.2.2",
        "pytorch/torchtitan@73a0e6979dd10b6b1904098eb3c8f62c18ab87ce:torchtitan/config/job_config.py",
    ),
    "trtllm": (
        "TensorRT-LLM",
        "trtllm-serve 1.x (PyTorch backend)",
        "NVIDIA/TensorRT-LLM@4c05a74891e4df8066f08ed4ce14b0972abe4e25:tensorrt_llm/commands/serve.py; "
        "NVIDIA/TensorRT-LLM@fcd3f31682808ae56118ae43c1d7864a3a945e6f:tensorrt_llm/llmapi/llm_args.py",
    ),
    "vllm": (
        "vLLM",
        "0.11",
        "vllm-project/vllm@99d7eb5d6a512cfcc5a2b104f24ebf2d6cda772b:vllm/engine/arg_utils.py",
    ),
}

#: id -> (title, module whose ENGINES entry it follows, workloads, class in exporters.py).
FORMATS: dict[str, tuple[str, str, tuple, str]] = {
    "vllm": ("vllm serve command line and its benchmark", "vllm", SERVING, "VllmExporter"),
    "sglang": ("SGLang launch_server command line and its benchmark", "sglang", SERVING, "SglangExporter"),
    "trtllm": ("trtllm-serve command line, its extra LLM-API YAML and its benchmark", "trtllm", SERVING,
               "TrtllmExporter"),
    "kubernetes": ("Kubernetes manifest of the serving plan", "kubernetes", SERVING, "KubernetesExporter"),
    "deepspeed": ("DeepSpeed JSON config", "deepspeed", TRAINING, "DeepSpeedExporter"),
    "megatron": ("Megatron-LM pretrain_gpt.py arguments (torchrun)", "megatron", TRAINING, "MegatronExporter"),
    "torchtitan": ("torchtitan job TOML", "torchtitan", TRAINING, "TorchtitanExporter"),
    "accelerate-fsdp": ("Accelerate FSDP config YAML", "accelerate", TRAINING, "AccelerateExporter"),
}


def format_info(ident: str) -> ExporterInfo:
    title, module, workloads, _cls = FORMATS[ident]
    engine, version, source = ENGINES[module]
    return ExporterInfo(id=ident, title=title, engine=engine, engine_version=version, source=source,
                        workloads=workloads)


class LazyExporter:
    """What the plugin registers: the format's ``info`` now, its code on the first ``export``."""

    def __init__(self, ident: str) -> None:
        self.info = format_info(ident)
        self._class_name = FORMATS[ident][3]

    def export(self, resolved, estimate):  # type: ignore[no-untyped-def]
        from workbench_export import exporters

        return getattr(exporters, self._class_name)().export(resolved, estimate)
