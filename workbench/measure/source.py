"""Reading a result file's text (bounded) and the small checks every reader shares."""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path
from typing import Any

from workbench.measure.errors import MeasurementError

#: A benchmark result or a training log of this size is already unusual; bigger is refused.
MAX_FILE_BYTES = 64 * 1024 * 1024
#: Relative mismatch allowed between a stated rate and count / duration (tools round to 2-4 digits).
RATE_TOLERANCE = 0.03


def read_text(path: str | Path) -> str:
    file = Path(path)
    try:
        info = file.stat()
    except FileNotFoundError:
        raise MeasurementError(f"{file}: no such file") from None
    except OSError as exc:
        raise MeasurementError(f"{file}: cannot read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(info.st_mode):
        raise MeasurementError(f"{file}: not a regular file")
    if info.st_size > MAX_FILE_BYTES:
        raise MeasurementError(f"{file}: {info.st_size:,} bytes, more than the {MAX_FILE_BYTES // 2**20} MiB "
                               "a result file may have")
    try:
        with open(file, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise MeasurementError(f"{file}: cannot read ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise MeasurementError(f"{file}: not UTF-8 text (a result file is JSON, JSON Lines, CSV or a text log)") from None


def display_name(path: str | Path) -> str:
    return os.path.basename(str(path)) or str(path)


def number(doc: dict[str, Any], key: str, where: str, *, required: bool = True) -> float | None:
    """``doc[key]`` as a finite number; a missing or non-number value is an error if ``required``."""
    value = doc.get(key)
    if value is None:
        if required:
            raise MeasurementError(f"{where}: missing field '{key}'")
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise MeasurementError(f"{where}: field '{key}' is {str(value)[:40]!r}, not a finite number")
    return float(value)


def positive(value: float | None, key: str, where: str) -> float | None:
    if value is not None and value <= 0:
        raise MeasurementError(f"{where}: field '{key}' is {value:g}; it must be more than 0")
    return value


def check_rate(where: str, what: str, stated: float | None, count: float | None, duration: float | None) -> None:
    """A stated rate must be count / duration: a file whose units do not add up is refused."""
    if stated is None or count is None or duration is None or duration <= 0:
        return
    expected = count / duration
    if expected <= 0 or abs(stated / expected - 1.0) > RATE_TOLERANCE:
        raise MeasurementError(
            f"{where}: {what} {stated:,.4g}/s does not match {count:,.6g} / {duration:,.6g} s = {expected:,.4g}/s; "
            "the file's units do not add up"
        )


def engine_name(text: object) -> str | None:
    """A serving engine id the scenario knows, from how a tool names it; None if unknown."""
    if not isinstance(text, str):
        return None
    key = text.lower().replace("_", "-")
    if key.startswith("vllm"):
        return "vllm"
    if key.startswith("sglang"):
        return "sglang"
    if key in ("trt", "trtllm", "tensorrt-llm", "tensorrt", "trt-llm") or key.startswith("tensorrt"):
        return "tensorrt-llm"
    return None
