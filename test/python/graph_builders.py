"""Small float ONNX graphs for the tests: a model from nodes, named input shapes and output
names (their shapes left to inference), initializers from numpy arrays. Opset 17, IR 8."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def float_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: dict[str, Sequence[int]],
    outputs: Sequence[str],
    inits: dict[str, np.ndarray] | None = None,
    name: str = "g",
) -> onnx.ModelProto:
    """A model of ``nodes`` with float inputs ``{name: shape}``, float outputs ``outputs``
    (shapes unset) and initializers ``{name: array}``."""
    F = TensorProto.FLOAT
    graph = helper.make_graph(
        list(nodes),
        name,
        [helper.make_tensor_value_info(n, F, list(s)) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, F, None) for n in outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in (inits or {}).items()],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def node(op: str, ins: Sequence[str], outs: Sequence[str], **attrs: Any) -> onnx.NodeProto:
    """``helper.make_node`` with list arguments."""
    return helper.make_node(op, list(ins), list(outs), **attrs)
