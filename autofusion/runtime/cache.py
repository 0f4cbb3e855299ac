"""The compile cache: one directory per (model, options, autofusion code) key.

Root: ``$AUTOFUSION_CACHE_DIR``, default ``~/.cache/autofusion``. An entry is
``<root>/<key>/`` holding model.c, model.h, weights.bin, afrt.h, Makefile, libmodel.so and
``report.json``. The key is the sha256 of the model's digest (``autofusion.api.
model_digest``), the JSON of the options, the autofusion version and a fingerprint of
autofusion's own source files (so editing the compiler invalidates old builds during
development).

Writes are atomic: an entry is built in ``<root>/tmp/build-<pid>-*/`` and renamed into
place only when complete, so readers never see a half-written entry; if another process
published an intact entry for the same key first, its entry is kept and ours discarded.

Integrity: ``manifest.json``, written last before the rename, records the size and sha256 of
every file. Each hit checks it (:func:`check_entry`) before anything is loaded; a damaged
entry (truncated, bit-flipped, missing or garbage file, missing manifest, a file where the
folder should be) is removed and rebuilt, with a progress line saying so. Files are hashed
once per process; later checks in that process compare (inode, size, mtime, ctime).

Build folders: each holds ``.owner``, ``flock``-ed by its builder until the build is
published or discarded, so the folder of a killed build is removed by the next
:func:`staging_dir` or :func:`prune` of any process; folders without one are removed once
they are a day old.

Size limit: ``$AUTOFUSION_CACHE_MAX_MB`` (default 2048; 0 = no limit). Each hit touches
the entry's ``.last_used`` file; after a new entry is published, complete entries are
evicted least recently used first until the entries' total is within the limit. The entry
just published is never evicted. Eviction renames an entry to ``<root>/.evict-*`` first
(one atomic step: other processes see the entry or nothing, never half of it) and removes
it after; a process that already loaded the library keeps running (it runs a private copy).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
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


def _unusable(root: Path, why: str) -> AutofusionError:
    """The one error for a cache folder that cannot be used, naming it and how it was chosen."""
    origin = (f"from {ENV_CACHE_DIR}" if os.environ.get(ENV_CACHE_DIR)
              else f"the default; set {ENV_CACHE_DIR} to use another folder")  # fmt: skip
    return AutofusionError(f"compile cache folder {root} ({origin}): {why}")


def _os_reason(e: OSError) -> str:
    if isinstance(e, (FileExistsError, NotADirectoryError)):
        return "exists and is not a directory"
    if isinstance(e, PermissionError):
        return "not writable (permission denied)"
    return f"cannot be used: {e.strerror or e}"


def cache_root() -> Path:
    """The cache directory (created on demand). A path that is a file, or a folder nothing
    can be created in, is an :class:`AutofusionError` naming it and ``$AUTOFUSION_CACHE_DIR``
    (never a raw ``OSError`` from deep inside a compile)."""
    env = os.environ.get(ENV_CACHE_DIR)
    root = Path(env).expanduser() if env else Path.home() / ".cache" / "autofusion"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _unusable(root, _os_reason(e)) from None
    if not root.is_dir():  # e.g. a symlink to a file
        raise _unusable(root, "exists and is not a directory")
    return root


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """sha256 over autofusion's .py/.h/.c sources and .json data such as the strategy model
    (path + bytes), computed once per process."""
    pkg = Path(__file__).resolve().parent.parent  # the autofusion package directory
    h = hashlib.sha256(autofusion.__version__.encode())
    for path in sorted(pkg.rglob("*")):
        if path.suffix in (".py", ".h", ".c", ".json") and "__pycache__" not in path.parts:
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


# --- integrity: the manifest --------------------------------------------------------------

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
# what a loadable entry must hold (the loader reads these three)
ENTRY_FILES = ("libmodel.so", "weights.bin", "report.json")
_UNLISTED = {MANIFEST, USED_MARKER}  # bookkeeping files, not part of the build
HASH = "sha256"  # OpenSSL's, with SHA-NI: ~1.6 GB/s here, faster than blake2b (0.65 GB/s)

# Files whose hash this process already checked (or wrote), keyed by what changes when a file
# is rewritten, truncated or replaced: (device, inode, size, mtime ns, ctime ns) -> digest.
_verified: dict[tuple[int, int, int, int, int], str] = {}


def _stat_key(st: os.stat_result) -> tuple[int, int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _digest(path: Path) -> str:
    # What hashlib.file_digest does, spelled out: that function is Python 3.11+ and the
    # package supports 3.10.
    h = hashlib.new(HASH)
    buf = bytearray(1 << 18)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(buf):
            h.update(view[:n])
    return h.hexdigest()


def _listed_files(directory: Path) -> list[str]:
    out = []
    for p in sorted(directory.rglob("*")):
        rel = p.relative_to(directory).as_posix()
        if p.is_file() and not p.is_symlink() and rel not in _UNLISTED and rel != OWNER_FILE:
            out.append(rel)
    return out


def write_manifest(directory: Path) -> Path:
    """Record the size and sha256 of every file in a finished build, written last (so an
    entry with a manifest is complete); :func:`check_entry` compares them on every hit."""
    files: dict[str, dict[str, object]] = {}
    for rel in _listed_files(directory):
        path = directory / rel
        st = path.stat()
        digest = _digest(path)
        if _stat_key(path.stat()) == _stat_key(st):  # unchanged while we read it
            _verified[_stat_key(st)] = digest
        files[rel] = {"size": st.st_size, HASH: digest}
    text = json.dumps({"version": MANIFEST_VERSION, "files": files}, indent=1, sort_keys=True)
    tmp = directory / f".{MANIFEST}.tmp"
    tmp.write_text(text + "\n")
    os.replace(tmp, directory / MANIFEST)
    return directory / MANIFEST


def _manifest_files(entry: Path) -> dict[str, tuple[int, str]] | str:
    """The manifest's ``name -> (size, digest)``, or what is wrong with it."""
    try:
        data = json.loads((entry / MANIFEST).read_bytes())
    except FileNotFoundError:
        return f"{MANIFEST} is missing"
    except (OSError, ValueError):
        return f"{MANIFEST} is unreadable or not JSON"
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict) or data.get("version") != MANIFEST_VERSION:
        return f"{MANIFEST} is not an autofusion manifest"
    out: dict[str, tuple[int, str]] = {}
    for name, meta in files.items():
        size = meta.get("size") if isinstance(meta, dict) else None
        digest = meta.get(HASH) if isinstance(meta, dict) else None
        parts = Path(name).parts
        if (not isinstance(size, int) or not isinstance(digest, str) or not parts
                or Path(name).is_absolute() or ".." in parts):  # fmt: skip
            return f"{MANIFEST} has a malformed record for {name!r}"
        out[name] = (size, digest)
    return out


def check_entry(entry: Path, required: Iterable[str] = (COMPLETE_MARKER,)) -> str | None:
    """What is wrong with the cache entry ``entry`` (None: it is intact).

    Every file the manifest lists must exist as a regular file of the recorded size and
    sha256, and ``required`` must be among them. Hashing ResNet-50's 98 MB costs ~65 ms, so
    each file is hashed once per process; a later check of the same file in this process
    compares (inode, size, mtime, ctime) with the one hashed (see docs/runtime.md)."""
    if entry.is_symlink() or not entry.is_dir():
        return "it is not a directory"
    files = _manifest_files(entry)
    if isinstance(files, str):
        return files
    for name in required:
        if name not in files:
            return f"{MANIFEST} does not list {name}"
    for name, (size, digest) in files.items():
        path = entry / name
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return f"{name} is missing"
        except OSError as e:
            return f"{name} cannot be read: {e.strerror or e}"
        if not stat.S_ISREG(st.st_mode):
            return f"{name} is not a regular file"
        if st.st_size != size:
            return f"{name} has {st.st_size} bytes, the manifest says {size}"
        if _verified.get(_stat_key(st)) == digest:
            continue
        try:
            actual = _digest(path)
        except OSError as e:
            return f"{name} cannot be read: {e.strerror or e}"
        if actual != digest:
            return f"{name} does not match its {HASH} in the manifest (corrupt)"
        _verified[_stat_key(st)] = digest
    return None


def lookup(key: str, required: Iterable[str] = (COMPLETE_MARKER,),
           say: Callable[[str], None] | None = None) -> Path | None:  # fmt: skip
    """The entry for ``key`` if it exists and :func:`check_entry` finds it intact; a hit
    refreshes its recency. A damaged entry is removed (``say`` is told why), so the caller
    rebuilds it instead of loading bad files or failing on every later compile."""
    entry = cache_root() / key
    try:
        before = os.lstat(entry)
    except FileNotFoundError:
        return None
    problem = check_entry(entry, required)
    if problem is not None:
        discard_entry(entry, problem, say, before)
        return None
    return entry if touch(entry) else None


def discard_entry(entry: Path, problem: str, say: Callable[[str], None] | None = None,
                  seen: os.stat_result | None = None) -> None:  # fmt: skip
    """Remove a damaged entry so that it is rebuilt. ``seen`` is the entry's lstat from
    before it was checked: if another process evicted or replaced it since (so the
    "damage" was that eviction), the new entry is left alone."""
    try:
        now = os.lstat(entry)
    except FileNotFoundError:
        return
    if seen is not None and (now.st_dev, now.st_ino) != (seen.st_dev, seen.st_ino):
        return
    if _remove(entry) and say is not None:
        say(f"cache: damaged build {entry} removed ({problem}); rebuilding")


def touch(entry: Path) -> bool:
    """Mark ``entry`` as used now; False if it vanished (evicted by another process)."""
    try:
        (entry / USED_MARKER).touch()
    except OSError:
        return False
    return True


# --- staging directories and their owners -------------------------------------------------

OWNER_FILE = ".owner"  # holds the builder's pid; the builder keeps it flock()ed
_owner_locks: dict[str, int] = {}  # staging dir -> the fd holding its owner lock


def _tmp_dir() -> Path:
    root = cache_root()
    tmp = root / "tmp"
    try:
        tmp.mkdir(exist_ok=True)
    except OSError as e:
        raise _unusable(root, _os_reason(e)) from None
    return tmp


def staging_dir() -> Path:
    """A fresh private directory on the cache's file system, for building an entry.

    It is named ``tmp/build-<pid>-*`` and holds ``.owner``, which this process keeps
    locked (``flock``) until :func:`release_staging`: the kernel drops the lock when the
    process dies however it dies, so the next :func:`staging_dir` or :func:`prune` of any
    process removes a killed build's folder at once (not after a day)."""
    tmp = _tmp_dir()
    reclaim_orphans(tmp)
    try:
        d = Path(tempfile.mkdtemp(prefix=f"build-{os.getpid()}-", dir=tmp))
    except OSError as e:
        raise _unusable(cache_root(), _os_reason(e)) from None
    # Lock under a private name, then rename: a sweeper only ever sees a locked .owner.
    pending = d / f"{OWNER_FILE}.new"
    fd = os.open(pending, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, f"{os.getpid()}\n".encode())
    os.rename(pending, d / OWNER_FILE)
    _owner_locks[str(d)] = fd
    return d


def release_staging(staged: Path) -> None:
    """Drop the owner lock of a staging directory made by :func:`staging_dir`."""
    fd = _owner_locks.pop(str(staged), None)
    if fd is not None:
        os.close(fd)


def discard_staging(staged: Path) -> None:
    """Delete a staging directory (a failed build, a closed uncached model), then unlock."""
    shutil.rmtree(staged, ignore_errors=True)
    release_staging(staged)


def reclaim_orphans(tmp: Path | None = None, now: float | None = None) -> int:
    """Remove build folders in ``tmp/`` whose owner is gone (their ``.owner`` lock is free),
    and folders without an owner file that are more than a day old (left by an older
    autofusion). Returns how many were removed."""
    tmp = tmp if tmp is not None else cache_root() / "tmp"
    now = time.time() if now is None else now
    removed = 0
    try:
        builds = list(tmp.iterdir())
    except OSError:
        return 0
    for build in builds:
        if str(build) in _owner_locks:
            continue  # ours (flock would refuse us too; this saves the system calls)
        try:
            fd = os.open(build / OWNER_FILE, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            try:
                age = now - build.stat().st_mtime
            except OSError:
                continue
            if age > STALE_SECONDS:
                removed += _remove(build)
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)  # its builder is alive
            continue
        try:
            removed += _remove(build)  # we hold its lock: the builder died
        finally:
            os.close(fd)
    return removed


def publish(staged: Path, key: str, required: Iterable[str] = (COMPLETE_MARKER,)) -> Path:
    """Write the manifest of a finished ``staged`` directory and atomically move it to the
    entry for ``key``. If another process published an intact entry first, its entry is
    kept and ours discarded; a damaged one (or a file) in the way is replaced."""
    entry = cache_root() / key
    required = tuple(required)
    try:
        write_manifest(staged)
        (staged / OWNER_FILE).unlink(missing_ok=True)  # the lock fd stays held until the end
        for _ in range(5):
            try:
                os.rename(staged, entry)
                break
            except OSError:
                pass
            if check_entry(entry, required) is None:
                shutil.rmtree(staged, ignore_errors=True)  # another process won the race
                break
            _remove(entry)  # damaged, incomplete or not a directory: replace it
        else:
            raise AutofusionError(f"{entry}: cannot move the new build into the compile cache")
    finally:
        release_staging(staged)
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


def _delete(path: Path) -> None:
    """Delete a directory tree or a single file, ignoring errors."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except OSError:
            pass


def _remove(path: Path) -> bool:
    """Rename ``path`` out of sight, then delete it; False if another process got there
    first (the rename is what makes removal atomic for readers)."""
    trash = path.with_name(f"{EVICT_PREFIX}{path.name}-{os.getpid()}-{time.monotonic_ns()}")
    try:
        os.rename(path, trash)
    except OSError:
        return False
    _delete(trash)
    return True


def _sweep_leftovers(now: float) -> None:
    """Finish interrupted evictions and remove abandoned build directories."""
    root = cache_root()
    for child in root.iterdir():
        if child.name.startswith(EVICT_PREFIX) or ".stale-" in child.name:
            _delete(child)
    tmp = root / "tmp"
    if tmp.is_dir():
        reclaim_orphans(tmp, now)


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
