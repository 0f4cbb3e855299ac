"""onnxruntime's own per-node profile of a model, optionally set against ours, per layer class.

Runs the model in onnxruntime the way ``autofusion-bench --against onnxruntime`` does (CPU,
``ORT_ENABLE_ALL``, ``--threads`` intra-op threads, sequential) with its profiler on
(``SessionOptions.enable_profiling``) for ``--runs`` runs on seeded inputs, drops each node's
first ``--skip`` runs, and prints per node (the optimised graph's nodes: fused activations,
the NCHWc transformer's ``com.microsoft.nchwc`` convs and its ReorderInput/ReorderOutput) the
median ``dur`` per run in ms, then which kernels the optimised model holds (op type and
domain, counted; the model is written with ``optimized_model_filepath``). Wall time per
node, as onnxruntime measures it: read it on a quiet machine or by medians.

``--ours FILE``: the JSON of ``autofusion-bench MODEL --threads 1 --runs 20 --profile 400
--json`` (per-kernel ms per run and the ONNX nodes each kernel computes); ``--classes
NAME=REGEX,...`` sorts both sides' nodes into layer classes (first match on an onnxruntime
node's name and outputs, or on any of our kernel's origins, wins; the default classes suit
torchvision's SqueezeNet-1.1) and prints ms per class side by side.

    .venv/bin/python benchmarks/ort_profile.py MODEL.onnx [--threads 1] [--runs 200]
        [--skip 20] [--ours OURS.json] [--classes NAME=REGEX,...] [--top 60]
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx

SQUEEZENET_CLASSES = (
    "reorders=Reorder,stem=features\\.[01]/,pools=MaxPool,squeeze 1x1=squeeze,expand 1x1=expand1x1,"
    "expand 3x3=expand3x3,concat=Concat,classifier 1x1=classifier\\.[12]/,"
    "global pool=GlobalAveragePool"
)


def seeded_feeds(sess: Any) -> dict[str, np.ndarray]:
    """U(0, 1) float inputs (dynamic dims 1) from a fixed seed."""
    rng = np.random.default_rng(0)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        feeds[i.name] = rng.random(shape).astype(np.float32)
    return feeds


def ort_node_times(model: Path, threads: int, runs: int, skip: int, work: Path
                   ) -> tuple[dict[str, float], dict[str, str], onnx.ModelProto]:  # fmt: skip
    """Median ms per run of every node (after ``skip`` runs), each node's op name, and the
    optimised model."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    so.enable_profiling = True
    so.profile_file_prefix = str(work / "ort_profile")
    so.optimized_model_filepath = str(work / "optimized.onnx")
    sess = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
    feeds = seeded_feeds(sess)
    for _ in range(runs):
        sess.run(None, feeds)
    events = json.loads(Path(sess.end_profiling()).read_text())
    durs: dict[str, list[float]] = collections.defaultdict(list)
    ops: dict[str, str] = {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            node = e["name"][: -len("_kernel_time")]
            durs[node].append(e["dur"] / 1e3)
            ops[node] = str(e.get("args", {}).get("op_name", "?"))
    times = {n: statistics.median(v[skip:] or v) for n, v in durs.items()}
    return times, ops, onnx.load(str(work / "optimized.onnx"), load_external_data=False)


def parse_classes(text: str) -> list[tuple[str, re.Pattern[str]]]:
    out = []
    for item in text.split(","):
        name, sep, rx = item.partition("=")
        if not sep or not name or not rx:
            sys.exit(f"ort_profile.py: --classes: expected NAME=REGEX, got {item!r}")
        out.append((name, re.compile(rx)))
    return out


def classify(names: list[str], classes: list[tuple[str, re.Pattern[str]]]) -> str:
    for cls, rx in classes:
        if any(rx.search(n) for n in names):
            return cls
    return "other"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", type=Path)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--skip", type=int, default=20)
    ap.add_argument("--ours", type=Path, help="autofusion-bench --profile N --json output")
    ap.add_argument("--classes", default=SQUEEZENET_CLASSES)
    ap.add_argument("--top", type=int, default=60)
    args = ap.parse_args()
    classes = parse_classes(args.classes)
    with tempfile.TemporaryDirectory() as tmp:
        times, ops, opt = ort_node_times(args.model, args.threads, args.runs, args.skip,
                                         Path(tmp))  # fmt: skip
    outputs = {n.name: list(n.output) for n in opt.graph.node}
    total = sum(times.values())
    print(f"onnxruntime, {args.threads} thread(s), {args.runs} runs (first {args.skip} dropped): "
          f"{total:.3f} ms over {len(times)} nodes (sum of per-node medians)\n")  # fmt: skip
    print("| node | op | ms | class |\n|---|---|---|---|")
    for node, ms in sorted(times.items(), key=lambda kv: -kv[1])[: args.top]:
        cls = classify([node, *outputs.get(node, [])], classes)
        print(f"| {node} | {ops[node]} | {ms:.4f} | {cls} |")
    kinds = collections.Counter(f"{n.op_type} ({n.domain or 'ai.onnx'})" for n in opt.graph.node)
    print("\nkernels in the optimised model: "
          + ", ".join(f"{k} x{v}" for k, v in kinds.most_common()))  # fmt: skip
    ort_cls: dict[str, float] = collections.defaultdict(float)
    for node, ms in times.items():
        ort_cls[classify([node, *outputs.get(node, [])], classes)] += ms
    ours_cls: dict[str, float] = collections.defaultdict(float)
    if args.ours:
        rows = json.loads(args.ours.read_text()).get("profile") or []
        for r in rows:
            ours_cls[classify([str(o) for o in r["origins"]], classes)] += float(r["ms"])
    names = [c for c, _ in classes] + ["other"]
    print("\n| class | onnxruntime ms | ours ms | ours - onnxruntime |\n|---|---|---|---|")
    for c in names:
        o, a = ort_cls.get(c, 0.0), ours_cls.get(c, 0.0)
        if o or a:
            print(f"| {c} | {o:.3f} | {a:.3f} | {a - o:+.3f} |" if args.ours
                  else f"| {c} | {o:.3f} | -- | -- |")  # fmt: skip
    if args.ours:
        ta, to = sum(ours_cls.values()), sum(ort_cls.values())
        print(f"| total | {to:.3f} | {ta:.3f} | {ta - to:+.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
