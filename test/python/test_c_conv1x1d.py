"""The direct 1x1 convolution for few output channels (``afrt_conv1x1d_f32``, afrt_nchwc.h,
algo ``direct_1x1``).

A sweep of 1x1 convs the rule sends to the kernel (maps whose positions end in a full
48-position tile or in a short one of every kind, output channels not a multiple of the
8-channel register tile, odd input channels, batch 2, weights as a graph input), each with a
fused epilogue (none, bias, Relu, Clip(0, 6), SiLU, bias + residual Add + Relu), is packed
into one multi-branch model, built for this CPU at one, two and three threads and compared
with onnxruntime; a NaN and an inf in an input must give exactly ONNX's NaN and inf. Built
for ``--cpu x86-64-v2`` the same model takes ``gemm_1x1`` and matches too.
``clib.direct_1x1_applies`` is checked against ``afrt_conv1x1d_applies`` compiled in C.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import onnx
import pytest
from conv_epilogues import Built, branches_model, conv_branch, sweep_feeds
from onnx import TensorProto, helper, numpy_helper
from runtime_drivers import conv_rule_outputs

import autofusion
from autofusion.dialects import clib
from autofusion.lowering.c.testing import onnxruntime_outputs
from autofusion.runtime import toolchain
from autofusion.testing import assert_close

needs_avx512 = pytest.mark.skipif(
    not toolchain.cpu_has_avx512("native"), reason="direct_1x1 is chosen on AVX-512 only"
)

# c, k, h, w, epilogue: 23x23 = 11 tiles + 1 position, 24x24 = 12 exactly, 17x31 = 10 + 47,
# 32x17 = 11 + 16, 25x21 = 10 + 45
CASES: list[tuple[int, int, int, int, str]] = [
    (32, 16, 23, 23, "relu"),
    (17, 5, 24, 24, "bias"),
    (72, 32, 17, 31, "bias_add_relu"),
    (130, 24, 32, 17, "relu6"),
    (16, 9, 25, 21, "silu"),
    (64, 32, 23, 23, "none"),
]


def conv1x1_branch(rng: np.random.Generator, i: int, c: int, k: int, h: int, w: int, epi: str,
                   batch: int = 1, w_input: bool = False) -> Built:  # fmt: skip
    """One 1x1 Conv (+ epilogue) on input ``x{i}``, output ``y{i}``; ``w_input``: the weights
    are a graph input (reordered per call)."""
    return conv_branch(rng, i, c, k, h, w, (0, 0, 0, 0), epi, r=1, batch=batch,
                       w_input=w_input, w_scale=2.0)  # fmt: skip


def sweep_model() -> onnx.ModelProto:
    cases: list[dict[str, object]] = [
        {"c": c, "k": k, "h": h, "w": w, "epi": e} for c, k, h, w, e in CASES
    ]
    cases.append({"c": 56, "k": 12, "h": 23, "w": 23, "epi": "relu", "batch": 2})
    cases.append({"c": 16, "k": 32, "h": 24, "w": 23, "epi": "bias", "w_input": True})
    return branches_model(conv1x1_branch, cases, 5, "conv1x1d_sweep")


#: the sweep model, its inputs and onnxruntime's outputs
Sweep = tuple[onnx.ModelProto, dict[str, np.ndarray], dict[str, np.ndarray]]


@pytest.fixture(scope="module")
def sweep() -> Sweep:
    """The model, its inputs (case 0 with a NaN and an inf) and onnxruntime's outputs."""
    m = sweep_model()
    feeds = sweep_feeds(m, 5)
    feeds["x0"][0, 3, 4, 4] = np.nan
    feeds["x0"][0, 20, 22, 2] = np.inf
    ref = onnxruntime_outputs(m, feeds)
    assert all(0.1 < np.abs(r[np.isfinite(r)]).max() < 10 for r in ref.values())  # ordinary size
    assert np.isnan(ref["y0"]).any()
    assert not np.isnan(ref["y0"]).all()
    return m, feeds, ref


def _check(sweep: Sweep, threads: int, cpu: str, algo: str) -> None:
    m, feeds, ref = sweep
    c = autofusion.compile(m, threads=threads, cache=False, cpu=cpu)
    try:
        algos = [str(r["conv_algo"]) for r in c.report["conv_algo"]]  # type: ignore[union-attr]
        got = c.run(feeds)
    finally:
        c.close()
    assert algos == [algo] * len(m.graph.output), algos
    assert np.array_equal(np.isnan(got["y0"]), np.isnan(ref["y0"]))
    assert np.array_equal(np.isinf(got["y0"]), np.isinf(ref["y0"]))
    for name, r in ref.items():
        assert_close(got[name], r, f"{name} ({algo}, {threads} threads)")


@needs_avx512
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_direct_1x1_sweep_matches_onnxruntime(threads: int, sweep: Sweep) -> None:
    """The sweep on the direct kernel at 1, 2 and 3 threads."""
    _check(sweep, threads, "native", "direct_1x1")


def test_direct_1x1_sweep_without_avx512(sweep: Sweep) -> None:
    """Built for x86-64-v2 the lowering keeps the sweep on gemm_1x1; the outputs match."""
    _check(sweep, 2, "x86-64-v2", "gemm_1x1")


def test_direct_1x1_rule_matches_the_runtime(tmp_path: Path) -> None:
    """clib.direct_1x1_applies (the lowering's rule) equals afrt_conv1x1d_applies over a
    sweep that crosses each threshold (channels, output channels, positions, group, stride,
    padding, kernel size)."""
    shapes = []
    for c, k, h, r, s, p, g in itertools.product((8, 15, 16, 64), (1, 16, 32, 33, 48),
                                                 (22, 23, 28), (1, 3), (1, 2), (0, 1),
                                                 (1, 2)):  # fmt: skip
        oh = (h + 2 * p - r) // s + 1
        shapes.append([1, c, h, h, k, r, r, oh, oh, s, s, p, p, p, p, 1, 1, g])
    outs = conv_rule_outputs(tmp_path, 'printf("%d\\n", afrt_conv1x1d_applies(&p));', shapes)
    got = [line == "1" for line in outs]
    want = [clib.direct_1x1_applies(dict(zip(clib.CONV_FIELDS, v, strict=True))) for v in shapes]
    assert len(got) == len(shapes)
    assert got == want
    by_shape = {tuple(v): w for v, w in zip(shapes, want, strict=True)}
    assert by_shape[(1, 16, 23, 23, 32, 1, 1, 23, 23, 1, 1, 0, 0, 0, 0, 1, 1, 1)]
    assert not by_shape[(1, 15, 23, 23, 32, 1, 1, 23, 23, 1, 1, 0, 0, 0, 0, 1, 1, 1)]  # C
    assert not by_shape[(1, 16, 23, 23, 33, 1, 1, 23, 23, 1, 1, 0, 0, 0, 0, 1, 1, 1)]  # K
    assert not by_shape[(1, 16, 22, 22, 32, 1, 1, 22, 22, 1, 1, 0, 0, 0, 0, 1, 1, 1)]  # map
    assert not by_shape[(1, 16, 23, 23, 32, 1, 1, 23, 23, 1, 1, 0, 0, 0, 0, 1, 1, 2)]  # group
    # the lowering picks it only where the AVX-512 kernels are allowed (``blocked``)
    f = dict(zip(clib.CONV_FIELDS, (1, 16, 23, 23, 32, 1, 1, 23, 23, 1, 1, 0, 0, 0, 0, 1, 1, 1),
                 strict=True))  # fmt: skip
    assert clib.conv_algo(list(f.values()), blocked=True) == "direct_1x1"
    assert clib.conv_algo(list(f.values())) == "gemm_1x1"


def _residual_block() -> onnx.ModelProto:
    """A ResNet-style block on a 23x23 map whose last 1x1 conv (16 -> 32, direct_1x1) adds
    the block's input and a Relu, then a 1x1 conv so the sum is an intermediate."""
    rng = np.random.default_rng(23)
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def conv(x: str, cin: int, cout: int, relu: bool = True) -> str:
        name = f"c{len(nodes)}"
        w = rng.uniform(-1.5, 1.5, (cout, cin, 1, 1)) / np.sqrt(cin)
        inits.append(numpy_helper.from_array(w.astype(np.float32), f"{name}_w"))
        inits.append(numpy_helper.from_array(rng.uniform(-0.2, 0.2, cout).astype(np.float32),
                                             f"{name}_b"))  # fmt: skip
        nodes.append(helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [name]))
        if not relu:
            return name
        nodes.append(helper.make_node("Relu", [name], [f"{name}_r"]))
        return f"{name}_r"

    a = conv("x", 24, 32)
    nodes.append(helper.make_node("Add", [conv(conv(a, 32, 16), 16, 32, relu=False), a], ["s"]))
    nodes.append(helper.make_node("Relu", ["s"], ["s_r"]))
    y = conv("s_r", 32, 8, relu=False)
    g = helper.make_graph(
        nodes, "residual_1x1",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 24, 23, 23])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 8, 23, 23])], inits,
    )  # fmt: skip
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@needs_avx512
def test_direct_1x1_writes_over_its_residual(tmp_path: Path) -> None:
    """plan-buffers writes the block's last conv over its shortcut (residual_inplace) and the
    kernel computes it in place at two threads: the same bits as the build with the option
    off, within tolerance of onnxruntime, and no copy of the residual in model.c."""
    m = _residual_block()
    x = np.random.default_rng(3).uniform(-1, 1, (1, 24, 23, 23)).astype(np.float32)
    ref = onnxruntime_outputs(m, {"x": x})
    off = tmp_path / "off.json"
    off.write_text('{"residual_inplace": false}')
    outs, reports = [], []
    for config in (None, str(off)):
        c = autofusion.compile(m, threads=2, cache=False, config=config)
        try:
            outs.append(next(iter(c.run({"x": x}).values())))
            reports.append(dict(c.report))
            text = (Path(c.directory) / "model.c").read_text()
        finally:
            c.close()
        kernels = text.split("\nstatic void ")
        assert any("afrt_conv1x1d_f32(" in k for k in kernels)
        assert not any("afrt_conv1x1d_f32(" in k and "af_copy_const_(" in k for k in kernels)
    algos = [str(r["conv_algo"]) for r in reports[0]["conv_algo"]]
    assert algos == ["direct_1x1"] * 4, algos
    assert reports[0]["residual_inplace"] == 1
    assert reports[1]["residual_inplace"] == 0
    assert outs[0].view(np.uint32).tobytes() == outs[1].view(np.uint32).tobytes()
    got, want = outs[0], next(iter(ref.values()))
    assert 0.1 < np.abs(want).max() < 10
    assert_close(got, want, "y (direct_1x1 in place)")
