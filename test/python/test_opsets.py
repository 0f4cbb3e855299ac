"""Opsets 22 to 28: the op versions they bring are accepted only where ``onnx.defs`` shows
that nothing but element types changed (registry.TYPE_ONLY_VERSIONS) or a reviewed narrower
change (registry.REVIEWED_VERSIONS); other new versions are refused by name. Inputs computed
by folded subgraphs are accepted where constants are needed."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.defs
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from autofusion.errors import AutofusionError
from autofusion.frontend import import_onnx, registry
from autofusion.frontend.converters import tables
from autofusion.frontend.loader import MAX_OPSET
from autofusion.interpreter import run_module
from autofusion.lowering.c.testing import onnxruntime_outputs
from autofusion.testing import assert_close


def _signature(s: onnx.defs.OpSchema) -> object:
    attrs = {k: (v.type, v.default_value.SerializeToString()) for k, v in s.attributes.items()}
    ios = [[(p.name, p.option) for p in ps] for ps in (s.inputs, s.outputs)]
    return attrs, ios


def _types(s: onnx.defs.OpSchema) -> dict[str, set[str]]:
    return {tc.type_param_str: set(tc.allowed_type_strs) for tc in s.type_constraints}


@pytest.mark.parametrize("op", sorted(registry.TYPE_ONLY_VERSIONS))
def test_type_only_versions_change_only_types(op: str) -> None:
    old = onnx.defs.get_schema(op, registry.SEMANTICS_OPSET, "")
    for version in registry.TYPE_ONLY_VERSIONS[op]:
        new = onnx.defs.get_schema(op, version, "")
        assert new.since_version == version
        assert _signature(new) == _signature(old), f"{op}-{version} changed its signature"
        before, after = _types(old), _types(new)
        assert set(after) == set(before)
        assert all(before[k] <= after[k] for k in before), f"{op}-{version} removed types"


def _reviewed() -> list[tuple[str, int, str]]:
    return [(op, v, k) for op, vs in registry.REVIEWED_VERSIONS.items() for v, k in vs.items()]


@pytest.mark.parametrize(("op", "version", "kind"), _reviewed())
def test_reviewed_versions_change_only_what_they_say(op: str, version: int, kind: str) -> None:
    new = onnx.defs.get_schema(op, version, "")
    old = onnx.defs.get_schema(op, version - 1, "")
    assert new.since_version == version
    (new_attrs, new_ios), (old_attrs, old_ios) = _signature(new), _signature(old)  # type: ignore[misc]
    assert new_ios == old_ios
    before, after = _types(old), _types(new)
    assert set(after) == set(before)
    if kind == "new_attribute":
        attr = registry.NEW_ATTRIBUTES[op][0]
        assert set(new_attrs) - set(old_attrs) <= {attr}

        def without(attrs: dict[str, object]) -> dict[str, object]:
            return {k: v for k, v in attrs.items() if k != attr}

        assert without(new_attrs) == without(old_attrs)
        assert all(before[k] <= after[k] for k in before)
        assert not onnx.defs.get_schema(op, version, "").attributes[attr].required
    else:
        assert new_attrs == old_attrs
        if kind == "types_removed":
            assert all(after[k] <= before[k] for k in before)
            assert all("tensor(float)" in after[k] for k in after)
        else:
            assert kind == "doc_only"
            assert after == before


def test_range_27_with_float16_is_refused() -> None:
    # Range-27's stash_type (default 1) accumulates float16 in float32: not implemented.
    g = h.make_graph(
        [h.make_node("Range", ["a", "b", "c"], ["y"])],
        "g",
        [h.make_tensor_value_info(n, T.FLOAT16, []) for n in "abc"],
        [h.make_tensor_value_info("y", T.FLOAT16, None)],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 27)])
    with pytest.raises(AutofusionError, match=r"Range version 27 .*'stash_type'"):
        import_onnx(m, progress=False)


def test_every_registered_op_is_reviewed_up_to_max_opset() -> None:
    converters, folders = tables()
    unreviewed = []
    for op in sorted(set(converters) | set(folders)):
        for opset in range(registry.SEMANTICS_OPSET + 1, MAX_OPSET + 1):
            if registry.version_problem(op, opset) is not None:
                unreviewed.append((op, opset))
    # Not a failure of the importer (it refuses them), but raising MAX_OPSET must review them.
    assert not unreviewed, unreviewed


def test_new_version_with_other_semantics_is_refused() -> None:
    # Mish-22 is a type-only change too, but it is not in the reviewed table: the check refuses
    # any version newer than the implemented semantics unless it is listed.
    assert registry.version_problem("Conv", 22) is None
    assert registry.version_problem("Relu", 23) is None  # Relu-14 is still current
    msg = registry.version_problem("Mish", 22)
    assert msg is not None
    assert "Mish version 22 (opset 22)" in msg


def test_opset_above_max_is_refused() -> None:
    g = h.make_graph(
        [h.make_node("Relu", ["x"], ["y"])],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2])],
        [h.make_tensor_value_info("y", T.FLOAT, [2])],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", MAX_OPSET + 1)])
    with pytest.raises(AutofusionError, match=f"opset {MAX_OPSET + 1} is not supported"):
        import_onnx(m, progress=False)


@pytest.mark.parametrize("opset", [22, 23, 24, 25])
def test_new_opset_model_matches_onnxruntime(opset: int) -> None:
    rng = np.random.default_rng(0)
    w = h.make_tensor("w", T.FLOAT, [4, 3, 3, 3], rng.uniform(-0.5, 0.5, 108).tolist())
    nodes = [
        h.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        h.make_node("HardSwish", ["c"], ["a"]),
        h.make_node("MaxPool", ["a"], ["p"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
        h.make_node("Shape", ["p"], ["s"]),
        h.make_node("Gather", ["s", "zero"], ["n"]),
        h.make_node("Concat", ["n", "minus1"], ["shape"], axis=0),
        h.make_node("Reshape", ["p", "shape"], ["y"]),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 5, 5])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        initializer=[
            w,
            h.make_tensor("zero", T.INT64, [1], [0]),
            h.make_tensor("minus1", T.INT64, [1], [-1]),
        ],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    x = rng.uniform(-2, 2, (1, 3, 5, 5)).astype(np.float32)
    out = run_module(import_onnx(m, progress=False), {"x": x})
    ref = onnxruntime_outputs(m, {"x": x})
    assert out["y"].shape == (1, 36)
    assert_close(out["y"], ref["y"], "y")


def test_folded_subgraphs_give_constant_inputs() -> None:
    # Axes from Constant+Add and from Shape/Gather/Sub, Clip bounds from Neg/Abs of a constant.
    nodes = [
        h.make_node("Constant", [], ["c"], value=h.make_tensor("v", T.INT64, [1], [0])),
        h.make_node("Add", ["c", "c"], ["ax"]),
        h.make_node("Shape", ["x"], ["s"]),
        h.make_node("Gather", ["s", "one"], ["g"]),
        h.make_node("Sub", ["g", "three"], ["ax2"]),
        h.make_node("ReduceSum", ["x", "ax"], ["r"]),
        h.make_node("ReduceMean", ["r", "ax2"], ["z"]),
        h.make_node("Constant", [], ["hi0"], value=h.make_tensor("v", T.FLOAT, [], [0.5])),
        h.make_node("Neg", ["hi0"], ["lo"]),
        h.make_node("Abs", ["lo"], ["hi"]),
        h.make_node("Clip", ["z", "lo", "hi"], ["y"]),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2, 4, 3])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        initializer=[
            h.make_tensor("one", T.INT64, [1], [1]),
            h.make_tensor("three", T.INT64, [1], [3]),
        ],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)])
    module = import_onnx(m, progress=False)
    text = str(module)
    assert "nn.reduce_sum" in text
    assert "axes = array<i64: 0>" in text
    assert "axes = array<i64: 1>" in text
    assert "nn.clip" in text
    x = np.random.default_rng(1).uniform(-1, 1, (2, 4, 3)).astype(np.float32)
    assert_close(run_module(module, {"x": x})["y"], onnxruntime_outputs(m, {"x": x})["y"], "y")
