"""Learned strategy vs rules alone: decision time against cluster size, and the latency of
the resulting builds.

    python benchmarks/strategy_compare.py [--models tiny_bert,vit_tiny] [--rounds 10]
        [--aggressiveness 2] [--sizes 4,8,16,32,64,128 | --sizes ""]

Part 1 runs ``fuse``'s analysis on chains of N elementwise ops on 8x64 tensors (one
cluster that grows to N ops; N - 1 joins, each decided with the cluster at its current
size) under each strategy
and prints the analysis time per decision (best of 5). Part 2 compiles each model for one
thread under each strategy (a config with ``strategy: ...`` and ``aggressiveness``, default
2, where the strategies differ), reports kernels and the
partition's agreement with ``rules``, and times the builds interleaved in one process
(CPU time per inference, median of ``rounds``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

STRATEGIES = ("rules", "hybrid", "learned")


def decision_times(sizes: Sequence[int], repeat: int = 5) -> list[str]:
    from autofusion.analysis.hardware import cpu_this_machine
    from autofusion.analysis.structure import find_clusters
    from autofusion.frontend.onnx_import import import_onnx
    from autofusion.passes.fuse import Decision
    from autofusion.policy import config_from_dict
    from autofusion.policy.engine import FusionPolicy
    from autofusion.policy.reasons import RefusalLog

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "python"))
    from test_strategy import chain_model

    lines = ["| cluster size N | " + " | ".join(f"{s} (us/decision)" for s in STRATEGIES) + " |",
             "|---:|" + "---:|" * len(STRATEGIES)]  # fmt: skip
    for n in sizes:
        module = import_onnx(chain_model(n, rows=8))  # 2 KiB per value: N ops fit L2
        f = next(iter(module.ops))
        ops = [o for o in f.regions[0].block.ops if o.name != "func.return"]
        row = []
        for s in STRATEGIES:
            pol = FusionPolicy(config_from_dict({"strategy": s}))
            best = float("inf")
            for _ in range(repeat):
                d = Decision(pol, cpu_this_machine())
                t = time.perf_counter()
                res = find_clusters(ops, d, RefusalLog(), rank=d.rank)
                best = min(best, time.perf_counter() - t)
                assert max(len(c.ops) for c in res.clusters) == n
            row.append(f"{1e6 * best / (n - 1):.1f}")
        lines.append(f"| {n} | " + " | ".join(row) + " |")
    return lines


def builds(models: Sequence[str], rounds: int, level: int) -> list[str]:
    import autofusion
    from autofusion import zoo

    lines = ["| model | strategy | kernels | groups decided by learned | same partition as rules "
             "| CPU ms (median) | vs rules |",
             "|---|---|---:|---:|---|---:|---:|"]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for name in models:
            feeds = zoo.sample_inputs(zoo.get_model(name), 0)
            compiled = {}
            for s in STRATEGIES:
                cfg = Path(tmp) / f"{s}.json"
                cfg.write_text(json.dumps({"strategy": s, "aggressiveness": level}))
                compiled[s] = autofusion.compile(f"zoo:{name}", threads=1, config=cfg)
            times: dict[str, list[float]] = {s: [] for s in STRATEGIES}
            for m in compiled.values():
                m.run(feeds)
            for _ in range(rounds):
                for s, m in compiled.items():
                    t = time.process_time()
                    m.run(feeds)
                    times[s].append(time.process_time() - t)
            base_groups = [g["origins"] for g in compiled["rules"].report["groups"]]
            base = statistics.median(times["rules"])
            for s, m in compiled.items():
                rep = m.report
                by_learned = sum(1 for g in rep["groups"] if g.get("decided_by") == "learned")
                same = [g["origins"] for g in rep["groups"]] == base_groups
                med = statistics.median(times[s])
                lines.append(f"| {name} | {s} | {rep['kernels_after']} | {by_learned} | "
                             f"{'yes' if same else 'no'} | {1e3 * med:.2f} | "
                             f"{med / base:.3f} |")  # fmt: skip
            for m in compiled.values():
                m.close()
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--models", default="tiny_bert,vit_tiny")
    ap.add_argument("--sizes", default="4,8,16,32,64,128")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument(
        "--aggressiveness",
        type=int,
        default=2,
        help="fusion level of the builds (2: row epilogues, where they differ)",
    )
    args = ap.parse_args(argv)
    if args.sizes:
        print("\n".join(decision_times([int(x) for x in args.sizes.split(",")])))
        print()
    print("\n".join(builds(args.models.split(","), args.rounds, args.aggressiveness)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
