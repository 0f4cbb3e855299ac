"""A MatMul's bias along its output columns as the built-in clamp epilogue's column bias.

``MatMul`` + ``Add(bias)`` (+ ``Add(residual)``) (+ ``Relu`` / ``Clip``), a Linear layer and a
transformer's residual branch, lowers to ``afrt_epi_bias_clamp`` (docs/runtime.md, "Fused
epilogues"): the AVX-512 GEMM core adds the bias, the residual and the clamp to the
accumulators before their only store; its edge tiles and every other ISA call
``afrt_epi_bias_clamp_fn``. One model holds the four forms on 37 rows (a 12-row tile and an
edge) by 70 columns (two 32-column tiles and a 6-column edge) with a batch dimension; it is
checked against onnxruntime natively at one and two threads and on x86-64-v2.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import autofusion
from autofusion.lowering.c.testing import onnxruntime_outputs
from autofusion.testing import assert_close

B, M, K, N = 2, 37, 48, 70
FORMS = ("bias", "bias_res", "bias_relu", "bias_res_clip")


def _model() -> onnx.ModelProto:
    rng = np.random.default_rng(7)
    inits, nodes, outs = [], [], []
    for i, form in enumerate(FORMS):
        w = (rng.standard_normal((K, N)) / np.sqrt(K)).astype(np.float32)
        b = rng.uniform(-1.0, 1.0, N).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes += [
            helper.make_node("MatMul", ["x", f"w{i}"], [f"m{i}"]),
            helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"]),
        ]
        last = f"a{i}"
        if "res" in form:  # the residual first, as exporters write it
            nodes.append(helper.make_node("Add", ["r", last], [f"s{i}"]))
            last = f"s{i}"
        if form.endswith("relu"):
            nodes.append(helper.make_node("Relu", [last], [f"y{i}"]))
            last = f"y{i}"
        elif form.endswith("clip"):
            lo, hi = (
                numpy_helper.from_array(np.float32(0.0), "lo"),
                numpy_helper.from_array(np.float32(1.5), "hi"),
            )
            if "lo" not in {t.name for t in inits}:
                inits += [lo, hi]
            nodes.append(helper.make_node("Clip", [last, "lo", "hi"], [f"y{i}"]))
            last = f"y{i}"
        outs.append(helper.make_tensor_value_info(last, TensorProto.FLOAT, [B, M, N]))
    graph = helper.make_graph(
        nodes,
        "matmul_bias",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, M, K]),
            helper.make_tensor_value_info("r", TensorProto.FLOAT, [B, M, N]),
        ],
        outs,
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(("cpu", "threads"), [("native", 1), ("native", 2), ("x86-64-v2", 1)])
def test_column_bias_epilogue_matches_onnxruntime(cpu: str, threads: int) -> None:
    model = _model()
    rng = np.random.default_rng(11)
    feeds = {
        "x": rng.standard_normal((B, M, K)).astype(np.float32),
        "r": rng.standard_normal((B, M, N)).astype(np.float32),
    }
    feeds["x"][1, 5, 7] = np.nan  # NaN runs through the bias, the residual and the clamp
    ref = onnxruntime_outputs(model, feeds)
    assert all(0.1 < np.nanmax(np.abs(r)) < 10 for r in ref.values())  # ordinary size
    m = autofusion.compile(model, cpu=cpu, threads=threads, cache=False)
    try:
        src = (m.directory / "model.c").read_text()
        assert src.count("afrt_epi_bias_clamp_fn") == len(FORMS)
        assert "_epilogue(void" not in src  # no generated epilogue function is left
        got = m.run(feeds)
    finally:
        m.close()
    for name, r in ref.items():
        assert np.array_equal(np.isnan(got[name]), np.isnan(r)), name
        assert_close(got[name], r, f"{name} ({cpu}, {threads} thread(s))")
