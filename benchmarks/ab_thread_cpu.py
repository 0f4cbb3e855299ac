"""Two builds of one model at several threads: each thread's on-CPU time per run.

Loads ``A/libmodel.so`` and ``B/libmodel.so`` (``autofusion-compile`` folders) side by side
and runs them alternately, ``--rounds`` rounds of ``--runs`` runs, reading every thread's
on-CPU time from ``/proc/self/task/*/schedstat`` around each round. With
``OMP_WAIT_POLICY=passive`` (this script re-executes itself with it set, since libgomp reads
it once) a thread that waits for the others sleeps, so its CPU time is its own work: the
busiest thread's time is a run's latency on an idle machine (fork and join waits aside) and
all threads' time over it is the speed-up the model's splits allow. Wall time at two
threads is hopeless on a shared machine (a thread that loses its core stalls every join);
these are not. Prints per build the medians over rounds (ms per run) and the median of the
per-round ratios B / A of the busiest thread. Linux only (schedstat).

Both libraries run on all their threads: the runtime's thread-count adaptation (a worker
that starts late is dropped for a while, docs/runtime.md) is turned off, since on a busy
machine it cut the two builds to one thread for different shares of their regions (ResNet-50,
load average 12: "speed-up allowed" 1.17 for one build and 1.41 for the other, same kernels
mostly), and then B / A measured the cuts. ``--adapt`` keeps it.

    .venv/bin/python benchmarks/ab_thread_cpu.py A B [--threads 2] [--rounds 11] [--runs 10]
        [--adapt]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

from libpair import load_pair, on_cpu_ns


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--adapt", action="store_true", help="keep the thread-count adaptation on")
    args = ap.parse_args()
    if os.environ.get("OMP_WAIT_POLICY") != "passive":
        os.environ["OMP_WAIT_POLICY"] = "passive"
        os.execv(sys.executable, [sys.executable, *sys.argv])
    libs, feeds = load_pair(args.a, args.b, args.threads)
    for lib in libs:
        if not args.adapt:
            lib.set_thread_lag_us(1e12)
        lib.run(feeds)
    busiest: list[list[float]] = [[], []]
    total: list[list[float]] = [[], []]
    for _ in range(args.rounds):
        for i, lib in enumerate(libs):
            t0 = on_cpu_ns()
            for _ in range(args.runs):
                lib.run(feeds)
            t1 = on_cpu_ns()
            ms = [(t1[k] - t0.get(k, 0)) / args.runs / 1e6 for k in t1]
            busiest[i].append(max(ms))
            total[i].append(sum(ms))
    print(f"{args.threads} thread(s), per-thread on-CPU time, medians of {args.rounds} rounds "
          f"of {args.runs} runs")  # fmt: skip
    for i, name in enumerate("AB"):
        b, t = statistics.median(busiest[i]), statistics.median(total[i])
        print(f"{name}: busiest thread {b:.3f} ms  all threads {t:.3f} ms  "
              f"speed-up allowed {t / b:.2f}")  # fmt: skip
    ratio = statistics.median(y / x for x, y in zip(busiest[0], busiest[1], strict=True))
    print(f"busiest thread B/A {ratio:.3f} (median of per-round ratios)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
