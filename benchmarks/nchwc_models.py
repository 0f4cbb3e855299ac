"""Per-conv time of the direct blocked kernel inside a model: two builds of one model, A
with ``conv_layout: nchw`` and B with the default, loaded side by side and profiled per
kernel (``af_profile_*``), runs alternated. For the kernels that B computes with
``direct_nchwc`` (from B's ``report.json``), prints the median per-run time of those kernels
in A and in B, the median of the per-round ratios B / A, and the whole run's.
One thread: the profile's wall time per kernel (the load of the machine shows in both).

    autofusion-compile zoo:resnet50 -o A --config nchw.json     # {"conv_layout": "nchw"}
    autofusion-compile zoo:resnet50 -o B
    .venv/bin/python benchmarks/nchwc_models.py A B [--rounds 11]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from libpair import load_pair


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--rounds", type=int, default=11)
    args = ap.parse_args()
    report = json.loads((args.b / "report.json").read_text())
    blocked = {r["kernel"] for r in report.get("conv_algo", []) if r["conv_algo"] == "direct_nchwc"}
    if not blocked:
        print("B has no direct_nchwc conv")
        return 1
    libs, feeds = load_pair(args.a, args.b, profile=True)
    conv: list[list[float]] = [[], []]
    total: list[list[float]] = [[], []]
    for r in range(args.rounds):
        for i in (0, 1) if r % 2 == 0 else (1, 0):
            libs[i].profile_reset()
            libs[i].run(feeds)
            prof = libs[i].profile()
            conv[i].append(sum(k.seconds for k in prof if k.kernel in blocked))
            total[i].append(sum(k.seconds for k in prof))
    ratio = statistics.median(b / a for a, b in zip(conv[0], conv[1], strict=True))
    whole = statistics.median(b / a for a, b in zip(total[0], total[1], strict=True))
    print(f"{len(blocked)} direct_nchwc convs: A {statistics.median(conv[0]) * 1e3:.2f} ms  "
          f"B {statistics.median(conv[1]) * 1e3:.2f} ms  ratio B/A {ratio:.3f}")  # fmt: skip
    print(f"all kernels: A {statistics.median(total[0]) * 1e3:.2f} ms  "
          f"B {statistics.median(total[1]) * 1e3:.2f} ms  ratio B/A {whole:.3f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
