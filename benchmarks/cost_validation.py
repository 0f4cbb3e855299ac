"""Validate the time-predicting cost model (``autofusion/analysis/predict.py``) against the
C profiler: predicted vs measured seconds per kernel on zoo models, with the Spearman rank
correlation and the median relative error per model, written to docs/cost-model.md.

    python benchmarks/cost_validation.py [--models tiny_cnn,mobilenet,resnet50,tiny_bert]
        [--runs 20] [--refresh-roofs] [--out docs/cost-model.md] [--csv FILE]

Each model is compiled for one thread (``autofusion.compile(threads=1)``), profiled
(``CompiledModel.profile``, per-kernel times of ``runs`` runs) and its kernels matched by ONNX
origins to the top-level ops of the same tensor pipeline (``prepare_module``). The roofs
are this machine's: the runtime GEMM core's one-thread roof (``runtime.roofs.machine_roofs``) and
``predict.measured_roofs`` (copies, an L2-resident multiply; cached per machine); the per-call
overhead is the profiled time of a one-element
Relu model.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

DEFAULT_MODELS = ("tiny_cnn", "mobilenet", "resnet50", "tiny_bert")
COMMAND = "python benchmarks/cost_validation.py"


def ranks(x: Sequence[float]) -> np.ndarray:
    """Ranks from 1, ties averaged."""
    a = np.asarray(x, dtype=np.float64)
    order = np.argsort(a, kind="mergesort")
    r = np.empty(len(a), dtype=np.float64)
    i = 0
    while i < len(a):
        j = i
        while j + 1 < len(a) and a[order[j + 1]] == a[order[i]]:
            j += 1
        r[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    if len(x) < 2:
        return float("nan")
    rx, ry = ranks(x), ranks(y)
    return float(np.corrcoef(rx, ry)[0, 1])


def one_relu_model() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "one", [x], [y])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def mul_chain_model(n: int, depth: int) -> onnx.ModelProto:
    """``depth`` multiplies of an ``n``-element vector by a constant: one fused ew kernel."""
    from onnx import numpy_helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])
    c = numpy_helper.from_array(np.full([1], 0.999, dtype=np.float32), "c")
    names = ["x", *[f"t{i}" for i in range(depth - 1)], "y"]
    nodes = [
        helper.make_node("Mul", [names[i], "c"], [names[i + 1]], name=f"mul{i}")
        for i in range(depth)
    ]
    g = helper.make_graph(nodes, "chain", [x], [y], [c])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def measure_vector_flops(n: int = 16384, depth: int = 16, runs: int = 500) -> float:
    """Elementwise FLOP/s of generated code: a fused chain of ``depth`` multiplies over an
    L2-resident vector (one thread), best per-call time of the profiler."""
    import autofusion

    m = autofusion.compile(mul_chain_model(n, depth), threads=1)
    feeds = {"x": np.ones(n, dtype=np.float32)}
    k = m.profile(feeds, runs=runs)
    secs = max(t.seconds / max(t.calls, 1) for t in k)
    return n * depth / secs


def measure_overhead(runs: int = 2000) -> float:
    """Seconds of one profiled call of a one-element kernel (timer and call cost)."""
    import autofusion

    m = autofusion.compile(one_relu_model(), threads=1)
    feeds = {"x": np.ones(1, dtype=np.float32)}
    k = m.profile(feeds, runs=runs)
    return min(t.seconds / max(t.calls, 1) for t in k)


def validate_model(name: str, runs: int, roofs: Any, rounds: int = 5) -> list[dict[str, Any]]:
    """Rows ``{model, kernel, pattern, flops, mem_bytes, l2_bytes, predicted_us,
    measured_us}`` for every profiled kernel matched to a top-level op. ``runs`` are split
    into ``rounds`` profiles; a kernel's time is its mean per call in its fastest round
    (the machine is shared: a round with a preemption in it is discarded)."""
    import autofusion
    from autofusion import zoo
    from autofusion.analysis.hardware import cpu_this_machine
    from autofusion.analysis.predict import op_work, predict_seconds
    from autofusion.api import prepare_module
    from autofusion.dialects.fusion import KernelOp
    from autofusion.pipeline import PipelineOptions
    from autofusion.policy.reasons import origins_of

    hw = cpu_this_machine()
    proto = zoo.get_model(name)
    module, _ = prepare_module(proto, PipelineOptions(), name)
    by_origins: dict[tuple[str, ...], Any] = {}
    for f in module.ops:
        for op in f.regions[0].block.ops if f.regions else []:
            if isinstance(op, KernelOp) or (op.name.startswith("nn.") and op.name != "nn.constant"):
                by_origins.setdefault(tuple(origins_of(op)), op)
    m = autofusion.compile(f"zoo:{name}", threads=1)
    feeds = zoo.sample_inputs(proto, 0)
    m.run(feeds)  # warm-up
    best: dict[str, Any] = {}  # kernel -> its profile in the round where it was fastest
    for _ in range(rounds):
        for k in m.profile(feeds, runs=max(1, runs // rounds)):
            old = best.get(k.kernel)
            if k.calls and (old is None or k.seconds / k.calls < old.seconds / old.calls):
                best[k.kernel] = k
    rows: list[dict[str, Any]] = []
    for k in best.values():
        op = by_origins.get(tuple(k.origins))
        if op is None:
            continue
        w = op_work(op, hw, roofs.vector_lanes)
        rows.append(
            {
                "model": name,
                "kernel": k.kernel,
                "pattern": k.pattern or op.name,
                "flops": w.flops,
                "mem_bytes": w.mem_bytes,
                "l2_bytes": w.l2_bytes,
                "predicted_us": 1e6 * predict_seconds(w, roofs),
                "measured_us": 1e6 * k.seconds / k.calls,
            }
        )
    m.close()
    return rows


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    p = [r["predicted_us"] for r in rows]
    t = [r["measured_us"] for r in rows]
    rel = [abs(a - b) / b for a, b in zip(p, t) if b > 0]
    return {
        "kernels": float(len(rows)),
        "spearman": spearman(p, t),
        "median_rel_err": statistics.median(rel) if rel else float("nan"),
        "predicted_ms": sum(p) / 1e3,
        "measured_ms": sum(t) / 1e3,
    }


def render(all_rows: dict[str, list[dict[str, Any]]], roofs: Any, command: str, load: str) -> str:
    out = [
        "# Cost model validation: predicted vs measured kernel time",
        "",
        "Generated by `benchmarks/cost_validation.py` (do not edit by hand); the model is",
        "described in [fusion.md](fusion.md#predicted-time) and `autofusion/analysis/predict.py`.",
        "",
        "```sh",
        command,
        "```",
        "",
        "Roofs measured on this machine (`predict.measured_roofs`, cached per machine):",
        "",
        "- GEMM (the runtime's core, one thread, 512^3 MatMul): "
        f"{roofs.gemm_flops / 1e9:.1f} GFLOP/s",
        f"- vector (fused chain of 16 multiplies, 64 KiB): {roofs.vector_flops / 1e9:.2f} GFLOP/s",
        f"- memory copy (64 MiB, read + write): {roofs.mem_bandwidth / 1e9:.1f} GB/s",
        f"- L2 copy (256 KiB): {roofs.l2_bandwidth / 1e9:.1f} GB/s",
        f"- per-kernel overhead (profiled one-element Relu): {1e6 * roofs.overhead_s:.2f} us",
        f"- vector lanes: {roofs.vector_lanes}",
        "",
        f"Load average when the table was made: {load} (2 cores; other jobs share them, which",
        "inflates the measured times of long kernels most).",
        "",
        "Each model runs on one thread; `measured` is the profiler's mean time per call in the",
        "fastest of 5 rounds (the machine is shared with other jobs). Rank",
        "correlation is Spearman's over the kernels of a model; relative error is",
        "`|predicted - measured| / measured`.",
        "",
        "| model | kernels | Spearman | median rel. error | sum predicted ms | sum measured ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    everything: list[dict[str, Any]] = []
    for name, rows in all_rows.items():
        s = summary(rows)
        everything += rows
        out.append(
            f"| {name} | {int(s['kernels'])} | {s['spearman']:.3f} | "
            f"{s['median_rel_err']:.2f} | {s['predicted_ms']:.2f} | {s['measured_ms']:.2f} |"
        )
    s = summary(everything)
    out.append(
        f"| **all** | {int(s['kernels'])} | {s['spearman']:.3f} | {s['median_rel_err']:.2f} | "
        f"{s['predicted_ms']:.2f} | {s['measured_ms']:.2f} |"
    )
    out += ["", "## Per kernel", ""]
    for name, rows in all_rows.items():
        out += [
            f"<details><summary>{name}: {len(rows)} kernels</summary>",
            "",
            "| kernel | pattern | MFLOP | memory KB | L2 KB | predicted us | measured us |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        for r in sorted(rows, key=lambda r: -r["measured_us"]):
            out.append(
                f"| {r['kernel']} | {r['pattern']} | {r['flops'] / 1e6:.2f} | "
                f"{r['mem_bytes'] / 1e3:.1f} | {r['l2_bytes'] / 1e3:.1f} | "
                f"{r['predicted_us']:.1f} | {r['measured_us']:.1f} |"
            )
        out += ["", "</details>", ""]
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    from autofusion.analysis.predict import measured_roofs
    from autofusion.runtime.roofs import machine_roofs

    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--refresh-roofs", action="store_true")
    ap.add_argument("--out", default="docs/cost-model.md")
    ap.add_argument("--csv", default="benchmarks/data/cost_validation.csv")
    args = ap.parse_args(argv)
    roofs = measured_roofs(
        machine_roofs(1, say=lambda m: print(m, file=sys.stderr)).peak_gflops * 1e9,
        refresh=args.refresh_roofs,
        overhead_s=measure_overhead(),
        vector_flops=measure_vector_flops(),
    )
    all_rows: dict[str, list[dict[str, Any]]] = {}
    for name in args.models.split(","):
        print(f"profiling {name} ...", file=sys.stderr, flush=True)
        all_rows[name] = validate_model(name, args.runs, roofs)
        s = summary(all_rows[name])
        print(f"  {name}: spearman {s['spearman']:.3f}, median rel err "
              f"{s['median_rel_err']:.2f}", file=sys.stderr, flush=True)  # fmt: skip
    command = COMMAND + (
        f" --models {args.models}" if args.models != ",".join(DEFAULT_MODELS) else ""
    ) + (f" --runs {args.runs}" if args.runs != 20 else "")  # fmt: skip
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    Path(args.out).write_text(render(all_rows, roofs, command, load))
    if args.csv:
        path = Path(args.csv)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="") as fh:
            rows = [r for rs in all_rows.values() for r in rs]
            w = csv.DictWriter(fh, fieldnames=list(rows[0]) if rows else ["model"])
            w.writeheader()
            w.writerows(rows)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
