"""Out of memory inside an afrt kernel (docs/runtime.md, "Out of memory").

A kernel that cannot allocate its scratch either takes a path that needs less memory and still
computes the right result, or records a fault: ``af_run`` then returns ``AF_ERR_NOMEM`` and
``af_last_error()`` names the afrt kernel and the generated kernel (with its ONNX nodes) that
called it; ``run()`` raises one ``AutofusionError``. Never a wrong result with status 0.

Allocation failures are injected by a test build (``-DAFRT_TEST_FAIL_ALLOC``; the environment
variable of the same name says which kernel allocations fail, ``FROM[:COUNT]``). The model
tests here check the whole path (kernel, ``af_run``, loader); the kernels' fallbacks, the
in-place residual above all, are swept allocation by allocation by the C driver
``runtime_c/afrt_oom_driver.c``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from runtime_drivers import RUNTIME_C, build_driver

from autofusion.errors import AutofusionError
from autofusion.lowering.c.testing import build, compile_onnx, onnxruntime_outputs
from autofusion.runtime.loader import ModelLibrary
from autofusion.testing import assert_close

TEST_BUILD = ("-DAFRT_TEST_FAIL_ALLOC",)
DRIVER_SRC = RUNTIME_C / "afrt_oom_driver.c"


def _model(tail: str, residual: bool = True) -> onnx.ModelProto:
    """1x1 conv + Relu, a residual block (two 1x1 convs, the second's Add of the block's input
    and Relu fused into it and, with ``residual``, written over that input in place), then
    ``tail``: a MaxPool or a MatMul over the last axis."""
    rng = np.random.default_rng(7)

    def w(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
        fan_in = int(np.prod(shape[1:]))
        return numpy_helper.from_array(
            (rng.uniform(-1.5, 1.5, shape) / np.sqrt(fan_in)).astype(np.float32), name
        )

    inits = [w("w1", (24, 16, 1, 1)), w("w2", (24, 24, 1, 1)), w("w3", (24, 24, 1, 1))]
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Conv", ["r2", "w3"], ["c3"], name="conv3"),
        helper.make_node("Add", ["c3", "r1" if residual else "x3"], ["s3"], name="add3"),
        helper.make_node("Relu", ["s3"], ["r3"], name="relu3"),
    ]
    if not residual:  # the same shapes with an Add of a graph input (never in place)
        nodes.insert(0, helper.make_node("Identity", ["x2"], ["x3"], name="id"))
    if tail == "pool":
        nodes.append(helper.make_node("MaxPool", ["r3"], ["y"], name="pool", kernel_shape=[2, 2],
                                      strides=[2, 2]))  # fmt: skip
        out = [1, 24, 4, 4]
    else:
        inits.append(w("wm", (8, 8)))
        nodes.append(helper.make_node("MatMul", ["r3", "wm"], ["y"], name="mm"))
        out = [1, 24, 8, 8]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8])]
    if not residual:
        ins.append(helper.make_tensor_value_info("x2", TensorProto.FLOAT, [1, 24, 8, 8]))
    g = helper.make_graph(
        nodes, "oom", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _feeds(residual: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(8)
    feeds = {"x": rng.uniform(-2, 2, (1, 16, 8, 8)).astype(np.float32)}
    if not residual:
        feeds["x2"] = rng.uniform(-2, 2, (1, 24, 8, 8)).astype(np.float32)
    return feeds


def _load(model: onnx.ModelProto, work: Path) -> ModelLibrary:
    return ModelLibrary(build(compile_onnx(model), work, TEST_BUILD), work / "weights.bin", 1)


@pytest.mark.parametrize(
    ("tail", "residual", "message"),
    [
        # MaxPool has no way without its row buffers
        ("pool", False, r"afrt_maxpool2d_f32 \(kernel \w+: pool\)"),
        # the residual conv written in place can neither compute in place nor copy the residual
        ("matmul", True, r"afrt_conv2d_f32 \(kernel \w+: conv3, add3, relu3\)"),
    ],
    ids=["maxpool", "inplace_conv"],
)
def test_kernel_out_of_memory_is_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tail: str, residual: bool, message: str
) -> None:
    """Every kernel allocation failing: run() raises one AutofusionError naming the afrt kernel,
    the generated kernel and its ONNX nodes; the model stays usable and is right once memory
    is back."""
    model, feeds = _model(tail, residual), _feeds(residual)
    lib = _load(model, tmp_path)
    try:
        monkeypatch.setenv("AFRT_TEST_FAIL_ALLOC", "1")
        with pytest.raises(AutofusionError, match=rf"^run: out of memory in {message}$"):
            lib.run(feeds)
        monkeypatch.setenv("AFRT_TEST_FAIL_ALLOC", "0")
        got = lib.run(feeds)["y"]
    finally:
        lib.close()
    assert_close(got, onnxruntime_outputs(model, feeds)["y"], "y")


def test_fallbacks_without_memory_match_onnxruntime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1x1 convs (one with a residual Add, not in place) and a MatMul with every kernel
    allocation failing: each takes a path that needs no memory, and the result is right."""
    model, feeds = _model("matmul", residual=False), _feeds(residual=False)
    lib = _load(model, tmp_path)
    try:
        monkeypatch.setenv("AFRT_TEST_FAIL_ALLOC", "1")
        got = lib.run(feeds)["y"]
    finally:
        lib.close()
    assert_close(got, onnxruntime_outputs(model, feeds)["y"], "y")


# portable micro-kernels, and ASan/UBSan for the fallbacks' buffers
@pytest.fixture(scope="module", params=["native", "x86-64-v2", "sanitize"])
def driver(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("oom") / f"afrt_oom_driver_{request.param}"
    return build_driver(DRIVER_SRC, out, request.param, defines=["AFRT_TEST_FAIL_ALLOC"])


@pytest.mark.parametrize("threads", [1, 2])
def test_kernels_fault_or_stay_right_allocation_by_allocation(driver: Path, threads: int) -> None:
    """The C driver: in-place conv/matmul with each allocation failing alone and with all after
    it, fallbacks and faults without memory. Both outcomes must occur (else it checked one)."""
    got = subprocess.run([str(driver), str(threads)], capture_output=True, text=True)
    assert got.returncode == 0, got.stdout + got.stderr
    words = got.stdout.split()
    assert words[0] == "ok", got.stdout
    cases, faults, fallbacks = int(words[1]), int(words[3]), int(words[5])
    assert faults > 0, got.stdout
    assert fallbacks > 0, got.stdout
    assert faults + fallbacks == cases, got.stdout
