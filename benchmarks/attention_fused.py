"""Fused streaming attention against the unfused MatMul/Div/Add/Softmax/MatMul and onnxruntime.

For each length S of ``--lengths`` an attention-only model (q, k, v ``[1, heads, S, d]``, an
additive key mask ``[1, 1, 1, S]`` with the last eighth masked, as BERT's) is timed in three
engines, each in its own process, in ``--rounds`` interleaved rounds (median over rounds of
each round's median over ``--runs``):

- ``fused``: ``autofusion.compile()`` as shipped (``recognize-attention`` makes one
  ``nn.attention``: ``afrt_attention_f32``, the score matrix never stored);
- ``unfused``: the same with ``patterns: {attention: false}`` (batched MatMul, the softmax
  kernel, batched MatMul, the ``[heads, S, S]`` scores in the arena);
- ``onnxruntime``: ORT_ENABLE_ALL, same threads.

Prints per length the medians, fused/unfused and fused/ORT, and whether both of ours match
onnxruntime (the project's bar). Not a test: nothing here asserts a time (issue 16's
acceptance: fused at least as fast as unfused at S = 128 and faster at 512).

    python benchmarks/attention_fused.py --lengths 128,512 --threads 1
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from engines import add_options, common_argv, finish_worker, median_ms, spawn
from onnx import TensorProto, helper, numpy_helper

ENGINES = ("fused", "unfused", "onnxruntime")


def attention_model(seq: int, heads: int, d: int) -> onnx.ModelProto:
    """softmax(q @ k^T / sqrt(d) + mask) @ v, written as the exporters write it."""
    shape = [1, heads, seq, d]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in "qkv"]
    inputs.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 1, 1, seq]))
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["q", "kt"], ["s"]),
        helper.make_node("Div", ["s", "scale"], ["ss"]),
        helper.make_node("Add", ["ss", "mask"], ["sm"]),
        helper.make_node("Softmax", ["sm"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["y"]),
    ]
    scale = numpy_helper.from_array(np.array(math.sqrt(d), np.float32), "scale")
    graph = helper.make_graph(
        nodes, "attention", inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], [scale],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _feeds(seq: int, heads: int, d: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seq)
    feeds = {n: rng.standard_normal((1, heads, seq, d)).astype(np.float32) for n in "qkv"}
    mask = np.zeros((1, 1, 1, seq), np.float32)
    mask[..., seq - seq // 8 :] = np.finfo(np.float32).min  # the exporters' masked value
    feeds["mask"] = mask
    return feeds


def worker(args: argparse.Namespace) -> None:
    """One engine, every length, in this process; writes JSON and the outputs (npz)."""
    import autofusion

    result: dict[str, Any] = {}
    outputs: dict[str, np.ndarray] = {}
    for seq in [int(v) for v in args.lengths.split(",")]:
        model, feeds = attention_model(seq, args.heads, args.d), _feeds(seq, args.heads, args.d)
        if args.worker == "onnxruntime":
            from autofusion.tools.bench import ort_session

            sess = ort_session(model.SerializeToString(), args.threads)
            run = lambda: sess.run(["y"], feeds)[0]  # noqa: E731
        else:
            config = None
            if args.worker == "unfused":
                config = Path(args.out).with_suffix(".yaml")
                config.write_text("patterns: {attention: false}\n")
            m = autofusion.compile(model, threads=args.threads, config=config, cache=False)
            run = lambda: m.run(feeds)["y"]  # noqa: E731
        outputs[str(seq)] = run()
        result[str(seq)] = median_ms(run, args.runs, args.warmup)
    finish_worker(args, result, outputs)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--lengths", default="128,512")
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--d", type=int, default=64, help="head size")
    add_options(ap, ENGINES)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    from autofusion.testing import compare

    lengths = [int(v) for v in args.lengths.split(",")]
    load0 = os.getloadavg()[0]
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="attn-") as d:
        for rnd in range(args.rounds):
            got: dict[str, Any] = {}
            argv = ["--lengths", args.lengths, "--heads", str(args.heads), "--d", str(args.d),
                    *common_argv(args)]  # fmt: skip
            for engine in ENGINES:
                res = spawn(__file__, engine, argv, Path(d), rnd)
                y = res.pop("outputs")
                got[engine] = {"ms": res, "y": y}
            rounds.append(got)
    load1 = os.getloadavg()[0]
    print(f"attention [1, {args.heads}, S, {args.d}], {args.threads} thread(s), {args.runs} runs x "
          f"{args.rounds} rounds (median of medians), each engine in its own process; "
          f"load {load0:.1f} -> {load1:.1f}")  # fmt: skip
    print(f"{'S':>6} {'fused ms':>10} {'unfused ms':>10} {'ORT ms':>10} {'fused/unf':>9} "
          f"{'fused/ORT':>9}  match")  # fmt: skip
    for seq in lengths:
        med = {e: statistics.median(r[e]["ms"][str(seq)] for r in rounds) for e in ENGINES}
        ref = rounds[0]["onnxruntime"]["y"][str(seq)]
        ok = all(compare(rounds[0][e]["y"][str(seq)], ref).match for e in ("fused", "unfused"))
        print(f"{seq:>6} {med['fused']:>10.3f} {med['unfused']:>10.3f} {med['onnxruntime']:>10.3f} "
              f"{med['fused'] / med['unfused']:>9.3f} {med['fused'] / med['onnxruntime']:>9.3f}  "
              f"{'yes' if ok else 'NO'}")  # fmt: skip
        spread = "; ".join(f"{e} " + " ".join(f"{r[e]['ms'][str(seq)]:.3f}" for r in rounds)
                           for e in ENGINES)  # fmt: skip
        print(f"{'':>6}  per round: {spread}")


if __name__ == "__main__":
    main()
