"""The tensor passes on symbolic modules (issue 12; docs/dynamic.md, "Symbolic import"): the
dynamic-axis exports, imported once with ``batch``/``seq`` symbols and run through the
symbol-aware tensor passes of the pipeline (fusion, then the memory plan), still match
onnxruntime at every (batch, seq), and fuse the same way as an import pinned to one shape.
Estimates (cost model, report) size a symbolic value at the symbols' upper bounds; a symbol
without one is a clear error.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from test_symbolic import CNNS, DATA, MANIFEST, RANGES, TRANSFORMERS, _check_at
from xdsl.dialects.builtin import DictionaryAttr, ModuleOp

from autofusion.dialects import nn
from autofusion.dialects.attrs import SYMBOLS
from autofusion.dialects.fusion import KernelOp
from autofusion.errors import AutofusionError
from autofusion.frontend.onnx_import import import_onnx
from autofusion.interpreter.core import run_module
from autofusion.passes import get_all_passes
from autofusion.pipeline import Pipeline, PipelineOptions
from autofusion.policy.report import build_report, summarize_report
from autofusion.testing import assert_close

#: The tensor passes that handle symbolic sizes, in pipeline order (docs/dynamic.md).
SYMBOLIC_PASSES = (
    "canonicalize-nn",
    "fold-batchnorm",
    "recognize-layernorm",
    "recognize-gelu",
    "recognize-attention",
    "fuse-conv-bn-relu",
    "fuse",
    "fuse-conv-chain",
)
ANCHORS = ("nn.matmul", "nn.gemm", "nn.attention", "nn.conv")
CNN_BATCH = {"batch": (1, 8)}


def _symbolic_pipeline(config: Path | None = None) -> Pipeline:
    """The C pipeline's tensor stages that handle symbols (options as a compile sets them):
    these passes, then the memory plan (at the upper bounds: test_symbolic.py)."""
    opts = PipelineOptions(config=str(config) if config else None)
    pipe = Pipeline.from_options(opts).tensor()
    kept = tuple(s for s in pipe.stages if getattr(s.pass_, "symbolic", False))
    return dataclasses.replace(pipe, stages=kept)


def _import(name: str, pinned: dict[str, int] | None = None) -> ModuleOp:
    path = DATA / MANIFEST[name]["files"][0]
    if pinned is None:
        return import_onnx(path, symbols=CNN_BATCH if name in CNNS else RANGES)
    shapes = {
        s["name"]: [pinned.get(d, d) for d in s["symbolic_shape"]] for s in MANIFEST[name]["inputs"]
    }
    return import_onnx(path, input_shapes=shapes)


def _signature(k: KernelOp) -> str:
    return " ".join(o.name for o in k.body.block.ops if not isinstance(o, nn.ConstantOp))


def _anchored_kernels(module: ModuleOp) -> Counter[str]:
    """The kernels built around a contraction, by their ops: the model's body. (The mask's
    index arithmetic differs: a pinned import folds it, a symbolic one keeps it as ops.)"""
    sigs = (_signature(k) for k in module.walk() if isinstance(k, KernelOp))
    return Counter(s for s in sigs if any(a in s.split() for a in ANCHORS))


def test_the_symbol_aware_passes_are_the_declared_ones() -> None:
    declared = {n for n, f in get_all_passes().items() if getattr(f(), "symbolic", False)}
    # the tensor passes, the memory plan, and the C target's lowering (test_symbolic.py)
    lowering = {"convert-nn-to-buffers", "legalize-contractions", "lower-nn-to-loops"}
    # assign-precision runs only under a config with fp16_ops/bf16_ops (not in this pipeline)
    assert declared == {*SYMBOLIC_PASSES, "assign-precision", "plan-buffers", *lowering}
    assert _symbolic_pipeline().names == [*SYMBOLIC_PASSES, "plan-buffers"]


@pytest.mark.parametrize("name", TRANSFORMERS + CNNS)
def test_fused_symbolic_module_matches_onnxruntime_at_every_shape(name: str) -> None:
    module = _import(name)
    _symbolic_pipeline().run(module)  # verifies after every pass
    assert '#nn.shape<["batch",' in str(module)
    if name in CNNS:
        shapes = [(1, 0), (3, 0), (8, 0)]
    else:
        shapes = [(1, 16), (4, 64), (2, 200), (1, 512)]
        attention = [o for o in module.walk() if isinstance(o, nn.AttentionOp)]
        assert len(attention) == 2  # two layers, recognised with symbolic seq x seq scores
    for i, (b, s) in enumerate(shapes):
        _check_at(module, name, b, s, seed=10 + i)
    # the same structure as an import pinned at seq 128 (batch 2: not 1, which would make
    # broadcasts over batch trivial)
    pinned = _import(name, {"batch": 2, "seq": 128})
    _symbolic_pipeline().run(pinned)
    want = _anchored_kernels(pinned)
    assert _anchored_kernels(module) == want
    if name not in ("gpt2_tsdyn", "gpt2_dynamodyn"):  # GPT-2's Gemms fuse nothing at level 1
        assert sum(want.values()) >= 5


@pytest.mark.parametrize("strategy", ["rules", "learned"])
def test_recompute_and_learned_decisions_take_symbolic_modules(
    strategy: str, tmp_path: Path
) -> None:
    """Aggressiveness 3 (recompute, LayerNorm/Softmax epilogues) and the learned model's
    kernel times, both sized at the upper bounds, on one transformer and one CNN."""
    config = tmp_path / "fusion.json"
    config.write_text(json.dumps({"strategy": strategy, "aggressiveness": 3}))
    for name, (b, s) in (("gpt2_tsdyn", (3, 77)), ("mobilenet_dynamodyn", (3, 0))):
        module = _import(name)
        _symbolic_pipeline(config).run(module)
        kernels = [o for o in module.walk() if isinstance(o, KernelOp)]
        assert len(kernels) >= 5
        _check_at(module, name, b, s, seed=7)


def test_report_sizes_symbolic_values_at_their_upper_bounds() -> None:
    module = _import("bert_tsdyn")
    _symbolic_pipeline().run(module)
    report = build_report(module)
    assert report["symbols"] == {"batch": {"range": [1, 4]}, "seq": {"range": [1, 512]}}
    # a pinned import at the upper bounds gives the same figures for the model's kernels
    top = _import("bert_tsdyn", {"batch": 4, "seq": 512})
    _symbolic_pipeline().run(top)
    top_report = build_report(top)
    assert "symbols" not in top_report

    def by_origin(r: dict[str, object]) -> dict[tuple[str, ...], tuple[int, int]]:
        return {
            tuple(g["origins"]): (g["flops"], g["estimated_bytes_saved"])
            for g in r["groups"]  # type: ignore[attr-defined]
            if g["pattern"].startswith(("matmul", "gemm"))
        }

    got, want = by_origin(report), by_origin(top_report)
    assert got
    assert got == want
    assert all(f > 0 for f, _ in got.values())
    summary = summarize_report(report)
    assert "at the symbols' upper bounds (batch <= 4, seq <= 512)" in summary
    # shapes in refusal reasons are the sizes' text, not their Python repr
    reasons = " ".join(r["reason"] for r in report["refusals"])
    assert "Size(" not in reasons
    assert "(batch, 1, 1, seq)" in reasons


def _conv_bn_model() -> helper.ModelProto:
    """Conv -> BatchNormalization -> Relu with a dynamic batch ``n`` (BN kept, opset 13)."""
    rng = np.random.default_rng(0)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4, 8, 8])
    inits = [
        numpy_helper.from_array(rng.normal(0, 0.3, (4, 3, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(rng.uniform(0.7, 1.3, 4).astype(np.float32), "g"),
        numpy_helper.from_array(rng.normal(0, 0.1, 4).astype(np.float32), "b"),
        numpy_helper.from_array(rng.normal(0, 0.1, 4).astype(np.float32), "m"),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 4).astype(np.float32), "v"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["bn"], name="bn"),
        helper.make_node("Relu", ["bn"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(nodes, "conv_bn", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_batchnorm_folds_into_a_conv_of_symbolic_batch() -> None:
    model = _conv_bn_model()
    module = import_onnx(model, symbols={"n": (1, 6)})
    _symbolic_pipeline().run(module)
    assert not any(isinstance(o, nn.BatchNormOp) for o in module.walk())
    kernels = [o for o in module.walk() if isinstance(o, KernelOp)]
    assert [k.pattern_name for k in kernels] == ["conv_relu"]
    sess = ort.InferenceSession(model.SerializeToString())
    for b in (1, 5):
        x = np.random.default_rng(b).standard_normal((b, 3, 8, 8)).astype(np.float32)
        want = sess.run(None, {"x": x})[0]
        assert 0.1 <= float(np.abs(want).max()) <= 10
        assert_close(run_module(module, {"x": x})["y"], want, f"conv-bn-relu batch {b}")


def test_a_symbol_without_upper_bound_is_a_clear_error_where_a_size_is_estimated() -> None:
    module = import_onnx(_conv_bn_model(), symbols={"n": (1, 6)})
    # what a hand-written module with an undeclared symbol range looks like to the passes
    module.attributes[SYMBOLS] = DictionaryAttr({})
    # (fuse-conv-bn-relu is the first pass to ask the cost model for a size)
    want = r"pass 'fuse-conv-bn-relu' on a symbolic module: n has no upper bound: declare a range"
    with pytest.raises(AutofusionError, match=want):
        _symbolic_pipeline().run(module)
