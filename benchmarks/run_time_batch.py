"""Latency against batch: one run-time-batch library, static per-batch builds, onnxruntime.

For an ONNX model (``--model PATH``; its input dim 0 is made the symbol ``batch`` when the
export has a fixed batch, and its value_info is dropped) at each batch of ``--batches``
(default 1,2,4,8) it measures, each engine in its own process, in ``--rounds`` interleaved
rounds (median over rounds of each round's median over ``--runs``):

- ``dynamic``: one ``autofusion.compile(..., dynamic={"batch": (1, max)})``: one library
  whose ``af_run_batch`` serves every batch (docs/dynamic.md, "Run-time batch");
- ``static``: one ``autofusion.compile(..., input_shapes=...)`` per batch;
- ``onnxruntime``: one session on the dynamic-batch model (ORT_ENABLE_ALL, same threads).

Prints per batch the three medians and the ratios dynamic/static, dynamic/ORT, static/ORT,
the compile time of each of ours, and whether both match onnxruntime (the project's bar).
Not a test: nothing here asserts a time.

    python benchmarks/run_time_batch.py --model googlenet.onnx --batches 1,2,4,8 --threads 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx

ENGINES = ("dynamic", "static", "onnxruntime")


def dynamic_batch_model(path: str) -> onnx.ModelProto:
    """The model with dim 0 of every input and output named ``batch`` (value_info dropped,
    so no stale fixed shape survives)."""
    model = onnx.load(path)
    for v in [*model.graph.input, *model.graph.output]:
        dims = v.type.tensor_type.shape.dim
        if dims:
            dims[0].dim_param = "batch"
    del model.graph.value_info[:]
    return model


def _feeds(model: onnx.ModelProto, batch: int) -> dict[str, np.ndarray]:
    from onnx import helper

    rng = np.random.default_rng(batch)
    inits = {t.name for t in model.graph.initializer}
    out = {}
    for v in model.graph.input:
        if v.name in inits:
            continue
        t = v.type.tensor_type
        shape = [batch] + [d.dim_value for d in t.shape.dim[1:]]
        dtype = helper.tensor_dtype_to_np_dtype(t.elem_type)
        out[v.name] = rng.standard_normal(shape).astype(dtype)
    return out


def _median_ms(run: Any, runs: int, warmup: int) -> float:
    for _ in range(warmup):
        run()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def worker(args: argparse.Namespace) -> None:
    """One engine, every batch, in this process; writes JSON and the outputs (npz)."""
    import autofusion

    model = dynamic_batch_model(args.model)
    batches = [int(v) for v in args.batches.split(",")]
    result: dict[str, Any] = {"engine": args.worker, "batches": {}}
    outputs: dict[str, np.ndarray] = {}
    if args.worker == "dynamic":
        t0 = time.perf_counter()
        lib = autofusion.compile(model, threads=args.threads, dynamic={"batch": (1, max(batches))})
        result["compile_s"] = time.perf_counter() - t0
        result["arena_bytes"] = lib.report.get("arena_bytes")
    elif args.worker == "onnxruntime":
        from autofusion.tools.bench import ort_session

        sess = ort_session(model.SerializeToString(), args.threads)
    for b in batches:
        feeds = _feeds(model, b)
        entry: dict[str, Any] = {}
        if args.worker == "dynamic":
            out = lib.run(feeds)
            run = lambda: lib.run(feeds)  # noqa: E731
        elif args.worker == "static":
            t0 = time.perf_counter()
            shapes = {k: list(v.shape) for k, v in feeds.items()}
            static = autofusion.compile(model, threads=args.threads, input_shapes=shapes)
            entry["compile_s"] = time.perf_counter() - t0
            entry["arena_bytes"] = static.report.get("arena_bytes")
            out = static.run(feeds)
            run = lambda: static.run(feeds)  # noqa: E731
        else:
            names = [o.name for o in sess.get_outputs()]
            out = dict(zip(names, sess.run(names, feeds)))
            run = lambda: sess.run(names, feeds)  # noqa: E731
        entry["median_ms"] = _median_ms(run, args.runs, args.warmup)
        result["batches"][str(b)] = entry
        outputs.update({f"{b}/{k}": v for k, v in out.items()})
    np.savez(args.outputs, **outputs)
    Path(args.out).write_text(json.dumps(result))


def _spawn(engine: str, args: argparse.Namespace, tmp: Path, rnd: int) -> dict:
    out, npz = tmp / f"{engine}-{rnd}.json", tmp / f"{engine}-{rnd}.npz"
    cmd = [sys.executable, __file__, "--worker", engine, "--model", args.model, "--batches",
           args.batches, "--threads", str(args.threads), "--runs", str(args.runs), "--warmup",
           str(args.warmup), "--out", str(out), "--outputs", str(npz)]  # fmt: skip
    env = {**os.environ, "AUTOFUSION_CACHE_DIR": str(tmp / "cache"), "AUTOFUSION_CACHE_MAX_MB": "0"}
    subprocess.run(cmd, check=True, env=env)
    result = json.loads(out.read_text())
    with np.load(npz) as data:
        result["outputs"] = {k: data[k] for k in data.files}
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--model", required=True, help="an .onnx file (a CNN with a batch dim 0)")
    ap.add_argument("--batches", default="1,2,4,8")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    ap.add_argument("--worker", choices=ENGINES, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--outputs", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    from autofusion.testing import compare

    batches = [int(v) for v in args.batches.split(",")]
    load0 = os.getloadavg()[0]
    rounds: list[dict[str, dict]] = []
    with tempfile.TemporaryDirectory(prefix="rtbatch-") as d:
        for rnd in range(args.rounds):
            rounds.append({e: _spawn(e, args, Path(d), rnd) for e in ENGINES})
            print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    load1 = os.getloadavg()[0]

    def med(engine: str, b: int) -> float:
        return statistics.median(r[engine]["batches"][str(b)]["median_ms"] for r in rounds)

    first = rounds[0]
    ort_out = first["onnxruntime"]["outputs"]
    figures: dict[int, dict[str, Any]] = {}
    dyn0 = first["dynamic"]
    print(f"{Path(args.model).name}, {args.threads} thread(s), {args.runs} runs x "
          f"{args.rounds} rounds (median of medians), each engine in its own process; load "
          f"{load0:.1f} -> {load1:.1f}; one dynamic library, compiled in "
          f"{dyn0['compile_s']:.1f} s, arena {dyn0['arena_bytes']} B")  # fmt: skip
    print(f"{'batch':>5} {'dyn ms':>9} {'static ms':>9} {'ORT ms':>9} {'dyn/st':>7} "
          f"{'dyn/ORT':>7} {'st/ORT':>7} {'st compile s':>12} {'st arena B':>11}  "
          "match")  # fmt: skip
    for b in batches:
        dyn, st, ort = med("dynamic", b), med("static", b), med("onnxruntime", b)
        keys = [k for k in ort_out if k.startswith(f"{b}/")]
        match = all(
            compare(first[e]["outputs"][k], ort_out[k]).match
            for e in ("dynamic", "static")
            for k in keys
        )
        s = first["static"]["batches"][str(b)]
        figures[b] = {"dynamic_ms": dyn, "static_ms": st, "onnxruntime_ms": ort,
                      "static_compile_s": s["compile_s"], "static_arena_bytes": s["arena_bytes"],
                      "match": match}  # fmt: skip
        print(f"{b:>5} {dyn:>9.3f} {st:>9.3f} {ort:>9.3f} {dyn / st:>7.3f} {dyn / ort:>7.3f} "
              f"{st / ort:>7.3f} {s['compile_s']:>12.1f} {s['arena_bytes']!s:>11}  "
              f"{'yes' if match else 'NO'}")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps({"model": args.model, "threads": args.threads,
                                               "batches": figures, "load": [load0, load1]},
                                              indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
