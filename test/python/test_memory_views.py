"""Graph outputs that alias other storage, end to end in C against onnxruntime.

A top-level reshape (Reshape, Flatten, Squeeze, Unsqueeze all import as ``nn.reshape``) is a
view of its operand's arena bytes; a view that is a graph output is copied out after the
last kernel. A slice, split piece or one-index gather that is one contiguous run of its
operand (at a multiple of 64 bytes) is a view of those bytes too, at an offset; the cases
that are not runs stay copies. The bytes must stay reserved to the end, through any chain of views,
and no kernel may reuse them or compute in place over them before the copy. Each model
below has later kernels of the same size as the viewed tensor, so a slot freed too early is
overwritten and the output comes back wrong. The neighbouring cases (an output that is a
graph input, a weight, or the same tensor twice) are copies and are checked alongside.
Every model runs fused and with ``fusion=False``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest
from graph_builders import float_model as _model
from graph_builders import node as _n
from onnx import TensorProto
from xdsl.parser import Parser

import autofusion
from autofusion.analysis.liveness import find_main
from autofusion.analysis.memory_plan import check_plan, plan_memory
from autofusion.lowering.c.testing import assert_close, onnxruntime_outputs
from autofusion.pipeline import make_context

F = TensorProto.FLOAT
RNG = np.random.default_rng(11)


def _weight(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) * 0.5).astype(np.float32)


def _tail(src: str, prefix: str, count: int = 5) -> list[onnx.NodeProto]:
    """Steps after ``src`` whose results have its size: each would land in a slot freed too
    early (the first one, elementwise, in place over it). The softmaxes do not fuse with
    their neighbours, so the fused pipeline has several kernels here too."""
    nodes, prev = [], src
    for i, op in enumerate(["Sigmoid", "Softmax", "Tanh", "Softmax", "Sigmoid"][:count]):
        nodes.append(_n(op, [prev], [f"{prefix}{i}"]))
        prev = f"{prefix}{i}"
    return nodes


def softmax_flatten_gemm() -> onnx.ModelProto:
    """The reported graph: Softmax -> Flatten -> output ``f``; the Flatten also feeds a Gemm
    (which, with the bug, got the viewed bytes as both input and output)."""
    nodes = [
        _n("Mul", ["x", "k"], ["xs"]),
        _n("Softmax", ["xs"], ["s"], axis=-1),
        _n("Mul", ["s", "k"], ["s2"]),
        _n("Flatten", ["s2"], ["f"]),
        _n("Gemm", ["f", "w"], ["g"]),
        _n("Relu", ["g"], ["r"]),
        _n("Softmax", ["r"], ["r1"], axis=-1),
        _n("Sigmoid", ["r1"], ["r2"]),
    ]
    return _model(
        nodes,
        {"x": [4, 2, 16]},
        ["f", "r2"],
        {"w": _weight(32, 32), "k": np.array(3.0, np.float32)},
    )


def reshape_squeeze_chain() -> onnx.ModelProto:
    """A view of a view as the output: Exp -> Reshape -> Squeeze -> output, the Exp also
    read by later steps (so the root's own last use is early)."""
    nodes = [
        _n("Tanh", ["x"], ["t"]),
        _n("Reshape", ["t", "shape"], ["rs"]),
        _n("Squeeze", ["rs", "axes"], ["sq"]),
        _n("Sigmoid", ["rs"], ["a"]),
        *_tail("a", "b"),
        _n("Add", ["b4", "x"], ["out"]),
    ]
    inits = {"shape": np.array([1, 8, 12], np.int64), "axes": np.array([0], np.int64)}
    return _model(nodes, {"x": [8, 12]}, ["sq", "out"], inits)


def unsqueeze_then_inplace() -> onnx.ModelProto:
    """The viewed tensor's only direct reader is elementwise: it would run in place over
    the bytes the Unsqueeze output still shows."""
    nodes = [
        _n("Sigmoid", ["x"], ["s"]),
        _n("Unsqueeze", ["s", "axes"], ["u"]),
        _n("Tanh", ["s"], ["t"]),
        *_tail("t", "c"),
    ]
    return _model(nodes, {"x": [6, 10]}, ["u", "c4"], {"axes": np.array([1], np.int64)})


def flatten_read_through_view() -> onnx.ModelProto:
    """The view is both an output and read later by an elementwise step (in place over it
    would clobber the output)."""
    nodes = [
        _n("Tanh", ["x"], ["t"]),
        _n("Flatten", ["t"], ["f"], axis=1),
        _n("Sigmoid", ["f"], ["g"]),
        *_tail("g", "d"),
    ]
    return _model(nodes, {"x": [3, 4, 5]}, ["f", "d4"])


def identity_of_view() -> onnx.ModelProto:
    """Identity (folded away) of a Reshape view: the output is still the view."""
    nodes = [
        _n("Sigmoid", ["x"], ["s"]),
        _n("Reshape", ["s", "shape"], ["rs"]),
        _n("Identity", ["rs"], ["id"]),
        _n("Neg", ["s"], ["n"]),
        *_tail("n", "e"),
    ]
    return _model(nodes, {"x": [4, 9]}, ["id", "e4"], {"shape": np.array([6, 6], np.int64)})


def input_weight_and_twice() -> onnx.ModelProto:
    """Outputs that are a graph input (through Identity), a weight, and one tensor twice
    (directly and through Identity), next to computed ones."""
    nodes = [
        _n("Identity", ["x"], ["x_out"]),
        _n("Identity", ["w"], ["w_out"]),
        _n("Sigmoid", ["x"], ["s"]),
        _n("Identity", ["s"], ["s_again"]),
        *_tail("s", "h"),
    ]
    return _model(
        nodes, {"x": [5, 7]}, ["x_out", "w_out", "s", "s_again", "h4"], {"w": _weight(5, 7)}
    )


def view_of_output_then_inplace() -> onnx.ModelProto:
    """A view of a graph output read by an elementwise step: the output buffer is not in
    the arena and must not be reused in place."""
    nodes = [
        _n("Sigmoid", ["x"], ["s"]),
        _n("Flatten", ["s"], ["f"], axis=0),
        _n("Tanh", ["f"], ["t"]),
        *_tail("t", "q"),
    ]
    return _model(nodes, {"x": [4, 8]}, ["s", "q4"])


def _i64(*v: int) -> np.ndarray:
    """A 1-d int64 initializer (Slice's starts, ends, axes, steps; Split's sizes)."""
    return np.array(v, np.int64)


def _index(v: int) -> np.ndarray:
    """A scalar gather index."""
    return np.array(v, np.int64)


def gather_views_then_inplace() -> onnx.ModelProto:
    """Gathers of one index along the leading axis are runs of their operand: views at 256
    and 512 bytes (one of them an output, one read after the operand's last direct reader,
    an elementwise step that would run in place over it), a negative index among them."""
    nodes = [
        _n("Tanh", ["x"], ["t"]),
        _n("Gather", ["t", "one"], ["g1"], axis=0),
        _n("Gather", ["t", "minus1"], ["g2"], axis=0),
        _n("Sigmoid", ["t"], ["s"]),
        *_tail("s", "f"),
        _n("Gather", ["f4", "one"], ["h"], axis=0),
        _n("Add", ["h", "g2"], ["out"]),
    ]
    inits = {"one": _index(1), "minus1": _index(-1)}
    return _model(nodes, {"x": [3, 4, 16]}, ["g1", "out"], inits)


def split_and_slice_views() -> onnx.ModelProto:
    """Split pieces along the leading axis (at 0 and 128 bytes) and a slice of rows 2..4
    (at 128 bytes) are views; the operand's own last reader is elementwise."""
    nodes = [
        _n("Tanh", ["x"], ["t"]),
        _n("Split", ["t", "sizes"], ["p1", "p2"], axis=0),
        _n("Slice", ["t", "starts", "ends", "axes"], ["sl"]),
        _n("Neg", ["t"], ["n"]),
        *_tail("n", "m"),
        _n("Sigmoid", ["p2"], ["q"]),
        _n("Mul", ["sl", "sl"], ["sq"]),
    ]
    inits = {"sizes": _i64(1, 5), "starts": _i64(2), "ends": _i64(4), "axes": _i64(0)}
    return _model(nodes, {"x": [6, 32]}, ["p1", "q", "sq", "m4"], inits)


def strided_and_misaligned_not_views() -> onnx.ModelProto:
    """Not runs, or not at a multiple of 64 bytes: a gather along the second axis, a slice
    of step 2, a gather at 12 bytes, a slice of columns; each must stay a copy."""
    nodes = [
        _n("Tanh", ["x"], ["t"]),
        _n("Gather", ["t", "one"], ["ga"], axis=1),
        _n("Slice", ["t", "s0", "e0", "a0", "st2"], ["stride2"]),
        _n("Slice", ["t", "s0", "e1", "a1"], ["cols"]),
        _n("Gather", ["y", "one"], ["odd"], axis=0),
        _n("Sigmoid", ["t"], ["s"]),
        *_tail("s", "k"),
    ]
    inits = {
        "one": _index(1), "s0": _i64(0), "e0": _i64(6), "a0": _i64(0), "st2": _i64(2),
        "e1": _i64(8), "a1": _i64(1),
    }  # fmt: skip
    return _model(nodes, {"x": [6, 32], "y": [5, 3]}, ["ga", "stride2", "cols", "odd", "k4"], inits)


def gather_of_input() -> onnx.ModelProto:
    """A run of a graph input: a view of the input's buffer, itself an output (copied)."""
    nodes = [
        _n("Gather", ["x", "two"], ["g"], axis=0),
        _n("Sigmoid", ["g"], ["s"]),
    ]
    return _model(nodes, {"x": [4, 2, 8]}, ["g", "s"], {"two": _index(2)})


CASES: dict[str, Callable[[], onnx.ModelProto]] = {
    f.__name__: f
    for f in (
        softmax_flatten_gemm,
        reshape_squeeze_chain,
        unsqueeze_then_inplace,
        flatten_read_through_view,
        identity_of_view,
        input_weight_and_twice,
        view_of_output_then_inplace,
        gather_views_then_inplace,
        split_and_slice_views,
        strided_and_misaligned_not_views,
        gather_of_input,
    )
}

#: per case, how many gather / split / slice kernels the C keeps (the rest are views)
KEPT = {
    "gather_views_then_inplace": 0,
    "split_and_slice_views": 0,
    "strided_and_misaligned_not_views": 4,
    "gather_of_input": 0,
}


@pytest.mark.parametrize("fusion", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("case", list(CASES))
def test_aliased_outputs_match_onnxruntime(case: str, fusion: bool) -> None:
    model = CASES[case]()
    shapes = {
        i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input
    }
    feeds = {n: (RNG.standard_normal(s) * 1.5).astype(np.float32) for n, s in shapes.items()}
    ref = onnxruntime_outputs(model, feeds)
    compiled = autofusion.compile(model, fusion=fusion, threads=1, cache=False)
    got = compiled.run(feeds)
    if case in KEPT:
        src = (Path(compiled.directory) / "model.c").read_text()
        copies = re.findall(r"^static void op\d+_(?:gather|split|slice)\(", src, re.M)
        assert len(copies) == KEPT[case], copies
    assert set(got) == set(ref)
    for name, want in ref.items():
        assert 0.1 <= float(np.abs(want).max()) <= 10, f"{name}: test output not ordinary"
        assert_close(got[name], want, f"{case} ({'fused' if fusion else 'unfused'}) {name}")


MAIN = """
builtin.module {
  func.func @main(%x: tensor<8x16xf32>) -> (tensor<128xf32>, tensor<8x16xf32>) {
    %s = nn.sigmoid %x : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %v = nn.reshape %s : (tensor<8x16xf32>) -> tensor<2x64xf32>
    %vv = nn.reshape %v : (tensor<2x64xf32>) -> tensor<128xf32>
    %t = nn.tanh %s : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %a = nn.neg %t : (tensor<8x16xf32>) -> tensor<8x16xf32>
    %b = nn.sigmoid %a : (tensor<8x16xf32>) -> tensor<8x16xf32>
    func.return %vv, %b : tensor<128xf32>, tensor<8x16xf32>
  }
}
"""


def test_plan_keeps_viewed_bytes_of_an_output_to_the_end() -> None:
    """Plan level: the root of an output view lives to the end, is never computed over in
    place, and no later tensor takes its bytes."""
    module = Parser(make_context(), MAIN).parse_module()
    main = find_main(module)
    plan = plan_memory(main)
    assert check_plan(plan) == []
    ops = list(main.body.block.ops)
    s, t, a = ops[0].results[0], ops[3].results[0], ops[4].results[0]
    root = next(iv for iv in plan.intervals if iv.value is s)
    assert root.end == len(ops) - 1  # the schedule's length: read by the copy-out
    assert all(src is not s for src, _ in plan.inplace)
    size = root.size
    for later in (t, a):
        off = plan.offsets[later]
        assert off + size <= plan.offsets[s] or plan.offsets[s] + size <= off
