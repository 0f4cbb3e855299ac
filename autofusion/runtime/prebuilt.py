"""The runtime compiled once for many small test models (a test-build speed-up).

A generated ``model.c`` includes ``afrt.h``, whose functions are all ``static inline``: every
model build parses the runtime's ~7,000 lines and compiles each kernel the model calls. For
the ONNX node cases (1,300 tiny models) that is most of their build time: a convolution case
spends about 1.5 s of its 1.7 s compiling ``afrt_conv2d_f32`` and what it calls.

``build_prebuilt_runtime(dir, options)`` compiles the runtime once, with the flags ``options``
gives a model build, into ``dir``:

* ``afrt_prebuilt.o``: every runtime function, each also under an external alias
  ``afrt_prebuilt__<name>`` (hidden visibility, so two loaded libraries never share one);
* ``afrt_prebuilt.h``: includes ``afrt.h``, declares the aliases and ``#define``\\ s each
  runtime function name to its alias, so a ``model.c`` compiled after it calls the object's
  copies (``afrt.h``'s include guard makes ``model.c``'s own ``#include "afrt.h"`` a no-op);
* ``afrt_prebuilt.h.gch``: that header precompiled (gcc), so a model build does not parse it.

A model build adds :meth:`PrebuiltRuntime.cflags` (``-include`` the header, ``-Winvalid-pch``,
the object) after the same ``options``. The generated code and the kernels are unchanged: the
same functions compiled with the same flags, called instead of inlined. Every function is
redirected, the runtime's own ones too, so the runtime's static state (thread count, constant
regions, scratch buffers) stays in one copy per library as before. What it gives up: warnings
that only show after a kernel is inlined into a particular model (the zoo, exported-model and
kernel tests still build the usual way).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
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
    functions = runtime_functions(_run([cc, *flags, "-E", "-P", "afrt_all.c"], out))

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
