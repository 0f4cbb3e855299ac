"""Small ONNX models for the frontend tests, built with onnx.helper.

Usage: ``python make_model.py NAME OUT.onnx [NAME OUT.onnx ...]``. pytest imports ``MODELS`` directly.
Weights are seeded random numbers; every model is small enough to build in milliseconds.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

RNG = np.random.default_rng(0)


def _w(name: str, *shape: int) -> onnx.TensorProto:
    return nh.from_array(RNG.standard_normal(shape).astype(np.float32), name)


def _i64(name: str, values) -> onnx.TensorProto:
    return nh.from_array(np.array(values, dtype=np.int64), name)


def _model(nodes, inputs, outputs, inits=(), opset: int = 13, ir: int | None = None):
    g = h.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    if ir is not None:
        m.ir_version = ir
    return m


def _in(name: str, shape, elem=T.FLOAT) -> onnx.ValueInfoProto:
    return h.make_tensor_value_info(name, elem, shape)


def _out(name: str, elem=T.FLOAT) -> onnx.ValueInfoProto:
    return h.make_tensor_value_info(name, elem, None)


def conv_bn_relu_v3() -> onnx.ModelProto:
    """Model-zoo style: opset 9, IR version 3, BN parameters listed as graph inputs."""
    inits = [_w("w", 8, 3, 3, 3), _w("b", 8), _w("scale", 8), _w("bias", 8), _w("mean", 8),
             nh.from_array(RNG.uniform(0.5, 1.5, 8).astype(np.float32), "var"),
             _w("w2", 8, 8, 1, 1)]
    nodes = [
        h.make_node("Conv", ["data", "w", "b"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
        h.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["bn"],
                    name="bn1", epsilon=1e-3),
        h.make_node("Relu", ["bn"], ["r"], name="relu1"),
        h.make_node("Conv", ["r", "w2"], ["c2"], name="conv2"),
        h.make_node("Sum", ["c2", "r", "bn"], ["s"], name="residual"),
        h.make_node("LRN", ["s"], ["l"], name="lrn", size=3),
        h.make_node("MaxPool", ["l"], ["p"], name="pool", kernel_shape=[3, 3], strides=[2, 2],
                    pads=[0, 0, 1, 1]),
        h.make_node("GlobalAveragePool", ["p"], ["gap"], name="gap"),
        h.make_node("Flatten", ["gap"], ["prob"], name="flatten"),
    ]
    inputs = [_in("data", [1, 3, 16, 16])] + [
        _in(t.name, list(t.dims)) for t in inits
    ]
    return _model(nodes, inputs, [_out("prob")], inits, opset=9, ir=3)


def auto_pad() -> onnx.ModelProto:
    inits = [_w("w", 4, 2, 3, 3)]
    nodes = [
        h.make_node("Conv", ["x", "w"], ["a"], name="same_upper", auto_pad="SAME_UPPER",
                    strides=[2, 2]),
        h.make_node("Conv", ["x", "w"], ["b"], name="same_lower", auto_pad="SAME_LOWER",
                    strides=[2, 2]),
        h.make_node("Conv", ["x", "w"], ["c"], name="valid", auto_pad="VALID"),
        h.make_node("MaxPool", ["x"], ["d"], name="pool_ceil", kernel_shape=[3, 3],
                    strides=[2, 2], ceil_mode=1),
        h.make_node("AveragePool", ["x"], ["e"], name="avg", kernel_shape=[2, 2],
                    auto_pad="SAME_UPPER", count_include_pad=1),
    ]
    return _model(nodes, [_in("x", [1, 2, 8, 8])],
                  [_out(n) for n in "abcde"], inits, opset=11)


def shape_subgraph() -> onnx.ModelProto:
    """The exporter pattern Shape -> Gather -> Unsqueeze -> Concat -> Reshape, plus a
    ConstantOfShape/Range/Equal/Where chain that must fold entirely."""
    nodes = [
        h.make_node("Shape", ["x"], ["s"], name="shape"),
        h.make_node("Gather", ["s", "i0"], ["n"], name="gather_batch", axis=0),
        h.make_node("Gather", ["s", "i1"], ["c"], name="gather_chan", axis=0),
        h.make_node("Mul", ["c", "four"], ["c4"], name="mul"),
        h.make_node("Unsqueeze", ["n", "ax0"], ["nu"], name="unsq_n"),
        h.make_node("Unsqueeze", ["c4", "ax0"], ["cu"], name="unsq_c"),
        h.make_node("Concat", ["nu", "cu", "m1"], ["tgt"], name="concat", axis=0),
        h.make_node("Reshape", ["x", "tgt"], ["r"], name="reshape"),
        h.make_node("Add", ["c", "one"], ["c1"], name="add_one"),
        h.make_node("Unsqueeze", ["c1", "ax0"], ["c1u"], name="unsq_c1"),
        h.make_node("ConstantOfShape", ["c1u"], ["ones"], name="cos",
                    value=nh.from_array(np.array([1], dtype=np.int64))),
        h.make_node("Range", ["zero", "c1", "one"], ["rng"], name="range"),
        h.make_node("Equal", ["rng", "ones"], ["eq"], name="equal"),
        h.make_node("Where", ["eq", "four", "rng"], ["wh"], name="where"),
        h.make_node("Cast", ["wh"], ["whf"], name="cast", to=T.FLOAT),
        h.make_node("Slice", ["whf", "st", "en"], ["sl"], name="slice"),
        h.make_node("Add", ["r", "sl"], ["y"], name="add"),
    ]
    inits = [_i64("i0", 0), _i64("i1", 1), _i64("four", 4), _i64("ax0", [0]),
             _i64("m1", [-1]), _i64("zero", 0), _i64("one", 1), _i64("st", [0]),
             _i64("en", [100])]
    return _model(nodes, [_in("x", [2, 3, 4, 4])], [_out("y")], inits, opset=13)


def reduce_axes() -> onnx.ModelProto:
    nodes = [
        h.make_node("ReduceMean", ["x", "axes"], ["a"], name="mean18", keepdims=1),
        h.make_node("ReduceSum", ["x", "axes"], ["b"], name="sum18", keepdims=0),
        h.make_node("ReduceMax", ["x"], ["c"], name="max_all", keepdims=0),
        h.make_node("ReduceMin", ["x", "empty"], ["d"], name="min_noop", noop_with_empty_axes=1),
        h.make_node("ReduceL2", ["x", "neg"], ["e"], name="l2", keepdims=1),
        h.make_node("ArgMax", ["x"], ["f"], name="argmax", axis=-1, keepdims=0),
    ]
    inits = [_i64("axes", [-1, 1]), _i64("empty", np.zeros(0, np.int64)), _i64("neg", [-2])]
    outs = [_out(n) for n in "abcde"] + [_out("f", T.INT64)]
    return _model(nodes, [_in("x", [2, 3, 4])], outs, inits, opset=18)


def slices() -> onnx.ModelProto:
    nodes = [
        h.make_node("Slice", ["x", "s1", "e1", "a1", "p1"], ["a"], name="neg_step"),
        h.make_node("Slice", ["x", "s2", "e2", "a2"], ["b"], name="clamped"),
        h.make_node("Split", ["x", "sizes"], ["c", "d"], name="split_in", axis=1),
        h.make_node("Pad", ["x", "pads", "pv"], ["e"], name="pad", mode="constant"),
        h.make_node("Transpose", ["x"], ["f"], name="transpose_default"),
        h.make_node("Tile", ["x", "reps"], ["g"], name="tile"),
    ]
    inits = [_i64("s1", [-1]), _i64("e1", [-(2**63)]), _i64("a1", [2]), _i64("p1", [-2]),
             _i64("s2", [1, -100]), _i64("e2", [2**62, 2]), _i64("a2", [0, 1]),
             _i64("sizes", [2, 4]), _i64("pads", [0, 1, 0, 0, 0, 2, 0, 1]),
             nh.from_array(np.array(1.5, np.float32), "pv"), _i64("reps", [1, 2, 1, 1])]
    return _model(nodes, [_in("x", [2, 6, 5, 3])], [_out(n) for n in "abcdefg"], inits)


def softmax_v11() -> onnx.ModelProto:
    nodes = [
        h.make_node("Softmax", ["x"], ["a"], name="softmax_axis1", axis=1),
        h.make_node("LogSoftmax", ["x"], ["b"], name="logsoftmax_last", axis=2),
        h.make_node("Clip", ["x", "lo", "hi"], ["c"], name="clip11"),
        h.make_node("Gemm", ["m", "w", "bias"], ["d"], name="gemm", transB=1, alpha=0.5),
    ]
    inits = [nh.from_array(np.array(0.0, np.float32), "lo"),
             nh.from_array(np.array(6.0, np.float32), "hi"), _w("w", 5, 4), _w("bias", 5)]
    return _model(nodes, [_in("x", [2, 3, 4]), _in("m", [3, 4])],
                  [_out(n) for n in "abcd"], inits, opset=11)


def attention_mask() -> onnx.ModelProto:
    """int64 token ids into an embedding Gather; a mask computed at run time from an input."""
    nodes = [
        h.make_node("Gather", ["emb", "ids"], ["e"], name="embedding", axis=0),
        h.make_node("Cast", ["mask"], ["mb"], name="mask_cast", to=T.BOOL),
        h.make_node("Not", ["mb"], ["nm"], name="mask_not"),
        h.make_node("Equal", ["ids", "pad_id"], ["is_pad"], name="is_pad"),
        h.make_node("Or", ["nm", "is_pad"], ["drop"], name="drop"),
        h.make_node("Unsqueeze", ["drop", "ax"], ["d3"], name="unsq"),
        h.make_node("Expand", ["d3", "shp"], ["dx"], name="expand"),
        h.make_node("Where", ["dx", "neg", "e"], ["masked"], name="where"),
        h.make_node("LayerNormalization", ["masked", "g", "b"], ["ln"], name="ln", axis=-1),
        h.make_node("Gelu", ["ln"], ["y"], name="gelu", approximate="tanh"),
    ]
    inits = [_w("emb", 50, 8), _i64("pad_id", 0), _i64("ax", [-1]), _i64("shp", [1, 1, 8]),
             nh.from_array(np.array(-1e4, np.float32), "neg"), _w("g", 8), _w("b", 8)]
    return _model(nodes, [_in("ids", [2, 5], T.INT64), _in("mask", [2, 5], T.INT64)],
                  [_out("y")], inits, opset=20)


def unsupported() -> onnx.ModelProto:
    nodes = [
        h.make_node("Relu", ["x"], ["a"], name="ok"),
        h.make_node("FooBar", ["a"], ["b"], name="foo1"),
        h.make_node("NonMaxSuppression", ["b", "b"], ["c"], name="nms"),
        h.make_node("FooBar", ["c"], ["y"], name="foo2"),
    ]
    return _model(nodes, [_in("x", [1, 4])], [_out("y")])


def dangling() -> onnx.ModelProto:
    nodes = [h.make_node("Add", ["x", "ghost"], ["y"], name="add_ghost")]
    return _model(nodes, [_in("x", [1, 4])], [_out("y")])


def cycle() -> onnx.ModelProto:
    nodes = [
        h.make_node("Add", ["x", "b"], ["a"], name="first"),
        h.make_node("Relu", ["a"], ["b"], name="second"),
        h.make_node("Relu", ["a"], ["y"], name="third"),
    ]
    return _model(nodes, [_in("x", [1, 4])], [_out("y")])


def dynamic_input() -> onnx.ModelProto:
    nodes = [h.make_node("Relu", ["x"], ["y"], name="relu")]
    return _model(nodes, [_in("x", ["batch", 4])], [_out("y")])


def old_opset() -> onnx.ModelProto:
    nodes = [h.make_node("Relu", ["x"], ["y"], name="relu")]
    return _model(nodes, [_in("x", [1, 4])], [_out("y")], opset=7)


def bad_dtype() -> onnx.ModelProto:
    nodes = [h.make_node("Cast", ["x"], ["y"], name="to_bf16", to=T.BFLOAT16)]
    return _model(nodes, [_in("x", [1, 4])], [_out("y", T.BFLOAT16)])


def maxpool_indices() -> onnx.ModelProto:
    nodes = [
        h.make_node("MaxPool", ["x"], ["p", "idx"], name="pool_with_idx", kernel_shape=[2, 2]),
        h.make_node("Cast", ["idx"], ["y"], name="use_idx", to=T.FLOAT),
    ]
    return _model(nodes, [_in("x", [1, 1, 4, 4])], [_out("p"), _out("y")], opset=12)


MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    f.__name__: f
    for f in (
        conv_bn_relu_v3, auto_pad, shape_subgraph, reduce_axes, slices, softmax_v11,
        attention_mask, unsupported, dangling, cycle, dynamic_input, old_opset, bad_dtype,
        maxpool_indices,
    )
}


def main(argv: list[str]) -> int:
    """``make_model.py NAME OUT [NAME OUT ...]`` (several per call saves interpreter starts)."""
    args = argv[1:]
    if not args or len(args) % 2:
        print("usage: make_model.py NAME OUT.onnx [NAME OUT.onnx ...]", file=sys.stderr)
        return 2
    for name, out in zip(args[::2], args[1::2]):
        with open(out, "wb") as f:
            f.write(MODELS[name]().SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
