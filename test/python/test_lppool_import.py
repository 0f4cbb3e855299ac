"""LpPool (opset 18: p, pads, strides, dilations, ceil_mode), decomposed by the frontend, against
onnxruntime in the interpreter and the generated C (all cases in one model, one C build). The
ceil-mode cases have windows that overhang the padded input, the one place where the average
-pool form would divide wrongly, so they take the depthwise-convolution form."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from autofusion.errors import AutofusionError
from autofusion.frontend import import_onnx
from autofusion.interpreter import run_module
from autofusion.lowering.c.testing import build_and_run, compile_onnx, onnxruntime_outputs
from autofusion.testing import assert_close

# (input shape, attributes)
CASES: list[tuple[list[int], dict[str, object]]] = [
    ([1, 3, 9], {"kernel_shape": [3], "p": 1}),
    ([1, 2, 7, 8], {"kernel_shape": [3, 3], "p": 2, "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ([2, 2, 6, 7], {"kernel_shape": [2, 3], "p": 3, "dilations": [2, 1]}),
    ([1, 3, 7, 7], {"kernel_shape": [2, 2], "p": 2, "strides": [2, 2], "ceil_mode": 1}),
    ([1, 2, 9], {"kernel_shape": [3], "p": 4, "strides": [2], "pads": [1, 0], "ceil_mode": 1}),
    ([1, 2, 4, 5, 6], {"kernel_shape": [2, 2, 3], "p": 2, "auto_pad": "SAME_UPPER"}),
]


def _model() -> onnx.ModelProto:
    nodes, inputs, outputs = [], [], []
    for n, (shape, attrs) in enumerate(CASES):
        inputs.append(h.make_tensor_value_info(f"x{n}", T.FLOAT, shape))
        outputs.append(h.make_tensor_value_info(f"y{n}", T.FLOAT, None))
        nodes.append(h.make_node("LpPool", [f"x{n}"], [f"y{n}"], name=f"lp{n}", **attrs))
    graph = h.make_graph(nodes, "g", inputs, outputs)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 18)])


def test_lppool_matches_onnxruntime(tmp_path) -> None:
    model = _model()
    rng = np.random.default_rng(3)
    feeds = {
        f"x{n}": rng.uniform(-1.0, 1.0, shape).astype(np.float32)
        for n, (shape, _) in enumerate(CASES)
    }
    ref = onnxruntime_outputs(model, feeds)
    got = run_module(import_onnx(model, progress=False), feeds)
    got_c = build_and_run(compile_onnx(model), feeds, tmp_path)
    for name, r in ref.items():
        assert 0.1 < float(np.abs(r).max()) < 10, name
        assert_close(got[name], r, f"{name} interpreter")
        assert_close(got_c[name], r, f"{name} C")


def test_lppool_refusals_name_the_node() -> None:
    def one(shape: list[int], **attrs: object) -> onnx.ModelProto:
        graph = h.make_graph(
            [h.make_node("LpPool", ["x"], ["y"], name="lp", **attrs)],
            "g",
            [h.make_tensor_value_info("x", T.FLOAT, shape)],
            [h.make_tensor_value_info("y", T.FLOAT, None)],
        )
        return h.make_model(graph, opset_imports=[h.make_opsetid("", 18)])

    with pytest.raises(AutofusionError, match=r"node 'lp' \(LpPool\).*p must be a positive"):
        import_onnx(one([1, 1, 5, 5], kernel_shape=[2, 2], p=0), progress=False)
    with pytest.raises(AutofusionError, match=r"node 'lp' \(LpPool\).*overhang"):
        import_onnx(
            one([1, 1, 5, 5, 5], kernel_shape=[2, 2, 2], strides=[2, 2, 2], ceil_mode=1),
            progress=False,
        )
