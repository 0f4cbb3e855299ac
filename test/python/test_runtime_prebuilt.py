"""The prebuilt runtime (autofusion.runtime.prebuilt) the ONNX node cases link against.

A model built against it calls the object's copies of the runtime functions (the library
holds their aliases; model.c compiled without the object does not link) and computes exactly
what the same model built the usual way computes, at one and at two threads (the thread
count lives in the runtime's static state, which must be the object's one copy). The
function list comes from the preprocessed header; an unparseable header is an error, not an
empty list.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from autofusion.errors import AutofusionError
from autofusion.lowering.c.testing import compile_onnx, emit_lowered, onnxruntime_outputs
from autofusion.runtime import build
from autofusion.runtime.loader import ModelLibrary
from autofusion.runtime.prebuilt import (
    ALIAS_PREFIX,
    HEADER,
    PrebuiltRuntime,
    build_prebuilt_runtime,
    runtime_functions,
)
from autofusion.testing import assert_close

OPTIONS = build.BuildOptions(extra_cflags=("-O2",))  # as test_c_node_tests.py builds


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> PrebuiltRuntime:
    return build_prebuilt_runtime(tmp_path_factory.mktemp("afrt_prebuilt"), OPTIONS)


def _conv_matmul_model() -> onnx.ModelProto:
    """Conv (a runtime kernel) -> Relu -> Flatten -> MatMul (another) on ordinary values."""
    rng = np.random.default_rng(4)
    w = (rng.uniform(-1, 1, (8, 3, 3, 3)) / np.sqrt(27)).astype(np.float32)
    m = (rng.uniform(-1, 1, (8 * 6 * 6, 5)) / np.sqrt(288)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Flatten", ["r"], ["f"]),
        helper.make_node("MatMul", ["f", "m"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "conv_matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(m, "m")],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(lib: Path, weights: Path, feeds: dict[str, np.ndarray], threads: int) -> np.ndarray:
    ml = ModelLibrary(lib, weights, threads)
    try:
        return ml.run(feeds)["y"]
    finally:
        ml.close()


def test_model_calls_the_prebuilt_kernels_and_computes_the_same(
    runtime: PrebuiltRuntime, tmp_path: Path
) -> None:
    model = _conv_matmul_model()
    feeds = {"x": np.random.default_rng(5).uniform(-2, 2, (1, 3, 6, 6)).astype(np.float32)}
    ref = onnxruntime_outputs(model, feeds)["y"]
    assert 0.1 < np.abs(ref).max() < 10
    usual, pre = tmp_path / "usual", tmp_path / "prebuilt"
    emit_lowered(compile_onnx(model, fusion=False), usual)
    text = (usual / "model.c").read_text()
    assert "afrt_conv2d_f32(" in text
    assert "afrt_matmul_f32(" in text
    shutil.copytree(usual, pre)
    build.build_shared(usual, OPTIONS)
    build.build_shared(pre, runtime.build_options())
    symbols = subprocess.run(
        ["nm", str(pre / build.LIB_NAME)], capture_output=True, text=True, check=True
    ).stdout
    for fn in ("afrt_conv2d_f32", "afrt_matmul_f32", "afrt_set_num_threads"):
        assert f"{ALIAS_PREFIX}{fn}" in symbols, fn
    for threads in (1, 2):
        a = _run(usual / build.LIB_NAME, usual / "weights.bin", feeds, threads)
        b = _run(pre / build.LIB_NAME, pre / "weights.bin", feeds, threads)
        assert_close(b, ref, f"prebuilt, {threads} thread(s)")
        # the same functions compiled with the same flags, called instead of inlined
        assert np.array_equal(a, b), f"{threads} thread(s): {np.abs(a - b).max()}"


def test_model_c_calls_out_to_the_object(runtime: PrebuiltRuntime, tmp_path: Path) -> None:
    """Without the object, model.c has undefined references to the aliases: it compiled no
    kernel of its own."""
    emit_lowered(compile_onnx(_conv_matmul_model(), fusion=False), tmp_path)
    without_object = runtime.cflags()[:-1]
    assert runtime.object.name not in " ".join(without_object)
    with pytest.raises(AutofusionError, match=r"compiling model\.c failed") as err:
        build.build_shared(tmp_path, build.BuildOptions(extra_cflags=("-O2", *without_object)))
    log = re.search(r"full compiler log: (\S+)\)", str(err.value))
    assert log is not None, err.value
    assert f"undefined reference to `{ALIAS_PREFIX}afrt_conv2d_f32'" in Path(log[1]).read_text()


def test_header_is_precompiled_and_redirects_every_function(runtime: PrebuiltRuntime) -> None:
    assert (runtime.header.parent / f"{HEADER}.gch").is_file()
    text = runtime.header.read_text()
    assert len(runtime.functions) > 50
    for fn in ("afrt_conv2d_f32", "afrt_set_num_threads", "afrt_thread_scratch"):
        assert fn in runtime.functions
        assert f"#define {fn} {ALIAS_PREFIX}{fn}\n" in text


def test_runtime_functions_reads_definitions_only() -> None:
    text = """
static inline int afrt_conv2d_f32(const float *x,
                                  int n) {
    return afrt_helper_(n);
}
static inline __attribute__((always_inline)) void afrt_tile_(void) {}
int afrt_declared_only(int a);
static int afrt_num_threads_ = 1;
static void afrt_helper_(int n) { (void)n; }
"""
    assert runtime_functions(text) == ("afrt_conv2d_f32", "afrt_helper_")
    with pytest.raises(AutofusionError, match="afrt_conv2d_f32"):
        runtime_functions("static int afrt_other(void) { return 0; }")
