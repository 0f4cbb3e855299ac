"""Helpers for tests of the C backend: lower, print, build and run a module; compare.

``build_and_run(module, feeds, work_dir)`` lowers a tensor-level module with the c backend's
lowering passes (:func:`autofusion.pipeline.lower`), emits model.c/model.h/weights.bin, builds
``libmodel.so`` with the runtime's build (``-Wall -Wextra -Werror``), runs it once through the
ctypes loader and returns outputs by ONNX name. ``close`` / ``assert_close`` / ``compare`` are
re-exported from :mod:`autofusion.testing`, the project's one correctness bar.

Builds link the runtime compiled once per set of flags (the runtime cache of
:mod:`autofusion.runtime.prebuilt`, as ``autofusion-compile`` does) instead of compiling the
kernels a model calls into its ``model.c``: a test model with a convolution otherwise spends
most of its build compiling the conv kernels, and hundreds of tests build one. The kernels are
the same functions with the same flags, called instead of inlined. ``inline_runtime=True`` or
``AUTOFUSION_TEST_INLINE_RUNTIME=1`` (every test) compiles the kernels into ``model.c``, as the
folder's Makefile does, for the warnings only an inlined kernel shows.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import cast

import numpy as np
import onnx
from xdsl.dialects.builtin import ModuleOp

from autofusion.lowering.c import emit_model
from autofusion.testing import assert_close, close, compare

__all__ = [
    "assert_close",
    "build",
    "build_and_run",
    "close",
    "compare",
    "compile_onnx",
    "emit_lowered",
    "onnxruntime_outputs",
    "sanitized_model_c",
]


def emit_lowered(module: ModuleOp, work_dir: Path) -> None:
    """Lower ``module`` with the c backend's lowering passes unless it is lowered already
    (IR written at the loop level), then write model.c/model.h/weights.bin."""
    from autofusion.lowering.c.emit import first_unlowered
    from autofusion.pipeline import lower

    if first_unlowered(module) is not None:
        lower(module, "c")
    emit_model(module, work_dir)


def _prebuilt_cflags(extra_cflags: tuple[str, ...]) -> tuple[str, ...]:
    """``extra_cflags`` plus the flags linking the runtime prebuilt with them, from the
    runtime cache (:func:`autofusion.runtime.prebuilt.cached_runtime`: compiled once per set
    of flags, shared by a test session's workers); just ``extra_cflags`` (kernels compiled
    into model.c) when that cache is off."""
    from autofusion.runtime.build import BuildOptions
    from autofusion.runtime.prebuilt import cached_runtime

    runtime = cached_runtime(BuildOptions(extra_cflags=extra_cflags))
    return extra_cflags if runtime is None else runtime.build_options().extra_cflags


def build(
    module: ModuleOp,
    work_dir: Path,
    extra_cflags: tuple[str, ...] = (),
    inline_runtime: bool = False,
) -> Path:
    """Lower and print ``module`` into ``work_dir`` and build ``libmodel.so`` (``-Wall -Wextra
    -Werror``, ``extra_cflags`` last) against the process's prebuilt runtime, or with the
    kernels compiled into ``model.c`` if ``inline_runtime`` (see the module docstring)."""
    from autofusion.runtime.build import BuildOptions, build_shared

    emit_lowered(module, work_dir)
    prebuilt = not (inline_runtime or os.environ.get("AUTOFUSION_TEST_INLINE_RUNTIME", "") == "1")
    if prebuilt:
        extra_cflags = _prebuilt_cflags(extra_cflags)
    lib = build_shared(work_dir, BuildOptions(extra_cflags=extra_cflags))
    if prebuilt:
        assert_one_runtime_copy(lib)
    return lib


def assert_one_runtime_copy(lib: Path) -> None:
    """No ``afrt_*`` function is defined twice in ``lib``: a model.c built against the
    prebuilt runtime called only aliased functions and compiled no runtime code of its own
    (whose static state, e.g. the thread count, would be a second copy)."""
    import subprocess
    from collections import Counter

    out = subprocess.run(["nm", "--defined-only", str(lib)], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    names = Counter(
        parts[2] for parts in (line.split() for line in out.splitlines())
        if len(parts) == 3 and parts[1] in "tTbBdD" and parts[2].startswith("afrt_")
    )  # fmt: skip
    twice = sorted(n for n, k in names.items() if k > 1)
    assert not twice, f"{lib}: runtime code compiled into model.c as well: {twice}"


def build_and_run(
    module: ModuleOp,
    feeds: Mapping[str, np.ndarray],
    work_dir: Path,
    threads: int = 1,
    extra_cflags: tuple[str, ...] = (),
    inline_runtime: bool = False,
) -> dict[str, np.ndarray]:
    """Lower, print, build (:func:`build`) and run once."""
    from autofusion.runtime.loader import ModelLibrary

    lib = build(module, work_dir, extra_cflags, inline_runtime)
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
    # run() is typed for every ONNX value kind; the models compared here output tensors only.
    outputs = cast("list[np.ndarray]", sess.run(None, dict(feeds)))
    return dict(zip(names, outputs))


def compile_onnx(model: onnx.ModelProto, fusion: bool = True) -> ModuleOp:
    """Import and run the tensor-level pipeline (fusion and memory planning when asked)."""
    from autofusion.frontend import import_onnx

    module = import_onnx(model, progress=False)
    if fusion:
        from autofusion.pipeline import run_tensor_passes

        run_tensor_passes(module)
    return module


def sanitized_model_c(
    model: onnx.ModelProto,
    feeds: Mapping[str, np.ndarray],
    work_dir: Path,
    module: ModuleOp | None = None,
    threads: int = 2,
) -> str:
    """``model`` (or its tensor-level ``module``, default: :func:`compile_onnx` with fusion)
    emitted into ``work_dir``, built with ASan/UBSan as a standalone driver and run at
    ``threads`` threads: every output matches onnxruntime at the project's bar (a sanitizer
    report fails the run). Returns the emitted ``model.c``, for the caller to check that the
    kernels under test were called."""
    from autofusion.runtime.build import build_sanitizer_driver, run_driver

    ref = onnxruntime_outputs(model, feeds)
    emit_lowered(compile_onnx(model) if module is None else module, work_dir)
    exe = build_sanitizer_driver(work_dir)
    inputs = [feeds[i.name] for i in model.graph.input]
    outs = [(r.shape, r.dtype) for r in ref.values()]
    got = run_driver(exe, work_dir / "weights.bin", inputs, outs, work_dir / "io", threads=threads)
    for (name, r), g in zip(ref.items(), got, strict=True):
        assert_close(g, r, f"{name} under ASan/UBSan")
    return (work_dir / "model.c").read_text()
