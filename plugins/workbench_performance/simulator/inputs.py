"""What a simulation takes: a step-time model, a scheduling policy and a workload, per configuration.

Everything is a structure of arrays. C configurations are simulated together: each field of
:class:`StepModel` and :class:`Policy` is a scalar (shared) or an array of C values, and a
:class:`Workload` holds R requests as arrays of R (shared by every configuration) or C x R.
:func:`prepare` checks them once and broadcasts them to the shapes the loop uses, so the loop
itself never validates and never builds a Python object per request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

BATCHING = ("static", "continuous", "chunked")
STATIC, CONTINUOUS, CHUNKED = 0, 1, 2
#: "No limit" for integer knobs (unlimited KV blocks, an unchunked prefill). Far below int64's
#: range so that sums of a few of them cannot overflow.
NO_LIMIT = 2**52


@dataclass(frozen=True)
class StepModel:
    """The time of one engine iteration, in seconds, per configuration (scalars or arrays of C).

    time = overhead_s
         + prefill_token_s * (prompt tokens computed in the iteration)
         + decode_seq_s    * (sequences generating one token in the iteration)
         + context_token_s * (sum over those decode sequences of their KV length after the step)
         + prefill_pair_s  * (sum over prefill chunks of query x key pairs, causal)

    The first four are the usual linear serving model (weights read once per iteration, GEMM
    work per token, KV read per decode sequence); the last is the quadratic attention of long
    prompts. A per-operator model supplies these arrays; the simulator only combines them.
    """

    overhead_s: Any
    prefill_token_s: Any = 0.0
    decode_seq_s: Any = 0.0
    context_token_s: Any = 0.0
    prefill_pair_s: Any = 0.0


@dataclass(frozen=True)
class Policy:
    """The scheduler's knobs, per configuration (scalars or arrays of C).

    batching: "static" (a batch of up to max_batch requests is formed when the engine is idle
    and runs until its longest request ends; KV for the whole output is reserved at admission,
    so no preemption; the token budget does not apply),
    "continuous" (iteration-level batching; an iteration either prefills newly admitted whole
    prompts or decodes, prefills first, as vLLM's original scheduler), or "chunked" (every
    iteration decodes all running sequences and fills the rest of the token budget with prefill
    chunks of at most ``prefill_chunk`` tokens per request, as Sarathi-Serve and vLLM's chunked
    prefill do). ``token_budget`` caps the tokens computed per iteration (a whole prompt longer
    than the budget is still admitted when it is alone in an iteration, so nothing starves).
    ``kv_blocks`` of ``block_size`` tokens each (None: unlimited) bound admission; a running
    request takes a block whenever its context crosses a block boundary, and when none is free
    the most recently arrived running request is preempted and later recomputed.
    ``prefix_hit`` is the fraction of each prompt found in the prefix cache (not computed).
    """

    batching: Any = "continuous"
    max_batch: Any = 256
    token_budget: Any = 8192
    prefill_chunk: Any = None
    block_size: Any = 16
    kv_blocks: Any = None
    prefix_hit: Any = 0.0


@dataclass(frozen=True)
class Workload:
    """R requests: prompt and output lengths, and either arrival times or a closed loop of users.

    ``arrival_s`` (open loop) must be non-decreasing along each configuration's row: requests are
    served first come, first served in index order. ``users`` (closed loop) keeps that many
    requests in the system: the first ``users`` arrive at t = 0 and each completion releases the
    next request at once (no think time).
    """

    prompt_tokens: Any
    output_tokens: Any
    arrival_s: Any = None
    users: Any = None


@dataclass(frozen=True)
class Prepared:
    """Validated arrays: per configuration (C,) and per request (C, R), read-only where shared."""

    c: int
    r: int
    overhead: np.ndarray
    prefill_token: np.ndarray
    decode_seq: np.ndarray
    context_token: np.ndarray
    prefill_pair: np.ndarray
    mode: np.ndarray
    max_batch: np.ndarray
    token_budget: np.ndarray
    chunk: np.ndarray
    block_size: np.ndarray
    kv_blocks: np.ndarray
    prefix_hit: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    arrival: np.ndarray | None
    users: np.ndarray | None


def one(p: Prepared, i: int) -> Prepared:
    """Configuration i of prepared inputs, as prepared inputs of one configuration."""
    fields = {}
    for name, value in vars(p).items():
        if isinstance(value, np.ndarray):
            value = value[i : i + 1]
        fields[name] = value
    fields["c"] = 1
    return Prepared(**fields)


def _whole(arr: np.ndarray) -> bool:
    """Integers, or floats that hold whole numbers (1.0 is fine, 1.5 and nan are not)."""
    if np.issubdtype(arr.dtype, np.integer):
        return True
    if not np.issubdtype(arr.dtype, np.floating):
        return False
    return bool(np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)))


def _per_config(name: str, value: Any, kind: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.ndim > 1:
        raise ValueError(f"{name} must be a number or a 1-D array (one value per configuration)")
    if kind == "int":
        if arr.size and not _whole(arr):
            raise ValueError(f"{name} must be a whole number, got {value!r}")
        return np.atleast_1d(arr.astype(np.int64))
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    arr = np.atleast_1d(arr.astype(np.float64))
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return arr


def _per_request(name: str, value: Any, kind: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.ndim not in (1, 2):
        raise ValueError(f"{name} must be an array of R requests or C x R (configurations x requests)")
    if kind == "int":
        if arr.size and not _whole(arr):
            raise ValueError(f"{name} must hold whole numbers of tokens")
        arr = arr.astype(np.int64)
    else:
        arr = arr.astype(np.float64)
    return arr if arr.ndim == 2 else arr[None, :]


def _modes(batching: Any) -> np.ndarray:
    names = [batching] if isinstance(batching, str) else list(np.asarray(batching, dtype=object).ravel())
    codes = []
    for name in names:
        if name not in BATCHING:
            raise ValueError(f"batching must be one of {', '.join(BATCHING)}; got {name!r}")
        codes.append(BATCHING.index(name))
    return np.array(codes, dtype=np.int64)


def _count(arrays: dict[str, np.ndarray], axis_len: Any) -> int:
    sizes = {name: axis_len(a) for name, a in arrays.items()}
    many = {s for s in sizes.values() if s != 1}
    if len(many) > 1:
        detail = ", ".join(f"{name}: {s}" for name, s in sizes.items() if s != 1)
        raise ValueError(f"per-configuration inputs disagree on the number of configurations ({detail})")
    return many.pop() if many else 1


def prepare(step: StepModel, policy: Policy, workload: Workload) -> Prepared:
    """Check every input and broadcast it; raises ValueError with one clear sentence."""
    cfg = {
        "overhead_s": _per_config("overhead_s", step.overhead_s, "float"),
        "prefill_token_s": _per_config("prefill_token_s", step.prefill_token_s, "float"),
        "decode_seq_s": _per_config("decode_seq_s", step.decode_seq_s, "float"),
        "context_token_s": _per_config("context_token_s", step.context_token_s, "float"),
        "prefill_pair_s": _per_config("prefill_pair_s", step.prefill_pair_s, "float"),
        "batching": _modes(policy.batching),
        "max_batch": _per_config("max_batch", policy.max_batch, "int"),
        "token_budget": _per_config("token_budget", policy.token_budget, "int"),
        "prefill_chunk": _per_config(
            "prefill_chunk", NO_LIMIT if policy.prefill_chunk is None else policy.prefill_chunk, "int"
        ),
        "block_size": _per_config("block_size", policy.block_size, "int"),
        "kv_blocks": _per_config(
            "kv_blocks", NO_LIMIT if policy.kv_blocks is None else policy.kv_blocks, "int"
        ),
        "prefix_hit": _per_config("prefix_hit", policy.prefix_hit, "float"),
    }
    if (workload.arrival_s is None) == (workload.users is None):
        raise ValueError(
            "a workload needs either arrival times (open loop) or a number of users (closed loop)"
        )
    req = {
        "prompt_tokens": _per_request("prompt_tokens", workload.prompt_tokens, "int"),
        "output_tokens": _per_request("output_tokens", workload.output_tokens, "int"),
    }
    if workload.arrival_s is not None:
        req["arrival_s"] = _per_request("arrival_s", workload.arrival_s, "float")
    else:
        cfg["users"] = _per_config("users", workload.users, "int")
    r_sizes = {a.shape[1] for a in req.values()}
    if len(r_sizes) > 1:
        raise ValueError(f"request arrays disagree on the number of requests ({sorted(r_sizes)})")
    r = r_sizes.pop()
    if r == 0:
        raise ValueError("a workload needs at least one request")
    c = _count({**cfg, **req}, lambda a: a.shape[0])
    for name, arr in cfg.items():
        if arr.shape[0] == 0:
            raise ValueError(f"{name} is empty; give one value or one per configuration")

    def low(name: str, bound: float, strict: bool, what: str) -> None:
        bad = cfg[name] <= bound if strict else cfg[name] < bound
        if np.any(bad):
            raise ValueError(f"{name} must be {what}, got {cfg[name][np.argmax(bad)]}")

    low("overhead_s", 0.0, True, "> 0 (every iteration takes time)")
    for name in ("prefill_token_s", "decode_seq_s", "context_token_s", "prefill_pair_s"):
        low(name, 0.0, False, ">= 0")
    for name in ("max_batch", "token_budget", "prefill_chunk", "block_size", "kv_blocks"):
        low(name, 1, False, ">= 1")
    if np.any((cfg["prefix_hit"] < 0) | (cfg["prefix_hit"] >= 1)):
        raise ValueError("prefix_hit must be a fraction in [0, 1)")
    if "users" in cfg:
        low("users", 1, False, ">= 1")
    b = np.broadcast_arrays(cfg["max_batch"], cfg["token_budget"], cfg["batching"])
    if np.any((b[2] == CHUNKED) & (b[1] < b[0])):
        # Chunked prefill schedules every running decode first; a budget below max_batch could
        # leave a running sequence unscheduled with nothing to preempt it.
        raise ValueError("token_budget must be >= max_batch with chunked prefill")
    for name in ("prompt_tokens", "output_tokens"):
        if np.any(req[name] < 1):
            raise ValueError(f"{name} must be >= 1 for every request")
    if "arrival_s" in req:
        arr = req["arrival_s"]
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise ValueError("arrival_s must be finite and >= 0")
        if np.any(np.diff(arr, axis=1) < 0):
            raise ValueError("arrival_s must be non-decreasing (sort the requests by arrival time)")

    def full(a: np.ndarray) -> np.ndarray:
        return np.broadcast_to(a, (c,)).copy()

    def rows(a: np.ndarray) -> np.ndarray:
        return np.broadcast_to(a, (c, r))

    prompt, output = rows(req["prompt_tokens"]), rows(req["output_tokens"])
    mode, block, blocks = full(cfg["batching"]), full(cfg["block_size"]), full(cfg["kv_blocks"])
    # A request's context peaks at prompt + output - 1 tokens (the last token is returned, never
    # written to the cache); recomputation after preemption never exceeds it either. A request
    # that cannot fit alone would wait for ever, so it is refused here.
    peak = -(-(prompt + output - 1) // block[:, None])
    over = peak > blocks[:, None]
    if np.any(over):
        ci, ri = np.argwhere(over)[0]
        raise ValueError(
            f"request {ri} of configuration {ci} needs {peak[ci, ri]} KV blocks at its full length, "
            f"but only {blocks[ci]} exist"
        )
    chunk = np.where(mode == CHUNKED, full(cfg["prefill_chunk"]), NO_LIMIT)
    if policy.prefill_chunk is None:
        # vLLM's default: a chunk may use the whole budget.
        chunk = np.where(mode == CHUNKED, full(cfg["token_budget"]), chunk)
    return Prepared(
        c=c,
        r=r,
        overhead=full(cfg["overhead_s"]),
        prefill_token=full(cfg["prefill_token_s"]),
        decode_seq=full(cfg["decode_seq_s"]),
        context_token=full(cfg["context_token_s"]),
        prefill_pair=full(cfg["prefill_pair_s"]),
        mode=mode,
        max_batch=full(cfg["max_batch"]),
        token_budget=full(cfg["token_budget"]),
        chunk=chunk,
        block_size=block,
        kv_blocks=blocks,
        prefix_hit=full(cfg["prefix_hit"]),
        prompt=prompt,
        output=output,
        arrival=rows(req["arrival_s"]) if "arrival_s" in req else None,
        users=full(cfg["users"]) if "users" in cfg else None,
    )
