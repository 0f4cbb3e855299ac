"""Hostile integer arithmetic: Div / Mod by zero and ``MIN / -1``, in the generated C, the
interpreter and import-time folding.

x86 traps (SIGFPE, killing the host process) on an integer division by zero and on
``MIN / -1``. onnxruntime refuses a zero divisor at run time ("Integer division by zero");
for int32 it computes ``MIN / -1 = MIN`` and ``MIN % -1 = 0`` (for int64 Div it dies of
SIGFPE itself). Ours: a zero divisor in run-time data makes ``run()`` raise one clear
``AutofusionError`` naming the node (``AF_ERR_DIVZERO``) and the model stays usable;
``MIN / -1`` wraps to ``MIN`` and ``MIN % -1`` is 0 for both widths; a zero in a constant
divisor is refused at import time naming the node.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hostile import assert_clean_api_error
from onnx import TensorProto, helper, numpy_helper

from autofusion.api import import_model
from autofusion.errors import AutofusionError
from autofusion.interpreter import run_module
from autofusion.lowering.c.testing import build, compile_onnx, onnxruntime_outputs
from autofusion.runtime.loader import ModelLibrary

I32, I64 = TensorProto.INT32, TensorProto.INT64
NP = {I32: np.int32, I64: np.int64}
OPS = [("Div", {}), ("Mod", {"fmod": 0}), ("Mod", {"fmod": 1})]
OP_IDS = ["div", "mod", "fmod"]


def _model(op: str, attrs: dict, elem: int, b_const: np.ndarray | None = None,
           a_const: np.ndarray | None = None,
           shape: Sequence[int] = (4,)) -> onnx.ModelProto:  # fmt: skip
    """``y = op(a, b)``, with ``a`` / ``b`` run-time inputs unless given as constants."""
    inits = {k: v for k, v in (("a", a_const), ("b", b_const)) if v is not None}
    ins = [helper.make_tensor_value_info(n, elem, list(shape)) for n in "ab" if n not in inits]
    g = helper.make_graph(
        [helper.make_node(op, ["a", "b"], ["y"], name="dv", **attrs)], "int_div", ins,
        [helper.make_tensor_value_info("y", elem, None)],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()],
    )  # fmt: skip
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _load(model: onnx.ModelProto, work: Path) -> ModelLibrary:
    return ModelLibrary(build(compile_onnx(model), work), work / "weights.bin", 1)


# ---- run-time zero divisor ------------------------------------------------------------


@pytest.mark.parametrize("elem", [I32, I64], ids=["int32", "int64"])
@pytest.mark.parametrize(("op", "attrs"), OPS, ids=OP_IDS)
def test_int_div_by_zero_is_a_clean_run_error(op: str, attrs: dict, elem: int,
                                              tmp_path: Path) -> None:  # fmt: skip
    dt = NP[elem]
    model = _model(op, attrs, elem)
    lib = _load(model, tmp_path)
    bad = {"a": np.array([7, -7, 5, 3], dt), "b": np.array([1, 0, 2, 3], dt)}
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match="by zero"):  # onnxruntime refuses too
        sess.run(None, bad)
    with pytest.raises(AutofusionError) as ei:
        lib.run(bad)
    what = "modulo" if op == "Mod" else "division"  # the message says which op failed
    assert_clean_api_error(ei, f"{op} node 'dv'", f"integer {what} by zero")
    # the model stays usable: the next valid run gives onnxruntime's result
    good = {"a": np.array([7, -7, 5, -3], dt), "b": np.array([2, 2, -3, -3], dt)}
    np.testing.assert_array_equal(lib.run(good)["y"], onnxruntime_outputs(model, good)["y"])
    lib.close()


def test_int_div_by_zero_inside_a_fused_kernel(tmp_path: Path) -> None:
    """The fault leaves a fused kernel (Add -> Div -> Mul) like the index faults do."""
    nodes = [helper.make_node("Add", ["a", "b"], ["s"], name="add"),
             helper.make_node("Div", ["s", "c"], ["q"], name="div_c"),
             helper.make_node("Mul", ["q", "b"], ["y"], name="mul")]  # fmt: skip
    ins = [helper.make_tensor_value_info(n, I64, [2, 64]) for n in "abc"]
    g = helper.make_graph(nodes, "fused", ins, [helper.make_tensor_value_info("y", I64, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    lib = _load(model, tmp_path)
    rng = np.random.default_rng(2)
    feeds = {n: rng.integers(1, 9, (2, 64)).astype(np.int64) for n in "abc"}
    feeds["c"][1, 33] = 0
    with pytest.raises(AutofusionError) as ei:
        lib.run(feeds)
    assert_clean_api_error(ei, "Div node 'div_c'", "division by zero")
    feeds["c"][1, 33] = -4
    np.testing.assert_array_equal(lib.run(feeds)["y"], onnxruntime_outputs(model, feeds)["y"])
    lib.close()


# ---- MIN / -1 ---------------------------------------------------------------------------


@pytest.mark.parametrize("elem", [I32, I64], ids=["int32", "int64"])
@pytest.mark.parametrize(("op", "attrs"), OPS, ids=OP_IDS)
def test_int_min_by_minus_one_wraps(op: str, attrs: dict, elem: int, tmp_path: Path) -> None:
    dt = NP[elem]
    mn = np.iinfo(dt).min
    feeds = {"a": np.array([mn, 7, mn, -9], dt), "b": np.array([-1, -1, 1, -1], dt)}
    if op == "Div":
        want = np.array([mn, -7, mn, 9], dt)  # onnxruntime for int32; it dies for int64
    else:
        want = np.zeros(4, dt)
    if elem == I32 or op == "Mod":
        np.testing.assert_array_equal(onnxruntime_outputs(_model(op, attrs, elem), feeds)["y"],
                                      want)  # fmt: skip
    lib = _load(_model(op, attrs, elem), tmp_path)
    np.testing.assert_array_equal(lib.run(feeds)["y"], want)
    lib.close()
    # the interpreter agrees, without a numpy overflow warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = run_module(import_model(_model(op, attrs, elem)), feeds)
    np.testing.assert_array_equal(got["y"], want)


# ---- interpreter and import time --------------------------------------------------------


@pytest.mark.parametrize(("op", "attrs"), OPS, ids=OP_IDS)
def test_interpreter_refuses_a_zero_divisor(op: str, attrs: dict) -> None:
    module = import_model(_model(op, attrs, I64))
    feeds = {"a": np.array([7, -7, 5, 3], np.int64), "b": np.array([1, 2, 0, 3], np.int64)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AutofusionError) as ei:
            run_module(module, feeds)
    what = "modulo" if op == "Mod" else "division"
    assert_clean_api_error(ei, "dv", f"integer {what} by zero", "[2]")


@pytest.mark.parametrize("folded", [False, True], ids=["runtime_dividend", "all_constant"])
@pytest.mark.parametrize(("op", "attrs"), OPS, ids=OP_IDS)
def test_zero_constant_divisor_is_a_compile_error(
    op: str, attrs: dict, folded: bool, capfd: pytest.CaptureFixture[str]
) -> None:
    b = np.array([[3, 2], [0, 1]], np.int64)
    a = np.array([[7, 8], [9, 10]], np.int64) if folded else None
    model = _model(op, attrs, I64, b_const=b, a_const=a, shape=(2, 2))
    if folded:  # a graph output fed by a constant node: keep an input so the graph is valid
        model.graph.input.append(helper.make_tensor_value_info("unused", I64, [1]))
    with pytest.raises(AutofusionError) as ei:
        import_model(model)
    what = "modulo" if op == "Mod" else "division"
    assert_clean_api_error(ei, "node 'dv'", f"({op})", f"{what} by zero", "[1, 0]")
    assert capfd.readouterr().err == "", "nothing on stderr (no numpy warning)"


def test_float_div_by_zero_is_not_an_error(tmp_path: Path) -> None:
    """Floats keep IEEE semantics (inf / nan), as onnxruntime does: no check, no fault."""
    g = helper.make_graph(
        [helper.make_node("Div", ["a", "b"], ["y"], name="dv")], "fdiv",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in "ab"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )  # fmt: skip
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    module = compile_onnx(model)
    build(module, tmp_path)
    assert "af_fault" not in (tmp_path / "model.c").read_text()
    lib = ModelLibrary(tmp_path / "libmodel.so", tmp_path / "weights.bin", 1)
    feeds = {"a": np.array([1, -1, 0, 2], np.float32), "b": np.array([0, 0, 0, 4], np.float32)}
    np.testing.assert_array_equal(lib.run(feeds)["y"], onnxruntime_outputs(model, feeds)["y"])
    lib.close()


# ---- import-time folds with constant indices --------------------------------------------


def _const_model(op: str, inits: dict[str, np.ndarray], **attrs: object) -> onnx.ModelProto:
    g = helper.make_graph(
        [helper.make_node(op, list(inits), ["y"], name="n1", **attrs)], "fold",
        [helper.make_tensor_value_info("unused", I64, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()],
    )  # fmt: skip
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


DATA = np.arange(12, dtype=np.float32).reshape(3, 4) / 4


@pytest.mark.parametrize(("op", "idx", "bad", "at"), [
    ("Gather", np.array([0, 5]), 5, "[1]"),
    ("Gather", np.array([-4, 1]), -4, "[0]"),
    ("GatherElements", np.array([[0, 9, 0, 0]]), 9, "[0, 1]"),
    # -5 on a dim of 3 wrapped once (ONNX) is -2, which numpy used to wrap again silently
    ("GatherElements", np.array([[0, -5, 0, 0]]), -5, "[0, 1]"),
])  # fmt: skip
def test_constant_fold_index_out_of_range_names_index_and_range(
    op: str, idx: np.ndarray, bad: int, at: str
) -> None:
    model = _const_model(op, {"d": DATA, "i": idx}, axis=0)
    with pytest.raises(AutofusionError) as ei:
        import_model(model)
    assert_clean_api_error(ei, "node 'n1'", f"({op})", f"index {bad} ", at, "[-3, 2]",
                           "axis 0 of data [3, 4]")  # fmt: skip
