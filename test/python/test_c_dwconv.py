"""Direct depthwise convolution (``afrt_dwconv2d_f32``: algo ``direct_dw_lanes`` without
channel multiplier and dilation 1, else ``direct_dw``) against onnxruntime.

Also the small-input-channel direct conv (``afrt_dconv_smallc_f32``, ``direct_smallc``), for
group-1 stems and, group by group, for grouped convs of 2-16 channels per group.
A sweep of depthwise shapes (channels 1..70, sizes 1..17, strides 1/2/3, pads 0/1/2 and
asymmetric, kernels 1/3/5, dilation 2, a channel multiplier), each with one of the fused
epilogues (none, bias, Relu, Clip(0, 6), SiLU, bias + residual Add + Relu), is packed into a few
multi-branch models so each build covers many convs. Built for this CPU (AVX-512 here) and for
x86-64-v3 (the depthwise kernel's portable path; the small-channel conv's AVX2 kernel), the
small-channel conv also for x86-64-v2 (its portable loops). NaN and inf inputs check that the
kernel and the Relu/Clip epilogues propagate NaN like ONNX. ``conv_algo`` (Python) is checked
against the runtime's own choice (``afrt_conv_plan`` / ``afrt_dwconv_applies`` /
``afrt_winograd_applies``) compiled in a small C program.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from conv_epilogues import EPILOGUES, branches_model, checked_report, epilogue_nodes
from onnx import TensorProto, helper, numpy_helper
from runtime_drivers import conv_rule_outputs

from autofusion.dialects import clib
from autofusion.lowering.c.testing import onnxruntime_outputs


def _dw_case(rng: np.random.Generator, i: int, c: int, h: int, w: int, k: int, stride: int,
             pads: tuple[int, int, int, int], epi: str, mult: int = 1, dil: int = 1,
             dense_k: int = 0, groups: int = 1
             ) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto], onnx.ValueInfoProto,
                        onnx.ValueInfoProto]:  # fmt: skip
    """One depthwise Conv (+ epilogue) on its own input ``x{i}``, output ``y{i}``; with
    ``dense_k`` a Conv of ``c`` -> ``dense_k`` channels in ``groups`` groups instead."""
    x, y = f"x{i}", f"y{i}"
    group = groups if dense_k else c
    kout = dense_k or c * mult
    wt = rng.uniform(-1, 1, (kout, c // group, k, k)).astype(np.float32) / (k * (c // group))
    inits = [numpy_helper.from_array(wt, f"w{i}")]
    conv_in = [x, f"w{i}"]
    if epi.startswith("bias"):
        inits.append(numpy_helper.from_array(rng.uniform(-1, 1, kout).astype(np.float32),
                                             f"b{i}"))  # fmt: skip
        conv_in.append(f"b{i}")
    conv_out = y if epi in ("none", "bias") else f"c{i}"
    nodes = [helper.make_node("Conv", conv_in, [conv_out], name=f"conv{i}", group=group,
                              kernel_shape=[k, k], strides=[stride, stride], pads=list(pads),
                              dilations=[dil, dil])]  # fmt: skip
    oh = (h + pads[0] + pads[2] - dil * (k - 1) - 1) // stride + 1
    ow = (w + pads[1] + pads[3] - dil * (k - 1) - 1) // stride + 1
    epi_nodes, epi_inits = epilogue_nodes(rng, i, epi, conv_out, y, (1, kout, oh, ow))
    nodes += epi_nodes
    inits += epi_inits
    vi_x = helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, c, h, w])
    vi_y = helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, kout, oh, ow])
    return nodes, inits, vi_x, vi_y


def _model(cases: list[dict[str, object]], seed: int) -> onnx.ModelProto:
    return branches_model(_dw_case, cases, seed, "dw_sweep")


def _sweep(part: int) -> list[dict[str, object]]:
    """A deterministic quarter of the shape sweep: every channel count, size, stride, pad,
    kernel and epilogue occurs in some case."""
    chans = (1, 3, 15, 16, 17, 32, 33, 64, 70)
    sizes = (1, 2, 4, 5, 7, 8, 13, 16, 17)
    combos = [(k, s, p) for k, s, p in itertools.product((3, 5), (1, 2), (0, 1, 2))]
    cases: list[dict[str, object]] = []
    for j, (k, s, p) in enumerate(combos):
        for e in range(2):
            idx = 2 * j + e
            if idx % 4 != part:
                continue
            c, h = chans[(idx * 5) % len(chans)], sizes[(idx * 7 + 3) % len(sizes)]
            h = max(h, k - 2 * p)  # at least one output
            w = max(sizes[(idx * 3 + 1) % len(sizes)], k - 2 * p)
            cases.append({"c": c, "h": h, "w": w, "k": k, "stride": s, "pads": (p, p, p, p),
                          "epi": EPILOGUES[idx % len(EPILOGUES)]})  # fmt: skip
    return cases


EXTRA = [  # shapes the sweep leaves out: asymmetric pads, stride 3, dilation, multiplier, 1x1
    {"c": 24, "h": 9, "w": 11, "k": 3, "stride": 2, "pads": (0, 1, 1, 0), "epi": "relu6"},
    {"c": 20, "h": 14, "w": 14, "k": 3, "stride": 3, "pads": (1, 1, 1, 1), "epi": "bias"},
    {"c": 18, "h": 12, "w": 15, "k": 3, "stride": 1, "pads": (2, 2, 2, 2), "epi": "relu", "dil": 2},
    {"c": 8, "h": 10, "w": 10, "k": 3, "stride": 1, "pads": (1, 1, 1, 1), "epi": "bias", "mult": 2},
    {"c": 40, "h": 6, "w": 6, "k": 1, "stride": 1, "pads": (0, 0, 0, 0), "epi": "silu"},
    {"c": 96, "h": 56, "w": 56, "k": 3, "stride": 2, "pads": (1, 1, 1, 1), "epi": "relu6"},
    {"c": 32, "h": 57, "w": 40, "k": 5, "stride": 1, "pads": (2, 2, 2, 2), "epi": "bias"},
]


SMALL_C = [  # group-1 convs with at most 4 input channels: direct_smallc
    {
        "c": 3,
        "h": 32,
        "w": 30,
        "k": 3,
        "stride": 2,
        "pads": (1, 1, 1, 1),
        "epi": "relu",
        "dense_k": 24,
    },
    {
        "c": 3,
        "h": 17,
        "w": 9,
        "k": 3,
        "stride": 1,
        "pads": (1, 1, 1, 1),
        "epi": "relu6",
        "dense_k": 16,
    },
    {
        "c": 2,
        "h": 7,
        "w": 7,
        "k": 5,
        "stride": 1,
        "pads": (2, 2, 2, 2),
        "epi": "bias",
        "dense_k": 5,
    },
    {
        "c": 4,
        "h": 13,
        "w": 11,
        "k": 3,
        "stride": 2,
        "pads": (0, 1, 1, 0),
        "epi": "silu",
        "dense_k": 7,
    },
    {
        "c": 3,
        "h": 12,
        "w": 12,
        "k": 3,
        "stride": 1,
        "pads": (2, 2, 2, 2),
        "epi": "none",
        "dense_k": 9,
        "dil": 2,
    },
    {
        "c": 3,
        "h": 100,
        "w": 90,
        "k": 7,
        "stride": 2,
        "pads": (3, 3, 3, 3),
        "epi": "bias_add_relu",
        "dense_k": 64,
    },
    # rows of more than 64 outputs: whole 64-wide chunks, then a masked tail (74 = 64 + 10)
    {"c": 3, "h": 9, "w": 150, "k": 3, "stride": 2, "pads": (0, 0, 0, 0), "epi": "relu6",
     "dense_k": 10},
    # rows of exactly 64 (four whole vectors), residual + Relu in registers, K = 6
    {"c": 2, "h": 5, "w": 64, "k": 3, "stride": 1, "pads": (1, 1, 1, 1),
     "epi": "bias_add_relu", "dense_k": 6},
]  # fmt: skip


GROUPED = [  # grouped convs of 2-16 input channels per group: direct_smallc, group by group
    # RegNet's group-8 3x3 stride 2 and stride 1, Relu in registers; K per group = 8
    {"c": 48, "h": 30, "w": 29, "k": 3, "stride": 2, "pads": (1, 1, 1, 1), "epi": "relu",
     "dense_k": 48, "groups": 6},
    {"c": 24, "h": 14, "w": 14, "k": 3, "stride": 1, "pads": (1, 1, 1, 1), "epi": "relu6",
     "dense_k": 24, "groups": 3},
    # K per group not a multiple of the register block (5, 3), more outputs than inputs
    {"c": 8, "h": 13, "w": 20, "k": 3, "stride": 1, "pads": (1, 1, 1, 1), "epi": "bias",
     "dense_k": 20, "groups": 4},
    {"c": 32, "h": 9, "w": 9, "k": 3, "stride": 2, "pads": (0, 1, 1, 0), "epi": "silu",
     "dense_k": 6, "groups": 2},
    # 16 input channels per group (the most), 5x5, dilation 2, no epilogue
    {"c": 32, "h": 20, "w": 18, "k": 5, "stride": 1, "pads": (4, 4, 4, 4), "epi": "none",
     "dense_k": 32, "groups": 2, "dil": 2},
    # the residual Add + Relu in registers, each group's rows of it; rows of 50 (a tail)
    {"c": 16, "h": 8, "w": 100, "k": 3, "stride": 2, "pads": (1, 1, 1, 1),
     "epi": "bias_add_relu", "dense_k": 16, "groups": 4},
]  # fmt: skip


def _feeds(model: onnx.ModelProto, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in model.graph.input:
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.uniform(-2, 2, dims).astype(np.float32)
    return feeds


def _check(model: onnx.ModelProto, feeds: dict[str, np.ndarray], cpu: str = "native",
           threads: int = 1) -> dict[str, Any]:  # fmt: skip
    return checked_report(model, feeds, cpu, threads)[0]


@pytest.mark.parametrize("part", range(4))
def test_depthwise_sweep_matches_onnxruntime(part: int) -> None:
    model = _model(_sweep(part), seed=part)
    report = _check(model, _feeds(model, part))
    algos = {r["conv_algo"] for r in report["conv_algo"]}  # type: ignore[index]
    assert algos == {"direct_dw_lanes"}, algos  # the sweep has no multiplier or dilation


def test_depthwise_extra_shapes_and_two_threads() -> None:
    model = _model(EXTRA, seed=7)
    feeds = _feeds(model, 7)
    for threads in (1, 2):
        report = _check(model, feeds, threads=threads)
    want = ["direct_dw" if "dil" in c or "mult" in c else "direct_dw_lanes" for c in EXTRA]
    assert [r["conv_algo"] for r in report["conv_algo"]] == want  # type: ignore[index]


@pytest.mark.parametrize(
    ("cpu", "threads"), [("native", 1), ("native", 2), ("x86-64-v3", 1), ("x86-64-v2", 1)]
)
def test_small_channel_direct_conv(cpu: str, threads: int) -> None:
    """AVX-512 (native here), AVX2 (x86-64-v3) and the portable loops (x86-64-v2): every
    width's tail, channel counts not a multiple of the register block (K = 5, 6), the bias,
    Relu / Clip / residual in the registers and SiLU after them."""
    model = _model(SMALL_C, seed=13)
    report = _check(model, _feeds(model, 13), cpu=cpu, threads=threads)
    assert [r["conv_algo"] for r in report["conv_algo"]] == ["direct_smallc"] * len(SMALL_C)  # type: ignore[index]


@pytest.mark.parametrize(
    ("cpu", "threads"), [("native", 1), ("native", 2), ("x86-64-v3", 2), ("x86-64-v2", 1)]
)
def test_grouped_direct_conv(cpu: str, threads: int) -> None:
    """Grouped convs go through the small-channel kernel group by group (AVX-512, AVX2 and
    the portable loops; two threads split the groups): each group's weights, bias, output
    rows, residual and epilogue rows are its own; and 7x7 stride-1 rows or 17 channels per
    group stay with im2col_gemm."""
    other = [
        {"c": 16, "h": 7, "w": 7, "k": 3, "stride": 1, "pads": (1, 1, 1, 1), "epi": "relu",
         "dense_k": 16, "groups": 2},
        {"c": 34, "h": 12, "w": 12, "k": 3, "stride": 2, "pads": (1, 1, 1, 1), "epi": "relu",
         "dense_k": 34, "groups": 2},
    ]  # fmt: skip
    model = _model(GROUPED + other, seed=19)
    report = _check(model, _feeds(model, 19), cpu=cpu, threads=threads)
    algos = [r["conv_algo"] for r in report["conv_algo"]]  # type: ignore[index]
    assert algos == ["direct_smallc"] * len(GROUPED) + ["im2col_gemm"] * 2


def test_depthwise_portable_path() -> None:
    """x86-64-v3 has no AVX-512: the kernel's portable C loops (and fill) run."""
    model = _model(_sweep(1) + EXTRA[:4], seed=11)
    _check(model, _feeds(model, 11), cpu="x86-64-v3")


@pytest.mark.parametrize("cpu", ["native", "x86-64-v3"])
def test_depthwise_nan_and_inf_propagate(cpu: str) -> None:
    """A NaN input poisons exactly the outputs whose window covers it, through Relu and Clip
    (ONNX propagates NaN; fmaxf would not); an inf input gives inf or NaN as onnxruntime."""
    cases = [
        {"c": 17, "h": 7, "w": 7, "k": 3, "stride": 1, "pads": (1, 1, 1, 1), "epi": "relu"},
        {"c": 17, "h": 9, "w": 9, "k": 3, "stride": 2, "pads": (1, 1, 1, 1), "epi": "relu6"},
        {"c": 5, "h": 20, "w": 20, "k": 3, "stride": 1, "pads": (1, 1, 1, 1), "epi": "bias"},
    ]
    model = _model(cases, seed=3)
    feeds = _feeds(model, 3)
    feeds["x0"][0, 2, 3, 3] = np.nan
    feeds["x0"][0, 5, 0, 6] = np.inf
    feeds["x1"][0, 16, 4, 4] = np.nan
    feeds["x1"][0, 0, 8, 0] = -np.inf
    feeds["x2"][0, 1, 19, 0] = np.nan
    ref = onnxruntime_outputs(model, feeds)
    assert all(np.isnan(r).any() for r in ref.values())  # the cases do reach NaN
    _check(model, feeds, cpu=cpu)


@pytest.mark.parametrize("cpu", ["native", "x86-64-v3", "x86-64-v2"])
def test_small_channel_nan_and_inf_propagate(cpu: str) -> None:
    """The stem kernel's bias and clamp (in registers with AVX-512 and AVX2) keep NaN through Relu,
    Clip and the residual Add + Relu, as onnxruntime does."""
    cases = [SMALL_C[0], SMALL_C[6], SMALL_C[7]]
    model = _model(cases, seed=5)
    feeds = _feeds(model, 5)
    feeds["x0"][0, 1, 4, 4] = np.nan
    feeds["x1"][0, 2, 3, 100] = np.nan
    feeds["x1"][0, 0, 6, 7] = np.inf
    feeds["x2"][0, 1, 2, 63] = np.nan
    ref = onnxruntime_outputs(model, feeds)
    assert all(np.isnan(r).any() for r in ref.values())  # the cases do reach NaN
    report = _check(model, feeds, cpu=cpu)
    assert [r["conv_algo"] for r in report["conv_algo"]] == ["direct_smallc"] * 3  # type: ignore[index]


#: afrt_conv2d_f32's choices for one conv: its plan's kind and each kernel's applies rule
_PLAN_PRINT = r"""const afrt_conv_plan_ q = afrt_conv_plan(&p);
        printf("%d %d %d %d %d %d\n", q.kind, afrt_dwconv_applies(&p),
               afrt_dconv_smallc_applies(&p), afrt_winograd_applies(&p),
               afrt_conv1x1t_applies(&p), afrt_dwl_applies(&p));"""


def test_conv_algo_matches_the_runtime(tmp_path: Path) -> None:
    """clib.conv_algo (the lowering's choice) names the path afrt_conv2d_f32 itself takes."""
    shapes = []
    # g_div: group = C / g_div (1: depthwise), 0: group 1 (dense)
    grid = itertools.product((4, 16), (1, 2, 4, 0), (4, 16), (1, 2), (0, 1), (1, 3, 9), (8, 17),
                             (1, 2))  # fmt: skip
    for c, g_div, k, s, p, r, h, d in grid:
        group = c // g_div if g_div else 1
        oh = (h + 2 * p - d * (r - 1) - 1) // s + 1
        if k % group or oh < 1:
            continue
        shapes.append([1, c, h, h, k, r, r, oh, oh, s, s, p, p, p, p, d, d, group])
    # 1x1 convs around gemm_1x1_t's rule: small maps (1, 4, 7, ... 72 positions), channels
    # (per group) below, at and past its thresholds, grouped ones
    for c, k, h, w, group in itertools.product((2, 256, 512, 1030), (16, 500, 512, 520, 1024),
                                               (1, 4, 7, 8), (1, 7, 9), (1, 2)):  # fmt: skip
        if c % group == 0 and k % group == 0:
            shapes.append([1, c, h, w, k, 1, 1, h, w, 1, 1, 0, 0, 0, 0, 1, 1, group])
    # 3x3 convs around Winograd's tile rule: 9, 16 and 25 tiles (12x12 to 20x20 maps), with
    # output and input channels either side of AFRT_WG_WIDE_K and AFRT_WG_WIDE_C
    for h, c, k in itertools.product((12, 13, 16, 17, 20), (64, 95, 96, 160), (128, 191, 192, 256)):
        shapes.append([1, c, h, h, k, 3, 3, h, h, 1, 1, 1, 1, 1, 1, 1, 1, 1])
    kinds = {0: "direct_dw", 1: "gemm_1x1", 2: "im2col_gemm"}
    got = []
    for line in conv_rule_outputs(
        tmp_path, _PLAN_PRINT, shapes
    ):  # afrt_conv2d_f32's order: kind 0, small C, Winograd, 1/2
        kind, dw, smallc, wino, t1x1, lanes = (int(v) for v in line.split())
        assert dw == (kind == 0)
        assert not lanes or dw
        if lanes:
            got.append("direct_dw_lanes")
        elif kind != 0 and smallc:
            got.append("direct_smallc")
        elif kind != 0 and wino:
            got.append("winograd")
        else:
            got.append("gemm_1x1_t" if kind == 1 and t1x1 else kinds[kind])
    assert len(got) == len(shapes)
    want = [clib.conv_algo(v) for v in shapes]
    assert got == want
    # direct_nchwc, gemm_1x1_b, gemm_1x1_xb, direct_1x1_b, direct_smallc_b and direct_1x1 are the
    # lowering's calls (assign-layout's and the conv rule's), never afrt_conv2d_f32's
    # (test_c_nchwc.py, test_c_expand_chain.py, test_c_fire_blocks.py, test_c_stem_blocks.py,
    # test_c_conv1x1d.py)
    lowering_only = {
        "direct_nchwc",
        "gemm_1x1_b",
        "gemm_1x1_xb",
        "direct_1x1_b",
        "direct_1x1",
        "direct_smallc_b",
    }
    assert set(clib.CONV_ALGOS) - lowering_only == set(want)


def test_direct_kernels_sanitizer_clean(tmp_path: Path) -> None:
    """Both direct kernels (whole-vector fills that spill into slack, reads past the last
    output, tiny-plane permute tables) under ASan/UBSan, two threads."""
    from autofusion.lowering.c.testing import sanitized_model_c

    model = _model(
        [
            *EXTRA[:3],
            EXTRA[5],
            _sweep(0)[0],
            SMALL_C[0],
            SMALL_C[3],
            SMALL_C[6],
            GROUPED[2],
            GROUPED[5],
        ],
        seed=17,
    )
    text = sanitized_model_c(model, _feeds(model, 17), tmp_path)
    assert "afrt_dwconv2d_f32" in text
    assert "afrt_dconv_smallc_f32" in text
