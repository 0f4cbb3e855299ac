"""A fused conv whose epilogue adds a residual, written over that residual
(``plan-buffers``' ``memory.residual_inplace``, docs/memory.md and docs/runtime.md "In-place
residual"): planned on ResNet-style blocks, never growing the arena, and bit-identical to the
build with ``residual_inplace: false`` (and within tolerance of onnxruntime) on the GEMM core's
paths: a half tile (196 positions), edge tiles and two k blocks (7x7 map, 288 input channels),
an im2col conv with a strided 1x1 shortcut, batch 2, 2 threads, and a 1-thread build without
AVX-512 (x86-64-v2). The kernels themselves are checked bit for bit, under ASan/UBSan too, by
``test_runtime_epi_clamp.py``'s driver."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from runtime_drivers import same_bits_at_thread_counts

import autofusion
from autofusion.testing import assert_close

SHAPE = (2, 64, 14, 14)


def _blocks() -> onnx.ModelProto:
    """Three residual blocks whose last conv fuses the shortcut Add + Relu, then a 1x1 conv
    (so the last block's output is an intermediate, not a graph output)."""
    rng = np.random.default_rng(16)
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def conv(x: str, cin: int, cout: int, k: int = 1, stride: int = 1, relu: bool = True) -> str:
        name = f"c{len(nodes)}"
        w = rng.uniform(-1.0, 1.0, (cout, cin, k, k)) * (1.5 / np.sqrt(cin * k * k))
        b = rng.uniform(-0.2, 0.2, cout)
        inits.append(numpy_helper.from_array(w.astype(np.float32), f"{name}_w"))
        inits.append(numpy_helper.from_array(b.astype(np.float32), f"{name}_b"))
        pads = [k // 2] * 4
        nodes.append(
            helper.make_node(
                "Conv", [x, f"{name}_w", f"{name}_b"], [name], pads=pads, strides=[stride] * 2
            )
        )
        if not relu:
            return name
        nodes.append(helper.make_node("Relu", [name], [f"{name}_r"]))
        return f"{name}_r"

    def add_relu(a: str, b: str) -> str:
        name = f"s{len(nodes)}"
        nodes.append(helper.make_node("Add", [a, b], [name]))
        nodes.append(helper.make_node("Relu", [name], [f"{name}_r"]))
        return f"{name}_r"

    x = conv("x", 64, 64)
    # 14x14: 196 positions end in a 4-column half tile
    x = add_relu(conv(conv(x, 64, 32), 32, 64, relu=False), x)
    # strided shortcut (1x1 /2, im2col) and a 3x3 /2 main path (im2col): 7x7 maps
    short = conv(x, 64, 48, stride=2, relu=False)
    x = add_relu(conv(x, 64, 48, k=3, stride=2, relu=False), short)
    # 288 input channels: two k blocks; 49 positions: an edge tile
    x = add_relu(conv(conv(x, 48, 288), 288, 48, relu=False), x)
    y = conv(x, 48, 16, relu=False)
    g = helper.make_graph(
        nodes,
        "residual_blocks",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(SHAPE))],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, [SHAPE[0], 16, 7, 7])],
        inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def model() -> onnx.ModelProto:
    return _blocks()


@pytest.fixture(scope="module")
def config_off(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("cfg") / "off.json"
    path.write_text(json.dumps({"residual_inplace": False}))
    return str(path)


def _run(model: onnx.ModelProto, x: np.ndarray, **kw: object) -> tuple[np.ndarray, dict, str]:
    m = autofusion.compile(model, **kw)  # type: ignore[arg-type]
    try:
        out = next(iter(m.run({"x": x}).values()))
        return out, dict(m.report), (Path(m.directory) / "model.c").read_text()
    finally:
        m.close()


def _reference(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


@pytest.mark.parametrize(("threads", "cpu"), [(2, "native"), (1, "x86-64-v2")])
def test_in_place_is_bit_identical_and_matches_onnxruntime(
    model: onnx.ModelProto, config_off: str, threads: int, cpu: str
) -> None:
    x = np.random.default_rng(5).uniform(-1.0, 1.0, SHAPE).astype(np.float32)
    got, report, text = _run(model, x, threads=threads, cpu=cpu)
    base, base_report, base_text = _run(model, x, threads=threads, cpu=cpu, config=config_off)
    # every block's last conv is planned over its shortcut, and only with the option on
    assert report["residual_inplace"] == 3
    assert base_report["residual_inplace"] == 0
    assert report["arena_bytes"] <= base_report["arena_bytes"]
    # the residual and output arguments lose restrict (the last two); nothing else does
    sigs = [ln for ln in text.splitlines() if ln.startswith("static void") and "add_relu(" in ln]
    base_sigs = [ln for ln in base_text.splitlines() if ln in sigs or "add_relu(" in ln]
    assert len(sigs) == 3
    assert all(
        re.search(r"\*restrict v\d+, const float \*v\d+, float \*v\d+\) \{$", s) for s in sigs
    )
    assert all(
        re.search(r"const float \*restrict v\d+, float \*restrict v\d+\) \{$", s)
        for s in base_sigs
        if s.startswith("static void")
    )
    assert got.view(np.uint32).tobytes() == base.view(np.uint32).tobytes()
    assert_close(got, _reference(model, x), "y")


def _small_map_blocks() -> onnx.ModelProto:
    """Batch 1 on 9x9 and 5x5 maps, where two or three threads split a conv's output channels
    and share one packed B (afrt_shared_b_): Add + Relu over a graph input (its own buffer),
    Add alone in place after a 3x3 (two k blocks), Add + Relu in place, a strided 1x1."""
    rng = np.random.default_rng(7)
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def conv(x: str, cin: int, cout: int, k: int = 1, stride: int = 1) -> str:
        name = f"c{len(nodes)}"
        w = rng.uniform(-1.0, 1.0, (cout, cin, k, k)) * (1.5 / np.sqrt(cin * k * k))
        inits.append(numpy_helper.from_array(w.astype(np.float32), f"{name}_w"))
        b = rng.uniform(-0.2, 0.2, cout)
        inits.append(numpy_helper.from_array(b.astype(np.float32), f"{name}_b"))
        ins = [x, f"{name}_w", f"{name}_b"]
        pads, strides = [k // 2] * 4, [stride] * 2
        nodes.append(helper.make_node("Conv", ins, [name], pads=pads, strides=strides))
        return name

    def op(kind: str, *args: str) -> str:
        name = f"{kind.lower()}{len(nodes)}"
        nodes.append(helper.make_node(kind, list(args), [name]))
        return name

    a = op("Relu", conv("x", 48, 300))  # 300 output channels split over the threads
    b = op("Relu", op("Add", conv(a, 300, 48), "x"))  # two k blocks; x is not overwritten
    c = op("Add", conv(op("Relu", conv(b, 48, 40)), 40, 48, k=3), b)  # in place, no Relu
    d = op("Relu", op("Add", conv(op("Relu", conv(c, 48, 32)), 32, 48), c))  # in place, Relu
    y = conv(d, 48, 64, stride=2)  # 5x5: gathered, then the GEMM
    g = helper.make_graph(
        nodes,
        "small_map_blocks",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 48, 9, 9])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 64, 5, 5])],
        inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("cpu", ["native", "x86-64-v2"])
def test_shared_b_at_one_to_three_threads(cpu: str) -> None:
    """One build loaded at 1, 2 and 3 threads: the same bits whatever the split (the shared
    B is a copy of what each tile packed), and within tolerance of onnxruntime."""
    model = _small_map_blocks()
    x = np.random.default_rng(8).uniform(-1.0, 1.0, (1, 48, 9, 9)).astype(np.float32)
    report = same_bits_at_thread_counts(model, {"x": x}, cpu, compile_threads=1)
    assert report["residual_inplace"] == 2
