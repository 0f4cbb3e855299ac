"""SqueezeNet's fire modules in 16-channel blocks (``assign-layout``'s fires): the squeeze
runs ``direct_1x1_b`` (``afrt_conv1x1nb_f32``, NCHW or NCHW16c in, NCHW16c out), the expands
read and write blocks (their halves of the concat), the max pools between fires run on blocks
(``afrt_maxpool2d_nc_f32``), and the first squeeze whose fire stays NCHW is the exit --
against onnxruntime.

One small model at batch 2: fire A (32 -> 16 -> 32 + 32, 15x15: odd, not a multiple of the
register tiles) -> max pool 3x3/2 with ceil_mode -> fire B (64 -> 32 -> 16 + 16, K = 32:
two-block tiles) -> max pool 2x2/2 ceil_mode -> fire C, whose concat is the output (so it
stays NCHW and its squeeze reads blocks into NCHW), and beside it a fire with a 24-channel
expand (not whole blocks: must stay NCHW). Every conv has a bias and Relu. At one, two and
three threads on the native CPU and on ``x86-64-v2`` (no AVX-512: nothing may be blocked),
and under ASan/UBSan at two threads (slow).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from conv_epilogues import checked_report
from onnx import TensorProto, helper, numpy_helper

from autofusion.runtime import toolchain


def fire_model(batch: int = 2, seed: int = 0) -> onnx.ModelProto:
    """``x -> fire a -> pool -> fire b -> pool -> fire c -> y`` and ``x -> fire n -> z``
    (a 24-channel expand), weights at the 1/sqrt(fan-in) scale so outputs stay of order 1."""
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def conv(name: str, x: str, c: int, k: int, r: int) -> str:
        w = rng.uniform(-1, 1, (k, c, r, r)) * 1.7 / np.sqrt(c * r * r)
        b = rng.uniform(-0.1, 0.3, k)
        inits.append(numpy_helper.from_array(w.astype(np.float32), f"{name}_w"))
        inits.append(numpy_helper.from_array(b.astype(np.float32), f"{name}_b"))
        p = r // 2
        nodes.append(helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [f"{name}_c"],
                                      name=name, kernel_shape=[r, r], pads=[p] * 4))  # fmt: skip
        nodes.append(helper.make_node("Relu", [f"{name}_c"], [name], name=f"{name}_relu"))
        return name

    def fire(name: str, x: str, c: int, s: int, e1: int, e3: int, out: str) -> None:
        sq = conv(f"{name}_squeeze", x, c, s, 1)
        a = conv(f"{name}_expand1x1", sq, s, e1, 1)
        b = conv(f"{name}_expand3x3", sq, s, e3, 3)
        nodes.append(helper.make_node("Concat", [a, b], [out], name=f"{name}_cat", axis=1))

    def pool(name: str, x: str, k: int) -> None:
        nodes.append(helper.make_node("MaxPool", [x], [name], name=name, kernel_shape=[k, k],
                                      strides=[2, 2], ceil_mode=1))  # fmt: skip

    fire("a", "x", 32, 16, 32, 32, "ya")  # 15x15
    pool("pa", "ya", 3)  # -> 7x7
    fire("b", "pa", 64, 32, 16, 16, "yb")
    pool("pb", "yb", 2)  # -> 4x4 (ceil)
    fire("c", "pb", 32, 16, 16, 16, "y")
    fire("n", "x", 32, 16, 24, 16, "z")  # 24 channels: not whole blocks
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 32, 15, 15])]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 32, 4, 4]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [batch, 40, 15, 15])]  # fmt: skip
    graph = helper.make_graph(nodes, "fires", ins, outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


# conv -> (algo, layout) on an AVX-512 build
BLOCKED = {
    "a_squeeze": ("direct_1x1_b", "nchw->nchw16c"),
    "a_expand1x1": ("direct_1x1_b", "nchw16c->nchw16c"),
    "a_expand3x3": ("direct_nchwc", "nchw16c->nchw16c"),
    "b_squeeze": ("direct_1x1_b", "nchw16c->nchw16c"),
    "b_expand1x1": ("direct_1x1_b", "nchw16c->nchw16c"),
    "b_expand3x3": ("direct_nchwc", "nchw16c->nchw16c"),
    "c_squeeze": ("direct_nchwc", "nchw16c->nchw"),
}


@pytest.mark.parametrize(
    ("cpu", "threads"), [("native", 1), ("native", 2), ("native", 3), ("x86-64-v2", 2)]
)
def test_fire_blocks_match_onnxruntime(cpu: str, threads: int) -> None:
    """Both outputs match onnxruntime; on AVX-512 fires a and b and both pools are blocked,
    fire c's squeeze is the exit and the rest (fire n included) NCHW; elsewhere nothing."""
    model = fire_model()
    feeds = {"x": np.random.default_rng(7).uniform(-2, 2, (2, 32, 15, 15)).astype(np.float32)}
    report, by_origin = checked_report(model, feeds, cpu, threads)
    avx512 = toolchain.cpu_has_avx512(cpu)
    for fire in "abcn":
        for part in ("squeeze", "expand1x1", "expand3x3"):
            name = f"{fire}_{part}"
            row = by_origin[name]
            if avx512 and name in BLOCKED:
                assert (row["conv_algo"], row["layout"]) == BLOCKED[name], (name, row)
            else:
                assert row["layout"] == "nchw->nchw", (name, row)
    layout = report.get("layout") or {}
    want = (2, 2) if avx512 else (0, 0)
    assert (layout.get("fires", 0), layout.get("blocked_pools", 0)) == want, layout


@pytest.mark.slow
@pytest.mark.skipif(
    not toolchain.cpu_has_avx512("native"), reason="fire modules are blocked on AVX-512 only"
)
def test_fire_blocks_under_sanitizers(tmp_path: Path) -> None:
    """The blocked squeezes, expands and pools (in-place broadcasts from both layouts, the
    short last tiles of odd maps, ceil-mode windows at the border, batch 2) under ASan/UBSan
    at two threads."""
    from autofusion.lowering.c.testing import sanitized_model_c

    x = np.random.default_rng(3).uniform(-2, 2, (2, 32, 15, 15)).astype(np.float32)
    text = sanitized_model_c(fire_model(), {"x": x}, tmp_path)
    assert text.count("afrt_conv1x1nb_f32(") == 4  # fires a and b: squeeze, expand 1x1
    assert text.count("afrt_maxpool2d_nc_f32(") == 2
