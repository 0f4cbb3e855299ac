"""LayerNorm rows in C (``afrt_layernorm_f32``, afrt.h): the sums in four vectors on AVX-512
builds and in AFRT_LANES_ lanes elsewhere, whole vectors then a masked tail, rows split over
the threads when there are enough of them.

One model holds rows of 1 to 769 columns (each side of 16 and 64, a tail of every length
class), a broadcast scale and bias (one value), no bias, a normalisation over the last two
dims, and rows far from zero (mean 20, spread 0.5).
Built for this CPU and for x86-64-v2 (the lane path), at one and two threads, and under
ASan/UBSan: every output matches onnxruntime.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import autofusion
from autofusion.lowering.c.testing import onnxruntime_outputs, sanitized_model_c
from autofusion.testing import assert_close

#: (input shape, axis, scale shape, bias shape or None, offset of x)
CASES = [
    ((3, 1), -1, (1,), (1,), 0.0),
    ((5, 15), -1, (15,), (15,), 0.0),
    ((4, 16), -1, (16,), None, 0.0),
    ((3, 17), -1, (17,), (17,), 0.0),
    ((2, 63), -1, (63,), (63,), 0.0),
    ((2, 64), -1, (1,), (1,), 0.0),
    ((2, 65), -1, (65,), (65,), 20.0),
    ((7, 96), -1, (96,), (96,), 0.0),
    ((2, 3, 5, 7), 1, (3, 5, 7), (3, 5, 7), 0.0),
    ((1, 129, 768), -1, (768,), (768,), 20.0),
    ((2, 769), -1, (769,), None, 0.0),
]  # fmt: skip


def _model() -> onnx.ModelProto:
    rng = np.random.default_rng(5)
    nodes, inputs, outputs, inits = [], [], [], []
    for i, (shape, axis, s_shape, b_shape, _) in enumerate(CASES):
        inputs.append(helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, shape))
        outputs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, shape))
        scale = rng.uniform(0.5, 1.5, s_shape).astype(np.float32)
        inits.append(numpy_helper.from_array(scale, f"s{i}"))
        args = [f"x{i}", f"s{i}"]
        if b_shape is not None:
            bias = rng.uniform(-0.5, 0.5, b_shape).astype(np.float32)
            inits.append(numpy_helper.from_array(bias, f"b{i}"))
            args.append(f"b{i}")
        node = helper.make_node("LayerNormalization", args, [f"y{i}"], axis=axis, epsilon=1e-5)
        nodes.append(node)
    g = helper.make_graph(nodes, "layernorm_rows", inputs, outputs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(6)
    feeds = {}
    for i, (shape, _, _, _, offset) in enumerate(CASES):
        spread = 0.5 if offset else 2.0
        x = offset + spread * rng.standard_normal(shape) + rng.uniform(-1, 1, (*shape[:-1], 1))
        feeds[f"x{i}"] = x.astype(np.float32)
    return feeds


@pytest.mark.parametrize(("cpu", "threads"), [("native", 1), ("native", 2), ("x86-64-v2", 2)])
def test_layernorm_rows_match_onnxruntime(cpu: str, threads: int) -> None:
    model, feeds = _model(), _feeds()
    ref = onnxruntime_outputs(model, feeds)
    m = autofusion.compile(model, cpu=cpu, threads=threads, cache=False)
    try:
        got = m.run(feeds)
        src = (Path(m.directory) / "model.c").read_text()
    finally:
        m.close()
    assert src.count("afrt_layernorm_f32(") == len(CASES)
    for name, r in ref.items():
        if name != "y0":  # a row of one value normalises to 0: the output is the bias
            assert 0.5 < float(np.abs(r).max()) < 10.0, name
        assert_close(got[name], r, f"{name} ({cpu}, {threads} thread(s))")


def test_layernorm_rows_under_sanitizers(tmp_path: Path) -> None:
    src = sanitized_model_c(_model(), _feeds(), tmp_path)
    assert src.count("afrt_layernorm_f32(") == len(CASES)
