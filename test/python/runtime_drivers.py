"""Building the C test drivers of ``runtime_c/`` against afrt*.h, shared by the runtime tests
(test_runtime_epi_clamp.py, test_runtime_oom.py): one flag set per ISA, strict warnings."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

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
    afrt_conv_params p;
    int64_t *f = &p.N;
    while (1) {
        for (int i = 0; i < 18; ++i)
            if (scanf("%ld", (long *)&f[i]) != 1) return 0;
        PRINT
    }
}
"""


def conv_rule_outputs(
    tmp_path: Path, print_stmt: str, shapes: Sequence[Sequence[int]]
) -> list[str]:
    """What ``print_stmt`` (C statements using ``afrt_conv_params p``) prints for each conv of
    ``shapes`` (the 18 fields of ``afrt_conv_params`` each): the rule tests compare afrt.h's
    run-time choices with the lowering's Python rules through it."""
    src = tmp_path / "rule.c"
    src.write_text(_RULE_DRIVER.replace("PRINT", print_stmt))
    exe = tmp_path / "rule"
    cmd = [toolchain.c_compiler(), "-O1", "-std=c11", *toolchain.include_flags(), str(src),
           "-o", str(exe), "-lm"]  # fmt: skip
    subprocess.run(cmd, check=True)
    text = "\n".join(" ".join(map(str, v)) for v in shapes) + "\n"
    out = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


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
