"""Fusion on the zoo's ResNet-50: every Conv->BN(->ReLU) is fused and the kernel count is
no higher than onnxruntime's optimised node count; windowed structure analysis."""

from __future__ import annotations

from pathlib import Path

import onnx
import onnxruntime as ort
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from autofusion import zoo
from autofusion.analysis import structure
from autofusion.dialects import nn
from autofusion.dialects.fusion import KernelOp
from autofusion.frontend.onnx_import import import_onnx
from autofusion.passes import get_all_passes
from autofusion.passes.fuse import Decision
from autofusion.pipeline import TENSOR_PASSES
from autofusion.policy.engine import FusionPolicy
from autofusion.policy.reasons import RefusalLog, origins_of
from autofusion.policy.report import build_report

# The tensor-level pipeline up to and including fusion (no memory planning or tiling).
PIPELINE = tuple(name for name, group in TENSOR_PASSES if group in ("cleanup", "fusion"))


def fused(name: str) -> ModuleOp:
    module = import_onnx(zoo.get_model(name))
    for p in PIPELINE:
        get_all_passes()[p]()().apply(Context(), module)
    module.verify()
    return module


@pytest.fixture(scope="module")
def resnet() -> ModuleOp:
    return fused("resnet50")


def ort_optimised_node_count(model: onnx.ModelProto, tmp: Path) -> int:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.optimized_model_filepath = str(tmp / "ort_optimised.onnx")
    so.log_severity_level = 3
    ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return len(onnx.load(so.optimized_model_filepath, load_external_data=False).graph.node)


def test_resnet50_every_conv_bn_relu_is_fused(resnet: ModuleOp) -> None:
    model = zoo.get_model("resnet50")
    graph = model.graph
    producer = {o: n for n in graph.node for o in n.output}
    in_kernel: set[str] = set()
    top_level: dict[str, str] = {}
    for op in resnet.walk():
        if isinstance(op, KernelOp):
            in_kernel.update(op.origin_names)
        elif op.name.startswith("nn.") and not isinstance(op.parent_op(), KernelOp):
            for o in origins_of(op):
                top_level[o] = op.name
    assert not any(op.name == "nn.batch_norm" for op in resnet.walk())
    checked = 0
    for n in graph.node:
        if n.op_type != "BatchNormalization":
            continue
        conv = producer[n.input[0]]
        assert conv.op_type == "Conv"
        # the BN is folded into its conv: both names sit on the same (possibly fused) op
        assert n.name in in_kernel or top_level.get(n.name) == "nn.conv", n.name
        checked += 1
    assert checked == 53
    relus = [n for n in graph.node if n.op_type == "Relu"]
    assert relus
    assert all(r.name in in_kernel for r in relus)


def test_resnet50_kernel_count_vs_onnxruntime(resnet: ModuleOp, tmp_path: Path) -> None:
    ours = build_report(resnet)["kernels_after"]
    theirs = ort_optimised_node_count(zoo.get_model("resnet50"), tmp_path)
    print(f"resnet50: autofusion kernels {ours}, onnxruntime optimised nodes {theirs}")
    assert ours <= theirs


def _bert_ops() -> list:
    module = import_onnx(zoo.get_model("tiny_bert"))
    for p in PIPELINE[: PIPELINE.index("fuse-conv-bn-relu")]:  # recognised, not fused
        get_all_passes()[p]()().apply(Context(), module)
    f = next(iter(module.ops))
    return [o for o in f.body.block.ops if o.name != "func.return"]  # type: ignore[attr-defined]


def _analyse(ops: list, window: int) -> structure.StructureResult:
    policy = FusionPolicy.resolve(None, 1)
    from autofusion.analysis.hardware import cpu_this_machine

    return structure.find_clusters(
        ops, Decision(policy, cpu_this_machine()), RefusalLog(), window_size=window
    )


def test_window_covering_the_graph_equals_whole_graph() -> None:
    ops = _bert_ops()
    whole, wide = _analyse(ops, 0), _analyse(ops, len(ops) + 1)
    agree = structure.agreement(whole, wide)
    assert agree["exact_kernel_agreement"] == 1.0
    assert agree["op_agreement"] == 1.0


def test_small_windows_never_cross_a_boundary() -> None:
    ops = _bert_ops()
    pos = {op: i for i, op in enumerate(ops)}
    res = _analyse(ops, 8)
    for group in res.partition():
        assert len({pos[o] // 8 for o in group}) == 1
    agree = structure.agreement(_analyse(ops, 0), res)
    assert 0.0 < agree["op_agreement"] < 1.0  # windows of 8 split some epilogues


def test_conv_kernels_keep_constants_as_inputs(resnet: ModuleOp) -> None:
    """Large weights stay kernel inputs (bytes-backed constants outside the kernel)."""
    k = next(
        op for op in resnet.walk() if isinstance(op, KernelOp) and op.pattern_name == "conv_relu"
    )
    assert any(isinstance(v.owner, nn.ConstantOp) for v in k.inputs)
