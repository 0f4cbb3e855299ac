"""``assign-layout`` end to end: convs that keep their activations NCHW16c between them
(``afrt_nchwc_ex_f32``'s blocked input/output modes, the flat epilogue on blocked rows)
against onnxruntime.

One small CNN at batch 2 holds every kind of edge: a 3x3 basic block (residual), 3x3 -> 1x1
-> 3x3 chains, a stride-2 conv, a residual Add read blocked by the flat epilogue, boundaries
at a max pool, a channel concat, a global average pool and the graph outputs, and odd
channel counts (40, not whole 16-channel blocks, which stay NCHW while the kernel pads its
blocks with zeros). It runs with the default rule (1x1 convs on the GEMM) and with
``pointwise`` (1x1 convs join), at two threads, under ASan/UBSan, and with
``conv_layout: nchw`` (which must turn the pass off). The kernel's four layout modes and its
scratch-free fallback are checked in C against ``afrt_conv2d_f32`` (native and the
portable loops of an x86-64-v3 build).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from runtime_drivers import TO_BLOCKED_C, driver_output
from xdsl.dialects.builtin import ModuleOp

import autofusion
from autofusion.lowering.c.testing import (
    build_and_run,
    compile_onnx,
    onnxruntime_outputs,
    sanitized_model_c,
)
from autofusion.passes.assign_layout import AssignLayout
from autofusion.pipeline import lower, make_context
from autofusion.policy.report import conv_algo_rows
from autofusion.runtime import toolchain
from autofusion.testing import assert_close

needs_avx512 = pytest.mark.skipif(
    not toolchain.cpu_has_avx512("native"), reason="assign-layout runs on AVX-512 builds only"
)


class _Net:
    """A builder of Conv(+Relu) nodes with seeded weights at the 1/sqrt(fan-in) scale."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []

    def conv(self, x: str, y: str, c: int, k: int, r: int, stride: int = 1,
             relu: bool = True) -> str:  # fmt: skip
        w = self.rng.uniform(-1, 1, (k, c, r, r)) * 1.7 / np.sqrt(r * r * c)
        b = self.rng.uniform(-0.1, 0.1, k)
        self.inits += [numpy_helper.from_array(w.astype(np.float32), f"{y}_w"),
                       numpy_helper.from_array(b.astype(np.float32), f"{y}_b")]  # fmt: skip
        out = f"{y}_conv" if relu else y
        self.nodes.append(helper.make_node(
            "Conv", [x, f"{y}_w", f"{y}_b"], [out], name=y, kernel_shape=[r, r],
            pads=[r // 2] * 4, strides=[stride, stride]))  # fmt: skip
        if relu:
            self.nodes.append(helper.make_node("Relu", [out], [y], name=f"{y}_relu"))
        return y

    def node(self, op: str, ins: list[str], out: str, **attrs: object) -> str:
        self.nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out


def layout_cnn(batch: int = 2, seed: int = 3) -> onnx.ModelProto:
    """The CNN of the module doc (input [batch, 3, 28, 28])."""
    n = _Net(seed)
    s = n.conv("x", "stem", 3, 32, 3, stride=2)  # 14x14, direct_smallc: NCHW out
    a = n.conv(s, "a", 32, 32, 3)  # 3x3 blocked, reads NCHW
    a2 = n.conv(a, "a2", 32, 32, 3, relu=False)  # a basic block: a is x and residual
    a2 = n.node("Relu", [n.node("Add", [a2, a], "a2_add")], "a2_relu")
    a3 = n.conv(a2, "a3", 32, 32, 3)
    b = n.conv(a3, "b", 32, 64, 1)  # 1x1: joins only with pointwise
    c = n.conv(b, "c", 64, 64, 3, stride=2)  # 7x7
    d = n.conv(c, "d", 64, 32, 1)
    e0 = n.conv(d, "e", 32, 32, 3, relu=False)
    e1 = n.node("Add", [e0, d], "e_add")  # residual: d is read blocked by the flat epilogue
    e = n.node("Relu", [e1], "e_relu")
    f = n.conv(e, "f", 32, 32, 3)
    g = n.conv(f, "g", 32, 40, 3)  # 40 channels: NCHW edge
    h = n.conv(g, "h", 40, 32, 3)
    cat = n.node("Concat", [f, h], "cat", axis=1)  # boundary: f is read NCHW here
    pool = n.node("MaxPool", [cat], "pool", kernel_shape=[2, 2], strides=[2, 2])
    gap = n.node("GlobalAveragePool", [f], "gap")
    outs = [helper.make_tensor_value_info(pool, TensorProto.FLOAT, [batch, 64, 3, 3]),
            helper.make_tensor_value_info(gap, TensorProto.FLOAT, [batch, 32, 1, 1])]  # fmt: skip
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 28, 28])]
    graph = helper.make_graph(n.nodes, "layout_cnn", ins, outs, n.inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _feeds(batch: int = 2) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    return {"x": rng.uniform(-2, 2, (batch, 3, 28, 28)).astype(np.float32)}


def _pointwise(m: onnx.ModelProto) -> ModuleOp:
    """``m`` through the compile pipeline's tensor passes, then ``assign-layout`` again with
    ``pointwise`` (1x1 convs join between blocked edges; C multiples of 16 keep the plan)."""
    module = compile_onnx(m, fusion=True)
    AssignLayout(pointwise=True).apply(make_context(), module)
    return module


def _rows(module: ModuleOp) -> tuple[dict[str, str], dict[str, str]]:
    """Per conv (first ONNX origin): its layouts and its algorithm, after lowering."""
    lower(module, "c")
    rows = conv_algo_rows(module)
    layouts = {str(r["origins"][0]): str(r["layout"]) for r in rows}  # type: ignore[index]
    return layouts, {str(r["origins"][0]): str(r["conv_algo"]) for r in rows}  # type: ignore[index]


@needs_avx512
def test_default_rule_blocks_the_3x3_chain() -> None:
    """The measured rule: the 3x3 basic block a -> a2 (+ a) -> a3 stays blocked, 1x1 convs
    stay on the GEMM, so every other edge is NCHW; outputs match onnxruntime."""
    m = layout_cnn()
    feeds = _feeds()
    ref = onnxruntime_outputs(m, feeds)
    assert all(0.1 < np.abs(r).max() < 10 for r in ref.values())  # ordinary size
    c = autofusion.compile(m, threads=2, cache=False)
    try:
        got = c.run(feeds)
        rows = {str(r["origins"][0]): str(r["layout"]) for r in c.report["conv_algo"]}  # type: ignore[index,union-attr]
        algos = {str(r["origins"][0]): str(r["conv_algo"]) for r in c.report["conv_algo"]}  # type: ignore[index,union-attr]
        summary = c.report["layout"]
    finally:
        c.close()
    assert (rows["a"], rows["a2"], rows["a3"]) == ("nchw->nchw16c", "nchw16c->nchw16c",
                                                    "nchw16c->nchw")  # fmt: skip
    assert algos["b"] == algos["d"] == "gemm_1x1"
    assert {rows[k] for k in ("stem", "b", "c", "d", "e", "f", "g", "h")} == {"nchw->nchw"}
    # blocked kernel: a a2 a3 c e f g; boundaries: all but a.y, a2.x, a2.y, a3.x;
    # cancelled: a-a2 (x and residual: one kernel operand), a2-a3; no conv chain to expand
    assert summary == {
        "blocked_convs": 7,
        "reorders": 10,
        "cancelled": 2,
        "expand_chains": 0,
        "fires": 0,
        "blocked_pools": 0,
        "blocked_stems": 0,
        "gemm_readers": 0,
    }, summary
    for name, r in ref.items():
        assert_close(got[name], r, f"{name} (assign-layout)")


@needs_avx512
def test_pointwise_blocked_edges_match_onnxruntime(tmp_path: Path) -> None:
    """With ``pointwise`` the 1x1 convs join: blocked edges run from a to f through two 1x1
    convs, a stride-2 conv and a residual block; outputs match at two threads."""
    m = layout_cnn()
    feeds = _feeds()
    ref = onnxruntime_outputs(m, feeds)
    module = _pointwise(m)
    got = build_and_run(module.clone(), feeds, tmp_path, threads=2)
    rows, algos = _rows(module)
    assert rows["a"] == "nchw->nchw16c"
    assert rows["a2"] == rows["a3"] == "nchw16c->nchw16c"
    assert rows["b"] == rows["d"] == "nchw16c->nchw16c"
    assert algos["b"] == algos["d"] == "direct_1x1_b"  # 1x1 convs between blocked edges
    assert rows["c"] == "nchw16c->nchw16c"  # stride 2
    assert rows["e"] == "nchw16c->nchw16c"  # its residual d blocked with it
    assert rows["f"] == "nchw16c->nchw"  # read by the concat and the pool: a boundary
    assert rows["g"] == "nchw->nchw"  # 40 channels out: the kernel pads, the edge is NCHW
    assert rows["stem"] == rows["h"] == "nchw->nchw"
    for name, r in ref.items():
        assert_close(got[name], r, f"{name} (assign-layout, pointwise)")


def test_conv_layout_nchw_turns_the_pass_off(tmp_path: Path) -> None:
    cfg = tmp_path / "nchw.yaml"
    cfg.write_text("conv_layout: nchw\n")
    m = layout_cnn(batch=1)
    feeds = _feeds(batch=1)
    c = autofusion.compile(m, threads=1, cache=False, config=str(cfg))
    try:
        got = c.run(feeds)
        assert "layout" not in c.report
        assert {r["layout"] for r in c.report["conv_algo"]} == {"nchw->nchw"}  # type: ignore[union-attr]
    finally:
        c.close()
    for name, r in onnxruntime_outputs(m, feeds).items():
        assert_close(got[name], r, name)


@pytest.mark.slow
@needs_avx512
def test_blocked_edges_under_sanitizers(tmp_path: Path) -> None:
    """The pointwise build (every kind of blocked edge) under ASan/UBSan at two threads."""
    m = layout_cnn()
    assert "afrt_nchwc_ex_f32" in sanitized_model_c(m, _feeds(), tmp_path, _pointwise(m))


_KERNEL_DRIVER = (
    r"""
#include "afrt.h"
#include <stdio.h>
/* afrt_nchwc_ex_f32 in its four layout modes (0-3) and afrt_nchwc_naive_f32 in the same
 * four (4-7) against afrt_conv2d_f32 on seeded data at batch 2. Per case and mode: the
 * largest difference, the largest output, and the largest |value| in the blocks' padding
 * channels of a blocked y (must be 0). y starts as NaN: every element must be written. */
"""
    + TO_BLOCKED_C
    + r"""
static float blocked_at(const float *yb, int64_t C, int64_t hw, int64_t n, int64_t c, int64_t q) {
    return yb[((n * ((C + 15) / 16) + c / 16) * hw + q) * 16 + c % 16];
}
int main(void) {
    static const int64_t cases[][7] = {/* C K H W R stride pad */
        {32, 32, 14, 14, 1, 1, 0}, {17, 33, 9, 7, 3, 1, 1}, {20, 8, 11, 13, 1, 1, 0},
        {16, 70, 6, 5, 1, 2, 0}, {40, 32, 10, 9, 3, 2, 1}, {64, 64, 12, 14, 3, 1, 0},
        {32, 40, 5, 27, 3, 1, 1}, {64, 32, 7, 7, 1, 1, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        const int64_t *c = cases[i], R = c[4], st = c[5], pd = c[6], N = 2;
        const int64_t OH = (c[2] + 2 * pd - R) / st + 1, OW = (c[3] + 2 * pd - R) / st + 1;
        const afrt_conv_params p = {N, c[0], c[2], c[3], c[1], R, R, OH, OW, st, st,
                                    pd, pd, pd, pd, 1, 1, 1};
        const int64_t hw = c[2] * c[3], ohw = OH * OW, K = c[1];
        const size_t nx = (size_t)(N * c[0] * hw), nw = (size_t)(K * c[0] * R * R);
        const size_t nxb = (size_t)(N * ((c[0] + 15) / 16) * 16 * hw);
        const size_t ny = (size_t)(N * K * ohw), nyb = (size_t)(N * ((K + 15) / 16) * 16 * ohw);
        float *x = malloc(nx * 4), *xb = malloc(nxb * 4), *w = malloc(nw * 4);
        float *b = malloc((size_t)K * 4), *y0 = malloc(ny * 4), *y1 = malloc(nyb * 4);
        for (size_t j = 0; j < nx; ++j) x[j] = (float)((j * 2654435761u) % 1000) / 500.0f - 1.0f;
        for (size_t j = 0; j < nw; ++j) w[j] = (float)((j * 40503u) % 1000) / 500.0f - 1.0f;
        for (int64_t j = 0; j < K; ++j) b[j] = 0.01f * (float)j;
        to_blocked(x, xb, N, c[0], hw);
        afrt_conv2d_f32(x, w, b, y0, &p, NULL, afrt_no_epilogue());
        for (int mode = 0; mode < 8; ++mode) {
            const int flags = mode & 3;
            const float *xin = flags & AFRT_NC_IN_BLOCKED ? xb : x;
            memset(y1, 0xff, nyb * 4);
            if (mode < 4) {
                if (!afrt_nchwc_ex_f32(xin, w, b, y1, &p, afrt_no_epilogue(), flags)) return 3;
            } else {
                afrt_nchwc_naive_f32(xin, w, b, y1, &p, afrt_no_epilogue(), flags);
            }
            float diff = 0.0f, big = 0.0f, pad = 0.0f;
            for (int64_t n = 0; n < N; ++n)
                for (int64_t k = 0; k < (K + 15) / 16 * 16; ++k)
                    for (int64_t q = 0; q < ohw; ++q) {
                        if (k >= K) {
                            if (!(flags & AFRT_NC_OUT_BLOCKED)) continue;
                            const float v = blocked_at(y1, K, ohw, n, k, q);
                            pad = fmaxf(pad, v == v ? fabsf(v) : INFINITY);
                            continue;
                        }
                        const float ref = y0[(n * K + k) * ohw + q];
                        const float got = flags & AFRT_NC_OUT_BLOCKED
                                              ? blocked_at(y1, K, ohw, n, k, q)
                                              : y1[(n * K + k) * ohw + q];
                        diff = fmaxf(diff, got == got ? fabsf(got - ref) : INFINITY);
                        big = fmaxf(big, fabsf(ref));
                    }
            printf("%d %g %g %g\n", mode, (double)diff, (double)big, (double)pad);
        }
        free(x); free(xb); free(w); free(b); free(y0); free(y1);
    }
    return 0;
}
"""
)


@pytest.mark.parametrize("cpu", ["native", "x86-64-v3"])
def test_blocked_modes_match_the_nchw_paths(cpu: str, tmp_path: Path) -> None:
    """The kernel's layout modes (1x1 and 3x3, strides 1 and 2, channels not a multiple of
    16, batch 2) and the fallback, built with -Werror and, on x86-64-v3, the portable
    loops."""
    out = driver_output(tmp_path, "modes", _KERNEL_DRIVER, cpu)
    rows = [line.split() for line in out.splitlines()]
    assert len(rows) == 8 * 8
    assert sorted({int(r[0]) for r in rows}) == list(range(8))
    for i, (mode, diff, big, pad) in enumerate(rows):
        assert 0.1 < float(big) < 1e3, (i, mode, big)
        assert float(diff) <= 1e-5 * float(big), (i, mode, diff, big)
        assert float(pad) == 0.0, (i, mode, pad)
