"""Latency against sequence length: one build for every length, static builds, onnxruntime.

For a zoo BERT (``--model tiny_bert`` or ``bert_base``) at each length of ``--lengths``
(default 64,128,256,512) it measures, each engine in its own process, in ``--rounds``
interleaved rounds (median over rounds of each round's median over ``--runs``):

- ``onebuild``: ``autofusion.compile(..., one_build=True)`` of the BERT exported with a
  dynamic sequence axis (``bert(name, dynamic_seq=True)``, inputs ``[1, 'seq']``,
  ``--max-seq`` its declared upper bound): **one library** whose generated C takes the
  length at run time (``af_run_sym``; docs/dynamic.md, "One build for every shape").
  Compiled once per process; its compile time is reported.
- ``specialising``: ``autofusion.compile()`` of the same export without ``one_build``: the
  shape-specialising model (one specialisation per length, kept in its LRU). Its first call
  at each length (the specialising compile, with an empty compile cache in round 1; a load
  from the on-disk cache in later rounds) is reported apart from the steady state.
- ``static``: one ``autofusion.compile()`` per length of the static export at that length.
- ``onnxruntime``: one session on the dynamic export (ORT_ENABLE_ALL, same threads).

Prints per length each engine's median, the ratios one-build/static, one-build/ORT,
static/ORT and specialising/ORT, each engine's growth factor from the first to the last
length, and whether every engine's outputs match onnxruntime's (the project's bar). The
issue-12 targets: one-build within 10% of static, and at or below onnxruntime. Not a test:
nothing here asserts a time. ``--engines`` picks a subset (onnxruntime is always run: it
is the reference).

    python benchmarks/dynamic_seq.py --model bert_base --lengths 64,128,256,512 --threads 1
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

ENGINES = ("onebuild", "specialising", "static", "onnxruntime")


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
    dynamic = {"seq": (1, args.max_seq)}
    if args.worker in ("onebuild", "specialising"):
        t0 = time.perf_counter()
        one = args.worker == "onebuild"
        model = autofusion.compile(bert(args.model, dynamic_seq=True), threads=args.threads,
                                   dynamic=dynamic, one_build=one)  # fmt: skip
        result["create_s"] = time.perf_counter() - t0
    elif args.worker == "onnxruntime":
        from autofusion.tools.bench import ort_session

        sess = ort_session(bert(args.model, dynamic_seq=True).SerializeToString(), args.threads)
    for seq in lengths:
        feeds = _feeds(seq)
        entry: dict[str, Any] = {}
        if args.worker in ("onebuild", "specialising"):
            t0 = time.perf_counter()
            out = model.run(feeds)  # the specialising model's first call at a length compiles
            entry["first_call_s"] = time.perf_counter() - t0
            if args.worker == "specialising":
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
    if args.worker == "specialising":
        result["shape_cache"] = model.report["shape_cache"]
    finish_worker(args, result, outputs)


def _spawn(engine: str, args: argparse.Namespace, tmp: Path, rnd: int, cache: Path) -> dict:
    argv = ["--model", args.model, "--lengths", args.lengths, "--max-seq", str(args.max_seq),
            *common_argv(args)]  # fmt: skip
    # a private cache with no size limit: bert_base's 8 builds exceed the default 2 GB, and
    # an eviction would turn a later round's disk-cache load into a compile
    env = {"AUTOFUSION_CACHE_DIR": str(cache), "AUTOFUSION_CACHE_MAX_MB": "0"}
    return spawn(__file__, engine, argv, tmp, rnd, env)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--model", default="tiny_bert", help="zoo BERT config (tiny_bert, bert_base)")
    ap.add_argument("--lengths", default="64,128,256,512")
    ap.add_argument("--max-seq", type=int, default=512,
                    help="the declared range of seq is 1..MAX_SEQ (default 512)")  # fmt: skip
    ap.add_argument("--engines", default=",".join(ENGINES),
                    help="engines to run, comma-separated (default: all)")  # fmt: skip
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    add_options(ap, ENGINES)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    from autofusion.testing import compare

    engines = [e for e in ENGINES if e in args.engines.split(",") or e == "onnxruntime"]
    unknown = set(args.engines.split(",")) - set(ENGINES)
    if unknown:
        ap.error(f"--engines: unknown {', '.join(sorted(unknown))} (known: {', '.join(ENGINES)})")
    lengths = [int(v) for v in args.lengths.split(",")]
    if max(lengths) > args.max_seq:
        ap.error(f"--lengths: {max(lengths)} is over --max-seq {args.max_seq}")
    load0 = os.getloadavg()[0]
    rounds: list[dict[str, dict]] = []
    with tempfile.TemporaryDirectory(prefix="dynseq-") as d:
        tmp = Path(d)
        cache = tmp / "cache"  # empty in round 1: first calls there are real compiles
        for rnd in range(args.rounds):
            rounds.append({e: _spawn(e, args, tmp, rnd, cache) for e in engines})
            print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    load1 = os.getloadavg()[0]

    def med(engine: str, seq: int) -> float:
        return statistics.median(r[engine]["lengths"][str(seq)]["median_ms"] for r in rounds)

    first = rounds[0]
    ort_out = first["onnxruntime"]["outputs"]
    ours = [e for e in engines if e != "onnxruntime"]
    ratios = [(a, b) for a, b in (("onebuild", "static"), ("onebuild", "onnxruntime"),
              ("static", "onnxruntime"), ("specialising", "onnxruntime"))
              if a in engines and b in engines]  # fmt: skip
    figures: dict[int, dict[str, Any]] = {}
    rows = []
    for seq in lengths:
        keys = [k for k in ort_out if k.startswith(f"{seq}/")]
        f: dict[str, Any] = {f"{e}_ms": med(e, seq) for e in engines}
        for a, b in ratios:
            f[f"{a}_over_{b}"] = f[f"{a}_ms"] / f[f"{b}_ms"]
        for e in ours:
            f[f"match_{e}"] = all(compare(first[e]["outputs"][k], ort_out[k]).match for k in keys)
        figures[seq] = f
        cells = [f"{f[f'{e}_ms']:>12.3f}" for e in engines]
        cells += [f"{f[f'{a}_over_{b}']:>12.3f}" for a, b in ratios]
        ok = all(f[f"match_{e}"] for e in ours)
        rows.append(f"{seq:>6} " + " ".join(cells) + f"  {'yes' if ok else 'NO'}")
    print(f"{args.model}, seq 1..{args.max_seq}, {args.threads} thread(s), {args.runs} runs x "
          f"{args.rounds} rounds (median of medians), each engine in its own process; "
          f"load {load0:.1f} -> {load1:.1f}")  # fmt: skip
    names = [f"{e[:9]} ms" for e in engines]
    names += [f"{a[:5]}/{b[:4]}" for a, b in ratios]
    print(f"{'seq':>6} " + " ".join(f"{n:>12}" for n in names) + "  match")
    print("\n".join(rows))
    print("per-round medians (ms), to judge the noise:")
    for seq in lengths:
        spread = "; ".join(
            f"{e} " + " ".join(f"{r[e]['lengths'][str(seq)]['median_ms']:.3f}" for r in rounds)
            for e in engines
        )
        print(f"{seq:>6}  {spread}")
    lo, hi = lengths[0], lengths[-1]
    growth = {e: med(e, hi) / med(e, lo) for e in engines}
    print(f"growth {lo} -> {hi}: " + ", ".join(f"{e} {g:.2f}x" for e, g in growth.items()))
    if "onebuild" in engines:
        print(f"one build: compiled once in {first['onebuild']['create_s']:.1f} s")
    if "static" in engines:
        total = sum(first["static"]["lengths"][str(s)]["compile_s"] for s in lengths)
        print(f"static builds: {len(lengths)} compiles, {total:.1f} s in all")
    if "specialising" in engines:
        print(f"specialising model's shape cache (last round): "
              f"{rounds[-1]['specialising'].get('shape_cache')}")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"model": args.model, "threads": args.threads, "runs": args.runs,
             "rounds": args.rounds, "max_seq": args.max_seq, "lengths": figures,
             "growth": growth, "load": [load0, load1]}, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
