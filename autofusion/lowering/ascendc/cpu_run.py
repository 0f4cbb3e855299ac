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
        self.check_tiling()

    def check_tiling(self) -> None:
        """The printed host tiling functions must reproduce the tiling values in the IR
        (both come from ``tiling.py``'s formulas; this catches the two drifting apart)."""
        from autofusion.lowering.ascendc.kernel_printer import tiling_config, tiling_fields

        for k in kernels_of(self.module):
            name = k.sym_name.data
            fields = tiling_fields(k)
            buf = (ctypes.c_uint32 * 4096)()
            fn = getattr(self.lib, f"{name}_tiling")
            fn.argtypes = [ctypes.c_uint32, ctypes.c_void_p]
            fn.restype = ctypes.c_uint32
            if fn(tiling_config(k)["cores"], ctypes.cast(buf, ctypes.c_void_p)) == 0:
                raise AutofusionError(f"ascendc: host tiling of {name} failed")
            want = k.tiling_values()
            got = {f: int(buf[i]) for i, f in enumerate(fields)}
            bad = {f: (got[f], want[f]) for f in fields if f in want and got[f] != want[f]}
            if bad:
                raise AutofusionError(f"ascendc: host tiling of {name} differs from the IR: {bad}")

    def _launch(self, op: ac.LaunchOp, args: list[np.ndarray]) -> list[np.ndarray]:
        outs = [np.zeros(shape_of(r), dtype=np.float32) for r in op.outputs]
        bufs = [np.ascontiguousarray(a, dtype=np.float32) for a in args] + outs
        ptrs = (ctypes.c_void_p * len(bufs))(*[b.ctypes.data for b in bufs])
        name = op.kernel.root_reference.data
        entry = getattr(self.lib, f"af_run_{name}")
        entry.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        entry.restype = ctypes.c_int
        if entry(ptrs) != 0:
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
                    env[r] = np.asarray(v, dtype=dtype).reshape(shape_of(r))
        finally:
            if self.lib.af_finalize() != 0:
                raise AutofusionError("ascendc: af_finalize failed on the CPU model")
        raise AutofusionError("ascendc: @main has no func.return")

    def run_host_program(self, feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Run the generated ``af_run_model`` (the whole AscendCL host program: weights and
        inputs copied to the device, every kernel launched, outputs copied back). Only for
        models whose every op is covered; raises otherwise."""
        names = _io_names(self.fn, "arg")
        ins = [np.ascontiguousarray(feeds[n], dtype=np.float32) for n in names]
        ret = self.fn.body.block.last_op
        assert isinstance(ret, func.ReturnOp)
        outs = [np.zeros(shape_of(v), dtype=np.float32) for v in ret.arguments]
        weights = np.frombuffer(
            (self.project / "weights.bin").read_bytes() or b"\0", dtype=np.uint8
        )
        in_ptrs = (ctypes.c_void_p * max(1, len(ins)))(*[a.ctypes.data for a in ins])
        out_ptrs = (ctypes.c_void_p * max(1, len(outs)))(*[a.ctypes.data for a in outs])
        if self.lib.af_init(0) != 0:
            raise AutofusionError("ascendc: af_init failed on the CPU model")
        rc = self.lib.af_run_model(ctypes.c_void_p(weights.ctypes.data), in_ptrs, out_ptrs)
        if self.lib.af_finalize() != 0:
            raise AutofusionError("ascendc: af_finalize failed on the CPU model")
        if rc != 0:
            raise AutofusionError("ascendc: af_run_model failed (see stderr)")
        return dict(zip(_io_names(self.fn, "res"), outs))


def run_ascendc_cpu(module: ModuleOp, feeds: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Outputs (by ONNX name) of ``module`` on ``feeds`` with the Ascend C kernels run on the
    CPU functional model and the rest on the reference interpreter."""
    return CpuModelRunner(module).run(feeds)
