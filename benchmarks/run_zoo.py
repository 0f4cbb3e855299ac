"""Run autofusion-bench over zoo models (or .onnx files) with 1 and 2 threads; write a table.

    python benchmarks/run_zoo.py [--models a,b,...] [--threads 1,2] [--runs N]
                                 [--no-fusion] [--out FILE.md] [--json FILE.json]
                                 [--against onnxruntime,openvino [--rounds N]]

``--models`` takes zoo names and paths to ``.onnx`` files, mixed (an entry ending in
``.onnx`` is a file; e.g. the real exports of ``benchmarks/export_full_models.py`` beside
the zoo models they imitate, measured in the same run).

Each (model, threads) pair runs in its own `autofusion-bench --json` process, so one
model's failure is reported in its row and the rest go on. The ratio columns are
ours/onnxruntime (lower is better): wall-clock medians, and process CPU time medians (with
one thread the latter is immune to preemption by other work on a shared machine).

With ``--against`` each engine runs in its own worker process, rounds interleaved
(``autofusion-bench --against``), and the table is issue 14's: every engine's median, ours
over each peer and over the faster one, achieved GFLOP/s against the sgemm roof, and the
conv/GEMM share of kernel time.
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
    "vit_tiny", "swin_tiny", "zoo_cnn_opset9", "bert_large", "squeezenet", "densenet121",
    "efficientnet_b0",
)  # fmt: skip


def model_spec(model: str) -> str:
    """``zoo:NAME`` for a zoo name; an entry ending in ``.onnx`` is a file, passed as is."""
    return model if model.endswith(".onnx") else f"zoo:{model}"


def label(model: object) -> str:
    """A table row's model name: the zoo name, or the file's name without its directory."""
    return Path(str(model)).name.removeprefix("zoo:")


def bench_one(model: str, threads: int, runs: int, extra: list[str]) -> dict[str, object]:
    exe = Path(sys.executable).with_name("autofusion-bench")
    cmd = [str(exe), model_spec(model), "--threads", str(threads), "--runs", str(runs), "--json",
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
        return f"| {label(r['model'])} | {r['threads']} | error: {r['error']} | | | | | | |"
    lat = r["latency_ms"]
    k = r["kernels"]
    arena = r.get("arena_bytes")
    arena_s = f"{arena / 2**20:.1f}" if isinstance(arena, (int, float)) else "n/a"
    return (
        f"| {label(r['model'])} | {r['threads']} | {lat['autofusion']:.2f} | "
        f"{lat['onnxruntime']:.2f} | **{r['ratio']:.2f}** | {r['cpu_ratio']:.2f} | "
        f"{'yes' if r['match'] else 'NO'} ({r['max_abs_err']:.1e}) | "
        f"{k['autofusion']} / {k['onnxruntime']} | {arena_s} |"
    )


def fmt_peer_row(r: dict[str, object], peers: list[str]) -> str:
    if "error" in r:
        return f"| {label(r['model'])} | {r['threads']} | error: {r['error']} |" + " |" * (
            2 * len(peers) + 4
        )
    p = r["peers"]
    lat, ratios = p["latency_ms"], p["ratios"]
    fastest = min(lat[e] for e in peers)
    a = r.get("achieved") or {}
    cells = [f"{lat['autofusion']:.2f}", *(f"{lat[e]:.2f}" for e in peers)]
    cells += [f"{ratios[e]['median']:.3f}" for e in peers]
    cells += [f"**{lat['autofusion'] / fastest:.3f}**", "yes" if all(p["match"].values()) else "NO"]
    cells += [f"{a.get('gflops_per_s', 0):.1f} ({100 * a.get('roof_fraction', 0):.0f}%)",
              f"{100 * a.get('conv_gemm_share', 0):.1f}%"]  # fmt: skip
    return f"| {label(r['model'])} | {r['threads']} | " + " | ".join(cells) + " |"


def peer_header(peers: list[str]) -> str:
    cols = ["model", "threads", "autofusion ms", *(f"{e} ms" for e in peers)]
    cols += [f"ours / {e}" for e in peers]
    cols += ["ours / faster peer", "match", "GFLOP/s (of roof)", "conv/GEMM share"]
    return "| " + " | ".join(cols) + " |\n" + "|---" * len(cols) + "|"


HEADER = (
    "| model | threads | autofusion ms | onnxruntime ms | ratio | CPU ratio | match (max abs err) "
    "| kernels ours / ORT nodes | arena MB |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS),
                    help="comma-separated zoo names and/or .onnx files")  # fmt: skip
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--no-fusion", action="store_true")
    ap.add_argument("--out", help="markdown file (default: stdout)")
    ap.add_argument("--json", dest="json_out", help="also write all results as JSON")
    ap.add_argument("--against", default="", help="peer engines, e.g. onnxruntime,openvino")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds with --against")
    args = ap.parse_args()
    extra = ["--no-fusion"] if args.no_fusion else []
    peers = [e for e in args.against.split(",") if e]
    if peers:
        extra += ["--against", ",".join(peers), "--rounds", str(args.rounds)]
    results = []
    lines = [peer_header(peers) if peers else HEADER]
    for model in args.models.split(","):
        for th in (int(t) for t in args.threads.split(",")):
            print(f"run_zoo: {model} threads={th}", file=sys.stderr, flush=True)
            r = bench_one(model, th, args.runs, extra)
            results.append(r)
            lines.append(fmt_peer_row(r, peers) if peers else fmt_row(r))
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
