"""The fused-epilogue variants the conv kernel tests (test_c_dwconv.py, test_c_winograd.py)
put after a Conv whose output is ``conv_out``: ONNX nodes writing ``y`` and their constants."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

#: "none" and "bias" add no node: the conv writes ``y`` itself (bias as its third input)
EPILOGUES = ("none", "bias", "relu", "relu6", "silu", "bias_add_relu")


def epilogue_nodes(
    rng: np.random.Generator, i: int, epi: str, conv_out: str, y: str, out_shape: tuple[int, ...]
) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """Nodes ``conv_out -> y`` for ``epi`` (names suffixed ``i``) and their initializers;
    ``bias_add_relu`` adds a residual of ``out_shape`` drawn from ``rng``."""
    if epi in ("none", "bias"):
        return [], []
    if epi == "relu":
        return [helper.make_node("Relu", [conv_out], [y], name=f"relu{i}")], []
    if epi == "relu6":
        inits = [numpy_helper.from_array(np.array(0, np.float32), f"lo{i}"),
                 numpy_helper.from_array(np.array(6, np.float32), f"hi{i}")]  # fmt: skip
        return [
            helper.make_node("Clip", [conv_out, f"lo{i}", f"hi{i}"], [y], name=f"clip{i}")
        ], inits
    if epi == "silu":
        return [helper.make_node("Sigmoid", [conv_out], [f"s{i}"], name=f"sig{i}"),
                helper.make_node("Mul", [conv_out, f"s{i}"], [y], name=f"mul{i}")], []  # fmt: skip
    if epi == "bias_add_relu":
        res = rng.uniform(-1, 1, out_shape).astype(np.float32)
        return [helper.make_node("Add", [conv_out, f"r{i}"], [f"a{i}"], name=f"add{i}"),
                helper.make_node("Relu", [f"a{i}"], [y], name=f"relu{i}")], [
            numpy_helper.from_array(res, f"r{i}")
        ]  # fmt: skip
    raise ValueError(f"unknown epilogue {epi!r}")
