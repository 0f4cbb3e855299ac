"""A MatMul of ``[*batch, m, k]`` tokens by one weight matrix runs as one GEMM of all the rows.

Swin's linear layers act on ``[1, H, W, C]`` (and ``[windows, 49, C]``) tensors; lowered as a
batched call they were ``H`` GEMMs of ``W`` rows, each streaming the whole weight matrix
(``ops.matmul_rows_fold``). One model holds the epilogue shapes that meet the folded rows: a
generated epilogue with a per-column bias, the built-in one with a full residual, a residual
broadcast inside the rows (indexed through the unravelled row), B with a leading 1, and a
batched B that must stay batched. Built natively and for x86-64-v2 (the AVX-512 direct-A
core and the portable one), run at 1 and 3 threads, against onnxruntime.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from autofusion.lowering.c.testing import (
    assert_close,
    compile_onnx,
    emit_lowered,
    onnxruntime_outputs,
)
from autofusion.runtime import toolchain
from autofusion.runtime.build import BuildOptions, build_shared
from autofusion.runtime.loader import ModelLibrary

X = (2, 7, 5, 24)  # 70 rows: full 12-row tiles and an edge; N = 40: a whole and a half panel
N = 40


def _model(rng: np.random.Generator) -> onnx.ModelProto:
    k = X[-1]

    def weight(name: str, shape: tuple[int, ...]) -> str:
        w = (rng.standard_normal(shape) / np.sqrt(k)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, name))
        return name

    def node(op: str, ins: list[str], out: str) -> str:
        nodes.append(helper.make_node(op, ins, [out]))
        return out

    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []
    b1 = weight("b1", (N,))
    r3 = weight("r3", (7, 1, N))
    m1 = node("MatMul", ["x", weight("w1", (k, N))], "m1")
    node("Relu", [node("Add", [m1, b1], "a1")], "y1")
    node("Add", [node("MatMul", ["x", weight("w2", (k, N))], "m2"), "r"], "y2")
    m3 = node("MatMul", ["x", weight("w3", (k, N))], "m3")
    node("Sigmoid", [node("Add", [m3, r3], "a3")], "y3")
    node("MatMul", ["x", weight("w4", (1, k, N))], "y4")
    node("MatMul", ["x", weight("w5", (X[1], k, N))], "y5")  # one B per batch index
    out = (*X[:-1], N)
    g = helper.make_graph(
        nodes,
        "matmul_rows",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, X),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, out)],
        [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, out) for i in range(1, 6)],
        initializer=inits,
    )  # fmt: skip
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("cpu", ["native", "x86-64-v2"])
def test_batched_rows_by_one_matrix_match_onnxruntime(cpu: str, tmp_path: Path) -> None:
    if toolchain.is_cross(cpu):
        pytest.skip(f"{cpu} builds do not run on this machine")
    rng = np.random.default_rng(7)
    model = _model(rng)
    feeds = {
        "x": rng.uniform(-1, 1, X).astype(np.float32),
        "r": rng.uniform(-1, 1, (*X[:-1], N)).astype(np.float32),
    }
    ref = onnxruntime_outputs(model, feeds)
    assert all(0.1 <= float(np.abs(v).max()) <= 10 for v in ref.values())
    emit_lowered(compile_onnx(model), tmp_path)
    # four calls of 70 rows, one batched per B: the fold fired where it may and only there
    calls = re.findall(r"afrt_matmul_f32\(INT64_C\((\d+)\), INT64_C\((\d+)\)",
                       (tmp_path / "model.c").read_text())  # fmt: skip
    assert sorted(calls) == [("1", "70")] * 4 + [("14", "5")]
    so = build_shared(tmp_path, BuildOptions(cpu=cpu))
    for threads in (1, 3):
        lib = ModelLibrary(so, tmp_path / "weights.bin", threads)
        try:
            got = lib.run(feeds)
        finally:
            lib.close()
        for name, r in ref.items():
            assert_close(got[name], r, f"{name} ({cpu}, {threads} thread(s))")
