"""The prebuilt runtime (autofusion.runtime.prebuilt) the ONNX node cases link against.

A model built against it calls the object's copies of the runtime functions (the library
holds their aliases; model.c compiled without the object does not link) and computes exactly
what the same model built the usual way computes, at one and at two threads (the thread
count lives in the runtime's static state, which must be the object's one copy). The
function list comes from the preprocessed header; an unparseable header is an error, not an
empty list.

The runtime cache (``cached_runtime``, what ``autofusion-compile`` links): compiled once per
set of flags and reused, a damaged folder rebuilt, old folders swept, turned off or unusable
falling back to kernels compiled into model.c; the output folder's Makefile still builds
alone.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from autofusion.errors import AutofusionError
from autofusion.lowering.c.testing import (
    assert_one_runtime_copy,
    compile_onnx,
    emit_lowered,
    onnxruntime_outputs,
)
from autofusion.runtime import build, cache, prebuilt
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


def _tanh_model() -> onnx.ModelProto:
    """y = tanh(x * 0.7 + 0.2) * 3 on [1, 3, 6, 6]: no conv or GEMM, so a build that compiles
    the kernels into model.c is cheap (the tests below build two that way)."""
    nodes = [
        helper.make_node("Mul", ["x", "a"], ["p"]),
        helper.make_node("Add", ["p", "b"], ["q"]),
        helper.make_node("Tanh", ["q"], ["t"]),
        helper.make_node("Mul", ["t", "c"], ["y"]),
    ]
    consts = [numpy_helper.from_array(np.array(v, np.float32), n)
              for n, v in (("a", 0.7), ("b", 0.2), ("c", 3.0))]  # fmt: skip
    graph = helper.make_graph(
        nodes, "tanh",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 6, 6])],
        consts,
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


def test_header_is_precompiled_and_redirects_what_models_call(runtime: PrebuiltRuntime) -> None:
    """The functions generated code calls are redirected; internal helpers are not, so gcc
    optimises them inside the object as it does when they are compiled into model.c."""
    assert (runtime.header.parent / f"{HEADER}.gch").is_file()
    text = runtime.header.read_text()
    assert len(runtime.functions) > 20
    for fn in ("afrt_conv2d_f32", "afrt_set_num_threads", "afrt_dwconv2d_f32", "afrt_epi_silu_fn"):
        assert fn in runtime.functions
        assert f"#define {fn} {ALIAS_PREFIX}{fn}\n" in text
    assert "afrt_thread_scratch" not in runtime.functions  # internal: called by the kernels
    assert set(runtime.functions) <= prebuilt.model_calls()


def test_a_second_runtime_copy_is_caught(runtime: PrebuiltRuntime, tmp_path: Path) -> None:
    """A model.c calling a runtime function that is not redirected compiles its own copy (a
    second thread count, scratch buffer...): the check every test build runs finds it."""
    emit_lowered(compile_onnx(_conv_matmul_model(), fusion=False), tmp_path)
    model_c = tmp_path / "model.c"
    model_c.write_text(model_c.read_text() + "\nint af_extra_(void) { return "
                       "(int)(afrt_thread_scratch(0, 1) != 0); }\n")  # fmt: skip
    lib = build.build_shared(tmp_path, runtime.build_options())
    with pytest.raises(AssertionError, match=r"compiled into model\.c as well: .*afrt_tls_buf_"):
        assert_one_runtime_copy(lib)


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


# ---- the runtime cache (autofusion-compile's builds) -------------------------------------

CHEAP = build.BuildOptions(extra_cflags=("-O0",))  # the cheapest runtime to compile afresh


@pytest.fixture
def runtime_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "runtimes"
    monkeypatch.setenv(prebuilt.ENV_RUNTIME_DIR, str(d))
    return d


def test_cached_runtime_is_compiled_once_then_linked(runtime_dir: Path) -> None:
    said: list[str] = []
    first = prebuilt.cached_runtime(CHEAP, said.append)
    assert first is not None
    assert any("compiling the runtime" in s for s in said), said
    assert first.header.parent.parent == runtime_dir
    assert cache.check_entry(first.header.parent, (prebuilt.OBJECT, HEADER)) is None
    said.clear()
    again = prebuilt.cached_runtime(CHEAP, said.append)
    assert again is not None
    assert again.header == first.header
    assert said == []  # a hit says nothing and compiles nothing
    assert "afrt_conv2d_f32" in again.functions  # read back from the cached header
    assert "afrt_thread_scratch" not in again.functions
    assert [p.name for p in runtime_dir.iterdir()] == [first.header.parent.name]  # no .build-*
    other = prebuilt.cached_runtime(build.BuildOptions(extra_cflags=("-O0", "-DAFRT_X=1")))
    assert other is not None
    assert other.header.parent != first.header.parent  # other flags: another key


def test_damaged_cached_runtime_is_removed_and_rebuilt(runtime_dir: Path) -> None:
    rt = prebuilt.cached_runtime(CHEAP)
    assert rt is not None
    data = bytearray(rt.object.read_bytes())
    data[len(data) // 2] ^= 0x10
    rt.object.write_bytes(bytes(data))
    said: list[str] = []
    again = prebuilt.cached_runtime(CHEAP, said.append)
    assert again is not None
    assert again.object == rt.object
    assert any("damaged" in s and "afrt_prebuilt.o" in s for s in said), said
    assert cache.check_entry(rt.object.parent, (prebuilt.OBJECT, HEADER)) is None


def test_only_the_most_recently_used_runtimes_are_kept(tmp_path: Path) -> None:
    now = time.time()
    made = []
    for i in range(prebuilt.KEEP_RUNTIMES + 2):
        d = tmp_path / f"{i:032x}"
        d.mkdir()
        (d / prebuilt.OBJECT).write_bytes(b"x")
        (d / cache.USED_MARKER).touch()
        os.utime(d / cache.USED_MARKER, (now - 100 * i, now - 100 * i))
        made.append(d)
    killed = tmp_path / ".build-killed"
    killed.mkdir()
    os.utime(killed, (now - 7200, now - 7200))
    running = tmp_path / ".build-running"
    running.mkdir()
    keep = made[-1]  # the oldest, but the one being used now
    prebuilt._sweep(tmp_path, keep)
    left = sorted(p.name for p in tmp_path.iterdir())
    expected = [*(d.name for d in made[: prebuilt.KEEP_RUNTIMES - 1]), keep.name]
    assert left == sorted([".build-running", *expected])


def test_compile_falls_back_when_the_runtime_cache_is_off_or_unusable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import autofusion

    model = tmp_path / "m.onnx"
    onnx.save(_tanh_model(), model)
    feeds = {"x": np.random.default_rng(6).uniform(-2, 2, (1, 3, 6, 6)).astype(np.float32)}
    ref = onnxruntime_outputs(_tanh_model(), feeds)["y"]
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    for env, value, why in [
        (prebuilt.ENV_RUNTIME_CACHE, "0", None),
        (prebuilt.ENV_RUNTIME_DIR, str(a_file), "runtime cache not used"),
    ]:
        with monkeypatch.context() as mp:
            mp.setenv(env, value)
            said: list[str] = []
            m = autofusion.compile(model, threads=1, cache=False, progress=said.append)
            assert not any("against the cached runtime" in s for s in said), said
            if why is not None:
                assert any(why in s and str(a_file) in s for s in said), said
            symbols = subprocess.run(["nm", str(m.directory / build.LIB_NAME)],
                                     capture_output=True, text=True, check=True).stdout  # fmt: skip
            assert ALIAS_PREFIX not in symbols  # the kernels were compiled into model.c
            assert_close(m.run(feeds)["y"], ref, f"{env}={value}")
            m.close()


def test_compile_links_the_cached_runtime_and_the_folder_builds_alone(tmp_path: Path) -> None:
    """``autofusion-compile -o`` links the session's cached runtime; the folder's Makefile
    compiles the kernels into model.c and gives the same outputs."""
    model = tmp_path / "m.onnx"
    onnx.save(_tanh_model(), model)
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "autofusion.tools.compile", str(model), "-o",
                           str(out), "--threads", "1"], capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "against the cached runtime" in proc.stderr
    lib = out / build.LIB_NAME
    assert f"{ALIAS_PREFIX}afrt_set_num_threads" in subprocess.run(
        ["nm", str(lib)], capture_output=True, text=True, check=True).stdout  # fmt: skip
    makefile = (out / "Makefile").read_text()
    assert "prebuilt" not in makefile
    assert "/" not in makefile.split("CFLAGS =")[1].split("\n")[0]  # no path out of the folder
    feeds = {"x": np.random.default_rng(7).uniform(-2, 2, (1, 3, 6, 6)).astype(np.float32)}
    linked = _run(lib, out / "weights.bin", feeds, 1)
    lib.unlink()
    subprocess.run(["make", "-s"], cwd=out, check=True, capture_output=True)
    assert ALIAS_PREFIX not in subprocess.run(["nm", str(lib)], capture_output=True, text=True,
                                              check=True).stdout  # fmt: skip
    assert_close(_run(lib, out / "weights.bin", feeds, 1), linked, "make vs linked runtime")
    assert_close(linked, onnxruntime_outputs(_tanh_model(), feeds)["y"], "linked")
