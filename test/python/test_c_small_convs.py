"""Small convolutions and pools (output widths 1..17, 1..3 channels) build with ``-Werror``
and match onnxruntime.

afrt's AVX-512 conv paths read 16 outputs a step with masked loads; at stride 2 a step reads
two 16-lane halves. The depthwise direct path and the im2col row segments used to form the
second half's address (``src + 16``) even when that half had no lanes, and the im2col
segments formed ``row + base`` for a step starting in the left padding (a pointer before the
row, before the buffer for the first row): undefined pointer arithmetic that gcc reports as
``-Warray-bounds`` once it sees the buffer's bounds (a small ``static const`` input). The
models here cover every output width 1..17 at strides 1 and 2 with and without padding, with
the input a small constant (so gcc sees its bounds) and as a run-time feed. One model per
kind holds the whole grid, so the test costs a few compiles.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from autofusion.lowering.c.testing import assert_close, build, compile_onnx, onnxruntime_outputs
from autofusion.runtime.loader import ModelLibrary

F = TensorProto.FLOAT
WIDTHS = range(1, 18)


def _cases() -> list[tuple[int, int, int, int]]:
    """(channels, output width, stride, pad) with the input width that gives that output."""
    return [(c, ow, s, p) for c in (1, 2, 3) for ow in WIDTHS for s in (1, 2) for p in (0, 1)
            if c == 1 or ow in (1, 8, 15, 16, 17)]  # fmt: skip


def _in_width(ow: int, k: int, s: int, p: int) -> int:
    return max(1, (ow - 1) * s + k - 2 * p)


def _grid_model(kind: str, rng: np.random.Generator) -> tuple[onnx.ModelProto, dict]:
    """One model holding a conv (``dw``: depthwise, ``conv``: dense, ``const_x``: the input a
    constant and the weight a feed) or a pool per case; returns it and its feeds."""
    nodes, inits, ins, outs = [], [], [], []
    feeds: dict[str, np.ndarray] = {}
    for i, (c, ow, s, p) in enumerate(_cases()):
        k = 3
        w_in = _in_width(ow, k, s, p)
        xs = [1, c, 2, w_in]
        x = rng.standard_normal(xs).astype(np.float32)
        pads = [0, p, 0, p]
        y = f"y{i}"
        if kind in ("maxpool", "avgpool"):
            op = "MaxPool" if kind == "maxpool" else "AveragePool"
            nodes.append(helper.make_node(op, [f"x{i}"], [y], kernel_shape=[1, k],
                                          strides=[1, s], pads=pads))  # fmt: skip
        else:
            group = c if kind == "dw" else 1
            wshape = [c, c // group, 1, k]
            w = (rng.standard_normal(wshape) / np.sqrt(k * c // group)).astype(np.float32)
            nodes.append(helper.make_node("Conv", [f"x{i}", f"w{i}"], [y], kernel_shape=[1, k],
                                          strides=[1, s], pads=pads, group=group))  # fmt: skip
            if kind == "const_x":
                ins.append(helper.make_tensor_value_info(f"w{i}", F, wshape))
                feeds[f"w{i}"] = w
            else:
                inits.append(numpy_helper.from_array(w, f"w{i}"))
        if kind == "const_x":
            inits.append(numpy_helper.from_array(x, f"x{i}"))
        else:
            ins.append(helper.make_tensor_value_info(f"x{i}", F, xs))
            feeds[f"x{i}"] = x
        outs.append(helper.make_tensor_value_info(y, F, None))
    g = helper.make_graph(nodes, kind, ins, outs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m, feeds


@pytest.mark.parametrize("kind", ["dw", "conv", "const_x", "maxpool", "avgpool"])
def test_small_convs_and_pools_build_and_match(kind: str, tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    model, feeds = _grid_model(kind, rng)
    lib = ModelLibrary(build(compile_onnx(model), tmp_path), tmp_path / "weights.bin", 1)
    ref = onnxruntime_outputs(model, feeds)
    got = lib.run(feeds)
    lib.close()
    assert 0.1 <= max(float(np.abs(r).max()) for r in ref.values()) <= 10
    for name, r in ref.items():
        assert_close(got[name], r, name)
