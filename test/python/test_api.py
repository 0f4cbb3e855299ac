"""autofusion.compile / CompiledModel.run / report / set_memory_limit, end to end through the
C target, against onnxruntime; plus the API's error paths."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import autofusion
from autofusion.errors import AutofusionError
from autofusion.testing import assert_close
from autofusion.zoo import get_model, sample_inputs


@pytest.fixture(scope="module", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    d = tmp_path_factory.mktemp("afcache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AUTOFUSION_CACHE_DIR", str(d))
        yield d


def ort_ref(name: str, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    model = get_model(name)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def assert_matches(ours: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> None:
    assert set(ours) == set(ref)
    for k, r in ref.items():
        assert_close(ours[k], r, k)


@pytest.fixture(scope="module")
def tiny_cnn() -> autofusion.CompiledModel:
    return autofusion.compile("zoo:tiny_cnn", threads=1)


def test_tiny_cnn_matches_onnxruntime(tiny_cnn: autofusion.CompiledModel) -> None:
    feeds = sample_inputs(get_model("tiny_cnn"), seed=1)
    assert_matches(tiny_cnn.run(feeds), ort_ref("tiny_cnn", feeds))


@pytest.mark.parametrize("name", ["squeezenet", "tiny_bert"])
def test_kernels_after_counts_the_kernel_calls(name: str) -> None:
    """``kernels_after`` is the number of kernel calls the C prints: SqueezeNet's in-place
    concats and flatten and BERT's reshapes and q / k / v slices are views, no kernel (the
    count used to include them: 39 for SqueezeNet-1.1's 30 calls, 215 for BERT-base's 164)."""
    import re

    m = autofusion.compile(get_model(name), threads=1)
    try:
        source = (m.directory / "model.c").read_text()
        calls = re.findall(r"AF_PROF_CALL\(\d+, (\w+)\(", source)
        assert m.report["kernels_after"] == len(calls)
    finally:
        m.close()


def test_profile_times_every_kernel_call(tiny_cnn: autofusion.CompiledModel) -> None:
    import re

    feeds = sample_inputs(get_model("tiny_cnn"), seed=1)
    prof = tiny_cnn.profile(feeds, runs=4)
    source = (tiny_cnn.directory / "model.c").read_text()
    calls = re.findall(r"AF_PROF_CALL\(\d+, (\w+)\(", source)
    assert sorted(k.kernel for k in prof) == sorted(calls)  # one slot per call site
    # the report's kernel count is the call sites (views print none)
    assert len(calls) == tiny_cnn.report["kernels_after"]
    assert all(k.calls == 4 and k.seconds > 0 for k in prof)
    assert [k.seconds for k in prof] == sorted((k.seconds for k in prof), reverse=True)
    conv = next(k for k in prof if k.pattern.startswith("conv"))
    assert conv.origins  # the ONNX nodes it computes
    assert all(o in {n.name for n in get_model("tiny_cnn").graph.node} for o in conv.origins)
    # every call site carries its compile-time FLOPs and bytes, hence achieved rates
    assert all(k.flops is not None and k.bytes_moved for k in prof)
    assert conv.flops is not None
    assert conv.bytes_moved is not None
    assert conv.gflops_per_s == pytest.approx(conv.flops * 4 / conv.seconds / 1e9)
    assert conv.gb_per_s == pytest.approx(conv.bytes_moved * 4 / conv.seconds / 1e9)
    assert conv.flops_per_byte == pytest.approx(conv.flops / conv.bytes_moved)
    assert conv.flops_per_byte > 1  # a convolution reuses each byte it reads
    # timing is off again afterwards: plain runs leave the counters alone
    before = {k.kernel: (k.calls, k.seconds) for k in tiny_cnn._lib.profile()}
    tiny_cnn.run(feeds)
    assert {k.kernel: (k.calls, k.seconds) for k in tiny_cnn._lib.profile()} == before
    with pytest.raises(AutofusionError, match="runs must be >= 1"):
        tiny_cnn.profile(feeds, runs=0)


@pytest.mark.skipif(sys.platform != "linux", reason="the thread clock is Linux's")
def test_profile_by_the_calling_threads_cpu_time(tiny_cnn: autofusion.CompiledModel) -> None:
    """clock="thread" times each kernel by the on-CPU time of the thread that runs the model
    (fusion_efficiency.py --clock threads): the kernels' times are disjoint pieces of that
    thread's CPU time, so they sum to at most what the thread spent in the call."""
    import time

    feeds = sample_inputs(get_model("tiny_cnn"), seed=1)
    t0 = time.thread_time()
    prof = tiny_cnn.profile(feeds, runs=20, clock="thread")
    spent = time.thread_time() - t0
    assert all(k.calls == 20 and k.seconds > 0 for k in prof)
    assert 0 < sum(k.seconds for k in prof) <= spent
    with pytest.raises(AutofusionError, match="clock must be one of wall, thread"):
        tiny_cnn.profile(feeds, runs=1, clock="cpu")


def test_report_fields(tiny_cnn: autofusion.CompiledModel) -> None:
    rep = tiny_cnn.report
    for key in ("kernels_before", "kernels_after", "groups", "refusals", "arena_bytes",
                "naive_bytes", "lower_bound_bytes", "compile_seconds"):  # fmt: skip
        assert key in rep, key
    assert rep["kernels_after"] < rep["kernels_before"]
    assert rep["groups"]
    assert all("pattern" in g and g["origins"] for g in rep["groups"])
    assert 0 < rep["lower_bound_bytes"] <= rep["arena_bytes"] <= rep["naive_bytes"]
    assert rep["compile_seconds"] > 0
    for name in ("model.c", "model.h", "weights.bin", "Makefile", "libmodel.so"):
        assert (tiny_cnn.directory / name).is_file()


def test_second_compile_uses_the_cache(tiny_cnn: autofusion.CompiledModel) -> None:
    again = autofusion.compile("zoo:tiny_cnn", threads=1)
    assert again.directory == tiny_cnn.directory
    assert again.report.get("cached") is True
    feeds = sample_inputs(get_model("tiny_cnn"), seed=2)
    a, b = tiny_cnn.run(feeds), again.run(feeds)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])  # deterministic


def test_no_fusion_same_numbers_more_kernels(tiny_cnn: autofusion.CompiledModel) -> None:
    plain = autofusion.compile("zoo:tiny_cnn", fusion=False, threads=2)
    assert plain.directory != tiny_cnn.directory
    assert plain.report["kernels_after"] > tiny_cnn.report["kernels_after"]
    assert plain.report["groups"] == []
    feeds = sample_inputs(get_model("tiny_cnn"), seed=3)
    assert_matches(plain.run(feeds), ort_ref("tiny_cnn", feeds))


def test_transformer_with_int64_inputs() -> None:
    m = autofusion.compile("zoo:tiny_bert", threads=2)
    feeds = sample_inputs(get_model("tiny_bert"), seed=0)
    assert any(v.dtype == np.int64 for v in feeds.values())
    assert_matches(m.run(feeds), ort_ref("tiny_bert", feeds))


def test_model_proto_and_path(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(get_model("tiny_cnn"), path)
    by_path = autofusion.compile(path, threads=1)
    by_proto = autofusion.compile(get_model("tiny_cnn"), threads=1)
    assert by_path.directory == by_proto.directory  # same bytes, same options, same key


def test_set_memory_limit_reaches_the_pipeline() -> None:
    autofusion.set_memory_limit(512)
    try:
        m = autofusion.compile("zoo:tiny_cnn", threads=1)
    finally:
        autofusion.set_memory_limit(None)
    assert "tile-fusion" in m.report["pipeline"]
    feeds = sample_inputs(get_model("tiny_cnn"), seed=4)
    assert_matches(m.run(feeds), ort_ref("tiny_cnn", feeds))


def test_run_rejects_bad_feeds(tiny_cnn: autofusion.CompiledModel) -> None:
    (name,) = tiny_cnn.input_names
    x = sample_inputs(get_model("tiny_cnn"))[name]
    with pytest.raises(AutofusionError, match=f"input '{name}': expected dtype float32"):
        tiny_cnn.run({name: x.astype(np.float64)})
    with pytest.raises(AutofusionError, match="missing input"):
        tiny_cnn.run({})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": "no/such/file.onnx"}, "no such file"),
        ({"model": "zoo:nope"}, "unknown zoo model 'nope'"),
        ({"model": 42}, "model must be a path"),
        ({"target": "gpu"}, "unknown target 'gpu'"),
        ({"target": "ascendc"}, "only target 'c' can be loaded"),
        ({"threads": 0}, "threads: expected a positive integer"),
        ({"memory_limit_mb": -1}, "memory_limit_mb: expected a positive number"),
        ({"config": "no/such/config.json"}, "no such config file"),
    ],
)
def test_compile_errors(kwargs: dict[str, object], message: str) -> None:
    args = {"model": "zoo:tiny_cnn", **kwargs}
    with pytest.raises(AutofusionError, match=message):
        autofusion.compile(**args)  # type: ignore[arg-type]


def test_set_memory_limit_validates() -> None:
    with pytest.raises(AutofusionError, match="positive number of MB"):
        autofusion.set_memory_limit(0)
    with pytest.raises(AutofusionError, match="positive number of MB"):
        autofusion.set_memory_limit("1GB")  # type: ignore[arg-type]


def test_thread_counts_get_their_own_build(tiny_cnn: autofusion.CompiledModel) -> None:
    two = autofusion.compile("zoo:tiny_cnn", threads=2)
    assert two.directory != tiny_cnn.directory  # a .so's thread count is global to it
    feeds = sample_inputs(get_model("tiny_cnn"), seed=6)
    a, b = tiny_cnn.run(feeds), two.run(feeds)
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-5, atol=1e-6)


def _matmul_model(seed: int = 0) -> onnx.ModelProto:
    """y = x @ w with a 128 KB weight: big enough for the loader to cut it out of the file."""
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(seed).standard_normal((256, 128)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        "mm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 128])],
        [numpy_helper.from_array(w, "w")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_file_bytes_and_proto_share_one_build(tmp_path: Path) -> None:
    from autofusion.api import open_model

    model = _matmul_model()
    path = tmp_path / "mm.onnx"
    onnx.save(model, path)
    src = open_model(path)
    assert any(r is not None for r in src.loaded.raws)  # the weight was cut out, not parsed
    by_path = autofusion.compile(path, threads=1)
    by_proto = autofusion.compile(model, threads=1)
    by_bytes = autofusion.compile(path.read_bytes(), threads=1)
    assert by_proto.report.get("cached") is True
    assert by_path.directory == by_proto.directory == by_bytes.directory
    x = np.random.default_rng(5).standard_normal((2, 256)).astype(np.float32)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert_matches(by_path.run({"x": x}), {"y": sess.run(["y"], {"x": x})[0]})


def test_digest_covers_cut_weights(tmp_path: Path) -> None:
    from autofusion.api import model_digest, open_model

    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    onnx.save(_matmul_model(0), a)
    onnx.save(_matmul_model(1), b)  # same graph, other weights
    da, db = (open_model(p).loaded for p in (a, b))
    assert model_digest(da.model, da.raws) != model_digest(db.model, db.raws)
    assert model_digest(da.model, da.raws) == model_digest(_matmul_model(0))


def test_truncated_file_gets_one_message_from_every_entry_point(tmp_path: Path) -> None:
    data = get_model("tiny_cnn").SerializeToString()
    path = tmp_path / "trunc.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(AutofusionError) as info:
        autofusion.compile(path)
    message = str(info.value)
    assert message.startswith(f"{path}: not a valid ONNX model")
    assert "\n" not in message
    env = {k: v for k, v in os.environ.items() if k != "AUTOFUSION_DEBUG"}
    for tool, extra in (("opt", []), ("compile", ["-o", str(tmp_path / "out")])):
        proc = subprocess.run([sys.executable, "-m", f"autofusion.tools.{tool}", str(path), *extra],
                              capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.splitlines() == [f"autofusion-{tool}: error: {message}"]
        assert proc.stdout == ""
    assert not (tmp_path / "out").exists()
    with pytest.raises(AutofusionError) as info:
        autofusion.compile(path.read_bytes())
    assert str(info.value) == message.replace(str(path), "<bytes>", 1)
