"""The time-predicting cost model (``autofusion/analysis/predict.py``) and its use in the
fusion decision: fuse when the predicted fused kernel is faster than its parts."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from autofusion import testing
from autofusion.analysis import predict
from autofusion.analysis.hardware import ASCEND_910B, cpu_this_machine
from autofusion.dialects.fusion import KernelOp
from autofusion.frontend.onnx_import import import_onnx
from autofusion.interpreter import run_module
from autofusion.passes import get_all_passes
from autofusion.policy.report import build_report

ROOFS = predict.Roofs(
    gemm_flops=100e9, vector_flops=10e9, mem_bandwidth=10e9, l2_bandwidth=100e9,
    overhead_s=1e-6, vector_lanes=16,
)  # fmt: skip


def model(nodes: list[onnx.NodeProto], inputs: dict[str, list[int]],
          outputs: dict[str, list[int]], inits: dict[str, np.ndarray] | None = None
          ) -> onnx.ModelProto:  # fmt: skip
    g = helper.make_graph(
        nodes,
        "m",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, v) for k, v in inputs.items()],
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, v) for k, v in outputs.items()],
        [onnx.numpy_helper.from_array(v, k) for k, v in (inits or {}).items()],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def top_ops(module: ModuleOp) -> list:
    f = next(iter(module.ops))
    return [o for o in f.regions[0].block.ops if o.name not in ("func.return", "nn.constant")]


def test_matmul_work_and_roofline() -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((256, 512)).astype(np.float32)
    m = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
              {"x": [64, 256]}, {"y": [64, 512]}, {"w": w})  # fmt: skip
    (op,) = top_ops(import_onnx(m))
    hw = cpu_this_machine()
    work = predict.op_work(op, hw)
    assert work.contraction_flops == 2 * 64 * 256 * 512
    assert work.vector_flops == 0
    # x (64 KiB), w (512 KiB), y (128 KiB) all fit L2: served from L2, none from memory
    assert work.mem_bytes == 0
    assert work.l2_bytes == 4 * (64 * 256 + 256 * 512 + 64 * 512) + predict._gemm_rereads(op, hw)
    assert predict.contraction_dims(op) == (64, 512, 256)
    assert work.gemm_efficiency == 1.0
    t = predict.predict_seconds(work, ROOFS)
    assert t == pytest.approx(
        max(work.contraction_flops / 100e9, work.l2_bytes / 100e9) + 1e-6, rel=1e-12
    )


def test_depthwise_conv_runs_below_the_roof() -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((16, 1, 3, 3)).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="dw", group=16, pads=[1, 1, 1, 1])
    (op,) = top_ops(import_onnx(model([node], {"x": [1, 16, 16, 16]}, {"y": [1, 16, 16, 16]},
                                      {"w": w})))  # fmt: skip
    assert predict.contraction_dims(op) == (256, 1, 9)
    assert predict.contraction_efficiency(op, 16) == pytest.approx(1 / 16)


def test_intermediates_stream_spill_or_stay_in_l2() -> None:
    hw = cpu_this_machine()
    big = [1, hw.fused_cache_bytes // 4 + 1024]  # one fp32 tensor larger than L2
    small = [64, 64]
    for shape, where in ((small, "l2"), (big, "mem")):
        # relu -> softmax: the relu result is a buffer (softmax is a row loop, not inline)
        m = model([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                   helper.make_node("Softmax", ["r"], ["y"], name="sm", axis=-1)],
                  {"x": shape}, {"y": shape})  # fmt: skip
        ops = top_ops(import_onnx(m))
        alone = predict.group_work(ops[:1], hw)
        fused = predict.group_work(ops, hw)
        v = 4 * int(np.prod(shape))
        if where == "l2":
            assert fused.mem_bytes == 0
            assert fused.l2_bytes == 2 * v + 2 * v  # x in, y out, r written and read
        else:
            assert fused.mem_bytes == 4 * v  # x, y and the spilled r twice
        assert alone.vector_flops == int(np.prod(shape))
    # relu -> tanh: the relu is evaluated inline, it moves no bytes
    m = model(
        [
            helper.make_node("Relu", ["x"], ["r"], name="relu"),
            helper.make_node("Tanh", ["r"], ["y"], name="tanh"),
        ],
        {"x": small},
        {"y": small},
    )
    fused = predict.group_work(top_ops(import_onnx(m)), hw)
    assert fused.l2_bytes == 2 * 4 * 64 * 64


SHARED = [
    helper.make_node("Tanh", ["x"], ["g"], name="tanh"),
    helper.make_node("Sigmoid", ["g"], ["a"], name="sig"),
    helper.make_node("Exp", ["g"], ["b"], name="exp"),
]


def test_inline_op_read_by_two_roots_is_computed_twice() -> None:
    ops = top_ops(import_onnx(model(SHARED, {"x": [64, 1024]}, {"a": [64, 1024], "b": [64, 1024]})))
    hw = cpu_this_machine()
    n = 64 * 1024
    fused = predict.group_work(ops, hw)
    assert fused.vector_flops == (2 * 8 + 6 + 6) * n  # tanh twice, sigmoid and exp once
    t = predict.join_times(ops[:2], ops[2], hw, ROOFS)
    assert t.fused > t.parts  # compute-bound: the duplicated tanh costs more than it saves


def test_fuse_refuses_a_join_predicted_slower_and_keeps_semantics() -> None:
    m = model(SHARED, {"x": [64, 1024]}, {"a": [64, 1024], "b": [64, 1024]})
    module = import_onnx(m)
    feeds = {"x": np.random.default_rng(1).standard_normal((64, 1024)).astype(np.float32)}
    ref = run_module(module, feeds)
    get_all_passes()["fuse"]()().apply(Context(), module)
    module.verify()
    r = build_report(module)
    assert [g["origins"] for g in r["groups"]] == [["tanh", "sig"]]
    refused = [x for x in r["refusals"] if x["code"] == "cost"]
    assert [(x["nodes"], x["decided_by"]) for x in refused] == [(["tanh", "exp"], "cost")]
    assert "predicted fused time" in refused[0]["reason"]
    got = run_module(module, feeds)
    for k in ref:
        testing.assert_close(got[k], ref[k], k)
    # a cheap shared op (relu, 1 FLOP) is still fused: the saved traffic wins
    cheap = [helper.make_node("Relu", ["x"], ["g"], name="relu"), *SHARED[1:]]
    module = import_onnx(model(cheap, {"x": [64, 1024]}, {"a": [64, 1024], "b": [64, 1024]}))
    get_all_passes()["fuse"]()().apply(Context(), module)
    assert sum(isinstance(o, KernelOp) for o in top_ops(module)) == 1


def test_recorded_roofs_are_deterministic() -> None:
    a = predict.Roofs.of(cpu_this_machine())
    assert a == predict.Roofs.of(cpu_this_machine())
    assert a.gemm_flops == cpu_this_machine().peak_flops
    assert predict.Roofs.of(ASCEND_910B).mem_bandwidth == ASCEND_910B.dram_bandwidth


def test_measured_roofs_are_cached_per_machine(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOFUSION_CACHE_DIR", str(tmp_path))
    calls: list[str] = []
    import autofusion.analysis.hardware as hwmod

    monkeypatch.setattr(hwmod, "measure_copy_bandwidth", lambda *a: calls.append("copy") or 8e9)
    monkeypatch.setattr(predict, "measure_vector_flops", lambda: 4e9)
    first = predict.measured_roofs(50e9)
    assert (first.gemm_flops, first.mem_bandwidth, first.vector_flops) == (50e9, 8e9, 4e9)
    assert (tmp_path / "roofs.json").is_file()
    measured = len(calls)
    again = predict.measured_roofs(60e9, overhead_s=2e-6)
    assert len(calls) == measured  # read from the cache, not measured again
    assert again.overhead_s == 2e-6
    assert again.gemm_flops == 60e9  # the caller's GEMM roof, never a cached one
    predict.measured_roofs(50e9, refresh=True)
    assert len(calls) == 2 * measured
