"""3-d convolutions and pools in the C target (``clib.conv3d``, ``afrt_conv3d_f32``).

- One-conv models against onnxruntime, each compiled once and run at 1 and 2 threads with the
  same bits (``same_bits_at_thread_counts``): stride 2 in time and space, asymmetric pads,
  ``auto_pad``, dilation, groups, depthwise with a channel multiplier, a residual Add + Relu
  epilogue, a 1x1x1 conv, two k blocks of the GEMM core with odd sizes, batch 2; some
  without fusion, one built for ``x86-64-v2`` (no AVX-512).
- ``zoo:video_resnet`` fused and with ``--no-fusion`` at 1 and 2 threads, and on
  ``x86-64-v2``; its report names every 3-d conv ``im2col_gemm_3d``.
- 3-d MaxPool (``ceil_mode``, pads, dilation), AveragePool (``count_include_pad`` 0 and 1)
  and GlobalAveragePool / GlobalMaxPool on 5-d tensors.
- Every kernel allocation failing: ``afrt_conv3d_f32``'s direct loop gives the same answer.
- A 16-bit 3-d conv is one clear error.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from runtime_drivers import same_bits_at_thread_counts

import autofusion
from autofusion.errors import AutofusionError
from autofusion.lowering.c.testing import build, compile_onnx, onnxruntime_outputs
from autofusion.runtime.loader import ModelLibrary
from autofusion.testing import assert_close
from autofusion.zoo import get_model, sample_inputs


def conv_model(
    c: int = 3,
    k: int = 5,
    dhw: tuple[int, int, int] = (7, 9, 11),
    kernel: tuple[int, int, int] = (3, 3, 3),
    n: int = 1,
    residual: bool = False,
    seed: int = 0,
    **attrs: object,
) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """x [n, c, *dhw] -> Conv (bias; ``attrs``: strides, pads, dilations, group, auto_pad)
    -> (Add x, with ``residual``) -> Relu -> y, and seeded feeds."""
    rng = np.random.default_rng(seed)
    group = int(attrs.get("group", 1))  # type: ignore[arg-type]
    fan_in = c // group * int(np.prod(kernel))
    w = rng.uniform(-1.7, 1.7, (k, c // group, *kernel)) / np.sqrt(fan_in)
    inits = [
        numpy_helper.from_array(w.astype(np.float32), "w"),
        numpy_helper.from_array(rng.uniform(-0.1, 0.1, k).astype(np.float32), "b"),
    ]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", **attrs)]
    last = "c"
    if residual:
        nodes.append(helper.make_node("Add", ["c", "x"], ["s"], name="add"))
        last = "s"
    nodes.append(helper.make_node("Relu", [last], ["y"], name="relu"))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, *dhw])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(
        helper.make_graph(nodes, "conv3d", [x], [y], inits),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    feeds = {"x": rng.uniform(-2.0, 2.0, (n, c, *dhw)).astype(np.float32)}
    return onnx.shape_inference.infer_shapes(model), feeds


P1 = [1, 1, 1, 1, 1, 1]
CASES = {
    "same_3x3x3": ({"pads": P1}, "native"),
    "stride2_all": ({"pads": P1, "strides": [2, 2, 2]}, "native"),
    "stride_time_only": ({"pads": P1, "strides": [2, 1, 1]}, "native"),
    "asymmetric_pads": ({"pads": [0, 1, 2, 2, 0, 1]}, "native"),
    "auto_pad_same_upper_s2": ({"auto_pad": "SAME_UPPER", "strides": [2, 2, 2]}, "native"),
    "dilation": ({"pads": [2, 1, 2, 2, 1, 2], "dilations": [2, 1, 2]}, "native"),
    "groups": ({"c": 4, "k": 6, "group": 2, "pads": P1}, "native"),
    "depthwise_x2": ({"c": 6, "k": 12, "group": 6, "pads": P1}, "native"),
    "residual_epilogue": ({"c": 5, "k": 5, "pads": P1, "residual": True}, "native"),
    "pointwise_1x1x1": ({"kernel": (1, 1, 1)}, "native"),
    "temporal_3x1x1": ({"kernel": (3, 1, 1), "pads": [1, 0, 0, 1, 0, 0]}, "native"),
    # 17 * 27 = 459 rows: two k blocks; 37 columns: a full and a partial 32-wide panel
    "two_k_blocks_odd": ({"c": 17, "k": 40, "dhw": (5, 13, 37), "pads": P1}, "native"),
    "batch2": ({"n": 2, "pads": P1, "strides": [1, 2, 2]}, "native"),
    "v2_groups_stride": (
        {"c": 4, "k": 6, "group": 2, "pads": P1, "strides": [2, 2, 1]},
        "x86-64-v2",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_conv3d_matches_onnxruntime_at_one_and_two_threads(case: str) -> None:
    kw, cpu = CASES[case]
    model, feeds = conv_model(**kw)  # type: ignore[arg-type]
    report = same_bits_at_thread_counts(model, feeds, cpu, counts=(1, 2))
    algos = {r["conv_algo"] for r in report["conv_algo"]}
    assert algos == {"im2col_gemm_3d"}


@pytest.mark.parametrize("case", ["stride2_all", "depthwise_x2", "residual_epilogue"])
@pytest.mark.parametrize("threads", [1, 2])
def test_conv3d_without_fusion(case: str, threads: int) -> None:
    kw, _ = CASES[case]
    model, feeds = conv_model(**kw)  # type: ignore[arg-type]
    m = autofusion.compile(model, threads=threads, fusion=False)
    try:
        got = m.run(feeds)["y"]
    finally:
        m.close()
    assert_close(got, onnxruntime_outputs(model, feeds)["y"], "y")


@pytest.mark.parametrize(("fusion", "threads"), [(True, 1), (True, 2), (False, 1), (False, 2)])
def test_video_resnet_matches_onnxruntime(fusion: bool, threads: int) -> None:
    model = get_model("video_resnet")
    feeds = sample_inputs(model)
    m = autofusion.compile(model, threads=threads, fusion=fusion)
    try:
        got = m.run(feeds)["logits"]
        rows = m.report["conv_algo"]
    finally:
        m.close()
    assert_close(got, onnxruntime_outputs(model, feeds)["logits"], "logits")
    assert len(rows) == 11
    assert {r["conv_algo"] for r in rows} == {"im2col_gemm_3d"}
    if fusion:  # the stem's BN and Relu are the GEMM's epilogue: one kernel, two origins
        assert rows[0]["origins"] == ["/stem/conv/Conv", "/stem/bn/BatchNormalization",
                                      "/stem/relu/Relu"]  # fmt: skip


def test_video_resnet_without_avx512() -> None:
    model = get_model("video_resnet")
    same_bits_at_thread_counts(model, sample_inputs(model), "x86-64-v2", counts=(1, 2))


def _pool_model(op: str, **attrs: object) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 7, 10, 13])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph([helper.make_node(op, ["x"], ["y"], name="pool", **attrs)], "pool",
                          [x], [y])  # fmt: skip
    return onnx.shape_inference.infer_shapes(
        helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    )


POOLS = {
    "max_ceil": ("MaxPool", {"kernel_shape": [3, 3, 3], "strides": [2, 2, 2], "ceil_mode": 1}),
    "max_pads_dil": ("MaxPool", {"kernel_shape": [2, 3, 3], "strides": [1, 2, 2],
                                 "pads": [0, 1, 1, 1, 1, 0], "dilations": [2, 1, 1]}),
    "max_c3d": ("MaxPool", {"kernel_shape": [1, 2, 2], "strides": [1, 2, 2], "ceil_mode": 1}),
    "avg_excl_pad": ("AveragePool", {"kernel_shape": [3, 3, 3], "strides": [2, 2, 2],
                                     "pads": P1, "ceil_mode": 1}),
    "avg_incl_pad": ("AveragePool", {"kernel_shape": [2, 3, 3], "strides": [2, 1, 2],
                                     "pads": P1, "count_include_pad": 1}),
    "global_avg": ("GlobalAveragePool", {}),
    "global_max": ("GlobalMaxPool", {}),
}  # fmt: skip


@pytest.mark.parametrize("case", list(POOLS))
@pytest.mark.parametrize("threads", [1, 2])
def test_3d_pools_match_onnxruntime(case: str, threads: int) -> None:
    op, attrs = POOLS[case]
    model = _pool_model(op, **attrs)
    feeds = {"x": np.random.default_rng(3).uniform(-3, 3, (1, 3, 7, 10, 13)).astype(np.float32)}
    m = autofusion.compile(model, threads=threads)
    try:
        got = m.run(feeds)["y"]
    finally:
        m.close()
    assert_close(got, onnxruntime_outputs(model, feeds)["y"], "y")


@pytest.mark.parametrize("case", ["two_k_blocks_odd", "depthwise_x2", "residual_epilogue"])
def test_conv3d_without_memory_takes_the_direct_loop(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every kernel allocation failing: no packed weights, no B panels; the direct loop
    computes the conv and its epilogue, and the result is right."""
    kw, _ = CASES[case]
    model, feeds = conv_model(**kw)  # type: ignore[arg-type]
    lib = ModelLibrary(
        build(compile_onnx(model), tmp_path, ("-DAFRT_TEST_FAIL_ALLOC",)),
        tmp_path / "weights.bin",
        1,
    )
    try:
        monkeypatch.setenv("AFRT_TEST_FAIL_ALLOC", "1")
        got = lib.run(feeds)["y"]
    finally:
        lib.close()
    assert_close(got, onnxruntime_outputs(model, feeds)["y"], "y")


def test_16bit_3d_conv_is_one_clear_error(tmp_path: Path) -> None:
    cfg = tmp_path / "fp16.yaml"
    cfg.write_text("precision: {fp16_ops: [Conv]}\n")
    model, _ = conv_model(pads=P1)
    with pytest.raises(AutofusionError, match=r"nn.conv \(conv\): 16-bit 3-d convolutions"):
        autofusion.compile(model, config=str(cfg))


def test_ascendc_keeps_3d_convs_and_pools_on_the_host_saying_why(tmp_path: Path) -> None:
    """Ascend C lowers 2-d convs and pools only: every 3-d group and single op is a fallback
    with its reason in the manifest, and the CPU-model run (the rest on the interpreter)
    still matches onnxruntime."""
    import json

    from autofusion.lowering.ascendc import emit_project, run_ascendc_cpu
    from autofusion.pipeline import lower

    model = get_model("video_resnet")
    feeds = sample_inputs(model)
    module = compile_onnx(model)
    lower(module, "ascendc")
    got = run_ascendc_cpu(module, feeds)["logits"]
    emit_project(module, tmp_path)
    fallback = json.loads((tmp_path / "manifest.json").read_text())["fallback"]
    assert "fusion.kernel (only 2-d convolution is lowered)" in fallback
    assert "nn.max_pool (nn.max_pool on rank 5 (only 2-d pooling is lowered))" in fallback
    assert all("(" in f for f in fallback), fallback  # each says why
    assert_close(got, onnxruntime_outputs(model, feeds)["logits"], "logits")


def test_conv3d_with_dynamic_batch_and_time() -> None:
    """Batch and time declared as ranges: every shape in them matches onnxruntime."""
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array((rng.uniform(-0.3, 0.3, (6, 4, 3, 3, 3))).astype(np.float32), "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, "T", 9, 11])
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=P1, strides=[2, 1, 2], name="conv"),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(
        helper.make_graph(nodes, "dyn3d", [x], [y], [w]),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    m = autofusion.compile(model, dynamic={"N": (1, 3), "T": (3, 9)})
    try:
        for n, t in [(1, 3), (3, 9), (2, 5)]:
            feeds = {"x": rng.uniform(-2, 2, (n, 4, t, 9, 11)).astype(np.float32)}
            assert_close(m.run(feeds)["y"], onnxruntime_outputs(model, feeds)["y"], "y")
    finally:
        m.close()
