"""Every zoo model, imported and interpreted, against onnxruntime on seeded inputs, within
rtol=1e-3, atol=1e-4*max(1, max|ref|); plus the interpreter on fused IR (fusion.kernel
regions produced by the real passes) of a small CNN and a small transformer."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from threadpoolctl import threadpool_limits

from autofusion import zoo
from autofusion.frontend import import_onnx
from autofusion.interpreter import run_module
from autofusion.testing import assert_close

SLOW = {"bert_large"}


@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread() -> Iterator[None]:
    # pytest -n 2 already keeps both cores busy; more BLAS threads only thrash.
    with threadpool_limits(1):
        yield


def ort_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def assert_matches(got: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> None:
    assert list(got) == list(ref)
    for name, r in ref.items():
        g = got[name]
        assert g.shape == r.shape, name
        assert g.dtype == r.dtype, name
        # A constant or non-finite reference would make the comparison prove nothing.
        assert np.isfinite(r).all(), f"{name}: degenerate reference"
        assert float(np.std(r)) > 0, f"{name}: degenerate reference"
        assert_close(g, r, name)


def _param(name: str):
    return pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name


@pytest.mark.parametrize("name", [_param(n) for n in zoo.list_models()])
def test_zoo_model_matches_onnxruntime(name: str) -> None:
    model = zoo.get_model(name)
    feeds = zoo.sample_inputs(model, seed=0)
    ref = ort_outputs(model, feeds)
    module = import_onnx(model, progress=False)
    got = run_module(module, feeds)
    del module
    assert_matches(got, ref)


def _fused(name: str, pipeline: list[str]):
    from xdsl.context import Context

    from autofusion.passes import get_all_passes

    module = import_onnx(zoo.get_model(name), progress=False)
    passes = get_all_passes()
    for p in pipeline:
        passes[p]()().apply(Context(), module)
    module.verify()
    return module


@pytest.mark.parametrize(
    ("name", "pipeline"),
    [
        ("tiny_cnn", ["fold-batchnorm", "fuse-conv-bn-relu", "fuse"]),
        ("tiny_bert", ["recognize-layernorm", "recognize-gelu", "recognize-attention", "fuse"]),
    ],
)
def test_interpreter_on_fused_ir(name: str, pipeline: list[str]) -> None:
    from autofusion.dialects.fusion import KernelOp

    module = _fused(name, pipeline)
    kernels = [op for op in module.walk() if isinstance(op, KernelOp)]
    assert kernels, "the pipeline formed no fusion.kernel: nothing to test"
    model = zoo.get_model(name)
    feeds = zoo.sample_inputs(model, seed=1)
    assert_matches(run_module(module, feeds), ort_outputs(model, feeds))


def test_interpreter_on_tiled_ir() -> None:
    """After plan-buffers and tile-fusion at half the arena (slices + concats of tiles)."""
    from xdsl.context import Context
    from xdsl.dialects.builtin import IntegerAttr

    from autofusion.dialects import nn
    from autofusion.passes import get_all_passes

    module = _fused("tiny_cnn", ["fold-batchnorm", "fuse-conv-bn-relu", "fuse", "plan-buffers"])
    arena = module.ops.first.attributes["memory.arena_bytes"]
    assert isinstance(arena, IntegerAttr)
    limit_mb = int(arena.value.data) / 2 / 2**20
    get_all_passes()["tile-fusion"]()(memory_limit_mb=limit_mb).apply(Context(), module)
    module.verify()
    assert any(isinstance(op, nn.SliceOp) for op in module.walk()), "nothing was tiled"
    model = zoo.get_model("tiny_cnn")
    feeds = zoo.sample_inputs(model, seed=2)
    assert_matches(run_module(module, feeds), ort_outputs(model, feeds))
