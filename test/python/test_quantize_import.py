"""QuantizeLinear / DequantizeLinear, decomposed by the frontend, against onnxruntime in the
interpreter and the generated C: per-tensor, per-axis (negative axis too) and blocked scales;
int8 / uint8 / int16; run-time activations with ties at .5 (rounded half to even) and values
beyond the quantized range (saturated); a QDQ conv whose constant int8 weights fold at import.
Quantized outputs must be equal, not close."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from autofusion.errors import AutofusionError
from autofusion.frontend import import_onnx
from autofusion.interpreter import run_module
from autofusion.lowering.c.testing import build_and_run, compile_onnx, onnxruntime_outputs
from autofusion.testing import assert_close


def _init(name: str, arr: np.ndarray) -> onnx.TensorProto:
    return nh.from_array(arr, name)


def _qdq_model() -> onnx.ModelProto:
    inits = [
        _init("s_t", np.array(0.05, np.float32)),
        _init("z_t", np.array(3, np.int8)),
        _init("s_a", np.array([0.02, 0.05, 0.1], np.float32)),
        _init("z_a", np.array([0, 7, 250], np.uint8)),
        _init("s_b", np.array([[0.01, 0.2], [0.05, 0.03], [0.1, 0.1]], np.float32)),
        _init("z_b", np.array([[0, -5], [100, 3], [-7, 0]], np.int16)),
        # conv weights: int8, per output channel
        _init("w_q", np.array(np.arange(-27, 27) % 17 - 8, np.int8).reshape(2, 3, 3, 3)),
        _init("w_s", np.array([0.03, 0.05], np.float32)),
        _init("w_z", np.array([0, 1], np.int8)),
    ]
    nodes = [
        h.make_node("QuantizeLinear", ["x", "s_t", "z_t"], ["q_t"], name="q_t"),
        h.make_node("DequantizeLinear", ["q_t", "s_t", "z_t"], ["dq_t"], name="dq_t"),
        h.make_node("QuantizeLinear", ["x", "s_a", "z_a"], ["q_a"], name="q_a", axis=-3),
        h.make_node("DequantizeLinear", ["q_a", "s_a", "z_a"], ["dq_a"], name="dq_a", axis=1),
        h.make_node(
            "QuantizeLinear", ["y", "s_b", "z_b"], ["q_b"], name="q_b", axis=1, block_size=3
        ),
        h.make_node(
            "DequantizeLinear", ["q_b", "s_b", "z_b"], ["dq_b"], name="dq_b", axis=1, block_size=3
        ),
        h.make_node("DequantizeLinear", ["w_q", "w_s", "w_z"], ["w"], name="dq_w", axis=0),
        h.make_node("Conv", ["dq_t", "w"], ["conv"], name="conv", pads=[1, 1, 1, 1]),
    ]
    graph = h.make_graph(
        nodes,
        "g",
        [
            h.make_tensor_value_info("x", T.FLOAT, [1, 3, 4, 5]),
            h.make_tensor_value_info("y", T.FLOAT, [3, 5]),
        ],
        [
            h.make_tensor_value_info(n, t, None)
            for n, t in [
                ("q_t", T.INT8),
                ("dq_t", T.FLOAT),
                ("q_a", T.UINT8),
                ("dq_a", T.FLOAT),
                ("q_b", T.INT16),
                ("dq_b", T.FLOAT),
                ("conv", T.FLOAT),
            ]
        ],
        initializer=inits,
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 21)])


def test_qdq_matches_onnxruntime(tmp_path) -> None:
    model = _qdq_model()
    rng = np.random.default_rng(11)
    x = rng.uniform(-8.0, 8.0, [1, 3, 4, 5]).astype(np.float32)
    # exact ties at .5 of the per-tensor step (0.05): half to even, not away from zero
    x[0, 0, 0, :4] = np.array([0.025, 0.075, -0.025, -0.125], np.float32)
    x[0, 1, 0, 0] = 100.0  # saturates every quantization
    y = rng.uniform(-30.0, 30.0, [3, 5]).astype(np.float32)
    feeds = {"x": x, "y": y}
    ref = onnxruntime_outputs(model, feeds)
    assert float(np.abs(ref["conv"]).max()) > 0.1
    got = run_module(import_onnx(model, progress=False), feeds)
    got_c = build_and_run(compile_onnx(model), feeds, tmp_path)
    for name, r in ref.items():
        for label, out in (("interpreter", got), ("C", got_c)):
            if r.dtype.kind in "iu":
                assert out[name].dtype == r.dtype, (label, name)
                np.testing.assert_array_equal(out[name], r, err_msg=f"{label} {name}")
            else:
                assert_close(out[name], r, f"{label} {name}")


def test_dynamic_quantize_matches_onnxruntime(tmp_path) -> None:
    graph = h.make_graph(
        [h.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"], name="dq")],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [3, 7])],
        [
            h.make_tensor_value_info("y", T.UINT8, None),
            h.make_tensor_value_info("s", T.FLOAT, None),
            h.make_tensor_value_info("z", T.UINT8, None),
        ],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 11)])
    x = np.random.default_rng(5).uniform(-1.5, 4.0, [3, 7]).astype(np.float32)
    ref = onnxruntime_outputs(model, {"x": x})
    assert 0 < int(ref["z"]) < 255
    got = run_module(import_onnx(model, progress=False), {"x": x})
    got_c = build_and_run(compile_onnx(model), {"x": x}, tmp_path)
    for label, out in (("interpreter", got), ("C", got_c)):
        np.testing.assert_array_equal(out["y"], ref["y"], err_msg=label)
        np.testing.assert_array_equal(out["z"], ref["z"], err_msg=label)
        assert_close(out["s"], ref["s"], f"{label} scale")


def _one(op: str, shapes: dict[str, tuple[int, list[int]]], **attrs: object) -> onnx.ModelProto:
    graph = h.make_graph(
        [h.make_node(op, list(shapes), ["out"], name="qn", **attrs)],
        "g",
        [h.make_tensor_value_info(n, t, s) for n, (t, s) in shapes.items()],
        [h.make_tensor_value_info("out", T.UNDEFINED, None)],
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 21)])


@pytest.mark.parametrize(
    ("op", "shapes", "attrs", "msg"),
    [
        ("QuantizeLinear", {"x": (T.FLOAT, [2, 3]), "s": (T.FLOAT, [2])}, {}, r"scale shape \[2\]"),
        (
            "QuantizeLinear",
            {"x": (T.FLOAT, [2, 6]), "s": (T.FLOAT, [2, 3])},
            {"block_size": 3},
            r"should be \[2, 2\]",
        ),
        (
            "QuantizeLinear",
            {"x": (T.INT32, [2]), "s": (T.FLOAT, [])},
            {},
            "must be a floating-point",
        ),
        (
            "DequantizeLinear",
            {"x": (T.INT8, [2]), "s": (T.FLOAT, []), "z": (T.UINT8, [])},
            {},
            "zero point type",
        ),
        (
            "QuantizeLinear",
            {"x": (T.FLOAT, [2]), "s": (T.FLOAT, []), "z": (T.INT32, [])},
            {},
            "quantized type int32 is not supported",
        ),
    ],
)
def test_quantize_refusals_name_the_node(
    op: str, shapes: dict[str, tuple[int, list[int]]], attrs: dict[str, object], msg: str
) -> None:
    with pytest.raises(AutofusionError, match=rf"node 'qn' \({op}\).*{msg}"):
        import_onnx(_one(op, shapes, **attrs), progress=False)
