"""Sibling 1x1 convs over one input as one conv (``merge-sibling-convs``).

- Inception modules at small sizes against onnxruntime at the project's bar, with the same
  bits at 1, 2 and 3 threads, native and ``x86-64-v2``: odd pieces (13 + 16 + 5), a piece
  at a channel offset not a multiple of 16 read by a conv on the blocked direct kernel
  (``direct_nchwc``), a piece that is also a model output, the 1x1 branch's piece going
  into the module's Concat.
- The report: one ``sibling_convs`` row per joined set (``decided_by = rules``), the
  ``disabled`` refusal with ``patterns: {sibling_convs: false}`` and the same outputs apart.
- The pipeline: the pass runs for target c only, and not with a memory limit.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from runtime_drivers import same_bits_at_thread_counts, uniform_feeds

# name: (input channels, map, 1x1 branch, 3x3 reduce, 3x3, 5x5 reduce, 5x5 (a 3x3), pool proj)
MODULES = {
    "odd": (24, 9, 13, 16, 16, 5, 8, 8),
    "blk": (64, 14, 40, 48, 64, 20, 32, 16),
    "out": (32, 7, 16, 24, 32, 8, 16, 8),
}


def inception_model(seed: int = 0, b1_last: bool = False) -> onnx.ModelProto:
    """Per module of ``MODULES``: ``x -> [1x1, 1x1 -> 3x3, 1x1 -> 3x3, maxpool -> 1x1] ->
    Concat -> 1x1 (8 channels)``, every conv + Relu; module ``out`` also returns its 5x5
    reduce's output. ``b1_last``: the Concat takes the 1x1 branch last, not first. Weights at
    the 1/sqrt(fan-in) scale so outputs stay of order 1."""
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    ins: list[onnx.ValueInfoProto] = []
    outs: list[onnx.ValueInfoProto] = []

    def conv_relu(name: str, x: str, c: int, k: int, r: int) -> str:
        w = rng.uniform(-1, 1, (k, c, r, r)) * 1.7 / np.sqrt(c * r * r)
        inits.append(numpy_helper.from_array(w.astype(np.float32), f"{name}_w"))
        inits.append(numpy_helper.from_array(rng.uniform(-0.2, 0.2, k).astype(np.float32),
                                             f"{name}_b"))  # fmt: skip
        nodes.append(helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [f"{name}_c"],
                                      name=name, kernel_shape=[r, r],
                                      pads=[r // 2] * 4))  # fmt: skip
        nodes.append(helper.make_node("Relu", [f"{name}_c"], [name], name=f"{name}_relu"))
        return name

    for m, (cin, hw, k1, r3, k3, r5, k5, kp) in MODULES.items():
        x = f"x_{m}"
        ins.append(helper.make_tensor_value_info(x, onnx.TensorProto.FLOAT, [1, cin, hw, hw]))
        b1 = conv_relu(f"{m}_b1", x, cin, k1, 1)
        red3 = conv_relu(f"{m}_red3", x, cin, r3, 1)
        b2 = conv_relu(f"{m}_b2", red3, r3, k3, 3)
        red5 = conv_relu(f"{m}_red5", x, cin, r5, 1)
        b3 = conv_relu(f"{m}_b3", red5, r5, k5, 3)
        nodes.append(helper.make_node("MaxPool", [x], [f"{m}_pool"], name=f"{m}_pool",
                                      kernel_shape=[3, 3], pads=[1] * 4))  # fmt: skip
        b4 = conv_relu(f"{m}_b4", f"{m}_pool", cin, kp, 1)
        branches = [b2, b3, b4, b1] if b1_last else [b1, b2, b3, b4]
        nodes.append(helper.make_node("Concat", branches, [f"{m}_cat"],
                                      name=f"{m}_cat", axis=1))  # fmt: skip
        y = conv_relu(f"y_{m}", f"{m}_cat", k1 + k3 + k5 + kp, 8, 1)
        outs.append(helper.make_tensor_value_info(y, onnx.TensorProto.FLOAT, None))
        if m == "out":
            outs.append(helper.make_tensor_value_info(red5, onnx.TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "inception_modules", ins, outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return onnx.shape_inference.infer_shapes(model)


@pytest.mark.parametrize("cpu", ["native", "x86-64-v2"])
def test_siblings_match_onnxruntime_at_1_2_3_threads(cpu: str) -> None:
    """Every output (the returned 5x5 reduce too) matches onnxruntime with the same bits at
    1, 2 and 3 threads; each module's three 1x1 convs joined, the 1x1 branch's piece last
    (the Concat takes it first) and written straight into the Concat: no copy."""
    m = inception_model()
    report = same_bits_at_thread_counts(m, uniform_feeds(m, 3), cpu, runs=2)
    rows = report["sibling_convs"]
    assert [r["pieces"] for r in rows] == [[16, 5, 13], [48, 20, 40], [24, 8, 16]]
    assert [r["nodes"][-1] for r in rows] == ["odd_b1", "blk_b1", "out_b1"]
    assert {r["decided_by"] for r in rows} == {"rules"}
    # every branch of modules blk and out; in module odd the slices after the first start
    # at bytes 13 * 81 * 4 = 4212 ... (not multiples of 64), so its three others are copied
    assert report["concat_copies_removed"] == 4 + 4 + 1
    if cpu == "native" and report.get("layout"):
        # the 3x3 conv reading the piece at channel offset 40 (not a multiple of 16) runs on
        # the blocked direct kernel
        algo = {r["origins"][0]: r["conv_algo"] for r in report["conv_algo"]}
        assert algo["blk_b2"] == "direct_nchwc"


def test_a_piece_a_concat_takes_last_goes_first_and_is_not_copied() -> None:
    """With the 1x1 branch last in each Concat its piece is the joined output's first (the
    other pieces sit just after the Concat's bytes); onnxruntime's outputs, no copy."""
    m = inception_model(seed=2, b1_last=True)
    report = same_bits_at_thread_counts(m, uniform_feeds(m, 4), "native", counts=(1, 2))
    rows = report["sibling_convs"]
    assert [r["pieces"] for r in rows] == [[13, 16, 5], [40, 48, 20], [16, 24, 8]]
    assert [r["nodes"][0] for r in rows] == ["odd_b1", "blk_b1", "out_b1"]
    # not multiples of 64: module odd's b4 slice starts at (16 + 8) * 81 * 4 = 7776 bytes,
    # module out's b1 slice at (32 + 16 + 8) * 49 * 4 = 10976
    assert report["concat_copies_removed"] == 3 + 4 + 3


def test_disabled_family_keeps_siblings_apart(tmp_path: Path) -> None:
    """``patterns: {sibling_convs: false}`` refuses each set (``disabled``), leaves more
    kernels, and gives the joined build's outputs at the project's bar."""
    import autofusion
    from autofusion.testing import assert_close

    off = tmp_path / "off.json"
    off.write_text('{"patterns": {"sibling_convs": false}}')
    m = inception_model(seed=1)
    a = autofusion.compile(m, cache=False)
    b = autofusion.compile(m, cache=False, config=str(off))
    try:
        assert "sibling_convs" not in b.report
        assert len(a.report["sibling_convs"]) == 3
        assert a.report["kernels_after"] < b.report["kernels_after"]
        disabled = [r for r in b.report["refusals"] if r["code"] == "disabled"]
        assert {r["nodes"][0] for r in disabled} == {"odd_b1", "blk_b1", "out_b1"}
        feeds = uniform_feeds(m, 5)
        got_a, got_b = a.run(feeds), b.run(feeds)
        for k in got_b:
            assert_close(got_a[k], got_b[k], f"{k}: joined against apart")
    finally:
        a.close()
        b.close()


def test_pipeline_runs_the_pass_for_c_without_a_memory_limit() -> None:
    """In the C pipeline before fuse-conv-bn-relu; left out for Ascend C and with a memory
    limit."""
    from autofusion.pipeline import Pipeline, PipelineOptions

    def names(**kw: object) -> list[str]:
        return [s.name for s in Pipeline.from_options(PipelineOptions(**kw)).stages]  # type: ignore[arg-type]

    c = names()
    assert c.index("merge-sibling-convs") < c.index("fuse-conv-bn-relu")
    assert "merge-sibling-convs" not in names(target="ascendc")
    assert "merge-sibling-convs" not in names(memory_limit_mb=64.0)
    assert "merge-sibling-convs" not in names(fusion=False)
