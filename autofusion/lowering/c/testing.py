"""Helpers for tests of the C backend: lower, print, build and run a module; compare.

``build_and_run(module, feeds, work_dir)`` emits model.c/model.h/weights.bin, builds
``libmodel.so`` with the runtime's build (``-Wall -Wextra -Werror``), runs it once through the
ctypes loader and returns outputs by ONNX name. ``close(got, ref)`` is the project's
correctness bar: ``allclose(rtol=1e-3, atol=1e-4*max(1, max|ref|))``, NaN where NaN.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx
from xdsl.dialects.builtin import ModuleOp

from autofusion.lowering.c import emit_model


def build(module: ModuleOp, work_dir: Path) -> Path:
    from autofusion.runtime.build import build_shared

    emit_model(module, work_dir)
    return build_shared(work_dir)


def build_and_run(
    module: ModuleOp, feeds: Mapping[str, np.ndarray], work_dir: Path, threads: int = 1
) -> dict[str, np.ndarray]:
    from autofusion.runtime.loader import ModelLibrary

    lib = build(module, work_dir)
    ml = ModelLibrary(lib, work_dir / "weights.bin", threads)
    try:
        return ml.run(feeds)
    finally:
        ml.close()


def onnxruntime_outputs(
    model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, dict(feeds))))


def assert_close(got: np.ndarray, ref: np.ndarray, what: str) -> None:
    got = np.asarray(got)
    assert got.shape == ref.shape, f"{what}: shape {got.shape}, expected {ref.shape}"
    assert got.dtype == ref.dtype, f"{what}: dtype {got.dtype}, expected {ref.dtype}"
    if ref.dtype.kind == "f":
        finite = np.abs(ref[np.isfinite(ref)])
        peak = float(finite.max()) if finite.size else 0.0
        np.testing.assert_allclose(
            got.astype(np.float64),
            ref.astype(np.float64),
            rtol=1e-3,
            atol=1e-4 * max(1.0, peak),
            equal_nan=True,
            err_msg=what,
        )
    else:
        np.testing.assert_array_equal(got, ref, err_msg=what)


def compile_onnx(model: onnx.ModelProto, fusion: bool = True) -> ModuleOp:
    """Import and run the tensor-level pipeline (fusion and memory planning when asked)."""
    from autofusion.frontend import import_onnx

    module = import_onnx(model, progress=False)
    if fusion:
        from autofusion.pipeline import PipelineOptions, make_context, tensor_passes

        ctx = make_context()
        for p in tensor_passes(PipelineOptions()):
            p.apply(ctx, module)
    return module
