"""Building the C test drivers of ``runtime_c/`` against afrt*.h, shared by the runtime tests
(test_runtime_epi_clamp.py, test_runtime_oom.py): one flag set per ISA, strict warnings; and
:func:`same_bits_at_thread_counts`, one build loaded at several thread counts."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from autofusion.runtime import toolchain

RUNTIME_C = Path(__file__).parent / "runtime_c"

#: C for the drivers that feed the blocked (NCHW16c) kernels: ``to_blocked(x, xb, N, C, hw)``
#: writes NCHW ``x`` as NCHW16c ``xb``, the channels past C zero.
TO_BLOCKED_C = r"""
static void to_blocked(const float *x, float *xb, int64_t N, int64_t C, int64_t hw) {
    const int64_t Cb = (C + 15) / 16;
    memset(xb, 0, (size_t)(N * Cb * 16 * hw) * 4);
    for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c)
            for (int64_t q = 0; q < hw; ++q)
                xb[((n * Cb + c / 16) * hw + q) * 16 + c % 16] = x[(n * C + c) * hw + q];
}
"""

#: C for the drivers that need a generated (non-clamp) epilogue: ``halve`` maps each output v
#: to 0.5 v + 0.1 v |v| over its tile (0 stays 0, so blocks' padding channels stay zero).
HALVE_EPILOGUE_C = r"""
static void halve(void *ctx, float *out, int64_t batch, int64_t r0, int64_t r1, int64_t c0,
                  int64_t c1, int64_t ld) {
    (void)ctx, (void)batch;
    for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) {
            const float v = out[r * ld + c];
            out[r * ld + c] = 0.5f * v + 0.1f * v * fabsf(v);
        }
}
"""

#: compile flags per build: portable micro-kernels, and ASan/UBSan for the buffers
ISA_FLAGS = {
    "native": ["-march=native", "-O2"],
    "x86-64-v3": ["-march=x86-64-v3", "-O2"],
    "x86-64-v2": ["-march=x86-64-v2", "-O2"],
    "sanitize": ["-march=native", *toolchain.SANITIZE_FLAGS, "-fno-sanitize-recover=undefined"],
}


_RULE_DRIVER = r"""
#include "afrt.h"
#include <stdio.h>
int main(void) {
    afrt_conv_params p, p2;
    int64_t *f = &p.N, *f2 = &p2.N;
    (void)f2;
    while (1) {
        for (int i = 0; i < 18 * CONVS; ++i)
            if (scanf("%ld", (long *)(i < 18 ? &f[i] : &f2[i - 18])) != 1) return 0;
        PRINT
    }
}
"""


def conv_rule_outputs(
    tmp_path: Path, print_stmt: str, shapes: Sequence[Sequence[int]], convs: int = 1
) -> list[str]:
    """What ``print_stmt`` (C statements using ``afrt_conv_params p``, and ``p2`` with
    ``convs`` 2) prints for each row of ``shapes`` (the 18 fields of ``afrt_conv_params`` per
    conv): the rule tests compare afrt.h's run-time choices with the lowering's Python rules
    through it."""
    src = tmp_path / "rule.c"
    src.write_text(_RULE_DRIVER.replace("PRINT", print_stmt).replace("CONVS", str(convs)))
    exe = tmp_path / "rule"
    cmd = [toolchain.c_compiler(), "-O1", "-std=c11", *toolchain.include_flags(), str(src),
           "-o", str(exe), "-lm"]  # fmt: skip
    subprocess.run(cmd, check=True)
    text = "\n".join(" ".join(map(str, v)) for v in shapes) + "\n"
    out = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def driver_output(tmp_path: Path, name: str, source: str, cpu: str) -> str:
    """What the C driver ``source`` prints, built in ``tmp_path`` as ``name`` for ``cpu``
    (a ``--cpu`` choice) with the library's optimisation flags and -Werror, then run."""
    src = tmp_path / f"{name}.c"
    src.write_text(source)
    exe = tmp_path / name
    subprocess.run([toolchain.c_compiler(), *toolchain.BASE_FLAGS, *toolchain.cpu_flags(cpu),
                    *toolchain.WERROR_FLAGS, *toolchain.include_flags(), str(src), "-o",
                    str(exe), "-lm"], check=True)  # fmt: skip
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout


def build_driver(src: Path, out: Path, isa: str, defines: Sequence[str] = ()) -> Path:
    """Compile the driver ``src`` to ``out`` for ``isa`` (a key of :data:`ISA_FLAGS`), with
    ``-D`` ``defines``; small shapes take the multi-thread paths (AFRT_PARALLEL_MIN_WORK=0)."""
    cmd = [
        toolchain.c_compiler(), "-std=c11", *ISA_FLAGS[isa], "-fopenmp",
        *(f"-D{d}" for d in defines), "-DAFRT_PARALLEL_MIN_WORK=0",
        *toolchain.WERROR_FLAGS, "-Wpedantic",
        *toolchain.include_flags(), str(src), "-o", str(out), "-lm",
    ]  # fmt: skip
    subprocess.run(cmd, check=True)
    return out


def uniform_feeds(model: onnx.ModelProto, seed: int) -> dict[str, np.ndarray]:
    """One f32 array per graph input of ``model`` (static shapes), uniform in [-2, 2) from
    ``seed``: the C backend tests' inputs."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for i in model.graph.input:
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        out[i.name] = rng.uniform(-2, 2, shape).astype(np.float32)
    return out


def same_bits_at_thread_counts(
    model: onnx.ModelProto,
    feeds: Mapping[str, np.ndarray],
    cpu: str,
    counts: Sequence[int] = (1, 2, 3),
    runs: int = 1,
    compile_threads: int = 2,
    config: str | None = None,
) -> dict[str, Any]:
    """``model`` compiled once for ``cpu``, its library loaded at each of ``counts`` threads
    and run ``runs`` times (later runs: cached weights, reused scratch). Every output of the
    last run at every count must match onnxruntime at the project's bar (reference outputs of
    ordinary size) and have the same bits as at ``counts[0]``: a work split must not change
    the sums. ``config``: a fusion config file for the compile. Returns the compile report."""
    import autofusion
    from autofusion.lowering.c.testing import onnxruntime_outputs
    from autofusion.runtime.loader import ModelLibrary
    from autofusion.testing import assert_close

    m = autofusion.compile(model, threads=compile_threads, cpu=cpu, config=config)
    try:
        report = m.report
        built = Path(m.directory)
        outs: list[dict[str, np.ndarray]] = []
        for threads in counts:
            lib = ModelLibrary(built / "libmodel.so", built / "weights.bin", threads)
            try:
                for _ in range(runs):
                    got = lib.run(dict(feeds))
                outs.append(got)
            finally:
                lib.close()
    finally:
        m.close()
    refs = onnxruntime_outputs(model, feeds)
    for name, ref in refs.items():
        assert 0.1 < float(np.abs(ref).max()) < 10.0, name
        for threads, got in zip(counts, outs, strict=True):
            assert_close(got[name], ref, f"{name} ({cpu}, {threads} thread(s))")
            assert got[name].view(np.uint32).tobytes() == outs[0][name].view(np.uint32).tobytes()
    return report
