"""CumSum: a MatMul with a constant triangular matrix, against onnxruntime; refusals."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from autofusion.errors import AutofusionError
from autofusion.frontend import import_onnx
from autofusion.interpreter import run_module
from autofusion.lowering.c.testing import build_and_run, onnxruntime_outputs
from autofusion.testing import assert_close


def _model(shape, axis, exclusive, reverse, axis_init=True):
    inits = [h.make_tensor("axis", T.INT64, [], [axis])] if axis_init else []
    g = h.make_graph(
        [h.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, shape)]
        + ([] if axis_init else [h.make_tensor_value_info("axis", T.INT64, [])]),
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        initializer=inits,
    )
    return h.make_model(g, opset_imports=[h.make_opsetid("", 14)])


@pytest.mark.parametrize(("axis", "exclusive", "reverse"), [(1, 0, 0), (-1, 1, 1), (0, 1, 0)])
def test_cumsum_matches_onnxruntime(axis: int, exclusive: int, reverse: int, tmp_path) -> None:
    m = _model([2, 5, 3], axis, exclusive, reverse)
    x = np.random.default_rng(3).uniform(-1, 1, (2, 5, 3)).astype(np.float32)
    ref = onnxruntime_outputs(m, {"x": x})["y"]
    assert_close(run_module(import_onnx(m, progress=False), {"x": x})["y"], ref, "interp")
    assert_close(build_and_run(import_onnx(m, progress=False), {"x": x}, tmp_path)["y"], ref, "C")


def test_cumsum_runtime_axis_is_refused() -> None:
    with pytest.raises(AutofusionError, match=r"\(CumSum\): axis \(input 1\) must be a constant"):
        import_onnx(_model([4], 0, 0, 0, axis_init=False), progress=False)


def test_cumsum_long_axis_is_refused() -> None:
    with pytest.raises(AutofusionError, match="CumSum over an axis of 4096 elements"):
        import_onnx(_model([1, 4096], 1, 0, 0), progress=False)
