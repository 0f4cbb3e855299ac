"""Ascend C run-time tiling: one generated project serves every size of a dynamic leading
dimension in ``1..<the compiled size>``. The host tiling functions take the run-time size,
the kernels read every length from the tiling struct; run on the CPU functional model at
several sizes against onnxruntime. Kernels without run-time tiling refuse other sizes with an
error naming the limitation."""

from __future__ import annotations

import json
import shutil

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from autofusion import testing
from autofusion.dialects import ascendc as ac
from autofusion.errors import AutofusionError
from autofusion.frontend.onnx_import import import_onnx
from autofusion.lowering.ascendc import tiling as tl
from autofusion.lowering.ascendc.cpu_run import CpuModelRunner
from autofusion.lowering.ascendc.lower import LowerFusionToAscendC
from autofusion.pipeline import PipelineOptions, make_context, run_tensor_passes

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ builds the CPU model")

HIDDEN = 40  # not a multiple of 8: ragged rows and tails
MAX_N = 8


def _model(with_matmul: bool = False) -> onnx.ModelProto:
    """x[n, 5, HIDDEN] -> relu(x + b) -> LayerNorm -> (Softmax over the last axis, its
    ReduceMean); with ``with_matmul`` also a MatMul of the LayerNorm output."""
    rng = np.random.default_rng(7)

    def init(name: str, shape: tuple[int, ...], lo: float, hi: float) -> onnx.TensorProto:
        arr = rng.uniform(lo, hi, size=shape).astype(np.float32)
        return helper.make_tensor(name, TensorProto.FLOAT, shape, arr.reshape(-1).tolist())

    nodes = [
        helper.make_node("Add", ["x", "b"], ["a"], name="add"),
        helper.make_node("Relu", ["a"], ["r"], name="relu"),
        helper.make_node("LayerNormalization", ["r", "g", "beta"], ["ln"], axis=-1, name="ln"),
        helper.make_node("Softmax", ["ln"], ["sm"], axis=-1, name="softmax"),
        helper.make_node("ReduceMean", ["sm"], ["mean"], axes=[-1], keepdims=1, name="mean"),
    ]
    outputs = [
        helper.make_tensor_value_info("sm", TensorProto.FLOAT, ["n", 5, HIDDEN]),
        helper.make_tensor_value_info("mean", TensorProto.FLOAT, ["n", 5, 1]),
    ]
    inits = [
        init("b", (HIDDEN,), -0.5, 0.5),
        init("g", (HIDDEN,), 0.7, 1.3),
        init("beta", (HIDDEN,), -0.2, 0.2),
    ]
    if with_matmul:
        nodes.append(helper.make_node("MatMul", ["ln", "w"], ["mm"], name="mm"))
        outputs.append(helper.make_tensor_value_info("mm", TensorProto.FLOAT, ["n", 5, 16]))
        inits.append(init("w", (HIDDEN, 16), -0.3, 0.3))
    graph = helper.make_graph(
        nodes,
        "runtime_rows",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 5, HIDDEN])],
        outputs,
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _lowered(proto: onnx.ModelProto, runtime_sizes: bool = True):
    module = import_onnx(proto, input_shapes={"x": [MAX_N, 5, HIDDEN]})
    run_tensor_passes(module, PipelineOptions(target="ascendc"))
    LowerFusionToAscendC(cores=4, max_tile=64, runtime_sizes=runtime_sizes).apply(
        make_context(), module
    )
    module.verify()
    return module


def _kernels(module) -> list[ac.KernelOp]:
    return [op for op in module.body.block.ops if isinstance(op, ac.KernelOp)]


@pytest.fixture(scope="module")
def runtime_model():
    proto = _model()
    module = _lowered(proto)
    return proto, module, CpuModelRunner(module)


def test_every_kernel_has_run_time_tiling(runtime_model) -> None:
    _, module, _ = runtime_model
    kinds = {(k.tiling.kind.data, k.tiling.runtime_names()) for k in _kernels(module)}
    assert kinds == {("vector", ("outer",)), ("rows", ("rows",))}
    assert len(_kernels(module)) == 4  # add+relu, layer norm, softmax, reduce mean


@pytest.mark.parametrize("n", [1, 3, 5, MAX_N])
def test_one_project_serves_every_size_in_range(runtime_model, n: int) -> None:
    proto, _, runner = runtime_model
    x = np.random.default_rng(n).uniform(-2, 2, size=(n, 5, HIDDEN)).astype(np.float32)
    got = runner.run({"x": x})
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for name, ref in zip(["sm", "mean"], sess.run(["sm", "mean"], {"x": x})):
        assert got[name].shape == ref.shape, name
        testing.assert_close(got[name], ref, what=f"{name} at n={n}")
    # every launch ran at this call's size, not the compiled one
    assert [a[0].shape[0] for _, a, _ in runner.trace] == [n] * 4


def test_host_tiling_function_is_the_formula_at_every_size(runtime_model) -> None:
    """The compiled host tiling function and the Python evaluation of the same definition
    agree for every run-time size and core count, and both refuse sizes out of range."""
    _, module, runner = runtime_model
    for k in _kernels(module):
        (size,) = k.tiling.runtime_names()
        inputs = k.tiling.input_values()
        hi = inputs[f"{size}Max"]
        formula = tl.formula_of(k.tiling)
        for n in range(1, hi + 1):
            for cores in (1, 3, 4, 16):
                dim, got = runner.host_tiling(k, cores, {size: n})
                want = formula.evaluate({**inputs, size: n}, cores)
                assert got == want, (k.sym_name.data, n, cores)
                assert dim == want["blockDim"] >= 1
        for bad in (0, hi + 1):
            assert runner.host_tiling(k, 4, {size: bad})[0] == 0
            with pytest.raises(tl.TilingError):
                formula.evaluate({**inputs, size: bad})


def test_size_outside_the_range_is_a_clear_error(runtime_model) -> None:
    _, _, runner = runtime_model
    x = np.ones((MAX_N + 1, 5, HIDDEN), dtype=np.float32)
    with pytest.raises(
        AutofusionError, match=r"run-time size outer = 45 is outside its range 1\.\.40"
    ):
        runner.run({"x": x})
    with pytest.raises(AutofusionError, match=r"input 0 has shape \[2, 5, 24\]"):
        runner.run({"x": np.ones((2, 5, 24), dtype=np.float32)})


def test_kernels_without_run_time_tiling_name_the_limitation() -> None:
    proto = _model(with_matmul=True)
    module = _lowered(proto)
    mm = next(k for k in _kernels(module) if k.tiling.kind.data == "cube")
    assert mm.static_reason is not None
    runner = CpuModelRunner(module)
    x = np.random.default_rng(0).uniform(-2, 2, size=(MAX_N, 5, HIDDEN)).astype(np.float32)
    got = runner.run({"x": x})  # at the compiled size everything runs
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    testing.assert_close(got["mm"], sess.run(["mm"], {"x": x})[0], what="mm")
    with pytest.raises(
        AutofusionError,
        match=r"input 0 has shape \[3, 5, 40\] but the kernel has compile-time sizes for "
        r"\[8, 5, 40\]: Matmul / convolution tiling",
    ):
        runner.run({"x": x[:3]})
    # lowered without runtime_sizes, every kernel says so
    static = CpuModelRunner(_lowered(_model(), runtime_sizes=False))
    with pytest.raises(AutofusionError, match="lowered without runtime_sizes"):
        static.run({"x": x[:3]})


def test_compile_cli_writes_a_run_time_project(tmp_path, capsys) -> None:
    from autofusion.tools.compile import main

    model = tmp_path / "dyn.onnx"
    onnx.save(_model(with_matmul=True), model)
    out = tmp_path / "proj"
    argv = [str(model), "--target", "ascendc", "--runtime-sizes", "--input-shape", "x=8x5x40"]
    assert main([*argv, "-o", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    sizes = {k["tiling_kind"]: k["runtime_sizes"] for k in manifest["kernels"]}
    assert sizes == {"vector": {"outer": [1, 40]}, "rows": {"rows": [1, 40]}, "cube": {}}
    cube = next(k for k in manifest["kernels"] if k["tiling_kind"] == "cube")
    assert cube["static_reason"].startswith("Matmul / convolution tiling")
    vec = next(k["name"] for k in manifest["kernels"] if k["tiling_kind"] == "vector")
    header = (out / "kernels" / f"{vec}_tiling.h").read_text()
    assert f"uint32_t {vec}_tiling(uint32_t coreNum, uint32_t outer, " in header
    assert json.loads((out / "report.json").read_text())["runtime_sizes"] is True
    # the option means nothing to the C target: one clear error
    assert main([*argv[:1], *argv[3:], "-o", str(tmp_path / "c")]) == 1
    assert "--runtime-sizes True applies to --target ascendc only" in capsys.readouterr().err
