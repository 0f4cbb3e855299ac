"""The compile cache: one directory per (model, options, autofusion code) key.

Root: ``$AUTOFUSION_CACHE_DIR``, default ``~/.cache/autofusion``. An entry is
``<root>/<key>/`` holding model.c, model.h, weights.bin, afrt.h, Makefile, libmodel.so and
``report.json``. The key is the sha256 of the model bytes, the JSON of the options, the
autofusion version and a fingerprint of autofusion's own source files (so editing the
compiler invalidates old builds during development).

Writes are atomic: an entry is built in ``<root>/tmp/<random>/`` and renamed into place
only when complete, so readers never see a half-written entry; if another process
published the same key first, its entry is kept and ours discarded.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

import autofusion

ENV_CACHE_DIR = "AUTOFUSION_CACHE_DIR"
COMPLETE_MARKER = "libmodel.so"


def cache_root() -> Path:
    """The cache directory (created on demand)."""
    env = os.environ.get(ENV_CACHE_DIR)
    root = Path(env).expanduser() if env else Path.home() / ".cache" / "autofusion"
    root.mkdir(parents=True, exist_ok=True)
    return root


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """sha256 over autofusion's .py/.h/.c sources (path + bytes), computed once per process."""
    pkg = Path(__file__).resolve().parent.parent  # the autofusion package directory
    h = hashlib.sha256(autofusion.__version__.encode())
    for path in sorted(pkg.rglob("*")):
        if path.suffix in (".py", ".h", ".c") and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(pkg)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def cache_key(model_bytes: bytes, options: Mapping[str, object]) -> str:
    """The entry name for a model and its compile options (JSON-serialisable values)."""
    h = hashlib.sha256()
    h.update(hashlib.sha256(model_bytes).digest())
    h.update(json.dumps(dict(options), sort_keys=True, default=str).encode())
    h.update(code_fingerprint().encode())
    return h.hexdigest()[:32]


def lookup(key: str, marker: str = COMPLETE_MARKER) -> Path | None:
    """The entry for ``key`` if it exists and is complete."""
    entry = cache_root() / key
    return entry if (entry / marker).exists() else None


def staging_dir() -> Path:
    """A fresh private directory on the cache's file system, for building an entry."""
    tmp = cache_root() / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="build-", dir=tmp))


def publish(staged: Path, key: str) -> Path:
    """Atomically move a finished ``staged`` directory to the entry for ``key``."""
    entry = cache_root() / key
    try:
        os.rename(staged, entry)
    except OSError:
        # Another process published first (the target exists and is non-empty) or a stale
        # incomplete directory is in the way.
        if lookup(key) is not None:
            shutil.rmtree(staged, ignore_errors=True)
            return entry
        stale = entry.with_name(f"{key}.stale-{os.getpid()}")
        os.rename(entry, stale)
        shutil.rmtree(stale, ignore_errors=True)
        os.rename(staged, entry)
    return entry


def publish_dir(staged: Path, dest: Path) -> Path:
    """Move a finished ``staged`` directory to ``dest`` (a user's ``-o DIR``) as atomically
    as the file systems allow: rename when possible; an existing ``dest`` is replaced only
    once the new content is complete."""
    dest = dest.resolve()
    dest.parent.mkdir(parents=True, exist_ok=True)
    # Stage beside dest so the final rename stays on one file system.
    local = Path(tempfile.mkdtemp(prefix=f".{dest.name}.new-", dir=dest.parent))
    shutil.rmtree(local)
    shutil.copytree(staged, local)
    if dest.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{dest.name}.old-", dir=dest.parent))
        shutil.rmtree(old)
        os.rename(dest, old)
        os.rename(local, dest)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(local, dest)
    return dest
