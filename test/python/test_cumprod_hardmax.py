"""CumProd (against numpy: onnxruntime has no opset-26 kernel) and Hardmax (against
onnxruntime), interpreter and generated C; refusals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from autofusion.errors import AutofusionError
from autofusion.frontend import import_onnx
from autofusion.interpreter import run_module
from autofusion.lowering.c.testing import build_and_run, compile_onnx, onnxruntime_outputs
from autofusion.testing import assert_close


def _cumprod_model(shape, axis: int, exclusive: int, reverse: int):
    g = h.make_graph(
        [h.make_node("CumProd", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse)],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, shape)],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        initializer=[h.make_tensor("axis", T.INT64, [], [axis])],
    )
    return h.make_model(g, opset_imports=[h.make_opsetid("", 26)])


def _cumprod_ref(x: np.ndarray, axis: int, exclusive: int, reverse: int) -> np.ndarray:
    if reverse:
        x = np.flip(x, axis)
    y = np.cumprod(x, axis=axis)
    if exclusive:
        ones = np.ones_like(np.take(y, [0], axis=axis))
        y = np.concatenate([ones, np.delete(y, -1, axis=axis)], axis=axis)
    return np.flip(y, axis) if reverse else y


@pytest.mark.parametrize(("axis", "exclusive", "reverse"), [(1, 0, 0), (-1, 1, 1), (0, 1, 0)])
def test_cumprod_matches_numpy(axis: int, exclusive: int, reverse: int, tmp_path: Path) -> None:
    m = _cumprod_model([2, 5, 3], axis, exclusive, reverse)
    x = np.random.default_rng(3).uniform(0.6, 1.6, (2, 5, 3)).astype(np.float32)
    ref = _cumprod_ref(x.astype(np.float64), axis, exclusive, reverse).astype(np.float32)
    assert_close(run_module(import_onnx(m, progress=False), {"x": x})["y"], ref, "interp")
    assert_close(build_and_run(compile_onnx(m), {"x": x}, tmp_path)["y"], ref, "C")


def test_cumprod_long_axis_is_refused() -> None:
    with pytest.raises(AutofusionError, match=r"\(CumProd\): CumProd over an axis of 1000"):
        import_onnx(_cumprod_model([1, 1000], 1, 0, 0), progress=False)


def _hardmax_model(opset: int, axis: int):
    g = h.make_graph(
        [h.make_node("Hardmax", ["x"], ["y"], axis=axis)],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [3, 4, 5])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
    )
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_hardmax_matches_onnxruntime(axis: int, tmp_path: Path) -> None:
    m = _hardmax_model(13, axis)
    x = np.random.default_rng(4).uniform(-1, 1, (3, 4, 5)).astype(np.float32)
    x[0, 0, :2] = 0.99  # a tie: the first maximum wins
    ref = onnxruntime_outputs(m, {"x": x})["y"]
    assert_close(run_module(import_onnx(m, progress=False), {"x": x})["y"], ref, "interp")
    assert_close(build_and_run(compile_onnx(m), {"x": x}, tmp_path)["y"], ref, "C")


def test_hardmax_before_opset_13_is_refused() -> None:
    with pytest.raises(AutofusionError, match=r"\(Hardmax\): Hardmax before opset 13"):
        import_onnx(_hardmax_model(11, 1), progress=False)
