"""Command lines as shell scripts a person can read: one option (and its values) per line."""

from __future__ import annotations

import shlex


def command(argv: list[str]) -> str:
    """``argv`` quoted for a POSIX shell, broken before each ``--option`` with a backslash."""
    groups: list[list[str]] = [[]]
    for token in argv:
        if token.startswith("--") and groups[-1]:
            groups.append([])
        groups[-1].append(shlex.quote(token))
    return " \\\n  ".join(" ".join(group) for group in groups) + "\n"


def script(header: str, body: str) -> str:
    return "#!/usr/bin/env bash\n" + header + "set -euo pipefail\n" + body
