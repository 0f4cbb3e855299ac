"""Load a built ``libmodel.so`` with ctypes and run it on numpy arrays.

The library implements the C API in ``autofusion/runtime/include/afrt_model_api.md``.
:class:`ModelLibrary` reads the input/output names, shapes and dtypes from it, checks every
feed (name, dtype, shape; one clear error naming the input) and returns outputs as numpy
arrays keyed by their ONNX names.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import secrets
import struct
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from onnx import helper

from autofusion.errors import AutofusionError


@dataclass(frozen=True)
class TensorSpec:
    """One model input or output as the library declares it."""

    name: str
    shape: tuple[int, ...]  # of one sample when ``batch`` names a run-time batch; -1: symbolic
    dtype: np.dtype
    batch: str = ""  # the run-time batch symbol in dim 0 ("" for a fixed shape)
    # run-time sizes: per dim, the symbol it is exactly ("" if static or an expression)
    dim_symbols: tuple[str, ...] = ()

    def describe(self) -> str:
        dims = [str(d) for d in self.shape]
        if self.batch:
            dims[0] = self.batch
        for d, sym in enumerate(self.dim_symbols):
            if self.shape[d] < 0:
                dims[d] = sym or "?"
        return f"{self.dtype.name}[{', '.join(dims)}]"

    def shape_for(self, batch: int) -> tuple[int, ...]:
        return (batch, *self.shape[1:]) if self.batch else self.shape


@dataclass(frozen=True)
class KernelTime:
    """One kernel call site of a compiled model, as profiled (``ModelLibrary.profile``)."""

    kernel: str  # the C function, e.g. "k15_conv_add_relu"
    pattern: str  # its fusion pattern ("" for a single op)
    origins: tuple[str, ...]  # the ONNX nodes it computes
    seconds: float  # total time inside it since the last reset
    calls: int
    # per call, from the compile (cost.kernel_work via report["kernel_work"]); None when the
    # library alone is profiled (ModelLibrary.profile) or the build predates the record
    flops: int | None = None
    bytes_moved: int | None = None

    @property
    def gflops_per_s(self) -> float | None:
        """Achieved GFLOP/s over the timed calls."""
        if self.flops is None or self.seconds <= 0:
            return None
        return self.flops * self.calls / self.seconds / 1e9

    @property
    def gb_per_s(self) -> float | None:
        """Achieved GB/s of compulsory traffic (a lower bound of what the kernel moves)."""
        if self.bytes_moved is None or self.seconds <= 0:
            return None
        return self.bytes_moved * self.calls / self.seconds / 1e9

    @property
    def flops_per_byte(self) -> float | None:
        """Arithmetic intensity: FLOPs per byte moved from memory."""
        if self.flops is None or not self.bytes_moved:
            return None
        return self.flops / self.bytes_moved


# af_run's return codes (model.h, afrt_model_api.md)
AF_ERR_ARGUMENT = 1
AF_ERR_INDEX = 2
AF_ERR_DIVZERO = 3
AF_ERR_NOMEM = 4

#: af_profile_enable's argument per profile clock (``ModelLibrary.profile_enable``)
PROFILE_CLOCKS = {"wall": 1, "thread": 2}


def _dtype_name(dt: np.dtype) -> str:
    """``float32``, or ``float32 (big-endian)`` when the byte order is not the machine's:
    a dtype mismatch that is only byte order would otherwise read "float32, got float32"."""
    if dt.byteorder in ("=", "|") or dt.isnative:
        return dt.name
    return f"{dt.name} ({'big' if dt.byteorder == '>' else 'little'}-endian)"


def _np_dtype(onnx_elem: int, what: str) -> np.dtype:
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(onnx_elem))
    except (KeyError, ValueError, TypeError):
        raise AutofusionError(f"{what}: unsupported ONNX element type {onnx_elem}") from None


def _default_openmp_wait_policy() -> None:
    """Let idle OpenMP threads spin briefly, then sleep, unless the user chose otherwise.

    libgomp reads this once, when it is first loaded, so it is set before the first model
    library is opened. A model runs dozens of parallel regions per inference; with
    ``OMP_WAIT_POLICY=PASSIVE`` every region start is a futex wake-up, which cost 2-thread
    ResNet-50 4 ms of 39 (quiet machine). libgomp's default spins for up to 300000
    iterations, long enough to steal whole milliseconds from other work on a busy machine.
    ``GOMP_SPINCOUNT=10000`` keeps the quiet-machine speed (34.8 ms) without the long tail;
    figures in docs/runtime.md."""
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = "10000"
    # afrt's default GEMM core threads with OpenMP; OpenBLAS (scipy-openblas32, a fallback
    # here) would otherwise start a pool of its own threads when first loaded.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _bind(lib: ctypes.CDLL, path: Path) -> None:
    i64p = ctypes.POINTER(ctypes.c_int64)
    sigs: dict[str, tuple[object, list[object]]] = {
        "af_num_inputs": (ctypes.c_int, []),
        "af_num_outputs": (ctypes.c_int, []),
        "af_input_name": (ctypes.c_char_p, [ctypes.c_int]),
        "af_output_name": (ctypes.c_char_p, [ctypes.c_int]),
        "af_input_rank": (ctypes.c_int, [ctypes.c_int]),
        "af_output_rank": (ctypes.c_int, [ctypes.c_int]),
        "af_input_shape": (i64p, [ctypes.c_int]),
        "af_output_shape": (i64p, [ctypes.c_int]),
        "af_input_dtype": (ctypes.c_int, [ctypes.c_int]),
        "af_output_dtype": (ctypes.c_int, [ctypes.c_int]),
        "af_create": (ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_int]),
        "af_last_error": (ctypes.c_char_p, []),
        "af_run": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]),
        "af_destroy": (None, [ctypes.c_void_p]),
    }
    # optional: per-kernel profiling (hand-written or older libraries lack it)
    optional: dict[str, tuple[object, list[object]]] = {
        "af_profile_enable": (None, [ctypes.c_int]),
        "af_profile_reset": (None, []),
        "af_profile_count": (ctypes.c_int, []),
        "af_profile_kernel": (ctypes.c_char_p, [ctypes.c_int]),
        "af_profile_pattern": (ctypes.c_char_p, [ctypes.c_int]),
        "af_profile_origins": (ctypes.c_char_p, [ctypes.c_int]),
        "af_profile_seconds": (ctypes.c_double, [ctypes.c_int]),
        "af_profile_calls": (ctypes.c_longlong, [ctypes.c_int]),
        # threads on a busy machine (libraries built before it lack these)
        "af_threads_active": (ctypes.c_int, []),
        "af_set_thread_lag_us": (None, [ctypes.c_double]),
        # run-time batch (libraries built before it lack these)
        "af_batch_symbol": (ctypes.c_char_p, []),
        "af_batch_min": (ctypes.c_int64, []),
        "af_batch_max": (ctypes.c_int64, []),
        "af_input_batched": (ctypes.c_int, [ctypes.c_int]),
        "af_output_batched": (ctypes.c_int, [ctypes.c_int]),
        "af_run_batch": (
            ctypes.c_int,
            [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p],
        ),
        # run-time sizes (libraries built before them lack these)
        "af_num_symbols": (ctypes.c_int, []),
        "af_symbol_name": (ctypes.c_char_p, [ctypes.c_int]),
        "af_symbol_min": (ctypes.c_int64, [ctypes.c_int]),
        "af_symbol_max": (ctypes.c_int64, [ctypes.c_int]),
        "af_input_dim_symbol": (ctypes.c_int, [ctypes.c_int, ctypes.c_int]),
        "af_output_dim_symbol": (ctypes.c_int, [ctypes.c_int, ctypes.c_int]),
        "af_input_shape_at": (ctypes.c_int, [ctypes.c_int, i64p, i64p]),
        "af_output_shape_at": (ctypes.c_int, [ctypes.c_int, i64p, i64p]),
        "af_run_sym": (
            ctypes.c_int,
            [ctypes.c_void_p, i64p, ctypes.c_void_p, ctypes.c_void_p],
        ),
    }
    for name, (res, args) in [*sigs.items(), *optional.items()]:
        try:
            fn = getattr(lib, name)
        except AttributeError:
            if name in optional:
                continue
            raise AutofusionError(f"{path}: not a compiled autofusion model (no {name})") from None
        fn.restype = res
        fn.argtypes = args


def _symbols(lib: ctypes.CDLL) -> dict[str, tuple[int, int]]:
    """The library's size symbols and ranges, in order ({} for a static library)."""
    if not hasattr(lib, "af_num_symbols"):
        return {}
    out: dict[str, tuple[int, int]] = {}
    for k in range(lib.af_num_symbols()):
        name = (lib.af_symbol_name(k) or b"").decode("utf-8", errors="replace")
        out[name] = (int(lib.af_symbol_min(k)), int(lib.af_symbol_max(k)))
    return out


def _specs(lib: ctypes.CDLL, kind: str) -> list[TensorSpec]:
    num = getattr(lib, f"af_num_{kind}s")()
    sym = ""
    if hasattr(lib, "af_batch_symbol"):
        sym = (lib.af_batch_symbol() or b"").decode("utf-8", errors="replace")
    names = list(_symbols(lib))
    out: list[TensorSpec] = []
    for i in range(num):
        raw = getattr(lib, f"af_{kind}_name")(i)
        name = raw.decode("utf-8", errors="replace") if raw is not None else f"{kind}{i}"
        rank = getattr(lib, f"af_{kind}_rank")(i)
        shp = getattr(lib, f"af_{kind}_shape")(i)
        shape = tuple(int(shp[d]) for d in range(rank)) if rank > 0 else ()
        dtype = _np_dtype(getattr(lib, f"af_{kind}_dtype")(i), f"{kind} {name!r}")
        batched = bool(sym) and bool(getattr(lib, f"af_{kind}_batched")(i))
        dim_syms: tuple[str, ...] = ()
        if names:
            ks = [getattr(lib, f"af_{kind}_dim_symbol")(i, d) for d in range(rank)]
            dim_syms = tuple(names[k] if 0 <= k < len(names) else "" for k in ks)
        out.append(TensorSpec(name, shape, dtype, sym if batched else "", dim_syms))
    return out


def _check_elf(image: bytes, path: Path) -> None:
    """Refuse a shared object whose loadable segments reach past its end.

    dlopen maps each PT_LOAD segment from the file; a segment beyond a truncated file's end
    is mapped anyway, and touching it kills the process with SIGBUS. Checking the program
    headers against the image's length turns that into an error."""
    bad = AutofusionError(f"{path}: not a complete shared library (truncated or corrupt)")
    if len(image) < 64 or image[:4] != b"\x7fELF" or image[4] != 2 or image[5] not in (1, 2):
        raise bad  # 64-bit ELF only: the libraries we build
    end = "<" if image[5] == 1 else ">"
    (phoff,) = struct.unpack_from(end + "Q", image, 32)
    phentsize, phnum = struct.unpack_from(end + "HH", image, 54)
    if phentsize < 56 or phoff + phnum * phentsize > len(image):
        raise bad
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from(
            end + "IIQQQQ", image, phoff + i * phentsize
        )
        if p_type == 1 and p_offset + p_filesz > len(image):  # PT_LOAD
            raise bad


_ELF_MACHINES = {62: "x86_64", 183: "aarch64"}


def _check_machine(image: bytes, path: Path) -> None:
    """Refuse a library built for another architecture (``--cpu aarch64`` on x86-64)."""
    import platform

    (machine,) = struct.unpack_from("<H" if image[5] == 1 else ">H", image, 18)
    arch = _ELF_MACHINES.get(machine, f"ELF machine {machine}")
    if arch != platform.machine():
        raise AutofusionError(
            f"{path}: built for {arch}, cannot be loaded on this {platform.machine()} machine "
            "(run it there, e.g. with main.c; or compile with --cpu native)"
        )


def cpu_flags() -> set[str] | None:
    """This CPU's feature flags from /proc/cpuinfo (None where there is none to read)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return set(value.split())
    return None


def check_build_cpu(lib: ctypes.CDLL, path: Path) -> None:
    """Refuse a build whose required ISA extensions (``af_build_isa``, read without calling
    into the library) this CPU lacks: running it would die of SIGILL at the first kernel."""
    try:
        isa = ctypes.c_char_p.in_dll(lib, "af_build_isa").value or b""
        cpu = (ctypes.c_char_p.in_dll(lib, "af_build_cpu").value or b"?").decode()
    except ValueError:
        return  # a library from before the record (or hand-built): nothing to check
    have = cpu_flags()
    if have is None:
        return
    missing = [f for f in isa.decode().split() if f not in have]
    if missing:
        raise AutofusionError(
            f"{path}: built for cpu {cpu}, which needs CPU features this machine lacks "
            f"({', '.join(missing)}); rebuild here (--cpu native) or with a lower --cpu "
            "such as x86-64-v2"
        )


_load_count = itertools.count()


def _load_private_copy(path: Path) -> ctypes.CDLL:
    """dlopen a private in-memory copy of the library at ``path``.

    A library mapped from its file dies with SIGBUS if that file is later truncated or
    rewritten in place (a damaged cache entry, an edited ``-o`` folder). Reading it once
    and loading the copy from a memfd means nothing done to the file afterwards can affect
    this process; the copy is checked with :func:`_check_elf` first. Each load is a separate
    library instance. glibc recognises an already loaded library by the name passed to
    dlopen, and ``/proc/self/fd/N`` names are reused as fds are, so the memfd is opened
    through a symlink with a name unique to this process (removed right after)."""
    try:
        image = path.read_bytes()
    except OSError as e:
        raise AutofusionError(f"{path}: cannot read: {e.strerror or e}") from None
    _check_elf(image, path)
    _check_machine(image, path)
    name = f"autofusion-{os.getpid()}-{next(_load_count)}-{secrets.token_hex(4)}.so"
    link = os.path.join(tempfile.gettempdir(), name)
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create(f"autofusion:{path.name}", os.MFD_CLOEXEC)
        target = f"/proc/self/fd/{fd}"
    else:  # pragma: no cover - non-Linux: an unlinked temporary copy
        fd, target = os.open(link, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o700), link
    try:
        with os.fdopen(os.dup(fd), "wb") as f:
            f.write(image)
        if target != link:
            os.symlink(target, link)
        return ctypes.CDLL(link, mode=os.RTLD_LOCAL)
    except OSError as e:
        raise AutofusionError(f"{path}: cannot load: {e}") from None
    finally:
        os.close(fd)
        try:
            os.unlink(link)
        except OSError:
            pass


class ModelLibrary:
    """A loaded compiled model: ``run(feeds) -> {output name: array}``.

    One instance owns one ``af_model`` (weights and arena); runs on it are serialised with a
    lock (the arena is shared), and ctypes releases the GIL while C runs.
    """

    def __init__(self, lib_path: str | os.PathLike[str], weights_path: str | os.PathLike[str],
                 num_threads: int | None = None) -> None:  # fmt: skip
        self.path = Path(lib_path)
        if not self.path.is_file():
            raise AutofusionError(f"{self.path}: no such library")
        _default_openmp_wait_policy()
        self._lib = _load_private_copy(self.path)
        check_build_cpu(self._lib, self.path)
        _bind(self._lib, self.path)
        self.inputs = _specs(self._lib, "input")
        self.outputs = _specs(self._lib, "output")
        #: the run-time batch: symbol and inclusive range ("", 1, 1: a fixed batch)
        self.batch_symbol = ""
        self.batch_range = (1, 1)
        #: run-time sizes: each size symbol's inclusive range, in the library's order
        self.symbols = _symbols(self._lib)
        # where each symbol shows: (input index, dim, symbol), in input order
        self._sym_dims = [(i, d, sym) for i, spec in enumerate(self.inputs)
                          for d, sym in enumerate(spec.dim_symbols) if sym]  # fmt: skip
        # the inputs' and outputs' shapes per symbol values, computed by the library once
        # (a bounded memo: a run costs two ctypes calls per tensor otherwise)
        self._shapes: dict[tuple[int, ...], tuple[list[tuple[int, ...]], ...]] = {}
        if hasattr(self._lib, "af_run_batch"):
            self.batch_symbol = (self._lib.af_batch_symbol() or b"").decode("utf-8", "replace")
            self.batch_range = (int(self._lib.af_batch_min()), int(self._lib.af_batch_max()))
        self.num_threads = num_threads if num_threads is not None else 0
        handle = self._lib.af_create(os.fsencode(weights_path), int(self.num_threads))
        if not handle:
            err = (self._lib.af_last_error() or b"").decode("utf-8", errors="replace")
            raise AutofusionError(f"{self.path}: af_create failed: {err or 'unknown error'}")
        self._model: int | None = handle
        self._lock = threading.Lock()

    def check_feeds(self, feeds: Mapping[str, object]) -> list[np.ndarray]:
        """The feeds as contiguous, native-byte-order arrays in input order, or an error
        naming the input. Non-native byte order, Fortran order, strided views and read-only
        arrays are accepted (copied when their layout is not already C-contiguous native);
        the caller's arrays are never modified."""
        return self._check_feeds(feeds)[0]

    def _check_feeds(self, feeds: Mapping[str, object]) -> tuple[list[np.ndarray], int, list[int]]:
        """:meth:`check_feeds`, the run's batch (dim 0 of the batched inputs, which must
        agree and lie in the library's range; 1 for a fixed batch) and the values of the
        size symbols (:meth:`bind_symbols`; empty for a static library)."""
        if not isinstance(feeds, Mapping):
            raise AutofusionError(
                f"run() expects a dict of input name -> array, got {type(feeds).__name__}"
            )
        names = [s.name for s in self.inputs]
        unknown = [k for k in feeds if k not in names]
        if unknown:
            raise AutofusionError(
                f"unknown input(s) {', '.join(map(repr, unknown))}; the model's inputs are "
                + ", ".join(f"{s.name!r} {s.describe()}" for s in self.inputs)
            )
        missing = [n for n in names if n not in feeds]
        if missing:
            raise AutofusionError(f"missing input(s): {', '.join(map(repr, missing))}")
        arrays: list[np.ndarray] = []
        batch: tuple[int, str] | None = None
        for spec in self.inputs:
            arr = np.asarray(feeds[spec.name])
            if not arr.dtype.isnative and arr.dtype.newbyteorder("=") == spec.dtype:
                arr = arr.astype(spec.dtype)  # the same values in the machine's byte order
            if arr.dtype != spec.dtype:
                raise AutofusionError(
                    f"input {spec.name!r}: expected dtype {_dtype_name(spec.dtype)}, "
                    f"got {_dtype_name(arr.dtype)}"
                )
            if self.symbols:  # sizes are checked once the symbols are bound
                if arr.ndim != len(spec.shape):
                    raise AutofusionError(
                        f"input {spec.name!r}: rank {arr.ndim}, expected {len(spec.shape)} "
                        f"({spec.describe()})"
                    )
                # (np.ascontiguousarray would make a 0-d array 1-d)
                arrays.append(np.require(arr, requirements="C"))
                continue
            if spec.batch and arr.ndim == len(spec.shape) and arr.ndim > 0:
                n = int(arr.shape[0])
                lo, hi = self.batch_range
                if batch is not None and batch[0] != n:
                    raise AutofusionError(
                        f"inputs disagree on the batch '{spec.batch}': {batch[0]} for input "
                        f"{batch[1]!r}, {n} for input {spec.name!r}"
                    )
                if not lo <= n <= hi:
                    raise AutofusionError(
                        f"input {spec.name!r}: batch '{spec.batch}' is {n}, outside the "
                        f"library's range {lo}..{hi}"
                    )
                batch = (n, spec.name)
            want = spec.shape_for(batch[0] if spec.batch and batch else 1)
            if tuple(arr.shape) != want:
                raise AutofusionError(
                    f"input {spec.name!r}: expected shape {spec.describe()}, got {list(arr.shape)}"
                    if spec.batch
                    else f"input {spec.name!r}: expected shape {list(spec.shape)}, got "
                    f"{list(arr.shape)}"
                )
            arrays.append(np.ascontiguousarray(arr))
        values = self.bind_symbols(arrays) if self.symbols else []
        return arrays, batch[0] if batch else 1, values

    def bind_symbols(self, arrays: list[np.ndarray]) -> list[int]:
        """The size symbols' values from the inputs' shapes (in input order): a dim that is
        exactly one symbol gives its value; every dim is then checked against the sizes
        the library computes for those values (``af_input_shape_at``). One error naming the
        input and symbol for a size contradicting a static dim, two inputs disagreeing on a
        symbol, a symbol no input shows, or a value outside its range."""
        names = list(self.symbols)
        values: dict[str, tuple[int, str, int]] = {}  # symbol -> (value, input, dim)
        for i, d, sym in self._sym_dims:
            v = int(arrays[i].shape[d])
            old = values.setdefault(sym, (v, self.inputs[i].name, d))
            if old[0] != v:
                raise AutofusionError(
                    f"input {self.inputs[i].name!r}: dim {d} gives {sym} = {v}, but input "
                    f"{old[1]!r} dim {old[2]} gives {sym} = {old[0]}"
                )
        unbound = [s for s in names if s not in values]
        if unbound:
            raise AutofusionError(
                f"cannot run: the inputs' shapes do not give the size symbol(s) "
                f"{', '.join(unbound)} (no input has one as a dim of its own)"
            )
        for sym, (v, name, d) in values.items():
            lo, hi = self.symbols[sym]
            if not lo <= v <= hi:
                raise AutofusionError(
                    f"input {name!r}: dim {d} gives {sym} = {v}, outside the library's range "
                    f"{lo}..{hi}"
                )
        out = [values[s][0] for s in names]
        for spec, arr, want in zip(self.inputs, arrays, self.shapes_at(out)[0]):
            if arr.shape != want:
                bound = ", ".join(f"{s} = {v}" for s, v in zip(names, out))
                raise AutofusionError(
                    f"input {spec.name!r}: expected shape {spec.describe()} = {list(want)} "
                    f"with {bound}, got {list(arr.shape)}"
                )
        return out

    def shapes_at(self, values: list[int]) -> tuple[list[tuple[int, ...]], ...]:
        """The inputs' and the outputs' shapes for the size symbols' ``values``."""
        key = tuple(values)
        got = self._shapes.get(key)
        if got is None:
            got = tuple(
                [self._shape_at(kind, i, values) for i in range(len(specs))]
                for kind, specs in (("input", self.inputs), ("output", self.outputs))
            )
            if len(self._shapes) >= 256:
                self._shapes.clear()
            self._shapes[key] = got
        return got

    def _shape_at(self, kind: str, i: int, values: list[int]) -> tuple[int, ...]:
        spec = (self.inputs if kind == "input" else self.outputs)[i]
        syms = (ctypes.c_int64 * max(1, len(values)))(*values)
        dims = (ctypes.c_int64 * max(1, len(spec.shape)))()
        if getattr(self._lib, f"af_{kind}_shape_at")(i, syms, dims) != 0:
            raise AutofusionError(f"{self.path}: af_{kind}_shape_at({i}) failed")
        return tuple(int(dims[d]) for d in range(len(spec.shape)))

    def run(self, feeds: Mapping[str, object]) -> dict[str, np.ndarray]:
        """Run once; returns a new array per output, keyed by ONNX output name."""
        arrays, batch, values = self._check_feeds(feeds)
        if self.symbols:
            outs = [np.empty(shape, dtype=s.dtype)
                    for shape, s in zip(self.shapes_at(values)[1], self.outputs)]  # fmt: skip
        else:
            outs = [np.empty(s.shape_for(batch), dtype=s.dtype) for s in self.outputs]
        in_ptrs = (ctypes.c_void_p * max(1, len(arrays)))(*[a.ctypes.data for a in arrays])
        out_ptrs = (ctypes.c_void_p * max(1, len(outs)))(*[o.ctypes.data for o in outs])
        with self._lock:
            if self._model is None:
                raise AutofusionError(f"{self.path}: model was closed")
            if self.symbols:
                syms = (ctypes.c_int64 * len(values))(*values)
                rc = self._lib.af_run_sym(self._model, syms, in_ptrs, out_ptrs)
            elif self.batch_symbol:
                rc = self._lib.af_run_batch(self._model, batch, in_ptrs, out_ptrs)
            else:
                rc = self._lib.af_run(self._model, in_ptrs, out_ptrs)
        if rc != 0:
            err = (self._lib.af_last_error() or b"").decode("utf-8", errors="replace")
            if rc in (AF_ERR_INDEX, AF_ERR_DIVZERO, AF_ERR_NOMEM):
                # bad data in the feeds (or, NOMEM, a kernel short of memory), not a broken
                # library: the message names the ONNX node and the index and valid range, the
                # zero divisor, or the kernel out of memory; the model stays usable
                raise AutofusionError(f"run: {err}")
            raise AutofusionError(f"{self.path}: af_run failed ({rc}): {err or 'unknown error'}")
        return {s.name: o for s, o in zip(self.outputs, outs)}

    def threads_active(self) -> int:
        """How many threads the library's parallel regions use now: ``num_threads``, or fewer
        while other work keeps its workers from starting (docs/runtime.md, "Threads on a
        busy machine")."""
        return int(self._threads_api().af_threads_active())

    def set_thread_lag_us(self, microseconds: float) -> None:
        """How late a worker may start a parallel region before later regions run without
        it (default 50 us); negative: every worker counts as late (a test hook). The setting
        belongs to the loaded library, like the thread count."""
        self._threads_api().af_set_thread_lag_us(float(microseconds))

    def _threads_api(self) -> ctypes.CDLL:
        if not hasattr(self._lib, "af_threads_active"):
            raise AutofusionError(f"{self.path}: this library does not adapt its thread count "
                                  "(built before af_threads_active)")  # fmt: skip
        return self._lib

    def _profiling(self) -> ctypes.CDLL:
        if not hasattr(self._lib, "af_profile_count"):
            raise AutofusionError(f"{self.path}: this library has no per-kernel profiling "
                                  "(not built by this autofusion's C backend)")  # fmt: skip
        return self._lib

    def profile_enable(self, on: bool = True, clock: str = "wall") -> None:
        """Time every kernel call from now on (``on``) or stop timing. The counters belong to
        the loaded library, shared by every model created from it. ``clock``: ``"wall"``, or
        ``"thread"``, the on-CPU time of the thread that called ``run`` (Linux; elsewhere
        the wall clock): with ``OMP_WAIT_POLICY=passive`` a kernel's time then leaves out
        the waits for the other threads (``benchmarks/fusion_efficiency.py --clock threads``)."""
        if clock not in PROFILE_CLOCKS:
            raise AutofusionError(f"profile: clock must be one of {', '.join(PROFILE_CLOCKS)}, "
                                  f"not {clock!r}")  # fmt: skip
        self._profiling().af_profile_enable(PROFILE_CLOCKS[clock] if on else 0)

    def profile_reset(self) -> None:
        self._profiling().af_profile_reset()

    def profile(self) -> list[KernelTime]:
        """Per kernel call of a run, in run order: kernel, pattern, ONNX origins, total
        seconds and calls since the last reset (zero unless profiling is on)."""

        def text(raw: bytes | None) -> str:
            return (raw or b"").decode("utf-8", errors="replace")

        lib = self._profiling()
        return [
            KernelTime(text(lib.af_profile_kernel(i)), text(lib.af_profile_pattern(i)),
                       tuple(o for o in text(lib.af_profile_origins(i)).split(", ") if o),
                       float(lib.af_profile_seconds(i)), int(lib.af_profile_calls(i)))
            for i in range(lib.af_profile_count())
        ]  # fmt: skip

    def close(self) -> None:
        """Free the model's weights and arena (the library stays mapped)."""
        with self._lock:
            if self._model is not None:
                self._lib.af_destroy(self._model)
                self._model = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass
