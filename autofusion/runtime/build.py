"""Build a compiled model directory (model.c, model.h, weights.bin) into ``libmodel.so``.

``build_shared(dir, BuildOptions(cpu=...))`` makes the directory a self-contained package
(see :mod:`autofusion.runtime.package`: the runtime headers copied, ``af_build.c`` recording
the CPU the build is for, a ``Makefile`` holding exactly the commands used, a
``CMakeLists.txt``, ``autofusion-model.pc`` and the example ``main.c``; no path into any
environment) and runs the C compiler (``aarch64-linux-gnu-gcc`` for ``cpu="aarch64"``)::

    cc -O3 -fopenmp -fPIC -std=c11 -ffp-contract=fast -march=<cpu> [-Wall -Wextra -Werror] -I. \\
       -shared model.c af_build.c -o libmodel.so -lm

Given a prebuilt runtime (:mod:`autofusion.runtime.prebuilt`, as ``autofusion-compile`` passes
from the runtime cache), the command adds ``-include afrt_prebuilt.h -Winvalid-pch
afrt_prebuilt.o`` from the runtime's folder: the kernels are linked, not compiled again.

``build_sanitizer_driver(dir)`` builds an *executable* instead (ASan in a dlopen'ed .so
inside Python is unreliable): ``model.c`` plus a generated ``sanitize_main.c`` that reads each input
from ``input_<i>.bin``, runs once, and writes ``output_<j>.bin``, compiled with
``-fsanitize=address,undefined``. ``run_driver`` feeds it numpy arrays.

A failed compile raises :class:`AutofusionError` with one line: the compiler's first error
and the path of a log file holding the command and the full output.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from autofusion.errors import AutofusionError
from autofusion.runtime import package, toolchain

if TYPE_CHECKING:
    from autofusion.runtime.prebuilt import PrebuiltRuntime

LIB_NAME = "libmodel.so"
DRIVER_NAME = "model_driver"
SOURCES = ("model.c", "model.h", "weights.bin")
SANITIZE_MAIN = "sanitize_main.c"


@dataclass(frozen=True)
class BuildOptions:
    """How to compile: warnings as errors (default on: generated C must be warning-free),
    extra flags appended at the end, and the CPU (a ``toolchain.CPUS`` key) the build is for."""

    werror: bool = True
    extra_cflags: tuple[str, ...] = ()
    cpu: str = "native"


def _cflags(options: BuildOptions, sanitize: bool) -> list[str]:
    flags = [*toolchain.BASE_FLAGS, *toolchain.cpu_flags(options.cpu)]
    if sanitize:
        flags = [f for f in flags if f not in ("-O3", "-fPIC")] + list(toolchain.SANITIZE_FLAGS)
    if options.werror:
        flags += toolchain.WERROR_FLAGS
    return [*flags, "-I.", *options.extra_cflags]


def compile_flags(options: BuildOptions = BuildOptions()) -> list[str]:
    """The compiler flags of a libmodel.so build (no sources, no output, no libraries)."""
    return _cflags(options, False)


def shared_command(options: BuildOptions = BuildOptions()) -> list[str]:
    """The compiler command (run inside the model directory) that builds libmodel.so."""
    return [toolchain.compiler_for(options.cpu), *_cflags(options, False), "-shared",
            "model.c", package.BUILD_C, "-o", LIB_NAME, "-lm"]  # fmt: skip


def driver_command(options: BuildOptions = BuildOptions()) -> list[str]:
    """The command that builds the sanitizer test executable from model.c and its main."""
    return [toolchain.compiler_for(options.cpu), *_cflags(options, True), SANITIZE_MAIN,
            "model.c", "-o", DRIVER_NAME, "-lm"]  # fmt: skip


def write_makefile(out_dir: Path, options: BuildOptions = BuildOptions()) -> Path:
    """A Makefile reproducing the build (see :func:`package.makefile_text`)."""
    path = out_dir / "Makefile"
    path.write_text(package.makefile_text(
        Path(toolchain.compiler_for(options.cpu)).name, _cflags(options, False),
        _cflags(options, True), LIB_NAME, DRIVER_NAME, SANITIZE_MAIN))  # fmt: skip
    return path


def _check_sources(out_dir: Path, names: Sequence[str]) -> None:
    missing = [n for n in names if not (out_dir / n).is_file()]
    if missing:
        raise AutofusionError(f"{out_dir}: missing {', '.join(missing)} (run the C emitter first)")


def copy_runtime_headers(out_dir: Path) -> None:
    """Put afrt.h (and the headers it includes) beside model.c so the directory builds on
    its own."""
    for name in toolchain.RUNTIME_HEADERS:
        shutil.copyfile(toolchain.INCLUDE_DIR / name, out_dir / name)


def write_package(out_dir: Path, options: BuildOptions = BuildOptions()) -> None:
    """Everything beside model.c that makes ``out_dir`` build and run elsewhere: headers,
    ``af_build.c``/``.h``, Makefile, CMakeLists.txt, the pkg-config file and ``main.c``."""
    copy_runtime_headers(out_dir)
    package.write_package_files(out_dir, options.cpu, _cflags(options, False))
    write_makefile(out_dir, options)


def _first_error(output: str) -> str:
    """The compiler's first ``error:`` line (the useful one; the rest often follows from it),
    else its first non-empty line."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    for ln in lines:
        if re.search(r"\b(fatal )?error\b:", ln):
            return ln
    return lines[0] if lines else "no compiler output"


def _save_log(cmd: Sequence[str], cwd: Path, output: str) -> Path:
    """The full compiler output, with the command, in a file that outlives the build folder
    (``autofusion.compile`` deletes a failed build's staging folder)."""
    fd, name = tempfile.mkstemp(prefix="autofusion-build-", suffix=".log")
    with os.fdopen(fd, "w") as f:
        f.write(f"# in {cwd}\n$ {' '.join(shlex.quote(c) for c in cmd)}\n{output}\n")
    return Path(name)


def _run(cmd: list[str], cwd: Path, what: str) -> None:
    try:
        # LC_ALL=C: plain ASCII quotes in the compiler's messages, stable for tests and logs
        env = {**os.environ, "LC_ALL": "C"}
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    except OSError as e:
        raise AutofusionError(f"cannot run the C compiler {cmd[0]!r}: {e}") from None
    if proc.returncode != 0:
        output = "\n".join(x for x in (proc.stdout, proc.stderr) if x).strip()
        log = _save_log(cmd, cwd, output)
        raise AutofusionError(
            f"{what} failed (exit {proc.returncode}): {_first_error(output)} "
            f"(full compiler log: {log})"
        )


def build_shared(
    out_dir: str | os.PathLike[str],
    options: BuildOptions = BuildOptions(),
    runtime: PrebuiltRuntime | None = None,
    say: Callable[[str], None] | None = None,
) -> Path:
    """Compile ``out_dir/model.c`` into ``out_dir/libmodel.so``; returns the library path.

    With ``runtime`` (a prebuilt runtime compiled with the same ``options``, see
    :func:`autofusion.runtime.prebuilt.cached_runtime`) the library links it instead of
    compiling the kernels into model.c; if that build fails, the usual one runs (``say`` is
    told). The folder's Makefile is the usual build either way."""
    out = Path(out_dir)
    _check_sources(out, ("model.c", "model.h"))
    write_package(out, options)
    if runtime is not None:
        try:
            _run(shared_command(runtime.build_options()), out, "compiling model.c")
            return out / LIB_NAME
        except AutofusionError as e:
            if say is not None:
                say(f"building against the prebuilt runtime failed ({e}); "
                    "compiling the kernels into model.c")  # fmt: skip
    _run(shared_command(options), out, "compiling model.c")
    return out / LIB_NAME


# --- sanitizer driver --------------------------------------------------------------------

DRIVER_MAIN = r"""/* Generated by autofusion: a test driver for a compiled model (see afrt_model_api.md).
 * usage: model_driver WEIGHTS DIR [THREADS [BATCH [SYMBOL...]]]
 * reads DIR/input_<i>.bin, runs once (af_run, or af_run_batch with BATCH samples, or
 * af_run_sym with one value per size symbol of a library with run-time sizes), writes
 * DIR/output_<j>.bin; exit 0 on success. */
#include "model.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static size_t elem_size(int dtype) {
    switch (dtype) {
    case 1: case 6: return 4;          /* float, int32 */
    case 2: case 3: case 9: return 1;  /* uint8, int8, bool */
    case 4: case 5: case 10: return 2; /* uint16, int16, float16 */
    case 7: case 11: case 13: return 8; /* int64, double, uint64 */
    case 12: return 4;                 /* uint32 */
    default: return 0;
    }
}

/* model.h of this autofusion declares the run-time batch API (AF_HAS_RUN_BATCH); a
 * hand-written or older model.h does not, and then the driver runs batch 1 only. */
#ifdef AF_HAS_RUN_BATCH
#define INPUT_BATCHED(i) af_input_batched(i)
#define OUTPUT_BATCHED(j) af_output_batched(j)
#else
#define INPUT_BATCHED(i) 0
#define OUTPUT_BATCHED(j) 0
#endif

static size_t count(int rank, const int64_t *shape) {
    size_t n = 1;
    for (int d = 0; d < rank; ++d) n *= (size_t)shape[d];
    return n;
}

/* run-time sizes (AF_HAS_RUN_SYM): the symbols' values, and each tensor's shape for them */
#ifdef AF_HAS_RUN_SYM
#define NUM_SYMBOLS() af_num_symbols()
#else
#define NUM_SYMBOLS() 0
#endif
static int64_t sym_[64];
static const int64_t *shape_of(int output, int i) {
#ifdef AF_HAS_RUN_SYM
    static int64_t dims_[64]; /* a library without run-time sizes never needs it */
    if (NUM_SYMBOLS() > 0) {
        if ((output ? af_output_shape_at(i, sym_, dims_) : af_input_shape_at(i, sym_, dims_)) != 0)
            return NULL;
        return dims_;
    }
#endif
    return output ? af_output_shape(i) : af_input_shape(i);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s WEIGHTS DIR [THREADS]\n", argv[0]);
        return 2;
    }
    const int threads = argc > 3 ? atoi(argv[3]) : 1;
    const long long batch = argc > 4 ? atoll(argv[4]) : 1;
    const int ns = NUM_SYMBOLS();
    if (ns > 64 || argc < 5 + ns) {
        fprintf(stderr, "this model takes %d size symbol value(s) after BATCH\n", ns);
        return 2;
    }
    for (int k = 0; k < ns; ++k) sym_[k] = atoll(argv[5 + k]);
    const int ni = af_num_inputs(), no = af_num_outputs();
    void **in = (void **)calloc((size_t)ni + 1, sizeof(void *));
    void **out = (void **)calloc((size_t)no + 1, sizeof(void *));
    size_t *out_bytes = (size_t *)calloc((size_t)no + 1, sizeof(size_t));
    char path[4096];
    int rc = 1;
    for (int i = 0; i < ni; ++i) {
        const int64_t *shape = shape_of(0, i);
        if (!shape) goto done;
        const size_t bytes = count(af_input_rank(i), shape) * elem_size(af_input_dtype(i))
                             * (size_t)(INPUT_BATCHED(i) ? batch : 1);
        in[i] = malloc(bytes ? bytes : 1);
        snprintf(path, sizeof path, "%s/input_%d.bin", argv[2], i);
        FILE *f = fopen(path, "rb");
        if (!f || fread(in[i], 1, bytes, f) != bytes) {
            fprintf(stderr, "cannot read %s (%zu bytes)\n", path, bytes);
            if (f) fclose(f);
            goto done;
        }
        fclose(f);
    }
    for (int j = 0; j < no; ++j) {
        const int64_t *shape = shape_of(1, j);
        if (!shape) goto done;
        out_bytes[j] = count(af_output_rank(j), shape) * elem_size(af_output_dtype(j))
                       * (size_t)(OUTPUT_BATCHED(j) ? batch : 1);
        out[j] = malloc(out_bytes[j] ? out_bytes[j] : 1);
    }
    af_model *m = af_create(argv[1], threads);
    if (!m) {
        fprintf(stderr, "af_create: %s\n", af_last_error());
        goto done;
    }
    if (ns > 0) {
#ifdef AF_HAS_RUN_SYM
        if (af_run_sym(m, sym_, (const void *const *)in, (void *const *)out) != 0) {
            fprintf(stderr, "af_run_sym: %s\n", af_last_error());
            af_destroy(m);
            goto done;
        }
#endif
    } else if (batch == 1) {
        if (af_run(m, (const void *const *)in, (void *const *)out) != 0) {
            fprintf(stderr, "af_run: %s\n", af_last_error());
            af_destroy(m);
            goto done;
        }
    } else {
#ifdef AF_HAS_RUN_BATCH
        if (af_run_batch(m, batch, (const void *const *)in, (void *const *)out) != 0) {
            fprintf(stderr, "af_run_batch: %s\n", af_last_error());
            af_destroy(m);
            goto done;
        }
#else
        fprintf(stderr, "batch %lld: this model.h has no af_run_batch\n", batch);
        af_destroy(m);
        goto done;
#endif
    }
    af_destroy(m);
    for (int j = 0; j < no; ++j) {
        snprintf(path, sizeof path, "%s/output_%d.bin", argv[2], j);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(out[j], 1, out_bytes[j], f) != out_bytes[j]) {
            fprintf(stderr, "cannot write %s\n", path);
            if (f) fclose(f);
            goto done;
        }
        fclose(f);
    }
    rc = 0;
done:
    for (int i = 0; i < ni; ++i) free(in[i]);
    for (int j = 0; j < no; ++j) free(out[j]);
    free(in), free(out), free(out_bytes);
    return rc;
}
"""  # noqa: E501 - the printed source keeps its own lines


def build_sanitizer_driver(
    out_dir: str | os.PathLike[str], options: BuildOptions = BuildOptions()
) -> Path:
    """Build ``out_dir/model_driver`` with ASan+UBSan from model.c and a generated main.c."""
    out = Path(out_dir)
    _check_sources(out, ("model.c", "model.h"))
    write_package(out, options)
    (out / SANITIZE_MAIN).write_text(DRIVER_MAIN)
    _run(driver_command(options), out, "compiling the sanitizer driver")
    return out / DRIVER_NAME


def run_driver(
    exe: str | os.PathLike[str],
    weights: str | os.PathLike[str],
    inputs: Sequence[np.ndarray],
    outputs: Sequence[tuple[tuple[int, ...], np.dtype]],
    work_dir: str | os.PathLike[str],
    threads: int = 1,
    env: Mapping[str, str] | None = None,
    batch: int = 1,
    symbols: Sequence[int] = (),
) -> list[np.ndarray]:
    """Run a driver on ``inputs`` (in model order) with ``batch`` samples (af_run_batch), or
    with the size symbols' values ``symbols`` (af_run_sym, a library with run-time sizes);
    ``outputs`` gives each output's (shape, dtype). Raises AutofusionError with the
    driver's stderr (sanitizer reports included) if it fails or prints a sanitizer error."""
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    for i, arr in enumerate(inputs):
        np.ascontiguousarray(arr).tofile(work / f"input_{i}.bin")
    run_env = dict(os.environ)
    run_env.setdefault("ASAN_OPTIONS", "abort_on_error=0:detect_leaks=1")
    run_env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    if env:
        run_env.update(env)
    proc = subprocess.run(
        [str(exe), str(weights), str(work), str(threads), str(batch), *map(str, symbols)],
        capture_output=True, text=True, env=run_env,
    )  # fmt: skip
    report = proc.stderr.strip()
    if proc.returncode != 0 or "runtime error:" in report or "Sanitizer" in report:
        raise AutofusionError(f"{exe} failed (exit {proc.returncode}):\n{report}")
    return [
        np.fromfile(work / f"output_{j}.bin", dtype=dt).reshape(shape)
        for j, (shape, dt) in enumerate(outputs)
    ]
