"""Two builds of one model (e.g. before and after a runtime change) timed in one process.

Loads ``A/libmodel.so`` and ``B/libmodel.so`` (directories written by ``autofusion-compile``)
side by side, checks that they give the same outputs (the project's fp32 bar) on seeded
inputs, then runs them alternately, ``--rounds`` rounds of ``--runs`` runs each, and prints
per-round medians and the median of the per-round ratios B / A. One thread: process CPU time
per run (robust to other work on a loaded machine); more: wall time. Also the minima over all
runs and their ratio (closest to a quiet machine's figures when the load comes and goes).

    .venv/bin/python benchmarks/ab_libraries.py OLD_DIR NEW_DIR [--threads 1] [--rounds 7]
        [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from libpair import load_pair

from autofusion.testing import assert_close


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    libs, feeds = load_pair(args.a, args.b, args.threads)
    outs = [lib.run(feeds) for lib in libs]
    for name, ref in outs[0].items():
        assert_close(outs[1][name], ref, f"{name}: B against A")
    clock = time.process_time if args.threads == 1 else time.perf_counter
    per: list[list[float]] = [[], []]
    best = [float("inf"), float("inf")]
    ratios = []
    for r in range(args.rounds):
        med = []
        for i, lib in enumerate(libs if r % 2 == 0 else libs[::-1]):
            ts = []
            for _ in range(args.runs):
                t0 = clock()
                lib.run(feeds)
                ts.append(clock() - t0)
            k = i if r % 2 == 0 else 1 - i
            best[k] = min(best[k], *ts)
            med.append((i if r % 2 == 0 else 1 - i, statistics.median(ts)))
        m = dict(med)
        per[0].append(m[0])
        per[1].append(m[1])
        ratios.append(m[1] / m[0])
        print(f"round {r}: A {m[0] * 1e3:.2f} ms  B {m[1] * 1e3:.2f} ms  B/A {ratios[-1]:.3f}")
    a_ms, b_ms = statistics.median(per[0]) * 1e3, statistics.median(per[1]) * 1e3
    print(f"median: A {a_ms:.2f} ms  B {b_ms:.2f} ms  ratio B/A {statistics.median(ratios):.3f} "
          f"(per-round ratios {min(ratios):.3f}..{max(ratios):.3f})")  # fmt: skip
    print(f"minimum: A {best[0] * 1e3:.2f} ms  B {best[1] * 1e3:.2f} ms  "
          f"ratio B/A {best[1] / best[0]:.3f}")  # fmt: skip
    for lib in libs:
        lib.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
