"""A 1x1 conv and the 1x1 conv reading its output as one kernel (``fuse-pw-chain``:
``afrt_conv1x1_chain_f32``, column block by column block).

- Whole models against onnxruntime at the project's bar, with the same bits at 1, 2 and 3
  threads, native and ``x86-64-v2`` (no AVX-512: the GEMM core's generic kernels): ResNet's
  block boundary (a conv + residual Add + Relu kernel written over its residual, then the
  next block's 1x1 conv + Relu) at batch 1 and 2, odd channels and a map that is not a
  whole number of column blocks; a chain without epilogues; pairs that must not join.
- The buffer plan: the first result is still written over its residual.
- The decision: the cost layer's rule (the first output larger than L2 twice over) against
  this machine's L2, ``decided_by``, the refusals and the ``conv_chain`` switch.
- ``clib.pw_chain_applies`` against ``afrt_conv1x1_chain_applies`` over a sweep.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from runtime_drivers import conv_rule_outputs, same_bits_at_thread_counts, uniform_feeds

from autofusion.analysis.hardware import cpu_this_machine
from autofusion.dialects import clib

L2 = cpu_this_machine().fused_cache_bytes


def _side_for(channels: int, times_l2: float) -> int:
    """A square map side whose ``channels``-channel f32 map is about ``times_l2`` L2s."""
    return max(4, int(np.ceil(np.sqrt(times_l2 * L2 / (4 * channels)))))


class _Builder:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []

    def conv(
        self, name: str, x: str, c: int, k: int, r: int = 1, bias: bool = True, gain: float = 1.7
    ) -> str:
        w = self.rng.uniform(-1, 1, (k, c, r, r)) * gain / np.sqrt(c * r * r)
        self.inits.append(numpy_helper.from_array(w.astype(np.float32), f"{name}_w"))
        ins = [x, f"{name}_w"]
        if bias:
            b = self.rng.uniform(-0.2, 0.2, k).astype(np.float32)
            self.inits.append(numpy_helper.from_array(b, f"{name}_b"))
            ins.append(f"{name}_b")
        self.nodes.append(helper.make_node("Conv", ins, [name], name=name,
                                           kernel_shape=[r, r], pads=[r // 2] * 4))  # fmt: skip
        return name

    def op(self, kind: str, name: str, *xs: str) -> str:
        self.nodes.append(helper.make_node(kind, list(xs), [name], name=name))
        return name


def chain_model(n: int, c: int, mid: int, k: int, side: int, seed: int = 0) -> onnx.ModelProto:
    """ResNet's block boundary on an ``n x c x side x side`` input: ``h = Relu(3x3(x))``,
    ``r = Relu(1x1(x))`` (the residual, ``mid`` channels), ``y = Relu(1x1(h) + r)`` (the
    in-place kernel), ``z = Relu(1x1(y))`` (``k`` channels: the chain's second half, written
    over ``h`` when ``k == mid``), then ``out = Relu(1x1(z) + y)`` (y read again: it stays a
    result). Also a chain without epilogues: ``g = 3x3(x)``, ``u = 1x1(g)`` read by
    ``v = 1x1(u)`` (``mid`` channels, over ``g``) and by ``out2 = 1x1(v) + u``."""
    b = _Builder(seed)
    h = b.op("Relu", "h", b.conv("c_h", "x", c, mid, 3))
    r = b.op("Relu", "r", b.conv("c_r", "x", c, mid))
    y = b.op("Relu", "y", b.op("Add", "y_add", b.conv("c_y", h, mid, mid), r))
    z = b.op("Relu", "z", b.conv("c_z", y, mid, k))
    b.op("Relu", "out", b.op("Add", "out_add", b.conv("c_o", z, k, mid), y))
    g = b.conv("c_g", "x", c, mid, 3, gain=1.0)  # no Relus on this path: smaller weights
    u = b.conv("c_u", g, mid, mid, bias=False, gain=1.0)
    v = b.conv("c_v", u, mid, mid, gain=1.0)
    b.op("Add", "out2", b.conv("c_w", v, mid, mid, gain=1.0), u)
    ins = [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [n, c, side, side])]
    outs = [helper.make_tensor_value_info(o, onnx.TensorProto.FLOAT, None) for o in ("out", "out2")]
    graph = helper.make_graph(b.nodes, "pw_chains", ins, outs, b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return onnx.shape_inference.infer_shapes(model)


def _chains(report: dict) -> list[dict]:
    return [g for g in report["groups"] if g["pattern"].startswith("pwchain_")]


def _chain_refusals(report: dict) -> list[dict]:
    return [r for r in report["refusals"] if "second conv" in r["reason"]
            or "first conv's output" in r["reason"]]  # fmt: skip


@pytest.mark.parametrize("cpu", ["native", "x86-64-v2"])
@pytest.mark.parametrize(("n", "c", "mid", "k"), [(1, 16, 37, 37), (2, 8, 32, 16)])
def test_chains_match_onnxruntime_at_1_2_3_threads(
    cpu: str, n: int, c: int, mid: int, k: int
) -> None:
    """Every output matches onnxruntime with the same bits at 1, 2 and 3 threads (twice:
    cached packed weights). Both chains join where the second output can take the chain
    input's bytes (``k == mid``); otherwise the residual one is refused (``cost``)."""
    side = _side_for(mid * n, 2.3)
    m = chain_model(n, c, mid, k, side)
    report = same_bits_at_thread_counts(m, uniform_feeds(m, 3), cpu, runs=2)
    want = ["pwchain_conv_conv"] + (["pwchain_conv_add_relu_conv_relu"] if k == mid else [])
    assert sorted(g["pattern"] for g in _chains(report)) == sorted(want)
    assert {g["decided_by"] for g in _chains(report)} == {"cost"}
    rows = [r for r in report["conv_algo"] if r["conv_algo"] == "gemm_1x1_chain"]
    assert len(rows) == len(want)
    refused = _chain_refusals(report)
    if k != mid:
        assert [(r["code"], r["nodes"][0]) for r in refused] == [("cost", "c_y")]
        assert "cannot be written over the chain's input" in refused[0]["reason"]
    else:
        assert refused == []


def test_the_chain_keeps_the_arena_and_writes_in_place(tmp_path: Path) -> None:
    """Joined, the first output is still written over its residual and the second over the
    chain's input: two more results in place than apart, the arena no larger; the outputs
    match the apart build at the project's bar."""
    import autofusion
    from autofusion.testing import assert_close

    off = tmp_path / "off.json"
    off.write_text('{"patterns": {"conv_chain": false}}')
    m = chain_model(1, 16, 37, 37, _side_for(37, 2.3))
    a = autofusion.compile(m, cache=False)
    b = autofusion.compile(m, cache=False, config=str(off))
    try:
        assert len(_chains(a.report)) == 2
        assert _chains(b.report) == []
        assert a.report["residual_inplace"] == b.report["residual_inplace"] + 2
        assert a.report["arena_bytes"] <= b.report["arena_bytes"]
        assert {r["code"] for r in b.report["refusals"]} >= {"disabled"}
        feeds = uniform_feeds(m, 5)
        got_a, got_b = a.run(feeds), b.run(feeds)
        for name in got_b:
            assert_close(got_a[name], got_b[name], f"{name}: chained against apart")
    finally:
        a.close()
        b.close()


def test_the_cost_rule_reads_this_machines_l2() -> None:
    """A first output of at most twice this machine's L2 is refused (``cost``, the bytes in
    the reason); above it the chains join."""
    import autofusion

    small = chain_model(1, 8, 32, 32, _side_for(32, 1.6))
    c = autofusion.compile(small, cache=False)
    try:
        assert _chains(c.report) == []
        refused = _chain_refusals(c.report)
        assert [r["code"] for r in refused] == ["cost", "cost"]
        assert all("not larger than twice L2" in r["reason"] for r in refused)
    finally:
        c.close()


def test_chain_rule_matches_the_runtime(tmp_path: Path) -> None:
    """``clib.pw_chain_applies`` is ``afrt_conv1x1_chain_applies`` over kernel sizes,
    strides, pads, groups and channel counts either side of each condition."""
    rows: list[list[int]] = []
    for r, s, pad, grp, c2, h2 in itertools.product(
        (1, 3), (1, 2), (0, 1), (1, 2), (12, 13), (5, 6)
    ):
        oh = (5 + 2 * pad - r) // s + 1
        first = [1, 8, 5, 5, 12, r, r, oh, oh, s, s, pad, pad, pad, pad, 1, 1, grp]
        second = [1, c2, h2, h2, 7, 1, 1, h2, h2, 1, 1, 0, 0, 0, 0, 1, 1, 1]
        rows.append(first + second)
    stmt = 'printf("%d\\n", afrt_conv1x1_chain_applies(&p, &p2));'
    printed = conv_rule_outputs(tmp_path, stmt, rows, convs=2)
    got = [int(v) for v in printed]
    want = [int(clib.pw_chain_applies(r[:18], r[18:])) for r in rows]
    assert got == want
    assert 0 < sum(want) < len(want)


def test_a_constant_added_is_not_a_residual(tmp_path: Path) -> None:
    """At aggressiveness 3 (no cost model) a 1x1 conv whose Add reads a small constant of its
    output's shape (cloned into the kernel, a scalar to the lowering) is not a chain half:
    the build has no chain and matches onnxruntime; a true residual there joins."""
    import autofusion
    from autofusion.lowering.c.testing import onnxruntime_outputs
    from autofusion.testing import assert_close

    cfg = tmp_path / "all.json"
    cfg.write_text('{"aggressiveness": 3}')
    for const in (True, False):
        b = _Builder(1)
        if const:  # 16 values: fuse clones it into the kernel
            c = numpy_helper.from_array(np.full((1, 4, 2, 2), 0.25, np.float32), "c")
            b.inits.append(c)
        add_in = "c" if const else b.op("Relu", "r", b.conv("c_r", "x", 4, 4))
        y = b.op("Relu", "y", b.op("Add", "y_add", b.conv("c_y", "x", 4, 4), add_in))
        b.op("Relu", "z", b.conv("c_z", y, 4, 6))
        b.op("Relu", "out", b.op("Add", "o_add", b.conv("c_o", "z", 6, 4), y))
        ins = [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4, 2, 2])]
        outs = [helper.make_tensor_value_info("out", onnx.TensorProto.FLOAT, None)]
        graph = helper.make_graph(b.nodes, "const_add", ins, outs, b.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        built = autofusion.compile(m, cache=False, config=str(cfg))
        try:
            assert len(_chains(built.report)) == (0 if const else 1)
            feeds = uniform_feeds(m, 2)
            got = built.run(feeds)["out"]
        finally:
            built.close()
        assert_close(got, onnxruntime_outputs(m, feeds)["out"], f"out (constant {const})")
