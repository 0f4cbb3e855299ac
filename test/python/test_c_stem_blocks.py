"""Stems writing 16-channel blocks (``assign-layout``'s stems, ``direct_smallc_b``:
``afrt_dconv_smallcb_f32``, the NCHW image in, NCHW16c out) in front of blocked max pools and
fire modules -- against onnxruntime.

One small model at batch 2, three stems each followed by a max pool with ceil_mode and a fire
module whose concat is an output (so the pool and the fire's squeeze read blocks, and the
squeeze is the exit):

- ``s``: 3 -> 64, 3x3 stride 2, no padding, on a 39x39 image (19x19 out: three whole
  six-position tiles and a short one per row; the image read in place), as SqueezeNet-1.1's;
- ``t``: 3 -> 48, 5x5 stride 2, pads 2 (the zero-padded copy; three blocks, a group of four
  with one idle), 23x23 -> 12x12;
- ``u``: 1 -> 16, 3x3 stride 1, pad 1 on 9x9 (one block, stride 1, short tiles only);

and a stem ``v`` whose pool feeds a plain 3x3 conv (no fire: must stay ``direct_smallc``,
NCHW). At one and two threads on the native CPU and on ``x86-64-v2`` (no AVX-512: nothing
blocked), and under ASan/UBSan at two threads (slow). The runtime's rule
(``afrt_dconv_smallcb_fits``) is compared with ``clib.smallc_b_fits`` over a sweep.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import onnx
import pytest
from conv_epilogues import checked_report
from onnx import TensorProto, helper, numpy_helper
from runtime_drivers import conv_rule_outputs, uniform_feeds

from autofusion.dialects import clib
from autofusion.runtime import toolchain

# stem name -> (input channels, output channels, image side, kernel, stride, pad)
STEMS = {"s": (3, 64, 39, 3, 2, 0), "t": (3, 48, 23, 5, 2, 2), "u": (1, 16, 9, 3, 1, 1)}


def stem_model(batch: int = 2, seed: int = 0) -> onnx.ModelProto:
    """Per stem of ``STEMS``: ``x_<n> -> stem -> Relu -> max pool 3x3/2 ceil -> fire -> y_<n>``;
    and ``x_v -> stem -> Relu -> max pool -> 3x3 conv -> y_v``. Weights at the 1/sqrt(fan-in)
    scale so outputs stay of order 1."""
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    ins: list[onnx.ValueInfoProto] = []
    outs: list[onnx.ValueInfoProto] = []

    def conv(name: str, x: str, c: int, k: int, r: int, stride: int = 1, pad: int = -1) -> str:
        w = rng.uniform(-1, 1, (k, c, r, r)) * 1.7 / np.sqrt(c * r * r)
        b = rng.uniform(-0.1, 0.3, k)
        inits.append(numpy_helper.from_array(w.astype(np.float32), f"{name}_w"))
        inits.append(numpy_helper.from_array(b.astype(np.float32), f"{name}_b"))
        p = r // 2 if pad < 0 else pad
        nodes.append(helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [f"{name}_c"],
                                      name=name, kernel_shape=[r, r], pads=[p] * 4,
                                      strides=[stride, stride]))  # fmt: skip
        nodes.append(helper.make_node("Relu", [f"{name}_c"], [name], name=f"{name}_relu"))
        return name

    def pool(name: str, x: str) -> str:
        nodes.append(helper.make_node("MaxPool", [x], [name], name=name, kernel_shape=[3, 3],
                                      strides=[2, 2], ceil_mode=1))  # fmt: skip
        return name

    def side(h: int, r: int, stride: int, pad: int) -> int:
        oh = (h + 2 * pad - r) // stride + 1
        return -(-(oh - 3) // 2) + 1  # the ceil-mode pool

    for n, (c, k, h, r, stride, pad) in STEMS.items():
        p = pool(f"{n}_pool", conv(f"{n}_stem", f"x_{n}", c, k, r, stride, pad))
        sq = conv(f"{n}_squeeze", p, k, 16, 1)
        a = conv(f"{n}_expand1x1", sq, 16, 16, 1)
        b = conv(f"{n}_expand3x3", sq, 16, 16, 3)
        nodes.append(helper.make_node("Concat", [a, b], [f"y_{n}"], name=f"{n}_cat", axis=1))
        ps = side(h, r, stride, pad)
        ins.append(helper.make_tensor_value_info(f"x_{n}", TensorProto.FLOAT, [batch, c, h, h]))
        outs.append(helper.make_tensor_value_info(f"y_{n}", TensorProto.FLOAT, [batch, 32, ps, ps]))
    p = pool("v_pool", conv("v_stem", "x_v", 3, 32, 3, 2, 0))
    conv("y_v", p, 32, 32, 3)
    ins.append(helper.make_tensor_value_info("x_v", TensorProto.FLOAT, [batch, 3, 21, 21]))
    outs.append(helper.make_tensor_value_info("y_v", TensorProto.FLOAT, [batch, 32, 5, 5]))
    graph = helper.make_graph(nodes, "stems", ins, outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize(("cpu", "threads"), [("native", 1), ("native", 2), ("x86-64-v2", 2)])
def test_stem_blocks_match_onnxruntime(cpu: str, threads: int) -> None:
    """Every output matches onnxruntime; on AVX-512 stems s, t, u write blocks
    (``direct_smallc_b``, ``nchw->nchw16c``) and their pools run on blocks, stem v stays
    ``direct_smallc`` on NCHW; elsewhere nothing is blocked."""
    model = stem_model()
    report, by_origin = checked_report(model, uniform_feeds(model, 7), cpu, threads)
    avx512 = toolchain.cpu_has_avx512(cpu)
    for n in (*STEMS, "v"):
        row = by_origin[f"{n}_stem"]
        if avx512 and n != "v":
            assert (row["conv_algo"], row["layout"]) == ("direct_smallc_b", "nchw->nchw16c"), row
            assert row["origins"] == [f"{n}_stem", f"{n}_stem_relu", f"{n}_pool"], row
            assert row["pool"].startswith("max k3x3 s2"), row  # fuse-conv-pool's one call
        else:  # a one-channel stem is a depthwise conv to conv_algo
            want_algo = "direct_dw" if n == "u" else "direct_smallc"
            assert (row["conv_algo"], row["layout"]) == (want_algo, "nchw->nchw"), row
    layout = report.get("layout") or {}
    want = (3, 3, 0) if avx512 else (0, 0, 0)  # fires whose concat is an output stay NCHW
    got_counts = tuple(layout.get(k, 0) for k in ("blocked_stems", "blocked_pools", "fires"))
    assert got_counts == want, layout
    if avx512:  # each squeeze reads its pool's blocks: the exit
        assert {by_origin[f"{n}_squeeze"]["layout"] for n in STEMS} == {"nchw16c->nchw"}


def test_smallc_b_rule_matches_the_runtime(tmp_path: Path) -> None:
    """``clib.smallc_b_fits`` is ``afrt_dconv_smallcb_fits`` over channels, kernels, strides,
    dilations and pads either side of each limit."""
    shapes = []
    grid = itertools.product((1, 3, 4, 5), (8, 16, 48, 64), (1, 3, 9), (1, 2, 3), (1, 2),
                             (0, 1), (1, 2))  # fmt: skip
    for c, k, r, s, sh, p, d in grid:
        h = 19
        oh = (h + 2 * p - d * (r - 1) - 1) // sh + 1
        ow = (h + 2 * p - d * (r - 1) - 1) // s + 1
        shapes.append([1, c, h, h, k, r, r, oh, ow, sh, s, p, p, p, p, d, d, 1])
    shapes.append([1, 3, 19, 19, 64, 3, 3, 9, 9, 2, 2, 0, 0, 0, 0, 1, 1, 3])  # grouped
    got = conv_rule_outputs(tmp_path, r'printf("%d\n", afrt_dconv_smallcb_fits(&p));', shapes)
    want = [int(clib.smallc_b_fits(dict(zip(clib.CONV_FIELDS, v, strict=True)))) for v in shapes]
    assert [int(v) for v in got] == want
    assert 0 < sum(want) < len(want)


@pytest.mark.slow
@pytest.mark.skipif(
    not toolchain.cpu_has_avx512("native"), reason="stems write blocks on AVX-512 only"
)
def test_stem_blocks_under_sanitizers(tmp_path: Path) -> None:
    """The blocked stems (reads in place up to the image's last column and row, the padded
    copy, short tiles, a group with an idle block, batch 2) under ASan/UBSan at two
    threads."""
    from autofusion.lowering.c.testing import sanitized_model_c

    m = stem_model()
    text = sanitized_model_c(m, uniform_feeds(m, 3), tmp_path)
    assert text.count("afrt_convpool_nc_f32(") == 3  # each with its pool (fuse-conv-pool)
