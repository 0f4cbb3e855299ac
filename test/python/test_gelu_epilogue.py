"""A MatMul's bias + GELU (erf form) as afrt.h's built-in GELU epilogue.

``MatMul`` + ``Add(bias)`` + GELU as exporters write it (``x * 0.5 * (1 + erf(x / sqrt 2))``,
which ``recognize-gelu`` makes ``nn.gelu``), a transformer MLP's fc1, lowers to
``afrt_epi_gelu`` (docs/runtime.md, "Built-in GELU epilogue"): the AVX-512 GEMM core adds the
bias in registers and runs the GELU over each tile while it is in L1; edge tiles and other
ISAs call ``afrt_epi_gelu_fn``. Checked against onnxruntime on 37 rows (a 12-row tile and an
edge) by 70 columns (two 32-column tiles and a 6-column edge) with a batch dimension, natively
at one and two threads and on x86-64-v2, NaN and infinities included, and again with K = 300
and N = 582 (two k blocks, a 512-column block and one of 70: the direct-A kernels' prefetch
of the next packed weight block, ``afrt_next_b_``); and its accuracy
against float64 over a dense sweep of [-12, 12] (a MatMul by the identity feeding the GELU).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import autofusion
from autofusion.lowering.c.testing import onnxruntime_outputs
from autofusion.runtime import gelu_table
from autofusion.testing import assert_close

B, M = 2, 37


def _model(
    w: np.ndarray, b: np.ndarray | None, rows: int, batch: int, w_left: bool = False
) -> onnx.ModelProto:
    """x @ w (+ b), then GELU as exporters write it; no Add when b is None. w_left: w @ x
    instead, the constant w (rows x K) on the left of the input x (batch x K x N)."""
    if w_left:
        (rows, k), n = w.shape, (len(b) if b is not None else rows)
        x_shape, operands = [batch, k, n], ["w", "x"]
    else:
        (k, n), x_shape, operands = w.shape, [batch, rows, w.shape[0]], ["x", "w"]
    c = {
        "sqrt2": np.float32(math.sqrt(2.0)),
        "one": np.float32(1.0),
        "half": np.float32(0.5),
    }
    inits = [numpy_helper.from_array(w, "w")]
    inits += [numpy_helper.from_array(v, name) for name, v in c.items()]
    nodes = [helper.make_node("MatMul", operands, ["m" if b is not None else "y"])]
    if b is not None:
        inits.append(numpy_helper.from_array(b, "b"))
        nodes.append(helper.make_node("Add", ["m", "b"], ["y"]))
    nodes += [
        helper.make_node("Div", ["y", "sqrt2"], ["t"]),
        helper.make_node("Erf", ["t"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["s"]),
        helper.make_node("Mul", ["y", "s"], ["p"]),
        helper.make_node("Mul", ["p", "half"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "fc1_gelu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [batch, rows, n])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(("K", "N"), [(48, 70), (300, 582)])
@pytest.mark.parametrize(("cpu", "threads"), [("native", 1), ("native", 2), ("x86-64-v2", 1)])
def test_gelu_epilogue_matches_onnxruntime(cpu: str, threads: int, K: int, N: int) -> None:
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((K, N)) * 1.5 / np.sqrt(K)).astype(np.float32)
    b = rng.uniform(-1.0, 1.0, N).astype(np.float32)
    model = _model(w, b, M, B)
    x = rng.standard_normal((B, M, K)).astype(np.float32)
    x[1, 5, 7] = np.nan  # a NaN row
    x[0, 3, :] = 0.0
    x[0, 3, 0] = np.inf  # +-inf in a row: GELU(+inf) = +inf, GELU(-inf) = NaN (-inf * 0)
    x[1, 36, :] = 0.0
    x[1, 36, 1] = -np.inf
    ref = onnxruntime_outputs(model, {"x": x})["out"]
    assert 0.1 < np.nanmax(np.abs(ref[np.isfinite(ref)])) < 10  # ordinary size
    m = autofusion.compile(model, cpu=cpu, threads=threads, cache=False)
    try:
        src = (m.directory / "model.c").read_text()
        assert "afrt_epi_gelu_fn" in src
        assert "_epilogue(void" not in src  # no generated epilogue function is left
        got = m.run({"x": x})["out"]
    finally:
        m.close()
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    assert np.array_equal(np.isinf(got), np.isinf(ref))
    assert_close(got, ref, f"fc1 + GELU ({cpu}, {threads} thread(s))")


# rows, bias, w_left: a constant left operand is packed, where 40 rows take the 8-row kernel
# (afrt_choose_mr_); an activation on the left is read unpacked by the 12-row kernel
HALVES = [(37, True, False), (40, True, True), (37, False, False)]


@pytest.mark.parametrize(("rows", "bias", "w_left"), HALVES)
@pytest.mark.parametrize(("cpu", "threads"), [("native", 1), ("native", 2), ("x86-64-v2", 1)])
def test_gelu_epilogue_row_halves(
    cpu: str, threads: int, rows: int, bias: bool, w_left: bool
) -> None:
    """The AVX-512 finish's two orders: after a Linear layer's bias the GELU of a tile's first
    half of rows runs in the registers and the second half's over their stored rows (12- and
    8-row kernels); without a bias the general finish stores every row first. K = 20, N = 45:
    one 32-column tile and an edge of 13."""
    rng = np.random.default_rng(7)
    K, N = 20, 45
    shape = (rows, K) if w_left else (K, N)
    w = (rng.standard_normal(shape) * 1.5 / np.sqrt(K)).astype(np.float32)
    b = rng.uniform(-1.0, 1.0, N).astype(np.float32) if bias else None
    model = _model(w, b, rows, 2, w_left=w_left)
    x = rng.standard_normal((2, K, N) if w_left else (2, rows, K)).astype(np.float32)
    ref = onnxruntime_outputs(model, {"x": x})["out"]
    assert 0.1 < np.abs(ref).max() < 10  # ordinary size
    m = autofusion.compile(model, cpu=cpu, threads=threads, cache=False)
    try:
        assert "afrt_epi_gelu_fn" in (m.directory / "model.c").read_text()
        got = m.run({"x": x})["out"]
    finally:
        m.close()
    assert_close(got, ref, f"GELU epilogue {rows, bias, w_left} ({cpu}, {threads} thread(s))")


@pytest.mark.parametrize("cpu", ["native", "x86-64-v2"])
def test_gelu_epilogue_accuracy_against_float64(cpu: str) -> None:
    """y = x @ I, then GELU: every value of a dense sweep through the register path (whole
    32-column tiles) and the callback (the 6-column edge), against float64 GELU; on
    x86-64-v2 the scalar form. The piecewise polynomial (AFRT_GELU_TAB) is within 4e-8 of
    erf(a / sqrt 2) / 2, so the error is at most ~4e-8 |y| plus the roundings; the bound,
    1e-7 |y| plus an ulp, is half of what af_erff's rational function (3.5e-7 on erf) needed."""
    rows, n = 600, 70
    xs = np.linspace(-12.0, 12.0, rows * n, dtype=np.float32).reshape(1, rows, n)
    model = _model(np.eye(n, dtype=np.float32), np.zeros(n, np.float32), rows, 1)
    m = autofusion.compile(model, cpu=cpu, threads=1, cache=False)
    try:
        got = m.run({"x": xs})["out"].astype(np.float64)
    finally:
        m.close()
    y = xs.astype(np.float64)
    exact = 0.5 * y * (1.0 + np.vectorize(math.erf)(y / math.sqrt(2.0)))
    bound = 1e-7 * np.abs(y) + 2.0**-23 * np.maximum(1.0, np.abs(exact))
    worst = np.abs(got - exact) / bound
    assert worst.max() <= 1.0, (worst.max(), y.ravel()[worst.argmax()])


def _header_table() -> np.ndarray:
    src = (Path(autofusion.__file__).parent / "runtime" / "include" / "afrt.h").read_text()
    body = re.search(r"AFRT_GELU_TAB\[[^=]*=\s*\{(.*?)\};", src, re.S)
    assert body is not None
    rows = re.findall(r"\{([^{}]*)\}", body.group(1))
    tab = [[float(v.strip().rstrip("f")) for v in row.split(",")] for row in rows]
    return np.asarray(tab, dtype=np.float32)


def test_gelu_table_is_the_generators() -> None:
    """afrt.h's AFRT_GELU_TAB and AFRT_GELU_SCALE are gelu_table.py's (one rule in one place:
    the C table is printed by the generator), and the table evaluated as afrt.h does (float32,
    FMAs) is within 5e-8 of erf(a / sqrt 2) / 2 on [0, 6.2], the last piece past the clamp
    exactly 1/2. Changing a coefficient's leading digits fails it."""
    src = (Path(autofusion.__file__).parent / "runtime" / "include" / "afrt.h").read_text()
    scale = re.search(r"#define AFRT_GELU_SCALE (\S+)f", src)
    assert scale is not None
    assert float(np.float32(scale.group(1))) == gelu_table.SCALE
    assert f"#define AFRT_GELU_PIECES {gelu_table.PIECES}\n" in src
    assert f"#define AFRT_GELU_DEGREE {gelu_table.DEGREE}\n" in src
    tab = _header_table()
    want = gelu_table.coefficients()
    assert tab.shape == want.shape == (gelu_table.DEGREE + 1, gelu_table.PIECES)
    # the fit in float64 may move a last bit between numpy builds; the printed digits are exact
    np.testing.assert_allclose(tab, want, rtol=2e-7, atol=1e-12)
    a = np.linspace(0.0, 6.2, 200_001).astype(np.float32)
    exact = np.vectorize(math.erf)(a.astype(np.float64) / math.sqrt(2.0)) / 2.0
    got = gelu_table.evaluate(a, tab).astype(np.float64)
    assert np.max(np.abs(got - exact)) < 5e-8
    assert np.all(got[a >= np.float32(gelu_table.CLAMP)] == 0.5)
