"""Request traces for the serving simulation: prompt and output lengths (and arrival times) per request.

Two formats, told apart by the first non-blank character:

* CSV with a header naming ``prompt_tokens`` and ``output_tokens`` (and optionally ``arrival_s``),
  one request per line; other columns are ignored;
* JSON Lines: one object per line with the same keys.

A trace comes from anywhere, so reading is bounded like every other input file: a regular file only
(a FIFO or ``/dev/zero`` is refused before reading), at most ``MAX_TRACE_BYTES``, UTF-8, and every
value checked (whole token counts from 1 to ``MAX_TOKENS``, finite arrival times >= 0). Every
refusal is one :class:`InputError` line naming the file and the line. Arrival times, when given,
must be given on every line; requests are replayed in arrival order.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.core.errors import InputError
from workbench.core.limits import MAX_PATH_CHARS, MAX_SIMULATED_REQUESTS, MAX_TOKENS, MAX_TRACE_BYTES

_KEYS = ("prompt_tokens", "output_tokens")


@dataclass(frozen=True)
class RequestTrace:
    """Requests in arrival order (the file's order when it gives no times)."""

    prompt_tokens: tuple[int, ...]
    output_tokens: tuple[int, ...]
    arrival_s: tuple[float, ...] | None  # None: the scenario's arrival process decides

    def __len__(self) -> int:
        return len(self.prompt_tokens)


def _read_bytes(path: str | Path, limit: int) -> bytes:
    file = Path(path)
    if len(str(path)) > MAX_PATH_CHARS:
        raise InputError(f"trace: the path is longer than {MAX_PATH_CHARS:,} characters")
    try:
        info = file.stat()
    except (OSError, ValueError) as exc:
        raise InputError(f"{file}: cannot read the trace ({getattr(exc, 'strerror', None) or exc})") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise InputError(f"{file}: cannot read the trace ({kind})")
    if info.st_size > limit:
        raise InputError(f"{file}: the trace is {info.st_size:,} bytes; the limit is {limit:,}")
    try:
        # O_NONBLOCK: a file swapped for a FIFO after the check does not block the open.
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise InputError(f"{file}: cannot read the trace (not a regular file)")
            raw = handle.read(limit + 1)
    except OSError as exc:
        raise InputError(f"{file}: cannot read the trace ({exc.strerror or exc})") from None
    if len(raw) > limit:
        raise InputError(f"{file}: the trace is larger than the limit of {limit:,} bytes")
    return raw


def _tokens(file: Path, line: int, name: str, value: Any) -> int:
    if isinstance(value, str):
        value = value.strip()
        try:
            value = float(value) if len(value) <= 32 else math.nan
        except ValueError:
            raise InputError(f"{file}: line {line}: {name} is not a number ({value[:20]!r})") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{file}: line {line}: {name} must be a number")
    if not (math.isfinite(value) and value == int(value) and 1 <= value <= MAX_TOKENS):
        raise InputError(f"{file}: line {line}: {name} must be a whole number from 1 to {MAX_TOKENS:,}, got {value}")
    return int(value)


def _seconds(file: Path, line: int, value: Any) -> float:
    if isinstance(value, str):
        value = value.strip()
        try:
            value = float(value) if len(value) <= 64 else math.nan
        except ValueError:
            raise InputError(f"{file}: line {line}: arrival_s is not a number ({value[:20]!r})") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{file}: line {line}: arrival_s must be a number")
    value = float(value)
    if not (math.isfinite(value) and 0 <= value <= 1e9):
        raise InputError(f"{file}: line {line}: arrival_s must be finite seconds from 0 to 1e9, got {value}")
    return value


def _rows(file: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    """(line number, record) pairs of a CSV or JSON Lines text."""
    if text.lstrip().startswith("{"):
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line, parse_constant=lambda c: math.nan)
            except (json.JSONDecodeError, RecursionError, ValueError):
                raise InputError(f"{file}: line {number}: not a JSON object") from None
            if not isinstance(record, dict):
                raise InputError(f"{file}: line {number}: not a JSON object")
            rows.append((number, record))
        return rows
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip().lower() for h in next(reader)]
    except StopIteration:
        return []
    except csv.Error as exc:
        raise InputError(f"{file}: line 1: not CSV ({exc})") from None
    if not set(_KEYS) <= set(header):
        raise InputError(f"{file}: line 1: the header must name prompt_tokens and output_tokens (CSV) "
                         "or each line be a JSON object")
    rows = []
    try:
        for cells in reader:
            if not any(c.strip() for c in cells):
                continue
            if len(cells) != len(header):
                raise InputError(f"{file}: line {reader.line_num}: {len(cells)} values for {len(header)} columns")
            rows.append((reader.line_num, dict(zip(header, cells, strict=True))))
    except csv.Error as exc:
        raise InputError(f"{file}: line {reader.line_num}: not CSV ({exc})") from None
    return rows


def read_trace(path: str | Path, limit: int = MAX_SIMULATED_REQUESTS) -> RequestTrace:
    """The first ``limit`` requests of a trace file, checked; InputError (one line) if unusable."""
    file = Path(path)
    raw = _read_bytes(path, MAX_TRACE_BYTES)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{file}: not UTF-8 text (byte {exc.start:,} cannot be decoded)") from None
    rows = _rows(file, text)
    if not rows:
        raise InputError(f"{file}: the trace holds no requests")
    rows = rows[:limit]
    prompt, output, arrival = [], [], []
    timed = "arrival_s" in rows[0][1] and rows[0][1]["arrival_s"] not in ("", None)
    for number, record in rows:
        for key in _KEYS:
            if key not in record:
                raise InputError(f"{file}: line {number}: {key} is missing")
        prompt.append(_tokens(file, number, "prompt_tokens", record["prompt_tokens"]))
        output.append(_tokens(file, number, "output_tokens", record["output_tokens"]))
        has_time = record.get("arrival_s") not in ("", None)
        if has_time != timed:
            raise InputError(f"{file}: line {number}: give arrival_s on every line or on none")
        if timed:
            arrival.append(_seconds(file, number, record["arrival_s"]))
    if not timed:
        return RequestTrace(tuple(prompt), tuple(output), None)
    order = sorted(range(len(arrival)), key=arrival.__getitem__)
    return RequestTrace(
        tuple(prompt[i] for i in order), tuple(output[i] for i in order), tuple(arrival[i] for i in order)
    )
