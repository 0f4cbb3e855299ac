"""Differential fuzzing of the one build (run-time sizes, docs/dynamic.md): random valid ONNX
graphs (``fuzz_graphs.cases``) with one input size turned into a symbol ``n``, compiled once
with ``one_build=True`` and compared with onnxruntime at several values of ``n``.

The generator makes static graphs, so :func:`symbolize` picks one size ``d`` of an input
(a hypothesis draw) and declares every input dim of that size as ``n`` in ``1..2d+1``; the
declared output shapes are dropped. The result is a graph that is valid at ``n = d`` and
maybe at other values (elementwise chains, reductions, matmuls over the free dim) or only at
``d`` (a constant weight or a Reshape target of that size). So for each case:

- either the one build compiles, and then at every tested value that onnxruntime accepts it
  must run and match (a wrong result, a crash or a refusal of a legal shape is a finding),
  and at a value onnxruntime rejects it must fail with one clear ``AutofusionError``;
- or it refuses at compile time with one ``AutofusionError`` (a size the symbolic import or a
  pass cannot keep symbolic, named): not a finding, but counted, and a third of the cases
  or more must compile (else the test would be vacuous). Generated C that does not compile
  is a finding.

``AUTOFUSION_SYMFUZZ_VERBOSE=1`` prints each refusal with its graph.

Seeded and bounded like test_fuzz_differential.py: ``AUTOFUSION_SYMFUZZ_EXAMPLES`` models
(default 16), each compiled once (about 15 s).
"""

from __future__ import annotations

import os
import traceback

import numpy as np
import onnx
import pytest
from fuzz_graphs import F, FuzzCase, GeneratorError, I, cases, reference
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autofusion
from autofusion.errors import AutofusionError
from autofusion.lowering.c.testing import assert_close

EXAMPLES = int(os.environ.get("AUTOFUSION_SYMFUZZ_EXAMPLES", "16"))
TALLY = {"models": 0, "compiled": 0, "runs": 0, "refused_runs": 0}


def symbolize(case: FuzzCase, d: int) -> onnx.ModelProto:
    """``case.model`` with every graph-input dim of size ``d`` declared as the symbol ``n``
    and the outputs' shapes left to inference."""
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    for vi in model.graph.input:
        for dim in vi.type.tensor_type.shape.dim:
            if dim.HasField("dim_value") and dim.dim_value == d:
                dim.ClearField("dim_value")
                dim.dim_param = "n"
    for vi in model.graph.output:
        vi.type.tensor_type.ClearField("shape")
    return model


def _feeds(case: FuzzCase, d: int, n: int, seed: int) -> dict[str, np.ndarray]:
    """The case's inputs with every dim of size ``d`` at ``n`` (values as the generator's)."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for s in case.inputs:
        shape = tuple(n if x == d else x for x in s.shape)
        if s.kind == F:
            out[s.name] = rng.uniform(s.lo, s.hi, shape).astype(np.float32)
        elif s.kind == I:
            out[s.name] = rng.integers(int(s.lo), int(s.hi) + 1, shape).astype(np.int64)
        else:
            out[s.name] = rng.integers(0, 2, shape).astype(np.bool_)
    return out


@st.composite
def symbolic_cases(draw: st.DrawFn) -> tuple[FuzzCase, int]:
    case = draw(cases(max_ops=8, max_parts=1))
    sizes = sorted({x for s in case.inputs for x in s.shape if x >= 1})
    if not sizes:
        return case, 0
    return case, draw(st.sampled_from(sizes))


def _check(case: FuzzCase, d: int) -> list[str]:
    """Findings of the one build of ``case`` symbolized at ``d`` (empty: none)."""
    import onnxruntime as ort

    try:
        reference(case, case.feeds())  # the static graph is valid: else a generator bug
    except GeneratorError as e:
        pytest.fail(f"fuzz generator bug: {e}")
    model = symbolize(case, d)
    hi = 2 * d + 1
    try:
        m = autofusion.compile(
            model, dynamic={"n": (1, hi)}, one_build=True, threads=1, cache=False
        )
    except AutofusionError as e:
        if "compiling model.c failed" in str(e):  # the generated C is wrong: a bug
            return [f"generated C does not compile: {e}"]
        if os.environ.get("AUTOFUSION_SYMFUZZ_VERBOSE"):
            cause = "".join(traceback.format_exception(e.__cause__)[-6:]) if e.__cause__ else ""
            print(f"refused (d={d}): {e}\n{cause}{onnx.printer.to_text(model.graph)}")
        return []  # refused by name: allowed (counted by the caller through TALLY)
    except Exception:
        return [f"internal error at compile:\n{traceback.format_exc()}"]
    TALLY["compiled"] += 1
    findings: list[str] = []
    so = ort.SessionOptions()
    so.log_severity_level = 4
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    try:
        for n in sorted({d, 1, d + 1, hi}):
            feeds = _feeds(case, d, n, seed=n)
            try:
                ref = dict(zip(names, sess.run(None, feeds)))
            except Exception:  # the graph is not valid at this n: ours must refuse clearly
                ref = None
            try:
                got = m.run(feeds)
            except AutofusionError as e:
                TALLY["refused_runs"] += 1
                if ref is not None:
                    findings.append(f"n={n}: refused a shape onnxruntime runs: {e}")
                continue
            except Exception:
                findings.append(f"n={n}: internal error:\n{traceback.format_exc()}")
                continue
            if ref is None:
                findings.append(f"n={n}: ran a shape onnxruntime rejects")
                continue
            TALLY["runs"] += 1
            for name, r in ref.items():
                try:
                    assert_close(got[name], r, f"n={n} output {name}")
                except (AssertionError, KeyError) as e:
                    findings.append(f"n={n}: {e}")
    finally:
        m.close()
    return findings


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(symbolic_cases())
def _fuzz_one(drawn: tuple[FuzzCase, int]) -> None:
    case, d = drawn
    if d == 0:
        return  # scalars and empty tensors only: nothing to make symbolic
    findings = _check(case, d)
    assert not findings, (
        f"one build with dims of size {d} as n:\n"
        + "\n".join(findings)
        + f"\n{onnx.printer.to_text(symbolize(case, d))}"
    )
    TALLY["models"] += 1


def test_one_build_fuzz_against_onnxruntime() -> None:
    TALLY.update(models=0, compiled=0, runs=0, refused_runs=0)
    _fuzz_one()
    print(
        f"symbolic fuzz: {TALLY['models']} models, {TALLY['compiled']} compiled once, "
        f"{TALLY['runs']} runs matched, {TALLY['refused_runs']} shapes refused"
    )
    # many graphs are valid at n = d only (a weight or a Reshape target of that size) and
    # are refused by name; a third or more keep their symbol and are compared at every n
    assert TALLY["compiled"] >= max(1, TALLY["models"] // 3)
    assert TALLY["runs"] >= TALLY["compiled"]


def test_an_operand_read_twice_at_run_time_size_compiles() -> None:
    """The fuzzer's find: Add(x, x) of a run-time size printed a kernel whose first
    parameter its body never named (-Werror=unused-parameter); it now says ``(void)``."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["y"])],
        "twice",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m = autofusion.compile(model, dynamic={"n": (1, 5)}, one_build=True, threads=1, cache=False)
    x = np.linspace(-1.5, 2.5, 3, dtype=np.float32)
    np.testing.assert_array_equal(m.run({"x": x})["y"], x + x)
