"""``cost.kernel_work``: FLOPs and bytes of one kernel call, against counts done by hand.

The profiler (``autofusion-bench --profile``) divides these by measured time for GFLOP/s
and GB/s, so a wrong count is a wrong roofline verdict. Each model is small enough to count
on paper; the comments give the arithmetic.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func
from xdsl.ir import Operation

from autofusion.analysis.cost import kernel_work
from autofusion.api import prepare_module
from autofusion.dialects import nn
from autofusion.dialects.fusion import KernelOp
from autofusion.pipeline import PipelineOptions

F = TensorProto.FLOAT


def _model(nodes, inputs, output, inits=()) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
        [helper.make_tensor_value_info(output[0], F, output[1])],
        initializer=list(inits),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _calls(model: onnx.ModelProto, fusion: bool = True) -> list[Operation]:
    """The top-level ops of @main that become one C kernel call each."""
    module, _ = prepare_module(model, PipelineOptions(fusion=fusion))
    main = next(op for op in module.ops if isinstance(op, func.FuncOp))
    return [
        op
        for op in main.body.block.ops
        if isinstance(op, KernelOp)
        or (op.name.startswith("nn.") and not isinstance(op, nn.ConstantOp))
    ]


def _weight(name: str, shape: list[int]) -> onnx.TensorProto:
    rng = np.random.default_rng(0)
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.1, name)


def test_conv_relu_kernel() -> None:
    # Conv 1x3x8x8 * 4x3x3x3 (pad 1) -> 1x4x8x8, fused with Relu into one kernel.
    # FLOPs: 2 * 256 outputs * 27 taps = 13824, Relu 1 per output = 256 -> 14080.
    # Bytes: input 192*4 = 768, weight 108*4 = 432, output 256*4 = 1024 -> 2224
    # (the conv's result stays inside the kernel: not written, not read back).
    m = _model(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"])],
        [("x", [1, 3, 8, 8])], ("y", [1, 4, 8, 8]), [_weight("w", [4, 3, 3, 3])],
    )  # fmt: skip
    (k,) = _calls(m)
    assert isinstance(k, KernelOp)
    assert kernel_work(k) == (14080, 2224)


def test_matmul_op() -> None:
    # 2x16 @ 16x8: FLOPs 2 * 16 outputs * 16 = 512; bytes (32 + 128 + 16) * 4 = 704.
    m = _model([helper.make_node("MatMul", ["x", "w"], ["y"])], [("x", [2, 16])], ("y", [2, 8]),
               [_weight("w", [16, 8])])  # fmt: skip
    (k,) = _calls(m)
    assert isinstance(k, nn.MatMulOp)
    assert kernel_work(k) == (512, 704)


def test_elementwise_chain_fused_and_unfused() -> None:
    # sigmoid((x + y) * x) on 4x8 (32 elements): Add 32 + Mul 32 + Sigmoid 6 * 32 = 256 FLOPs.
    # Fused: x and y read once each (x twice in the graph, once from memory), the output
    # written: 3 * 128 = 384 bytes. Unfused: each op reads its operands and writes its result.
    m = _model(
        [helper.make_node("Add", ["x", "y"], ["a"]), helper.make_node("Mul", ["a", "x"], ["b"]),
         helper.make_node("Sigmoid", ["b"], ["o"])],
        [("x", [4, 8]), ("y", [4, 8])], ("o", [4, 8]),
    )  # fmt: skip
    (k,) = _calls(m)
    assert isinstance(k, KernelOp)
    assert kernel_work(k) == (256, 384)
    assert [kernel_work(op) for op in _calls(m, fusion=False)] == [(32, 384), (32, 384), (192, 256)]
