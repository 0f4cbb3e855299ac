"""The fused-epilogue variants the conv kernel tests (test_c_dwconv.py, test_c_winograd.py,
test_c_nchwc.py) put after a Conv whose output is ``conv_out``: ONNX nodes writing ``y`` and
their constants; and the multi-branch 3x3-conv sweep models of test_c_winograd.py and
test_c_nchwc.py (one branch per case, each with its epilogue) with their seeded inputs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

#: "none" and "bias" add no node: the conv writes ``y`` itself (bias as its third input)
EPILOGUES = ("none", "bias", "relu", "relu6", "silu", "bias_add_relu")


def epilogue_nodes(
    rng: np.random.Generator, i: int, epi: str, conv_out: str, y: str, out_shape: tuple[int, ...]
) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    """Nodes ``conv_out -> y`` for ``epi`` (names suffixed ``i``) and their initializers;
    ``bias_add_relu`` adds a residual of ``out_shape`` drawn from ``rng``."""
    if epi in ("none", "bias"):
        return [], []
    if epi == "relu":
        return [helper.make_node("Relu", [conv_out], [y], name=f"relu{i}")], []
    if epi == "relu6":
        inits = [numpy_helper.from_array(np.array(0, np.float32), f"lo{i}"),
                 numpy_helper.from_array(np.array(6, np.float32), f"hi{i}")]  # fmt: skip
        return [
            helper.make_node("Clip", [conv_out, f"lo{i}", f"hi{i}"], [y], name=f"clip{i}")
        ], inits
    if epi == "silu":
        return [helper.make_node("Sigmoid", [conv_out], [f"s{i}"], name=f"sig{i}"),
                helper.make_node("Mul", [conv_out, f"s{i}"], [y], name=f"mul{i}")], []  # fmt: skip
    if epi == "bias_add_relu":
        res = rng.uniform(-1, 1, out_shape).astype(np.float32)
        return [helper.make_node("Add", [conv_out, f"r{i}"], [f"a{i}"], name=f"add{i}"),
                helper.make_node("Relu", [f"a{i}"], [y], name=f"relu{i}")], [
            numpy_helper.from_array(res, f"r{i}")
        ]  # fmt: skip
    raise ValueError(f"unknown epilogue {epi!r}")


#: one branch: its nodes, initializers, graph inputs and output
Built = tuple[list[onnx.NodeProto], list[onnx.TensorProto], list[onnx.ValueInfoProto],
              onnx.ValueInfoProto]  # fmt: skip


def conv_branch(rng: np.random.Generator, i: int, c: int, k: int, h: int, w: int,
                pads: tuple[int, int, int, int], epi: str, *, r: int, stride: int = 1,
                batch: int = 1, w_input: bool = False, w_scale: float = 1.0) -> Built:  # fmt: skip
    """One r x r Conv (+ epilogue) on input ``x{i}``, output ``y{i}``, weights uniform in
    +-``w_scale`` over sqrt(r * r * c); ``w_input``: the weights are a graph input (not a
    constant), so the kernel transforms or reorders them per call."""
    x, y = f"x{i}", f"y{i}"
    wt = (rng.uniform(-w_scale, w_scale, (k, c, r, r)) / np.sqrt(r * r * c)).astype(np.float32)
    inits: list[onnx.TensorProto] = []
    ins = [helper.make_tensor_value_info(x, TensorProto.FLOAT, [batch, c, h, w])]
    if w_input:
        ins.append(helper.make_tensor_value_info(f"w{i}", TensorProto.FLOAT, [k, c, r, r]))
    else:
        inits.append(numpy_helper.from_array(wt, f"w{i}"))
    conv_in = [x, f"w{i}"]
    if epi.startswith("bias"):
        inits.append(numpy_helper.from_array(rng.uniform(-1, 1, k).astype(np.float32), f"b{i}"))
        conv_in.append(f"b{i}")
    conv_out = y if epi in ("none", "bias") else f"c{i}"
    nodes = [helper.make_node("Conv", conv_in, [conv_out], name=f"conv{i}", kernel_shape=[r, r],
                              pads=list(pads), strides=[stride, stride])]  # fmt: skip
    oh = (h + pads[0] + pads[2] - r) // stride + 1
    ow = (w + pads[1] + pads[3] - r) // stride + 1
    epi_nodes, epi_inits = epilogue_nodes(rng, i, epi, conv_out, y, (batch, k, oh, ow))
    vi_y = helper.make_tensor_value_info(y, TensorProto.FLOAT, [batch, k, oh, ow])
    return nodes + epi_nodes, inits + epi_inits, ins, vi_y


def conv3x3_branch(rng: np.random.Generator, i: int, c: int, k: int, h: int, w: int,
                   pads: tuple[int, int, int, int], epi: str, stride: int = 1, batch: int = 1,
                   w_input: bool = False) -> Built:  # fmt: skip
    """One 3x3 Conv (+ epilogue): ``conv_branch`` with r = 3."""
    return conv_branch(rng, i, c, k, h, w, pads, epi, r=3, stride=stride, batch=batch,
                       w_input=w_input)  # fmt: skip


def branches_model(
    branch: Callable[..., tuple[list, list, Any, onnx.ValueInfoProto]],
    cases: list[dict[str, object]],
    seed: int,
    name: str,
) -> onnx.ModelProto:
    """One model holding an independent branch per case: ``branch(rng, i, **case)`` returns
    (nodes, initialisers, its input value info or a list of them, its output value info)."""
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    ins: list[onnx.ValueInfoProto] = []
    outs: list[onnx.ValueInfoProto] = []
    for i, case in enumerate(cases):
        n, t, vin, vy = branch(rng, i, **case)
        nodes += n
        inits += t
        ins += vin if isinstance(vin, list) else [vin]
        outs.append(vy)
    graph = helper.make_graph(nodes, name, ins, outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def conv3x3_sweep(cases: list[dict[str, object]], seed: int, name: str) -> onnx.ModelProto:
    """One multi-branch model holding every case (keyword arguments of ``conv3x3_branch``)."""
    return branches_model(conv3x3_branch, cases, seed, name)


def sweep_feeds(model: onnx.ModelProto, seed: int) -> dict[str, np.ndarray]:
    """Seeded inputs: activations U(-2, 2), weights inputs at the 1/sqrt(fan-in) scale."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in model.graph.input:
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        scale = 1.0 / np.sqrt(9 * dims[1]) if vi.name.startswith("w") else 2.0
        feeds[vi.name] = rng.uniform(-scale, scale, dims).astype(np.float32)
    return feeds


def check_builtin_epilogue(
    model: onnx.ModelProto, shape: tuple[int, int, int, int], lo: float, fn: str, seed: int,
    threads: int,
) -> None:  # fmt: skip
    """``model`` (input ``x`` of ``shape``, output ``y``) compiled at ``threads`` threads:
    every fused epilogue is the runtime's built-in ``fn`` (model.c holds no generated one),
    and ``y`` matches onnxruntime on uniform inputs in [lo, -lo) holding a NaN, +-inf and
    -0.0, NaN kept. The ONNX-level check of test_runtime_epi_clamp and test_runtime_silu."""
    from pathlib import Path

    import onnxruntime as ort

    import autofusion
    from autofusion.testing import assert_close

    x = np.random.default_rng(seed).uniform(lo, -lo, shape).astype(np.float32)
    x[0, 3, 4, 5] = np.nan
    x[1, 7, 0, 0] = np.inf
    x[1, 9, -1, -1] = -np.inf
    x[0, 11, 2, 2] = -0.0
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = sess.run(None, {"x": x})[0]
    m = autofusion.compile(model, threads=threads)
    try:
        text = (Path(m.directory) / "model.c").read_text()
        assert text.count(f"(afrt_epilogue){{{fn}, ") >= 2
        assert "_epilogue(void" not in text
        got = m.run({"x": x})["y"]
    finally:
        m.close()
    assert np.isnan(ref).any()
    assert np.isnan(got).any()
    assert_close(got, ref, "y")


def checked_report(
    model: onnx.ModelProto, feeds: dict[str, np.ndarray], cpu: str, threads: int
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """``model`` compiled for ``cpu`` at ``threads`` threads (no cache), every output matched
    against onnxruntime at the project's bar: the compile report and its ``conv_algo`` rows by
    each of their ONNX origins (a fused chain's row under every conv it holds)."""
    import autofusion
    from autofusion.lowering.c.testing import onnxruntime_outputs
    from autofusion.testing import assert_close

    ref = onnxruntime_outputs(model, feeds)
    m = autofusion.compile(model, cpu=cpu, threads=threads, cache=False)
    try:
        got = m.run(feeds)
        for name, r in ref.items():
            assert_close(got[name], r, f"{name} ({cpu}, {threads} thread(s))")
        report = m.report
    finally:
        m.close()
    rows = report["conv_algo"]
    assert isinstance(rows, list)
    return report, {str(o): r for r in rows for o in r["origins"]}


def checked_conv_algos(
    model: onnx.ModelProto, feeds: dict[str, np.ndarray], cpu: str, threads: int
) -> dict[str, str]:
    """``checked_report``'s ``conv_algo`` choice of each conv, by its first ONNX origin."""
    _, by_origin = checked_report(model, feeds, cpu, threads)
    return {str(r["origins"][0]): r["conv_algo"] for r in by_origin.values()}
