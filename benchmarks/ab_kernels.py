"""Per-kernel time of two builds of one model (e.g. before and after a runtime change): A
and B loaded side by side, profiled per kernel (``af_profile_*``), runs alternated. For every
kernel whose name contains ``--match`` (all by default) prints the median per-call time in A
and in B and the median of the per-round ratios B / A, then the same for all kernels
together. Both builds must have the same kernels (the same model and compile options, a
different runtime). One thread: the profile's wall time per kernel, so the machine's load
shows in both.

    autofusion-compile zoo:inception -o A --threads 1     # with the old runtime
    autofusion-compile zoo:inception -o B --threads 1     # with the new one
    .venv/bin/python benchmarks/ab_kernels.py A B [--match pool] [--rounds 7] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

from autofusion.runtime.loader import ModelLibrary


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--match", default="", help="only kernels whose name contains this")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--runs", type=int, default=5, help="runs per round")
    args = ap.parse_args()
    libs = [ModelLibrary(d / "libmodel.so", d / "weights.bin", 1) for d in (args.a, args.b)]
    rng = np.random.default_rng(0)
    feeds = {s.name: rng.uniform(-1, 1, s.shape).astype(s.dtype) for s in libs[0].inputs}
    for lib in libs:
        lib.run(feeds)
        lib.profile_enable(True)
    # times[side][kernel]: seconds per call, one entry per round
    times: list[dict[str, list[float]]] = [{}, {}]
    for r in range(args.rounds):
        for i in (0, 1) if r % 2 == 0 else (1, 0):
            libs[i].profile_reset()
            for _ in range(args.runs):
                libs[i].run(feeds)
            for k in libs[i].profile():
                if args.match in k.kernel and k.calls:
                    times[i].setdefault(k.kernel, []).append(k.seconds / k.calls)
    if sorted(times[0]) != sorted(times[1]):
        print("A and B have different kernels")
        return 1
    print(f"1 thread, wall time per call, medians of {args.rounds} rounds of {args.runs} runs\n")
    print("| kernel | A ms | B ms | B / A |")
    print("|---|---|---|---|")
    sums = [0.0, 0.0]
    for name, a in times[0].items():
        b = times[1][name]
        ma, mb = statistics.median(a), statistics.median(b)
        sums[0] += ma
        sums[1] += mb
        ratio = statistics.median(y / x for x, y in zip(a, b, strict=True))
        print(f"| {name} | {ma * 1e3:.3f} | {mb * 1e3:.3f} | {ratio:.2f} |")
    # the sum of the medians (a sum per round would take every round's worst outlier)
    print(f"| sum | {sums[0] * 1e3:.3f} | {sums[1] * 1e3:.3f} | {sums[1] / sums[0]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
