"""1x1 convolutions on small maps with the operands swapped (``afrt_conv1x1t_f32``, algo
``gemm_1x1_t``) against onnxruntime.

Maps of 2, 7, 15 and 16 positions (1, 49 and 50 among the shapes the rule keeps on
gemm_1x1), channel counts that are not multiples of 16, several k blocks of the GEMM core
(more than 256 input channels), groups, a batch of two, a weight fed
at run time (packed per call, not cached) and every fused epilogue of ``conv_epilogues``;
built for this CPU (AVX-512 here: 7-row tiles on 7 positions) and for x86-64-v3, at one and two
threads, and once under ASan/UBSan. ``clib.conv_algo`` against the runtime's own rule is in
``test_c_dwconv.py`` (``test_conv_algo_matches_the_runtime``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from conv_epilogues import checked_conv_algos, epilogue_nodes
from onnx import TensorProto, helper, numpy_helper

import autofusion
from autofusion.lowering.c.testing import onnxruntime_outputs
from autofusion.testing import assert_close

F = TensorProto.FLOAT

# c, k, h, w, epilogue, group, batch, weight fed at run time. The first seven take
# gemm_1x1_t; the rest are shapes the rule keeps on gemm_1x1 (a 1x1 map, 49 and 50
# positions, a 13x13 map, fewer input channels than AFRT_1X1T_MIN_C), checked the same way.
CASES: list[tuple[int, int, int, int, str, int, int, bool]] = [
    (512, 513, 4, 4, "silu", 1, 1, False),
    (520, 600, 2, 1, "relu", 1, 1, False),
    (530, 520, 3, 5, "bias_add_relu", 1, 1, False),
    (515, 44, 1, 7, "relu6", 1, 1, False),
    (1040, 1040, 4, 4, "bias", 2, 1, False),
    (512, 520, 4, 4, "none", 1, 2, False),
    (520, 512, 4, 4, "relu", 1, 1, True),
    (600, 530, 1, 1, "silu", 1, 1, False),
    (530, 520, 7, 7, "bias_add_relu", 1, 1, False),
    (515, 544, 5, 10, "relu6", 1, 1, False),
    (24, 40, 13, 13, "relu", 1, 1, False),
    (256, 512, 4, 4, "silu", 1, 1, False),
]
WANT = ["gemm_1x1_t"] * 7 + ["gemm_1x1"] * (len(CASES) - 7)


def _model(seed: int) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """One model holding every case on its own input ``x{i}``, output ``y{i}``, and its feeds."""
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    ins: list[onnx.ValueInfoProto] = []
    outs: list[onnx.ValueInfoProto] = []
    feeds: dict[str, np.ndarray] = {}
    for i, (c, k, h, w, epi, group, n, fed) in enumerate(CASES):
        wt = (rng.uniform(-1, 1, (k, c // group, 1, 1)) / np.sqrt(c // group)).astype(np.float32)
        conv_in = [f"x{i}", f"w{i}"]
        if fed:
            ins.append(helper.make_tensor_value_info(f"w{i}", F, list(wt.shape)))
            feeds[f"w{i}"] = wt
        else:
            inits.append(numpy_helper.from_array(wt, f"w{i}"))
        if epi.startswith("bias"):
            bias = rng.uniform(-1, 1, k).astype(np.float32)
            inits.append(numpy_helper.from_array(bias, f"b{i}"))
            conv_in.append(f"b{i}")
        y = f"y{i}"
        conv_out = y if epi in ("none", "bias") else f"c{i}"
        nodes.append(helper.make_node("Conv", conv_in, [conv_out], name=f"conv{i}",
                                      kernel_shape=[1, 1], group=group))  # fmt: skip
        epi_nodes, epi_inits = epilogue_nodes(rng, i, epi, conv_out, y, (n, k, h, w))
        nodes += epi_nodes
        inits += epi_inits
        ins.append(helper.make_tensor_value_info(f"x{i}", F, [n, c, h, w]))
        outs.append(helper.make_tensor_value_info(y, F, [n, k, h, w]))
        feeds[f"x{i}"] = rng.uniform(-2, 2, (n, c, h, w)).astype(np.float32)
    graph = helper.make_graph(nodes, "conv1x1t", ins, outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), feeds


@pytest.mark.parametrize(("cpu", "threads"), [("native", 1), ("native", 2), ("x86-64-v3", 1)])
def test_small_map_1x1_matches_onnxruntime(cpu: str, threads: int) -> None:
    model, feeds = _model(seed=threads)
    by_origin = checked_conv_algos(model, feeds, cpu, threads)
    assert [by_origin[f"conv{i}"] for i in range(len(CASES))] == WANT


def test_small_map_1x1_nan_propagates() -> None:
    """A NaN input poisons exactly the outputs of its position (all channels), as in ONNX."""
    model, feeds = _model(seed=5)
    feeds["x2"][0, 7, 2, 4] = np.nan
    feeds["x0"][0, 1, 3, 0] = np.inf
    ref = onnxruntime_outputs(model, feeds)
    assert np.isnan(ref["y2"]).any()
    m = autofusion.compile(model, cache=False)
    try:
        got = m.run(feeds)
        for name, r in ref.items():
            assert_close(got[name], r, f"{name} with NaN/inf")
    finally:
        m.close()


def test_small_map_1x1_sanitizer_clean(tmp_path: Path) -> None:
    """The swapped path (masked packing of X^T, 7-row tiles, transposed stores, two threads)
    under ASan/UBSan."""
    from autofusion.lowering.c.testing import compile_onnx, sanitized_model_c
    from autofusion.policy.report import conv_algo_rows

    model, feeds = _model(seed=11)
    module = compile_onnx(model, fusion=True)
    sanitized_model_c(model, feeds, tmp_path, module)  # lowers the module in place
    algos = [r["conv_algo"] for r in conv_algo_rows(module)]
    assert algos.count("gemm_1x1_t") == 7, algos
