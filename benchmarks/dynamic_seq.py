"""Latency against sequence length: the shape-specialising model, static builds, onnxruntime.

For a zoo BERT (``--model tiny_bert`` or ``bert_base``) at each length of ``--lengths``
(default 64,128,256,512) it measures, each engine in its own process, in ``--rounds``
interleaved rounds (median over rounds of each round's median over ``--runs``):

- ``dynamic``: ``autofusion.compile()`` of the BERT exported with a dynamic sequence axis
  (``bert(name, dynamic_seq=True)``, inputs ``[1, 'seq']``): one model serving every length
  (one specialisation per length, kept in its LRU). Its first call at each length (the
  specialising compile, with an empty compile cache in round 1; a load from the on-disk
  cache in later rounds) is reported apart from the steady state.
- ``static``: one ``autofusion.compile()`` per length of the static export at that length.
- ``onnxruntime``: one session on the dynamic export (ORT_ENABLE_ALL, same threads).

Prints per length the three medians, the ratios dynamic/static, dynamic/ORT and static/ORT,
each engine's growth factor from the first to the last length, and the numerics of both of
ours against onnxruntime (the project's bar). Not a test: nothing here asserts a time.

    python benchmarks/dynamic_seq.py --model tiny_bert --lengths 64,128,256,512 --threads 1
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from engines import add_options, common_argv, finish_worker, median_ms, spawn

ENGINES = ("dynamic", "static", "onnxruntime")


def _feeds(seq: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seq)
    mask = np.ones((1, seq), np.int64)
    mask[0, seq - seq // 8 :] = 0  # some padding
    return {"input_ids": rng.integers(0, 100, (1, seq)).astype(np.int64), "attention_mask": mask}


def worker(args: argparse.Namespace) -> None:
    """One engine, every length, in this process; writes JSON and the outputs (npz)."""
    import autofusion
    from autofusion.zoo.transformer import bert

    lengths = [int(v) for v in args.lengths.split(",")]
    result: dict[str, Any] = {"engine": args.worker, "lengths": {}}
    outputs: dict[str, np.ndarray] = {}
    if args.worker == "dynamic":
        t0 = time.perf_counter()
        model = autofusion.compile(bert(args.model, dynamic_seq=True), threads=args.threads,
                                   dynamic={"seq": (1, 512)})  # fmt: skip
        result["create_s"] = time.perf_counter() - t0
    elif args.worker == "onnxruntime":
        from autofusion.tools.bench import ort_session

        sess = ort_session(bert(args.model, dynamic_seq=True).SerializeToString(), args.threads)
    for seq in lengths:
        feeds = _feeds(seq)
        entry: dict[str, Any] = {}
        if args.worker == "dynamic":
            t0 = time.perf_counter()
            out = model.run(feeds)  # the first call at this length specialises
            entry["first_call_s"] = time.perf_counter() - t0
            entry["disk_hit"] = bool(model.report["shapes"][-1]["report"].get("cached"))
            run = lambda: model.run(feeds)  # noqa: E731
        elif args.worker == "static":
            t0 = time.perf_counter()
            static = autofusion.compile(bert(args.model, seq=seq), threads=args.threads)
            entry["compile_s"] = time.perf_counter() - t0
            out = static.run(feeds)
            run = lambda: static.run(feeds)  # noqa: E731
        else:
            names = [o.name for o in sess.get_outputs()]
            out = dict(zip(names, sess.run(names, feeds)))
            run = lambda: sess.run(names, feeds)  # noqa: E731
        entry["median_ms"] = median_ms(run, args.runs, args.warmup)
        result["lengths"][str(seq)] = entry
        outputs.update({f"{seq}/{k}": v for k, v in out.items()})
    if args.worker == "dynamic":
        result["shape_cache"] = model.report["shape_cache"]
    finish_worker(args, result, outputs)


def _spawn(engine: str, args: argparse.Namespace, tmp: Path, rnd: int, cache: Path) -> dict:
    argv = ["--model", args.model, "--lengths", args.lengths, *common_argv(args)]
    # a private cache with no size limit: bert_base's 8 builds exceed the default 2 GB, and
    # an eviction would turn a later round's disk-cache load into a compile
    env = {"AUTOFUSION_CACHE_DIR": str(cache), "AUTOFUSION_CACHE_MAX_MB": "0"}
    return spawn(__file__, engine, argv, tmp, rnd, env)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--model", default="tiny_bert", help="zoo BERT config (tiny_bert, bert_base)")
    ap.add_argument("--lengths", default="64,128,256,512")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    add_options(ap, ENGINES)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    from autofusion.testing import compare

    lengths = [int(v) for v in args.lengths.split(",")]
    load0 = os.getloadavg()[0]
    rounds: list[dict[str, dict]] = []
    with tempfile.TemporaryDirectory(prefix="dynseq-") as d:
        tmp = Path(d)
        cache = tmp / "cache"  # empty in round 1: first calls there are real compiles
        for rnd in range(args.rounds):
            rounds.append({e: _spawn(e, args, tmp, rnd, cache) for e in ENGINES})
            print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    load1 = os.getloadavg()[0]

    def med(engine: str, seq: int) -> float:
        return statistics.median(r[engine]["lengths"][str(seq)]["median_ms"] for r in rounds)

    first = rounds[0]
    ort_out = first["onnxruntime"]["outputs"]
    rows, figures = [], {}
    for seq in lengths:
        dyn, st, ort = med("dynamic", seq), med("static", seq), med("onnxruntime", seq)
        numerics = {}
        for engine in ("dynamic", "static"):
            outs = first[engine]["outputs"]
            keys = [k for k in ort_out if k.startswith(f"{seq}/")]
            numerics[engine] = all(compare(outs[k], ort_out[k]).match for k in keys)
        compile_s = first["dynamic"]["lengths"][str(seq)]["first_call_s"]
        later = [r["dynamic"]["lengths"][str(seq)]["first_call_s"] for r in rounds[1:]
                 if r["dynamic"]["lengths"][str(seq)]["disk_hit"]]  # fmt: skip
        figures[seq] = {
            "dynamic_ms": dyn, "static_ms": st, "onnxruntime_ms": ort,
            "dynamic_over_static": dyn / st, "dynamic_over_ort": dyn / ort,
            "static_over_ort": st / ort, "dynamic_first_call_compile_s": compile_s,
            "dynamic_first_call_disk_cache_s": statistics.median(later) if later else None,
            "static_compile_s": first["static"]["lengths"][str(seq)]["compile_s"],
            "match_dynamic": numerics["dynamic"], "match_static": numerics["static"],
        }  # fmt: skip
        f = figures[seq]
        rows.append(
            f"{seq:>6} {dyn:>9.3f} {st:>9.3f} {ort:>9.3f} {f['dynamic_over_static']:>8.3f} "
            f"{f['dynamic_over_ort']:>8.3f} {f['static_over_ort']:>8.3f} {compile_s:>9.2f} "
            + (f"{f['dynamic_first_call_disk_cache_s']:>9.3f}" if later else f"{'-':>9}")
            + f"  {'yes' if numerics['dynamic'] and numerics['static'] else 'NO'}"
        )
    print(f"{args.model}, {args.threads} thread(s), {args.runs} runs x {args.rounds} rounds "
          "(median of medians), each engine in its own process; "
          f"load {load0:.1f} -> {load1:.1f}")  # fmt: skip
    print(f"{'seq':>6} {'dyn ms':>9} {'static ms':>9} {'ORT ms':>9} {'dyn/st':>8} {'dyn/ORT':>8} "
          f"{'st/ORT':>8} {'1st s':>9} {'1st s':>9}  match")  # fmt: skip
    print(f"{'':>6} {'':>9} {'':>9} {'':>9} {'':>8} {'':>8} {'':>8} {'(compile)':>9} "
          f"{'(disk)':>9}")  # fmt: skip
    print("\n".join(rows))
    print("per-round medians (ms), to judge the noise:")
    for seq in lengths:
        spread = "; ".join(
            f"{e} " + " ".join(f"{r[e]['lengths'][str(seq)]['median_ms']:.3f}" for r in rounds)
            for e in ENGINES
        )
        print(f"{seq:>6}  {spread}")
    lo, hi = lengths[0], lengths[-1]
    growth = {e: med(e, hi) / med(e, lo) for e in ENGINES}
    print(f"growth {lo} -> {hi}: " + ", ".join(f"{e} {g:.2f}x" for e, g in growth.items()))
    cache_stats = rounds[-1]["dynamic"].get("shape_cache")
    print(f"dynamic model's shape cache (last round): {cache_stats}")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"model": args.model, "threads": args.threads, "runs": args.runs,
             "rounds": args.rounds, "lengths": figures, "growth": growth,
             "load": [load0, load1]}, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
