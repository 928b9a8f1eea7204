"""Upper limits on what a scenario may ask for, checked where input enters the workbench.

Each limit is far beyond any real job (the largest published training runs use tens of thousands
of GPUs; the longest context windows in 2025 are about 10M tokens) but small enough that every
search, sweep and layout enumeration over them finishes in seconds and no number overflows a
float. A value beyond a limit is refused with a message naming the limit, never clamped.
"""

from __future__ import annotations

#: GPUs in one job, and any one parallel degree (TP, PP, DP, EP): 2^20.
MAX_GPUS = 1_048_576
#: Tokens per sequence (prompt, training sample, or generated tokens): 2^24, above 10M contexts.
MAX_TOKENS = 16_777_216
#: Sequences per step on one replica (micro-batch or concurrent requests): 2^20.
MAX_BATCH = 1_048_576
#: Sequences per optimizer step over all replicas: 2^30.
MAX_GLOBAL_BATCH = 1_073_741_824
#: Tokens to train on: 10^18, about 60,000 times Llama 3's 15T tokens.
MAX_TRAIN_TOKENS = 1e18
#: LoRA rank, quantization group, KV page, prefill chunk: 2^20 each.
MAX_SIZE_KNOB = 1_048_576
#: Model chunks per pipeline rank (interleaved schedule).
MAX_VIRTUAL_STAGES = 1024
#: Tokens a speculative draft proposes per step.
MAX_SPECULATIVE_TOKENS = 256
#: Parameters of a speculative draft model: 10^15.
MAX_DRAFT_PARAMS = 1e15
#: Any price or money figure, USD (per GPU-hour, per GPU, per kWh): 10^9.
MAX_USD = 1e9
#: Names (scenario, project, author, comparison) and ids, in characters.
MAX_NAME_CHARS = 200
#: A model reference may be a path to a config.json: the usual PATH_MAX.
MAX_PATH_CHARS = 4096
#: Scenario files larger than this are refused before they are read (16 MiB).
MAX_SCENARIO_FILE_BYTES = 16 * 1024 * 1024
#: Nesting depth of a scenario file's objects and lists (a scenario needs 3).
MAX_FILE_DEPTH = 32
#: Points in one sweep (the product of the axes' lengths); about 90 s of work on two cores.
MAX_SWEEP_POINTS = 1_000_000
#: Values on one sweep axis.
MAX_AXIS_VALUES = 10_000
#: Requests per second arriving at one serving scenario (a million: far past any one deployment).
MAX_ARRIVAL_RATE = 1e6
#: Coefficient of variation of arrival gaps (10: bursts of ~100 requests at once).
MAX_ARRIVAL_CV = 10.0
#: Requests one serving simulation runs: 100,000 take about a second (10,000 about 0.1 s).
MAX_SIMULATED_REQUESTS = 100_000
#: Latency targets (TTFT, TPOT), seconds: an hour.
MAX_SLO_S = 3600.0
#: Request trace files larger than this are refused before they are read (64 MiB, ~2M requests).
MAX_TRACE_BYTES = 64 * 1024 * 1024
