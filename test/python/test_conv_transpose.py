"""ConvTranspose with odd shapes (groups, stride 3, output_padding, dilation, 1-d/3-d,
auto_pad, output_shape, a run-time weight), interpreter and C against onnxruntime; refusals."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from autofusion.errors import AutofusionError
from autofusion.frontend import import_onnx
from autofusion.interpreter import run_module
from autofusion.lowering.c.testing import build_and_run, compile_onnx, onnxruntime_outputs
from autofusion.testing import assert_close

CASES = {
    # x shape, W shape, group, attributes
    "groups2_stride3_outpad_dil": (
        [1, 4, 5, 4],
        [4, 3, 3, 2],
        2,
        {"strides": [3, 3], "pads": [1, 0, 2, 1], "output_padding": [1, 2], "dilations": [2, 1]},
    ),
    "1d_dilation3_outpad": (
        [2, 3, 7],
        [3, 2, 4],
        1,
        {"strides": [2], "dilations": [3], "output_padding": [1], "pads": [2, 1]},
    ),
    "3d_groups3_dilated_depth": (
        [1, 6, 3, 4, 3],
        [6, 2, 2, 3, 2],
        3,
        {"strides": [2, 1, 2], "dilations": [2, 1, 1], "pads": [1, 1, 0, 0, 1, 1]},
    ),
    "nonoverlapping_k2s2": ([2, 8, 5, 6], [8, 5, 2, 2], 1, {"strides": [2, 2]}),
    "nonoverlapping_3d": ([1, 3, 2, 3, 2], [3, 4, 2, 3, 1], 1, {"strides": [2, 3, 1]}),
    "same_lower_stride2": (
        [1, 2, 5, 5],
        [2, 3, 3, 3],
        1,
        {"strides": [2, 2], "auto_pad": "SAME_LOWER"},
    ),
    "same_upper_stride3_group2": (
        [1, 4, 4, 3],
        [4, 1, 4, 2],
        2,
        {"strides": [3, 2], "auto_pad": "SAME_UPPER"},
    ),
    "output_shape_stride2": (
        [1, 3, 4, 4],
        [3, 2, 3, 3],
        1,
        {"strides": [2, 2], "output_shape": [10, 9]},
    ),
    "pads_larger_than_kernel": (
        [1, 2, 6, 6],
        [2, 2, 2, 2],
        1,
        {"strides": [3, 3], "pads": [2, 1, 2, 1]},
    ),
}


def _model(xs, ws, group, attrs, weight_input=False, relu=False, bias=True):
    rng = np.random.default_rng(len(xs) * 7 + ws[0])
    cout = ws[1] * group
    fan = ws[0] // group * int(np.prod(ws[2:]))
    w = rng.uniform(-1, 1, ws).astype(np.float32) * np.float32(2.0 / np.sqrt(fan))
    b = rng.uniform(-0.5, 0.5, [cout]).astype(np.float32)
    inputs = ["x", "w", "b"] if bias else ["x", "w"]
    nodes = [h.make_node("ConvTranspose", inputs, ["t" if relu else "y"], group=group, **attrs)]
    if relu:
        nodes.append(h.make_node("Relu", ["t"], ["y"]))
    inits = [numpy_helper.from_array(b, "b")] if bias else []
    graph_inputs = [h.make_tensor_value_info("x", T.FLOAT, xs)]
    if weight_input:
        graph_inputs.append(h.make_tensor_value_info("w", T.FLOAT, ws))
    else:
        inits.append(numpy_helper.from_array(w, "w"))
    g = h.make_graph(
        nodes, "g", graph_inputs, [h.make_tensor_value_info("y", T.FLOAT, None)], initializer=inits
    )
    feeds = {"x": rng.uniform(-1, 1, xs).astype(np.float32)}
    if weight_input:
        feeds["w"] = w
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), feeds


def _check(m, feeds, tmp_path, fusion=True):
    ref = onnxruntime_outputs(m, feeds)["y"]
    assert 0.1 < float(np.abs(ref).max()) < 10
    assert_close(run_module(import_onnx(m, progress=False), feeds)["y"], ref, "interpreter")
    got = build_and_run(compile_onnx(m, fusion=fusion), feeds, tmp_path)["y"]
    assert_close(got, ref, "C")


@pytest.mark.parametrize("name", list(CASES))
def test_conv_transpose_matches_onnxruntime(name: str, tmp_path) -> None:
    xs, ws, group, attrs = CASES[name]
    _check(*_model(xs, ws, group, attrs), tmp_path)


def test_conv_transpose_runtime_weight(tmp_path) -> None:
    xs, ws, group, attrs = CASES["groups2_stride3_outpad_dil"]
    _check(*_model(xs, ws, group, attrs, weight_input=True), tmp_path)
    xs, ws, group, attrs = CASES["nonoverlapping_k2s2"]
    _check(*_model(xs, ws, group, attrs, weight_input=True), tmp_path / "k2s2")


@pytest.mark.parametrize("name", ["nonoverlapping_k2s2", "groups2_stride3_outpad_dil"])
def test_conv_transpose_relu_fused(name: str, tmp_path) -> None:
    xs, ws, group, attrs = CASES[name]
    m, feeds = _model(xs, ws, group, attrs, relu=True)
    _check(m, feeds, tmp_path)
    _check(m, feeds, tmp_path / "unfused", fusion=False)


def test_conv_transpose_without_bias(tmp_path) -> None:
    xs, ws, group, attrs = CASES["same_lower_stride2"]
    _check(*_model(xs, ws, group, attrs, bias=False), tmp_path)


@pytest.mark.parametrize(
    ("ws", "group", "attrs", "message"),
    [
        ([4, 3, 3, 3], 3, {}, "divisible by group 3"),
        ([5, 3, 3, 3], 1, {}, "needs 4 input channels"),
        ([4, 3, 3, 3], 1, {"kernel_shape": [2, 2]}, "kernel_shape"),
        ([4, 3, 3, 3], 1, {"strides": [0, 1]}, "must be >= 1"),
        ([4, 3, 3, 3], 1, {"pads": [5, 5, 5, 5]}, "not positive"),
        ([4, 3, 3, 3], 1, {"output_shape": [7]}, "output_shape"),
        ([4, 3, 3, 3], 1, {"auto_pad": "SAME"}, "unknown auto_pad"),
    ],
)
def test_conv_transpose_refusals(ws, group, attrs, message) -> None:
    g = h.make_graph(
        [h.make_node("ConvTranspose", ["x", "w"], ["y"], name="up", group=group, **attrs)],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [1, 4, 5, 5])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.zeros(ws, np.float32), "w")],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    with pytest.raises(AutofusionError, match=rf"'up' \(ConvTranspose\): .*{message}"):
        import_onnx(m, progress=False)


def _sweep_cases():
    """Kernel 1..5 x stride 1..3 (2-d and 1-d), with pads, output padding, groups, dilation."""
    cases = []
    for k in range(1, 6):
        for s in range(1, 4):
            pad = (k - 1) // 2
            op = min(s - 1, 1)
            cases.append(([1, 4, 5, 4], [4, 3, k, k], 1, {"strides": [s, s], "pads": [pad] * 4}))
            cases.append(
                (
                    [1, 4, 4, 5],
                    [4, 2, k, max(1, k - 1)],
                    2,
                    {"strides": [s, 3], "pads": [pad, 0, 0, pad], "output_padding": [op, 1]},
                )
            )
            cases.append(([2, 3, 6], [3, 2, k], 1, {"strides": [s], "pads": [0, pad]}))
            if k > 1:
                cases.append(
                    ([1, 2, 4, 4], [2, 2, k, 2], 1, {"strides": [s, 2], "dilations": [2, 1]})
                )
    return cases


SWEEP = _sweep_cases()


@pytest.mark.parametrize("case", range(len(SWEEP)))
def test_conv_transpose_sweep_interpreter(case: int) -> None:
    xs, ws, group, attrs = SWEEP[case]
    m, feeds = _model(xs, ws, group, attrs)
    ref = onnxruntime_outputs(m, feeds)["y"]
    assert 0.1 < float(np.abs(ref).max()) < 10
    got = run_module(import_onnx(m, progress=False), feeds)["y"]
    assert_close(got, ref, "interpreter")  # the project tolerance (autofusion.testing)


@pytest.mark.parametrize("case", range(0, len(SWEEP), 5))
def test_conv_transpose_sweep_c(case: int, tmp_path) -> None:
    xs, ws, group, attrs = SWEEP[case]
    _check(*_model(xs, ws, group, attrs), tmp_path)
