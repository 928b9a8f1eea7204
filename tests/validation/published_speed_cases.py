"""The speed model against published, measured results it was never tuned on (issue 15).

Turns every record of ``tests/data/published_speed/measurements.yaml`` into a workbench
``Scenario``, runs the engine with its default assumptions, and compares each published metric
with the output key that means the same thing. Running this file prints the report and writes it
into docs/validation.md between the ``published-speed`` markers::

    python tests/validation/published_speed_cases.py          # print and write the section
    python tests/validation/published_speed_cases.py --check  # exit 1 if the doc is stale

The mapping is generic, by config field, and was written without looking at any prediction:

* a record whose model or accelerator is not in the catalog is not predicted, unless its
  ``notes`` name a catalog model "identical in shape" or it states ``nearest_catalog_hardware``;
  such substitutions are listed with the record;
* inputs that define the workload itself (compute precision, sequence / prompt length) must be
  stated; a record without them is not predicted. Inputs with a workbench default (micro-batch,
  output length, KV dtype, EP) take it, and the report lists it;
* a serving batch is the stated batch; else the stated concurrency per replica; else, for an
  arrival rate, the serving simulator runs the stated (else 1,000) Poisson requests at that rate,
  at most the KV-cache capacity at once, and its percentiles are compared; else, for a
  max-load (offline) run, the KV-cache capacity capped at 4096 as the fitted cases of this doc
  do. An unstated TP is the smallest power of two that fits. Each such choice is listed;
* every config field is either consumed by a rule below or listed as ``unmodelled`` (CP, arrival
  rates, attention DP, token dispatchers, software stacks, ...), so nothing a source states
  disappears silently.

Each record has one primary metric, chosen by metric name with one ordering per regime
(throughput for throughput tables, TTFT under load, TPOT/ITL at small concurrency, tokens/s per
GPU for training); the others are secondary. Error = predicted / measured - 1.
"""

from __future__ import annotations

import math
import re
import statistics
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from workbench.catalog.accelerators import default_node_for, load_accelerators
from workbench.catalog.models import load_model_catalog
from workbench.catalog.resolve import resolve_scenario
from workbench.core import Scenario
from workbench.engine.estimate import Estimate
from workbench.engine.pipeline import Engine
from workbench.pluginhost.host import PluginHost

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "published_speed" / "measurements.yaml"
DOC = ROOT / "docs" / "validation.md"
START = "<!-- published-speed:start -->"
END = "<!-- published-speed:end -->"
README = ROOT / "README.md"
SUMMARY_START = "<!-- published-speed-summary:start -->"
SUMMARY_END = "<!-- published-speed-summary:end -->"
#: Where a doc without the section gets it: before this heading.
INSERT_BEFORE = "## Limitations"

SPLITS = ("fit", "heldout")
TRAINING_REGIMES = ("dense_training_bf16", "fp8_training", "moe_training")

#: Issue 15's gates.
GATE_HELDOUT_MEDIAN = 0.10
GATE_REGIME_MEDIAN = 0.20
GATE_CASE = 0.50
WITHIN = 0.25

#: The batch cap of a max-load (offline) run whose batch the source does not state: the KV-cache
#: capacity, at most this many sequences (trtllm-bench's cap, as the fitted I/R cases of
#: docs/validation.md model offline runs).
MAX_LOAD_BATCH_CAP = 4096

#: Request lengths of a named benchmark dataset whose per-record lengths the sources do not give.
#: Only what docs/validation.md already uses for the same benchmark (cases I1-I4: 300 prompt
#: tokens assumed, unverified; 290 output tokens per sample from the v4.1 NVIDIA log).
BENCHMARK_LENGTHS: dict[str, tuple[int, int, str]] = {
    "llama2-70b": (300, 290, "docs/validation.md I1-I4"),
}

#: Config fields that describe the record rather than set anything the scenario could model.
DESCRIPTIVE = frozenset({"workload", "config_gaps", "num_params", "global_batch_tokens", "accuracy_target"})


class NotPredicted(Exception):
    """The record cannot be turned into a scenario; the message is the reason."""


# --- the records --------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def load_records() -> tuple[dict[str, Any], ...]:
    return tuple(yaml.safe_load(DATA.read_text(encoding="utf-8"))["records"])


def record(ident: str) -> dict[str, Any]:
    for rec in load_records():
        if rec["id"] == ident:
            return rec
    raise KeyError(ident)


def _int(value: object) -> int | None:
    """A stated whole number (YAML int or a digit string); None for text such as 'not stated'."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _short(value: object, limit: int = 48) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


class Config:
    """A record's config that remembers which fields a rule read; the rest are unmodelled."""

    def __init__(self, config: dict[str, Any]) -> None:
        self._data = dict(config)
        self._read: set[str] = set()

    def get(self, key: str) -> Any:
        self._read.add(key)
        return self._data.get(key)

    def unread(self) -> list[str]:
        """``key=value`` of every field no rule read and that sets something (False / 'n/a' do not)."""
        out = []
        for key, value in self._data.items():
            if key in self._read or key in DESCRIPTIVE or value is False or value is None:
                continue
            if isinstance(value, str) and value.strip().lower() in ("n/a", "none", "not stated"):
                continue
            out.append(f"{key}={_short(value)}")
        return out


# --- mapping -----------------------------------------------------------------------------------


@dataclass
class Mapping:
    """What a record becomes: scenario fields plus what was substituted and what is not modelled."""

    model: str
    gpu: str
    fields: dict[str, Any] = field(default_factory=dict)
    parallel: dict[str, Any] = field(default_factory=dict)
    serving: dict[str, Any] = field(default_factory=dict)
    substitutions: list[str] = field(default_factory=list)
    unmodelled: list[str] = field(default_factory=list)
    #: serving only: how the batch is set ("stated", "max-load", "arrival") and its inputs.
    batch_rule: str = "stated"
    batch_cap: int | None = None
    arrival_rate: float | None = None
    requests: int | None = None  # stated number of requests of the run
    tp_stated: bool = True

    def scenario(self, **override: Any) -> Scenario:
        fields = {**self.fields, **override}
        parallel = {**self.parallel, **fields.pop("parallel", {})}
        try:
            return Scenario(model=self.model, gpu=self.gpu, parallel=parallel, serving=self.serving, **fields)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise NotPredicted(f"the stated layout is not a valid scenario: {first['msg']}") from None


def _catalog_ids(rec: dict[str, Any], mapping_notes: list[str]) -> tuple[str, str]:
    models = load_model_catalog()
    gpus = load_accelerators()
    model = rec["model"]
    if rec.get("model_catalog") == "missing" or model not in models:
        twin = _identical_catalog_model(rec.get("notes") or "", models)
        if twin is None:
            raise NotPredicted(f"model not in the catalog ({_short(rec.get('model_name', model), 60)})")
        mapping_notes.append(f"model {twin} for {model} (identical in shape, per the record's notes)")
        model = twin
    gpu = rec["hardware"]
    if rec.get("hardware_catalog") == "missing" or gpu not in gpus:
        nearest = rec.get("nearest_catalog_hardware")
        if not nearest or nearest not in gpus:
            raise NotPredicted(f"accelerator not in the catalog ({rec.get('hardware_name', gpu)})")
        mapping_notes.append(f"hardware {nearest} for {rec.get('hardware_name', gpu)}")
        gpu = nearest
    return model, gpu


def _identical_catalog_model(notes: str, models: Iterable[str]) -> str | None:
    """A catalog id the notes call identical in shape ('same shapes as X', 'same architecture as X')."""
    match = re.search(r"same (?:shapes?|architecture) as ([a-z0-9][a-z0-9.\-]*[a-z0-9])", notes)
    if match and match.group(1) in set(models):
        return match.group(1)
    return None


def _training_precision(text: object, m: Mapping) -> str:
    if not isinstance(text, str) or not text.strip():
        raise NotPredicted("training precision not stated")
    low = text.lower()
    if "fp8" in low or "float8" in low:
        dtype = "fp8"
        if "linear" in low:
            m.unmodelled.append("fp8 scope: nn.Linear only (attention and the rest in bf16)")
        if "mx" in low.split("-")[-1]:
            m.unmodelled.append("fp8 scaling: MX blocks (FP8-MX)")
        if "all-gather" in low:
            m.unmodelled.append("fsdp all-gather: fp8")
    elif "bf16" in low:
        dtype = "bf16"
    elif "fp16" in low:
        dtype = "fp16"
    else:
        raise NotPredicted(f"training precision not understood ({_short(text)})")
    return dtype


def _recompute(value: object, m: Mapping) -> str | None:
    """activation_checkpointing / recompute -> none, selective or full."""
    if value is None:
        return None
    if value is True:
        return "full"
    if value is False:
        return "none"
    low = str(value).lower().strip()
    if low in ("full", "true"):
        return "full"
    if low in ("none", "false", "none listed"):
        return "none"
    if low == "selective":
        return "selective"
    # A list of modules (Megatron's --recompute-modules): partial recomputation, charged as selective.
    modules = re.sub(r"^selective:\s*", "", str(value).strip(), flags=re.IGNORECASE)
    m.unmodelled.append(f"recompute modules: {_short(modules, 40)} (charged as selective)")
    return "selective"


def map_training(rec: dict[str, Any], cfg: Config, m: Mapping) -> None:
    gpus = int(rec["gpus"])
    m.fields["workload"] = "pretrain"
    m.fields["num_gpus"] = gpus
    dtype = _training_precision(cfg.get("precision"), m)
    m.fields["dtype"] = dtype
    # FP8 training keeps 16-bit weights (and fp32 masters); the FP8 copies are transient.
    m.fields["weights"] = "bf16" if dtype == "fp8" else dtype

    seq = _int(cfg.get("sequence_length"))
    if seq is None:
        raise NotPredicted("sequence length not stated")
    m.fields["seq_len"] = seq

    tp = _int(cfg.get("tp")) or 1
    pp = _int(cfg.get("pp")) or 1
    cp = _int(cfg.get("cp")) or 1
    dp = _int(cfg.get("dp"))
    if dp is None:
        dp = gpus // (tp * pp * cp)
    # Context parallelism splits each sequence over cp GPUs; the scenario has no CP, so those GPUs
    # count as data parallel (the same work per GPU, as docs/validation.md's T13 does).
    if cp > 1:
        m.unmodelled.append(f"cp={cp} (counted as data parallel)")
    dp_total = dp * cp
    m.parallel.update(tp=tp, pp=pp, dp=dp_total)
    ep = _int(cfg.get("ep"))
    if ep is not None:
        m.parallel["ep"] = ep
    vp = _int(cfg.get("vp"))
    schedule = str(cfg.get("pp_schedule") or "").lower()
    if vp is not None and vp > 1:
        m.parallel.update(pipeline_schedule="interleaved", virtual_stages=vp)
    elif "interleaved" in schedule:
        m.parallel["pipeline_schedule"] = "interleaved"
        m.unmodelled.append("pp_schedule: interleaved without a stated chunk count (1 used)")

    fsdp = cfg.get("fsdp")
    if fsdp is True or isinstance(fsdp, str) or (_int(fsdp) or 0) > 0:
        m.parallel["zero_stage"] = 3
        degree = _int(fsdp)
        if degree is not None and degree != dp_total:
            m.unmodelled.append(
                f"fsdp={degree} of dp={dp_total} (hybrid sharding; charged as ZeRO-3 over all DP)"
            )

    gbs = _int(cfg.get("global_batch_size"))
    ga = _int(cfg.get("gradient_accumulation"))
    mbs = _int(cfg.get("micro_batch_size"))
    if mbs is None and gbs is not None and ga is not None:
        mbs = gbs // (ga * dp)
    if mbs is None:
        mbs = 1
        m.substitutions.append("micro-batch 1 (not stated; scenario default)")
    if gbs is None and ga is not None:
        gbs = mbs * dp * ga
    m.fields["batch_size"] = mbs
    if gbs is not None:
        m.fields["global_batch_size"] = gbs

    recompute = _recompute(cfg.get("activation_checkpointing"), m) or _recompute(cfg.get("recompute"), m)
    if recompute is not None:
        m.fields["recompute"] = recompute

    nodes = _int(cfg.get("nodes"))
    if nodes is not None and gpus != nodes * _gpus_per_node(m.gpu):
        m.unmodelled.append(f"nodes={nodes} ({gpus // nodes} GPUs each)")


def _gpus_per_node(gpu: str) -> int:
    return default_node_for(load_accelerators()[gpu]).gpus_per_node


def _serving_precision(weights: object, m: Mapping) -> None:
    if not isinstance(weights, str) or not weights.strip():
        raise NotPredicted("weights dtype not stated")
    head = weights.lower().split()[0]
    if head in ("nvfp4", "fp4", "mxfp4"):
        # No fp4 compute dtype: FP4 weights with FP8 activations is the nearest the scenario holds.
        m.fields.update(weights="fp4", dtype="fp8")
        m.unmodelled.append("fp4 compute: W4A4 NVFP4, charged at the fp8 rate")
    elif head in ("fp8", "bf16", "fp16"):
        # FP8 checkpoints of TensorRT-LLM / vLLM quantize activations too (W8A8).
        m.fields.update(weights=head, dtype=head)
    else:
        raise NotPredicted(f"weights dtype not understood ({_short(weights)})")


def _benchmark(dataset: object) -> str | None:
    match = re.search(r"benchmark ([a-z0-9.\-]+)", str(dataset or "").lower())
    return match.group(1).rstrip(":,") if match else None


def _metric(rec: dict[str, Any], name: str) -> float | None:
    for metric in rec["metrics"]:
        if metric["name"] == name:
            return float(metric["value"])
    return None


def map_serving(rec: dict[str, Any], cfg: Config, m: Mapping) -> None:
    gpus = int(rec["gpus"])
    m.fields["workload"] = "inference"
    m.fields["num_gpus"] = gpus
    _serving_precision(cfg.get("weights_dtype"), m)
    kv = str(cfg.get("kv_dtype") or "").lower().split()
    if kv and kv[0] in ("fp8", "fp16", "bf16"):
        m.fields["kv_dtype"] = kv[0]
    else:
        m.substitutions.append(f"KV cache {m.fields['dtype']} (not stated; follows the compute dtype)")

    # Lengths: stated, else the named benchmark's (see BENCHMARK_LENGTHS).
    dataset = cfg.get("dataset")
    name = _benchmark(dataset) or ""
    bench = BENCHMARK_LENGTHS.get(name)
    isl = _int(cfg.get("input_len"))
    osl = _int(cfg.get("output_len"))
    if isl is None:
        if bench is None:
            raise NotPredicted("prompt length not stated")
        isl = bench[0]
        m.substitutions.append(f"prompt {isl} tokens (benchmark {name}, as {bench[2]}; unverified)")
    if osl is None:
        # The record's own output tokens per completed request, when it gives both rates.
        out = _metric(rec, "output_tokens_per_sec")
        per = _metric(rec, "samples_per_sec") or _metric(rec, "request_throughput")
        if out and per:
            osl = round(out / per)
            m.substitutions.append(
                f"output {osl} tokens per request (the record's output tokens/s over its requests/s)"
            )
        elif bench is not None:
            osl = bench[1]
            m.substitutions.append(f"output {osl} tokens (benchmark {name}, as {bench[2]})")
        else:
            osl = 256
            m.substitutions.append("output 256 tokens (not stated; scenario default)")
    m.fields.update(seq_len=isl, gen_len=osl)
    if dataset is not None and not str(dataset).lower().startswith("synthetic"):
        m.unmodelled.append(f"dataset: {_short(dataset, 40)} (a length distribution; one length used)")

    tp = _int(cfg.get("tp"))
    pp = _int(cfg.get("pp")) or 1
    m.tp_stated = tp is not None
    m.parallel.update(tp=tp or 1, pp=pp, dp=max(1, gpus // ((tp or 1) * pp)))
    ep = cfg.get("ep")
    if _int(ep) is not None:
        m.parallel["ep"] = _int(ep)
    elif ep is not None:
        m.substitutions.append("EP 1 (EP size not stated)")

    batching = str(cfg.get("batching") or "").lower()
    if batching.startswith("static"):
        m.serving["continuous_batching"] = False
    elif "in-flight" in batching:
        # In-flight batching schedules prompt chunks beside decode steps (as the fitted cases model it).
        m.serving["chunked_prefill"] = True
    budget = _int(cfg.get("max_num_tokens"))
    if budget is not None:
        m.serving.update(chunked_prefill=True, prefill_chunk_tokens=budget)

    scenario = str(cfg.get("scenario") or "").lower()
    rate_text = cfg.get("request_rate_qps")
    rate = _number(cfg.get("target_qps")) or _number(rate_text)
    batch = _int(cfg.get("batch_size"))
    concurrency = _int(cfg.get("concurrency"))
    max_batch = _int(cfg.get("max_batch_size"))
    replicas = m.parallel["dp"]
    if batch is not None:
        m.batch_rule = "stated"
        m.fields["batch_size"] = batch
    elif concurrency is not None:
        # Clients keep this many requests in flight: each replica runs its share, as far as the
        # KV cache (and a stated max batch) allow.
        m.batch_rule = "concurrency"
        m.batch_cap = max(1, concurrency // replicas)
    elif rate is not None:
        m.batch_rule = "arrival"
        m.arrival_rate = rate
    elif (
        scenario.startswith("offline") or "all requests queued" in batching or str(rate_text).upper() == "INF"
    ):
        m.batch_rule = "max-load"
    elif scenario:
        m.batch_rule = "max-load"
        run_kind = _short(cfg.get("scenario"), 40)
        m.unmodelled.append(f"arrival rate: not stated ({run_kind} run modelled at max load)")
    else:
        raise NotPredicted("neither batch, concurrency, arrival rate nor a max-load run is stated")
    if max_batch is not None:
        m.batch_cap = min(m.batch_cap or max_batch, max_batch)
    requests = _int(cfg.get("requests"))
    m.requests = requests
    if requests is not None and m.batch_rule != "arrival":
        m.unmodelled.append(f"requests={requests} (a finite run: ramp-up and drain)")


def map_record(rec: dict[str, Any]) -> Mapping:
    """The scenario fields of one record (raises NotPredicted with the reason)."""
    substitutions: list[str] = []
    model, gpu = _catalog_ids(rec, substitutions)
    m = Mapping(model=model, gpu=gpu, substitutions=substitutions)
    cfg = Config(rec["config"])
    workload = cfg.get("workload")
    if workload == "pretraining":
        map_training(rec, cfg, m)
    elif workload == "serving":
        map_serving(rec, cfg, m)
    else:
        raise NotPredicted(f"workload {workload!r} not understood")
    m.unmodelled.extend(cfg.unread())
    return m


# --- metrics -----------------------------------------------------------------------------------


def _model_tflops_per_gpu(est: Estimate) -> float | None:
    scenario = est.resolved.scenario
    per_token = (est.get("flops.forward") or 0.0) + (est.get("flops.backward") or 0.0)
    rate = est.get("performance.tokens_per_s_per_gpu")
    if not per_token or rate is None:
        return None
    return rate * per_token / (scenario.batch_size * scenario.seq_len) / 1e12


def _key(key: str, scale: float = 1.0) -> Callable[[Estimate], float | None]:
    def read(est: Estimate) -> float | None:
        value = est.get(key)
        return None if value is None else float(value) * scale

    read.__doc__ = key if scale == 1.0 else f"{key} x {scale:g}"
    return read


def _total_tokens(est: Estimate) -> float | None:
    out, inp = est.get("performance.tokens_per_s"), est.get("performance.input_tokens_per_s")
    return None if out is None or inp is None else out + inp


_total_tokens.__doc__ = "performance.tokens_per_s + performance.input_tokens_per_s"
_model_tflops_per_gpu.__doc__ = "performance.tokens_per_s_per_gpu x model FLOPs per token"

#: Published metric name -> how the estimate gives it, in the record's unit.
METRICS: dict[str, Callable[[Estimate], float | None]] = {
    "output_tokens_per_sec": _key("performance.tokens_per_s"),
    "output_tokens_per_sec_per_gpu": _key("performance.tokens_per_s_per_gpu"),
    "output_tokens_per_sec_per_user": _key("performance.tokens_per_s_per_user"),
    "total_tokens_per_sec": _total_tokens,
    "samples_per_sec": _key("performance.requests_per_s"),
    "request_throughput": _key("performance.requests_per_s"),
    "ttft_ms": _key("performance.ttft_s", 1e3),
    "ttft_mean_ms": _key("performance.ttft_s", 1e3),
    "ttft_p50_ms": _key("performance.ttft_s", 1e3),
    "tpot_p50_ms": _key("performance.tpot_s", 1e3),
    "itl_mean_ms": _key("performance.tpot_s", 1e3),
    "e2e_latency_p50_s": _key("performance.e2e_latency_s"),
    "mean_request_latency_ms": _key("performance.e2e_latency_s", 1e3),
    "tokens_per_sec": _key("performance.tokens_per_s"),
    "tokens_per_sec_per_gpu": _key("performance.tokens_per_s_per_gpu"),
    "tokens_per_sec_per_device": _key("performance.tokens_per_s_per_gpu"),
    "mfu": _key("performance.mfu", 100.0),
    "hfu": _key("performance.hfu", 100.0),
    "model_tflops_per_gpu": _model_tflops_per_gpu,
    "tflops_per_gpu": _model_tflops_per_gpu,
    "step_time_s": _key("performance.step_time_s"),
}
#: The same metrics read from the serving simulator, for records run under an arrival rate.
SIMULATED_METRICS: dict[str, Callable[[Estimate], float | None]] = {
    "output_tokens_per_sec": _key("performance.sim.output_tokens_per_s"),
    "samples_per_sec": _key("performance.sim.requests_per_s"),
    "request_throughput": _key("performance.sim.requests_per_s"),
    "ttft_ms": _key("performance.sim.ttft_mean_s", 1e3),
    "ttft_mean_ms": _key("performance.sim.ttft_mean_s", 1e3),
    "ttft_p50_ms": _key("performance.sim.ttft_p50_s", 1e3),
    "ttft_p99_ms": _key("performance.sim.ttft_p99_s", 1e3),
    "tpot_p50_ms": _key("performance.sim.tpot_p50_s", 1e3),
    "tpot_p99_ms": _key("performance.sim.tpot_p99_s", 1e3),
    "itl_mean_ms": _key("performance.sim.tpot_mean_s", 1e3),
    "e2e_latency_p50_s": _key("performance.sim.e2e_p50_s"),
    "e2e_latency_p99_s": _key("performance.sim.e2e_p99_s"),
    "mean_request_latency_ms": _key("performance.sim.e2e_mean_s", 1e3),
}
SIMULATED_REQUESTS = 1000
MAX_SIMULATED_REQUESTS = 100_000

#: Published metrics no output key gives (the model has no latency distribution).
NOT_COMPARABLE = {
    "ttft_p99_ms": "no p99 in the model",
    "tpot_p99_ms": "no p99 in the model",
    "e2e_latency_p99_s": "no p99 in the model",
}

_THROUGHPUT = (
    "output_tokens_per_sec_per_gpu",
    "output_tokens_per_sec",
    "total_tokens_per_sec",
    "samples_per_sec",
    "request_throughput",
)
_TRAINING = (
    "tokens_per_sec_per_gpu",
    "tokens_per_sec_per_device",
    "tokens_per_sec",
    "model_tflops_per_gpu",
    "tflops_per_gpu",
    "mfu",
    "step_time_s",
    "hfu",
)
#: The headline metric of a record: the first of its regime's list the record has.
PRIMARY_ORDER: dict[str, tuple[str, ...]] = {
    "server_ttft_under_load": ("ttft_p50_ms", "ttft_mean_ms", "ttft_ms", *_THROUGHPUT),
    "small_concurrency_latency": (
        "itl_mean_ms",
        "tpot_p50_ms",
        "output_tokens_per_sec_per_user",
        "ttft_mean_ms",
        "ttft_ms",
        "mean_request_latency_ms",
    ),
    "dense_serving": (*_THROUGHPUT, "ttft_ms"),
    "moe_serving": _THROUGHPUT,
    "amd_serving": _THROUGHPUT,
    **{regime: _TRAINING for regime in TRAINING_REGIMES},
}


def primary_metric(rec: dict[str, Any]) -> str:
    names = [metric["name"] for metric in rec["metrics"]]
    for name in PRIMARY_ORDER[rec["regime"]]:
        if name in names:
            return name
    raise NotPredicted(f"no headline metric for regime {rec['regime']} among {', '.join(names)}")


# --- running -----------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def engine() -> Engine:
    host = PluginHost(
        first_party=("workbench_memory", "workbench_compute", "workbench_performance", "workbench_cost"),
        entry_point_group=None,
    )
    return Engine(host.registry.estimators)


def run(scenario: Scenario) -> Estimate:
    est = engine().run(resolve_scenario(scenario))
    if est.failures:
        raise NotPredicted("; ".join(f"{f.estimator}: {f.message}" for f in est.failures))
    return est


def _errors(est: Estimate) -> list[str]:
    return sorted({w.code for w in est.warnings if w.severity == "error"})


def _smallest_fitting_tp(m: Mapping) -> int:
    """TP a deployer picks when the source does not say: the smallest power of two that fits."""
    gpus = m.fields["num_gpus"]
    tp = 1
    while tp <= gpus:
        if gpus % tp == 0:
            est = run(m.scenario(batch_size=1, parallel={"tp": tp, "dp": gpus // tp}))
            if est.get("memory.fits") and not _errors(est):
                return tp
        tp *= 2
    raise NotPredicted("no tensor-parallel degree fits the model on the stated GPUs")


def _serving_scenario(m: Mapping) -> Scenario:
    if not m.tp_stated:
        tp = _smallest_fitting_tp(m)
        m.parallel.update(tp=tp, dp=m.fields["num_gpus"] // (tp * m.parallel["pp"]))
        m.substitutions.append(f"TP {tp} (not stated; the smallest that fits)")
    if m.batch_rule == "stated":
        return m.scenario()
    capacity = int(run(m.scenario(batch_size=1)).get("kv_cache.max_concurrency") or 0)
    if capacity < 1:
        raise NotPredicted("the KV cache holds no sequence at the stated layout")
    cap = min(capacity, m.batch_cap or MAX_LOAD_BATCH_CAP)
    if m.batch_rule == "max-load":
        limit = m.batch_cap or MAX_LOAD_BATCH_CAP
        m.substitutions.append(f"batch {cap} (max load: KV-cache capacity {capacity}, cap {limit})")
        return m.scenario(batch_size=cap)
    if m.batch_rule == "concurrency":
        if cap < (m.batch_cap or 0):
            m.substitutions.append(
                f"batch {cap} (the KV cache holds {capacity}, fewer than the concurrency allows)"
            )
        return m.scenario(batch_size=cap)
    # Arrivals at a rate: the serving simulator runs the stated number of requests (default
    # SIMULATED_REQUESTS) arriving as a Poisson process at that rate, with at most the KV-cache
    # capacity (or the stated max batch) running at once per replica.
    requests = min(m.requests or SIMULATED_REQUESTS, MAX_SIMULATED_REQUESTS)
    m.serving.update(arrival_rate=m.arrival_rate, requests=requests)
    m.substitutions.append(
        f"simulated: Poisson arrivals at {m.arrival_rate:g} req/s, {requests:,} requests, at most {cap} running per replica"
    )
    return m.scenario(batch_size=cap)


@dataclass(frozen=True)
class Comparison:
    metric: str
    unit: str
    measured: float
    predicted: float | None
    key: str
    note: str = ""

    @property
    def error(self) -> float | None:
        if self.predicted is None or not self.measured:
            return None
        return self.predicted / self.measured - 1.0


@dataclass(frozen=True)
class Case:
    ident: str
    split: str
    regime: str
    model: str
    hardware: str
    reason: str | None  # None: predicted
    primary: Comparison | None = None
    secondary: tuple[Comparison, ...] = ()
    scenario: Scenario | None = None
    substitutions: tuple[str, ...] = ()
    unmodelled: tuple[str, ...] = ()
    engine_errors: tuple[str, ...] = ()

    @property
    def predicted(self) -> bool:
        return self.reason is None

    @property
    def error(self) -> float | None:
        return None if self.primary is None else self.primary.error


def _compare(rec: dict[str, Any], est: Estimate) -> list[Comparison]:
    out = []
    simulated = est.resolved.scenario.serving.arrival_rate is not None
    for metric in rec["metrics"]:
        name, value, unit = metric["name"], float(metric["value"]), metric["unit"]
        read = (SIMULATED_METRICS.get(name) if simulated else None) or METRICS.get(name)
        if read is None:
            out.append(Comparison(name, unit, value, None, "", NOT_COMPARABLE.get(name, "no output key")))
            continue
        predicted = read(est)
        note = "" if predicted is not None else "key empty"
        out.append(Comparison(name, unit, value, predicted, read.__doc__ or "", note))
    return out


def evaluate(rec: dict[str, Any]) -> Case:
    """One record: predicted with every comparable metric, or not predicted with the reason."""
    base = {
        "ident": rec["id"],
        "split": rec["split"],
        "regime": rec["regime"],
        "model": rec["model"],
        "hardware": rec["hardware"],
    }
    try:
        m = map_record(rec)
        primary_name = primary_metric(rec)
        scenario = _serving_scenario(m) if m.fields["workload"] == "inference" else m.scenario()
        est = run(scenario)
        comparisons = _compare(rec, est)
    except NotPredicted as exc:
        return Case(reason=str(exc), **base)
    primary = next(c for c in comparisons if c.metric == primary_name)
    if primary.error is None:
        return Case(reason=f"the estimate gives no {primary_name} ({primary.note})", **base)
    return Case(
        reason=None,
        primary=primary,
        secondary=tuple(c for c in comparisons if c is not primary),
        scenario=scenario,
        substitutions=tuple(m.substitutions),
        unmodelled=tuple(m.unmodelled),
        engine_errors=tuple(_errors(est)),
        **base,
    )


@lru_cache(maxsize=1)
def cases() -> tuple[Case, ...]:
    return tuple(evaluate(rec) for rec in load_records())


# --- the report --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    predicted: int
    not_predicted: int
    median: float | None
    within: float | None
    worst: Case | None


def summarize(group: Iterable[Case]) -> Group:
    group = list(group)
    done = [c for c in group if c.predicted]
    errors = [abs(c.error) for c in done if c.error is not None]
    worst = max(done, key=lambda c: abs(c.error or 0.0), default=None)
    return Group(
        predicted=len(done),
        not_predicted=len(group) - len(done),
        median=statistics.median(errors) if errors else None,
        within=sum(e <= WITHIN for e in errors) / len(errors) if errors else None,
        worst=worst,
    )


def regimes(all_cases: Iterable[Case]) -> list[str]:
    return sorted({c.regime for c in all_cases})


@dataclass(frozen=True)
class Gate:
    name: str
    value: str
    passed: bool


def gates(all_cases: tuple[Case, ...]) -> list[Gate]:
    heldout = [c for c in all_cases if c.split == "heldout"]
    overall = summarize(heldout)
    per_regime = {r: summarize(c for c in heldout if c.regime == r) for r in regimes(heldout)}
    over = sorted(
        (
            (r, g.median)
            for r, g in per_regime.items()
            if g.median is not None and g.median > GATE_REGIME_MEDIAN
        ),
        key=lambda item: -item[1],
    )
    unpredicted = [r for r, g in per_regime.items() if g.median is None]
    predicted = [c for c in all_cases if c.predicted and c.error is not None]
    beyond = [c for c in predicted if abs(c.error or 0.0) > GATE_CASE]
    worst = max(predicted, key=lambda c: abs(c.error or 0.0), default=None)
    return [
        Gate(
            f"held-out median abs error <= {GATE_HELDOUT_MEDIAN:.0%}",
            f"{_pct(overall.median)} over {overall.predicted} predicted held-out records",
            overall.median is not None and overall.median <= GATE_HELDOUT_MEDIAN,
        ),
        Gate(
            f"each regime's held-out median abs error <= {GATE_REGIME_MEDIAN:.0%}",
            "; ".join(
                part
                for part in (
                    ", ".join(f"{r} {_pct(v)}" for r, v in over) + " above" if over else "",
                    "none predicted: " + ", ".join(unpredicted) if unpredicted else "",
                )
                if part
            )
            or "all within",
            not over and not unpredicted,
        ),
        Gate(
            f"no case beyond +-{GATE_CASE:.0%} (primary metric, fit and held-out)",
            f"{len(beyond)} of {len(predicted)} beyond"
            + (f"; worst {worst.ident} {_signed(worst.error)}" if worst is not None else ""),
            not beyond,
        ),
    ]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _signed(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1%}"


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _worst(group: Group) -> str:
    return "-" if group.worst is None else f"{group.worst.ident} {_signed(group.worst.error)}"


def render(all_cases: tuple[Case, ...] | None = None) -> str:
    """The docs/validation.md section, markers included."""
    all_cases = cases() if all_cases is None else all_cases
    heldout = [c for c in all_cases if c.split == "heldout"]
    lines = [
        START,
        "",
        "## Published speed results: fit and held-out (issue 15)",
        "",
        f"Generated by `python tests/validation/published_speed_cases.py` from "
        f"`tests/data/published_speed/measurements.yaml` ({len(all_cases)} measured results, split once "
        "by source; never tune on the held-out part). Default assumptions; the mapping from each "
        "record to a scenario is generic (see the module's docstring). Error = predicted / measured - 1 "
        "of each record's primary metric; medians are of the absolute error over the predicted records. "
        "`tests/validation/test_published_speed_model.py` checks this section is current.",
        "",
        "### Gates (issue 15)",
        "",
        "| gate | now | result |",
        "|---|---|---|",
    ]
    for gate in gates(all_cases):
        lines.append(f"| {gate.name} | {gate.value} | {'PASS' if gate.passed else 'FAIL'} |")
    per_regime = {r: summarize(c for c in heldout if c.regime == r) for r in regimes(heldout)}
    ranked = [(r, g) for r, g in per_regime.items() if g.median is not None]
    worst_regime = max(ranked, key=lambda item: item[1].median or 0.0, default=None)
    lines += ["", "### Per regime", ""]
    lines += [
        "| regime | split | predicted | not predicted | median abs error | within +-25% | worst |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for regime in regimes(all_cases):
        for split in SPLITS:
            g = summarize(c for c in all_cases if c.regime == regime and c.split == split)
            lines.append(
                f"| {regime} | {split} | {g.predicted} | {g.not_predicted} | {_pct(g.median)} | "
                f"{_pct(g.within)} | {_worst(g)} |"
            )
    for split in SPLITS:
        g = summarize(c for c in all_cases if c.split == split)
        lines.append(
            f"| **all** | {split} | {g.predicted} | {g.not_predicted} | {_pct(g.median)} | "
            f"{_pct(g.within)} | {_worst(g)} |"
        )
    overall = summarize(heldout)
    lines += [
        "",
        f"Held-out: median abs error **{_pct(overall.median)}**, {_pct(overall.within)} within +-25% "
        f"({overall.predicted} predicted, {overall.not_predicted} not predicted). Worst held-out regime: "
        + (
            f"**{worst_regime[0]}** (median {_pct(worst_regime[1].median)})."
            if worst_regime
            else "none predicted."
        ),
        "",
        "### Not predicted",
        "",
        "| id | split | regime | reason |",
        "|---|---|---|---|",
    ]
    for case in all_cases:
        if not case.predicted:
            lines.append(f"| {case.ident} | {case.split} | {case.regime} | {_cell(case.reason or '')} |")
    counts = Counter(
        re.split(r"[=:]", item, maxsplit=1)[0]
        for case in all_cases
        if case.predicted
        for item in case.unmodelled
    )
    lines += ["", "### Most common unmodelled settings (predicted records)", ""]
    lines += ["| setting | records |", "|---|---:|"]
    for name, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        lines.append(f"| {_cell(name)} | {count} |")
    lines += [
        "",
        "### Per record",
        "",
        "Primary metric first; other metrics as `name predicted / measured (error)`. Substitutions are "
        "inputs the record does not state (or a stand-in the catalog needed); engine errors are the "
        "estimate's error-severity warnings.",
        "",
        "| id | split | regime | model | hardware | metric | measured | predicted | error | other metrics "
        "| substitutions | unmodelled settings | engine errors |",
        "|---|---|---|---|---|---|---:|---:|---:|---|---|---|---|",
    ]
    for case in all_cases:
        if not case.predicted or case.primary is None:
            continue
        p = case.primary
        others = "; ".join(
            f"{c.metric} {_num(c.predicted)} / {_num(c.measured)} ({_signed(c.error)})"
            if c.predicted is not None
            else f"{c.metric}: {c.note}"
            for c in case.secondary
        )
        lines.append(
            f"| {case.ident} | {case.split} | {case.regime} | {case.model} | {case.hardware} | {p.metric} | "
            f"{_num(p.measured)} | {_num(p.predicted)} | {_signed(p.error)} | {_cell(others) or '-'} | "
            f"{_cell('; '.join(case.substitutions)) or '-'} | {_cell('; '.join(case.unmodelled)) or '-'} | "
            f"{', '.join(case.engine_errors) or '-'} |"
        )
    lines += ["", END]
    return "\n".join(lines)


#: The held-out medians per regime of the speed model before the per-operator rebuild (one
#: matmul efficiency, closed-form serving), measured with this file on commit f2eca31; shown
#: beside today's in the README so a change reads against where it started.
BASELINE_HELDOUT = {
    "amd_serving": 0.123,
    "dense_serving": 0.086,
    "fp8_training": 0.282,
    "moe_serving": 0.371,
    "moe_training": 0.552,
    "server_ttft_under_load": 0.565,
    "small_concurrency_latency": 0.115,
    "all": 0.244,
}


def render_summary(all_cases: tuple[Case, ...] | None = None) -> str:
    """The README's summary: held-out and fit medians per regime, the gates, the worst regime."""
    all_cases = cases() if all_cases is None else all_cases
    lines = [
        SUMMARY_START,
        "",
        "| regime | fit: predicted | fit: median abs error | held-out: predicted | held-out: median abs error "
        "| held-out within +-25% | held-out median before the rebuild |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for regime in [*regimes(all_cases), "all"]:
        fit = summarize(c for c in all_cases if c.split == "fit" and regime in ("all", c.regime))
        held = summarize(c for c in all_cases if c.split == "heldout" and regime in ("all", c.regime))
        name = "**all**" if regime == "all" else regime
        lines.append(
            f"| {name} | {fit.predicted} | {_pct(fit.median)} | {held.predicted} | {_pct(held.median)} | "
            f"{_pct(held.within)} | {_pct(BASELINE_HELDOUT.get(regime))} |"
        )
    heldout = [c for c in all_cases if c.split == "heldout"]
    ranked = [(r, summarize(c for c in heldout if c.regime == r)) for r in regimes(heldout)]
    worst = max((item for item in ranked if item[1].median is not None), key=lambda item: item[1].median or 0.0)
    lines += [
        "",
        f"Worst held-out regime: **{worst[0]}** (median {_pct(worst[1].median)}). Issue 15's gates: "
        + "; ".join(f"{g.name}: {'pass' if g.passed else 'FAIL'} ({g.value})" for g in gates(all_cases))
        + ".",
        "",
        SUMMARY_END,
    ]
    return "\n".join(lines)


def documented_section(text: str, start: str = START, end: str = END) -> str | None:
    if start not in text or end not in text:
        return None
    return start + text.split(start, 1)[1].split(end, 1)[0] + end


def with_section(text: str, section: str) -> str:
    current = documented_section(text)
    if current is not None:
        return text.replace(current, section)
    if INSERT_BEFORE in text:
        return text.replace(INSERT_BEFORE, section + "\n\n" + INSERT_BEFORE, 1)
    return text.rstrip("\n") + "\n\n" + section + "\n"


def main(argv: list[str]) -> int:
    section = render()
    summary = render_summary()
    text = DOC.read_text(encoding="utf-8")
    readme = README.read_text(encoding="utf-8")
    if "--check" in argv:
        current = documented_section(text) == section and documented_section(readme, SUMMARY_START, SUMMARY_END) == summary
        state = "current" if current else "stale: run python tests/validation/published_speed_cases.py"
        print(f"{DOC.name}, {README.name}: {state}")
        return 0 if current else 1
    print(section)
    DOC.write_text(with_section(text, section), encoding="utf-8")
    old = documented_section(readme, SUMMARY_START, SUMMARY_END)
    if old is None:
        raise SystemExit(f"{README.name} has no {SUMMARY_START} ... {SUMMARY_END} markers")
    README.write_text(readme.replace(old, summary), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
