"""uint16/uint32/uint64 and BitShift through the interpreter and the generated C, against
onnxruntime: wrap-around arithmetic (uint16 products promote to int in C), unsigned division
and remainder, comparisons and casts above the signed range, and shifts by the bit width or
more (undefined in C; 0 in ONNX). The shift and uint16 models also run as a driver built with
-fsanitize=address,undefined, which reports any undefined behaviour the guards miss."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from autofusion.api import build_model_dir
from autofusion.errors import AutofusionError
from autofusion.frontend import import_onnx
from autofusion.interpreter import run_module
from autofusion.lowering.c.testing import build_and_run, compile_onnx, onnxruntime_outputs
from autofusion.pipeline import PipelineOptions
from autofusion.runtime import build
from autofusion.testing import assert_close

RNG = np.random.default_rng(13)
_ONNX = {
    np.uint8: TensorProto.UINT8,
    np.uint16: TensorProto.UINT16,
    np.uint32: TensorProto.UINT32,
    np.uint64: TensorProto.UINT64,
}


def _model(
    nodes: list[onnx.NodeProto],
    inputs: list[tuple[str, int]],
    outputs: list[tuple[str, int]],
    shape: list[int],
    opset: int = 18,
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "unsigned",
        [helper.make_tensor_value_info(n, t, shape) for n, t in inputs],
        [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _arith_model(dt: type) -> onnx.ModelProto:
    t = _ONNX[dt]
    F, B = TensorProto.FLOAT, TensorProto.BOOL
    nodes = [
        helper.make_node("Add", ["a", "b"], ["sum"]),
        helper.make_node("Sub", ["b", "a"], ["diff"]),  # wraps below 0
        helper.make_node("Mul", ["a", "b"], ["prod"]),  # wraps above the max
        helper.make_node("Div", ["a", "b"], ["quot"]),
        helper.make_node("Mod", ["a", "b"], ["rem"]),
        helper.make_node("Greater", ["a", "b"], ["gt"]),
        helper.make_node("LessOrEqual", ["a", "b"], ["le"]),
        helper.make_node("Cast", ["a"], ["af"], to=F),
        helper.make_node("Cast", ["x"], ["xu"], to=t),
    ]
    outs = [("sum", t), ("diff", t), ("prod", t), ("quot", t), ("rem", t), ("gt", B)]
    outs += [("le", B), ("af", F), ("xu", t)]
    if dt != np.uint16:  # onnxruntime has no uint16 Max/Min kernel (node tests cover them)
        nodes += [
            helper.make_node("Max", ["a", "b"], ["max"]),
            helper.make_node("Min", ["a", "b"], ["min"]),
        ]
        outs += [("max", t), ("min", t)]
    return _model(nodes, [("a", t), ("b", t), ("x", F)], outs, [4, 8])


def _arith_feeds(dt: type) -> dict[str, np.ndarray]:
    top = int(np.iinfo(dt).max)
    a = RNG.integers(0, top, (4, 8), dtype=dt, endpoint=True)
    b = RNG.integers(1, top, (4, 8), dtype=dt, endpoint=True)
    # Values above the signed range and the extremes, where signed arithmetic would differ.
    a[0, :4] = [top, top, top // 2 + 1, 0]
    b[0, :4] = [top, 1, 3, top]
    b[1, :4] = [1, 2, 7, top // 2 + 2]
    # Casts from float: in range (out-of-range float -> uint is undefined in ONNX).
    x = RNG.uniform(0.0, 200.0, (4, 8)).astype(np.float32)
    return {"a": a, "b": b, "x": x}


@pytest.mark.parametrize("dt", [np.uint16, np.uint32, np.uint64])
def test_unsigned_arith_matches_onnxruntime(dt: type, tmp_path: Path) -> None:
    model = _arith_model(dt)
    feeds = _arith_feeds(dt)
    ref = onnxruntime_outputs(model, feeds)
    interp = run_module(import_onnx(model, progress=False), feeds)
    got = build_and_run(compile_onnx(model), feeds, tmp_path)
    for name, r in ref.items():
        assert got[name].dtype == r.dtype, name
        assert_close(interp[name], r, f"interpreter {name}")
        assert_close(got[name], r, f"C {name}")
    # The case the test exists for: the products really wrapped.
    assert int(got["prod"][0, 0]) == (int(feeds["a"][0, 0]) ** 2) % (int(np.iinfo(dt).max) + 1)


def _shift_model(dt: type, direction: str) -> onnx.ModelProto:
    t = _ONNX[dt]
    node = helper.make_node("BitShift", ["x", "s"], ["y"], direction=direction)
    return _model([node], [("x", t), ("s", t)], [("y", t)], [16])


def _shift_feeds(dt: type) -> dict[str, np.ndarray]:
    w = np.dtype(dt).itemsize * 8
    top = int(np.iinfo(dt).max)
    x = RNG.integers(1, top, 16, dtype=dt, endpoint=True)
    # In range, at the width, beyond it, and the largest amount the type holds.
    s = np.array([0, 1, w // 2, w - 1, w, w + 1, 2 * w, top, *range(8)], dtype=dt)
    return {"x": x, "s": s}


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize("dt", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_bitshift_matches_onnxruntime(dt: type, direction: str, tmp_path: Path) -> None:
    model = _shift_model(dt, direction)
    feeds = _shift_feeds(dt)
    ref = onnxruntime_outputs(model, feeds)["y"]
    assert not ref[4:8].any()  # shifts by >= the width give 0
    interp = run_module(import_onnx(model, progress=False), feeds)["y"]
    got = build_and_run(compile_onnx(model), feeds, tmp_path)["y"]
    assert_close(interp, ref, "interpreter")
    assert_close(got, ref, "C")


def test_signed_bitshift_opset28(tmp_path: Path) -> None:
    """BitShift-28 on int32: arithmetic right shift; a negative or >= 32 amount gives the
    sign fill (-1 for a right shift of a negative value, else 0)."""
    t = TensorProto.INT32
    nodes = [
        helper.make_node("BitShift", ["x", "s"], ["l"], direction="LEFT"),
        helper.make_node("BitShift", ["x", "s"], ["r"], direction="RIGHT"),
    ]
    model = _model(nodes, [("x", t), ("s", t)], [("l", t), ("r", t)], [6], opset=28)
    x = np.array([-8, -8, -8, 5, 0x40000000, -1], np.int32)
    s = np.array([1, 32, -1, 40, 1, 31], np.int32)
    want_l = np.array([-16, 0, 0, 0, -(2**31), -(2**31)], np.int32)
    want_r = np.array([-4, -1, -1, 0, 0x20000000, -1], np.int32)
    feeds = {"x": x, "s": s}
    interp = run_module(import_onnx(model, progress=False), feeds)
    got = build_and_run(compile_onnx(model), feeds, tmp_path)
    for out, want in (("l", want_l), ("r", want_r)):
        np.testing.assert_array_equal(interp[out], want, err_msg=f"interpreter {out}")
        np.testing.assert_array_equal(got[out], want, err_msg=f"C {out}")


def _sanitized(model: onnx.ModelProto, feeds: dict[str, np.ndarray], tmp: Path) -> None:
    out = tmp / "model"
    out.mkdir()
    build_model_dir(model, out, PipelineOptions(), "unsigned", build=False)
    exe = build.build_sanitizer_driver(out)
    ref = onnxruntime_outputs(model, feeds)
    order = [i.name for i in model.graph.input]
    got = build.run_driver(
        exe, out / "weights.bin", [feeds[n] for n in order],
        [(r.shape, r.dtype) for r in ref.values()], tmp / "io",
    )  # fmt: skip
    for (name, r), g in zip(ref.items(), got):
        assert_close(g, r, name)


@pytest.mark.parametrize("dt", [np.uint8, np.uint64])
def test_bitshift_sanitizer_clean(dt: type, tmp_path: Path) -> None:
    _sanitized(_shift_model(dt, "LEFT"), _shift_feeds(dt), tmp_path)


def test_uint16_arith_sanitizer_clean(tmp_path: Path) -> None:
    _sanitized(_arith_model(np.uint16), _arith_feeds(np.uint16), tmp_path)


def _unary_model(op: str, t: int, out: int, **attrs: object) -> onnx.ModelProto:
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    return _model([node], [("x", t)], [("y", out)], [2, 6], opset=18)


@pytest.mark.parametrize(
    ("op", "attrs", "out"),
    [
        ("Sign", {}, None),
        ("Abs", {}, None),
        ("ReduceMax", {"keepdims": 0}, None),
        ("ReduceMin", {"keepdims": 0}, None),
        ("ReduceSum", {"keepdims": 0}, None),
        ("ArgMax", {"axis": 1}, TensorProto.INT64),
    ],
)
@pytest.mark.parametrize("dt", [np.uint8, np.uint32, np.uint64])
def test_unsigned_unary_and_reductions(
    dt: type, op: str, attrs: dict[str, object], out: int | None, tmp_path: Path
) -> None:
    """Ops whose lowering builds constants of the element type (0, 1, the identity of a
    max/min reduction: 0 and the type's max for unsigned, not the signed extremes).
    onnxruntime has no unsigned kernels for most of these: the interpreter is the reference,
    and the expected values are checked with numpy."""
    t = _ONNX[dt]
    model = _unary_model(op, t, out or t, **attrs)
    top = int(np.iinfo(dt).max)
    x = np.array([[0, 1, 7, top // 2 + 1, top, 5], [top, top - 1, 0, 3, 2, 1]], dt)
    want = {
        "Sign": (x != 0).astype(dt),
        "Abs": x,
        "ReduceMax": x.max(),
        "ReduceMin": x.min(),
        "ReduceSum": x.sum(dtype=dt),
        "ArgMax": x.argmax(axis=1, keepdims=True),
    }[op]
    interp = run_module(import_onnx(model, progress=False), {"x": x})["y"]
    got = build_and_run(compile_onnx(model), {"x": x}, tmp_path)["y"]
    np.testing.assert_array_equal(interp, want, err_msg="interpreter")
    np.testing.assert_array_equal(got, want, err_msg="C")


def test_unsigned_clip_matches_onnxruntime(tmp_path: Path) -> None:
    t = TensorProto.UINT32
    node = helper.make_node("Clip", ["x", "lo", "hi"], ["y"])
    graph = helper.make_graph(
        [node],
        "clip",
        [helper.make_tensor_value_info("x", t, [6])],
        [helper.make_tensor_value_info("y", t, None)],
        initializer=[
            onnx.numpy_helper.from_array(np.array(3, np.uint32), "lo"),
            onnx.numpy_helper.from_array(np.array(2**31 + 5, np.uint32), "hi"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    x = np.array([0, 1, 7, 2**31, 2**32 - 1, 2**31 + 9], np.uint32)
    ref = onnxruntime_outputs(model, {"x": x})["y"]
    got = build_and_run(compile_onnx(model), {"x": x}, tmp_path)["y"]
    assert_close(got, ref, "C")


@pytest.mark.parametrize(
    ("t", "direction", "message"),
    [
        (TensorProto.FLOAT, "LEFT", "expects integer tensors of 8, 16, 32 or 64 bits, got f32"),
        (TensorProto.UINT8, "UP", 'direction must be "LEFT" or "RIGHT", got \'UP\''),
    ],
)
def test_bitshift_refusals(t: int, direction: str, message: str) -> None:
    node = helper.make_node("BitShift", ["x", "s"], ["y"], direction=direction, name="bs")
    model = _model([node], [("x", t), ("s", t)], [("y", t)], [4])
    with pytest.raises(AutofusionError, match=re.escape(f"node 'bs' (BitShift): {message}")):
        import_onnx(model, progress=False)
