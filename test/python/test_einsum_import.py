"""Einsum, decomposed by the frontend (``convert_einsum.py``), against numpy's einsum (what
onnx's reference evaluator runs; onnxruntime is checked too where it accepts the equation:
it rejects uppercase labels). Matmuls, batch dims that broadcast through ``...``, diagonals,
plain sums, transposes, implicit outputs (uppercase before lowercase), three operands, outer
and Hadamard products, in the interpreter and in the generated C (all equations in one model,
so one C build); an integer einsum exactly. Malformed equations are refused with an error
naming the node."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from autofusion.errors import AutofusionError
from autofusion.frontend import import_onnx
from autofusion.interpreter import run_module
from autofusion.lowering.c.testing import build_and_run, compile_onnx, onnxruntime_outputs
from autofusion.testing import assert_close

# equation -> input shapes
CASES: dict[str, list[list[int]]] = {
    "ij,jk->ik": [[3, 4], [4, 5]],
    "bij,bjk->bik": [[2, 3, 4], [2, 4, 5]],
    "...ij,...jk->...ik": [[2, 1, 3, 4], [1, 5, 4, 6]],
    "ii->i": [[4, 4]],
    "bii->bi": [[2, 3, 3]],
    "iji->j": [[3, 2, 3]],
    "ij->ji": [[3, 5]],
    "ij->": [[3, 4]],
    "i,i": [[5], [5]],
    "Ab,bc": [[3, 4], [4, 2]],
    "ab,bc,cd->ad": [[2, 3], [3, 4], [4, 5]],
    "bhqd,bhkd->bhqk": [[1, 2, 3, 4], [1, 2, 5, 4]],
    "i,j->ij": [[3], [4]],
    "ij,ij->ij": [[3, 4], [3, 4]],
    "ij, jk -> k": [[3, 4], [4, 2]],
    "...i,...i->...": [[2, 3], [1, 3]],
    "bn,anm,bm->ba": [[2, 3], [4, 3, 5], [2, 5]],
    "ik,k->i": [[3, 1], [4]],
    "i,i,i->": [[6], [6], [6]],
}


def _model() -> tuple[onnx.ModelProto, list[str]]:
    nodes, inputs, outputs, names = [], [], [], []
    for n, (eq, shapes) in enumerate(CASES.items()):
        ins = [f"x{n}_{i}" for i in range(len(shapes))]
        inputs += [h.make_tensor_value_info(x, T.FLOAT, s) for x, s in zip(ins, shapes)]
        outputs.append(h.make_tensor_value_info(f"y{n}", T.FLOAT, None))
        nodes.append(h.make_node("Einsum", ins, [f"y{n}"], name=f"einsum{n}", equation=eq))
        names.append(eq)
    graph = h.make_graph(nodes, "g", inputs, outputs)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 18)]), names


def test_einsum_matches_numpy_and_onnxruntime(tmp_path) -> None:
    model, eqs = _model()
    rng = np.random.default_rng(7)
    feeds = {
        vi.name: rng.uniform(0.2, 1.2, [d.dim_value for d in vi.type.tensor_type.shape.dim]).astype(
            np.float32
        )
        for vi in model.graph.input
    }
    lower = onnx.ModelProto()
    lower.CopyFrom(model)
    keep = [i for i, eq in enumerate(eqs) if eq == eq.lower()]
    del lower.graph.output[:]
    lower.graph.output.extend(model.graph.output[i] for i in keep)
    lower.graph.node.pop(eqs.index("Ab,bc"))
    ort = onnxruntime_outputs(lower, feeds)
    got = run_module(import_onnx(model, progress=False), feeds)
    got_c = build_and_run(compile_onnx(model), feeds, tmp_path)
    assert len(ort) == len(CASES) - 1
    for n, (eq, shapes) in enumerate(CASES.items()):
        args = [feeds[f"x{n}_{i}"].astype(np.float64) for i in range(len(shapes))]
        ref = np.einsum(eq.replace(" ", ""), *args).astype(np.float32)
        assert 0.1 < float(np.abs(ref).max()) < 100, eq
        if f"y{n}" in ort:
            assert_close(ort[f"y{n}"], ref, f"{eq} onnxruntime vs numpy")
        assert_close(got[f"y{n}"], ref, f"{eq} interpreter")
        assert_close(got_c[f"y{n}"], ref, f"{eq} C")


def _single(eq: str, shapes: list[list[int]]) -> onnx.ModelProto:
    ins = [f"x{i}" for i in range(len(shapes))]
    graph = h.make_graph(
        [h.make_node("Einsum", ins, ["y"], name="es", equation=eq)],
        "g",
        [h.make_tensor_value_info(x, T.FLOAT, s) for x, s in zip(ins, shapes)],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 18)])


@pytest.mark.parametrize(
    ("eq", "shapes", "msg"),
    [
        ("ij,jk->il", [[3, 4], [4, 5]], "output label 'l' is in no input"),
        ("ijk,jk->ik", [[3, 4], [4, 5]], "does not match input 0 of rank 2"),
        ("ij,jk->ik", [[3, 4], [5, 6]], "label 'j' has sizes 4 and 5"),
        ("ij->ii", [[3, 3]], "an output label is repeated"),
        ("i1,j->ij", [[3, 3], [3]], "is not letters"),
        ("ij->i", [[3, 4], [4]], "has 1 operand"),
        ("...ij,...jk", [[2, 1, 3, 4], [5, 4, 6]], "same number of dims"),
    ],
)
def test_einsum_refusals_name_the_node(eq: str, shapes: list[list[int]], msg: str) -> None:
    with pytest.raises(AutofusionError, match=r"node 'es' \(Einsum\).*" + msg):
        import_onnx(_single(eq, shapes), progress=False)


def test_integer_einsum_is_exact(tmp_path) -> None:
    model = _single("bij,bjk->bki", [[2, 3, 4], [2, 4, 5]])
    for vi in [*model.graph.input, *model.graph.output]:
        vi.type.tensor_type.elem_type = T.INT32
    rng = np.random.default_rng(1)
    feeds = {
        f"x{i}": rng.integers(-50, 50, s).astype(np.int32)
        for i, s in enumerate([[2, 3, 4], [2, 4, 5]])
    }
    ref = np.einsum("bij,bjk->bki", feeds["x0"], feeds["x1"])
    got = run_module(import_onnx(model, progress=False), feeds)["y"]
    got_c = build_and_run(compile_onnx(model), feeds, tmp_path)["y"]
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(got_c, ref)
