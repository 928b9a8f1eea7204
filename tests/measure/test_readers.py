"""Every supported result format reads into measurements in canonical units; a bad file is one
clear error naming the file, never a partial result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.core.scenario import Scenario
from workbench.measure import MeasurementError, read_measurements
from workbench.measure.scenario_match import catalog_gpu, catalog_model, scenario_for

DATA = Path(__file__).parents[1] / "data" / "measurements"
MLPERF = DATA / "mlperf" / "DGX-H100_H100-SXM-80GBx8_TRT" / "llama2-70b-99.9" / "Offline" / "mlperf_log_summary.txt"


def test_vllm_bench_serve_result() -> None:
    [m] = read_measurements(DATA / "vllm_bench_serve.json")
    assert m.source_format == "vllm-bench-serve" and m.file_name == "vllm_bench_serve.json"
    assert m.model == "meta-llama/Llama-3.1-8B-Instruct" and m.engine == "vllm"
    assert m.input_tokens == 1000 and m.output_tokens == 1000 and m.concurrency == 64
    assert m.request_rate is None  # "inf": every request at once, bounded by the concurrency
    assert m.metrics["ttft_mean_s"] == pytest.approx(0.0953)
    assert m.metrics["ttft_p99_s"] == pytest.approx(0.1719)
    assert m.metrics["tpot_p50_s"] == pytest.approx(0.01158)
    assert m.metrics["output_tokens_per_s"] == pytest.approx(640000 / 120.5, rel=1e-6)


def test_sglang_jsonl_has_one_measurement_per_line() -> None:
    runs = read_measurements(DATA / "sglang_bench_serving.jsonl")
    assert [m.concurrency for m in runs] == [16, 64]
    assert all(m.engine == "sglang" and m.input_tokens == 1024 and m.output_tokens == 256 for m in runs)
    assert runs[1].metrics["tpot_mean_s"] == pytest.approx(0.0295)


@pytest.mark.parametrize(("name", "fmt"), [("aiperf_profile_export.json", "aiperf"),
                                           ("genai_perf_profile_export.json", "genai-perf")])
def test_profile_exports(name: str, fmt: str) -> None:
    [m] = read_measurements(DATA / name)
    assert m.source_format == fmt
    assert m.input_tokens == 2048 and m.output_tokens == 512 and m.concurrency == 32
    assert m.metrics["ttft_p99_s"] == pytest.approx(0.2884)
    assert m.metrics["tpot_mean_s"] == pytest.approx(0.01871)
    if fmt == "aiperf":
        assert catalog_gpu(m.gpu or "") == "h100-sxm"  # "NVIDIA H100 80GB HBM3" from the GPU telemetry


def test_trtllm_bench_report() -> None:
    [m] = read_measurements(DATA / "trtllm_bench_report.json")
    assert (m.engine, m.tp, m.pp, m.num_gpus) == ("tensorrt-llm", 1, 1, 1)
    assert m.metrics["output_tokens_per_s"] == pytest.approx(3000 * 128 / 13.562, rel=1e-6)
    assert catalog_model(m.model or "") == "llama-3.1-8b"


def test_published_mlperf_summary_with_its_system_folder() -> None:
    [m] = read_measurements(MLPERF)
    assert m.metrics == {"requests_per_s": 84.4792, "output_tokens_per_s": 24524.9}
    assert (m.gpu, m.num_gpus) == ("H100-SXM-80GB", 8) and catalog_gpu(m.gpu) == "h100-sxm"
    assert m.output_tokens == pytest.approx(290.31, abs=0.01)


def test_training_logs_drop_the_warm_up_step() -> None:
    [megatron] = read_measurements(DATA / "megatron_train.log")
    assert megatron.workload == "training"
    assert megatron.metrics["step_time_s"] == pytest.approx(2.5050)  # median of 2511.8, 2498.3, 2505.0 ms
    [titan] = read_measurements(DATA / "torchtitan_train.log")  # colour codes and all
    assert titan.metrics["train_tokens_per_s_per_gpu"] == 7871  # median of 7,812 7,905 7,871; step 1 left out


def test_csv_rows_and_milliseconds() -> None:
    rows = read_measurements(DATA / "measurements.csv")
    assert [r.record for r in rows] == ["line 2", "line 3"]
    assert rows[0].metrics["ttft_mean_s"] == pytest.approx(0.0615)
    assert rows[1].gpu == "h100-sxm" and rows[1].concurrency == 64


def _vllm(**changes: object) -> str:
    doc = json.loads((DATA / "vllm_bench_serve.json").read_text())
    for key, value in changes.items():
        if value is None:
            doc.pop(key)
        else:
            doc[key] = value
    return json.dumps(doc)


def _aiperf_with_unit(unit: str) -> str:
    doc = json.loads((DATA / "aiperf_profile_export.json").read_text())
    doc["output_token_throughput"]["unit"] = unit
    return json.dumps(doc)


BAD_FILES: dict[str, tuple[str, str, str]] = {
    "plain text": ("notes.txt", "we ran it and it was fast\n", "not a result file this workbench reads"),
    "empty": ("empty.json", "  \n", "empty file"),
    "json array": ("list.json", "[1, 2]", "not an object of benchmark results"),
    "json without known fields": ("other.json", '{"accuracy": 0.9}', "no benchmark result fields"),
    "missing duration": ("vllm.json", _vllm(duration=None), "missing field 'duration'"),
    "throughput is not a number": ("vllm.json", _vllm(output_throughput="fast"), "'output_throughput'"),
    "units do not add up": ("vllm.json", _vllm(output_throughput=2 * 640000 / 120.5), "do not add up"),
    "requests do not add up": ("vllm.json", _vllm(completed=320), "request_throughput"),
    "negative duration": ("vllm.json", _vllm(duration=-1.0), "more than 0"),
    "aiperf unit unknown": ("p.json", _aiperf_with_unit("tokens/min"), "'output_token_throughput' is in 'tokens/min'"),
    "broken jsonl line": ("s.jsonl", '{"backend": "sglang", "random_input_len": 1}\n{"backend": \n', "line 2"),
    "invalid mlperf run": ("mlperf_log_summary.txt", MLPERF.read_text().replace("Result is : VALID",
                                                                                  "Result is : INVALID"), "INVALID"),
    "mlperf without samples": ("mlperf_log_summary.txt", MLPERF.read_text().replace("Samples per second", "Samples"),
                               "missing line 'Samples per second'"),
    "csv unknown column": ("m.csv", "model,ttft_mean_ss\nx,1\n", "unknown column 'ttft_mean_ss'"),
    "csv no metric": ("m.csv", "model,gpu\nx,h100-sxm\n", "no measured metric column"),
    "csv bad number": ("m.csv", "model,output_tokens_per_s\nx,1\ny,lots\n", "line 3"),
    "csv negative metric": ("m.csv", "output_tokens_per_s\n-5\n", "positive"),
    "csv throughput vs duration": ("m.csv", "output_tokens_per_s,duration_s,total_output_tokens\n100,10,2000\n",
                                   "do not add up"),
    "megatron log with a zero time": ("train.log", " iteration 1/ 10 | elapsed time per iteration (ms): 5.0 |\n"
                                      " iteration 2/ 10 | elapsed time per iteration (ms): 0 |\n", "more than 0"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_files_are_one_clear_error(tmp_path: Path, case: str) -> None:
    name, text, needle = BAD_FILES[case]
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(MeasurementError) as info:
        read_measurements(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(name), message
    assert needle in message, message


def test_unreadable_bytes_and_missing_files(tmp_path: Path) -> None:
    binary = tmp_path / "result.json"
    binary.write_bytes(b"\xff\xfe{\x00")
    with pytest.raises(MeasurementError, match="not UTF-8"):
        read_measurements(binary)
    with pytest.raises(MeasurementError, match="no such file"):
        read_measurements(tmp_path / "absent.json")
    with pytest.raises(MeasurementError, match="not a regular file"):
        read_measurements(tmp_path)


def test_the_file_must_match_the_scenario_gpu_and_model() -> None:
    [mlperf] = read_measurements(MLPERF)
    base = Scenario(name="plan", model="llama-2-70b", gpu="a100-80gb-sxm", num_gpus=8)
    with pytest.raises(MeasurementError, match="measured on h100-sxm .* scenario 'plan' uses a100-80gb-sxm"):
        scenario_for(mlperf, base)
    [vllm] = read_measurements(DATA / "vllm_bench_serve.json")
    with pytest.raises(MeasurementError, match="is for llama-3.1-70b"):
        scenario_for(vllm, Scenario(name="plan", model="llama-3.1-70b", gpu="h100-sxm"))
    tied = scenario_for(vllm, Scenario(name="plan", model="llama-3.1-8b", gpu="h100-sxm"))
    assert (tied.seq_len, tied.gen_len, tied.batch_size, tied.serving.engine.value) == (1000, 1000, 64, "vllm")


def test_a_gpu_the_catalog_lacks_is_named() -> None:
    with pytest.raises(MeasurementError, match="GPU 'Acme Tensor 9000' is not in the catalog"):
        catalog_gpu("Acme Tensor 9000")
    assert catalog_gpu("NVIDIA A100-SXM4-40GB") == "a100-40gb-sxm"
    assert catalog_gpu("NVIDIA H100 PCIe") == "h100-pcie"
