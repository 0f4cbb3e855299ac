"""Graph outputs that are constants (folded at import), copied out of the generated C.

gcc 12 at ``-O3 -march=native`` expanded ``memcpy`` of a small ``static const`` array into
wrong vector stores: Cast(initializer [[1, 1], [0.5, -0.75], [0.75, -0.25]]) to int64 came
back as [[1, 1], [1, 1], [0, 0]] (found by the differential fuzzer). Constant copies now go
through an opaque call; these cases cover the shapes and element types that hit it.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import autofusion
from autofusion.lowering.c.testing import onnxruntime_outputs
from autofusion.testing import assert_close

ELEM = {
    "float32": TensorProto.FLOAT,
    "int64": TensorProto.INT64,
    7: TensorProto.INT64,
    6: TensorProto.INT32,
}

CASES = {
    "cast_i64_6": ("Cast", np.array([[1, 1], [0.5, -0.75], [0.75, -0.25]], np.float32), 7),
    "cast_i64_5": ("Cast", np.array([1.0, 1.0, 0.0, 2.0, 0.0], np.float32), 7),
    "cast_i32_12": ("Cast", np.array([1, 1, 1, 0, 0, 0, 3, 0, 0, 0, 0, 5], np.float32), 6),
    "neg_f32_9": ("Neg", np.array([1, 1, 0, 0, 0, 0, 2, 2, 0], np.float32), None),
    "neg_i64_3": ("Neg", np.array([7, 7, 0], np.int64), None),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_constant_output_matches_onnxruntime(case: str) -> None:
    op, w, to = CASES[case]
    attrs = {"to": to} if to is not None else {}
    nodes = [helper.make_node(op, ["w"], ["y"], **attrs), helper.make_node("Relu", ["x"], ["z"])]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [
            helper.make_tensor_value_info(
                "y", ELEM[w.dtype.name if to is None else to], list(w.shape)
            ),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [3]),
        ],
        [numpy_helper.from_array(w, "w")],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    feeds = {"x": np.array([0.5, -1.0, 2.0], np.float32)}
    ref = onnxruntime_outputs(m, feeds)
    got = autofusion.compile(m, threads=1).run(feeds)
    for name in ("y", "z"):
        assert_close(got[name], ref[name], f"{case}: {name}")
