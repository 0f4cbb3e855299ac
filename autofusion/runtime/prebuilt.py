"""The runtime compiled once and linked by many model builds (a build-time speed-up).

A generated ``model.c`` includes ``afrt.h``, whose functions are all ``static inline``: every
model build parses the runtime's ~7,000 lines and compiles each kernel the model calls. For
the ONNX node cases (1,300 tiny models) that is most of their build time: a convolution case
spends about 1.5 s of its 1.7 s compiling ``afrt_conv2d_f32`` and what it calls.

``build_prebuilt_runtime(dir, options)`` compiles the runtime once, with the flags ``options``
gives a model build, into ``dir``:

* ``afrt_prebuilt.o``: every runtime function; those generated code calls
  (:func:`model_calls`) also under an external alias ``afrt_prebuilt__<name>`` (hidden
  visibility, so two loaded libraries never share one);
* ``afrt_prebuilt.h``: includes ``afrt.h``, declares the aliases and ``#define``\\ s each
  of those names to its alias, so a ``model.c`` compiled after it calls the object's
  copies (``afrt.h``'s include guard makes ``model.c``'s own ``#include "afrt.h"`` a no-op);
* ``afrt_prebuilt.h.gch``: that header precompiled (gcc), so a model build does not parse it.

A model build adds :meth:`PrebuiltRuntime.cflags` (``-include`` the header, ``-Winvalid-pch``,
the object) after the same ``options``. The generated code and the kernels are unchanged: the
same functions compiled with the same flags, called instead of inlined. Every function model.c
calls is redirected (the thread-count ones too), so the runtime's static state (thread count,
constant regions, scratch buffers) stays in one copy per library as before. What it gives up:
warnings that only show after a kernel is inlined into a particular model (the folder's
Makefile still builds the usual way, and the kernel tests do).

The runtime cache (:func:`cached_runtime`): ``libmodel.so`` builds of ``autofusion-compile``
and ``autofusion.compile`` link a prebuilt runtime kept in ``$AUTOFUSION_RUNTIME_DIR``
(default ``<compile cache>/runtime``), one folder per key: the sha256 of the runtime's
headers, this module, the compiler, its version, the flags and the macros they predefine (so
``-march=native`` on another CPU is another key). The runtime's ~7,000 lines cost ~10 s of
gcc for a conv model, each time; the model's own code costs 0.4-3 s. The first build with
given flags compiles the runtime (~10 s), every later one links it. A folder is built under a
private ``.build-*`` name and renamed into place when complete, with a manifest that is
checked on every use (a damaged folder is removed and rebuilt, as the compile cache does);
the ``KEEP_RUNTIMES`` most recently used folders are kept. ``AUTOFUSION_RUNTIME_CACHE=0``
compiles the kernels into each ``model.c`` instead; if the runtime folder cannot be made or
the build against it fails, the build does that too.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from autofusion.errors import AutofusionError
from autofusion.runtime import toolchain
from autofusion.runtime.build import BuildOptions, compile_flags

HEADER = "afrt_prebuilt.h"
OBJECT = "afrt_prebuilt.o"
ALIAS_PREFIX = "afrt_prebuilt__"

# A function definition at file scope in the preprocessed runtime: its name and the text from
# the start of its line (attributes included) to the opening brace.
_DEFINITION = re.compile(r"^([^\n;{}#]*?)\b(afrt_\w+)\s*\([^;{}]*\)\s*\{", re.M)


@dataclass(frozen=True)
class PrebuiltRuntime:
    """A compiled runtime (see the module docstring) and the options it was compiled with."""

    header: Path
    object: Path
    functions: tuple[str, ...]
    options: BuildOptions

    def cflags(self) -> tuple[str, ...]:
        """The flags a model build adds (after ``options``' own) to use this runtime."""
        return ("-include", str(self.header), "-Winvalid-pch", str(self.object))

    def build_options(self) -> BuildOptions:
        """``options`` with :meth:`cflags` appended: pass these to ``build_shared``."""
        o = self.options
        return BuildOptions(o.werror, (*o.extra_cflags, *self.cflags()), o.cpu)


def _run(cmd: list[str], cwd: Path) -> str:
    proc = subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"}
    )
    if proc.returncode != 0:
        raise AutofusionError(
            f"building the prebuilt runtime in {cwd} failed (exit {proc.returncode}): "
            f"$ {' '.join(cmd)}\n{proc.stderr.strip()}"
        )
    return proc.stdout


def runtime_functions(preprocessed: str) -> tuple[str, ...]:
    """Names of the functions ``afrt.h`` defines, from its preprocessed text (so only the
    definitions these flags select). ``always_inline`` helpers stay inline: they are internal,
    hold no state, and gcc will not give them an out-of-line alias."""
    names = {
        m.group(2)
        for m in _DEFINITION.finditer(preprocessed)
        if "always_inline" not in m.group(1) and "static" in m.group(1)
    }
    if "afrt_conv2d_f32" not in names:  # the pattern no longer matches how afrt.h is written
        raise AutofusionError("prebuilt runtime: no afrt_conv2d_f32 found in afrt.h")
    return tuple(sorted(names))


@functools.cache
def model_calls() -> frozenset[str]:
    """Every ``afrt_*`` name autofusion's Python sources mention: a superset of the runtime
    functions generated code calls (the emitter prints them from these sources).

    Only these get an alias and a ``#define``. An aliased function is externally visible, so
    gcc must keep its body and stops inlining it as a function called once, or cloning it
    with its arguments' constants; aliasing all ~230 functions made EfficientNet-B0's
    depthwise kernels 1.1-1.2x slower than the same build with the kernels inlined. The
    object still holds one copy of everything, so the runtime's static state stays one copy
    as long as model.c calls nothing else; ``autofusion.lowering.c.testing`` checks that on
    every test build (no ``afrt_*`` function defined twice in a library)."""
    pkg = Path(__file__).resolve().parent.parent
    names: set[str] = set()
    for path in sorted(pkg.rglob("*.py")):
        names.update(re.findall(r"\bafrt_\w+", path.read_text()))
    return frozenset(names)


def build_prebuilt_runtime(
    out_dir: str | os.PathLike[str], options: BuildOptions = BuildOptions()
) -> PrebuiltRuntime:
    """Compile the runtime once into ``out_dir`` for model builds with ``options``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in toolchain.RUNTIME_HEADERS:
        shutil.copyfile(toolchain.INCLUDE_DIR / name, out / name)
    cc = toolchain.compiler_for(options.cpu)
    flags = compile_flags(options)
    (out / "afrt_all.c").write_text('#include "afrt.h"\n')
    calls = model_calls()
    defined = runtime_functions(_run([cc, *flags, "-E", "-P", "afrt_all.c"], out))
    functions = tuple(f for f in defined if f in calls)

    hidden = '__attribute__((visibility("hidden")))'
    decls = [f"extern __typeof__({f}) {ALIAS_PREFIX}{f} {hidden};" for f in functions]
    renames = [f"#define {f} {ALIAS_PREFIX}{f}" for f in functions]
    (out / HEADER).write_text(
        "/* Generated by autofusion.runtime.prebuilt: afrt.h's functions called from\n"
        f" * {OBJECT} instead of compiled into each model. */\n"
        "#ifndef AFRT_PREBUILT_H\n#define AFRT_PREBUILT_H\n"
        '#include "afrt.h"\n' + "\n".join([*decls, *renames]) + "\n#endif\n"
    )
    aliases = [
        f'extern __typeof__({f}) {ALIAS_PREFIX}{f} __attribute__((visibility("hidden"), '
        f'alias("{f}")));'
        for f in functions
    ]
    (out / "afrt_prebuilt.c").write_text('#include "afrt.h"\n' + "\n".join(aliases) + "\n")
    _run([cc, *flags, "-c", "afrt_prebuilt.c", "-o", OBJECT], out)
    # The precompiled header only saves parsing time; a compiler that cannot make one
    # (or reads another format) parses the header instead.
    gch = out / f"{HEADER}.gch"
    try:
        _run([cc, *flags, "-x", "c-header", HEADER, "-o", gch.name], out)
    except AutofusionError:
        gch.unlink(missing_ok=True)
    return PrebuiltRuntime(out / HEADER, out / OBJECT, functions, options)


# --- the runtime cache ---------------------------------------------------------------------

ENV_RUNTIME_DIR = "AUTOFUSION_RUNTIME_DIR"
ENV_RUNTIME_CACHE = "AUTOFUSION_RUNTIME_CACHE"
KEEP_RUNTIMES = 6  # folders kept (most recently used first): a few CPUs and compilers
_BUILD_PREFIX = ".build-"
_STALE_BUILD_SECONDS = 3600  # a runtime build takes under a minute; older ones were killed
_REQUIRED = (OBJECT, HEADER)


def runtime_cache_enabled() -> bool:
    return os.environ.get(ENV_RUNTIME_CACHE, "").strip() != "0"


def runtime_root() -> Path:
    """Where cached runtimes live: ``$AUTOFUSION_RUNTIME_DIR`` or ``<compile cache>/runtime``."""
    from autofusion.runtime import cache

    env = os.environ.get(ENV_RUNTIME_DIR, "").strip()
    return Path(env) if env else cache.cache_root() / "runtime"


@functools.cache
def runtime_key(options: BuildOptions) -> str:
    """The folder name for a runtime compiled with ``options`` (see the module docstring),
    computed once per process (it runs the compiler twice)."""
    cc = toolchain.compiler_for(options.cpu)
    flags = compile_flags(options)
    h = hashlib.sha256()
    for name in toolchain.RUNTIME_HEADERS:
        h.update(name.encode())
        h.update((toolchain.INCLUDE_DIR / name).read_bytes())
    h.update(Path(__file__).read_bytes())
    h.update(" ".join(sorted(model_calls())).encode())
    h.update("\0".join([cc, *flags]).encode())
    for cmd in ([cc, "--version"], [cc, *flags, "-dM", "-E", "-x", "c", os.devnull]):
        h.update(_run(cmd, Path.cwd()).encode())
    return h.hexdigest()[:32]


def _load(entry: Path, options: BuildOptions) -> PrebuiltRuntime:
    """The runtime in a cache folder; its functions are the ones its header redirects."""
    header = entry / HEADER
    functions = re.findall(rf"^#define (\w+) {ALIAS_PREFIX}", header.read_text(), re.M)
    return PrebuiltRuntime(header, entry / OBJECT, tuple(functions), options)


def _sweep(root: Path, keep: Path) -> None:
    """Remove killed builds' folders and all but the ``KEEP_RUNTIMES`` most recently used
    runtimes (never ``keep``)."""
    from autofusion.runtime import cache

    now = time.time()
    found: list[tuple[float, Path]] = []
    for child in root.iterdir():
        try:
            if child.name.startswith(_BUILD_PREFIX):
                if now - child.stat().st_mtime > _STALE_BUILD_SECONDS:
                    shutil.rmtree(child, ignore_errors=True)
            elif child.is_dir() and child != keep and (child / OBJECT).exists():
                used = child / cache.USED_MARKER
                found.append((used.stat().st_mtime if used.exists() else 0.0, child))
        except OSError:
            continue
    found.sort(reverse=True)
    for _, old in found[KEEP_RUNTIMES - 1 :]:
        cache._remove(old)  # renamed away first: a build linking it sees it or nothing


def cached_runtime(
    options: BuildOptions = BuildOptions(), say: Callable[[str], None] | None = None
) -> PrebuiltRuntime | None:
    """The runtime compiled with ``options`` from the runtime cache, compiled into it first
    if it is not there; None when the cache is turned off or cannot be used (then the caller
    compiles the kernels into ``model.c``, as before). See the module docstring."""
    from autofusion.runtime import cache

    if not runtime_cache_enabled():
        return None
    tell = say or (lambda _msg: None)
    try:
        root = runtime_root()
        root.mkdir(parents=True, exist_ok=True)
        entry = root / runtime_key(options)
        if entry.exists() or entry.is_symlink():
            problem = cache.check_entry(entry, _REQUIRED)
            if problem is None and cache.touch(entry):
                return _load(entry, options)
            if problem is not None and cache._remove(entry):
                tell(f"runtime cache: damaged {entry} removed ({problem}); rebuilding")
        tell(f"compiling the runtime for these flags once (kept in {root})")
        staged = Path(tempfile.mkdtemp(prefix=_BUILD_PREFIX, dir=root))
        try:
            build_prebuilt_runtime(staged, options)
            for name in ("afrt_all.c", "afrt_prebuilt.c"):
                (staged / name).unlink(missing_ok=True)
            cache.write_manifest(staged)
            try:
                os.rename(staged, entry)
            except OSError:  # another process published it first: use theirs if intact
                if cache.check_entry(entry, _REQUIRED) is not None:
                    return None
        finally:
            shutil.rmtree(staged, ignore_errors=True)
        cache.touch(entry)
        _sweep(root, entry)
        return _load(entry, options)
    except (OSError, AutofusionError) as e:
        tell(f"runtime cache not used ({str(e).splitlines()[0]}); compiling the kernels "
             "into model.c")  # fmt: skip
        return None
