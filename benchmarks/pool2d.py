"""Pooling kernels: afrt_maxpool2d_f32 / afrt_avgpool2d_f32 against their previous version
(kept in ``pool2d.c`` as the baseline), on the zoo's pool shapes, one process.

Builds ``pool2d.c`` against ``afrt.h`` and, per case, times the new and the old kernel in
interleaved rounds (kbench.h: one thread is process CPU time, more is wall time). Prints a
markdown table of the medians (us), the bytes moved (input read once, output written once)
per second of both against this machine's copy roof (``autofusion/runtime/roofs.py``), the
median of the per-round ratios (new / old; < 1: new wins) and the largest difference of the
two outputs (relative to max(1, |old|): the reciprocal against the division for average).
The default cases are the pools of the zoo's SqueezeNet-1.1, Inception, ResNet-50,
DenseNet-121 and ShuffleNet (batch 1).

    .venv/bin/python benchmarks/pool2d.py [--threads 1] [--reps 9] [--cold]
        [--cases max:64x111x111:3x3/2:0:ceil,...]   # kind:CxHxW:RxS/stride:pad[:ceil][:cip]
"""

from __future__ import annotations

import sys
from pathlib import Path

import kbench

from autofusion.runtime import roofs

SRC = Path(__file__).with_name("pool2d.c")
CASES = [
    "max:64x111x111:3x3/2:0:ceil", "max:128x55x55:3x3/2:0:ceil",  # SqueezeNet-1.1
    "max:256x27x27:3x3/2:0:ceil",
    "avg:256x23x23:3x3/1:1", "avg:64x23x23:3x3/1:1", "avg:288x12x12:3x3/1:1",  # Inception
    "max:64x47x47:3x3/2:0", "max:288x23x23:3x3/2:1",
    "max:64x112x112:3x3/2:1",  # ResNet-50
    "max:64x56x56:3x3/2:1", "avg:128x28x28:2x2/2:0", "avg:256x14x14:2x2/2:0",  # DenseNet-121
    "avg:512x7x7:2x2/2:0",
    "max:24x112x112:3x3/2:1",  # ShuffleNet
]  # fmt: skip


def parse(case: str) -> tuple[str, list[int]]:
    """A case's label and the harness's 17 numbers."""
    kind, chw, win, pad, *flags = case.split(":")
    c, h, w = (int(v) for v in chw.split("x"))
    rs, stride = win.split("/")
    r, s = (int(v) for v in rs.split("x"))
    st, pd = int(stride), int(pad)
    ceil = "ceil" in flags

    def out(size: int, k: int) -> int:
        span = size + 2 * pd - k
        o = (span + st - 1) // st + 1 if ceil else span // st + 1
        return o - 1 if ceil and (o - 1) * st >= size + pd else o

    oh, ow = out(h, r), out(w, s)
    numbers = [int(kind == "avg"), 1, c, h, w, r, s, st, st, pd, pd, pd, pd, oh, ow]
    return case, [*numbers, int("cip" in flags), 0]


def main() -> int:
    ap = kbench.parser(__doc__, "comma-separated kind:CxHxW:RxS/stride:pad[:ceil][:cip]")
    args = ap.parse_args()
    cases = args.cases.split(",") if args.cases else CASES
    parsed = [parse(c) for c in cases]
    roof = roofs.machine_roofs(args.threads).dram_gbs
    out = kbench.run(SRC, [args.threads, args.reps, int(args.cold)], [tuple(v) for _, v in parsed])
    columns = ["pool", "new us", "old us", "GB/s new / old (of copy roof)", "ratio", "max diff"]
    kbench.print_heading(args, columns, f", copy roof {roof:.1f} GB/s")
    for (label, v), line in zip(parsed, out, strict=True):
        tn, to, ratio, diff = line.split()
        nbytes = 4.0 * v[2] * (v[3] * v[4] + v[13] * v[14])
        gn, go = nbytes / float(tn) / 1e3, nbytes / float(to) / 1e3
        print(f"| {label} | {tn} | {to} | {gn:.1f} / {go:.1f} ({gn / roof:.0%} / {go / roof:.0%})"
              f" | {ratio} | {diff} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
