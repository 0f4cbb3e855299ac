"""``--save-fused-onnx``: each fused kernel becomes an ONNX local function; onnxruntime runs
the saved model and must give the original model's outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hostile import assert_clean_cli_error, assert_nothing_written, run_tool
from onnx import TensorProto, helper

from autofusion.api import open_model, prepare_module
from autofusion.fused_onnx import DOMAIN, FusedSummary, Group, _drop_cyclic, full_model, fused_model
from autofusion.pipeline import PipelineOptions
from autofusion.testing import assert_close
from autofusion.zoo import get_model, sample_inputs


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return [np.asarray(v) for v in sess.run(None, feeds)]


def _fused(name: str) -> tuple[onnx.ModelProto, onnx.ModelProto, FusedSummary, int]:
    model = get_model(name)
    source = open_model(model)
    module, report = prepare_module(source, PipelineOptions())
    fused, summary = fused_model(full_model(source.loaded), module)
    return model, fused, summary, int(report["kernels_after"])


@pytest.mark.parametrize("name", ["tiny_cnn", "tiny_bert"])
def test_fused_model_runs_in_onnxruntime_and_matches(name: str) -> None:
    model, fused, summary, _ = _fused(name)
    onnx.checker.check_model(fused)
    # tiny_cnn: stem, two block convs, the head; its depthwise + 1x1 are one chain kernel
    # where the build has the blocked chain band (AVX-512), two kernels elsewhere
    assert summary.functions >= 4, summary.as_dict()
    assert len(fused.functions) == summary.functions
    calls = [n for n in fused.graph.node if n.domain == DOMAIN]
    assert len(calls) == summary.functions
    assert len(fused.graph.node) == summary.functions + summary.plain_nodes
    assert summary.nodes_in_functions + summary.plain_nodes == len(model.graph.node)
    feeds = sample_inputs(model)
    ref = _ort(model, feeds)
    got = _ort(fused, feeds)
    assert float(np.std(ref[0])) > 0.05, "the zoo model's output must not be constant"
    for i, (g, r) in enumerate(zip(got, ref)):
        assert_close(g, r, f"{name} output {i}")


def test_functions_hold_the_kernels_onnx_nodes() -> None:
    model, fused, _, _ = _fused("tiny_cnn")
    by_name = {f.name: f for f in fused.functions}
    conv_relu = [f for n, f in by_name.items() if n.startswith("conv_relu_")]
    assert conv_relu, sorted(by_name)
    body = [n.op_type for n in conv_relu[0].node]
    assert body[0] == "Conv", body
    assert body[-1] == "Relu", body
    # every original node is in exactly one place: a function body or the main graph
    names = [n.name for f in fused.functions for n in f.node]
    names += [n.name for n in fused.graph.node if n.domain != DOMAIN]
    assert sorted(names) == sorted(n.name for n in model.graph.node)
    assert fused.ir_version >= 8
    assert any(o.domain == DOMAIN for o in fused.opset_import)


def test_a_group_that_would_make_a_cycle_stays_plain() -> None:
    # a -> b -> c and a -> c: contracting {a, c} without b would make a cycle
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="a"),
        helper.make_node("Neg", ["a"], ["b"], name="b"),
        helper.make_node("Add", ["a", "b"], ["c"], name="c"),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [2])],
    )  # fmt: skip
    groups = [Group("bad_0", "bad", ["a", "c"], [0, 2]), Group("ok_1", "ok", ["b"], [1])]
    owner = [0, 1, 0]
    summary = FusedSummary()
    _drop_cyclic(graph, groups, owner, summary)
    assert owner == [-1, 1, -1]
    assert summary.skipped["cyclic"] == 1


def test_cli_writes_the_fused_model(tmp_path: Path) -> None:
    target = tmp_path / "fused.onnx"
    proc = run_tool("compile", ["zoo:tiny_cnn", "-o", str(tmp_path / "out"),
                                "--save-fused-onnx", str(target)], timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()
    assert "fused ONNX:" in proc.stderr.decode()
    fused = onnx.load(str(target))
    assert fused.functions
    model = get_model("tiny_cnn")
    feeds = sample_inputs(model)
    assert_close(_ort(fused, feeds)[0], _ort(model, feeds)[0], "tiny_cnn via the CLI")


def test_cli_refuses_an_unwritable_fused_path_before_writing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    bad = tmp_path / "no" / "such" / "dir" / "fused.onnx"
    proc = run_tool("compile", ["zoo:tiny_cnn", "-o", str(out), "--save-fused-onnx", str(bad)],
                    timeout=300)  # fmt: skip
    assert_clean_cli_error(proc, "--save-fused-onnx")
    assert_nothing_written(out)
    inside = out / "fused.onnx"
    proc = run_tool("compile", ["zoo:tiny_cnn", "-o", str(out), "--save-fused-onnx", str(inside)],
                    timeout=300)  # fmt: skip
    assert_clean_cli_error(proc, "--save-fused-onnx", "inside the output folder")
    assert_nothing_written(out)
