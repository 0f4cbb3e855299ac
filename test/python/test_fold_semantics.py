"""One meaning per op: import-time constant folding evaluates a node with the interpreter's
implementation of the op it converts to, and that implementation matches onnxruntime on
extreme inputs (+-100, +-1e30, NaN, +-inf, -0.0, 1e-30, ...).

Regression: ``Softplus(initializer [100, 1]) + x`` used to fold with the frontend's own
``log1p(exp(x))`` table to ``[inf, 1.313]`` where onnxruntime gives ``[100, 1.313]``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from autofusion.frontend import import_onnx
from autofusion.interpreter import run_module
from autofusion.lowering.c.testing import build_and_run, onnxruntime_outputs
from autofusion.testing import assert_close

EXTREMES = np.array(
    [100, -100, 1e30, -1e30, np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-30, -1e-30,
     1, -1, 0.5, -0.5, 2.5, -2.5, 88.8, -88.8, 20, -20, 3, -3],
    np.float32,
)  # fmt: skip

# (op type, attributes, opset): every elementwise op of one float input that folds.
UNARY_CASES: list[tuple[str, dict[str, object], int]] = [
    *((op, {}, 17) for op in (
        "Relu", "Sigmoid", "Tanh", "Erf", "Exp", "Log", "Sqrt", "Neg", "Abs", "Reciprocal",
        "Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "Softplus", "HardSwish",
    )),
    ("LeakyRelu", {"alpha": 0.1}, 17),
    ("Elu", {"alpha": 0.7}, 17),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, 17),
    ("Gelu", {}, 20),
    ("Gelu", {"approximate": "tanh"}, 20),
]  # fmt: skip


def _const_model(
    nodes: list[onnx.NodeProto],
    inits: list[np.ndarray],
    out_shape: list[int],
    opset: int,
    inputs: list[onnx.ValueInfoProto] | None = None,
) -> onnx.ModelProto:
    tensors = [numpy_helper.from_array(a, f"c{i}") for i, a in enumerate(inits)]
    graph = helper.make_graph(
        nodes,
        "fold",
        inputs or [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
        tensors,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _folded_constants(model: onnx.ModelProto) -> list[str]:
    module = import_onnx(model, progress=False)
    return [op.name for op in module.walk() if op.name.startswith("nn.")]


def test_softplus_fold_matches_onnxruntime(tmp_path: Path) -> None:
    """``Softplus(initializer [100, 1]) + x``: folded at import, then compiled to C."""
    model = _const_model(
        [helper.make_node("Softplus", ["c0"], ["s"]), helper.make_node("Add", ["s", "x"], ["y"])],
        [np.array([100.0, 1.0], np.float32)],
        [2],
        17,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
    )
    module = import_onnx(model, progress=False)
    assert "nn.softplus" not in [op.name for op in module.walk()]  # it did fold
    feeds = {"x": np.array([0.5, 0.25], np.float32)}
    ref = onnxruntime_outputs(model, feeds)["y"]
    np.testing.assert_allclose(ref, [100.5, 1.5632617], rtol=1e-6)
    assert_close(run_module(module, feeds)["y"], ref, "interpreter")
    assert_close(build_and_run(module, feeds, tmp_path)["y"], ref, "compiled C")


def _assert_elementwise(got: np.ndarray, ref: np.ndarray, what: str) -> None:
    """The bar element by element, so a huge value does not loosen the atol of small ones."""
    assert got.shape == ref.shape, what
    assert got.dtype == ref.dtype, what
    for i, (g, r) in enumerate(zip(got.reshape(-1), ref.reshape(-1))):
        assert_close(np.asarray(g), np.asarray(r), f"{what} at x={EXTREMES.reshape(-1)[i]!r}")


@pytest.mark.parametrize(
    ("op", "attrs", "opset"),
    UNARY_CASES,
    ids=[f"{c[0]}{'-' + str(c[1]) if c[1] else ''}" for c in UNARY_CASES],
)
def test_unary_fold_of_extremes_matches_onnxruntime(
    op: str, attrs: dict[str, object], opset: int
) -> None:
    model = _const_model([helper.make_node(op, ["c0"], ["y"], **attrs)], [EXTREMES],
                         [len(EXTREMES)], opset)  # fmt: skip
    module = import_onnx(model, progress=False)
    assert [o.name for o in module.walk() if o.name.startswith("nn.")] == ["nn.constant"]
    ref = onnxruntime_outputs(model, {})["y"]
    _assert_elementwise(run_module(module, {})["y"], ref, op)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mean"])
def test_binary_fold_of_extremes_matches_onnxruntime(op: str) -> None:
    """Every pair of extreme values: the folded table equals onnxruntime's."""
    a = np.repeat(EXTREMES, len(EXTREMES))
    b = np.tile(EXTREMES, len(EXTREMES))
    model = _const_model([helper.make_node(op, ["c0", "c1"], ["y"])], [a, b], [a.size], 17)
    module = import_onnx(model, progress=False)
    ref = onnxruntime_outputs(model, {})["y"]
    got = run_module(module, {})["y"]
    for i in range(a.size):
        assert_close(got[i : i + 1], ref[i : i + 1], f"{op}({a[i]!r}, {b[i]!r})")


def test_reduce_fold_matches_onnxruntime() -> None:
    """Constant reductions fold with the interpreter's reduction (ReduceL2 of 1e30 is inf in
    float32 arithmetic, as in onnxruntime). ReduceMax/Min rows hold no NaN: onnxruntime's
    answer there depends on the NaN's position, the interpreter's propagates it."""
    for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL2", "ReduceProd"):
        x = EXTREMES[:20].reshape(4, 5)
        if op in ("ReduceMax", "ReduceMin"):
            x = np.where(np.isnan(x), np.float32(7), x)
        node = helper.make_node(op, ["c0", "c1"], ["y"], keepdims=0)
        model = _const_model([node], [x, np.array([1], np.int64)], [4], 18)
        ref = onnxruntime_outputs(model, {})["y"]
        _assert_elementwise_rows(run_module(import_onnx(model, progress=False), {})["y"], ref, op)


def _assert_elementwise_rows(got: np.ndarray, ref: np.ndarray, what: str) -> None:
    for i in range(ref.shape[0]):
        assert_close(got[i : i + 1], ref[i : i + 1], f"{what} row {i}")


def test_ascendc_erf_uses_the_c_runtime_constants() -> None:
    """The Ascend C vector erf is af_erff of afrt.h rebuilt from vector calls: the same clamp
    and the same P and Q coefficients, read from the header (whose Horner forms list them
    from the highest degree down)."""
    import re

    from autofusion.lowering.ascendc import vector
    from autofusion.runtime import toolchain

    header = (toolchain.INCLUDE_DIR / "afrt.h").read_text()

    def body(name: str) -> str:  # the definition, not a forward declaration
        start = re.search(rf"static inline float {name}\([^)]*\) {{\n", header)
        assert start is not None, name
        text = header[start.start() :]
        return text[: text.index("\n}\n")]

    # the rational function's Horner forms use AFRT_ERF_P5..P0 and Q5..Q0, defined once
    rational = body("af_erff_rational_")
    coef = dict(re.findall(r"#define AFRT_ERF_([PQC]\w*) (\S+?)f?\n", header))
    for name in ("P", "Q"):
        order = [f"AFRT_ERF_{name}{d}" for d in range(5, -1, -1)]
        assert [m for m in re.findall(rf"AFRT_ERF_{name}\d", rational)] == order
        got = tuple(np.float32(float(coef[f"{name}{d}"])) for d in range(6))
        assert got == tuple(np.float32(getattr(vector, f"ERF_{name}")))
    assert float(coef["CLAMP"]) == vector.ERF_CLAMP
    generic = header[header.index("#else\nstatic inline float af_erff(") :]
    assert "ax > AFRT_ERF_CLAMP ? AFRT_ERF_CLAMP" in generic[: generic.index("\n}\n")]
