"""The ``vllm bench serve`` command that checks a serving plan's TTFT, TPOT and throughput.

It drives any of the three servers through their OpenAI-compatible completions endpoint, with
prompts and outputs of the plan's lengths (``--ignore-eos`` makes every output as long as the
plan's), under the plan's load: a closed loop of ``batch`` users (``--max-concurrency``) or an
open arrival rate whose gaps have the plan's variation (``--burstiness`` is the gamma shape,
1 / CV^2, as the benchmark draws its gaps).
"""

from __future__ import annotations

from workbench_export.formats import ENGINES
from workbench_export.plan import Notes, ServingPlan

ENGINE, VERSION, SOURCE = ENGINES["bench"]


def bench_argv(plan: ServingPlan, notes: Notes, port: int, result_file: str) -> list[str]:
    s = plan.scenario
    serving = s.serving
    argv = ["vllm", "bench", "serve",
            "--backend", "openai",
            "--endpoint", "/v1/completions",
            "--host", "127.0.0.1",
            "--port", str(port),
            "--model", plan.model,
            "--dataset-name", "random",
            "--random-input-len", str(s.seq_len),
            "--random-output-len", str(s.gen_len),
            "--random-range-ratio", "0",
            "--ignore-eos",
            "--num-prompts", str(serving.requests)]
    if serving.arrival_rate is None:
        argv += ["--max-concurrency", str(s.batch_size)]
    else:
        argv += ["--request-rate", f"{serving.arrival_rate:g}",
                 "--burstiness", f"{1.0 / serving.arrival_cv ** 2:g}"]
    argv += ["--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,90,99"]
    goodput = []
    if serving.slo_ttft_s is not None:
        goodput.append(f"ttft:{serving.slo_ttft_s * 1000:g}")
    if serving.slo_tpot_s is not None:
        goodput.append(f"tpot:{serving.slo_tpot_s * 1000:g}")
    if goodput:
        argv += ["--goodput", *goodput]
    argv += ["--save-result", "--result-filename", result_file]
    if serving.trace is not None:
        notes.add(f"trace={serving.trace}: the plan replayed that trace; the benchmark sends random prompts of "
                  "the scenario's lengths (--dataset-name custom replays a JSONL of prompts)")
    if s.images_per_request:
        notes.add("images_per_request: the random dataset sends text only (random-mm sends images)")
    return argv
