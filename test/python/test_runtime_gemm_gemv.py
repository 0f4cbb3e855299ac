"""One-row Gemm against a transposed weight as dot products (``afrt_matmul_gemv_``).

A classifier's Gemm at batch 1 (x [1, K], weight [N, K], ``transB = 1``) is N dot products of
the weight rows with x; ``afrt_matmul_f32`` computes it with ``afrt_gemv_rows_`` in place of
the GEMM core. The model has odd sizes (K not a multiple of 16, N not of 4, 16 or 64),
alpha and beta other than 1, a broadcast and a full C, a Relu and a residual Add after the
product, and one Gemm with ``transB = 0`` that keeps the GEMM core; 37 -> 1003 and 1031 ->
517 are above the parallel threshold, so two and three threads split their columns. One
build loaded at 1, 2 and 3 threads gives the same bits and matches onnxruntime.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from runtime_drivers import same_bits_at_thread_counts


def _model() -> onnx.ModelProto:
    rng = np.random.default_rng(31)
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def const(name: str, a: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(a.astype(np.float32), name))
        return name

    def gemm(x: str, cin: int, cout: int, trans_b: int = 1, **attrs: float) -> str:
        name = f"g{len(nodes)}"
        w = rng.uniform(-1.0, 1.0, (cout, cin) if trans_b else (cin, cout)) * (1.5 / np.sqrt(cin))
        c_shape = (1, cout) if len(nodes) % 2 else (cout,)
        c = const(f"{name}_c", rng.uniform(-0.5, 0.5, c_shape))
        nodes.append(
            helper.make_node("Gemm", [x, const(f"{name}_w", w), c], [name], transB=trans_b, **attrs)
        )
        return name

    def op(kind: str, *ins: str) -> str:
        name = f"{kind.lower()}{len(nodes)}"
        nodes.append(helper.make_node(kind, list(ins), [name]))
        return name

    small = op("Relu", gemm("x", 9, 13))
    wide = gemm("x", 9, 37, alpha=0.5, beta=2.0)
    big = op("Add", gemm(wide, 37, 1003), "r")
    tall = op("Relu", gemm("w", 1031, 517, alpha=1.25, beta=0.5))
    plain = gemm("w", 1031, 21, trans_b=0)
    outs = [small, big, tall, plain]
    sizes = [13, 1003, 517, 21]
    g = helper.make_graph(
        nodes,
        "gemm_gemv",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 9]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [1, 1031]),
            helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 1003]),
        ],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, [1, n]) for o, n in zip(outs, sizes)],
        inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("cpu", ["native", "x86-64-v2"])
def test_gemm_gemv_at_one_to_three_threads(cpu: str) -> None:
    model = _model()
    rng = np.random.default_rng(32)
    feeds = {
        "x": rng.uniform(-1.0, 1.0, (1, 9)).astype(np.float32),
        "w": rng.uniform(-1.0, 1.0, (1, 1031)).astype(np.float32),
        "r": rng.uniform(-1.0, 1.0, (1, 1003)).astype(np.float32),
    }
    same_bits_at_thread_counts(model, feeds, cpu)
