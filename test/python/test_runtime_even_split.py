"""The even thread split of a GEMM conv on one image (``afrt_gemm_split_even_``).

Two threads halving a conv's output used to leave one of them most of the work (128 output
channels in 12-row panels: 72 rows against 56); the blocks are now evened out, the last one
taking the rest, which gives blocks that are not the same size and a last block longer than
the others. One build loaded at 1, 2 and 3 threads must give the same bits (each output
element is still one tile's) and match onnxruntime. The model's convs are chosen so that two
threads take the new blocks: a column split of a 28x28 map (784 positions: 384 + 400, the
half-width last panel inside the longer block), 128 output channels (60 + 68 rows) after a
strided 1x1, and 50 output channels in 8-row panels (24 + 26).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from runtime_drivers import same_bits_at_thread_counts


def _model() -> onnx.ModelProto:
    rng = np.random.default_rng(11)
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def conv(x: str, cin: int, cout: int, stride: int = 1, relu: bool = True) -> str:
        name = f"c{len(nodes)}"
        w = rng.uniform(-1.0, 1.0, (cout, cin, 1, 1)) * (1.5 / np.sqrt(cin))
        inits.append(numpy_helper.from_array(w.astype(np.float32), f"{name}_w"))
        b = rng.uniform(-0.2, 0.2, cout)
        inits.append(numpy_helper.from_array(b.astype(np.float32), f"{name}_b"))
        ins = [x, f"{name}_w", f"{name}_b"]
        nodes.append(helper.make_node("Conv", ins, [name], strides=[stride, stride]))
        if not relu:
            return name
        nodes.append(helper.make_node("Relu", [name], [f"{name}_r"]))
        return f"{name}_r"

    a = conv("x", 12, 32)  # 28x28: columns 384 + 400 (12 channels: not direct_1x1)
    b = conv(a, 32, 128, stride=2)  # 14x14 (gathered): rows 60 + 68
    y = conv(b, 128, 50, relu=False)  # rows 24 + 26
    g = helper.make_graph(
        nodes,
        "even_split",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 12, 28, 28])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 50, 14, 14])],
        inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("cpu", ["native", "x86-64-v2"])
def test_even_split_at_one_to_three_threads(cpu: str) -> None:
    model = _model()
    x = np.random.default_rng(12).uniform(-1.0, 1.0, (1, 12, 28, 28)).astype(np.float32)
    report = same_bits_at_thread_counts(model, {"x": x}, cpu)
    algos = [c["conv_algo"] for c in report["conv_algo"]]
    assert algos == ["gemm_1x1", "im2col_gemm", "gemm_1x1"], algos  # all afrt_conv_own_
