"""Hostile import-time constant folding: every fold checks its result before computing it.

Folding runs before the per-tensor byte check on node outputs, so a tiny constant-only
model could make the importer allocate terabytes (``Tile``, ``Expand``, ``ConstantOfShape``,
``Range`` to huge sizes: MemoryError), overflow (``Range`` to ``inf`` / ``NaN``:
OverflowError) or print numpy warnings (``Cast`` of NaN / inf to int). Ours: one
``AutofusionError`` naming the node before anything is allocated; a valid result over the
fold limit (64 MiB) stays a run-time op where the op has a lowering; nothing on stderr.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest
from hostile import assert_clean_api_error, assert_clean_cli_error, assert_nothing_written, run_tool
from onnx import TensorProto, helper, numpy_helper

from autofusion.api import import_model
from autofusion.errors import AutofusionError
from autofusion.frontend.context import FOLD_LIMIT
from autofusion.frontend.convert_elementwise import BINARY_OPS, UNARY_OPS
from autofusion.interpreter import run_module
from autofusion.interpreter.elementwise import cast

BYTE_LIMIT = "over the limit of 2^48 bytes"


def _model(nodes: Sequence[onnx.NodeProto], inits: dict[str, np.ndarray],
           outs: Sequence[str] = ("y",), inputs: Sequence[onnx.ValueInfoProto] = ()
           ) -> onnx.ModelProto:  # fmt: skip
    """A graph of ``nodes`` over constant initializers ``inits``, ``outs`` as outputs."""
    g = helper.make_graph(
        list(nodes), "folds", list(inputs),
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outs],
        initializer=[numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
    )  # fmt: skip
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _range(start: object, limit: object, delta: object, dt: type = np.float32) -> onnx.ModelProto:
    node = helper.make_node("Range", ["s", "l", "d"], ["y"], name="r")
    return _model([node], {"s": dt(start), "l": dt(limit), "d": dt(delta)})


def _import_error(model: onnx.ModelProto, *needles: str) -> str:
    with pytest.raises(AutofusionError) as ei:
        import_model(model)
    return assert_clean_api_error(ei, *needles)


# ---- Range --------------------------------------------------------------------------------


@pytest.mark.parametrize(("start", "limit", "delta", "what"), [
    (0, np.inf, 1, "limit is inf"), (0, -np.inf, -1, "limit is -inf"),
    (np.nan, 3, 1, "start is nan"), (0, 3, np.nan, "delta is nan"),
    (-np.inf, 3, 1, "start is -inf"), (0, 3, np.inf, "delta is inf"), (0, 3, 0, "delta is 0"),
], ids=["limit_inf", "limit_ninf", "start_nan", "delta_nan", "start_ninf", "delta_inf",
        "delta_0"])  # fmt: skip
def test_range_with_non_finite_operands_is_a_clean_error(
    start: float, limit: float, delta: float, what: str
) -> None:
    _import_error(_range(start, limit, delta), "node 'r' (Range)", what)


def test_range_int_zero_delta_is_a_clean_error() -> None:
    _import_error(_range(0, 5, 0, np.int64), "node 'r' (Range)", "delta is 0")


@pytest.mark.parametrize(("start", "limit", "delta", "dt"), [
    (0, 1e30, 1, np.float32), (-3e38, 3e38, 1e-30, np.float32),
    (0, 2**62, 1, np.int64), (2**62, -(2**62), -1, np.int64),
], ids=["f32_1e30", "f32_overflowing_count", "i64_2^62", "i64_down"])  # fmt: skip
def test_huge_range_is_the_byte_limit_error_before_allocating(
    start: object, limit: object, delta: object, dt: type
) -> None:
    _import_error(_range(start, limit, delta, dt), "node 'r' (Range)", "2^48")


def test_range_over_the_fold_limit_is_an_error_naming_the_limit() -> None:
    n = FOLD_LIMIT // 4 + 1  # int32: one element more than the fold limit
    _import_error(_range(0, n, 1, np.int32), "node 'r' (Range)", f"{n} elements", str(FOLD_LIMIT))


def test_range_fold_matches_onnx() -> None:
    module = import_model(_range(1.5, 4.0, 0.5))
    got = run_module(module, {})["y"]
    np.testing.assert_array_equal(got, np.array([1.5, 2.0, 2.5, 3.0, 3.5], np.float32))
    module = import_model(_range(7, -2, -3, np.int64))
    np.testing.assert_array_equal(run_module(module, {})["y"], np.array([7, 4, 1], np.int64))


# ---- Tile / Expand / ConstantOfShape / Concat / Resize ----------------------------------


def _data() -> np.ndarray:
    return np.arange(12, dtype=np.float32).reshape(3, 4) / 10


@pytest.mark.parametrize(("op", "arg"), [
    ("Tile", [2**40, 2**40]), ("Expand", [2**40, 2**20, 3, 4]), ("Expand", [2**48, 3, 4]),
], ids=["tile", "expand", "expand_2^48"])  # fmt: skip
def test_huge_tile_expand_is_the_byte_limit_error(op: str, arg: list[int]) -> None:
    node = helper.make_node(op, ["d", "r"], ["y"], name="t")
    _import_error(
        _model([node], {"d": _data(), "r": np.array(arg, np.int64)}), f"node 't' ({op})", BYTE_LIMIT
    )


def test_huge_constant_of_shape_is_the_byte_limit_error() -> None:
    node = helper.make_node("ConstantOfShape", ["r"], ["y"], name="c")
    _import_error(
        _model([node], {"r": np.array([2**40, 2**40], np.int64)}),
        "node 'c' (ConstantOfShape)",
        BYTE_LIMIT,
    )


def test_valid_broadcast_that_is_too_big_says_so() -> None:
    """``Expand`` of a ``[1, 1]`` run-time value to ``2^40 x 2^20``: the shapes do broadcast,
    the result is too big; the message must say that, not 'do not broadcast'."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])
    node = helper.make_node("Expand", ["x", "r"], ["y"], name="e")
    msg = _import_error(
        _model([node], {"r": np.array([2**40, 2**20], np.int64)}, inputs=[x]),
        "node 'e' (Expand)",
        BYTE_LIMIT,
    )
    assert "broadcast" not in msg
    node = helper.make_node("Expand", ["x", "r"], ["y"], name="e")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2**20, 1])
    _import_error(
        _model([node], {"r": np.array([2**40, 2**20], np.int64)}, inputs=[x]),
        "do not broadcast",
        "dimension 0 of the result: 1048576 against 1099511627776",
    )


@pytest.mark.parametrize("op", ["Tile", "Expand"])
def test_big_valid_fold_stays_a_run_time_op(op: str) -> None:
    """A result over the 64 MiB fold limit is not materialised as a constant: the op runs."""
    arg = [2**21, 1] if op == "Tile" else [2**21, 3, 4]  # 2^21 * 12 * 4 bytes = 96 MiB
    node = helper.make_node(op, ["d", "r"], ["y"], name="t")
    module = import_model(_model([node], {"d": _data(), "r": np.array(arg, np.int64)}))
    text = str(module)
    assert f"nn.{op.lower()}" in text, text
    assert "tensor<3x4xf32>" in text  # the only constant is the small operand


def test_big_splat_consumer_stays_a_run_time_op() -> None:
    """``Add`` of a 4 GiB ``ConstantOfShape`` splat: folding would materialise it."""
    fill = numpy_helper.from_array(np.array([0.5], np.float32))
    nodes = [
        helper.make_node("ConstantOfShape", ["r"], ["c"], name="c", value=fill),
        helper.make_node("Add", ["c", "c"], ["y"], name="a"),
        helper.make_node("Concat", ["c", "c"], ["z"], name="cc", axis=0),
    ]
    module = import_model(_model(nodes, {"r": np.array([2**20, 2**10], np.int64)}, outs=["y", "z"]))
    text = str(module)
    assert "nn.add" in text, text
    assert "nn.concat" in text, text


def test_huge_resize_fold_stays_a_run_time_resize() -> None:
    """Over the fold limit but under the byte limit: Resize has a lowering, so it stays."""
    node = helper.make_node("Resize", ["d", "", "sc"], ["y"], name="rs")
    scales = np.array([1, 1, 2**20, 2**20], np.float32)
    text = str(import_model(_model([node], {"d": _data().reshape(1, 1, 3, 4), "sc": scales})))
    assert "nn.resize" in text, text


def test_resize_over_the_byte_limit_is_a_clean_error() -> None:
    node = helper.make_node("Resize", ["d", "", "sc"], ["y"], name="rs")
    scales = np.array([1, 1, 2**24, 2**24], np.float32)
    _import_error(
        _model([node], {"d": _data().reshape(1, 1, 3, 4), "sc": scales}),
        "node 'rs' (Resize)",
        BYTE_LIMIT,
    )


def test_huge_fold_without_lowering_is_a_clean_error() -> None:
    """AffineGrid has no run-time lowering: a constant-input result over the fold limit is
    refused before the reference evaluator allocates it."""
    node = helper.make_node("AffineGrid", ["th", "sz"], ["y"], name="ag")
    theta = np.eye(2, 3, dtype=np.float32)[None]
    model = _model([node], {"th": theta, "sz": np.array([1, 1, 2**12, 2**12], np.int64)})
    model.opset_import[0].version = 20
    _import_error(model, "node 'ag' (AffineGrid)", str(FOLD_LIMIT), "no run-time lowering")


def test_cli_refuses_a_hostile_fold_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "range_inf.onnx"
    onnx.save(_range(0, np.inf, 1), path)
    out = tmp_path / "out"
    proc = run_tool("compile", [str(path), "-o", str(out)], timeout=120)
    assert_clean_cli_error(proc, str(path), "node 'r' (Range)", "limit is inf")
    assert_nothing_written(out)
    path = tmp_path / "tile.onnx"
    node = helper.make_node("Tile", ["d", "r"], ["y"], name="t")
    onnx.save(_model([node], {"d": _data(), "r": np.array([2**40, 2**40], np.int64)}), path)
    proc = run_tool("compile", [str(path), "-o", str(out)], timeout=120)
    assert_clean_cli_error(proc, str(path), "node 't' (Tile)", BYTE_LIMIT)
    assert_nothing_written(out)


# ---- extreme values: no warnings ----------------------------------------------------------

EXTREME = np.array([np.nan, np.inf, -np.inf, 3e38, -3e38, 0.0, -0.0, 1e-45, 1.5, -2.5], np.float32)


def test_folding_every_op_on_extreme_values_is_silent(capfd: pytest.CaptureFixture[str]) -> None:
    """Every elementwise fold and Cast to each integer type, on NaN / +-inf / huge values,
    with warnings as errors: nothing on stderr, and Cast gives onnxruntime's x86 results
    (INT_MIN for NaN and out-of-range values)."""
    inits: dict[str, np.ndarray] = {
        "x": EXTREME,
        "x2": EXTREME[::-1].copy(),
        "i": np.array([0, 1, -1, 2**31 - 1, -(2**31)], np.int32),
    }
    nodes, outs = [], []
    for op in UNARY_OPS:
        src = "i" if op == "Not" else "x"
        if op == "Not":
            nodes.append(helper.make_node("Cast", ["i"], ["ib"], to=TensorProto.BOOL))
            src = "ib"
        nodes.append(helper.make_node(op, [src], [f"u_{op}"], name=f"u_{op}"))
        outs.append(f"u_{op}")
    for op in BINARY_OPS:
        a, b = ("ib", "ib") if op in ("And", "Or", "Xor") else ("x", "x2")
        nodes.append(helper.make_node(op, [a, b], [f"b_{op}"], name=f"b_{op}"))
        outs.append(f"b_{op}")
    for op, attrs in [
        ("Pow", {}),
        ("Mod", {"fmod": 1}),
        ("Max", {}),
        ("Min", {}),
        ("Sum", {}),
        ("Mean", {}),
        ("PRelu", {}),
    ]:
        nodes.append(helper.make_node(op, ["x", "x2"], [f"o_{op}"], name=f"o_{op}", **attrs))
        outs.append(f"o_{op}")
    for op, attrs in [
        ("LeakyRelu", {}),
        ("Elu", {}),
        ("HardSigmoid", {}),
        ("Gelu", {}),
        ("IsNaN", {}),
        ("IsInf", {}),
    ]:
        nodes.append(helper.make_node(op, ["x"], [f"a_{op}"], name=f"a_{op}", **attrs))
        outs.append(f"a_{op}")
    casts = {
        TensorProto.INT64: np.int64,
        TensorProto.INT32: np.int32,
        TensorProto.INT8: np.int8,
        TensorProto.UINT8: np.uint8,
        TensorProto.FLOAT16: np.float16,
        TensorProto.BOOL: np.bool_,
    }
    for to in casts:
        nodes.append(helper.make_node("Cast", ["x"], [f"c_{to}"], name=f"c_{to}", to=to))
        outs.append(f"c_{to}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        module = import_model(_model(nodes, inits, outs=outs))
        got = run_module(module, {})
    assert capfd.readouterr().err == "", "nothing on stderr (no numpy warning)"
    assert len(got) == len(outs)
    i64 = got[f"c_{TensorProto.INT64}"]
    info = np.iinfo(np.int64)
    np.testing.assert_array_equal(i64[:5], [info.min] * 5)
    np.testing.assert_array_equal(got[f"c_{TensorProto.UINT8}"][:5], [0] * 5)


CAST_EXTREMES = np.array(
    [np.nan, np.inf, -np.inf, 3e38, -3e38, 1e10, -1e10, 300.7, -300.7, 2.9, -2.9, 1.8e19,
     9.3e18, 4e9, 3e9, 2.2e9, 2**31, -(2**31), 2**63, -(2**63), 0.0, -0.0],
    np.float32,
)  # fmt: skip
CAST_TARGETS = {
    TensorProto.INT64: np.int64,
    TensorProto.INT32: np.int32,
    TensorProto.INT16: np.int16,
    TensorProto.INT8: np.int8,
    TensorProto.UINT8: np.uint8,
    TensorProto.UINT16: np.uint16,
    TensorProto.UINT32: np.uint32,
    TensorProto.UINT64: np.uint64,
}


def _ort_casts(x: np.ndarray, elem: int, targets: dict[int, type]) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    nodes = [helper.make_node("Cast", ["x"], [f"y{to}"], to=to) for to in targets]
    outs = [helper.make_tensor_value_info(f"y{to}", to, None) for to in targets]
    g = helper.make_graph(nodes, "c", [helper.make_tensor_value_info("x", elem, [len(x)])], outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([f"y{to}" for to in targets], sess.run(None, {"x": x})))


@pytest.mark.parametrize("src", [np.float32, np.float64])
def test_interpreter_cast_matches_onnxruntime_on_extremes(src: type) -> None:
    """NaN, +-inf and out-of-range floats are undefined in ONNX; the interpreter (and so
    import-time folding) gives onnxruntime's x86-64 results for every integer type, silently."""
    x = CAST_EXTREMES.astype(src)
    elem = TensorProto.FLOAT if src == np.float32 else TensorProto.DOUBLE
    ref = _ort_casts(x, elem, CAST_TARGETS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for to, dt in CAST_TARGETS.items():
            np.testing.assert_array_equal(cast(x, np.dtype(dt)), ref[f"y{to}"], err_msg=str(dt))


def test_c_run_time_cast_and_fmod_match_onnxruntime_on_extremes(tmp_path: Path) -> None:
    """The same rule in generated C at run time (no undefined float-to-int conversion that
    GCC may fold to a saturated value), and Mod(fmod=1) by an infinite divisor is the
    dividend (it was x - trunc(x/y)*y = NaN). Found by the 30-minute fuzz run."""
    import autofusion

    targets = {k: v for k, v in CAST_TARGETS.items() if v not in (np.uint16, np.uint32, np.uint64)}
    nodes = [helper.make_node("Cast", ["x"], [f"y{to}"], to=to) for to in targets]
    nodes.append(helper.make_node("Mod", ["a", "d"], ["m1"], fmod=1))
    n = len(CAST_EXTREMES)
    outs = [helper.make_tensor_value_info(f"y{to}", to, [n]) for to in targets]
    outs.append(helper.make_tensor_value_info("m1", TensorProto.FLOAT, [6]))
    g = helper.make_graph(
        nodes,
        "c",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [n]),
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [6]),
            helper.make_tensor_value_info("d", TensorProto.FLOAT, [6]),
        ],
        outs,
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {
        "x": CAST_EXTREMES,
        "a": np.array([0.25, -0.25, 7.5, -7.5, 1e30, 3.0], np.float32),
        "d": np.array([np.inf, np.inf, -np.inf, 2.0, 3.0, -2.0], np.float32),
    }
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    m = autofusion.compile(model, cache=False)
    try:
        got = m.run(feeds)
    finally:
        m.close()
    for name, want in ref.items():
        np.testing.assert_array_equal(got[name], want, err_msg=name)


# ---- ReduceMean over an empty axis --------------------------------------------------------


def _reduce_mean(elem: int) -> onnx.ModelProto:
    node = helper.make_node("ReduceMean", ["x"], ["y"], name="rm", axes=[1], keepdims=1)
    g = helper.make_graph(
        [node],
        "rm",
        [helper.make_tensor_value_info("x", elem, [2, 0, 3])],
        [helper.make_tensor_value_info("y", elem, None)],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_reduce_mean_over_an_empty_axis_matches_onnxruntime(tmp_path: Path) -> None:
    """The compiler used to form ``1.0 / 0`` (ZeroDivisionError) and the interpreter warned
    'Mean of empty slice' and gave NaN; onnxruntime gives 0."""
    from autofusion.lowering.c.testing import build, compile_onnx, onnxruntime_outputs
    from autofusion.runtime.loader import ModelLibrary

    model = _reduce_mean(TensorProto.FLOAT)
    feeds = {"x": np.zeros((2, 0, 3), np.float32)}
    want = onnxruntime_outputs(model, feeds)["y"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(run_module(import_model(model), feeds)["y"], want)
        lib = ModelLibrary(build(compile_onnx(model), tmp_path), tmp_path / "weights.bin", 1)
        np.testing.assert_array_equal(lib.run(feeds)["y"], want)
        lib.close()


@pytest.mark.parametrize("elem", [TensorProto.INT32, TensorProto.INT64], ids=["i32", "i64"])
def test_int_reduce_mean_is_a_clean_error(elem: int) -> None:
    """Integer ReduceMean is refused at import (so no integer division by a 0 count in C)."""
    _import_error(_reduce_mean(elem), "node 'rm' (ReduceMean)", "floating-point")


def test_afrt_prefetches_form_no_out_of_bounds_pointer() -> None:
    """The micro-kernel prefetches ``AFRT_PF_K`` steps ahead, past the end of the packed
    buffer on the last panel: those addresses must be integer arithmetic (AFRT_PF_ADDR, or
    AFRT_PF_ADDR_BYTES for the next-block prefetch's byte steps), as
    ``b + AFRT_NR * AFRT_PF_K`` would be undefined behaviour there (the object code is the
    same: 279 instructions, 3 prefetches in afrt_ukernel12_ with -march=skylake-avx512)."""
    import re

    import autofusion.runtime

    header = Path(autofusion.runtime.__file__).parent / "include" / "afrt.h"
    calls = re.findall(r"_mm_prefetch\(([^;]*)\);", header.read_text())
    assert calls
    assert all(re.match(r"AFRT_PF_ADDR(_BYTES)?\(", c) for c in calls), calls
