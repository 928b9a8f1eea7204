"""Command lines as shell scripts a person can read: one option (and its values) per line."""

from __future__ import annotations

import re
import shlex

#: ``${NAME}``: an environment variable the shell must expand on each node (double quotes keep it one word).
_ENV = re.compile(r"^\$\{[A-Z_][A-Z0-9_]*\}$")


def command(argv: list[str]) -> str:
    """``argv`` quoted for a POSIX shell, broken before each ``--option`` (and a script) with a backslash."""
    groups: list[list[str]] = [[]]
    for token in argv:
        if (token.startswith("--") or token.endswith(".py")) and groups[-1]:
            groups.append([])
        groups[-1].append(f'"{token}"' if _ENV.match(token) else shlex.quote(token))
    return " \\\n  ".join(" ".join(group) for group in groups) + "\n"


def script(header: str, body: str) -> str:
    return "#!/usr/bin/env bash\n" + header + "set -euo pipefail\n" + body
