"""Two versions of the runtime headers timed on the same convolutions, alternately.

Builds ``conv_ab.c`` once against ``OLD`` (a folder holding ``afrt.h`` and its companion
headers, e.g. ``git archive main autofusion/runtime/include | tar -x -C /tmp/old``) and once
against this checkout's, then runs the two binaries in turn for ``--rounds`` rounds. Each run
times ``afrt_conv2d_f32`` (the path the runtime picks by itself: ``direct_nchwc`` is the
lowering's choice and is not taken here) on every conv, one thread, process CPU time: the
median of ``--reps`` calls warm, and of ``--reps`` calls each after streaming 64 MiB through
the caches (cold, as weights are in a model). Prints, per conv, the medians over rounds, the
ratios new / old, new's GFLOP/s and whether both builds gave the same checksum. The default
grid holds ResNet-50's (1x1, the stride-2 1x1 downsampling), Inception-v1's (5x5, 1x1) and
SqueezeNet-1.1's (1x1 at 13x13) GEMM-path convolutions.

    .venv/bin/python benchmarks/conv_ab.py OLD [--rounds 5] [--reps 7]
        [--cases 256x512x56x1x2,...]    # CxKxHxRxstride, pad R // 2
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from autofusion.runtime import toolchain

SRC = Path(__file__).with_name("conv_ab.c")
GRID = [
    # ResNet-50: 1x1 at 56, 28, 14, 7; stride-2 downsampling
    (64, 256, 56, 1, 1), (256, 64, 56, 1, 1), (128, 512, 28, 1, 1), (512, 128, 28, 1, 1),
    (1024, 256, 14, 1, 1), (256, 1024, 14, 1, 1), (512, 2048, 7, 1, 1),
    (256, 512, 56, 1, 2), (512, 1024, 28, 1, 2), (1024, 2048, 14, 1, 2),
    # Inception-v1 (zoo, 96x96 input): 5x5 and 1x1
    (48, 64, 23, 5, 1), (64, 96, 12, 5, 1), (256, 64, 23, 1, 1), (288, 96, 12, 1, 1),
    # SqueezeNet-1.1: 1x1 at 13x13, the classifier
    (64, 256, 13, 1, 1), (48, 192, 13, 1, 1), (512, 1000, 13, 1, 1),
]  # fmt: skip


def _build(include: Path, exe: Path) -> None:
    subprocess.run([toolchain.c_compiler(), *toolchain.OPT_FLAGS, *toolchain.WERROR_FLAGS,
                    f"-I{include}", str(SRC), "-o", str(exe), "-lm"], check=True)  # fmt: skip


def _run(exe: Path, reps: int, cases: list[tuple[int, ...]]) -> list[list[str]]:
    argv = [str(exe), str(reps), *(str(v) for case in cases for v in case)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return [line.split() for line in out.splitlines() if not line.startswith("#")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path, help="folder with the old afrt.h and companions")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--cases", default="", help="comma-separated CxKxHxRxstride (default: a grid)")
    args = ap.parse_args()
    cases = GRID
    if args.cases:
        cases = [tuple(int(v) for v in c.split("x")) for c in args.cases.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        exes = [Path(tmp) / "conv_old", Path(tmp) / "conv_new"]
        _build(args.old, exes[0])
        _build(toolchain.INCLUDE_DIR, exes[1])
        rows: list[list[list[list[str]]]] = [[], []]
        for r in range(args.rounds):
            for i in (0, 1) if r % 2 == 0 else (1, 0):
                rows[i].append(_run(exes[i], args.reps, cases))
    print(
        f"1 thread, CPU time, medians over {args.rounds} alternated rounds of {args.reps} calls\n"
    )
    print("| C -> K, map, kernel/stride | warm old / new us | ratio | cold old / new us | ratio "
          "| new GFLOP/s warm / cold | same sum |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for n, (c, k, h, r, s) in enumerate(cases):
        med = [[statistics.median(float(run[n][col]) for run in rows[i]) for col in (5, 6)]
               for i in (0, 1)]  # fmt: skip
        same = rows[0][0][n][7] == rows[1][0][n][7]
        oh = (h + 2 * (r // 2) - r) // s + 1
        gf = [2.0 * k * oh * oh * c * r * r / (t * 1e3) for t in med[1]]
        print(f"| {c} -> {k}, {h}x{h}, {r}x{r}/{s} | {med[0][0]:.0f} / {med[1][0]:.0f} "
              f"| {med[1][0] / med[0][0]:.3f} | {med[0][1]:.0f} / {med[1][1]:.0f} "
              f"| {med[1][1] / med[0][1]:.3f} | {gf[0]:.0f} / {gf[1]:.0f} | {same} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
