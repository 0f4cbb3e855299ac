"""Every nn op through the generated C, against onnxruntime (or the interpreter).

Each case is a one-node ONNX model: imported, lowered (convert-nn-to-buffers,
lower-nn-to-loops), printed, built with -Wall -Wextra -Werror and run; outputs must match
onnxruntime at rtol=1e-3, atol=1e-4*max(1,max|ref|). Ops without an ONNX form here
(nn.attention) are checked against the reference interpreter. A coverage test asserts that
the cases reach every op of the nn dialect.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from autofusion.dialects import nn
from autofusion.lowering.c.testing import assert_close, build_and_run, onnxruntime_outputs

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
U32 = TensorProto.UINT32
RNG = np.random.default_rng(7)

Spec = tuple[str, Sequence[int], int]  # (name, shape, dtype)


def _model(
    op: str,
    inputs: Sequence[Spec],
    outputs: Sequence[Spec],
    attrs: dict[str, object] | None = None,
    inits: dict[str, np.ndarray] | None = None,
    opset: int = 17,
) -> onnx.ModelProto:
    inits = inits or {}
    node_inputs = [n for n, _, _ in inputs] + list(inits)
    if op == "Gather" and "t" in inits:  # embedding lookup: the table is the data operand
        node_inputs = ["t", *[n for n in node_inputs if n != "t"]]
    node = helper.make_node(
        op, node_inputs, [n for n, _, _ in outputs], name=f"{op}_node", **(attrs or {})
    )
    graph = helper.make_graph(
        [node],
        f"single_{op}",
        [helper.make_tensor_value_info(n, t, list(s)) for n, s, t in inputs],
        [helper.make_tensor_value_info(n, t, None) for n, _, t in outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _feed(shape: Sequence[int], dtype: int, kind: str) -> np.ndarray:
    shape = tuple(shape)
    if dtype == B:
        return RNG.random(shape) > 0.5
    if dtype == I64:
        return RNG.integers(1, 5, shape).astype(np.int64)
    if dtype == U32:
        return RNG.integers(0, 2**32, shape, dtype=np.uint32)
    x = RNG.standard_normal(shape).astype(np.float32)
    if kind == "pos":
        x = np.abs(x) + 0.5
    if kind == "nan":
        x.reshape(-1)[::5] = np.nan
    if kind == "special":  # the edges of the vectorised exp/erf/tanh
        edge = np.array(
            [
                np.nan,
                np.inf,
                -np.inf,
                -0.0,
                0.0,
                88.5,
                88.8,
                -87.5,
                -100.0,
                1e-7,
                -1e-7,
                30.0,
                -30.0,
                5.5,
                -9.25,
            ],
            np.float32,
        )
        x = np.resize(np.concatenate([edge, x.reshape(-1) * 10]), shape).astype(np.float32)
    return x


# (id, op, inputs, outputs, attrs, inits, opset, value kind)
CASES: list[tuple] = []


def case(
    cid: str,
    op: str,
    inputs: Sequence[Spec],
    attrs: dict | None = None,
    inits: dict | None = None,
    opset: int = 17,
    kind: str = "any",
    outputs: Sequence[Spec] | None = None,
) -> None:
    CASES.append(
        (cid, op, list(inputs), list(outputs or [("y", (), F)]), attrs, inits, opset, kind)
    )


X = [("x", (2, 3, 4, 5), F)]
for u in [
    "Relu",
    "Sigmoid",
    "Tanh",
    "Erf",
    "Exp",
    "Neg",
    "Abs",
    "Floor",
    "Ceil",
    "Round",
    "Sign",
    "Sin",
    "Cos",
    "Softplus",
    "HardSwish",
]:
    case(u.lower(), u, X)
for u in ["Log", "Sqrt", "Reciprocal"]:
    case(u.lower(), u, X, kind="pos")
case("leaky_relu", "LeakyRelu", X, {"alpha": 0.2})
case("elu", "Elu", X, {"alpha": 0.7})
case("hard_sigmoid", "HardSigmoid", X, {"alpha": 0.3, "beta": 0.4})
case("clip", "Clip", X, inits={"lo": np.array(-0.5, np.float32), "hi": np.array(0.6, np.float32)})
case("gelu", "Gelu", X, opset=20)
case("gelu_tanh", "Gelu", X, {"approximate": "tanh"}, opset=20)
case("relu_nan", "Relu", X, kind="nan")
for u in ["Exp", "Erf", "Tanh", "Sigmoid"]:
    case(f"{u.lower()}_special", u, X, kind="special")
case("max_nan", "Max", [("x", (4, 6), F), ("z", (4, 6), F)], kind="nan")
case("min_nan", "Min", [("x", (4, 6), F), ("z", (4, 6), F)], kind="nan")
case("clip_nan", "Clip", X, inits={"lo": np.array(-0.5, np.float32)}, kind="nan")
case("cast_f2i", "Cast", X, {"to": I64}, outputs=[("y", (), I64)])
case("cast_i2f", "Cast", [("x", (3, 4), I64)], {"to": F})
case("cast_f2b", "Cast", X, {"to": B}, outputs=[("y", (), B)])
case("not", "Not", [("x", (3, 4), B)], outputs=[("y", (), B)])

BIN = [("x", (2, 3, 4), F), ("z", (3, 1), F)]
for b in ["Add", "Sub", "Mul", "Div", "Max", "Min"]:
    case(b.lower(), b, BIN)
case(
    "pow",
    "Pow",
    [("x", (2, 3, 4), F)],
    inits={"e": np.array([2.0, 0.5, 3.0, 1.0], np.float32)},
    kind="pos",
)
case("mod_fmod", "Mod", BIN, {"fmod": 1})
case(
    "mod_int",
    "Mod",
    [("x", (3, 4), I64)],
    {"fmod": 0},
    inits={"d": np.array([3, -2, 5, -4], np.int64)},
    outputs=[("y", (), I64)],
)
case("add_int", "Add", [("x", (3, 4), I64), ("z", (4,), I64)], outputs=[("y", (), I64)])
case("div_int", "Div", [("x", (3, 4), I64), ("z", (3, 4), I64)], outputs=[("y", (), I64)])
case("prelu", "PRelu", [("x", (2, 3, 4, 4), F)], inits={"s": RNG.random((3, 1, 1), np.float32)})
case(
    "bitshift_left",
    "BitShift",
    [("x", (3, 4), U32)],
    {"direction": "LEFT"},
    inits={"s": np.array([0, 31, 32, 40], np.uint32)},  # >= 32 gives 0
    outputs=[("y", (), U32)],
)
for b in ["And", "Or", "Xor"]:
    case(b.lower(), b, [("x", (3, 4), B), ("z", (4,), B)], outputs=[("y", (), B)])
for c in ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"]:
    case(c.lower(), c, [("x", (3, 4), I64), ("z", (4,), I64)], outputs=[("y", (), B)])
case("less_float", "Less", BIN, outputs=[("y", (), B)])
case("where", "Where", [("c", (3, 4), B), ("x", (3, 4), F), ("z", (4,), F)])

W = RNG.standard_normal((6, 3, 3, 3)).astype(np.float32)
case(
    "conv",
    "Conv",
    [("x", (2, 3, 9, 8), F)],
    {"pads": [1, 0, 1, 2], "strides": [2, 1], "dilations": [1, 2]},
    inits={"w": W, "b": RNG.standard_normal(6).astype(np.float32)},
)
case(
    "conv_group",
    "Conv",
    [("x", (1, 4, 7, 7), F)],
    {"group": 2, "pads": [1, 1, 1, 1]},
    inits={"w": RNG.standard_normal((6, 2, 3, 3)).astype(np.float32)},
)
case(
    "conv_depthwise",
    "Conv",
    [("x", (1, 4, 7, 7), F)],
    {"group": 4, "pads": [1, 1, 1, 1]},
    inits={"w": RNG.standard_normal((4, 1, 3, 3)).astype(np.float32)},
)
case(
    "conv1d",
    "Conv",
    [("x", (2, 3, 10), F)],
    {"pads": [1, 1]},
    inits={"w": RNG.standard_normal((5, 3, 3)).astype(np.float32)},
)
case(
    "batch_norm",
    "BatchNormalization",
    [("x", (2, 3, 4, 5), F)],
    {"epsilon": 1e-3},
    inits={
        "s": RNG.random(3, np.float32),
        "b": RNG.random(3, np.float32),
        "m": RNG.random(3, np.float32),
        "v": RNG.random(3, np.float32) + 0.5,
    },
)
case(
    "instance_norm",
    "InstanceNormalization",
    [("x", (2, 3, 4, 5), F)],
    inits={"s": RNG.random(3, np.float32), "b": RNG.random(3, np.float32)},
)
case(
    "layer_norm",
    "LayerNormalization",
    [("x", (2, 5, 8), F)],
    {"axis": -1, "epsilon": 1e-5},
    inits={"s": RNG.random(8, np.float32), "b": RNG.random(8, np.float32)},
)
case("lrn", "LRN", [("x", (1, 7, 3, 3), F)], {"size": 3, "alpha": 1e-3, "beta": 0.75, "bias": 1.0})
case("matmul", "MatMul", [("x", (2, 3, 5, 4), F), ("z", (4, 6), F)])
case("matmul_bcast", "MatMul", [("x", (2, 1, 5, 4), F), ("z", (3, 4, 6), F)])
case("matmul_vec", "MatMul", [("x", (4,), F), ("z", (2, 4, 6), F)])
case("matmul_int", "MatMul", [("x", (3, 4), I64), ("z", (4, 2), I64)], outputs=[("y", (), I64)])
case(
    "gemm",
    "Gemm",
    [("x", (5, 4), F)],
    {"transB": 1, "alpha": 0.5, "beta": 2.0},
    inits={
        "w": RNG.standard_normal((6, 4)).astype(np.float32),
        "c": RNG.standard_normal(6).astype(np.float32),
    },
)
case("gemm_trans_a", "Gemm", [("x", (4, 5), F), ("z", (4, 3), F)], {"transA": 1})
case(
    "max_pool",
    "MaxPool",
    [("x", (1, 2, 7, 7), F)],
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
)
case(
    "max_pool_ceil",
    "MaxPool",
    [("x", (1, 2, 6, 6), F)],
    {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
)
case(
    "avg_pool",
    "AveragePool",
    [("x", (1, 2, 7, 7), F)],
    {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1},
)
case(
    "avg_pool_excl",
    "AveragePool",
    [("x", (1, 2, 7, 7), F)],
    {"kernel_shape": [2, 2], "pads": [1, 1, 0, 0]},
)
case("global_avg_pool", "GlobalAveragePool", [("x", (2, 3, 4, 5), F)])
case("global_max_pool", "GlobalMaxPool", [("x", (2, 3, 4, 5), F)])
# adjacent reduced axes run as one loop (ops.merge_reduced_axes): a 13x13 map is one loop of
# 169 (ten vectors and a tail of 9), axes 1-2 of four merge in the middle, 0-2 at the front
case("global_avg_pool_13", "GlobalAveragePool", [("x", (1, 5, 13, 13), F)], kind="pos")
case("global_max_pool_13", "GlobalMaxPool", [("x", (1, 5, 13, 13), F)])
case(
    "reduce_mean_mid",
    "ReduceMean",
    [("x", (2, 3, 4, 5), F)],
    {"axes": [1, 2], "keepdims": 1},
    kind="pos",
)
case("reduce_max_front", "ReduceMax", [("x", (2, 3, 4, 5), F)], {"axes": [0, 1, 2], "keepdims": 0})
for r in ["ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2"]:
    case(r.lower(), r, [("x", (2, 3, 4), F)], {"axes": [1], "keepdims": 0}, kind="pos")
case(
    "reduce_sum",
    "ReduceSum",
    [("x", (2, 3, 4), F)],
    {"keepdims": 1},
    inits={"axes": np.array([0, 2], np.int64)},
)
case("softmax", "Softmax", [("x", (2, 3, 7), F)], {"axis": 1})
case("log_softmax", "LogSoftmax", [("x", (2, 7), F)], {"axis": -1})
case("arg_max", "ArgMax", [("x", (3, 5), F)], {"axis": 1, "keepdims": 1}, outputs=[("y", (), I64)])
case("reshape", "Reshape", [("x", (2, 3, 4), F)], inits={"s": np.array([4, -1], np.int64)})
case("flatten", "Flatten", [("x", (2, 3, 4), F)], {"axis": 2})
case("transpose", "Transpose", [("x", (2, 3, 4), F)], {"perm": [2, 0, 1]})
case("concat", "Concat", [("x", (2, 3), F), ("z", (2, 5), F)], {"axis": 1})
case(
    "split",
    "Split",
    [("x", (2, 7), F)],
    {"axis": 1},
    inits={"s": np.array([3, 4], np.int64)},
    outputs=[("y", (), F), ("y2", (), F)],
)
case(
    "slice",
    "Slice",
    [("x", (5, 6), F)],
    inits={
        "st": np.array([4, 1], np.int64),
        "en": np.array([0, 6], np.int64),
        "ax": np.array([0, 1], np.int64),
        "sp": np.array([-2, 2], np.int64),
    },
)
for mode in ["constant", "reflect", "edge"]:
    case(
        f"pad_{mode}",
        "Pad",
        [("x", (3, 4), F)],
        {"mode": mode},
        inits={"p": np.array([1, 2, 2, 1], np.int64)},
    )
case(
    "gather",
    "Gather",
    [("x", (5, 4), F)],
    {"axis": 0},
    inits={"i": np.array([[0, -1], [3, 2]], np.int64)},
)
case(
    "gather_ids",
    "Gather",
    [("i", (2, 3), I64)],
    {"axis": 0},
    inits={"t": RNG.standard_normal((6, 4)).astype(np.float32)},
)
case(
    "gather_elements",
    "GatherElements",
    [("x", (3, 4), F)],
    {"axis": 1},
    inits={"i": np.array([[0, 3], [1, -1], [2, 2]], np.int64)},
)
case(
    "gather_nd",
    "GatherND",
    [("x", (2, 3, 4), F)],
    inits={"i": np.array([[[0, 1]], [[1, 2]]], np.int64)},
    attrs={"batch_dims": 0},
)
case("expand", "Expand", [("x", (3, 1), F)], inits={"s": np.array([2, 3, 4], np.int64)})
case("tile", "Tile", [("x", (2, 3), F)], inits={"r": np.array([2, 3], np.int64)})
_RESIZE = {"roi": np.zeros(0, np.float32), "s": np.array([1, 1, 2, 1.5], np.float32)}
case("resize_linear", "Resize", [("x", (1, 2, 3, 4), F)], {"mode": "linear"}, _RESIZE)
case("resize_nearest", "Resize", [("x", (1, 2, 3, 4), F)], {"mode": "nearest"}, _RESIZE)


@pytest.mark.parametrize("spec", CASES, ids=[c[0] for c in CASES])
def test_single_op(spec: tuple, tmp_path: Path) -> None:
    from autofusion.frontend import import_onnx

    cid, op, inputs, outputs, attrs, inits, opset, kind = spec
    model = _model(op, inputs, outputs, attrs, inits, opset)
    feeds = {n: _feed(s, t, kind) for n, s, t in inputs}
    ref = onnxruntime_outputs(model, feeds)
    got = build_and_run(import_onnx(model, progress=False), feeds, tmp_path / cid)
    for name, r in ref.items():
        assert_close(got[name], r, f"{cid}: {name}")


ATTENTION_IR = """
func.func @main(%q: tensor<2x3x5x4xf32> {onnx.name = "q"}, %k: tensor<2x3x6x4xf32> {onnx.name = "k"},
                %v: tensor<2x3x6x7xf32> {onnx.name = "v"}, %m: tensor<2x1x1x6xf32> {onnx.name = "m"})
    -> (tensor<2x3x5x7xf32> {onnx.name = "y"}) {
  %0 = nn.attention %q, %k, %v, %m {scale = 0.5 : f64} : (tensor<2x3x5x4xf32>, tensor<2x3x6x4xf32>, tensor<2x3x6x7xf32>, tensor<2x1x1x6xf32>) -> tensor<2x3x5x7xf32>
  func.return %0 : tensor<2x3x5x7xf32>
}
"""  # noqa: E501 - the MLIR keeps one op per line


def _parse(text: str):
    from xdsl.parser import Parser

    from autofusion.pipeline import make_context

    return Parser(make_context(), text).parse_module()


def test_attention_matches_interpreter(tmp_path: Path) -> None:
    from autofusion.interpreter import run_module

    feeds = {
        "q": RNG.standard_normal((2, 3, 5, 4)).astype(np.float32),
        "k": RNG.standard_normal((2, 3, 6, 4)).astype(np.float32),
        "v": RNG.standard_normal((2, 3, 6, 7)).astype(np.float32),
        "m": np.where(RNG.random((2, 1, 1, 6)) > 0.3, 0.0, -1e4).astype(np.float32),
    }
    ref = run_module(_parse(ATTENTION_IR), feeds)
    got = build_and_run(_parse(ATTENTION_IR), feeds, tmp_path)
    assert_close(got["y"], np.asarray(ref["y"]), "attention")


def test_attention_nan_to_zero_matches_interpreter(tmp_path: Path) -> None:
    """Fully masked rows (scores all -inf): 0 with nan_to_zero, in C as in the interpreter."""
    from autofusion.interpreter import run_module

    ir = ATTENTION_IR.replace("{scale = 0.5 : f64}", "{scale = 0.5 : f64, nan_to_zero = 1 : i64}")
    ir = ir.replace("tensor<2x1x1x6xf32>", "tensor<2x1x5x6xf32>")
    mask = np.where(RNG.random((2, 1, 5, 6)) > 0.3, 0.0, -np.inf).astype(np.float32)
    mask[0, 0, 2, :] = -np.inf
    mask[1, 0, 4, :] = -np.inf
    feeds = {
        "q": RNG.standard_normal((2, 3, 5, 4)).astype(np.float32),
        "k": RNG.standard_normal((2, 3, 6, 4)).astype(np.float32),
        "v": RNG.standard_normal((2, 3, 6, 7)).astype(np.float32),
        "m": mask,
    }
    ref = np.asarray(run_module(_parse(ir), feeds)["y"])
    got = build_and_run(_parse(ir), feeds, tmp_path)["y"]
    assert np.all(ref[0, :, 2] == 0)
    assert np.all(ref[1, :, 4] == 0)
    assert not np.isnan(got).any()
    assert_close(got, ref, "attention nan_to_zero")


def _attention_ir(qs, ks, vs, ms, scale: float = 1.0) -> str:
    def ty(s: tuple[int, ...]) -> str:
        return "tensor<" + "x".join(map(str, s)) + "xf32>"

    os_ = (*np.broadcast_shapes(qs[:-2], ks[:-2], vs[:-2]), qs[-2], vs[-1])
    args = [("q", qs), ("k", ks), ("v", vs)] + ([("m", ms)] if ms else [])
    sig = ", ".join(f'%{n}: {ty(s)} {{onnx.name = "{n}"}}' for n, s in args)
    ops = ", ".join(f"%{n}" for n, _ in args)
    types = ", ".join(ty(s) for _, s in args)
    return (
        f'func.func @main({sig}) -> ({ty(os_)} {{onnx.name = "y"}}) {{\n'
        f"  %0 = nn.attention {ops} {{scale = {scale} : f64}} : ({types}) -> {ty(os_)}\n"
        f"  func.return %0 : {ty(os_)}\n}}\n"
    )


@pytest.mark.parametrize(
    ("qs", "ks", "vs", "ms"),
    [
        # keys in three blocks of AFRT_ATTN_KB (512): the online-softmax rescaling path
        ((1, 2, 70, 16), (1, 2, 1100, 16), (1, 2, 1100, 8), (1, 1, 1, 1100)),
        # many query blocks, a per-position [S, T] mask broadcast over batch and heads
        ((2, 2, 300, 16), (2, 2, 40, 16), (2, 2, 40, 12), (300, 40)),
        # k and v shared by every head (batch stride 0), no mask
        ((3, 33, 16), (1, 600, 16), (1, 600, 5), None),
    ],
)
def test_streamed_attention_blocks(tmp_path: Path, qs, ks, vs, ms) -> None:
    """The streamed kernel against the two-pass interpreter across its block boundaries."""
    from autofusion.interpreter import run_module

    ir = _attention_ir(qs, ks, vs, ms)
    feeds = {
        "q": RNG.standard_normal(qs).astype(np.float32),
        "k": RNG.standard_normal(ks).astype(np.float32),
        "v": RNG.standard_normal(vs).astype(np.float32),
    }
    if ms:
        feeds["m"] = np.where(RNG.random(ms) > 0.2, 0.0, -1e4).astype(np.float32)
    ref = np.asarray(run_module(_parse(ir), feeds)["y"])
    assert 0.05 < float(np.abs(ref).mean()) < 10
    got = build_and_run(_parse(ir), feeds, tmp_path)["y"]
    assert_close(got, ref, "streamed attention")


@pytest.mark.parametrize(("cpu", "threads"), [("native", 1), ("native", 2), ("x86-64-v3", 1)])
@pytest.mark.parametrize(
    ("qs", "ks", "vs", "ms"),
    [
        # head sizes with 16-lane tails (d 40, e 80: one 64-wide and one 16-wide p @ v step),
        # keys not a multiple of 16 or 64, a mask broadcast along the keys (mask_t = 0)
        ((1, 3, 13, 40), (1, 3, 150, 40), (1, 3, 150, 80), (1, 3, 13, 1)),
        # a [S, T] mask, 7 query rows (one row group and a padded one), two key blocks
        ((2, 7, 24), (2, 530, 24), (2, 530, 16), (7, 530)),
        # ViT's T = 197: three 64-key chunks and one of a single vector (5 keys)
        ((1, 3, 197, 64), (1, 3, 197, 64), (1, 3, 197, 64), (1, 1, 1, 197)),
        # the chunk sizes on both sides of 48: 64 + 48 keys (three vectors), 64 + 49 (four)
        ((2, 9, 32), (2, 112, 32), (2, 112, 32), (9, 112)),
        ((2, 9, 32), (2, 113, 32), (2, 113, 32), (9, 113)),
    ],
)
def test_attention_kernel_paths(tmp_path: Path, cpu: str, threads: int, qs, ks, vs, ms) -> None:
    """afrt_attention_f32's AVX-512 core (native builds on this machine) and its portable
    loop (x86-64-v3) against the interpreter: lane tails, row padding, strided masks, and two
    threads splitting the query rows."""
    from autofusion.interpreter import run_module
    from autofusion.lowering.c.testing import emit_lowered
    from autofusion.runtime import toolchain
    from autofusion.runtime.build import BuildOptions, build_shared
    from autofusion.runtime.loader import ModelLibrary

    if toolchain.is_cross(cpu):
        pytest.skip(f"{cpu} builds do not run on this machine")
    ir = _attention_ir(qs, ks, vs, ms, scale=0.3)
    feeds = {
        "q": RNG.standard_normal(qs).astype(np.float32),
        "k": RNG.standard_normal(ks).astype(np.float32),
        "v": RNG.standard_normal(vs).astype(np.float32),
        "m": np.where(RNG.random(ms) > 0.2, 0.0, -1e4).astype(np.float32),
    }
    ref = np.asarray(run_module(_parse(ir), feeds)["y"])
    assert 0.05 < float(np.abs(ref).mean()) < 10
    emit_lowered(_parse(ir), tmp_path)
    so = build_shared(tmp_path, BuildOptions(cpu=cpu))
    lib = ModelLibrary(so, tmp_path / "weights.bin", threads)
    try:
        got = lib.run(feeds)["y"]
    finally:
        lib.close()
    assert_close(got, ref, f"attention ({cpu}, {threads} thread(s))")


def test_streamed_attention_fully_masked_and_nan_rows(tmp_path: Path) -> None:
    """Without nan_to_zero a row of all -inf scores (across several key blocks) and a row with
    a NaN score are NaN, as in the two-pass reference; every other row is finite and close."""
    from autofusion.interpreter import run_module

    qs, ks, vs, ms = (1, 2, 20, 8), (1, 2, 1030, 8), (1, 2, 1030, 4), (1, 1, 20, 1030)
    ir = _attention_ir(qs, ks, vs, ms)
    mask = np.zeros(ms, np.float32)
    mask[..., 3, :] = -np.inf  # fully masked row
    mask[..., 5, :700] = -np.inf  # masked through the first key block only
    mask[..., 9, 1000] = np.nan
    feeds = {
        "q": RNG.standard_normal(qs).astype(np.float32),
        "k": RNG.standard_normal(ks).astype(np.float32),
        "v": RNG.standard_normal(vs).astype(np.float32),
        "m": mask,
    }
    ref = np.asarray(run_module(_parse(ir), feeds)["y"])
    got = build_and_run(_parse(ir), feeds, tmp_path)["y"]
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    assert np.isnan(got[:, :, [3, 9]]).all()
    assert not np.isnan(got[:, :, 5]).any()
    assert_close(got, ref, "attention with -inf and NaN rows")


def test_cases_cover_every_nn_op() -> None:
    from autofusion.frontend import import_onnx

    seen = {"nn.attention"}
    for _, op, inputs, outputs, attrs, inits, opset, _ in CASES:
        module = import_onnx(_model(op, inputs, outputs, attrs, inits, opset), progress=False)
        seen |= {o.name for o in module.walk() if o.name.startswith("nn.")}
    # symbolic-only ops never reach the C backend (their modules are refused before it)
    every = {op.name for op in nn.NN.operations} - {op.name for op in nn.SYMBOLIC_ONLY}
    missing = sorted(every - seen)
    assert not missing, f"no C test case reaches: {missing}"


H = TensorProto.FLOAT16
F16_CASES = [
    (
        "conv_f16",
        "Conv",
        [("x", (2, 3, 9, 8), H)],
        {"pads": [1, 0, 1, 2], "strides": [2, 1]},
        {"w": W.astype(np.float16), "b": RNG.standard_normal(6).astype(np.float16)},
    ),
    (
        "conv1d_depthwise_f16",
        "Conv",
        [("x", (1, 4, 10), H)],
        {"group": 4, "pads": [2, 0]},
        {"w": RNG.standard_normal((4, 1, 3)).astype(np.float16)},
    ),
    ("matmul_f16", "MatMul", [("x", (2, 5, 16), H), ("z", (16, 6), H)], None, None),
    (
        "gemm_f16",
        "Gemm",
        [("x", (5, 16), H)],
        {"transB": 1, "alpha": 0.5, "beta": 2.0},
        {
            "w": RNG.standard_normal((7, 16)).astype(np.float16),
            "c": RNG.standard_normal(7).astype(np.float16),
        },
    ),
]


@pytest.mark.parametrize("spec", F16_CASES, ids=[c[0] for c in F16_CASES])
def test_f16_contraction(spec: tuple, tmp_path: Path) -> None:
    """f16 Conv/MatMul/Gemm: computed in f32 by the library, rounded once to f16 (as ORT)."""
    from autofusion.frontend import import_onnx

    cid, op, inputs, attrs, inits = spec
    model = _model(op, inputs, [("y", (), H)], attrs, inits)
    feeds = {n: RNG.standard_normal(s).astype(np.float16) for n, s, _ in inputs}
    ref = onnxruntime_outputs(model, feeds)
    got = build_and_run(import_onnx(model, progress=False), feeds, tmp_path / cid)
    assert got["y"].dtype == np.float16
    assert_close(got["y"], ref["y"], cid)


def test_f16_conv_with_fused_tail(tmp_path: Path) -> None:
    """An f16 Conv+Add+Relu kernel (fused at tensor level): the tail runs on the f16 result."""
    from autofusion.lowering.c.testing import compile_onnx

    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float16)
    r = RNG.standard_normal((4, 1, 1)).astype(np.float16)
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Add", ["c", "r"], ["a"]),
            helper.make_node("Relu", ["a"], ["y"]),
        ],
        "conv_f16_tail",
        [helper.make_tensor_value_info("x", H, [1, 3, 6, 6])],
        [helper.make_tensor_value_info("y", H, None)],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(r, "r")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    feeds = {"x": RNG.standard_normal((1, 3, 6, 6)).astype(np.float16)}
    ref = onnxruntime_outputs(model, feeds)
    module = compile_onnx(model)
    assert any(o.name == "fusion.kernel" for o in module.walk()), "expected a fused kernel"
    got = build_and_run(module, feeds, tmp_path)
    assert_close(got["y"], ref["y"], "conv_f16_tail")


@pytest.mark.parametrize(("cpu", "threads"), [("native", 1), ("native", 2), ("x86-64-v2", 3)])
@pytest.mark.parametrize(("h", "w", "ceil"), [(14, 10, 1), (13, 15, 1), (12, 6, 0)])
def test_max_pool_2x2(tmp_path: Path, cpu: str, threads: int, h: int, w: int, ceil: int) -> None:
    """2x2/2 max pools (GoogLeNet's 14x14, DenseNet-style even maps take afrt's whole-plane
    path, 16 planes: enough for 3 threads without row bands; odd maps in ceil mode the row
    buffer) against onnxruntime. (NaN: onnxruntime's MaxPool
    drops it, ours propagates it like the interpreter; test_runtime_kernels checks that.)"""
    import autofusion

    attrs = {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": ceil}
    model = _model("MaxPool", [("x", (2, 8, h, w), F)], [("y", (), F)], attrs)
    x = RNG.standard_normal((2, 8, h, w)).astype(np.float32)
    ref = onnxruntime_outputs(model, {"x": x})
    m = autofusion.compile(model, threads=threads, cpu=cpu)
    got = m.run({"x": x})
    for name, r in ref.items():
        assert_close(got[name], r, f"max_pool_2x2 {h}x{w}")


def test_merge_reduced_axes() -> None:
    """Runs of adjacent reduced axes become one axis; other axes and run-time shapes are kept."""
    from autofusion.lowering.c.ops import merge_reduced_axes

    assert merge_reduced_axes((1, 1000, 13, 13), (2, 3)) == ((1, 1000, 169), (2,))
    assert merge_reduced_axes((2, 3, 4, 5), (1, 2)) == ((2, 12, 5), (1,))
    assert merge_reduced_axes((2, 3, 4, 5), (0, 2)) == ((2, 3, 4, 5), (0, 2))
    assert merge_reduced_axes((2, 3, 4, 5), (0, 1, 3)) == ((6, 4, 5), (0, 2))
    assert merge_reduced_axes((2, 3, 4, 5), (0, 1, 2, 3)) == ((120,), (0,))
    assert merge_reduced_axes((2, 3, 4), (1,)) == ((2, 3, 4), (1,))
