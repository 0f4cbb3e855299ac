"""Small ONNX models for the frontend tests, built with onnx.helper.

Usage: ``python make_model.py NAME OUT.onnx [NAME OUT.onnx ...]``. pytest imports ``MODELS``
directly.
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
    inits = [
        _w("w", 8, 3, 3, 3),
        _w("b", 8),
        _w("scale", 8),
        _w("bias", 8),
        _w("mean", 8),
        nh.from_array(RNG.uniform(0.5, 1.5, 8).astype(np.float32), "var"),
        _w("w2", 8, 8, 1, 1),
    ]
    nodes = [
        h.make_node("Conv", ["data", "w", "b"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
        h.make_node(
            "BatchNormalization",
            ["c", "scale", "bias", "mean", "var"],
            ["bn"],
            name="bn1",
            epsilon=1e-3,
        ),
        h.make_node("Relu", ["bn"], ["r"], name="relu1"),
        h.make_node("Conv", ["r", "w2"], ["c2"], name="conv2"),
        h.make_node("Sum", ["c2", "r", "bn"], ["s"], name="residual"),
        h.make_node("LRN", ["s"], ["l"], name="lrn", size=3),
        h.make_node(
            "MaxPool",
            ["l"],
            ["p"],
            name="pool",
            kernel_shape=[3, 3],
            strides=[2, 2],
            pads=[0, 0, 1, 1],
        ),
        h.make_node("GlobalAveragePool", ["p"], ["gap"], name="gap"),
        h.make_node("Flatten", ["gap"], ["prob"], name="flatten"),
    ]
    inputs = [_in("data", [1, 3, 16, 16])] + [_in(t.name, list(t.dims)) for t in inits]
    return _model(nodes, inputs, [_out("prob")], inits, opset=9, ir=3)


def auto_pad() -> onnx.ModelProto:
    inits = [_w("w", 4, 2, 3, 3)]
    nodes = [
        h.make_node(
            "Conv", ["x", "w"], ["a"], name="same_upper", auto_pad="SAME_UPPER", strides=[2, 2]
        ),
        h.make_node(
            "Conv", ["x", "w"], ["b"], name="same_lower", auto_pad="SAME_LOWER", strides=[2, 2]
        ),
        h.make_node("Conv", ["x", "w"], ["c"], name="valid", auto_pad="VALID"),
        h.make_node(
            "MaxPool",
            ["x"],
            ["d"],
            name="pool_ceil",
            kernel_shape=[3, 3],
            strides=[2, 2],
            ceil_mode=1,
        ),
        h.make_node(
            "AveragePool",
            ["x"],
            ["e"],
            name="avg",
            kernel_shape=[2, 2],
            auto_pad="SAME_UPPER",
            count_include_pad=1,
        ),
    ]
    return _model(nodes, [_in("x", [1, 2, 8, 8])], [_out(n) for n in "abcde"], inits, opset=11)


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
        h.make_node(
            "ConstantOfShape",
            ["c1u"],
            ["ones"],
            name="cos",
            value=nh.from_array(np.array([1], dtype=np.int64)),
        ),
        h.make_node("Range", ["zero", "c1", "one"], ["rng"], name="range"),
        h.make_node("Equal", ["rng", "ones"], ["eq"], name="equal"),
        h.make_node("Where", ["eq", "four", "rng"], ["wh"], name="where"),
        h.make_node("Cast", ["wh"], ["whf"], name="cast", to=T.FLOAT),
        h.make_node("Slice", ["whf", "st", "en"], ["sl"], name="slice"),
        h.make_node("Add", ["r", "sl"], ["y"], name="add"),
    ]
    inits = [
        _i64("i0", 0),
        _i64("i1", 1),
        _i64("four", 4),
        _i64("ax0", [0]),
        _i64("m1", [-1]),
        _i64("zero", 0),
        _i64("one", 1),
        _i64("st", [0]),
        _i64("en", [100]),
    ]
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
    inits = [
        _i64("s1", [-1]),
        _i64("e1", [-(2**63)]),
        _i64("a1", [2]),
        _i64("p1", [-2]),
        _i64("s2", [1, -100]),
        _i64("e2", [2**62, 2]),
        _i64("a2", [0, 1]),
        _i64("sizes", [2, 4]),
        _i64("pads", [0, 1, 0, 0, 0, 2, 0, 1]),
        nh.from_array(np.array(1.5, np.float32), "pv"),
        _i64("reps", [1, 2, 1, 1]),
    ]
    return _model(nodes, [_in("x", [2, 6, 5, 3])], [_out(n) for n in "abcdefg"], inits)


def softmax_v11() -> onnx.ModelProto:
    nodes = [
        h.make_node("Softmax", ["x"], ["a"], name="softmax_axis1", axis=1),
        h.make_node("LogSoftmax", ["x"], ["b"], name="logsoftmax_last", axis=2),
        h.make_node("Clip", ["x", "lo", "hi"], ["c"], name="clip11"),
        h.make_node("Gemm", ["m", "w", "bias"], ["d"], name="gemm", transB=1, alpha=0.5),
    ]
    inits = [
        nh.from_array(np.array(0.0, np.float32), "lo"),
        nh.from_array(np.array(6.0, np.float32), "hi"),
        _w("w", 5, 4),
        _w("bias", 5),
    ]
    return _model(
        nodes, [_in("x", [2, 3, 4]), _in("m", [3, 4])], [_out(n) for n in "abcd"], inits, opset=11
    )


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
    inits = [
        _w("emb", 50, 8),
        _i64("pad_id", 0),
        _i64("ax", [-1]),
        _i64("shp", [1, 1, 8]),
        nh.from_array(np.array(-1e4, np.float32), "neg"),
        _w("g", 8),
        _w("b", 8),
    ]
    return _model(
        nodes,
        [_in("ids", [2, 5], T.INT64), _in("mask", [2, 5], T.INT64)],
        [_out("y")],
        inits,
        opset=20,
    )


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


def ops_opset11() -> onnx.ModelProto:
    """A mix of ops with opset-11 attribute forms (axes/split as attributes, Clip inputs)."""
    nodes = [
        h.make_node("Reshape", ["x", "shp"], ["r"], name="reshape_0_m1"),
        h.make_node("Unsqueeze", ["r"], ["u"], name="unsq_attr", axes=[0, -1]),
        h.make_node("Squeeze", ["u"], ["sq"], name="sq_attr", axes=[0]),
        h.make_node("Squeeze", ["sq"], ["sq2"], name="sq_all"),
        h.make_node("Flatten", ["x"], ["fl"], name="flatten_neg", axis=-1),
        h.make_node("Split", ["x"], ["s0", "s1"], name="split_attr", axis=1, split=[1, 3]),
        h.make_node("Mean", ["s1", "s1", "k"], ["mean3"], name="mean3"),
        h.make_node("Max", ["s0", "k", "s1"], ["mx"], name="max3"),
        h.make_node("Min", ["s1", "k"], ["mn"], name="min2"),
        h.make_node("PRelu", ["x", "slope"], ["pr"], name="prelu"),
        h.make_node("HardSigmoid", ["x"], ["hs"], name="hsig", alpha=0.3, beta=0.4),
        h.make_node("LeakyRelu", ["x"], ["lr"], name="lrelu", alpha=0.2),
        h.make_node("Elu", ["x"], ["el"], name="elu", alpha=0.7),
        h.make_node("InstanceNormalization", ["x", "inscale", "inbias"], ["inn"], name="inorm"),
        h.make_node("ReduceSum", ["x"], ["rs"], name="rsum_attr", axes=[-1], keepdims=0),
        h.make_node("ReduceProd", ["x"], ["rp"], name="rprod", axes=[1]),
        h.make_node("Pad", ["x", "pads"], ["pd"], name="pad_reflect", mode="reflect"),
        h.make_node("Pad", ["x", "negpads"], ["pn"], name="pad_negative"),
        h.make_node("Slice", ["x", "st", "en", "ax", "stp"], ["sl"], name="slice_step"),
        h.make_node("Concat", ["x", "x"], ["cc"], name="concat_neg", axis=-3),
        h.make_node("Sqrt", ["pos"], ["sqr"], name="sqrt"),
        h.make_node("Pow", ["pos", "two"], ["pw"], name="pow"),
        h.make_node("Softplus", ["x"], ["sp"], name="softplus"),
        h.make_node("Sign", ["x"], ["sg"], name="sign"),
        h.make_node("Exp", ["x"], ["ex"], name="exp"),
        h.make_node("Log", ["pos"], ["lg"], name="log"),
        h.make_node("Erf", ["x"], ["er"], name="erf"),
        h.make_node("Floor", ["x"], ["fo"], name="floor"),
        h.make_node("Ceil", ["x"], ["ce"], name="ceil"),
        h.make_node("Round", ["x"], ["ro"], name="round"),
        h.make_node("Abs", ["x"], ["ab"], name="abs"),
        h.make_node("Neg", ["x"], ["ng"], name="neg"),
        h.make_node("Reciprocal", ["pos"], ["rc"], name="recip"),
        h.make_node("Sin", ["x"], ["si"], name="sin"),
        h.make_node("Cos", ["x"], ["co"], name="cos"),
        h.make_node("Tanh", ["x"], ["th"], name="tanh"),
        h.make_node("Sigmoid", ["x"], ["sm"], name="sigmoid"),
        h.make_node("Clip", ["x", "", "hi"], ["cl"], name="clip_max_only"),
        h.make_node("Dropout", ["x"], ["dr"], name="dropout"),
        h.make_node("Identity", ["dr"], ["idn"], name="identity"),
        h.make_node("Cast", ["idn"], ["cst"], name="cast_noop", to=T.FLOAT),
        h.make_node("Greater", ["x", "k"], ["gt"], name="greater"),
        h.make_node("Less", ["x", "k"], ["le"], name="less"),
        h.make_node("Xor", ["gt", "le"], ["xo"], name="xor"),
        h.make_node("Cast", ["xo"], ["y"], name="cast_bool", to=T.FLOAT),
        h.make_node("ArgMax", ["x"], ["am"], name="argmax", axis=1, keepdims=1),
        h.make_node("GatherElements", ["x", "gidx"], ["ge"], name="gather_elements", axis=1),
        h.make_node("Gather", ["x", "nidx"], ["gn"], name="gather_neg", axis=2),
        h.make_node(
            "MaxPool",
            ["x"],
            ["mp"],
            name="maxpool_dil",
            kernel_shape=[2, 2],
            dilations=[2, 1],
            pads=[1, 0, 0, 1],
        ),
        h.make_node(
            "AveragePool",
            ["x"],
            ["ap"],
            name="avgpool_ceil",
            kernel_shape=[3, 3],
            strides=[2, 2],
            ceil_mode=1,
        ),
        h.make_node("GlobalMaxPool", ["x"], ["gm"], name="gmp"),
        h.make_node("Transpose", ["x"], ["tp"], name="transpose", perm=[0, 2, 3, 1]),
        h.make_node("MatMul", ["x", "mw"], ["mm"], name="matmul_bcast"),
        h.make_node(
            "Conv",
            ["x", "dw"],
            ["dc"],
            name="depthwise",
            group=4,
            strides=[2, 1],
            dilations=[1, 2],
            pads=[1, 2, 1, 2],
        ),
    ]
    inits = [
        _i64("shp", [0, -1, 5]),
        nh.from_array(np.array(0.25, np.float32), "k"),
        _w("slope", 4, 1, 1),
        _w("inscale", 4),
        _w("inbias", 4),
        _i64("pads", [0, 0, 1, 2, 0, 0, 2, 1]),
        _i64("negpads", [0, -1, 0, 1, 0, 0, -2, 0]),
        _i64("st", [-1, 0]),
        _i64("en", [-(2**63), 10]),
        _i64("ax", [1, 3]),
        _i64("stp", [-2, 3]),
        nh.from_array(np.array(2.0, np.float32), "two"),
        nh.from_array(np.array(0.5, np.float32), "hi"),
        _i64("gidx", RNG.integers(-4, 4, size=(2, 3, 5, 5))),
        _i64("nidx", [[0, -1], [2, 1]]),
        _w("mw", 5, 3),
        _w("dw", 4, 1, 3, 3),
    ]
    outs = [
        "r",
        "sq2",
        "fl",
        "mean3",
        "mx",
        "mn",
        "pr",
        "hs",
        "lr",
        "el",
        "inn",
        "rs",
        "rp",
        "pd",
        "pn",
        "sl",
        "cc",
        "sqr",
        "pw",
        "sp",
        "sg",
        "ex",
        "lg",
        "er",
        "fo",
        "ce",
        "ro",
        "ab",
        "ng",
        "rc",
        "si",
        "co",
        "th",
        "sm",
        "cl",
        "cst",
        "y",
        "ge",
        "gn",
        "mp",
        "ap",
        "gm",
        "tp",
        "mm",
        "dc",
    ]
    return _model(
        nodes,
        [_in("x", [2, 4, 5, 5]), _in("pos", [2, 4, 5, 5])],
        [_out(o) for o in outs] + [_out("am", T.INT64)],
        inits,
        opset=11,
    )


def ops_opset18() -> onnx.ModelProto:
    """Opset-18 forms: Split num_outputs (uneven), axes inputs, Pad axes, Mod, integer ops,
    GatherND, Where/Expand on run-time values, Conv1d/3d."""
    nodes = [
        h.make_node("Split", ["x"], ["a", "b", "c"], name="split_num", axis=-1, num_outputs=3),
        h.make_node("Squeeze", ["c", "sqax"], ["asq"], name="squeeze_in"),
        h.make_node("Pad", ["x", "pads", "cv", "pax"], ["pd"], name="pad_axes"),
        h.make_node("Mod", ["ix", "iy"], ["md"], name="mod_int"),
        h.make_node("Mod", ["x", "three"], ["mf"], name="fmod", fmod=1),
        h.make_node("Div", ["ix", "iy"], ["dv"], name="div_int"),
        h.make_node("Less", ["ix", "iy"], ["ls"], name="less"),
        h.make_node("GreaterOrEqual", ["ix", "iy"], ["gq"], name="ge"),
        h.make_node("LessOrEqual", ["ix", "iy"], ["lq"], name="le"),
        h.make_node("Or", ["lq", "gq"], ["oq"], name="or"),
        h.make_node("And", ["ls", "gq"], ["an"], name="and"),
        h.make_node("Expand", ["ix", "eshape"], ["exi"], name="expand_int"),
        h.make_node("Where", ["ls", "ix", "iy"], ["wi"], name="where_int"),
        h.make_node("GatherND", ["x", "ndidx"], ["gnd"], name="gather_nd", batch_dims=1),
        h.make_node("ReduceMax", ["x", "rax"], ["rmx"], name="reduce_max_in", keepdims=0),
        h.make_node("Conv", ["x1", "w1"], ["c1"], name="conv1d", pads=[1, 1]),
        h.make_node("Conv", ["x3", "w3"], ["c3"], name="conv3d", auto_pad="SAME_UPPER"),
        h.make_node("Sub", ["ix", "iy"], ["sb"], name="sub_int"),
        h.make_node("Mul", ["sb", "iy"], ["ml"], name="mul_int"),
        h.make_node("Cast", ["ml"], ["mlf"], name="cast_int", to=T.FLOAT),
        h.make_node("Abs", ["sb"], ["abi"], name="abs_int"),
        h.make_node("Neg", ["sb"], ["ngi"], name="neg_int"),
        h.make_node("HardSwish", ["x"], ["hsw"], name="hard_swish"),
        h.make_node("Dropout", ["x"], ["dx", "dmask"], name="dropout_mask"),
        h.make_node("Reshape", ["dmask", "zshape"], ["dm2"], name="reshape_allowzero", allowzero=1),
    ]
    inits = [
        _i64("sqax", [-1]),
        _i64("pads", [1, 2, 0, 3]),
        nh.from_array(np.array(-1.0, np.float32), "cv"),
        _i64("pax", [1, 3]),
        nh.from_array(np.array(3.0, np.float32), "three"),
        _i64("eshape", [2, 1, 6]),
        _i64("ndidx", [[[0, 1]], [[2, 3]]]),
        _i64("rax", [0, 2]),
        _w("w1", 3, 2, 3),
        _w("w3", 2, 2, 2, 3, 3),
        _i64("zshape", [6, 14, 2]),
    ]
    outs = ["a", "b", "c", "asq", "pd", "mf", "gnd", "rmx", "c1", "c3", "mlf", "hsw", "dx"]
    int_outs = ["md", "dv", "exi", "wi", "abi", "ngi"]
    return _model(
        nodes,
        [
            _in("x", [2, 3, 4, 7]),
            _in("ix", [2, 6], T.INT64),
            _in("iy", [2, 6], T.INT64),
            _in("x1", [1, 2, 9]),
            _in("x3", [1, 2, 3, 5, 5]),
        ],
        [_out(o) for o in outs]
        + [_out(o, T.INT64) for o in int_outs]
        + [_out("an", T.BOOL), _out("oq", T.BOOL), _out("dm2", T.BOOL)],
        inits,
        opset=18,
    )


def folding() -> onnx.ModelProto:
    """Only constants reach the outputs: every node folds at import (numpy rules, and
    onnx.reference for CumSum, which has no converter)."""
    nodes = [
        h.make_node("Shape", ["x"], ["s"], name="shape"),
        h.make_node("Shape", ["x"], ["s_tail"], name="shape_slice", start=-2),
        h.make_node("Size", ["x"], ["sz"], name="size"),
        h.make_node("Gather", ["s", "idx"], ["g"], name="gather"),
        h.make_node("Squeeze", ["g", "ax0"], ["gs"], name="squeeze"),
        h.make_node("Unsqueeze", ["gs", "ax0"], ["gu"], name="unsqueeze"),
        h.make_node("Concat", ["gu", "s", "s_tail"], ["cat"], name="concat", axis=0),
        h.make_node("Div", ["cat", "negthree"], ["dv"], name="div_trunc"),
        h.make_node("Mod", ["cat", "negthree"], ["md"], name="mod_py"),
        h.make_node("Sub", ["dv", "md"], ["sb"], name="sub"),
        h.make_node("Range", ["zero", "sz", "seven"], ["rg"], name="range"),
        h.make_node("Cast", ["rg"], ["rgf"], name="cast", to=T.FLOAT),
        h.make_node("Equal", ["rg", "fourteen"], ["eq"], name="equal"),
        h.make_node("Not", ["eq"], ["ne"], name="not"),
        h.make_node("Where", ["ne", "rgf", "minus"], ["wh"], name="where"),
        h.make_node(
            "ConstantOfShape",
            ["gu"],
            ["cos"],
            name="constant_of_shape",
            value=nh.from_array(np.array([2.5], np.float32)),
        ),
        h.make_node("Expand", ["cos", "eshape"], ["ex"], name="expand"),
        h.make_node("Reshape", ["wh", "rshape"], ["rs"], name="reshape"),
        h.make_node("Transpose", ["rs"], ["tp"], name="transpose", perm=[1, 0]),
        h.make_node("Slice", ["tp", "st", "en", "axs", "stp"], ["sl"], name="slice"),
        h.make_node("Tile", ["sl", "reps"], ["tl"], name="tile"),
        h.make_node("Split", ["tl", "ssizes"], ["sp0", "sp1"], name="split", axis=1),
        h.make_node("ReduceProd", ["s"], ["rp"], name="reduce_prod", keepdims=0),
        h.make_node("CumSum", ["rg", "zero"], ["cs"], name="cumsum_reference"),
        h.make_node(
            "Constant", [], ["cf"], name="constant_floats", value_floats=[1.0, 2.0, 3.0, 4.0]
        ),
        h.make_node("Mul", ["cf", "cos"], ["mcf"], name="mul"),
        h.make_node("ReduceL2", ["rgf"], ["l2"], name="reduce_l2", keepdims=0),
    ]
    inits = [
        _i64("idx", [1]),
        _i64("ax0", [0]),
        _i64("negthree", -3),
        _i64("zero", 0),
        _i64("seven", 7),
        _i64("fourteen", 14),
        nh.from_array(np.array(-1.0, np.float32), "minus"),
        _i64("eshape", [2, 1]),
        _i64("rshape", [2, -1]),
        _i64("st", [-1, 0]),
        _i64("en", [-100, 3]),
        _i64("axs", [0, 1]),
        _i64("stp", [-1, 2]),
        _i64("reps", [2, 3]),
        _i64("ssizes", [1, 2]),
    ]
    f, i = T.FLOAT, T.INT64
    outs = [
        ("sb", i),
        ("ex", f),
        ("sp0", f),
        ("sp1", f),
        ("rp", i),
        ("cs", i),
        ("mcf", f),
        ("sz", i),
        ("l2", f),
    ]
    return _model(nodes, [_in("x", [3, 4, 5, 7])], [_out(n, e) for n, e in outs], inits, opset=15)


def ops_opset9() -> onnx.ModelProto:
    """Opset-9 attribute forms: Clip min/max, Slice starts/ends/axes, Pad pads/value,
    Split split, Unsqueeze/Squeeze axes, Softmax's flatten-to-2-d axis, Dropout, Gemm."""
    nodes = [
        h.make_node("Clip", ["x"], ["cl"], name="clip_attrs", min=-0.5, max=0.75),
        h.make_node(
            "Slice", ["x"], ["sl"], name="slice_attrs", starts=[1, -3], ends=[100, -1], axes=[1, 3]
        ),
        h.make_node(
            "Pad", ["x"], ["pd"], name="pad_attrs", pads=[0, 0, 1, 0, 0, 0, 0, 2], value=0.5
        ),
        h.make_node("Split", ["x"], ["s0", "s1"], name="split_attrs", axis=2, split=[1, 4]),
        h.make_node("Unsqueeze", ["s0"], ["us"], name="unsq9", axes=[0]),
        h.make_node("Squeeze", ["us"], ["sq"], name="sq9", axes=[0, 3]),
        h.make_node("Softmax", ["x"], ["sm"], name="softmax9"),
        h.make_node("Dropout", ["x"], ["dr", "mask"], name="dropout9", ratio=0.3),
        h.make_node("Flatten", ["dr"], ["fl"], name="flatten9", axis=2),
        h.make_node("Gemm", ["fl", "w", "c"], ["gm"], name="gemm9", transA=1, beta=0.5),
        h.make_node("ReduceMean", ["x"], ["rm"], name="mean9", axes=[1, -1]),
        h.make_node("Sum", ["x"], ["one"], name="sum_single"),
    ]
    inits = [_w("w", 6, 4), _w("c", 1, 4)]
    outs = ["cl", "sl", "pd", "s1", "sq", "sm", "gm", "rm", "one"]
    return _model(nodes, [_in("x", [2, 3, 5, 2])], [_out(o) for o in outs], inits, opset=9)


def ops_extra() -> onnx.ModelProto:
    """Forms lowered to several nn ops: ArgMin, select_last_index, LayerNormalization's
    Mean/InvStdDev outputs, Clip with run-time bounds, ReduceL1/SumSquare/LogSum/LogSumExp
    (LogSumExp of values near 100 * N(0, 1), where exp alone overflows float32)."""
    nodes = [
        h.make_node("ArgMin", ["x"], ["amin"], name="argmin", axis=1, keepdims=0),
        h.make_node("ArgMax", ["r"], ["alast"], name="argmax_last", axis=-1, select_last_index=1),
        h.make_node(
            "LayerNormalization",
            ["x", "g"],
            ["ln", "mean", "isd"],
            name="ln3",
            axis=1,
            epsilon=1e-3,
        ),
        h.make_node("Clip", ["x", "lo", "hi"], ["cl"], name="clip_runtime"),
        h.make_node("ReduceL1", ["x", "ax"], ["l1"], name="l1", keepdims=0),
        h.make_node("ReduceSumSquare", ["x", "ax"], ["ss"], name="sumsq"),
        h.make_node("ReduceLogSum", ["ex", "ax"], ["ls"], name="logsum", keepdims=0),
        h.make_node("ReduceLogSumExp", ["big", "ax"], ["lse"], name="logsumexp", keepdims=0),
        h.make_node("Exp", ["x"], ["ex"], name="exp"),
        h.make_node("Mul", ["x", "hundred"], ["big"], name="scale"),
    ]
    inits = [
        _w("g", 3, 4),
        _i64("ax", [-1, 0]),
        nh.from_array(np.array(100.0, np.float32), "hundred"),
    ]
    outs = [
        _out("ln"),
        _out("mean"),
        _out("isd"),
        _out("cl"),
        _out("amin", T.INT64),
        _out("alast", T.INT64),
        _out("l1"),
        _out("ss"),
        _out("ls"),
        _out("lse"),
    ]
    return _model(
        nodes,
        [_in("x", [2, 3, 4]), _in("r", [2, 6], T.INT64), _in("lo", []), _in("hi", [])],
        outs,
        inits,
        opset=18,
    )


def conv_transpose_k4s2() -> onnx.ModelProto:
    """A DCGAN-style k4s2p1 ConvTranspose: imported as sub-pixel phases of one conv."""
    node = h.make_node(
        "ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1], name="up"
    )
    return _model([node], [_in("x", [1, 8, 6, 6])], [_out("y")], [_w("w", 8, 3, 4, 4), _w("b", 3)])


def _seeded(build: Callable[[], onnx.ModelProto]) -> Callable[[], onnx.ModelProto]:
    """Each call restarts the generator, so a builder always returns the same model."""

    def wrapper() -> onnx.ModelProto:
        global RNG
        RNG = np.random.default_rng(0)
        return build()

    wrapper.__name__ = build.__name__
    return wrapper


MODELS: dict[str, Callable[[], onnx.ModelProto]] = {
    f.__name__: _seeded(f)
    for f in (
        conv_bn_relu_v3,
        auto_pad,
        shape_subgraph,
        reduce_axes,
        slices,
        softmax_v11,
        attention_mask,
        unsupported,
        dangling,
        cycle,
        dynamic_input,
        old_opset,
        bad_dtype,
        maxpool_indices,
        ops_opset9,
        ops_opset11,
        ops_opset18,
        ops_extra,
        folding,
        conv_transpose_k4s2,
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
