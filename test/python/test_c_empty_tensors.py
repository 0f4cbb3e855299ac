"""Zero-sized tensors (a dimension of 0) through the generated C, against onnxruntime.

A step whose results are all empty used to become a C function whose parameters were never
read, which ``-Werror`` refuses ("the generated C fails to compile", issue 10). Such a step
now gets an empty kernel; empty values still flow to readers that produce data (a concat,
a matmul with an empty inner dimension). Each model also has an ordinary-sized output, so
a wrong buffer hand-off around the empty steps is visible. Fused and unfused.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
import pytest
from graph_builders import float_model as _model
from graph_builders import node as _n
from onnx import TensorProto

import autofusion
from autofusion.lowering.c.testing import assert_close, onnxruntime_outputs

F = TensorProto.FLOAT
RNG = np.random.default_rng(5)


def elementwise_chain() -> onnx.ModelProto:
    """The reported shape: empty elementwise steps (with a broadcast weight) -> (0, 4)."""
    nodes = [_n("Relu", ["x"], ["r"]), _n("Add", ["r", "b"], ["e"]), _n("Tanh", ["z"], ["t"])]
    return _model(nodes, {"x": [0, 4], "z": [3, 4]}, ["e", "t"], {"b": np.full(4, 0.5, np.float32)})


def matmul_epilogue_softmax() -> onnx.ModelProto:
    """A fusable matmul + relu and a softmax over zero rows."""
    nodes = [
        _n("MatMul", ["x", "w"], ["m"]),
        _n("Relu", ["m"], ["r"]),
        _n("Softmax", ["r"], ["s"], axis=-1),
        _n("MatMul", ["z", "w"], ["zm"]),
    ]
    return _model(
        nodes,
        {"x": [0, 8], "z": [2, 8]},
        ["s", "zm"],
        {"w": (RNG.standard_normal((8, 16)) * 0.3).astype(np.float32)},
    )


def empty_into_data() -> onnx.ModelProto:
    """Empty values read by steps that produce data: concat, where, sigmoid after it."""
    nodes = [
        _n("Sigmoid", ["x"], ["sx"]),
        _n("Concat", ["sx", "z"], ["c"], axis=0),
        _n("Greater", ["sx", "sx"], ["g"]),
        _n("Where", ["g", "sx", "sx"], ["wh"]),
        _n("Mul", ["c", "k"], ["y"]),
    ]
    return _model(nodes, {"x": [0, 5], "z": [3, 5]}, ["y", "wh"], {"k": np.array(2.0, np.float32)})


CASES: dict[str, Callable[[], onnx.ModelProto]] = {
    f.__name__: f for f in (elementwise_chain, matmul_epilogue_softmax, empty_into_data)
}


@pytest.mark.parametrize("fusion", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("case", list(CASES))
def test_empty_tensors_match_onnxruntime(case: str, fusion: bool) -> None:
    model = CASES[case]()
    shapes = {
        i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input
    }
    feeds = {n: (RNG.standard_normal(s) * 1.5).astype(np.float32) for n, s in shapes.items()}
    ref = onnxruntime_outputs(model, feeds)
    got = autofusion.compile(model, fusion=fusion, threads=1, cache=False).run(feeds)
    assert set(got) == set(ref)
    assert any(r.size for r in ref.values())
    assert any(not r.size for r in ref.values())
    for name, want in ref.items():
        if want.size:
            assert 0.1 <= float(np.abs(want).max()) <= 10, f"{name}: test output not ordinary"
        assert_close(got[name], want, f"{case} ({'fused' if fusion else 'unfused'}) {name}")


@pytest.mark.parametrize("n", [0, 5])
def test_reference_fold_of_a_read_only_constant(n: int) -> None:
    """LogSoftmax of an initializer is folded by onnx.reference, which writes into its input:
    our constants are read-only views of the model's bytes ("output array is read-only",
    found by the differential fuzzer on an empty constant)."""
    k = np.linspace(-1.0, 2.0, n).astype(np.float32)
    m = _model(
        [_n("LogSoftmax", ["k"], ["t"], axis=0), _n("Add", ["t", "x"], ["y"])],
        {"x": [n]},
        ["y"],
        {"k": k},
    )
    x = RNG.uniform(-1, 1, n).astype(np.float32)
    got = autofusion.compile(m, threads=1).run({"x": x})["y"]
    assert_close(got, onnxruntime_outputs(m, {"x": x})["y"], "y")


@pytest.mark.parametrize("shape", [[0], [2, 0]])
def test_concat_of_only_empty_inputs(shape: list[int]) -> None:
    """Concat whose every input is empty along the axis (fuzzer: 'list index out of range')."""
    m = _model(
        [_n("Concat", ["e", "e"], ["c"], axis=-1), _n("Relu", ["x"], ["y"])],
        {"e": shape, "x": [3]},
        ["c", "y"],
    )
    feeds = {"e": np.zeros(shape, np.float32), "x": RNG.uniform(-1, 1, 3).astype(np.float32)}
    got = autofusion.compile(m, threads=1).run(feeds)
    ref = onnxruntime_outputs(m, feeds)
    for name in ("c", "y"):
        assert_close(got[name], ref[name], name)


@pytest.mark.parametrize("fusion", [True, False], ids=["fused", "unfused"])
def test_reductions_over_an_empty_axis(fusion: bool) -> None:
    """+-inf, 0 and 1, exactly as onnxruntime gives them (the fuzzer keeps these
    infinities out of its graphs, so they are checked here); x is a run-time input."""
    ops = ["ReduceMax", "ReduceMin", "ReduceLogSumExp", "ReduceMean", "ReduceSum", "ReduceProd"]
    nodes = [_n(op, ["x"], [op], axes=[1], keepdims=0) for op in ops if op != "ReduceSum"]
    nodes.append(_n("ReduceSum", ["x", "ax"], ["ReduceSum"], keepdims=1))
    model = _model(nodes, {"x": [3, 0, 2]}, ops, {"ax": np.array([1], np.int64)})
    feeds = {"x": np.zeros((3, 0, 2), np.float32)}
    ref = onnxruntime_outputs(model, feeds)
    got = autofusion.compile(model, fusion=fusion, threads=1, cache=False).run(feeds)
    assert np.isinf(ref["ReduceMin"]).all()
    for name, want in ref.items():
        np.testing.assert_array_equal(got[name], want, err_msg=name)
