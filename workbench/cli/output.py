"""What the CLI writes: strict JSON documents, CSV cells, and text safe for a terminal.

* JSON is strict (RFC 8259): ``NaN`` and ``Infinity`` are not JSON, so a non-finite number is
  written as ``null`` and a ``non-finite-value`` entry in the document's ``warnings`` names its
  key. ``allow_nan=False`` makes any value that escaped that walk an error, never bad output.
* Text for a terminal never carries control characters: a name read from a file or a flag could
  hold an escape sequence that retitles, clears or rewrites the terminal. Every character of
  Unicode category Cc (C0, DEL, C1) except newline and tab, the bidirectional overrides and the
  Unicode line separators, is
  written as its Python escape (``\\x1b``, ``\\u202e``). :class:`EscapingWriter` applies this to
  everything the CLI prints.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Iterator
from typing import Any, TextIO

#: Integers with more bits than this are written as null: Python refuses to turn integers of over
#: 4,300 digits into text, and no figure of the workbench comes near 10^300.
_MAX_INT_BITS = 1000

# Control characters (category Cc) except \n and \t, plus the bidirectional embedding/override
# and isolate characters that can reorder what a terminal shows ("Trojan Source").
_UNSAFE = [c for c in range(0x20) if c not in (0x09, 0x0A)] + list(range(0x7F, 0xA0))
_UNSAFE += list(range(0x202A, 0x202F)) + list(range(0x2066, 0x206A))
_UNSAFE += [0x2028, 0x2029]  # line and paragraph separators: a one-line message must stay one line
_ESCAPES = {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in _UNSAFE}


def escape_control(text: str) -> str:
    """``text`` with every terminal control character written as its escape (``\\x1b``)."""
    return text.translate(_ESCAPES)


def one_line(text: str) -> str:
    """A message as one line: a newline inside it (a key read from a file, say) is written ``\\n``."""
    return text.replace("\r\n", "\\n").replace("\n", "\\n")


class EscapingWriter(io.TextIOBase):
    """A text stream that escapes control characters on their way to ``target``."""

    def __init__(self, target: TextIO) -> None:
        super().__init__()
        self.target = target

    def write(self, text: str) -> int:  # type: ignore[override]
        self.target.write(text.translate(_ESCAPES))
        return len(text)

    def flush(self) -> None:
        self.target.flush()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.target, "encoding", None) or "utf-8"

    def isatty(self) -> bool:
        return bool(getattr(self.target, "isatty", lambda: False)())

    def fileno(self) -> int:
        return self.target.fileno()


def finite_or_none(value: Any) -> Any:
    """``value``, or None when it is a float that is NaN or infinite (a CSV cell, a JSON value)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def sanitize(document: Any) -> tuple[Any, list[str]]:
    """``document`` with non-finite floats (and integers too large to print) as None, and the
    dotted key of each one replaced."""
    replaced: list[str] = []

    def walk(value: Any, path: str) -> Any:
        if isinstance(value, float):
            if math.isfinite(value):
                return value
            replaced.append(path or "(document)")
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            if value.bit_length() > _MAX_INT_BITS:
                replaced.append(path or "(document)")
                return None
            return value
        if isinstance(value, dict):
            return {k: walk(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [walk(v, f"{path}[{i}]") for i, v in enumerate(value)]
        return value

    return walk(document, ""), replaced


def non_finite_warnings(keys: list[str]) -> list[dict[str, str]]:
    return [
        {
            "code": "non-finite-value",
            "message": f"{key} was not a finite number; written as null",
            "severity": "warning",
            "fix": "check the inputs this figure depends on (an extreme value gives an unbounded result)",
        }
        for key in keys
    ]


def strict_json(document: Any, indent: int | None = 2) -> str:
    """One strict JSON document: non-finite values as null, each named in ``warnings``."""
    clean, replaced = sanitize(document)
    if replaced:
        notes = non_finite_warnings(replaced)
        if isinstance(clean, dict):
            existing = clean.get("warnings")
            clean["warnings"] = [*existing, *notes] if isinstance(existing, list) else notes
        else:
            clean = {"value": clean, "warnings": notes}
    return json.dumps(clean, indent=indent, allow_nan=False, default=str)


def emit_json(document: Any, stream: TextIO) -> None:
    stream.write(strict_json(document))
    stream.write("\n")


def stream_json_object(head: dict[str, Any], list_key: str, items: Iterator[Any], stream: TextIO) -> int:
    """Write ``{**head, list_key: [items...]}`` item by item (a sweep's points never sit in memory
    all at once); non-finite values are handled as :func:`strict_json` does. Returns the count."""
    clean_head, replaced = sanitize(head)
    text = json.dumps(clean_head, indent=2, allow_nan=False, default=str)
    stream.write(text[:-2] if clean_head else "{")  # drop the closing "\n}" to go on
    stream.write(f",\n  {json.dumps(list_key)}: [" if clean_head else f"\n  {json.dumps(list_key)}: [")
    count = 0
    for item in items:
        clean, bad = sanitize(item)
        replaced += [f"{list_key}[{count}].{key}" for key in bad]
        stream.write(("\n    " if count == 0 else ",\n    ") + json.dumps(clean, allow_nan=False, default=str))
        count += 1
    stream.write("\n  ]" if count else "]")
    if replaced:
        stream.write(',\n  "warnings": ')
        stream.write(json.dumps(non_finite_warnings(replaced), allow_nan=False))
    stream.write("\n}\n")
    return count
