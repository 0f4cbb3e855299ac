"""Two added 1x1 convs as one kernel (``fuse-conv-pair``: ``afrt_conv1x1_pair_f32``).

- Whole models against onnxruntime at the project's bar, with the same bits at 1, 2 and 3
  threads, native and ``x86-64-v2`` (no AVX-512: the GEMM core's generic kernels): ResNet's
  first-block shape at small sizes -- both convs stride 1 with odd channels, a stride-2
  downsample at batch 2, a stride-3 one whose joined K (270) crosses a k block of the GEMM
  core inside the second input's channels -- and a pair that must not join (the downsample's
  output read twice).
- The report: one ``gemm_1x1_pair`` row per joined kernel, ``decided_by = rules``, the
  refusal; the residual the conv3 kernel wrote in place is gone with the downsample's output.
- ``clib.conv_pair_applies`` against ``afrt_conv1x1_pair_applies`` over a sweep.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from runtime_drivers import conv_rule_outputs, same_bits_at_thread_counts, uniform_feeds

from autofusion.dialects import clib

# name: (batch, input channels, map, mid channels, output channels, downsample stride)
BLOCKS = {
    "s1": (1, 13, 9, 7, 21, 1),
    "s2": (2, 24, 11, 17, 33, 2),
    "s3": (1, 200, 13, 70, 45, 3),
}


def pair_model(seed: int = 0, with_shared: bool = True) -> onnx.ModelProto:
    """Per block of ``BLOCKS``: ``x -> 1x1 + Relu -> 3x3 (the stride) + Relu -> h``, then
    ``Relu(conv3(h) + downsample(x))`` and a 1x1 conv + Relu to 8 channels (so the sum is
    an arena value, which the apart build writes over the downsample's output); with
    ``with_shared`` a block ``d`` whose downsample output is also a graph output (must not
    join). Weights at the 1/sqrt(fan-in) scale so
    outputs stay of order 1."""
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    ins: list[onnx.ValueInfoProto] = []
    outs: list[onnx.ValueInfoProto] = []

    def conv(name: str, x: str, c: int, k: int, r: int, stride: int, pad: int) -> str:
        w = rng.uniform(-1, 1, (k, c, r, r)) * 1.7 / np.sqrt(c * r * r)
        inits.append(numpy_helper.from_array(w.astype(np.float32), f"{name}_w"))
        inits.append(numpy_helper.from_array(rng.uniform(-0.2, 0.2, k).astype(np.float32),
                                             f"{name}_b"))  # fmt: skip
        nodes.append(helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [name], name=name,
                                      kernel_shape=[r, r], pads=[pad] * 4,
                                      strides=[stride, stride]))  # fmt: skip
        return name

    def relu(name: str, x: str) -> str:
        nodes.append(helper.make_node("Relu", [x], [name], name=name))
        return name

    blocks = dict(BLOCKS)
    if with_shared:
        blocks["d"] = (1, 12, 10, 8, 20, 2)
    for b, (n, cin, hw, cm, k, s) in blocks.items():
        x = f"x_{b}"
        ins.append(helper.make_tensor_value_info(x, onnx.TensorProto.FLOAT, [n, cin, hw, hw]))
        h = relu(f"{b}_r1", conv(f"{b}_c1", x, cin, cm, 1, 1, 0))
        h = relu(f"{b}_r2", conv(f"{b}_c2", h, cm, cm, 3, s, 1))
        c3 = conv(f"{b}_c3", h, cm, k, 1, 1, 0)
        d = conv(f"{b}_down", x, cin, k, 1, s, 0)
        nodes.append(helper.make_node("Add", [c3, d], [f"{b}_add"], name=f"{b}_add"))
        relu(f"y_{b}", conv(f"{b}_tail", relu(f"{b}_out", f"{b}_add"), k, 8, 1, 1, 0))
        outs.append(helper.make_tensor_value_info(f"y_{b}", onnx.TensorProto.FLOAT, None))
        if b == "d":
            outs.append(helper.make_tensor_value_info(d, onnx.TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "conv_pairs", ins, outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return onnx.shape_inference.infer_shapes(model)


@pytest.mark.parametrize("cpu", ["native", "x86-64-v2"])
def test_pairs_match_onnxruntime_at_1_2_3_threads(cpu: str) -> None:
    """Every output matches onnxruntime with the same bits at 1, 2 and 3 threads (twice:
    the joined weights cached); blocks s1, s2, s3 join, d is refused and kept apart."""
    m = pair_model()
    report = same_bits_at_thread_counts(m, uniform_feeds(m, 3), cpu, runs=2)
    joined = [g for g in report["groups"] if g["pattern"] == "convpair_conv_conv_add_relu"]
    assert sorted(g["origins"][0] for g in joined) == ["s1_down", "s2_down", "s3_down"]
    assert {g["decided_by"] for g in joined} == {"rules"}
    rows = [r for r in report["conv_algo"] if r["conv_algo"] == "gemm_1x1_pair"]
    assert len(rows) == 3
    assert any("C270 K45 5x5" in r["shape"] and "s3" in r["shape"] for r in rows), rows
    refused = [r for r in report["refusals"] if "joined kernel" in r["reason"]]
    assert [(r["code"], r["nodes"][0]) for r in refused] == [("multi-consumer", "d_down")]


def test_the_pair_drops_the_in_place_residual(tmp_path: Path) -> None:
    """With the pattern off the three conv3 kernels write over the downsample's output (its
    residual, in place); joined, that output never exists, the arena is no larger, and the
    outputs match the apart build at the project's bar."""
    import autofusion
    from autofusion.testing import assert_close

    off = tmp_path / "off.json"
    off.write_text('{"patterns": {"conv_pair": false}}')
    m = pair_model(with_shared=False)
    a = autofusion.compile(m, cache=False)
    b = autofusion.compile(m, cache=False, config=str(off))
    try:
        assert a.report["residual_inplace"] == 0
        assert b.report["residual_inplace"] == 3
        assert a.report["arena_bytes"] <= b.report["arena_bytes"]
        assert {r["code"] for r in b.report["refusals"]} >= {"disabled"}
        feeds = uniform_feeds(m, 5)
        got_a, got_b = a.run(feeds), b.run(feeds)
        for k in got_b:
            assert_close(got_a[k], got_b[k], f"{k}: joined against apart")
    finally:
        a.close()
        b.close()


def test_pair_rule_matches_the_runtime(tmp_path: Path) -> None:
    """``clib.conv_pair_applies`` is ``afrt_conv1x1_pair_applies`` over strides, pads,
    kernel sizes, maps and channel splits either side of each condition."""
    rows: list[list[int]] = []
    for s, r, pad, oh2, c2, k2, grp in itertools.product(
        (1, 2, 3), (1, 3), (0, 1), (5, 6), (4, 9), (12, 13), (1, 2)
    ):
        h2 = 11
        joined = [1, 9, 5, 5, 12, 1, 1, 5, 5, 1, 1, 0, 0, 0, 0, 1, 1, 1]
        second = [1, c2, h2, h2, k2, r, r, oh2, oh2, s, s, pad, pad, pad, pad, 1, 1, grp]
        rows.append(joined + second)
    strided = [1, 9, 5, 5, 12, 1, 1, 5, 5, 2, 2, 0, 0, 0, 0, 1, 1, 1]  # the first conv strided
    rows.append([*strided, 1, 4, 5, 5, 12, 1, 1, 5, 5, 1, 1, 0, 0, 0, 0, 1, 1, 1])
    stmt = 'printf("%d\\n", afrt_conv1x1_pair_applies(&p, &p2));'
    printed = conv_rule_outputs(tmp_path, stmt, rows, convs=2)
    got = [int(v) for v in printed]
    want = [int(clib.conv_pair_applies(r[:18], r[18:])) for r in rows]
    assert got == want
    assert 0 < sum(want) < len(want)
