"""Resize / Upsample on small models, interpreter and generated C against onnxruntime;
the tap tables themselves; refusals."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from autofusion.errors import AutofusionError
from autofusion.frontend import import_onnx
from autofusion.interpreter import run_module
from autofusion.interpreter.resize import ResizeRule, axis_table, is_identity
from autofusion.lowering.c.testing import build_and_run, compile_onnx, onnxruntime_outputs
from autofusion.testing import assert_close

CASES = {
    # x shape, scales or None, sizes or None, attributes
    "bilinear_half_pixel_x2": ([1, 3, 5, 7], [1, 1, 2, 2], None, {"mode": "linear"}),
    "nearest_asymmetric_x3": (
        [2, 2, 4, 3],
        [1, 1, 3, 2],
        None,
        {
            "mode": "nearest",
            "coordinate_transformation_mode": "asymmetric",
            "nearest_mode": "floor",
        },
    ),
    "cubic_sizes_down_up": ([1, 2, 9, 6], None, [1, 2, 5, 11], {"mode": "cubic"}),
    "linear_align_corners_x1_5": (
        [1, 4, 6, 6],
        [1, 1, 1.5, 1.5],
        None,
        {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
    ),
    "cubic_pytorch_half_pixel_down": (
        [1, 3, 12, 10],
        [1, 1, 0.5, 0.6],
        None,
        {"mode": "cubic", "coordinate_transformation_mode": "pytorch_half_pixel"},
    ),
}


def _model(xs, scales, sizes, attrs, opset=13, relu=True):
    rng = np.random.default_rng(sum(xs))
    inits = [numpy_helper.from_array(np.zeros([0], np.float32), "roi")]
    inputs = ["x", "roi"]
    if scales is not None:
        inits.append(numpy_helper.from_array(np.array(scales, np.float32), "scales"))
        inputs.append("scales")
    else:
        inits.append(numpy_helper.from_array(np.zeros([0], np.float32), "scales"))
        inits.append(numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
        inputs += ["scales", "sizes"]
    nodes = [h.make_node("Resize", inputs, ["r"], name="rs", **attrs)]
    # A consumer so the resize sits inside a fused graph, not only at the output.
    nodes.append(h.make_node("Relu" if relu else "Identity", ["r"], ["y"]))
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, xs)],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        initializer=inits,
    )
    feeds = {"x": rng.uniform(-1, 3, xs).astype(np.float32)}
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)]), feeds


def _check(m, feeds, tmp_path):
    ref = onnxruntime_outputs(m, feeds)["y"]
    assert 0.1 < float(np.abs(ref).max()) < 10
    assert_close(run_module(import_onnx(m, progress=False), feeds)["y"], ref, "interpreter")
    got = build_and_run(compile_onnx(m), feeds, tmp_path)["y"]
    assert got.shape == ref.shape
    assert_close(got, ref, "C")


@pytest.mark.parametrize("name", list(CASES))
def test_resize_matches_onnxruntime(name: str, tmp_path) -> None:
    _check(*_model(*CASES[name]), tmp_path)


def test_upsample_opset9_nearest_and_linear(tmp_path) -> None:
    for mode in ("nearest", "linear"):
        g = h.make_graph(
            [h.make_node("Upsample", ["x", "s"], ["y"], mode=mode)],
            "g",
            [h.make_tensor_value_info("x", T.FLOAT, [1, 2, 3, 4])],
            [h.make_tensor_value_info("y", T.FLOAT, None)],
            initializer=[numpy_helper.from_array(np.array([1, 1, 2, 3], np.float32), "s")],
        )
        m = h.make_model(g, opset_imports=[h.make_opsetid("", 9)])
        feeds = {"x": np.random.default_rng(3).uniform(0.5, 2, [1, 2, 3, 4]).astype(np.float32)}
        _check(m, feeds, tmp_path / mode)


def test_tables_per_mode() -> None:
    idx, w = axis_table(ResizeRule("nearest", "asymmetric", "floor"), 2, 6, 3.0)
    assert idx.shape == (6, 1)
    assert idx[:, 0].tolist() == [0, 0, 0, 1, 1, 1]
    idx, w = axis_table(ResizeRule("linear"), 2, 4, 2.0)
    assert idx.tolist() == [[0, 0], [0, 1], [0, 1], [1, 1]]
    # x = -0.25, 0.25, 0.75, 1.25: the edge rows weight two clamped copies of one pixel.
    np.testing.assert_allclose(w, [[0.25, 0.75], [0.75, 0.25], [0.25, 0.75], [0.75, 0.25]])
    idx, w = axis_table(ResizeRule("cubic"), 4, 8, 2.0)
    assert idx.shape == (8, 4)
    np.testing.assert_allclose(w.sum(axis=1), 1, rtol=1e-6)
    # Scale 1 under half_pixel puts weight 1 on one tap: reduced to a copy the importer drops.
    idx, w = axis_table(ResizeRule("linear"), 5, 5, 1.0)
    assert is_identity(5, idx, w)
    # Antialiased linear downsampling by 4 widens the kernel to 8 taps.
    idx, w = axis_table(ResizeRule("linear", antialias=True), 16, 4, 0.25)
    assert idx.shape == (4, 8)
    np.testing.assert_allclose(w.sum(axis=1), 1, rtol=1e-6)


def test_nearest_lowers_to_a_copy_loop() -> None:
    """A 1-tap (nearest) table lowers to loads and stores: no float arithmetic at all,
    while a linear resize of the same shape multiplies by its weights."""
    from xdsl.dialects import arith

    from autofusion.pipeline import lower

    def float_ops(attrs) -> int:
        m, _ = _model([1, 1, 2, 2], [1, 1, 2, 3], None, attrs, relu=False)
        module = compile_onnx(m, fusion=False)
        lower(module, "c")
        return sum(isinstance(o, arith.MulfOp | arith.AddfOp) for o in module.walk())

    assert float_ops({"mode": "nearest"}) == 0
    assert float_ops({"mode": "linear"}) > 0


@pytest.mark.parametrize(
    ("inputs", "attrs", "message"),
    [
        (["x", "", "s_run"], {"mode": "linear"}, r"scales \(input 2\) must be a constant"),
        (["x", "", "s"], {"mode": "bicubic"}, r"attribute 'mode' = 'bicubic' is not supported"),
        (["x", "", "s"], {"nearest_mode": "up"}, r"'nearest_mode' = 'up' is not supported"),
        (["x", "", "s", "z"], {}, r"exactly one of 'scales' and 'sizes'"),
        (["x", "", "s4"], {}, r"scales has 4 values for 2 axes"),
    ],
)
def test_resize_refusals(inputs, attrs, message) -> None:
    g = h.make_graph(
        [h.make_node("Resize", inputs, ["y"], name="up", axes=[2, 3], **attrs)],
        "g",
        [
            h.make_tensor_value_info("x", T.FLOAT, [1, 2, 3, 3]),
            h.make_tensor_value_info("s_run", T.FLOAT, [2]),
        ],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        initializer=[
            numpy_helper.from_array(np.array([2, 2], np.float32), "s"),
            numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "s4"),
            numpy_helper.from_array(np.array([6, 6], np.int64), "z"),
        ],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)])
    with pytest.raises(AutofusionError, match=rf"'up' \(Resize\): .*{message}"):
        import_onnx(m, progress=False)


def test_ascendc_leaves_resize_to_the_host_fallback(tmp_path) -> None:
    """Ascend C has no nn.resize lowering: the project lists it as a fallback, the host
    ``af_run_model`` refuses with that message, and the CPU-model run (kernels on the
    functional model, the resize on the interpreter) still matches onnxruntime."""
    import json

    from autofusion.lowering.ascendc import emit_project, run_ascendc_cpu
    from autofusion.pipeline import lower

    m, feeds = _model(*CASES["bilinear_half_pixel_x2"])
    module = compile_onnx(m)
    lower(module, "ascendc")
    emit_project(module, tmp_path)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["fallback"] == ["nn.resize"]
    assert manifest["full_model_on_npu"] is False
    host = (tmp_path / "host" / "model.cpp").read_text()
    assert "has an Ascend C lowering: nn.resize." in host
    got = run_ascendc_cpu(module, feeds)
    assert_close(got["y"], onnxruntime_outputs(m, feeds)["y"], "ascendc cpu model")


@pytest.mark.parametrize(
    ("scales", "attrs", "message"),
    [
        ([1, 1, float("inf")], {}, "scales must be positive and finite"),
        ([1, 1, float("nan")], {}, "scales must be positive and finite"),
        # 2^23 -> 1 antialiased: ~3.4e7 cubic taps for the one output.
        ([1, 1, 1.2e-7], {"mode": "cubic", "antialias": 1}, "taps per output with antialias"),
    ],
)
def test_resize_refuses_hostile_scales(scales, attrs, message) -> None:
    g = h.make_graph(
        [h.make_node("Resize", ["x", "", "s"], ["y"], name="up", **attrs)],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [1, 1, 1 << 23])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        initializer=[numpy_helper.from_array(np.array(scales, np.float32), "s")],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)])
    with pytest.raises(AutofusionError, match=rf"'up' \(Resize\): .*{message}"):
        import_onnx(m, progress=False)
