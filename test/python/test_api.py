"""autofusion.compile / CompiledModel.run / report / set_memory_limit, end to end through the
C target, against onnxruntime; plus the API's error paths."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import autofusion
from autofusion.errors import AutofusionError
from autofusion.zoo import get_model, sample_inputs


@pytest.fixture(scope="module", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    d = tmp_path_factory.mktemp("afcache")
    old = os.environ.get("AUTOFUSION_CACHE_DIR")
    os.environ["AUTOFUSION_CACHE_DIR"] = str(d)
    yield d
    if old is None:
        del os.environ["AUTOFUSION_CACHE_DIR"]
    else:
        os.environ["AUTOFUSION_CACHE_DIR"] = old


def ort_ref(name: str, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    model = get_model(name)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def assert_matches(ours: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> None:
    assert set(ours) == set(ref)
    for k, r in ref.items():
        atol = 1e-4 * max(1.0, float(np.max(np.abs(r))))
        np.testing.assert_allclose(ours[k], r, rtol=1e-3, atol=atol, err_msg=k)


@pytest.fixture(scope="module")
def tiny_cnn() -> autofusion.CompiledModel:
    return autofusion.compile("zoo:tiny_cnn", threads=1)


def test_tiny_cnn_matches_onnxruntime(tiny_cnn: autofusion.CompiledModel) -> None:
    feeds = sample_inputs(get_model("tiny_cnn"), seed=1)
    assert_matches(tiny_cnn.run(feeds), ort_ref("tiny_cnn", feeds))


def test_report_fields(tiny_cnn: autofusion.CompiledModel) -> None:
    rep = tiny_cnn.report
    for key in ("kernels_before", "kernels_after", "groups", "refusals", "arena_bytes",
                "naive_bytes", "lower_bound_bytes", "compile_seconds"):  # fmt: skip
        assert key in rep, key
    assert rep["kernels_after"] < rep["kernels_before"]
    assert rep["groups"] and all("pattern" in g and g["origins"] for g in rep["groups"])
    assert 0 < rep["lower_bound_bytes"] <= rep["arena_bytes"] <= rep["naive_bytes"]
    assert rep["compile_seconds"] > 0
    for name in ("model.c", "model.h", "weights.bin", "Makefile", "libmodel.so"):
        assert (tiny_cnn.directory / name).is_file()


def test_second_compile_uses_the_cache(tiny_cnn: autofusion.CompiledModel) -> None:
    again = autofusion.compile("zoo:tiny_cnn", threads=1)
    assert again.directory == tiny_cnn.directory and again.report.get("cached") is True
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
    import onnx

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
