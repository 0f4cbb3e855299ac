"""1x1 convs on a one-position map as matrix-vector products (``afrt_conv_gemv_f32_``).

A squeeze-excite block's two convs after its global pool read one position per channel;
``afrt_conv2d_f32`` runs them as dot products of the weight rows with the pooled vector,
four rows at a time, the rows split over the threads above the parallel threshold. The
model has odd sizes (37 -> 9 -> 37: rows not a multiple of 4 or 16, channels not of 16), two
images, the built-in SiLU and sigmoid gate as epilogues, and a 1031 -> 517 conv with a bias
and Relu, above the threshold, so that two and three threads split its rows. One build loaded
at 1, 2 and 3 threads gives the same bits and matches onnxruntime.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from runtime_drivers import same_bits_at_thread_counts


def _model() -> onnx.ModelProto:
    rng = np.random.default_rng(21)
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def conv(x: str, cin: int, cout: int) -> str:
        name = f"c{len(nodes)}"
        w = rng.uniform(-1.0, 1.0, (cout, cin, 1, 1)) * (1.5 / np.sqrt(cin))
        inits.append(numpy_helper.from_array(w.astype(np.float32), f"{name}_w"))
        b = rng.uniform(-0.2, 0.2, cout)
        inits.append(numpy_helper.from_array(b.astype(np.float32), f"{name}_b"))
        nodes.append(helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [name]))
        return name

    def op(kind: str, *ins: str) -> str:
        name = f"{kind.lower()}{len(nodes)}"
        nodes.append(helper.make_node(kind, list(ins), [name]))
        return name

    pooled = op("GlobalAveragePool", "x")
    a = conv(pooled, 37, 9)
    a = op("Mul", a, op("Sigmoid", a))  # SiLU
    gate = op("Sigmoid", conv(a, 9, 37))
    se = op("Mul", "x", gate)
    wide = op("Relu", conv(op("GlobalAveragePool", "w"), 1031, 517))
    g = helper.make_graph(
        nodes,
        "se_gemv",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 37, 5, 5]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [2, 1031, 2, 2]),
        ],
        [
            helper.make_tensor_value_info(se, TensorProto.FLOAT, [2, 37, 5, 5]),
            helper.make_tensor_value_info(wide, TensorProto.FLOAT, [2, 517, 1, 1]),
        ],
        inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("cpu", ["native", "x86-64-v2"])
def test_se_gemv_at_one_to_three_threads(cpu: str) -> None:
    model = _model()
    rng = np.random.default_rng(22)
    feeds = {
        "x": rng.uniform(-1.0, 1.0, (2, 37, 5, 5)).astype(np.float32),
        "w": rng.uniform(-1.0, 3.0, (2, 1031, 2, 2)).astype(np.float32),
    }
    report = same_bits_at_thread_counts(model, feeds, cpu)
    algos = [c["conv_algo"] for c in report["conv_algo"]]
    assert algos == ["gemm_1x1"] * 3, algos  # afrt_conv2d_f32 takes the gemv path
