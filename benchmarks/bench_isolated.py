"""One engine per process: median latency of autofusion or onnxruntime alone.

The interleaved ``autofusion-bench`` is the primary measurement; this exists because with
several threads onnxruntime's spinning pool takes CPU from the run that follows it in the
same process. Run each engine in its own process and compare the medians::

    python benchmarks/bench_isolated.py resnet50 2 af
    python benchmarks/bench_isolated.py resnet50 2 ort
"""

from __future__ import annotations

import argparse
import statistics
import time

import onnxruntime as ort

import autofusion
from autofusion import zoo


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="zoo model name")
    ap.add_argument("threads", type=int)
    ap.add_argument("engine", choices=["af", "ort"])
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    model = zoo.get_model(args.model)
    feeds = zoo.sample_inputs(model)
    if args.engine == "af":
        compiled = autofusion.compile(f"zoo:{args.model}", threads=args.threads)

        def run() -> object:
            return compiled.run(feeds)
    else:
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.intra_op_num_threads = args.threads
        so.inter_op_num_threads = 1
        sess = ort.InferenceSession(
            model.SerializeToString(), so, providers=["CPUExecutionProvider"]
        )

        def run() -> object:
            return sess.run(None, feeds)

    for _ in range(5):
        run()
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    print(
        f"{args.model} threads={args.threads} {args.engine}: "
        f"median {1e3 * statistics.median(times):.1f} ms over {args.runs} runs"
    )


if __name__ == "__main__":
    main()
