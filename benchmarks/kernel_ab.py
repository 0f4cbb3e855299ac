"""Per-kernel A/B: two builds of one model, each kernel's time in A and in B.

Loads ``A/libmodel.so`` and ``B/libmodel.so`` (``autofusion-compile`` folders of the same
model, e.g. before and after a runtime change) side by side, runs them alternately
(``--rounds`` rounds of ``--runs`` runs) on the same seeded inputs with the per-kernel
profile on (``af_profile_*``, wall time per call, or with ``--clock thread`` the calling
thread's on-CPU time; one thread), and prints for the kernels whose name or conv algorithm
contains ``--match`` (all by default; e.g. ``--match winograd``; none is one message, exit 1)
the median (``--stat min``: fastest) time per call in A and in B, the median of the per-round
ratios B / A and, where B's report has one, the conv algorithm. With
more than ``2 * --top`` kernels only the ``--top`` that moved most each way are listed; the
sums of the medians (minima) follow. Where ``ab_libraries.py`` gives the whole run's ratio,
this says which kernels moved. Kernels only one build has are listed with the other side
empty.

    autofusion-compile zoo:inception -o A --threads 1     # with the old runtime
    autofusion-compile zoo:inception -o B --threads 1     # with the new one
    .venv/bin/python benchmarks/kernel_ab.py A B [--match pool] [--rounds 15] [--runs 3]
        [--top 4] [--clock wall|thread] [--stat median|min]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from libpair import load_pair


def matching(kernels: set[str], algos: dict[str, str], match: str) -> set[str]:
    """The kernels whose name or conv algorithm (``algos``: kernel -> "algo shape") contains
    ``match`` (all of them for "")."""
    return {k for k in kernels if match in k or match in algos.get(k, "")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument(
        "--match",
        default="",
        help="only kernels whose name or conv algorithm (B's report) contains this",
    )
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--runs", type=int, default=3, help="runs per round")
    ap.add_argument("--top", type=int, default=4, help="kernels shown at each end")
    ap.add_argument(
        "--clock",
        choices=("wall", "thread"),
        default="wall",
        help="time each kernel by the wall clock or by the calling thread's on-CPU time (which "
        "leaves out the time the thread waits for a core on a loaded machine)",
    )
    ap.add_argument(
        "--stat",
        choices=("median", "min"),
        default="median",
        help="each kernel's median or fastest round",
    )
    args = ap.parse_args(argv)
    algos: dict[str, str] = {}
    report = args.b / "report.json"
    if report.exists():
        for r in json.loads(report.read_text()).get("conv_algo", []):
            algos[r["kernel"]] = f"{r['conv_algo']} {r['shape']}"
    libs, feeds = load_pair(args.a, args.b, profile=True)
    for lib in libs:
        lib.profile_enable(True, args.clock)
    for lib in libs:  # one profiled run each, for the kernels' names
        lib.run(feeds)
    names = {k.kernel for lib in libs for k in lib.profile() if k.calls}
    wanted = matching(names, algos, args.match)
    if not wanted:
        print(
            f"kernel_ab: no kernel of {args.a} or {args.b} has {args.match!r} in its name or "
            "conv algorithm",
            file=sys.stderr,
        )
        return 1
    # times[side][kernel]: seconds per call, one entry per round
    times: list[dict[str, list[float]]] = [{}, {}]
    for r in range(args.rounds):
        for i in (0, 1) if r % 2 == 0 else (1, 0):
            libs[i].profile_reset()
            for _ in range(args.runs):
                libs[i].run(feeds)
            for k in libs[i].profile():
                if k.kernel in wanted and k.calls:
                    times[i].setdefault(k.kernel, []).append(k.seconds / k.calls)
    stat = statistics.median if args.stat == "median" else min
    med = [{k: stat(v) for k, v in t.items()} for t in times]
    rows = []
    for k in sorted(set(med[0]) | set(med[1])):
        a, b = med[0].get(k), med[1].get(k)
        ratio = (
            statistics.median(y / x for x, y in zip(times[0][k], times[1][k], strict=True))
            if a is not None and b is not None
            else None
        )
        rows.append(((b or 0.0) - (a or 0.0), k, a, b, ratio))
    rows.sort()
    shown = rows if len(rows) <= 2 * args.top else rows[: args.top] + rows[-args.top :]
    what = f"{'wall' if args.clock == 'wall' else 'thread CPU'} time per call"
    print(f"1 thread, {what}, {args.stat}s of {args.rounds} rounds of {args.runs} runs\n")
    print("| kernel | A ms | B ms | B / A | algo (B) |")
    print("|---|---|---|---|---|")
    for _, k, a, b, ratio in shown:
        cells = [f"{x * 1e3:.3f}" if x is not None else "" for x in (a, b)]
        rt = f"{ratio:.2f}" if ratio is not None else ""
        print(f"| {k} | {cells[0]} | {cells[1]} | {rt} | {algos.get(k, '')} |")
    # the sums of the medians / minima (a sum per round would take every round's worst outlier)
    sums = [sum(m.values()) * 1e3 for m in med]
    print(f"\nall {len(rows)} kernels: A {sums[0]:.3f} ms  B {sums[1]:.3f} ms  ", end="")
    print(f"B/A {sums[1] / sums[0]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
