"""Run a model's generated Ascend C kernels on the CPU functional model.

``run_ascendc_cpu(module, feeds)`` takes a module lowered by ``lower-fusion-to-ascendc``,
writes the project (``emit_project``), compiles kernels + tiling + host code + the AscendCL CPU
stub with g++ into a shared library (cached by source hash), and walks ``@main``: each
``ascendc.launch`` calls the generated ``af_run_<kernel>`` entry point (AscendCL allocation of
tiling and workspace, the launch, stream synchronisation, all on the CPU model); every other op
(a fusion kernel with no Ascend C lowering, an unfused nn op) runs on the reference
interpreter. The numbers check the generated code's logic; timings mean nothing for an NPU.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from autofusion.dialects import ascendc as ac
from autofusion.dialects import nn
from autofusion.dialects.base import shape_of
from autofusion.dialects.dtypes import numpy_from_dense, to_numpy_dtype
from autofusion.errors import AutofusionError
from autofusion.frontend.batch import module_batch
from autofusion.lowering.ascendc.project import (
    _io_names,
    check_lowered,
    emit_project,
    kernels_of,
    main_func,
)

CXXFLAGS = ["-std=c++17", "-O1", "-fPIC", "-DAUTOFUSION_CPU_MODEL", "-Wall", "-Wextra", "-Werror"]
JOBS = 2  # parallel compiler processes (the machine has 2 cores)


def cache_dir() -> Path:
    """CPU-model builds live in the compile cache (``$AUTOFUSION_CACHE_DIR``), one folder."""
    from autofusion.runtime.cache import cache_root

    return cache_root() / "ascendc-cpu"


def sources(project: Path) -> list[Path]:
    return sorted(
        [
            *(project / "kernels").glob("*.asc"),
            *(project / "kernels").glob("*_tiling.cpp"),
            project / "host" / "model.cpp",
            project / "cpu_model" / "acl_cpu_stub.cpp",
        ]
    )


def build_cpu_library(project: Path) -> Path:
    """Compile ``project`` against the CPU model into ``libafascend_cpu.so`` (cached)."""
    h = hashlib.sha256()
    for f in [*sources(project), project / "cpu_model" / "ascendc_cpu_model.h"]:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    h.update(" ".join(CXXFLAGS).encode())
    lib = cache_dir() / h.hexdigest()[:24] / "libafascend_cpu.so"
    if lib.exists():
        return lib
    lib.parent.mkdir(parents=True, exist_ok=True)
    cxx = os.environ.get("CXX") or shutil.which("g++") or "c++"
    inc = [f"-I{project / 'cpu_model'}", f"-I{project / 'kernels'}"]

    # Unity builds: the sources split into JOBS translation units, compiled in parallel,
    # so the CPU model's headers are parsed once per unit instead of once per kernel. Each
    # build works in a private directory (concurrent test workers may build the same hash);
    # only the finished library is moved into place, atomically.
    srcs = sources(project)
    chunks = [srcs[i::JOBS] for i in range(JOBS) if srcs[i::JOBS]]
    work = Path(tempfile.mkdtemp(prefix="build-", dir=lib.parent))

    def compile_one(i: int) -> tuple[Path, subprocess.CompletedProcess[str]]:
        unit = work / f"unit{i}.cpp"
        unit.write_text("".join(f'#include "{f.resolve()}"\n' for f in chunks[i]))
        obj = unit.with_suffix(".o")
        cmd = [cxx, *CXXFLAGS, *inc, "-c", str(unit), "-o", str(obj)]
        return obj, subprocess.run(cmd, capture_output=True, text=True)

    with ThreadPoolExecutor(max_workers=JOBS) as pool:
        results = list(pool.map(compile_one, range(len(chunks))))
    for _, proc in results:
        if proc.returncode != 0:
            raise AutofusionError(
                f"ascendc: building the CPU-model library failed:\n{proc.stderr[-4000:]}"
            )
    tmp = work / lib.name
    link = subprocess.run(
        [cxx, "-shared", *[str(o) for o, _ in results], "-o", str(tmp)],
        capture_output=True,
        text=True,
    )
    if link.returncode != 0:
        raise AutofusionError(
            f"ascendc: linking the CPU-model library failed:\n{link.stderr[-4000:]}"
        )
    os.replace(tmp, lib)
    shutil.rmtree(work, ignore_errors=True)
    return lib


class CpuModelRunner:
    """A built project loaded with ctypes; ``run(feeds)`` evaluates ``@main``."""

    def __init__(self, module: ModuleOp, workdir: str | Path | None = None):
        check_lowered(module)
        self.module = module
        self._tmp = None
        if workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="af-ascendc-")
            workdir = self._tmp.name
        self.project = Path(workdir)
        emit_project(self.module, self.project)
        self.lib = ctypes.CDLL(str(build_cpu_library(self.project)))
        self.fn = main_func(self.module)
        self.kernels = {k.sym_name.data: k for k in kernels_of(self.module)}
        self.check_tiling()

    def host_tiling(
        self, kernel: ac.KernelOp, core_num: int, sizes: Mapping[str, int] | None = None
    ) -> tuple[int, dict[str, int]]:
        """Call the compiled host tiling function of ``kernel``: its return value (blockDim,
        0 on failure) and the struct's fields. ``sizes``: its run-time sizes (default: the
        upper bounds)."""
        inputs = kernel.tiling.input_values()
        runtime = kernel.tiling.runtime_names()
        args = [int((sizes or {}).get(r, inputs[r])) for r in runtime]
        buf = (ctypes.c_uint32 * 4096)()
        fn = getattr(self.lib, f"{kernel.sym_name.data}_tiling")
        fn.argtypes = [ctypes.c_uint32, *[ctypes.c_uint32] * len(args), ctypes.c_void_p]
        fn.restype = ctypes.c_uint32
        dim = int(fn(core_num, *args, ctypes.cast(buf, ctypes.c_void_p)))
        return dim, {f: int(buf[i]) for i, f in enumerate(kernel.tiling_values())}

    def check_tiling(self) -> None:
        """The printed host tiling functions must reproduce the tiling values in the IR
        (both come from one definition in ``tiling.py``; this checks the printing)."""
        from autofusion.lowering.ascendc.kernel_printer import tiling_config

        for k in kernels_of(self.module):
            name = k.sym_name.data
            dim, got = self.host_tiling(k, tiling_config(k)["cores"])
            if dim == 0:
                raise AutofusionError(f"ascendc: host tiling of {name} failed")
            want = k.tiling_values()
            bad = {f: (got[f], want[f]) for f in want if got[f] != want[f]}
            if bad:
                raise AutofusionError(f"ascendc: host tiling of {name} differs from the IR: {bad}")

    def _sizes(
        self, op: ac.LaunchOp, args: list[np.ndarray]
    ) -> tuple[dict[str, int], list[tuple[int, ...]]]:
        """The run-time sizes of a launch on ``args`` and its result shapes, or an
        ``AutofusionError`` naming the kernel, the input and what is wrong."""
        name = op.kernel.root_reference.data
        kernel = self.kernels[name]
        static_in = [tuple(shape_of(v)) for v in op.inputs]
        static_out = [tuple(shape_of(r)) for r in op.outputs]
        actual = [tuple(a.shape) for a in args]
        runtime = kernel.tiling.runtime_names()
        if not runtime:
            for i, (a, s) in enumerate(zip(actual, static_in)):
                if a != s:
                    why = (
                        kernel.static_reason.data
                        if kernel.static_reason is not None
                        else "it was lowered without runtime_sizes"
                    )
                    raise AutofusionError(
                        f"ascendc: kernel {name} ({kernel.pattern.data}) input {i} has shape "
                        f"{list(a)} but the kernel has compile-time sizes for {list(s)}: {why}"
                    )
            return {}, static_out
        inputs = kernel.tiling.input_values()
        lead, size = inputs["lead"], runtime[0]
        gts = [o for o in kernel.body.block.ops if isinstance(o, ac.GlobalTensorOp)]
        sized = {i for i, g in enumerate(gts[: len(static_in)]) if g.runtime_length is not None}
        leading: tuple[int, ...] | None = None
        for i, (a, s) in enumerate(zip(actual, static_in)):
            if i not in sized:
                if a != s:
                    raise AutofusionError(
                        f"ascendc: kernel {name} input {i} has shape {list(a)}, not "
                        f"{list(s)}: it has a compile-time size (only the leading {lead} "
                        "dims of the sized inputs are run-time)"
                    )
                continue
            if len(a) != len(s) or a[lead:] != s[lead:] or a[:lead] != (leading or a[:lead]):
                raise AutofusionError(
                    f"ascendc: kernel {name} input {i} has shape {list(a)}; the kernel takes "
                    f"[<{lead} leading dims>, {', '.join(map(str, s[lead:]))}] with the same "
                    "leading dims for every sized input"
                )
            leading = a[:lead]
        assert leading is not None  # a run-time kernel has a sized input (the lowering's rule)
        n = int(np.prod(leading, dtype=np.int64))
        hi = inputs[f"{size}Max"]
        if not 1 <= n <= hi:
            raise AutofusionError(
                f"ascendc: kernel {name}: run-time size {size} = {n} is outside its range 1..{hi}"
            )
        return {size: n}, [(*leading, *s[lead:]) for s in static_out]

    def _launch(self, op: ac.LaunchOp, args: list[np.ndarray]) -> list[np.ndarray]:
        sizes, shapes = self._sizes(op, args)
        outs = [np.zeros(s, dtype=np.float32) for s in shapes]
        bufs = [np.ascontiguousarray(a, dtype=np.float32) for a in args] + outs
        ptrs = (ctypes.c_void_p * len(bufs))(*[b.ctypes.data for b in bufs])
        name = op.kernel.root_reference.data
        entry = getattr(self.lib, f"af_run_{name}")
        entry.argtypes = [ctypes.POINTER(ctypes.c_void_p), *[ctypes.c_uint32] * len(sizes)]
        entry.restype = ctypes.c_int
        if entry(ptrs, *sizes.values()) != 0:
            raise AutofusionError(f"ascendc: kernel {name} failed on the CPU model")
        return outs

    def run(self, feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
        from autofusion.interpreter import IMPLS

        names = _io_names(self.fn, "arg")
        env: dict[SSAValue, np.ndarray] = {}
        #: (kernel, input arrays, output arrays) of every launch of the last run, in order
        self.trace: list[tuple[str, list[np.ndarray], list[np.ndarray]]] = []
        for n, a in zip(names, self.fn.args):
            if n not in feeds:
                raise AutofusionError(f"ascendc: missing input {n!r}")
            env[a] = np.asarray(feeds[n], dtype=to_numpy_dtype(a.type.element_type))  # type: ignore[attr-defined]
        if self.lib.af_init(0) != 0:
            raise AutofusionError("ascendc: af_init failed on the CPU model")
        try:
            for op in self.fn.body.block.ops:
                args = [env[v] for v in op.operands]
                if isinstance(op, func.ReturnOp):
                    outs = {n: env[v] for n, v in zip(_io_names(self.fn, "res"), op.arguments)}
                    return outs
                if isinstance(op, ac.LaunchOp):
                    res = self._launch(op, args)
                    self.trace.append((op.kernel.root_reference.data, args, res))
                elif isinstance(op, nn.ConstantOp):
                    res = [np.asarray(numpy_from_dense(op.value))]  # type: ignore[arg-type]
                else:
                    impl = IMPLS.get(type(op))
                    if impl is None:
                        raise AutofusionError(f"ascendc: no host fallback for {op.name}")
                    out = impl(op, args)
                    res = [out] if isinstance(out, np.ndarray | np.generic) else list(out)
                for r, v in zip(op.results, res):
                    dtype = to_numpy_dtype(r.type.element_type)  # type: ignore[attr-defined]
                    v = np.asarray(v, dtype=dtype)
                    # a launch at run-time sizes returns its own shape; the rest is static
                    env[r] = v if isinstance(op, ac.LaunchOp) else v.reshape(shape_of(r))
        finally:
            if self.lib.af_finalize() != 0:
                raise AutofusionError("ascendc: af_finalize failed on the CPU model")
        raise AutofusionError("ascendc: @main has no func.return")

    def run_host_program(self, feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Run the generated ``af_run_model_batch`` (the whole AscendCL host program: weights
        and inputs copied to the device, every kernel launched, outputs copied back). Only
        for models whose every op is covered; raises otherwise. A module compiled for a
        run-time batch (``c.batch``) takes the batch from dim 0 of its batched inputs."""
        names = _io_names(self.fn, "arg")
        ins = [np.ascontiguousarray(feeds[n], dtype=np.float32) for n in names]
        ret = self.fn.body.block.last_op
        assert isinstance(ret, func.ReturnOp)
        plan = module_batch(self.module)
        batch = 1
        if plan is not None:
            sizes = {a.shape[0] for n, a in zip(names, ins) if n in plan.inputs and a.ndim}
            if len(sizes) != 1:
                raise AutofusionError(
                    f"ascendc: the batched inputs {', '.join(plan.inputs)} disagree on the "
                    f"batch (dim 0: {sorted(sizes)})"
                )
            batch = sizes.pop()
        for n, a, v in zip(names, ins, self.fn.args):
            want = list(shape_of(v))
            if plan is not None and n in plan.inputs:
                want[0] = batch
            if list(a.shape) != want:
                raise AutofusionError(
                    f"ascendc: input '{n}' has shape {list(a.shape)}, expected {want}"
                )
        outs = []
        for n, v in zip(_io_names(self.fn, "res"), ret.arguments):
            shape = list(shape_of(v))
            if plan is not None and n in plan.outputs:
                shape[0] = batch
            outs.append(np.zeros(shape, dtype=np.float32))
        weights = np.frombuffer(
            (self.project / "weights.bin").read_bytes() or b"\0", dtype=np.uint8
        )
        in_ptrs = (ctypes.c_void_p * max(1, len(ins)))(*[a.ctypes.data for a in ins])
        out_ptrs = (ctypes.c_void_p * max(1, len(outs)))(*[a.ctypes.data for a in outs])
        if self.lib.af_init(0) != 0:
            raise AutofusionError("ascendc: af_init failed on the CPU model")
        run = self.lib.af_run_model_batch
        run.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p]
        rc = run(ctypes.c_void_p(weights.ctypes.data), batch, in_ptrs, out_ptrs)
        if self.lib.af_finalize() != 0:
            raise AutofusionError("ascendc: af_finalize failed on the CPU model")
        if rc != 0:
            raise AutofusionError("ascendc: af_run_model_batch failed (see stderr)")
        return dict(zip(_io_names(self.fn, "res"), outs))


def run_ascendc_cpu(module: ModuleOp, feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Outputs (by ONNX name) of ``module`` on ``feeds`` with the Ascend C kernels run on the
    CPU functional model and the rest on the reference interpreter."""
    return CpuModelRunner(module).run(feeds)
