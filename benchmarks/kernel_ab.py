"""Per-kernel A/B: two builds of one model, each kernel's time in A and in B.

Loads ``A/libmodel.so`` and ``B/libmodel.so`` (``autofusion-compile`` folders of the same
model, e.g. before and after a runtime change) side by side, runs them alternately
``--rounds`` times on the same seeded inputs with the per-kernel profile on (``af_profile_*``,
wall time per kernel), and prints the kernels whose median times differ most (B - A), with
their conv algorithm from ``B/report.json`` where it has one, then the sums of the medians.
Where ``ab_libraries.py`` gives the whole run's ratio, this says which kernels moved.

    .venv/bin/python benchmarks/kernel_ab.py A B [--rounds 31] [--top 4]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

from autofusion.runtime.loader import ModelLibrary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--rounds", type=int, default=31)
    ap.add_argument("--top", type=int, default=4, help="kernels shown at each end")
    args = ap.parse_args()
    for d in (args.a, args.b):
        if not (d / "libmodel.so").is_file():
            print(
                f"kernel_ab: {d}: no libmodel.so (an autofusion-compile folder?)", file=sys.stderr
            )
            return 1
    report = args.b / "report.json"
    algos: dict[str, str] = {}
    if report.exists():
        for r in json.loads(report.read_text()).get("conv_algo", []):
            algos[r["kernel"]] = f"{r['conv_algo']} {r['shape']}"
    libs = [ModelLibrary(d / "libmodel.so", d / "weights.bin", 1) for d in (args.a, args.b)]
    rng = np.random.default_rng(0)
    feeds = {s.name: rng.uniform(-1, 1, s.shape).astype(s.dtype) for s in libs[0].inputs}
    for lib in libs:
        lib.run(feeds)
        lib.profile_enable(True)
    times: list[dict[str, list[float]]] = [{}, {}]
    for r in range(args.rounds):
        for i in (0, 1) if r % 2 == 0 else (1, 0):
            libs[i].profile_reset()
            libs[i].run(feeds)
            for k in libs[i].profile():
                times[i].setdefault(k.kernel, []).append(k.seconds)
    med = [{k: statistics.median(v) for k, v in t.items()} for t in times]
    rows = sorted((med[1].get(k, 0.0) - a, k) for k, a in med[0].items())
    shown = rows if len(rows) <= 2 * args.top else rows[: args.top] + rows[-args.top :]
    print(f"medians of {args.rounds} alternated runs, wall time per kernel\n")
    print("| kernel | A ms | B ms | B - A ms | algo (B) |")
    print("|---|---|---|---|---|")
    for d, k in shown:
        print(f"| {k} | {med[0][k] * 1e3:.3f} | {med[1].get(k, 0.0) * 1e3:.3f} | "
              f"{d * 1e3:+.3f} | {algos.get(k, '')} |")  # fmt: skip
    total = [sum(m.values()) * 1e3 for m in med]
    print(f"\nall kernels: A {total[0]:.3f} ms  B {total[1]:.3f} ms  B/A {total[1] / total[0]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
