"""IsNaN and IsInf (the exporters' scaled_dot_product_attention guard) import as
comparisons and match onnxruntime in the interpreter and the generated C, on inputs holding
NaN, +inf, -inf and -0.0; constant inputs fold."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from autofusion.frontend import import_onnx
from autofusion.interpreter import run_module
from autofusion.lowering.c.testing import build_and_run, onnxruntime_outputs


def _model(op: str, **attrs: int) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 6])
    # Where(IsX(x), 0, x): a bool result flowing into a run-time Where, as exporters emit it
    nodes = [
        helper.make_node(op, ["x"], ["m"], name="is", **attrs),
        helper.make_node("Where", ["m", "zero", "x"], ["y"], name="where"),
    ]
    zero = helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])
    graph = helper.make_graph(nodes, "g", [x], [y], [zero])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


X = np.array([[np.nan, np.inf, -np.inf, -0.0, 1.5, -2.0],
              [3.0, np.nan, 7.0, -np.inf, np.inf, 0.25]], dtype=np.float32)  # fmt: skip

CASES = [("IsNaN", {}), ("IsInf", {}), ("IsInf", {"detect_negative": 0}),
         ("IsInf", {"detect_positive": 0}),
         ("IsInf", {"detect_positive": 0, "detect_negative": 0})]  # fmt: skip


@pytest.mark.parametrize(("op", "attrs"), CASES, ids=[f"{o}{a}" for o, a in CASES])
def test_isnan_isinf_match_onnxruntime(op: str, attrs: dict[str, int], tmp_path: Path) -> None:
    model = _model(op, **attrs)
    ref = onnxruntime_outputs(model, {"x": X})["y"]
    module = import_onnx(model, progress=False)
    interp = run_module(module, {"x": X})["y"]
    np.testing.assert_array_equal(interp, ref)  # exact: NaN where NaN, inf where inf
    got = build_and_run(import_onnx(model, progress=False), {"x": X}, tmp_path)["y"]
    np.testing.assert_array_equal(got, ref)


def test_isnan_of_a_constant_folds() -> None:
    c = helper.make_tensor("c", TensorProto.FLOAT, [3], [np.nan, 1.0, np.inf])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    nodes = [helper.make_node("IsNaN", ["c"], ["m"]), helper.make_node("IsInf", ["c"], ["k"]),
             helper.make_node("Or", ["m", "k"], ["mk"]),
             helper.make_node("Where", ["mk", "x", "c"], ["y"])]  # fmt: skip
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], [c]),
                              opset_imports=[helper.make_opsetid("", 20)])  # fmt: skip
    module = import_onnx(model, progress=False)
    names = [op.name for op in module.walk()]
    assert "nn.equal" not in names
    assert "nn.not" not in names
    assert "nn.where" in names
    xv = np.array([5.0, 6.0, 7.0], dtype=np.float32)
    np.testing.assert_array_equal(run_module(module, {"x": xv})["y"],
                                  onnxruntime_outputs(model, {"x": xv})["y"])  # fmt: skip
