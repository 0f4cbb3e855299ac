"""Differential fuzzing: random valid ONNX graphs (``fuzz_graphs.cases``) compiled by
autofusion with fusion on and off, compared with onnxruntime at the project's bar.

The CI run is seeded (``derandomize=True``) and bounded: ``AUTOFUSION_FUZZ_EXAMPLES``
models (default 12, each holding up to 4 independent random graphs; about 60-90 s on one
busy core, the C compiler is the cost). A failure is shrunk by hypothesis to a minimal graph
and reported with its ONNX text and a runnable reproducer (``model.onnx``, ``feeds.npz``,
``repro.py`` in a temp folder). Long runs: ``benchmarks/fuzz.py --fuzz-minutes N``.

Below the fuzz test: regression tests of bugs the fuzzer found, each a minimal model.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from fuzz_graphs import FuzzCase, GeneratorError, cases, check_case, describe
from hypothesis import HealthCheck, given, settings
from onnx import TensorProto, helper, numpy_helper

import autofusion
from autofusion.lowering.c.testing import assert_close, onnxruntime_outputs

EXAMPLES = int(os.environ.get("AUTOFUSION_FUZZ_EXAMPLES", "12"))
TALLY = {"models": 0, "graphs": 0, "outputs": 0}


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
@given(cases(max_ops=8, max_parts=4))
def _fuzz_one(case: FuzzCase) -> None:
    try:
        findings, compared = check_case(case)
    except GeneratorError as e:  # the generator made a graph onnxruntime rejects
        pytest.fail(f"fuzz generator bug: {e}")
    assert not findings, describe(case, findings)
    TALLY["models"] += 1
    TALLY["graphs"] += case.parts
    TALLY["outputs"] += compared


def test_fuzz_against_onnxruntime() -> None:
    TALLY.update(models=0, graphs=0, outputs=0)
    _fuzz_one()
    print(
        f"fuzz: {TALLY['models']} models, {TALLY['graphs']} graphs, "
        f"{TALLY['outputs']} outputs compared (fusion on and off), 0 mismatches"
    )
    # every example ran to the comparison (none was skipped or filtered away)
    assert TALLY["models"] == EXAMPLES
    assert TALLY["outputs"] >= EXAMPLES


# ---------------------------------------------------------------------------------------
# Regressions found by the fuzzer
# ---------------------------------------------------------------------------------------


def _model(
    nodes: list[onnx.NodeProto],
    inputs: dict[str, list[int]],
    outputs: dict[str, list[int]],
    inits: dict[str, np.ndarray],
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "regression",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs.items()],
        initializer=[numpy_helper.from_array(a, n) for n, a in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _check(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    ref = onnxruntime_outputs(model, feeds)
    for fusion in (True, False):
        m = autofusion.compile(model, fusion=fusion, threads=1, cache=False)
        try:
            got = m.run(feeds)
        finally:
            m.close()
        for name, r in ref.items():
            assert_close(got[name], r, f"fusion={fusion} {name}")


@pytest.mark.parametrize("dead_op", ["Unsqueeze", "Flatten"])
def test_dead_view_of_an_input_compiles(dead_op: str) -> None:
    """A node whose result reaches no output, a view of a graph input: the input's pointer
    was left unused in model.c (-Werror=unused-variable, the build failed)."""
    ins = ["u", "ax"] if dead_op == "Unsqueeze" else ["u"]
    attrs = {"axis": 0} if dead_op == "Flatten" else {}  # [2, 3] -> [1, 6]: a real view
    model = _model(
        [helper.make_node("Tanh", ["x"], ["y"]), helper.make_node(dead_op, ins, ["dead"], **attrs)],
        {"x": [2, 3], "u": [2, 3]},
        {"y": [2, 3]},
        {"ax": np.array([0], np.int64)},
    )
    rng = np.random.default_rng(0)
    _check(model, {n: rng.uniform(-2, 2, (2, 3)).astype(np.float32) for n in ("x", "u")})


def test_dead_nodes_are_not_kernels() -> None:
    """A dead chain (Neg -> Exp of an input) is erased, not computed into the arena."""
    model = _model(
        [
            helper.make_node("Tanh", ["x"], ["y"]),
            helper.make_node("Neg", ["x"], ["d1"]),
            helper.make_node("Exp", ["d1"], ["d2"]),
        ],
        {"x": [2, 3]},
        {"y": [2, 3]},
        {},
    )
    m = autofusion.compile(model, fusion=False, threads=1, cache=False)
    try:
        assert m.report["kernels_after"] == 1, m.report["kernels_after"]
    finally:
        m.close()


@pytest.mark.parametrize("kcrs", [(2, 3, 1, 1), (1, 2, 1, 3), (1, 1, 2, 3)])
def test_conv_with_fewer_than_nine_weights_compiles(kcrs: tuple[int, int, int, int]) -> None:
    """A conv whose weights are a small constant array (under 9 floats) in model.c: gcc 12
    specialised the 3x3 Winograd weight packer for that array on a path the dispatch never
    takes and reported -Warray-bounds, so the -Werror build failed (fuzzer, seed 1205)."""
    k, c, r, s = kcrs
    w = np.random.default_rng(1).uniform(0.5, 1.5, (k, c, r, s)).astype(np.float32)
    model = _model(
        [helper.make_node("Conv", ["x", "w"], ["y"])],
        {"x": [1, c, 6, 5]},
        {"y": [1, k, 7 - r, 6 - s]},
        {"w": w},
    )
    x = np.random.default_rng(2).uniform(-1, 1, (1, c, 6, 5)).astype(np.float32)
    _check(model, {"x": x})
