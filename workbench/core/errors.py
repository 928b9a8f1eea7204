"""Errors a user can cause. Each carries a message that can be shown as it is."""

from __future__ import annotations


class WorkbenchError(Exception):
    """Base of every error the workbench raises on purpose."""


class InputError(WorkbenchError):
    """Bad input from the user: a file, a flag, a field. Shown as one line; the CLI exits 2."""


class CatalogError(InputError):
    """A catalog file (shipped or user-supplied) is malformed or refers to something unknown."""


class ModelImportError(InputError):
    """A model file or folder cannot be imported (malformed config, no model, bad header)."""


def describe_validation_error(exc: Exception, context: str = "") -> str:
    """One readable line from a pydantic ValidationError (field path: message)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        parts = []
        for err in errors():
            loc = ".".join(str(p) for p in err.get("loc", ()) if p != "__root__")
            msg = err.get("msg", "invalid value")
            msg = msg.removeprefix("Value error, ")
            limit = (err.get("ctx") or {}).get("le")
            if err.get("type") == "less_than_equal" and isinstance(limit, int) and limit >= 1000:
                msg = f"more than the limit of {limit:,}"  # the workbench's limits on counts
            elif err.get("type") == "string_pattern_mismatch" and "\\x00" in str((err.get("ctx") or {}).get("pattern")):
                msg = "holds a NUL character"
            elif err.get("type") == "string_too_long":
                msg = f"longer than the limit of {(err.get('ctx') or {}).get('max_length', '?'):,} characters"
            parts.append(f"{loc}: {msg}" if loc else msg)
        text = "; ".join(parts)
    else:
        text = str(exc)
    return f"{context}: {text}" if context else text
