"""ConvTranspose kernels: autofusion's generated C against onnxruntime, one thread each.

Each engine runs in its own process (no shared caches or thread pools), on the same seeded
input, and prints its median latency over ``--runs`` runs after warm-up; the parent prints
one line per case with both medians and the ratio (autofusion / onnxruntime).

    .venv/bin/python benchmarks/bench_conv_transpose.py [--runs 50] [--cases unet_up2,...]

Cases: the U-Net fixture's upsamplers at larger sizes (kernel 2 / stride 2: one GEMM whose
col2im is a permutation) and general strided ones (kernel 3 or 4 / stride 2: sub-pixel
phases, one stride-1 conv with the phases stacked as channels + a depth-to-space transpose).
Measured (shared 2-core machine, two runs): k3s2 1.90x/1.88x, k4s2 1.26x/1.77x onnxruntime,
down from ~5.2x / ~3.3x with the zero-upsampled conv.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

# name: (x shape, W shape, attributes)
CASES: dict[str, tuple[list[int], list[int], dict[str, list[int]]]] = {
    "unet_up2_64x32": ([1, 64, 32, 32], [64, 32, 2, 2], {"strides": [2, 2]}),
    "unet_up2_256x128": ([1, 256, 16, 16], [256, 128, 2, 2], {"strides": [2, 2]}),
    "k3s2_p1_op1_64x32": (
        [1, 64, 32, 32],
        [64, 32, 3, 3],
        {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]},
    ),
    "k4s2_p1_128x64": (
        [1, 128, 16, 16],
        [128, 64, 4, 4],
        {"strides": [2, 2], "pads": [1, 1, 1, 1]},
    ),
}


def model(name: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    xs, ws, attrs = CASES[name]
    rng = np.random.default_rng(0)
    w = (rng.standard_normal(ws) / np.sqrt(ws[0] * np.prod(ws[2:]))).astype(np.float32)
    b = rng.uniform(-0.5, 0.5, ws[1]).astype(np.float32)
    g = h.make_graph(
        [h.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)],
        name,
        [h.make_tensor_value_info("x", T.FLOAT, xs)],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    return m, {"x": rng.standard_normal(xs).astype(np.float32)}


def _median_ms(fn, runs: int) -> float:
    for _ in range(5):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def run_engine(engine: str, name: str, runs: int) -> float:
    m, feeds = model(name)
    if engine == "onnxruntime":
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
        return _median_ms(lambda: sess.run(None, feeds), runs)
    import autofusion

    compiled = autofusion.compile(m, threads=1)
    return _median_ms(lambda: compiled.run(feeds), runs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--engine", choices=["autofusion", "onnxruntime"], help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.engine:
        print(json.dumps(run_engine(a.engine, a.cases, a.runs)))
        return 0
    for name in a.cases.split(","):
        ms = {}
        for engine in ("onnxruntime", "autofusion"):
            cmd = [sys.executable, __file__, "--engine", engine, "--cases", name]
            out = subprocess.run([*cmd, "--runs", str(a.runs)], capture_output=True, text=True)
            if out.returncode:
                print(f"{name}: {engine} failed: {out.stderr.strip()[-300:]}")
                break
            ms[engine] = float(out.stdout.strip().splitlines()[-1])
        else:
            ratio = ms["autofusion"] / ms["onnxruntime"]
            print(f"{name}: onnxruntime {ms['onnxruntime']:.3f} ms, "
                  f"autofusion {ms['autofusion']:.3f} ms, ratio {ratio:.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
