"""The GEMM core's 17-column edge (``afrt_ukernel12h1_`` and its 8- and 4-row copies, afrt.h):
outputs with N mod 32 = 17 columns (7x7 maps: 49 positions; 9x9: 81; a 1x17 map) against
onnxruntime.

1x1 convs (gemm_1x1) with output channels that leave 4-, 8- and 12-row edge tiles, more
than one k block (over 256 input channels), a bias, Relu, and a residual Add with and without
Relu, plus a MatMul with 49 output columns; built for this CPU (AVX-512: the new kernel) at
one, two and three threads and for x86-64-v2 (portable loops), where the outputs must match
the same way. The residual written over in place (17-column tiles through the scratch) is
``test_residual_inplace.py``'s 7x7 case, bit for bit against the build without it.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from conv_epilogues import checked_conv_algos
from onnx import TensorProto, helper, numpy_helper

from autofusion.lowering.c.testing import onnxruntime_outputs

F = TensorProto.FLOAT

# c, k, h, w, epilogue ("relu", "add" residual, "add_relu" residual then Relu, "none")
CASES: list[tuple[int, int, int, int, str]] = [
    (300, 44, 7, 7, "add_relu"),
    (64, 40, 7, 7, "add"),
    (96, 36, 9, 9, "relu"),
    (40, 20, 1, 17, "none"),
    (72, 100, 7, 7, "relu"),
]


def _model(seed: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """Every case on its own input ``x{i}`` (and residual input ``r{i}``), output ``y{i}``;
    then ``MatMul(a [37 x 72], B [72 x 49]) -> Relu`` as ``ym``."""
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    ins: list[onnx.ValueInfoProto] = []
    outs: list[onnx.ValueInfoProto] = []
    feeds: dict[str, np.ndarray] = {}
    for i, (c, k, h, w, epi) in enumerate(CASES):
        wt = (rng.uniform(-1, 1, (k, c, 1, 1)) / np.sqrt(c)).astype(np.float32)
        inits.append(numpy_helper.from_array(wt, f"w{i}"))
        inits.append(numpy_helper.from_array(rng.uniform(-1, 1, k).astype(np.float32), f"b{i}"))
        y = f"y{i}"
        conv_out = y if epi == "none" else f"c{i}"
        nodes.append(helper.make_node("Conv", [f"x{i}", f"w{i}", f"b{i}"], [conv_out],
                                      name=f"conv{i}", kernel_shape=[1, 1]))  # fmt: skip
        if epi == "relu":
            nodes.append(helper.make_node("Relu", [conv_out], [y], name=f"relu{i}"))
        elif epi.startswith("add"):
            ins.append(helper.make_tensor_value_info(f"r{i}", F, [1, k, h, w]))
            feeds[f"r{i}"] = rng.uniform(-3, 3, (1, k, h, w)).astype(np.float32)
            nodes.append(helper.make_node("Sigmoid", [f"r{i}"], [f"s{i}"], name=f"sig{i}"))
            add_out = y if epi == "add" else f"a{i}"
            nodes.append(helper.make_node("Add", [conv_out, f"s{i}"], [add_out], name=f"add{i}"))
            if epi == "add_relu":
                nodes.append(helper.make_node("Relu", [add_out], [y], name=f"relu{i}"))
        ins.append(helper.make_tensor_value_info(f"x{i}", F, [1, c, h, w]))
        outs.append(helper.make_tensor_value_info(y, F, [1, k, h, w]))
        feeds[f"x{i}"] = rng.uniform(-2, 2, (1, c, h, w)).astype(np.float32)
    bm = (rng.uniform(-1, 1, (72, 49)) / np.sqrt(72)).astype(np.float32)
    inits.append(numpy_helper.from_array(bm, "bm"))
    ins.append(helper.make_tensor_value_info("am", F, [37, 72]))
    feeds["am"] = rng.uniform(-2, 2, (37, 72)).astype(np.float32)
    nodes.append(helper.make_node("MatMul", ["am", "bm"], ["mm"], name="matmul"))
    nodes.append(helper.make_node("Relu", ["mm"], ["ym"], name="relum"))
    outs.append(helper.make_tensor_value_info("ym", F, [37, 49]))
    graph = helper.make_graph(nodes, "gemm_edge17", ins, outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), feeds


@pytest.mark.parametrize(
    ("cpu", "threads"), [("native", 1), ("native", 2), ("native", 3), ("x86-64-v2", 1)]
)
def test_17_column_edge_matches_onnxruntime(cpu: str, threads: int) -> None:
    model, feeds = _model(seed=threads)
    ref = onnxruntime_outputs(model, feeds)
    assert all(0.1 < np.abs(r).max() < 10 for r in ref.values())  # ordinary size
    algos = checked_conv_algos(model, feeds, cpu, threads)
    assert [algos[f"conv{i}"] for i in range(len(CASES))] == ["gemm_1x1"] * len(CASES)
