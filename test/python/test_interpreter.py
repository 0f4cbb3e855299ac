"""The reference interpreter on hand-written IR: each op family against numpy or
onnx.reference, the NaN/inf/-0.0 cases the ops care about, fusion.kernel evaluation,
error messages, and early freeing of intermediates."""

from __future__ import annotations

import gc
import math
import weakref
from collections.abc import Sequence

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx.reference import ReferenceEvaluator
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.func import Func
from xdsl.parser import Parser

from autofusion.dialects import get_all_dialects, nn
from autofusion.errors import AutofusionError
from autofusion.interpreter import IMPLS, evaluate, main_function, run_module
from autofusion.interpreter.elementwise import erf

RNG = np.random.default_rng(0)
INF = "0x7FF0000000000000 : f64"
NEG_INF = "0xFFF0000000000000 : f64"

_ELEM = {
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.float16): "f16",
    np.dtype(np.int64): "i64",
    np.dtype(np.int32): "i32",
    np.dtype(np.int16): "i16",
    np.dtype(np.int8): "i8",
    np.dtype(np.uint8): "ui8",
    np.dtype(np.bool_): "i1",
}


def ctx() -> Context:
    c = Context()
    c.load_dialect(Builtin)
    c.load_dialect(Func)
    for name, factory in get_all_dialects().items():
        c.register_dialect(name, factory)
    return c


def parse(text: str) -> ModuleOp:
    module = Parser(ctx(), text).parse_module()
    module.verify()
    return module


def ttype(shape: Sequence[int], dtype: object) -> str:
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{_ELEM[np.dtype(dtype)]}>"  # type: ignore[arg-type]


def run_op(
    op: str,
    inputs: Sequence[np.ndarray],
    out: tuple[Sequence[int], object] | list[tuple[Sequence[int], object]],
    props: str = "",
) -> np.ndarray | list[np.ndarray]:
    """Interpret one op applied to ``inputs`` producing ``out`` = (shape, dtype) or a list."""
    outs = out if isinstance(out, list) else [out]
    in_types = [ttype(a.shape, a.dtype) for a in inputs]
    out_types = [ttype(s, d) for s, d in outs]
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(in_types))
    res = ", ".join(f"%r#{i}" for i in range(len(outs))) if len(outs) > 1 else "%r"
    operands = ", ".join(f"%a{i}" for i in range(len(inputs)))
    attr = f" {{{props}}}" if props else ""
    text = f"""
    func.func @main({args}) -> ({", ".join(out_types)}) {{
      %r{":" + str(len(outs)) if len(outs) > 1 else ""} = {op} {operands}{attr} : ({", ".join(in_types)}) -> ({", ".join(out_types)})
      func.return {res} : {", ".join(out_types)}
    }}"""  # noqa: E501 - the MLIR keeps one op per line
    module = parse(text)
    got = evaluate(main_function(module), list(inputs))
    for g, (s, d) in zip(got, outs):
        assert g.shape == tuple(s)
        assert g.dtype == np.dtype(d)  # type: ignore[arg-type]
    return got if isinstance(out, list) else got[0]


def onnx_ref(op_type: str, inputs: Sequence[np.ndarray], n_out: int = 1, **attrs: object):
    names = [f"i{k}" for k in range(len(inputs))]
    outs = [f"o{k}" for k in range(n_out)]
    node = helper.make_node(op_type, names, outs, **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info(n, onnx.helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
            for n, a in zip(names, inputs)
        ],
        [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in outs],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    got = ReferenceEvaluator(model).run(None, dict(zip(names, inputs)))
    return got if n_out > 1 else got[0]


def close(got: np.ndarray, ref: np.ndarray, rtol: float = 1e-5) -> None:
    ref = np.asarray(ref)
    finite = np.abs(ref[np.isfinite(ref)])
    atol = 1e-6 * max(1.0, float(finite.max())) if finite.size else 1e-6
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)


def f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def ints(values: Sequence[int]) -> str:
    if not values:
        return "array<i64>"
    return "array<i64: " + ", ".join(str(int(v)) for v in values) + ">"


# ---- elementwise unary ------------------------------------------------------------------

SPECIAL = np.array([0.0, -0.0, 1.5, -2.5, 0.5, np.nan, np.inf, -np.inf], dtype=np.float32)

UNARY = [
    ("nn.sigmoid", lambda x: 1 / (1 + np.exp(-x.astype(np.float64)))),
    ("nn.tanh", np.tanh),
    ("nn.exp", np.exp),
    ("nn.log", lambda x: np.log(np.abs(x))),
    ("nn.sqrt", lambda x: np.sqrt(np.abs(x))),
    ("nn.neg", np.negative),
    ("nn.abs", np.abs),
    ("nn.reciprocal", np.reciprocal),
    ("nn.floor", np.floor),
    ("nn.ceil", np.ceil),
    ("nn.sign", np.sign),
    ("nn.sin", np.sin),
    ("nn.cos", np.cos),
    ("nn.softplus", lambda x: np.log1p(np.exp(x.astype(np.float64)))),
    ("nn.hard_swish", lambda x: x * np.clip(x / 6 + 0.5, 0, 1)),
    ("nn.erf", lambda x: np.vectorize(math.erf)(x.astype(np.float64))),
]


@pytest.mark.parametrize(("op", "ref"), UNARY, ids=[u[0] for u in UNARY])
def test_unary(op: str, ref) -> None:
    x = f32(3, 7) * 3
    if op in ("nn.log", "nn.sqrt"):
        x = np.abs(x)
    close(run_op(op, [x], (x.shape, np.float32)), ref(x).astype(np.float32))
    if op not in ("nn.log", "nn.sqrt"):
        with np.errstate(all="ignore"):
            want = ref(SPECIAL).astype(np.float32)
        got = run_op(op, [SPECIAL], (SPECIAL.shape, np.float32))
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        close(got[ok], want[ok])


def test_relu_nan_and_negative_zero() -> None:
    got = run_op("nn.relu", [SPECIAL], (SPECIAL.shape, np.float32))
    np.testing.assert_array_equal(got, [0, 0, 1.5, 0, 0.5, np.nan, np.inf, 0])
    assert not np.signbit(got[1]), "relu(-0.0) is +0.0"


def test_sigmoid_saturates_without_nan() -> None:
    x = np.array([-1000, -100, 0, 100, 1000], dtype=np.float32)
    got = run_op("nn.sigmoid", [x], (x.shape, np.float32))
    np.testing.assert_allclose(got, [0, 0, 0.5, 1, 1], atol=1e-30)


def test_erf_accuracy() -> None:
    x = np.linspace(-6, 6, 20001)
    want = np.vectorize(math.erf)(x)
    assert np.max(np.abs(erf(x) - want)) < 2e-7
    small = np.array([1e-8, 1e-4, -0.3, 0.49])
    np.testing.assert_allclose(erf(small), np.vectorize(math.erf)(small), rtol=1e-7)


def test_round_half_to_even() -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6], dtype=np.float32)
    np.testing.assert_array_equal(
        run_op("nn.round", [x], (x.shape, np.float32)), [0, 2, 2, -0.0, -2, 2, -3]
    )


@pytest.mark.parametrize(
    ("op", "props", "ref"),
    [
        ("nn.leaky_relu", "alpha = 0.1 : f64", lambda x: np.where(x >= 0, x, 0.1 * x)),
        ("nn.elu", "alpha = 0.7 : f64", lambda x: np.where(x >= 0, x, 0.7 * np.expm1(x))),
        (
            "nn.hard_sigmoid",
            "alpha = 0.2 : f64, beta = 0.5 : f64",
            lambda x: np.clip(0.2 * x + 0.5, 0, 1),
        ),
        ("nn.clip", "min = -0.5 : f64, max = 0.75 : f64", lambda x: np.clip(x, -0.5, 0.75)),
        (
            "nn.gelu",
            'approximate = "none"',
            lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
        ),
        (
            "nn.gelu",
            'approximate = "tanh"',
            lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
        ),
    ],
)
def test_unary_with_props(op: str, props: str, ref) -> None:
    x = f32(4, 6) * 2
    close(run_op(op, [x], (x.shape, np.float32), props), ref(x.astype(np.float64)))


def test_clip_nan_and_open_bounds() -> None:
    x = np.array([np.nan, -3, 3, np.inf], dtype=np.float32)
    got = run_op("nn.clip", [x], (x.shape, np.float32), f"min = {NEG_INF}, max = 1.0 : f64")
    np.testing.assert_array_equal(got, [np.nan, -3, 1, 1])
    xi = np.array([-5, 0, 7], dtype=np.int64)
    got = run_op("nn.clip", [xi], (xi.shape, np.int64), f"min = -1.0 : f64, max = {INF}")
    np.testing.assert_array_equal(got, [-1, 0, 7])


def test_not() -> None:
    x = np.array([True, False])
    np.testing.assert_array_equal(run_op("nn.not", [x], (x.shape, np.bool_)), [False, True])


def test_cast() -> None:
    x = np.array([-1.7, -0.5, 0.0, -0.0, 1.7, 2.5, np.nan], dtype=np.float32)
    np.testing.assert_array_equal(run_op("nn.cast", [x[:6]], ((6,), np.int64)), [-1, 0, 0, 0, 1, 2])
    np.testing.assert_array_equal(
        run_op("nn.cast", [x], ((7,), np.bool_)), [True, True, False, False, True, True, True]
    )
    b = np.array([True, False])
    np.testing.assert_array_equal(run_op("nn.cast", [b], ((2,), np.float32)), [1.0, 0.0])
    i = np.array([3, -2], dtype=np.int64)
    got = run_op("nn.cast", [i], ((2,), np.float16))
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, [3, -2])


# ---- elementwise binary -----------------------------------------------------------------

BINARY = [
    ("nn.add", np.add),
    ("nn.sub", np.subtract),
    ("nn.mul", np.multiply),
    ("nn.div", np.divide),
    ("nn.pow", np.power),
    ("nn.max", np.maximum),
    ("nn.min", np.minimum),
    ("nn.prelu", lambda x, s: np.where(x < 0, s * x, x)),
]


@pytest.mark.parametrize(("op", "ref"), BINARY, ids=[b[0] for b in BINARY])
def test_binary_broadcast(op: str, ref) -> None:
    a, b = f32(2, 3, 4), f32(3, 1)
    if op == "nn.pow":
        a = np.abs(a)
    close(run_op(op, [a, b], (a.shape, np.float32)), ref(a, b))


def test_max_min_propagate_nan() -> None:
    a = np.array([np.nan, 1, -np.inf, 2], dtype=np.float32)
    b = np.array([0, np.nan, 0, 3], dtype=np.float32)
    np.testing.assert_array_equal(
        run_op("nn.max", [a, b], ((4,), np.float32)), [np.nan, np.nan, 0, 3]
    )
    np.testing.assert_array_equal(
        run_op("nn.min", [a, b], ((4,), np.float32)), [np.nan, np.nan, -np.inf, 2]
    )


def test_integer_div_truncates_toward_zero() -> None:
    a = np.array([7, -7, 7, -7, 6, 0], dtype=np.int64)
    b = np.array([2, 2, -2, -2, 3, 5], dtype=np.int64)
    np.testing.assert_array_equal(run_op("nn.div", [a, b], ((6,), np.int64)), [3, -3, -3, 3, 2, 0])
    a32, b32 = a.astype(np.int32), b.astype(np.int32)
    got = run_op("nn.div", [a32, b32], ((6,), np.int32))
    np.testing.assert_array_equal(got, [3, -3, -3, 3, 2, 0])


@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.float32])
def test_mod_fmod_vs_python(dtype) -> None:
    a = np.array([7, -7, 7, -7, 5], dtype=dtype)
    b = np.array([3, 3, -3, -3, 5], dtype=dtype)
    c_style = run_op("nn.mod", [a, b], ((5,), dtype), "fmod = 1 : i64")
    np.testing.assert_array_equal(c_style, [1, -1, 1, -1, 0])
    if np.dtype(dtype).kind == "f":
        return  # the verifier allows only fmod = 1 on floats (as ONNX)
    py_style = run_op("nn.mod", [a, b], ((5,), dtype), "fmod = 0 : i64")
    np.testing.assert_array_equal(py_style, [1, 2, -2, -1, 0])


def test_compare_logical_where() -> None:
    a = np.array([1, 2, 3, np.nan], dtype=np.float32)
    b = np.array([2, 2, 2, 2], dtype=np.float32)
    for op, ref in [
        ("nn.equal", np.equal),
        ("nn.less", np.less),
        ("nn.less_equal", np.less_equal),
        ("nn.greater", np.greater),
        ("nn.greater_equal", np.greater_equal),
    ]:
        np.testing.assert_array_equal(run_op(op, [a, b], ((4,), np.bool_)), ref(a, b))
    p = np.array([[True, False]])
    q = np.array([[True], [False]])
    for op, ref in [
        ("nn.and", np.logical_and),
        ("nn.or", np.logical_or),
        ("nn.xor", np.logical_xor),
    ]:
        np.testing.assert_array_equal(run_op(op, [p, q], ((2, 2), np.bool_)), ref(p, q))
    x, y = f32(2, 1), f32(1, 2)
    np.testing.assert_array_equal(
        run_op("nn.where", [q & p, x, y], ((2, 2), np.float32)), np.where(q & p, x, y)
    )
    ia, ib = np.array([3, 4], dtype=np.int64), np.array([5, 6], dtype=np.int64)
    np.testing.assert_array_equal(run_op("nn.equal", [ia, ib - 2], ((2,), np.bool_)), [True, True])


# ---- contractions -----------------------------------------------------------------------

CONVS = [
    # x shape, w shape, strides, pads, dilations, group, bias
    ((1, 3, 9, 9), (4, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, True),
    ((2, 4, 10, 8), (6, 4, 3, 2), (2, 1), (0, 1, 2, 0), (1, 2), 1, False),
    ((1, 8, 7, 7), (8, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 8, True),  # depthwise
    ((1, 8, 7, 7), (16, 1, 5, 5), (1, 1), (2, 2, 2, 2), (1, 1), 8, False),  # multiplier 2
    ((1, 12, 6, 6), (6, 6, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2, True),  # grouped GEMM
    ((2, 6, 5, 5), (4, 6, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, True),  # pointwise
    ((1, 6, 5, 5), (6, 2, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 3, False),  # grouped 1x1
    ((1, 3, 12), (5, 3, 3), (2,), (1, 2), (2,), 1, True),  # 1-d
    ((1, 2, 5, 4, 6), (3, 2, 2, 3, 2), (1, 2, 1), (1, 0, 1, 0, 1, 1), (1, 1, 2), 1, True),
]


@pytest.mark.parametrize("case", CONVS, ids=[f"conv{i}" for i in range(len(CONVS))])
def test_conv(case) -> None:
    xs, ws, strides, pads, dil, group, has_bias = case
    x, w = f32(*xs), f32(*ws)
    inputs = [x, w] + ([f32(ws[0])] if has_bias else [])
    want = onnx_ref(
        "Conv", inputs, strides=list(strides), pads=list(pads), dilations=list(dil), group=group
    )
    props = (
        f"strides = {ints(strides)}, pads = {ints(pads)}, dilations = {ints(dil)}, "
        f"group = {group} : i64"
    )
    close(run_op("nn.conv", inputs, (want.shape, np.float32), props), want, rtol=1e-4)


def test_matmul_shapes() -> None:
    for sa, sb in [
        ((3, 4), (4, 5)),
        ((2, 1, 3, 4), (5, 4, 6)),
        ((4,), (2, 4, 3)),
        ((2, 3, 4), (4,)),
        ((4,), (4,)),
    ]:
        a, b = f32(*sa), f32(*sb)
        want = np.matmul(a, b)
        close(run_op("nn.matmul", [a, b], (want.shape, np.float32)), want)
    h, g = f32(2, 3, 64).astype(np.float16), f32(64, 5).astype(np.float16)
    got = run_op("nn.matmul", [h, g], ((2, 3, 5), np.float16))
    np.testing.assert_allclose(
        got, (h.astype(np.float64) @ g).astype(np.float16), rtol=2e-3, atol=2e-2
    )
    ia, ib = RNG.integers(-5, 5, (2, 3)), RNG.integers(-5, 5, (3, 2))
    np.testing.assert_array_equal(run_op("nn.matmul", [ia, ib], ((2, 2), np.int64)), ia @ ib)


@pytest.mark.parametrize(("ta", "tb", "cshape"), [(0, 0, (5,)), (1, 0, (3, 1)), (1, 1, None)])
def test_gemm(ta: int, tb: int, cshape) -> None:
    a = f32(4, 3) if ta else f32(3, 4)
    b = f32(5, 4) if tb else f32(4, 5)
    inputs = [a, b] + ([f32(*cshape)] if cshape else [])
    want = onnx_ref("Gemm", inputs, alpha=0.5, beta=2.0, transA=ta, transB=tb)
    props = f"alpha = 0.5 : f64, beta = 2.0 : f64, trans_a = {ta} : i64, trans_b = {tb} : i64"
    close(run_op("nn.gemm", inputs, ((3, 5), np.float32), props), want)


def test_attention() -> None:
    q, k, v = f32(2, 3, 4, 8), f32(2, 3, 6, 8), f32(2, 3, 6, 5)
    mask = np.where(RNG.random((2, 1, 1, 6)) < 0.3, -1e4, 0).astype(np.float32)
    s = q @ np.swapaxes(k, -1, -2) * 0.35 + mask
    e = np.exp(s - s.max(-1, keepdims=True))
    want = (e / e.sum(-1, keepdims=True)) @ v
    got = run_op("nn.attention", [q, k, v, mask], (want.shape, np.float32), "scale = 0.35 : f64")
    close(got, want, rtol=1e-4)
    got = run_op("nn.attention", [q, k, v], (want.shape, np.float32), "scale = 0.35 : f64")
    s = q @ np.swapaxes(k, -1, -2) * 0.35
    e = np.exp(s - s.max(-1, keepdims=True))
    close(got, (e / e.sum(-1, keepdims=True)) @ v, rtol=1e-4)


def test_attention_nan_to_zero() -> None:
    """A row whose scores are all -inf has NaN probabilities: 0 with nan_to_zero, else NaN."""
    q, k, v = f32(1, 2, 3, 4), f32(1, 2, 5, 4), f32(1, 2, 5, 6)
    mask = np.zeros((1, 1, 3, 5), np.float32)
    mask[0, 0, 1, :] = -np.inf  # query row 1 sees nothing
    props = "scale = 0.5 : f64, nan_to_zero = 1 : i64"
    got = run_op("nn.attention", [q, k, v, mask], ((1, 2, 3, 6), np.float32), props)
    s = q @ np.swapaxes(k, -1, -2) * 0.5 + mask
    with np.errstate(invalid="ignore"):  # -inf - -inf in the masked row: NaN, as intended
        e = np.exp(s - s.max(-1, keepdims=True))
        want = np.nan_to_num(e / e.sum(-1, keepdims=True), nan=0.0) @ v
    assert np.all(got[:, :, 1] == 0)
    close(got, want, rtol=1e-4)
    plain = run_op("nn.attention", [q, k, v, mask], ((1, 2, 3, 6), np.float32), "scale = 0.5 : f64")
    assert np.isnan(plain[:, :, 1]).all()
    close(plain[:, :, [0, 2]], want[:, :, [0, 2]], rtol=1e-4)


# ---- normalisations ---------------------------------------------------------------------


def test_batch_norm() -> None:
    x = f32(2, 3, 4, 5)
    scale, bias, mean = f32(3), f32(3), f32(3)
    var = np.abs(f32(3)) + 0.1
    want = onnx_ref("BatchNormalization", [x, scale, bias, mean, var], epsilon=1e-3)
    got = run_op(
        "nn.batch_norm",
        [x, scale, bias, mean, var],
        (x.shape, np.float32),
        "epsilon = 1.0e-03 : f64",
    )
    close(got, want)


def test_instance_norm() -> None:
    x, scale, bias = f32(2, 3, 4, 5) * 3 + 1, f32(3), f32(3)
    want = onnx_ref("InstanceNormalization", [x, scale, bias], epsilon=1e-5)
    got = run_op(
        "nn.instance_norm", [x, scale, bias], (x.shape, np.float32), "epsilon = 1.0e-05 : f64"
    )
    close(got, want, rtol=1e-4)


@pytest.mark.parametrize(("axis", "with_bias"), [(2, True), (1, False)])
def test_layer_norm(axis: int, with_bias: bool) -> None:
    x = f32(2, 3, 8) * 2 + 5
    scale = f32(*x.shape[axis:])
    inputs = [x, scale] + ([f32(*x.shape[axis:])] if with_bias else [])
    want = onnx_ref("LayerNormalization", inputs, axis=axis, epsilon=1e-5)
    got = run_op(
        "nn.layer_norm",
        inputs,
        (x.shape, np.float32),
        f"axis = {axis} : i64, epsilon = 1.0e-05 : f64",
    )
    close(got, want, rtol=1e-4)


@pytest.mark.parametrize("size", [3, 4])
def test_lrn(size: int) -> None:
    x = f32(2, 6, 3, 3)
    # By the spec's formula (onnx.reference's LRN loops over the batch, not the channels).
    want = np.empty_like(x)
    for c in range(6):
        lo, hi = max(0, c - (size - 1) // 2), min(5, c + math.ceil((size - 1) / 2))
        sq = np.sum(x[:, lo : hi + 1].astype(np.float64) ** 2, axis=1)
        want[:, c] = x[:, c] / (2.0 + 1e-2 / size * sq) ** 0.75
    got = run_op(
        "nn.lrn",
        [x],
        (x.shape, np.float32),
        f"size = {size} : i64, alpha = 1.0e-02 : f64, beta = 0.75 : f64, bias = 2.0 : f64",
    )
    close(got, want)


# ---- pooling and reductions -------------------------------------------------------------

POOLS = [
    # x shape, kernel, strides, pads, dilations, ceil_mode, count_include_pad
    ((1, 2, 7, 7), (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 0, 0),
    ((1, 2, 6, 6), (3, 3), (2, 2), (0, 0, 0, 0), (1, 1), 1, 0),
    ((1, 2, 6, 7), (3, 2), (2, 2), (1, 0, 1, 1), (1, 1), 1, 1),
    ((2, 1, 8, 8), (2, 2), (1, 1), (0, 0, 0, 0), (2, 2), 0, 0),
    ((1, 3, 9), (4,), (3,), (1, 2), (1,), 1, 1),
]


# onnx.reference's AveragePool ignores dilations: the dilated average is checked by hand below.
POOL_CASES = [(k, c) for k in ("max", "avg") for c in POOLS if k == "max" or set(c[4]) == {1}]


@pytest.mark.parametrize(
    ("kind", "case"), POOL_CASES, ids=[f"{k}{POOLS.index(c)}" for k, c in POOL_CASES]
)
def test_pool(kind: str, case) -> None:
    xs, kernel, strides, pads, dil, ceil, cip = case
    x = f32(*xs)
    attrs: dict[str, object] = dict(
        kernel_shape=list(kernel), strides=list(strides), pads=list(pads), ceil_mode=ceil
    )
    props = (
        f"kernel = {ints(kernel)}, strides = {ints(strides)}, pads = {ints(pads)}, "
        f"dilations = {ints(dil)}, ceil_mode = {ceil} : i64"
    )
    if kind == "max":
        want = onnx_ref("MaxPool", [x], dilations=list(dil), **attrs)
    else:
        want = onnx_ref("AveragePool", [x], count_include_pad=cip, **attrs)
        props += f", count_include_pad = {cip} : i64"
    close(run_op(f"nn.{kind}_pool", [x], (want.shape, np.float32), props), want)


def test_avg_pool_dilated_by_hand() -> None:
    x = f32(1, 1, 5, 5)
    props = (
        f"kernel = {ints([2, 2])}, strides = {ints([1, 1])}, pads = {ints([0, 0, 0, 0])}, "
        f"dilations = {ints([2, 2])}, ceil_mode = 0 : i64, count_include_pad = 0 : i64"
    )
    got = run_op("nn.avg_pool", [x], ((1, 1, 3, 3), np.float32), props)
    want = (x[..., 0:3, 0:3] + x[..., 2:5, 0:3] + x[..., 0:3, 2:5] + x[..., 2:5, 2:5]) / 4
    close(got, want)


def test_global_pools() -> None:
    x = f32(2, 3, 4, 5)
    close(
        run_op("nn.global_avg_pool", [x], ((2, 3, 1, 1), np.float32)), x.mean((2, 3), keepdims=True)
    )
    close(
        run_op("nn.global_max_pool", [x], ((2, 3, 1, 1), np.float32)), x.max((2, 3), keepdims=True)
    )


@pytest.mark.parametrize(
    ("op", "ref"),
    [
        ("nn.reduce_mean", np.mean),
        ("nn.reduce_sum", np.sum),
        ("nn.reduce_max", np.max),
        ("nn.reduce_min", np.min),
        ("nn.reduce_prod", np.prod),
        ("nn.reduce_l2", lambda x, axis, keepdims: np.sqrt(np.sum(x * x, axis, keepdims=keepdims))),
    ],
)
@pytest.mark.parametrize(("axes", "keep"), [((1,), 1), ((0, 2), 0), ((), 1)])
def test_reduce(op: str, ref, axes: tuple[int, ...], keep: int) -> None:
    x = f32(3, 4, 5)
    want = ref(x, axis=axes, keepdims=bool(keep)) if axes else x
    got = run_op(op, [x], (want.shape, np.float32), f"axes = {ints(axes)}, keepdims = {keep} : i64")
    close(got, want)


def test_reduce_empty_dimension_gives_identity() -> None:
    x = np.zeros((2, 0), dtype=np.float32)
    for op, value in [
        ("nn.reduce_sum", 0),
        ("nn.reduce_prod", 1),
        ("nn.reduce_max", -np.inf),
        ("nn.reduce_min", np.inf),
    ]:
        got = run_op(op, [x], ((2, 1), np.float32), f"axes = {ints([1])}, keepdims = 1 : i64")
        np.testing.assert_array_equal(got, [[value], [value]])


def test_reduce_mean_integer() -> None:
    x = np.array([[1, 2], [3, 6]], dtype=np.int64)
    got = run_op("nn.reduce_mean", [x], ((2,), np.int64), f"axes = {ints([1])}, keepdims = 0 : i64")
    np.testing.assert_array_equal(got, [1, 4])


def test_softmax_stable() -> None:
    x = np.array([[1000.0, 1001.0, 1002.0], [-1e30, 0.0, 1.0]], dtype=np.float32)
    got = run_op("nn.softmax", [x], (x.shape, np.float32), "axis = 1 : i64")
    want = onnx_ref("Softmax", [x.astype(np.float64)], axis=1)
    close(got, want)
    got = run_op("nn.log_softmax", [x], (x.shape, np.float32), "axis = 1 : i64")
    x64 = x.astype(np.float64)
    shifted = x64 - x64.max(1, keepdims=True)
    close(got, shifted - np.log(np.exp(shifted).sum(1, keepdims=True)))  # -1e30 stays finite
    y = f32(2, 3, 4)
    close(
        run_op("nn.softmax", [y], (y.shape, np.float32), "axis = 0 : i64"),
        onnx_ref("Softmax", [y], axis=0),
    )


def test_arg_max_first_maximum() -> None:
    x = np.array([[1, 3, 3, 0], [2, 2, 2, 2]], dtype=np.float32)
    got = run_op("nn.arg_max", [x], ((2, 1), np.int64), "axis = 1 : i64, keepdims = 1 : i64")
    np.testing.assert_array_equal(got, [[1], [0]])
    got = run_op("nn.arg_max", [x], ((4,), np.int64), "axis = 0 : i64, keepdims = 0 : i64")
    np.testing.assert_array_equal(got, [1, 0, 0, 1])


# ---- data movement ----------------------------------------------------------------------


def test_reshape_transpose_expand_tile() -> None:
    x = f32(2, 3, 4)
    np.testing.assert_array_equal(run_op("nn.reshape", [x], ((6, 4), np.float32)), x.reshape(6, 4))
    np.testing.assert_array_equal(
        run_op("nn.transpose", [x], ((4, 2, 3), np.float32), f"perm = {ints([2, 0, 1])}"),
        x.transpose(2, 0, 1),
    )
    y = f32(3, 1)
    np.testing.assert_array_equal(
        run_op("nn.expand", [y], ((2, 3, 5), np.float32)), np.broadcast_to(y, (2, 3, 5))
    )
    np.testing.assert_array_equal(
        run_op("nn.tile", [y], ((6, 2), np.float32), f"repeats = {ints([2, 2])}"),
        np.tile(y, (2, 2)),
    )


def test_concat_split() -> None:
    a, b = f32(2, 3), f32(2, 1)
    np.testing.assert_array_equal(
        run_op("nn.concat", [a, b, a], ((2, 7), np.float32), "axis = 1 : i64"),
        np.concatenate([a, b, a], 1),
    )
    x = f32(2, 6)
    parts = run_op(
        "nn.split",
        [x],
        [((2, 1), np.float32), ((2, 3), np.float32), ((2, 2), np.float32)],
        "axis = 1 : i64",
    )
    for got, want in zip(parts, np.split(x, [1, 4], axis=1)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("starts", "ends", "steps", "index"),
    [
        ((0, 1), (2, 4), (1, 2), np.s_[0:2, 1:4:2]),
        ((1, 4), (2, -1), (1, -1), np.s_[1:2, 4::-1]),  # end -1: through index 0
        ((0, 4), (2, 0), (1, -2), np.s_[0:2, 4:0:-2]),
        ((0, 3), (2, 3), (1, 1), np.s_[0:2, 3:3]),  # empty
        ((1, 2), (-1, -1), (-1, -3), np.s_[1::-1, 2::-3]),
    ],
)
def test_slice(starts, ends, steps, index) -> None:
    x = f32(2, 5)
    want = x[index]
    props = f"starts = {ints(starts)}, ends = {ints(ends)}, steps = {ints(steps)}"
    np.testing.assert_array_equal(run_op("nn.slice", [x], (want.shape, np.float32), props), want)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad(mode: str) -> None:
    x = f32(3, 4)
    pads = (1, 2, 2, 0)
    want = onnx_ref(
        "Pad", [x, np.array(pads, dtype=np.int64), np.array(1.5, dtype=np.float32)], mode=mode
    )
    props = f'pads = {ints(pads)}, mode = "{mode}", value = 1.5 : f64'
    np.testing.assert_array_equal(run_op("nn.pad", [x], (want.shape, np.float32), props), want)
    xi = np.arange(6, dtype=np.int64).reshape(2, 3)
    got = run_op(
        "nn.pad",
        [xi],
        ((2, 5), np.int64),
        f'pads = {ints([0, 1, 0, 1])}, mode = "constant", value = -2.0 : f64',
    )
    np.testing.assert_array_equal(got, np.pad(xi, [(0, 0), (1, 1)], constant_values=-2))


def test_gather_negative_indices() -> None:
    data = f32(5, 3)
    idx = np.array([[0, -1], [-5, 2]], dtype=np.int64)
    np.testing.assert_array_equal(
        run_op("nn.gather", [data, idx], ((2, 2, 3), np.float32), "axis = 0 : i64"),
        onnx_ref("Gather", [data, idx], axis=0),
    )
    idx1 = np.array([-1, 0], dtype=np.int32)
    np.testing.assert_array_equal(
        run_op("nn.gather", [data, idx1], ((5, 2), np.float32), "axis = 1 : i64"), data[:, [2, 0]]
    )
    scalar = np.array(-2, dtype=np.int64)
    np.testing.assert_array_equal(
        run_op("nn.gather", [data, scalar], ((3,), np.float32), "axis = 0 : i64"), data[3]
    )


def test_gather_out_of_range_is_an_error() -> None:
    data, idx = f32(3), np.array([3], dtype=np.int64)
    with pytest.raises(AutofusionError, match=r"'nn.gather'.*out of range"):
        run_op("nn.gather", [data, idx], ((1,), np.float32), "axis = 0 : i64")


def test_gather_elements_and_nd() -> None:
    data = f32(3, 4)
    idx = np.array([[0, -1, 2, 1], [2, 0, 0, -3]], dtype=np.int64)
    np.testing.assert_array_equal(
        run_op("nn.gather_elements", [data, idx], ((2, 4), np.float32), "axis = 0 : i64"),
        onnx_ref("GatherElements", [data, idx], axis=0),
    )
    d3 = f32(2, 3, 4)
    for idx_nd, b in [
        (np.array([[0, 1], [1, -1]], dtype=np.int64), 0),
        (np.array([[[1], [0]], [[2], [2]]], dtype=np.int64), 1),
        (np.array([[1, 3], [0, 0]], dtype=np.int64), 1),
    ]:
        want = onnx_ref("GatherND", [d3, np.where(idx_nd < 0, idx_nd + 3, idx_nd)], batch_dims=b)
        got = run_op(
            "nn.gather_nd", [d3, idx_nd], (want.shape, np.float32), f"batch_dims = {b} : i64"
        )
        np.testing.assert_array_equal(got, want)


# ---- constants, kernels, module interface -----------------------------------------------

MAIN_WITH_CONST = """
func.func @main(%x: tensor<2x3xf32> {onnx.name = "input:0"}) -> (tensor<2x3xf32> {onnx.name = "out"}) {
  %c = nn.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %y = nn.add %x, %c : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}
"""  # noqa: E501 - the MLIR keeps one op per line


def test_run_module_names_and_constants() -> None:
    x = f32(2, 3)
    out = run_module(parse(MAIN_WITH_CONST), {"input:0": x})
    assert list(out) == ["out"]
    np.testing.assert_array_equal(out["out"], x + np.array([1, 2, 3], dtype=np.float32))
    assert out["out"].flags.writeable


def test_rank0_output_stays_rank0() -> None:
    module = parse("""
    func.func @main(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<f32> {
      %c = nn.constant dense<2.0> : tensor<f32>
      %d = nn.matmul %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
      %e = nn.mul %d, %c : (tensor<f32>, tensor<f32>) -> tensor<f32>
      func.return %e : tensor<f32>
    }""")
    a, b = f32(3), f32(3)
    out = run_module(module, {"arg0": a, "arg1": b})["result0"]
    assert out.shape == ()
    close(out, 2 * float(a @ b))


def test_run_module_positional_names_and_bad_feeds() -> None:
    module = parse("""
    func.func @main(%a: tensor<2xf32>, %b: tensor<2xi64>) -> (tensor<2xf32>, tensor<2xi64>) {
      func.return %a, %b : tensor<2xf32>, tensor<2xi64>
    }""")
    a, b = f32(2), np.array([1, 2], dtype=np.int64)
    out = run_module(module, {"arg0": a, "arg1": b})
    assert list(out) == ["result0", "result1"]
    np.testing.assert_array_equal(out["result1"], b)
    with pytest.raises(AutofusionError, match=r"missing inputs 'arg1'.*unknown inputs 'x'"):
        run_module(module, {"arg0": a, "x": b})
    with pytest.raises(AutofusionError, match=r"input 'arg0' has shape \(3,\)"):
        run_module(module, {"arg0": f32(3), "arg1": b})
    with pytest.raises(AutofusionError, match=r"input 'arg1' has element type float32"):
        run_module(module, {"arg0": a, "arg1": a})


def test_elided_constant_is_a_clear_error() -> None:
    module = parse("""
    func.func @main(%x: tensor<20xf32>) -> tensor<20xf32> {
      %c = nn.constant dense_resource<__elided__> : tensor<20xf32> {onnx.origins = ["w"]}
      %y = nn.add %x, %c : (tensor<20xf32>, tensor<20xf32>) -> tensor<20xf32>
      func.return %y : tensor<20xf32>
    }""")
    with pytest.raises(
        AutofusionError,
        match=r"'nn.constant' \(origins: w\) was elided.*"
        r"--elide-constants-larger=-1",
    ):
        run_module(module, {"arg0": f32(20)})


KERNEL = """
func.func @main(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<3xf32>)
    -> (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) {
  %k:2 = fusion.kernel "conv_relu" ["conv", "relu"] (%x, %w, %b)
      : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>)
      -> (tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>) {
  ^bb0(%a: tensor<1x2x4x4xf32>, %k0: tensor<3x2x3x3xf32>, %c: tensor<3xf32>):
    %0 = nn.conv %a, %k0, %c {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
    %1 = nn.relu %0 : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
    fusion.yield %1, %0 : tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>
  }
  %s = nn.sigmoid %k#1 : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  func.return %k#0, %s : tensor<1x3x4x4xf32>, tensor<1x3x4x4xf32>
}
"""  # noqa: E501 - the MLIR keeps one op per line


def test_fusion_kernel_evaluates_its_body() -> None:
    x, w, b = f32(1, 2, 4, 4), f32(3, 2, 3, 3), f32(3)
    relu, sig = evaluate(main_function(parse(KERNEL)), [x, w, b])
    conv = onnx_ref("Conv", [x, w, b], pads=[1, 1, 1, 1])
    close(relu, np.maximum(conv, 0), rtol=1e-4)
    close(sig, 1 / (1 + np.exp(-conv)), rtol=1e-4)


def test_unknown_op_names_the_op(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(IMPLS, nn.SigmoidOp)
    with pytest.raises(AutofusionError, match=r"no implementation for op 'nn.sigmoid'"):
        evaluate(main_function(parse(KERNEL)), [f32(1, 2, 4, 4), f32(3, 2, 3, 3), f32(3)])


def test_intermediates_are_freed_after_last_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a chain of relus, each intermediate dies once the next op has read it."""
    module = parse("""
    func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
      %0 = nn.relu %x : (tensor<64xf32>) -> tensor<64xf32>
      %1 = nn.relu %0 : (tensor<64xf32>) -> tensor<64xf32>
      %2 = nn.relu %1 : (tensor<64xf32>) -> tensor<64xf32>
      %3 = nn.relu %2 : (tensor<64xf32>) -> tensor<64xf32>
      %4 = nn.relu %3 : (tensor<64xf32>) -> tensor<64xf32>
      func.return %4 : tensor<64xf32>
    }""")
    produced: list[weakref.ref[np.ndarray]] = []
    alive_at_call: list[int] = []

    def probe(op, args):
        gc.collect()
        alive_at_call.append(sum(r() is not None for r in produced))
        out = np.maximum(args[0], 0) + 0  # a fresh array
        produced.append(weakref.ref(out))
        return out

    monkeypatch.setitem(IMPLS, nn.ReluOp, probe)
    evaluate(main_function(module), [f32(64)])
    # Call i sees only its own operand (the previous result) still alive.
    assert alive_at_call == [0, 1, 1, 1, 1]
