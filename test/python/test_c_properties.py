"""Properties of the generated C: deterministic, hostile names stay inert, sanitizer-clean,
fused kernels are one function each with their epilogues, thread count honoured."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from autofusion import zoo
from autofusion.lowering.c.testing import (
    assert_close,
    build_and_run,
    compile_onnx,
    emit_lowered,
    onnxruntime_outputs,
)

HOSTILE_IN = 'a"; system("x"); //'
HOSTILE_OUT = "b */ #include <stdio.h>\n??/ \\"
HOSTILE_NODE = '*/ int main(void){return system("x");} /*'


def test_emit_is_deterministic(tmp_path: Path) -> None:
    model = zoo.get_model("tiny_bert")
    for d in ("a", "b"):
        emit_lowered(compile_onnx(model, fusion=True), tmp_path / d)
    for f in ("model.c", "model.h", "weights.bin"):
        a, b = (tmp_path / "a" / f).read_bytes(), (tmp_path / "b" / f).read_bytes()
        assert a == b, f"{f} differs between two emits of the same model"
    assert str(tmp_path) not in (tmp_path / "a" / "model.c").read_text()


def _hostile_model() -> onnx.ModelProto:
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.standard_normal((4, 5)).astype(np.float32), HOSTILE_NODE)
    nodes = [
        helper.make_node("MatMul", [HOSTILE_IN, HOSTILE_NODE], ["t0"], name=HOSTILE_NODE),
        helper.make_node("Relu", ["t0"], [HOSTILE_OUT], name=HOSTILE_IN),
    ]
    graph = helper.make_graph(
        nodes,
        HOSTILE_NODE,
        [helper.make_tensor_value_info(HOSTILE_IN, TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info(HOSTILE_OUT, TensorProto.FLOAT, [3, 5])],
        initializer=[w],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("fusion", [False, True])
def test_hostile_names(tmp_path: Path, fusion: bool) -> None:
    model = _hostile_model()
    feeds = {HOSTILE_IN: np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)}
    ref = onnxruntime_outputs(model, feeds)
    got = build_and_run(compile_onnx(model, fusion=fusion), feeds, tmp_path)
    assert_close(got[HOSTILE_OUT], ref[HOSTILE_OUT], "hostile model")
    text = (tmp_path / "model.c").read_text()
    for s in (HOSTILE_IN, HOSTILE_OUT, HOSTILE_NODE, 'system("x")', "#include <stdio.h>\n??"):
        assert s not in text, f"model string {s!r} reached the C verbatim"


@pytest.mark.parametrize("name", ["tiny_cnn", "tiny_bert"])
def test_sanitizer_clean(name: str, tmp_path: Path) -> None:
    from autofusion.runtime.build import build_sanitizer_driver, run_driver

    model = zoo.get_model(name)
    feeds = zoo.sample_inputs(model, seed=2)
    ref = onnxruntime_outputs(model, feeds)
    emit_lowered(compile_onnx(model, fusion=True), tmp_path)
    exe = build_sanitizer_driver(tmp_path)
    inputs = [feeds[i.name] for i in model.graph.input if i.name in feeds]
    outs = [(r.shape, r.dtype) for r in ref.values()]
    got = run_driver(exe, tmp_path / "weights.bin", inputs, outs, tmp_path / "run", threads=2)
    for (name_, r), g in zip(ref.items(), got):
        assert_close(g, r, f"{name} under ASan/UBSan: {name_}")


def test_fused_kernels_are_one_function_with_epilogues(tmp_path: Path) -> None:
    import re

    from autofusion.dialects import nn
    from autofusion.dialects.fusion import KernelOp

    module = compile_onnx(zoo.get_model("tiny_cnn"), fusion=True)
    kernels = [op for op in module.walk() if isinstance(op, KernelOp)]
    with_epilogue = [
        k
        for k in kernels
        if any(isinstance(o, nn.ConvOp | nn.MatMulOp | nn.GemmOp) for o in k.body.ops)
        and any(isinstance(o, nn.ELEMENTWISE) for o in k.body.ops)
    ]
    assert with_epilogue, "tiny_cnn should have Conv+activation kernels"
    emit_lowered(module, tmp_path)
    text = (tmp_path / "model.c").read_text()
    epilogues = re.findall(r"^static AFRT_WIDE_VEC void (k\d+_\w+)_epilogue\(void \*", text, re.M)
    functions = re.findall(r"^static void (k\d+_\w+)\(const unsigned char", text, re.M)
    assert len(functions) == len(kernels), "each fusion.kernel must be exactly one C function"
    assert set(epilogues) <= set(functions)

    def body(name: str) -> str:
        return text.split(f"static void {name}(const unsigned char", 1)[1].split("\n}\n", 1)[0]

    # tiny_cnn's epilogues (Relu, Add + Relu, Clip) are all afrt.h's built-in clamp epilogue
    builtin = [f for f in functions if "{afrt_epi_clamp_fn, " in body(f)]
    assert builtin, "tiny_cnn's Conv+Relu kernels should use afrt_epi_clamp_fn"
    assert not set(builtin) & set(epilogues)
    assert len(epilogues) + len(builtin) == len(with_epilogue)
    for name in epilogues:
        assert f"{{{name}_epilogue, " in body(name), f"{name} does not pass its epilogue to afrt"


def test_threads_give_same_outputs(tmp_path: Path) -> None:
    model = zoo.get_model("tiny_cnn")
    feeds = zoo.sample_inputs(model, seed=4)
    one = build_and_run(compile_onnx(model), feeds, tmp_path / "t1", threads=1)
    two = build_and_run(compile_onnx(model), feeds, tmp_path / "t2", threads=2)
    for k in one:
        assert_close(two[k], one[k], f"threads: {k}")


def test_wrong_weights_file_is_a_clear_error(tmp_path: Path) -> None:
    from autofusion.errors import AutofusionError
    from autofusion.lowering.c.testing import build
    from autofusion.runtime.loader import ModelLibrary

    lib = build(compile_onnx(zoo.get_model("tiny_cnn")), tmp_path)
    size = (tmp_path / "weights.bin").stat().st_size
    assert size > 0
    assert size % 4 == 0
    short = tmp_path / "short.bin"
    short.write_bytes((tmp_path / "weights.bin").read_bytes()[:-4])
    with pytest.raises(AutofusionError, match=f"expected {size} bytes, got {size - 4}"):
        ModelLibrary(lib, short, 1)
    with pytest.raises(AutofusionError, match="cannot open"):
        ModelLibrary(lib, tmp_path / "missing.bin", 1)
