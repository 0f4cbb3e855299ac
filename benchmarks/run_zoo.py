"""Run autofusion-bench over zoo models with 1 and 2 threads; write a markdown table.

    python benchmarks/run_zoo.py [--models a,b,...] [--threads 1,2] [--runs N]
                                 [--no-fusion] [--out FILE.md] [--json FILE.json]

Each (model, threads) pair runs in its own `autofusion-bench --json` process, so one
model's failure is reported in its row and the rest go on. The ratio columns are
ours/onnxruntime (lower is better): wall-clock medians, and process CPU time medians (with
one thread the latter is immune to preemption by other work on a shared machine).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_MODELS = (
    "tiny_cnn", "tiny_bert", "resnet50", "bert_base", "mobilenet", "shufflenet", "inception",
    "vit_tiny", "swin_tiny", "zoo_cnn_opset9", "bert_large",
)  # fmt: skip


def bench_one(model: str, threads: int, runs: int, extra: list[str]) -> dict[str, object]:
    exe = Path(sys.executable).with_name("autofusion-bench")
    cmd = [str(exe), f"zoo:{model}", "--threads", str(threads), "--runs", str(runs), "--json",
           *extra]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        err = proc.stderr.strip().splitlines()
        return {"model": model, "threads": threads, "error": err[-1] if err else "failed"}
    r = json.loads(proc.stdout)
    r["bench_seconds"] = round(time.perf_counter() - t0, 1)
    return r


def fmt_row(r: dict[str, object]) -> str:
    if "error" in r:
        return f"| {r['model']} | {r['threads']} | error: {r['error']} | | | | | | |"
    lat = r["latency_ms"]
    k = r["kernels"]
    arena = r.get("arena_bytes")
    arena_s = f"{arena / 2**20:.1f}" if isinstance(arena, (int, float)) else "n/a"
    return (
        f"| {r['model'].removeprefix('zoo:')} | {r['threads']} | {lat['autofusion']:.2f} | "
        f"{lat['onnxruntime']:.2f} | **{r['ratio']:.2f}** | {r['cpu_ratio']:.2f} | "
        f"{'yes' if r['match'] else 'NO'} ({r['max_abs_err']:.1e}) | "
        f"{k['autofusion']} / {k['onnxruntime']} | {arena_s} |"
    )


HEADER = (
    "| model | threads | autofusion ms | onnxruntime ms | ratio | CPU ratio | match (max abs err) "
    "| kernels ours / ORT nodes | arena MB |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--no-fusion", action="store_true")
    ap.add_argument("--out", help="markdown file (default: stdout)")
    ap.add_argument("--json", dest="json_out", help="also write all results as JSON")
    args = ap.parse_args()
    extra = ["--no-fusion"] if args.no_fusion else []
    results = []
    lines = [HEADER]
    for model in args.models.split(","):
        for th in (int(t) for t in args.threads.split(",")):
            print(f"run_zoo: {model} threads={th}", file=sys.stderr, flush=True)
            r = bench_one(model, th, args.runs, extra)
            results.append(r)
            lines.append(fmt_row(r))
            print(lines[-1], file=sys.stderr, flush=True)
    text = "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
