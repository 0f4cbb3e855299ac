"""Standalone timings of the afrt.h kernels (conv shapes of ResNet-50, GEMMs of BERT-base at
batch 1, ReLU epilogue) for each GEMM strategy; prints a markdown table of GFLOP/s.

    python benchmarks/bench_kernels.py [--threads 1,2] [--reps 15] [--strategies 2,0,1]

Strategies (afrt_set_gemm_strategy): 2 = afrt's own packed-panel core with cached constant
weights (default), 0 = OpenBLAS sgemm per output tile with the epilogue on the hot tile,
1 = one OpenBLAS-threaded sgemm per matrix followed by a separate epilogue pass. With one
thread the timer is process CPU time (robust to other work on the machine), else wall time.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from autofusion.runtime import toolchain

SRC = Path(__file__).with_name("bench_kernels.c")
NAMES = {0: "OpenBLAS tiles + hot epilogue", 1: "one OpenBLAS call + epilogue pass",
         2: "afrt core (packed, cached weights)"}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--strategies", default="2,0,1")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "bench_kernels"
        subprocess.run([toolchain.c_compiler(), *toolchain.OPT_FLAGS, toolchain.OPENBLAS_DEFINE,
                        *toolchain.WERROR_FLAGS,
                        *toolchain.include_flags(), str(SRC), "-o", str(exe),
                        *toolchain.link_flags()], check=True)  # fmt: skip
        for th in (int(t) for t in args.threads.split(",")):
            cols: dict[int, dict[str, str]] = {}
            order: list[str] = []
            for st in (int(s) for s in args.strategies.split(",")):
                out = subprocess.run([str(exe), str(th), str(st), str(args.reps)],
                                     capture_output=True, text=True, check=True).stdout  # fmt: skip
                cols[st] = {}
                for line in out.splitlines():
                    name, rest = line[:29].strip(), line[29:].split()
                    cols[st][name] = rest[2]  # GFLOP/s
                    if name not in order:
                        order.append(name)
            sts = list(cols)
            print(f"\n{th} thread(s), GFLOP/s (higher is better)\n")
            print("| shape | " + " | ".join(NAMES[s] for s in sts) + " |")
            print("|---|" + "---|" * len(sts))
            for name in order:
                print(f"| {name} | " + " | ".join(cols[s].get(name, "") for s in sts) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
