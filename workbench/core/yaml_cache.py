"""Safe YAML loading, with the parsed documents kept in a per-user cache.

The shipped catalogs are YAML for people to read and edit, but building Python objects from YAML
is slow even with libyaml (the accelerator catalog alone takes about 20 ms), and every command
reads them again. So a parsed document is pickled into the user's cache folder under a hash of the
file's *text*: an edited file has another hash and is parsed afresh, so the cache is never stale.

The cache is only ever a shortcut. Any trouble with it (no folder, a full or read-only disk, a
damaged or foreign file) is ignored and the text is parsed as if there were no cache. Unpickling
is restricted to the types a safe YAML loader itself builds (plain containers, numbers, text,
dates), so a file planted in the cache cannot run code. ``WORKBENCH_CACHE_DIR`` moves the cache;
``WORKBENCH_CACHE_DIR=off`` turns it off.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import pickle
import secrets
from pathlib import Path
from typing import Any

import platformdirs
import yaml

log = logging.getLogger(__name__)

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: Part of every key: a new PyYAML or a new cache format never reads an old entry.
_FORMAT = f"yaml-cache-1 {yaml.__version__} {LOADER.__name__}"
#: Entries kept; the oldest are removed past this (the shipped catalogs need a handful).
MAX_ENTRIES = 64
#: Types a safe loader builds besides the ones pickle writes without naming a class.
_ALLOWED = {
    ("datetime", "date"),
    ("datetime", "datetime"),
    ("datetime", "timezone"),
    ("datetime", "timedelta"),
}


def cache_dir() -> Path | None:
    """The cache folder, or None when caching is off."""
    override = os.environ.get("WORKBENCH_CACHE_DIR")
    if override is not None:
        return None if override.strip().lower() in ("", "off") else Path(override)
    return Path(platformdirs.user_cache_dir("gpu-workbench", appauthor=False)) / "yaml"


def load_yaml(text: str) -> Any:
    """``yaml.load(text)`` with the safe loader; YAML errors propagate exactly as without a cache."""
    folder = cache_dir()
    if folder is None:
        return yaml.load(text, Loader=LOADER)
    key = hashlib.blake2b(f"{_FORMAT}\n{text}".encode("utf-8", "surrogatepass"), digest_size=20).hexdigest()
    entry = folder / f"{key}.pickle"
    try:
        return _SafeUnpickler(io.BytesIO(entry.read_bytes())).load()
    except FileNotFoundError:
        pass
    except Exception as exc:  # noqa: BLE001 - a damaged cache entry is parsed afresh, never an error
        log.debug("yaml cache: ignoring %s: %s", entry, exc)
    document = yaml.load(text, Loader=LOADER)
    _store(folder, entry, document)
    return document


def _store(folder: Path, entry: Path, document: Any) -> None:
    """Write the entry whole or not at all (a temporary file moved into place); never raise."""
    temporary = folder / f".{entry.stem}.{secrets.token_hex(4)}.tmp"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(pickle.dumps(document, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(temporary, entry)
        _prune(folder)
    except Exception as exc:  # noqa: BLE001 - a cache that cannot be written is simply not used
        log.debug("yaml cache: not written (%s)", exc)
        try:
            temporary.unlink(missing_ok=True)
        except OSError:
            pass


def _prune(folder: Path) -> None:
    entries = sorted(folder.glob("*.pickle"), key=lambda p: p.stat().st_mtime_ns)
    for old in entries[:-MAX_ENTRIES]:
        old.unlink(missing_ok=True)


class _SafeUnpickler(pickle.Unpickler):
    """Builds only what a safe YAML loader builds: no other class can be named in a cache file."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in the YAML cache")
