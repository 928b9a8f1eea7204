"""Scenario: what the user wants to run, on how many GPUs, laid out how, at what price.

A scenario names its model and accelerator by id (catalog or project-custom) so that a project
file stays small and a catalog correction reaches every scenario. Every knob the estimators use
lives here; each field's description is the GUI tooltip and the CLI help.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StringConstraints,
    model_serializer,
    model_validator,
)

from workbench.core import limits
from workbench.core.dtypes import ACTIVATION_DTYPES, KV_CACHE_DTYPES, DType, WeightFormat

# NaN and infinity are never a valid input: they pass every range check (NaN compares false) and
# reach the charts and the JSON output as values nothing can use.
_FROZEN = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

#: Ids and paths never hold a NUL: no file system accepts one, and Python's path calls raise on it.
_NO_NUL = r"^[^\x00]*$"

#: An assumption id as estimators name them (``memory.fragmentation``).
AssumptionId = Annotated[str, StringConstraints(min_length=1, max_length=limits.MAX_NAME_CHARS)]

#: Bounds of the image inputs: more images per request than any served model accepts, and sides
#: past 16k pixels (Qwen3-VL's processor caps an image at 16.8 megapixels anyway).
MAX_IMAGES_PER_REQUEST = 256
MAX_IMAGE_SIDE = 16384


class Workload(str, Enum):
    INFERENCE = "inference"
    FINETUNE = "finetune"
    PRETRAIN = "pretrain"


class FinetuneMethod(str, Enum):
    FULL = "full"
    LORA = "lora"
    QLORA = "qlora"


class Optimizer(str, Enum):
    ADAMW = "adamw"
    ADAMW_8BIT = "adamw-8bit"
    SGD_MOMENTUM = "sgd-momentum"
    ADAFACTOR = "adafactor"


class Recompute(str, Enum):
    NONE = "none"
    SELECTIVE = "selective"
    FULL = "full"


class AttentionKernel(str, Enum):
    EAGER = "eager"
    SDPA = "sdpa"
    FLASH = "flash"


class Offload(str, Enum):
    NONE = "none"
    CPU = "cpu"
    NVME = "nvme"


class PipelineSchedule(str, Enum):
    ONE_F_ONE_B = "1f1b"
    INTERLEAVED = "interleaved"
    GPIPE = "gpipe"


class Batching(str, Enum):
    STATIC = "static"
    CONTINUOUS = "continuous"
    CHUNKED = "chunked"


class ServingEngine(str, Enum):
    """The serving software stack whose documented defaults fill the knobs a user leaves unset."""

    GENERIC = "generic"
    VLLM = "vllm"
    SGLANG = "sglang"
    TENSORRT_LLM = "tensorrt-llm"


#: Serving knobs an engine's defaults fill when the user did not set them (see ServingOptions).
ENGINE_KNOBS = ("gpu_memory_utilization", "kv_block_size", "batching", "prefill_chunk_tokens", "max_running_sequences")


class Parallelism(BaseModel):
    """How the model and the batch are split over GPUs."""

    model_config = _FROZEN

    tp: int = Field(1, gt=0, le=limits.MAX_GPUS, description="Tensor parallel degree: each layer's matrices split over this many GPUs.")
    pp: int = Field(1, gt=0, le=limits.MAX_GPUS, description="Pipeline parallel degree: layers split into this many stages.")
    dp: int = Field(1, gt=0, le=limits.MAX_GPUS, description="Data parallel degree: model replicas, each on its own share of the batch.")
    ep: int = Field(1, gt=0, le=limits.MAX_GPUS, description="Expert parallel degree: MoE experts split over this many GPUs.")
    sequence_parallel: bool = Field(
        False, description="Split norm/dropout activations along the sequence across the TP group (Megatron-LM SP)."
    )
    zero_stage: int = Field(
        0, ge=0, le=3, description="ZeRO stage: 1 shards optimizer states, 2 also gradients, 3 also weights (FSDP)."
    )
    pipeline_schedule: PipelineSchedule = Field(
        PipelineSchedule.ONE_F_ONE_B, description="Pipeline schedule; interleaved shrinks the bubble."
    )
    virtual_stages: int = Field(1, gt=0, le=limits.MAX_VIRTUAL_STAGES, description="Model chunks per pipeline rank (interleaved schedule).")
    offload_optimizer: Offload = Field(Offload.NONE, description="Keep optimizer states in CPU RAM or NVMe.")
    offload_params: Offload = Field(Offload.NONE, description="Keep weights in CPU RAM or NVMe between uses (ZeRO-3).")

    @property
    def model_parallel(self) -> int:
        return self.tp * self.pp

    @property
    def world_size(self) -> int:
        """GPUs one replica set needs: TP x PP x DP (EP reuses the DP ranks, as in Megatron)."""
        return self.tp * self.pp * self.dp


class ServingOptions(BaseModel):
    """Inference-server behaviour (vLLM / TensorRT-LLM / SGLang style) and the load it serves.

    ``engine`` names the serving stack. Under ``generic`` every knob means what its default says.
    Under another engine, a knob of :data:`ENGINE_KNOBS` the user did not set explicitly (absent
    from the payload, so not in ``model_fields_set``) takes that engine's documented default when
    the scenario is estimated (``workbench.engine.serving_engines`` resolves it, with the GPU in
    view, since some defaults depend on its memory). So that the distinction survives a save, such
    a scenario's payload leaves the unset knobs out; a ``generic`` payload is what it always was.
    """

    model_config = _FROZEN

    engine: ServingEngine = Field(
        ServingEngine.GENERIC,
        description="Serving software stack: its documented defaults fill the serving knobs left unset "
        "(generic: the workbench's fixed defaults).",
    )
    gpu_memory_utilization: float = Field(
        0.9, gt=0, le=1,
        description="The engine's memory fraction: of the whole GPU, claimed up front (vLLM "
        "gpu_memory_utilization, SGLang mem_fraction_static; generic 0.9), or for TensorRT-LLM of the "
        "memory still free after weights and workspace (free_gpu_memory_fraction).",
    )
    paged_kv: bool = Field(True, description="KV cache in fixed-size pages (PagedAttention).")
    kv_block_size: int = Field(16, gt=0, le=limits.MAX_SIZE_KNOB, description="Tokens per KV-cache page (generic 16, as vLLM).")
    batching: Batching = Field(
        Batching.CONTINUOUS,
        description="Scheduling: static (a batch runs until its longest request ends), continuous (new requests "
        "join between steps; a step prefills or decodes) or chunked (prompts prefilled in chunks mixed with "
        "decode steps).",
    )
    prefill_chunk_tokens: int = Field(2048, gt=0, le=limits.MAX_TOKENS, description="Tokens per prefill chunk when chunked prefill is on.")
    max_running_sequences: int | None = Field(
        None, gt=0, le=limits.MAX_SIZE_KNOB,
        description="Most sequences the server runs at once; more requests wait (vLLM max_num_seqs, "
        "TensorRT-LLM max_batch_size; None: no cap beyond the concurrency).",
    )
    disaggregated: bool = Field(False, description="Prefill and decode run on separate GPU pools.")
    speculative_draft_params: float | None = Field(
        None, gt=0, le=limits.MAX_DRAFT_PARAMS, description="Parameters of a draft model for speculative decoding (None: off)."
    )
    speculative_tokens: int = Field(4, gt=0, le=limits.MAX_SPECULATIVE_TOKENS, description="Tokens the draft proposes per step.")
    speculative_acceptance: float = Field(
        0.7, gt=0, le=1, description="Probability that the target model accepts each drafted token."
    )
    arrival_rate: float | None = Field(
        None, gt=0, le=limits.MAX_ARRIVAL_RATE,
        description="Requests arriving per second, for the serving simulation (None: a closed loop of "
        "'concurrent requests' users, each sending its next request when the last one ends).",
    )
    arrival_cv: float = Field(
        1.0, gt=0, le=limits.MAX_ARRIVAL_CV,
        description="Coefficient of variation of the gaps between arrivals: 1 is Poisson (MLPerf Server), "
        "above 1 burstier, below 1 more regular (gamma-distributed gaps).",
    )
    requests: int = Field(
        1000, gt=0, le=limits.MAX_SIMULATED_REQUESTS,
        description="Requests the serving simulation runs (more: steadier percentiles, slower estimate).",
    )
    trace: str | None = Field(
        None, min_length=1, max_length=limits.MAX_PATH_CHARS, pattern=_NO_NUL,
        description="A CSV or JSONL file of requests to replay instead of generated load: prompt_tokens, "
        "output_tokens and optionally arrival_s per line (None: prompts and outputs of the scenario's lengths).",
    )
    slo_ttft_s: float | None = Field(
        None, gt=0, le=limits.MAX_SLO_S,
        description="Time-to-first-token target in seconds for goodput (None: no target).",
    )
    slo_tpot_s: float | None = Field(
        None, gt=0, le=limits.MAX_SLO_S,
        description="Time-per-output-token target in seconds for goodput (None: no target).",
    )

    @model_validator(mode="before")
    @classmethod
    def _older_batching_flags(cls, data: Any) -> Any:
        """Payloads saved before ``batching`` carry two booleans; they keep their meaning (continuous
        off was static batching whatever chunked prefill said)."""
        if not isinstance(data, dict) or not {"continuous_batching", "chunked_prefill"} & data.keys():
            return data
        data = dict(data)
        continuous = data.pop("continuous_batching", True)
        chunked = data.pop("chunked_prefill", False)
        for name, flag in (("continuous_batching", continuous), ("chunked_prefill", chunked)):
            if not isinstance(flag, bool):
                raise ValueError(f"{name} must be true or false")
        implied = Batching.STATIC if not continuous else Batching.CHUNKED if chunked else Batching.CONTINUOUS
        given = data.get("batching")
        if given is not None and str(getattr(given, "value", given)) != implied.value:
            raise ValueError(
                f"batching '{getattr(given, 'value', given)}' disagrees with continuous_batching/chunked_prefill "
                f"('{implied.value}'); give batching only"
            )
        data["batching"] = implied
        return data

    @model_serializer(mode="wrap")
    def _unset_knobs_stay_unset(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """An engine's scenario keeps only the knobs set explicitly; a generic one dumps as before."""
        data = handler(self)
        if self.engine is ServingEngine.GENERIC:
            data.pop("engine", None)
            if self.max_running_sequences is None:
                data.pop("max_running_sequences", None)
            return data
        for name in ENGINE_KNOBS:
            if name not in self.model_fields_set:
                data.pop(name, None)
        return data

    def explicit(self, name: str) -> bool:
        """Whether knob ``name`` was set by the user (an engine default does not replace it)."""
        return self.engine is ServingEngine.GENERIC or name in self.model_fields_set

    @property
    def continuous_batching(self) -> bool:
        return self.batching is not Batching.STATIC

    @property
    def chunked_prefill(self) -> bool:
        return self.batching is Batching.CHUNKED


class Pricing(BaseModel):
    """Money, power and carbon. None means: take the catalog's typical figure."""

    model_config = _FROZEN

    cloud_usd_per_gpu_hour: float | None = Field(None, gt=0, le=limits.MAX_USD, description="Rental price per GPU-hour, USD.")
    purchase_usd_per_gpu: float | None = Field(None, gt=0, le=limits.MAX_USD, description="Purchase price per GPU, USD.")
    server_overhead_fraction: float = Field(
        0.5, ge=0, le=100, description="Server, network and install cost as a fraction of the GPUs' price."
    )
    power_usd_per_kwh: float = Field(0.12, ge=0, le=limits.MAX_USD, description="Electricity price, USD per kWh.")
    pue: float = Field(1.3, ge=1, le=3, description="Power usage effectiveness of the data centre.")
    grid_kg_co2_per_kwh: float = Field(0.4, ge=0, le=100, description="Carbon intensity of the grid, kg CO2e per kWh.")
    years: float = Field(3.0, gt=0, le=10, description="Ownership period for buy-vs-rent.")
    utilization: float = Field(0.7, gt=0, le=1, description="Fraction of owned hours the GPUs do useful work.")


class DatasetFormat(str, Enum):
    TOKENIZED = "tokenized"
    TEXT = "text"


class ClusterOptions(BaseModel):
    """Storage, checkpoints and failures of the job around the GPUs (the cluster plugin reads them).

    Left at their defaults, these options are not written into a scenario's payload, so a scenario
    that does not use them reads in an older workbench as before.
    """

    model_config = _FROZEN

    storage: str | None = Field(
        None, min_length=1, max_length=limits.MAX_NAME_CHARS, pattern=_NO_NUL,
        description="Storage system id from the storage catalog (`catalog storage`; None: the catalog's default).",
    )
    storage_count: int | None = Field(
        None, gt=0, le=limits.MAX_GPUS,
        description="Drives per node (local storage), appliances (a parallel file system) or key prefixes (an "
        "object store) (None: the catalog's typical count).",
    )
    storage_gbps: float | None = Field(
        None, gt=0, le=1e7,
        description="Aggregate storage bandwidth the job gets, GB/s, for reads and writes (None: from the catalog).",
    )
    dataset_format: DatasetFormat = Field(
        DatasetFormat.TOKENIZED,
        description="How the training data is stored: pre-tokenized token ids, or raw text tokenized while loading.",
    )
    checkpoint_interval_s: float | None = Field(
        None, gt=0, le=1e8, description="Seconds between checkpoints (None: the Young/Daly optimum)."
    )
    async_checkpoint: bool = Field(
        False, description="Asynchronous checkpoints: training stalls only for the copy to host memory."
    )
    spot: bool = Field(False, description="Spot/preemptible capacity: discounted, and preempted now and then.")


#: The newest scenario payload version a project file may hold: 2 marks a scenario with a serving
#: engine, which a reader of version 1 would take for a damaged file (it rejects the unknown field);
#: with the version it names the file as newer instead. A generic scenario is still written as 1.
#: 3 marks a scenario with cluster options (storage, checkpoints, spot) set.
SCENARIO_PAYLOAD_NEWEST = 3
_PAYLOAD_SERVING_ENGINE = 2
_PAYLOAD_CLUSTER = 3


class Scenario(BaseModel):
    """One workload on one hardware setup. Validated; immutable (edits make a new one)."""

    model_config = _FROZEN

    schema_version: int = Field(1, description="Format version of this payload.")
    name: str = Field("Scenario", min_length=1, max_length=limits.MAX_NAME_CHARS, description="Name shown in the scenario list.")
    model: str = Field(min_length=1, max_length=limits.MAX_PATH_CHARS, pattern=_NO_NUL, description="Model id (catalog or project) or a config.json path.")
    gpu: str = Field(min_length=1, max_length=limits.MAX_NAME_CHARS, pattern=_NO_NUL, description="Accelerator id (catalog or custom).")
    node: str | None = Field(None, max_length=limits.MAX_NAME_CHARS, pattern=_NO_NUL, description="Node shape id (None: the accelerator's usual server).")
    num_gpus: int = Field(1, gt=0, le=limits.MAX_GPUS, description="GPUs in the job.")

    workload: Workload = Field(Workload.INFERENCE, description="Serving, fine-tuning or pre-training.")
    method: FinetuneMethod = Field(
        FinetuneMethod.FULL, description="Fine-tuning method: full weights, LoRA adapters, or LoRA on 4-bit weights."
    )
    lora_rank: int = Field(16, gt=0, le=limits.MAX_SIZE_KNOB, description="LoRA adapter rank r.")
    lora_targets: str = Field(
        "all-linear", pattern="^(all-linear|attention)$", description="Which projections get LoRA adapters."
    )

    dtype: DType = Field(DType.BF16, description="Compute and activation precision.")
    weights: WeightFormat | None = Field(
        None, description="How weights are stored (None: same as dtype). int4/nf4/fp4 carry scale overhead."
    )
    quant_group_size: int = Field(128, gt=0, le=limits.MAX_SIZE_KNOB, description="Weights per quantization group (int4).")
    kv_dtype: DType | None = Field(None, description="KV-cache precision (None: same as dtype).")

    batch_size: int = Field(1, gt=0, le=limits.MAX_BATCH, description="Sequences per step on one replica: micro-batch or concurrent requests.")
    seq_len: int = Field(2048, gt=0, le=limits.MAX_TOKENS, description="Tokens per sequence: the prompt for inference, the sample for training.")
    gen_len: int = Field(256, ge=0, le=limits.MAX_TOKENS, description="Output tokens generated per request (inference).")
    images_per_request: int = Field(
        0,
        ge=0,
        le=MAX_IMAGES_PER_REQUEST,
        description="Images each request (or training sample) carries, for vision-language models: each adds "
        "its image tokens to the prompt and runs the vision encoder once.",
    )
    image_width: int = Field(
        1024, gt=0, le=MAX_IMAGE_SIDE, description="Width of each image in pixels, before the model's own resize."
    )
    image_height: int = Field(
        1024, gt=0, le=MAX_IMAGE_SIDE, description="Height of each image in pixels, before the model's own resize."
    )
    global_batch_size: int | None = Field(
        None, gt=0, le=limits.MAX_GLOBAL_BATCH, description="Sequences per optimizer step over all replicas (training; None: batch x DP)."
    )
    train_tokens: float | None = Field(None, gt=0, le=limits.MAX_TRAIN_TOKENS, description="Tokens to train on (for time and cost of a run).")

    parallel: Parallelism = Field(default_factory=Parallelism, description="TP/PP/DP/EP, ZeRO and offload.")
    optimizer: Optimizer = Field(Optimizer.ADAMW, description="Optimizer whose states are kept.")
    master_weights: bool = Field(
        True, description="Keep an fp32 copy of 16-bit weights (mixed-precision training)."
    )
    recompute: Recompute = Field(Recompute.NONE, description="Activation recomputation (gradient checkpointing).")
    attention: AttentionKernel = Field(
        AttentionKernel.FLASH, description="Attention kernel: eager keeps the s x s scores; sdpa/flash do not."
    )
    serving: ServingOptions = Field(default_factory=ServingOptions, description="Inference-server options.")
    pricing: Pricing = Field(default_factory=Pricing, description="Prices, power and ownership period.")
    cluster: ClusterOptions = Field(
        default_factory=ClusterOptions, description="Storage, checkpoints and failures around the GPUs."
    )
    mfu: float | None = Field(None, gt=0, le=1, description="Override: achieved fraction of peak FLOPS.")
    assumptions: dict[AssumptionId, float] = Field(
        default_factory=dict, description="Overrides of named estimator assumptions, by id."
    )

    @model_validator(mode="after")
    def _check(self) -> Scenario:
        if self.dtype not in ACTIVATION_DTYPES:
            raise ValueError(
                f"dtype: {self.dtype.value} is not a compute precision; use one of "
                + ", ".join(d.value for d in ACTIVATION_DTYPES)
            )
        if self.kv_dtype is not None and self.kv_dtype not in KV_CACHE_DTYPES:
            raise ValueError(f"kv_dtype: {self.kv_dtype.value} is not supported for the KV cache")
        if self.weights is not None and self.weights.is_gguf and self.is_training:
            raise ValueError(f"weights: {self.weights.value} is a llama.cpp inference format; training needs another")
        if self.method is FinetuneMethod.QLORA and self.weights not in (None, WeightFormat.NF4, WeightFormat.INT4):
            raise ValueError(f"weights: QLoRA stores weights in nf4 or int4, not {self.weights.value}")
        if self.parallel.world_size > self.num_gpus:
            raise ValueError(
                f"parallel: TP x PP x DP = {self.parallel.world_size} needs more GPUs than num_gpus ({self.num_gpus})"
            )
        if self.parallel.ep > self.parallel.dp * self.parallel.tp:
            raise ValueError(f"parallel.ep: {self.parallel.ep} exceeds DP x TP ({self.parallel.dp * self.parallel.tp})")
        if self.global_batch_size is not None and self.global_batch_size % (self.batch_size * self.parallel.dp):
            raise ValueError(
                f"global_batch_size: {self.global_batch_size} is not a multiple of batch_size x dp "
                f"({self.batch_size * self.parallel.dp})"
            )
        return self

    @property
    def weight_format(self) -> WeightFormat:
        if self.weights is not None:
            return self.weights
        if self.method is FinetuneMethod.QLORA:
            return WeightFormat.NF4
        return WeightFormat(self.dtype.value)

    def expert_format(self, checkpoint_format: WeightFormat | None) -> WeightFormat | None:
        """The routed experts' own storage format for this scenario, or None (the experts follow
        :attr:`weight_format`). ``checkpoint_format`` is how the checkpoint stores them
        (``MoEConfig.expert_weight_format``, gpt-oss: MXFP4): an inference scenario that names no
        weight format serves the checkpoint as published; one that names a format, and training
        (which updates dequantized weights), do not."""
        if checkpoint_format is None or self.weights is not None or self.is_training:
            return None
        return checkpoint_format

    @property
    def kv_cache_dtype(self) -> DType:
        return self.kv_dtype or self.dtype

    @model_serializer(mode="wrap")
    def _default_cluster_left_out(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Cluster options at their defaults stay out of the payload (an older reader rejects the
        unknown field); set ones are written, and the payload version says so."""
        data = handler(self)
        if self.cluster == _DEFAULT_CLUSTER:
            data.pop("cluster", None)
        return data

    @property
    def payload_version(self) -> int:
        """The version a project file records for this payload (see SCENARIO_PAYLOAD_NEWEST)."""
        if self.cluster != _DEFAULT_CLUSTER:
            return _PAYLOAD_CLUSTER
        return _PAYLOAD_SERVING_ENGINE if self.serving.engine is not ServingEngine.GENERIC else self.schema_version

    @property
    def is_training(self) -> bool:
        return self.workload is not Workload.INFERENCE

    @property
    def grad_accumulation_steps(self) -> int:
        if self.global_batch_size is None:
            return 1
        return self.global_batch_size // (self.batch_size * self.parallel.dp)


_DEFAULT_CLUSTER = ClusterOptions()
