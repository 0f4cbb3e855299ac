"""The compile cache: one directory per (model, options, autofusion code) key.

Root: ``$AUTOFUSION_CACHE_DIR``, default ``~/.cache/autofusion``. An entry is
``<root>/<key>/`` holding model.c, model.h, weights.bin, afrt.h, Makefile, libmodel.so and
``report.json``. The key is the sha256 of the model's digest (``autofusion.api.
model_digest``), the JSON of the options, the autofusion version and a fingerprint of
autofusion's own source files (so editing the compiler invalidates old builds during
development).

Writes are atomic: an entry is built in ``<root>/tmp/<random>/`` and renamed into place
only when complete, so readers never see a half-written entry; if another process
published the same key first, its entry is kept and ours discarded.

Size limit: ``$AUTOFUSION_CACHE_MAX_MB`` (default 2048; 0 = no limit). Each hit touches
the entry's ``.last_used`` file; after a new entry is published, complete entries are
evicted least recently used first until the entries' total is within the limit. The entry
just published is never evicted. Eviction renames an entry to ``<root>/.evict-*`` first
(one atomic step: other processes see the entry or nothing, never half of it) and removes
it after; a process that already loaded the library keeps its mapping. Abandoned build
directories in ``tmp/`` are removed once they are a day old.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import autofusion
from autofusion.errors import AutofusionError

ENV_CACHE_DIR = "AUTOFUSION_CACHE_DIR"
ENV_CACHE_MAX_MB = "AUTOFUSION_CACHE_MAX_MB"
DEFAULT_MAX_MB = 2048.0
MB = 1024 * 1024
COMPLETE_MARKER = "libmodel.so"
USED_MARKER = ".last_used"  # its mtime is the entry's last use
EVICT_PREFIX = ".evict-"
STALE_SECONDS = 24 * 3600  # abandoned tmp/ builds older than this are removed
_KEY_RE = re.compile(r"[0-9a-f]{32}")


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
    """The entry name for a model (its bytes or a digest of them) and its compile options
    (JSON-serialisable values)."""
    h = hashlib.sha256()
    h.update(hashlib.sha256(model_bytes).digest())
    h.update(json.dumps(dict(options), sort_keys=True, default=str).encode())
    h.update(code_fingerprint().encode())
    return h.hexdigest()[:32]


def lookup(key: str, marker: str = COMPLETE_MARKER) -> Path | None:
    """The entry for ``key`` if it exists and is complete; a hit refreshes its recency."""
    entry = cache_root() / key
    if not (entry / marker).exists():
        return None
    return entry if touch(entry) else None


def touch(entry: Path) -> bool:
    """Mark ``entry`` as used now; False if it vanished (evicted by another process)."""
    try:
        (entry / USED_MARKER).touch()
    except OSError:
        return False
    return True


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
    touch(entry)
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


def size_limit() -> int | None:
    """The size limit from ``$AUTOFUSION_CACHE_MAX_MB`` in bytes (None: no limit)."""
    text = os.environ.get(ENV_CACHE_MAX_MB, "").strip()
    if not text:
        return int(DEFAULT_MAX_MB * MB)
    try:
        mb = float(text)
    except ValueError:
        mb = -1.0
    if not mb >= 0 or mb == float("inf"):  # also rejects nan
        raise AutofusionError(
            f"{ENV_CACHE_MAX_MB}={text!r}: expected a size in MB >= 0 (0 = no limit)"
        )
    return None if mb == 0 else int(mb * MB)


def _tree_bytes(path: Path) -> int:
    """Bytes of the regular files under ``path`` (0 if it vanished meanwhile)."""
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def _last_used(entry: Path) -> float | None:
    for name in (USED_MARKER, COMPLETE_MARKER):
        try:
            return (entry / name).stat().st_mtime
        except OSError:
            continue
    return None


def entries() -> list[tuple[Path, float, int]]:
    """Complete entries as ``(path, last use, bytes)``, least recently used first."""
    found: list[tuple[Path, float, int]] = []
    for child in cache_root().iterdir():
        if not _KEY_RE.fullmatch(child.name) or not (child / COMPLETE_MARKER).exists():
            continue
        used = _last_used(child)
        if used is not None:
            found.append((child, used, _tree_bytes(child)))
    found.sort(key=lambda e: (e[1], e[0].name))
    return found


def cache_size() -> int:
    """Bytes held by complete entries (the figure the size limit applies to)."""
    return sum(size for _, _, size in entries())


def _remove(path: Path) -> bool:
    """Rename ``path`` out of sight, then delete it; False if another process got there
    first (the rename is what makes removal atomic for readers)."""
    trash = path.with_name(f"{EVICT_PREFIX}{path.name}-{os.getpid()}-{time.monotonic_ns()}")
    try:
        os.rename(path, trash)
    except OSError:
        return False
    shutil.rmtree(trash, ignore_errors=True)
    return True


def _sweep_leftovers(now: float) -> None:
    """Finish interrupted evictions and remove abandoned build directories."""
    root = cache_root()
    for child in root.iterdir():
        if child.name.startswith(EVICT_PREFIX) or ".stale-" in child.name:
            shutil.rmtree(child, ignore_errors=True)
    tmp = root / "tmp"
    if tmp.is_dir():
        for build in tmp.iterdir():
            try:
                age = now - build.stat().st_mtime
            except OSError:
                continue
            if age > STALE_SECONDS:
                _remove(build)


def prune(max_bytes: int | None = None, keep: Iterable[str] = ()) -> tuple[int, int]:
    """Evict least recently used complete entries until they total at most ``max_bytes``
    (default: the ``$AUTOFUSION_CACHE_MAX_MB`` limit; no limit: only the sweep below).
    Entries named in ``keep`` are never evicted. Also finishes interrupted evictions and
    removes ``tmp/`` build directories older than a day. Returns (entries removed, bytes
    freed)."""
    limit = size_limit() if max_bytes is None else max_bytes
    if limit is not None and limit < 0:
        raise AutofusionError(f"prune: max_bytes must be >= 0, got {limit}")
    _sweep_leftovers(time.time())
    if limit is None:
        return 0, 0
    protected = set(keep)
    current = entries()
    total = sum(size for _, _, size in current)
    removed = freed = 0
    for path, used, size in current:
        if total <= limit:
            break
        if path.name in protected or _last_used(path) != used:
            continue  # kept, or used by another process since we listed it
        if _remove(path):
            removed += 1
            freed += size
        total -= size  # gone either way: evicted here or by a concurrent pruner
    return removed, freed
