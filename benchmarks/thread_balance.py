"""How evenly the threads of a conv share its work, and how much faster they make it:
per-thread CPU time, robust to load.

Builds ``thread_balance.c`` against this checkout's ``afrt.h`` and runs each conv with
``OMP_WAIT_POLICY=passive``, so that a thread with nothing left to do sleeps rather than
spins and its CPU time is its share of the call; each call at ``--threads`` threads is
followed by the same call on one thread (rounds interleaved). Prints per conv the medians over
``--reps`` calls of the busiest thread's CPU time (the call's time on an idle machine), of all
threads' (the work), of the one-thread call, and three ratios: "balance" (all threads / the
busiest: the speed-up the split allows, at most ``--threads``), "work" (all threads / one
thread: what splitting adds, duplicated packing or memory stalls) and "speed-up" (one thread /
the busiest). Wall time at two threads is hopeless on a shared machine (a thread that loses
its core stalls the call); CPU time per thread is not. ``--cold`` streams 64 MiB through the
caches before every call, so weights and activations come from memory as in a whole model.
For an A/B, run it on both checkouts.

A case is ``CxKxHxRxstride`` (pad R // 2; the path ``afrt_conv2d_f32`` picks, no epilogue) or
``CxKxHxRxstridexKINDxEPI``; R may be ``R-S``, an R x S kernel padded R // 2 and S // 2
(Inception-v3's 1x7 as ``1-7``): KIND ``wg`` (Winograd), ``nchwc`` (the blocked direct conv),
``1x1t`` (gemm_1x1_t), ``auto``; EPI ``none``, ``relu``, ``add`` (residual add + Relu, the
residual in its own buffer), ``inplace`` (the same written over the residual, as
``memory.residual_inplace`` plans it). ``--model resnet50`` runs ResNet-50's convs with the
kernels and epilogues its fused build uses at two threads, ``--model googlenet-1x1``
GoogLeNet's 1x1 convs (gemm_1x1 with Relu). The default cases are the
Winograd convs of the zoo's Inception, ResNet-50 and DenseNet-121.

    .venv/bin/python benchmarks/thread_balance.py [--threads 2] [--reps 15]
        [--cold] [--cases 32x64x47x3x1,256x1024x14x1x1xautoxinplace,...]
        [--model resnet50|googlenet-1x1]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import kbench

from autofusion.dialects import clib

SRC = Path(__file__).with_name("thread_balance.c")
KINDS = {"wg": 0, "nchwc": 1, "1x1t": 2, "auto": 3}
EPIS = {"none": -1, "relu": 0, "add": 1, "inplace": 2}
CASES = [
    "32x64x47x3x1", "64x96x23x3x1", "96x96x23x3x1",  # Inception (96x96 input)
    "64x64x56x3x1", "128x128x28x3x1",  # ResNet-50
    "128x32x56x3x1", "128x32x28x3x1",  # DenseNet-121 growth convs
]  # fmt: skip
# ResNet-50 (torchvision), one case per distinct conv, as its fused build runs them at two
# threads (report.json's conv_algo): the stem, Winograd and blocked direct 3x3s, gemm_1x1
# with Relu, the residual 1x1s in place, the strided 1x1 downsamples.
RESNET50 = [
    "3x64x224x7x2xautoxrelu", "64x64x56x1x1xautoxrelu", "64x64x56x3x1xwgxrelu",
    "64x256x56x1x1xautoxnone", "64x256x56x1x1xautoxinplace", "256x64x56x1x1xautoxrelu",
    "256x128x56x1x1xautoxrelu", "128x128x56x3x2xnchwcxrelu", "256x512x56x1x2xautoxnone",
    "128x512x28x1x1xautoxinplace", "512x128x28x1x1xautoxrelu", "128x128x28x3x1xwgxrelu",
    "512x256x28x1x1xautoxrelu", "256x256x28x3x2xnchwcxrelu", "512x1024x28x1x2xautoxnone",
    "256x1024x14x1x1xautoxinplace", "1024x256x14x1x1xautoxrelu", "256x256x14x3x1xnchwcxrelu",
    "1024x512x14x1x1xautoxrelu", "512x512x14x3x2xnchwcxrelu", "1024x2048x14x1x2xautoxnone",
    "512x2048x7x1x1xautoxinplace", "2048x512x7x1x1xautoxrelu", "512x512x7x3x1xnchwcxrelu",
]  # fmt: skip
# GoogLeNet (torchvision), its 1x1 convs with their built-in Relu (all gemm_1x1 at two threads)
GOOGLENET_1X1 = [
    "192x64x28x1x1xautoxrelu", "192x96x28x1x1xautoxrelu", "192x16x28x1x1xautoxrelu",
    "192x32x28x1x1xautoxrelu", "256x128x28x1x1xautoxrelu", "256x32x28x1x1xautoxrelu",
    "256x64x28x1x1xautoxrelu", "480x192x14x1x1xautoxrelu", "480x96x14x1x1xautoxrelu",
    "480x16x14x1x1xautoxrelu", "480x64x14x1x1xautoxrelu", "512x160x14x1x1xautoxrelu",
    "512x112x14x1x1xautoxrelu", "512x24x14x1x1xautoxrelu", "512x64x14x1x1xautoxrelu",
    "512x128x14x1x1xautoxrelu", "512x144x14x1x1xautoxrelu", "512x32x14x1x1xautoxrelu",
    "528x256x14x1x1xautoxrelu", "528x160x14x1x1xautoxrelu", "528x32x14x1x1xautoxrelu",
    "528x128x14x1x1xautoxrelu", "832x256x7x1x1xautoxrelu", "832x160x7x1x1xautoxrelu",
    "832x32x7x1x1xautoxrelu", "832x128x7x1x1xautoxrelu", "832x384x7x1x1xautoxrelu",
    "832x192x7x1x1xautoxrelu", "832x48x7x1x1xautoxrelu",
]  # fmt: skip
MODELS = {"resnet50": RESNET50, "googlenet-1x1": GOOGLENET_1X1}


def parse_case(text: str) -> tuple[int, ...]:
    """``CxKxHxR[-S]xstride[xKINDxEPI]`` as the eight numbers the C driver reads."""
    parts = text.split("x")
    if len(parts) == 5:
        parts += ["auto", "none"]
    if len(parts) != 7 or parts[5] not in KINDS or parts[6] not in EPIS:
        raise SystemExit(f"thread_balance.py: bad case {text!r} (CxKxHxR[-S]xstride[xKINDxEPI])")
    r, _, s = parts[3].partition("-")
    c, k, h, st = (int(v) for v in (parts[0], parts[1], parts[2], parts[4]))
    return (c, k, h, int(r), int(s or r), st, KINDS[parts[5]], EPIS[parts[6]])


def main() -> int:
    ap = kbench.parser(__doc__, "comma-separated CxKxHxRxstride[xKINDxEPI]", reps=15)
    ap.add_argument("--model", choices=list(MODELS), help="that model's convs as the cases")
    ap.set_defaults(threads=2)
    args = ap.parse_args()
    texts = args.cases.split(",") if args.cases else MODELS.get(args.model or "", CASES)
    os.environ["OMP_WAIT_POLICY"] = "passive"
    out = kbench.run(SRC, [args.threads, args.reps, int(args.cold)], [parse_case(t) for t in texts])
    columns = ["C -> K, map, kernel/stride", "algo", "epilogue", "busiest thread us",
               "all threads us", "one thread us", "balance", "work", "speed-up"]  # fmt: skip
    state = "cold" if args.cold else "warm"
    print(f"{args.threads} thread(s) against one, per-thread CPU time, {state} caches, "
          f"medians of {args.reps} calls\n")  # fmt: skip
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    kind_names = {v: k for k, v in KINDS.items()}
    epi_names = {v: k for k, v in EPIS.items()}
    for line in out:
        c, k, h, r, s, st, kind, epi, longest, total, one = line.split()
        ci, ki, hi, ri, si, sti = int(c), int(k), int(h), int(r), int(s), int(st)
        oh, ow = (hi + 2 * (ri // 2) - ri) // sti + 1, (hi + 2 * (si // 2) - si) // sti + 1
        algo = kind_names[int(kind)]
        if algo == "auto":
            algo = clib.conv_algo([1, ci, hi, hi, ki, ri, si, oh, ow, sti, sti, ri // 2, si // 2,
                                   ri // 2, si // 2, 1, 1, 1])  # fmt: skip
        t_long, t_sum, t_one = float(longest), float(total), float(one)
        print(
            f"| {c} -> {k}, {h}x{h}, {r}x{s}/{st} | {algo} | {epi_names[int(epi)]} | {longest} | "
            f"{total} | {one} | {t_sum / t_long:.2f} | {t_sum / t_one:.2f} | {t_one / t_long:.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
