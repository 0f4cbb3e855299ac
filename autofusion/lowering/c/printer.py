"""Print lowered IR (func/memref/scf/arith/math + clib) as one C11 translation unit.

The printer reads typed ops only: ``_EXPR`` maps pure scalar ops to C expressions, ``_stmt``
handles statements (loops, loads/stores, library calls). Every C identifier comes from the
``NameTable``; model strings appear only through ``c_string``/``c_comment``. An op without a
C form is an error naming it. Output is deterministic: it depends only on the module.

Layout of the unit: includes, small constants as ``static const`` arrays, the weights
layout (``weights.bin`` offsets, 64-byte aligned), epilogues and kernel functions (each
``fusion.kernel`` is one ``static void`` function; kernels take the weights base pointer
first), ``af_graph`` (the body of ``@main``), then the ``model.h`` API (afrt_model_api.md).

Run-time index checks (``clib.guard_index``): kernels holding one (or calling one that does)
take a last parameter ``af_fault *af_f``, the run's fault record; ``af_graph`` returns after
a call that recorded a fault and ``af_run`` turns it into ``AF_ERR_INDEX`` and a message
naming the site (``af_guard_sites``), the index and the valid range. Integer Div / Mod
(``clib.int_div``) use the same record: a zero divisor becomes ``AF_ERR_DIVZERO``.
"""

from __future__ import annotations

import math as pymath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np
from xdsl.dialects import arith, func, math, memref, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    Signedness,
    StringAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from autofusion import symbolic
from autofusion.dialects import clib, dtypes
from autofusion.dialects.attrs import (
    C_ALIAS_ARGS,
    C_PARALLEL,
    C_PATTERN,
    C_ROLE,
    C_SHAPE,
    C_SIMD,
    C_SYMBOL,
    ONNX_NAME,
    ORIGINS,
    PRECISION_STORAGE,
)
from autofusion.dialects.base import SymShapeAttr, symbol_ranges
from autofusion.dialects.fusion import FAST_MATH_ATTR
from autofusion.errors import AutofusionError
from autofusion.frontend.batch import module_batch
from autofusion.lowering.c.builder import strides_of
from autofusion.lowering.c.names import NameTable, c_comment, c_string

# Constants with at most this many elements are C literals; larger ones go to weights.bin.
LITERAL_MAX_ELEMS = 16
WEIGHT_ALIGN = 64


class CPrintError(AutofusionError):
    """The module holds something the C printer cannot express."""


def ctype(t: Attribute) -> str:
    if isinstance(t, IndexType):
        return "int64_t"
    try:
        return dtypes.c_type(t)
    except ValueError:
        raise CPrintError(f"c target: no C type for {t}") from None


def float_literal(v: float, t: Attribute) -> str:
    suffix = "f" if t == dtypes.f32 else ""
    if pymath.isnan(v):
        lit = "NAN"
    elif pymath.isinf(v):
        lit = "INFINITY" if v > 0 else "-INFINITY"
    else:
        lit = float(v).hex() + suffix
    if t == dtypes.f32 or t == dtypes.f64:
        return f"({ctype(t)}){lit}" if lit[0] in "N-I" else lit
    return f"({ctype(t)}){lit}"


def int_literal(v: int, t: Attribute) -> str:
    if isinstance(t, IntegerType) and t.width.data == 1:
        return "true" if v else "false"
    if v >= 1 << 63:  # a uint64 constant beyond INT64_MAX
        return f"UINT64_C({v})"
    if v == -(1 << 63):
        return "(-INT64_C(9223372036854775807) - 1)"
    if isinstance(t, IndexType) and -(1 << 31) < v < (1 << 31):
        return str(v) if v >= 0 else f"({v})"
    return f"INT64_C({v})" if v >= 0 else f"(-INT64_C({-v}))"


def to_storage(data: np.ndarray, storage: str) -> np.ndarray:
    """``data`` (float32) as stored in weights.bin: ``fp16`` (IEEE half, round to nearest
    even), ``bf16`` (the upper 16 bits of the fp32 pattern, round to nearest even; NaN kept
    quiet) or unchanged (``fp32``)."""
    if storage == "fp16":
        return data.astype(np.float16)
    if storage == "bf16":
        bits = np.ascontiguousarray(data, dtype=np.float32).view(np.uint32).astype(np.uint64)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        nan = np.isnan(data)
        out = rounded.astype(np.uint16)
        out[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)
        return out
    return data


def from_storage(stored: np.ndarray, storage: str) -> np.ndarray:
    """The float32 values a stored weight widens to (the inverse of :func:`to_storage`)."""
    if storage == "bf16":
        return (stored.astype(np.uint32) << 16).view(np.float32)
    return stored.astype(np.float32)


@dataclass
class Weights:
    """The weights layout: symbol -> (offset, array as stored, storage), in module order,
    64-byte aligned; ``size`` bytes. ``af_create`` reads the file into memory as it is, so a
    weight marked fp16/bf16 (``precision.storage``) is 16-bit both in weights.bin and at run
    time, where only the 16-bit contractions (``afrt_matmul_lp`` / ``afrt_conv2d_lp``) read
    it (``assign-precision`` guarantees that; ``convert-nn-to-buffers`` checks it)."""

    entries: dict[str, tuple[int, np.ndarray, str]] = field(default_factory=dict)
    size: int = 0

    def add(self, sym: str, data: np.ndarray, storage: str = "fp32") -> int:
        off = -(-self.size // WEIGHT_ALIGN) * WEIGHT_ALIGN
        stored = to_storage(data, storage)
        self.entries[sym] = (off, stored, storage)
        self.size = off + stored.nbytes
        return off

    def write(self, path: str | Path) -> None:
        """Stream the file layout to ``path`` without building it in memory."""
        with open(path, "wb") as f:
            pos = 0
            for off, data, _ in self.entries.values():
                f.write(b"\0" * (off - pos))
                f.write(np.ascontiguousarray(data).data.cast("B"))
                pos = off + data.nbytes

    def blob(self) -> bytes:
        out = bytearray(self.size)
        for off, data, _ in self.entries.values():
            out[off : off + data.nbytes] = np.ascontiguousarray(data).data.cast("B")
        return bytes(out)


def _global_array(g: memref.GlobalOp) -> np.ndarray:
    """The global's value as a contiguous little-endian array of its full shape."""
    value = g.initial_value
    if not isinstance(value, DenseIntOrFPElementsAttr):
        raise CPrintError(f"c target: global {g.sym_name.data} has no initial value")
    arr = dtypes.numpy_from_dense(value)
    mt = g.type
    assert isinstance(mt, MemRefType)
    shape = tuple(mt.get_shape())
    if arr.shape != shape:
        arr = np.broadcast_to(arr, shape)
    if arr.dtype == np.bool_:
        arr = arr.astype(np.uint8)
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    return np.ascontiguousarray(arr)


@dataclass(frozen=True)
class _Arg:
    """One @main argument as the C API sees it: an input, an output or a size symbol."""

    role: str  # "input", "output" or "symbol"
    name: str  # the ONNX name, or the symbol's
    type: Attribute
    dims: tuple[int, ...] = ()  # an input/output's sizes, ``symbolic.Size`` where symbolic


def _io(main: func.FuncOp) -> list[_Arg]:
    """Each @main argument: role, name, type and (inputs/outputs) sizes."""
    out: list[_Arg] = []
    attrs = main.arg_attrs.data if main.arg_attrs is not None else []
    for i, arg in enumerate(main.body.block.args):
        d = attrs[i].data if i < len(attrs) and isinstance(attrs[i], DictionaryAttr) else {}
        role_attr = d.get(C_ROLE)
        role = role_attr.data if isinstance(role_attr, StringAttr) else "input"
        if role == "symbol":
            sym = d.get(C_SYMBOL)
            if not isinstance(arg.type, IndexType) or not isinstance(sym, StringAttr):
                raise CPrintError(f"c target: @main argument {i} is a symbol without an index "
                                  "type and a c.symbol name")  # fmt: skip
            out.append(_Arg("symbol", sym.data, arg.type))
            continue
        name = d.get(ONNX_NAME)
        t = arg.type
        if not isinstance(t, MemRefType):
            raise CPrintError(f"c target: @main argument {i} is neither a buffer nor a symbol")
        shape = d.get(C_SHAPE)
        dims = shape.sizes() if isinstance(shape, SymShapeAttr) else tuple(t.get_shape())
        if any(isinstance(x, int) and x < 0 for x in dims):
            raise CPrintError(f"c target: @main argument {i} has a '?' dim but no c.shape sizes")
        out.append(_Arg(role, name.data if isinstance(name, StringAttr) else f"arg{i}", t, dims))
    return out


class CPrinter:
    def __init__(self, module: ModuleOp) -> None:
        self.module = module
        self.names = NameTable()
        for reserved in (
            "af_w",
            "af_s",
            "af_sb",
            "af_graph",
            "af_model",
            "m",
            "in",
            "out",
            "ctx",
            "p_",
            "e_",
            "s_",
            "af_f",
            "af_fault",
            "af_sym",
        ):
            self.names.reserve(reserved)
        self.sym: dict[str, str] = {}
        self.weights = Weights()
        self.literal_globals: dict[str, str] = {}
        self.global_off: dict[str, int] = {}
        self.lines: list[str] = []
        self.written_args: dict[str, set[int]] = {}
        # Distinct afrt_conv_params initialisers: af_create sizes one shared conv scratch.
        self.conv_params: dict[str, None] = {}
        # Per-kernel profiling: pattern and ONNX origins of each function, and the index of
        # every call in @main (its counter slot).
        self.kernel_info: dict[str, tuple[str, str]] = {}
        self.prof_slot: dict[Operation, int] = {}
        # Run-time index checks: their messages' sites (index = site id in the C table), and
        # the functions that take the run's fault record (they check, or call one that does).
        self.guard_sites: dict[str, int] = {}
        self.faulting: set[str] = set()
        # Size symbols of a symbolic module (@main's index arguments), in order: their ranges.
        self.symbols: dict[str, tuple[int, int]] = {}

    # ---- entry -------------------------------------------------------------------------
    def print_module(self) -> str:
        main = None
        funcs: list[func.FuncOp] = []
        for op in self.module.ops:
            if isinstance(op, memref.GlobalOp):
                self._global(op)
            elif isinstance(op, func.FuncOp):
                if op.sym_name.data == "main":
                    main = op
                else:
                    funcs.append(op)
                    self.sym[op.sym_name.data] = self.names.ident(op.sym_name.data)
            else:
                raise CPrintError(f"c target: unexpected top-level op {op.name}")
        if main is None:
            raise CPrintError("c target: module has no func.func @main (run the lowering first)")
        w = self.lines
        w.append("/* Generated by autofusion (C backend). Do not edit. */")
        w.append("#include <stdbool.h>")
        w.append("#include <stdint.h>")
        w.append("#include <stdio.h>")
        w.append("#include <stdlib.h>")
        w.append("#include <string.h>")
        w.append("#include <math.h>")
        w.append("#include <time.h>")
        w.append('#include "afrt.h"')
        w.append('#include "model.h"')
        w.append("")
        w.append(f"#define AF_WEIGHTS_BYTES ((size_t){self.weights.size})")
        w.extend(_HELPERS.splitlines())
        self._faulting([*funcs, main])
        if self.faulting:
            w.extend(_GUARD.splitlines())
        w.append("")
        for sym, text in self.literal_globals.items():
            del sym
            w.append(text)
        if self.literal_globals:
            w.append("")
        for f in funcs:
            self._written(f)
        for f in funcs:
            self._function(f)
        self._main(main)
        return "\n".join(w) + "\n"

    # ---- globals -----------------------------------------------------------------------
    def _global(self, g: memref.GlobalOp) -> None:
        name = self.names.ident(g.sym_name.data)
        self.sym[g.sym_name.data] = name
        arr = _global_array(g)
        mt = g.type
        assert isinstance(mt, MemRefType)
        t = mt.element_type
        if arr.size <= LITERAL_MAX_ELEMS:
            flat = arr.reshape(-1)
            if dtypes.is_float(t):
                items = [float_literal(float(v), t) for v in flat]
            else:
                items = [int_literal(int(v), t) for v in flat]
            body = ", ".join(items) if items else "0"
            n = max(1, arr.size)
            self.literal_globals[name] = (
                f"static const {ctype(t)} {name}[{n}] __attribute__((aligned(64))) = {{{body}}};"
            )
        else:
            storage = g.attributes.get(PRECISION_STORAGE)
            kind = storage.data if isinstance(storage, StringAttr) else "fp32"
            if kind != "fp32" and arr.dtype != np.float32:
                raise CPrintError(f"c target: global {g.sym_name.data}: {kind} storage needs f32")
            self.global_off[name] = self.weights.add(name, arr, kind)

    # ---- which functions check indices ------------------------------------------------
    def _faulting(self, funcs: list[func.FuncOp]) -> None:
        """Functions holding a ``clib.guard_index`` or calling one that does (fixed point)."""
        calls: dict[str, set[str]] = {}
        for f in funcs:
            name = f.sym_name.data
            calls[name] = set()
            for op in f.walk():
                if isinstance(op, clib.GuardIndexOp | clib.IntDivOp):
                    self.faulting.add(name)
                elif isinstance(op, func.CallOp):
                    calls[name].add(op.callee.string_value())
        changed = True
        while changed:
            changed = False
            for name, callees in calls.items():
                if name not in self.faulting and callees & self.faulting:
                    self.faulting.add(name)
                    changed = True

    # ---- which arguments a function writes ---------------------------------------------
    def _written(self, f: func.FuncOp) -> None:
        args = list(f.body.block.args)
        root: dict[SSAValue, SSAValue] = {a: a for a in args}
        written: set[SSAValue] = set()
        for op in f.walk():
            if isinstance(op, clib.ViewOp) and op.source in root:
                root[op.res] = root[op.source]
        for op in f.walk():
            targets: list[SSAValue] = []
            if isinstance(op, memref.StoreOp):
                targets = [op.memref]
            elif isinstance(op, memref.CopyOp):
                targets = [op.destination]
            elif isinstance(op, clib.Conv2DOp | clib.Conv3DOp | clib.DwPwOp | clib.ConvPairOp):
                targets = [op.y]
            elif isinstance(op, clib.PwChainOp):
                targets = [op.y, op.y2]
            elif isinstance(op, clib.MatmulOp):
                targets = [op.c]
            elif isinstance(op, clib.Pool2DOp):
                targets = [op.y]
            elif isinstance(op, clib.AttentionOp):
                targets = [op.out]
            elif isinstance(op, clib.PackOp):
                targets = list(op.values[:1])
            elif isinstance(op, clib.CallOp):
                targets = op.written()
            elif isinstance(op, func.CallOp):
                callee = self.written_args.get(op.callee.string_value(), set())
                targets = [a for i, a in enumerate(op.arguments) if i in callee]
            for t in targets:
                if t in root:
                    written.add(root[t])
        self.written_args[f.sym_name.data] = {i for i, a in enumerate(args) if a in written}

    # ---- functions ---------------------------------------------------------------------
    def _function(self, f: func.FuncOp) -> None:
        fp = _FuncPrinter(self, f)
        name = self.sym[f.sym_name.data]
        args = f.body.block.args
        origins = f.attributes.get(ORIGINS)
        pattern = f.attributes.get(C_PATTERN)
        w = self.lines
        self.kernel_info[f.sym_name.data] = (
            pattern.data if isinstance(pattern, StringAttr) else "",
            ", ".join(o.data for o in origins.data if isinstance(o, StringAttr))
            if isinstance(origins, ArrayAttr)
            else "",
        )
        if isinstance(origins, ArrayAttr) and origins.data:
            text = ", ".join(o.data for o in origins.data if isinstance(o, StringAttr))
            w.append(
                f"/* {c_comment(pattern.data if isinstance(pattern, StringAttr) else '')}: "
                f"{c_comment(text)} */"
            )
        head = len(w)  # the signature's line, which AFRT_WIDE_VEC may join below
        epilogue = clib.EPILOGUE_ATTR in f.attributes
        if epilogue:
            try:
                clib.verify_epilogue(f.sym_name.data, f.body.block)
            except VerifyException as e:
                raise CPrintError(f"c target: {e}") from None
            names = [fp.bind(a) for a in args]
            w.append(f"static void {name}({clib.epilogue_c_params(names)}) {{")
            for a, nm in zip(args, names):
                if not a.uses:
                    w.append(f"  (void){nm};")
        else:
            written = self.written_args[f.sym_name.data]
            alias = f.attributes.get(C_ALIAS_ARGS)
            # arguments that share bytes (an output written over its residual): no restrict
            shared = (
                {int(v) for v in alias.get_values()} if isinstance(alias, DenseArrayBase) else set()
            )
            params = ["const unsigned char *restrict af_w", "void *af_s", "size_t af_sb"]
            for i, a in enumerate(args):
                if isinstance(a.type, IndexType):  # a size symbol (symbolic modules)
                    params.append(f"const int64_t {fp.bind(a)}")
                    continue
                if not isinstance(a.type, MemRefType):
                    raise CPrintError(
                        f"c target: argument {i} of {f.sym_name.data} is neither a memref nor "
                        "an index"
                    )
                nm = fp.bind(a, const=i not in written)
                q = "" if i in written else "const "
                rq = "" if i in shared else "restrict "
                params.append(f"{q}{ctype(a.type.element_type)} *{rq}{nm}")
            if f.sym_name.data in self.faulting:
                params.append("af_fault *af_f")
            w.append(f"static void {name}({', '.join(params)}) {{")
            w.append("  (void)af_w;")
            w.append("  (void)af_s;")
            w.append("  (void)af_sb;")
        body_at = len(w)
        fp.block(f.body.block, 1)
        if not epilogue:
            # an argument the printed body never names (no uses, or uses that print nothing:
            # Add(x, x) of a run-time size reads its one operand through one of the two)
            body = "\n".join(w[body_at:])
            unused = [n for a in args if not re.search(rf"\b{(n := fp.names[a])}\b", body)]
            w[body_at:body_at] = [f"  (void){n};" for n in unused]
        w.append("}")
        w.append("")
        # An epilogue works on a piece of C still in L1; exp/erf/tanh loops are arithmetic:
        # both gain from 64-byte vectors (afrt.h's AFRT_WIDE_VEC, empty where it cannot apply).
        if epilogue or fp.transcendental:
            w[head] = w[head].replace("static void ", "static AFRT_WIDE_VEC void ", 1)

    def _main(self, main: func.FuncOp) -> None:
        io = _io(main)
        ins = [a for a in io if a.role == "input"]
        outs = [a for a in io if a.role == "output"]
        syms = [a.name for a in io if a.role == "symbol"]
        ranges = symbol_ranges(self.module)
        if syms != list(ranges):
            raise CPrintError(
                f"c target: @main's symbol arguments ({', '.join(syms) or 'none'}) are not the "
                f"module's nn.symbols ({', '.join(ranges) or 'none'}) in order"
            )
        self.symbols = {}
        for s_ in syms:
            lo, hi = ranges[s_]
            if hi is None:
                raise CPrintError(f"c target: symbol {s_} has no upper bound: declare a range")
            self.symbols[s_] = (lo, hi)
        fp = _FuncPrinter(self, main, in_main=True)
        w = self.lines
        allocs = [op for op in main.body.block.ops if isinstance(op, memref.AllocOp)]
        nbuf = len(allocs)
        w.append("struct af_model {")
        w.append("  unsigned char *weights;")
        w.append("  void *scratch; /* conv im2col scratch shared by the kernels of one run */")
        w.append("  size_t scratch_bytes;")
        w.append(f"  void *bufs[{max(1, nbuf)}];")
        w.append("};")
        w.append("")
        sizes = [str(_bytes(a.memref.type)) for a in allocs] or ["0"]
        w.append(f"static const size_t af_buf_bytes[{max(1, nbuf)}] = {{{', '.join(sizes)}}};")
        w.append("")
        self._profile_tables(main)
        fault = ", af_fault *af_f" if "main" in self.faulting else ""
        sym = "const int64_t *af_sym, " if syms else ""
        w.append(
            f"static void af_graph(af_model *m, {sym}const void *const *in, void *const *out"
            f"{fault}) {{"
        )
        w.append("  (void)m;")
        w.append("  (void)in;")
        w.append("  (void)out;")
        ii = oi = si = 0
        for a, arg in zip(main.body.block.args, io):
            role, t = arg.role, arg.type
            if role == "symbol":  # checked against its range by af_run_sym
                nm = fp.bind(a)
                w.append(f"  const int64_t {nm} = af_sym[{si}]; /* {c_comment(arg.name)} */")
                si += 1
            elif role == "input":
                assert isinstance(t, MemRefType)
                nm = fp.bind(a, const=True)
                w.append(
                    f"  const {ctype(t.element_type)} *{nm} = (const {ctype(t.element_type)} "
                    f"*)in[{ii}];"
                )
                ii += 1
            else:
                assert isinstance(t, MemRefType)
                nm = fp.bind(a)
                w.append(f"  {ctype(t.element_type)} *{nm} = ({ctype(t.element_type)} *)out[{oi}];")
                oi += 1
            # (also where every use is dead, e.g. a view of an empty input nothing copies)
            w.append(f"  (void){nm};")
        fp.alloc_index = {a.memref: k for k, a in enumerate(allocs)}
        # Returning right after a faulting call is safe when @main frees nothing itself.
        fp.return_on_fault = not any(isinstance(o, memref.DeallocOp) for o in main.walk())
        fp.block(main.body.block, 1)
        w.append("}")
        w.append("")
        w.append("static size_t af_scratch_bytes(void) {")
        w.append("  size_t n = 0;")
        for p in self.conv_params:
            w.append(f"  {{ const afrt_conv_params p_ = {{{p}}};")
            w.append("    const size_t s_ = afrt_conv2d_scratch_bytes(&p_);")
            w.append("    if (s_ > n) n = s_; }")
        w.append("  return n;")
        w.append("}")
        w.append("")
        self._api(ins, outs)

    def _profile_tables(self, main: func.FuncOp) -> None:
        """Counters for af_profile_*: one slot per kernel call of @main, with the kernel's C
        name, pattern and ONNX origins; AF_PROF_CALL times a call when profiling is on."""
        calls = [op for op in main.walk() if isinstance(op, func.CallOp)]
        self.prof_slot = {op: i for i, op in enumerate(calls)}
        n = max(1, len(calls))
        names, pats, origs = [], [], []
        for op in calls:
            callee = op.callee.string_value()
            pat, orig = self.kernel_info.get(callee, ("", ""))
            names.append(c_string(self.sym[callee]))
            pats.append(c_string(pat))
            origs.append(c_string(orig))
        w = self.lines
        w.append(f"#define AF_NPROF {len(calls)}")
        for table, items in (("kernel", names), ("pattern", pats), ("origins", origs)):
            init = ", ".join(items) or "NULL"
            w.append(f"static const char *const af_prof_{table}[{n}] = {{{init}}};")
        w.extend(_PROFILE.format(n=n).splitlines())
        w.append("")

    def _api(self, ins: list[_Arg], outs: list[_Arg]) -> None:
        w = self.lines
        for kind, items in (("input", ins), ("output", outs)):
            n = len(items)
            names = ", ".join(c_string(a.name) for a in items) or "NULL"
            ranks = ", ".join(str(len(a.dims)) for a in items) or "0"
            dts = ", ".join(str(dtypes.to_onnx_elem(_elem(a.type))) for a in items) or "0"
            for i, a in enumerate(items):
                # -1 where the dim is symbolic (af_*_shape_at gives its size for a run)
                dims = ", ".join(
                    f"INT64_C({d})" if isinstance(d, int) else "INT64_C(-1)" for d in a.dims
                )
                w.append(
                    f"static const int64_t af_{kind}_shape_{i}[] = {{{dims or 'INT64_C(0)'}}};"
                )
            shp = ", ".join(f"af_{kind}_shape_{i}" for i in range(n)) or "NULL"
            w.append(f"static const char *const af_{kind}_names[{max(1, n)}] = {{{names}}};")
            w.append(f"static const int af_{kind}_ranks[{max(1, n)}] = {{{ranks}}};")
            w.append(f"static const int af_{kind}_dtypes[{max(1, n)}] = {{{dts}}};")
            w.append(f"static const int64_t *const af_{kind}_shapes[{max(1, n)}] = {{{shp}}};")
            w.append(f"int af_num_{kind}s(void) {{ return {n}; }}")
            w.append(
                f"const char *af_{kind}_name(int i) {{ return i >= 0 && i < {n} ? "
                f"af_{kind}_names[i] : NULL; }}"
            )
            w.append(
                f"int af_{kind}_rank(int i) {{ return i >= 0 && i < {n} ? af_{kind}_ranks[i] : -1; "
                "}"
            )
            w.append(
                f"const int64_t *af_{kind}_shape(int i) {{ return i >= 0 && i < {n} ? "
                f"af_{kind}_shapes[i] : NULL; }}"
            )
            w.append(
                f"int af_{kind}_dtype(int i) {{ return i >= 0 && i < {n} ? af_{kind}_dtypes[i] : "
                "-1; }"
            )
            w.append("")
        self._symbols_api(ins, outs)
        w.extend(_API_TAIL.splitlines())
        self._run()
        self._run_batch(ins, outs)

    def _symbols_api(self, ins: list[_Arg], outs: list[_Arg]) -> None:
        """The size symbols' part of model.h: names and ranges, which dim is which symbol,
        and each input's and output's sizes for given symbol values (``symbolic.to_c``)."""
        w = self.lines
        syms = list(self.symbols)
        n = len(syms)
        k = max(1, n)
        names = ", ".join(c_string(s_) for s_ in syms) or "NULL"
        lo = ", ".join(f"INT64_C({self.symbols[s_][0]})" for s_ in syms) or "0"
        hi = ", ".join(f"INT64_C({self.symbols[s_][1]})" for s_ in syms) or "0"
        w.append(f"#define AF_NSYM {n}")
        w.append(f"static const char *const af_symbol_names_[{k}] = {{{names}}};")
        w.append(f"static const int64_t af_symbol_min_[{k}] = {{{lo}}};")
        w.append(f"static const int64_t af_symbol_max_[{k}] = {{{hi}}};")
        w.append(f"int af_num_symbols(void) {{ return {n}; }}")
        w.append(
            f"const char *af_symbol_name(int i) {{ return i >= 0 && i < {n} ? "
            "af_symbol_names_[i] : NULL; }"
        )
        w.append(
            f"int64_t af_symbol_min(int i) {{ return i >= 0 && i < {n} ? af_symbol_min_[i] : -1; }}"
        )
        w.append(
            f"int64_t af_symbol_max(int i) {{ return i >= 0 && i < {n} ? af_symbol_max_[i] : -1; }}"
        )
        index = {s_: j for j, s_ in enumerate(syms)}

        def alone(d: int) -> int:
            """The symbol's index when the dim is exactly one symbol, else -1."""
            if isinstance(d, int):
                return -1
            (mono, coef), *rest = d.terms  # type: ignore[attr-defined]
            return index[mono[0]] if not rest and coef == 1 and len(mono) == 1 else -1

        def var(name: str) -> str:
            if name not in index:
                raise CPrintError(f"c target: size symbol {name} is not one of nn.symbols")
            return f"s[{index[name]}]"

        for kind, items in (("input", ins), ("output", outs)):
            m = len(items)
            rows = [", ".join(str(alone(d)) for d in a.dims) or "-1" for a in items]
            for i, row in enumerate(rows):
                w.append(f"static const int af_{kind}_dim_symbol_{i}[] = {{{row}}};")
            tab = ", ".join(f"af_{kind}_dim_symbol_{i}" for i in range(m)) or "NULL"
            w.append(f"static const int *const af_{kind}_dim_symbols_[{max(1, m)}] = {{{tab}}};")
            w.append(
                f"int af_{kind}_dim_symbol(int i, int d) {{ return i >= 0 && i < {m} && d >= 0 "
                f"&& d < af_{kind}_ranks[i] ? af_{kind}_dim_symbols_[i][d] : -1; }}"
            )
            w.append(f"int af_{kind}_shape_at(int i, const int64_t *s, int64_t *dims) {{")
            w.append("  if (!dims || (AF_NSYM && !s)) return -1;")
            w.append("  (void)s;")
            w.append("  switch (i) {")
            for i, a in enumerate(items):
                sets = " ".join(
                    f"dims[{j}] = {symbolic.to_c(d, var)};" for j, d in enumerate(a.dims)
                )
                w.append(f"  case {i}: {sets} return 0;".replace("  return", " return"))
            w.append("  default: return -1;")
            w.append("  }")
            w.append("}")
        w.append("")

    def _run(self) -> None:
        """``af_run_sym`` and ``af_run``: check the symbols against their ranges, run the
        graph; a kernel out of memory (``afrt_nomem_kernel``) becomes ``AF_ERR_NOMEM``
        (first: bad data after it may fault too), a recorded index fault ``AF_ERR_INDEX``, a
        zero integer divisor ``AF_ERR_DIVZERO``. ``af_run`` of a symbolic library is refused
        (it has no sizes)."""
        w = self.lines
        sym = "sym, " if self.symbols else ""
        w.append(
            "static int af_run_impl_(const char *fn, af_model *m, const int64_t *sym, "
            "const void *const *inputs, void *const *outputs) {"
        )
        w.append("  if (!m || !inputs || !outputs || (AF_NSYM && !sym)) {")
        w.append('    snprintf(af_error, sizeof af_error, "%s: NULL argument", fn);')
        w.append("    return AF_ERR_ARGUMENT;")
        w.append("  }")
        w.append("  for (int k = 0; k < AF_NSYM; ++k)")
        w.append("    if (sym[k] < af_symbol_min_[k] || sym[k] > af_symbol_max_[k]) {")
        w.append(
            '      snprintf(af_error, sizeof af_error, "%s: symbol %s = %lld is outside its '
            'range %lld..%lld",'
        )
        w.append(
            "               fn, af_symbol_names_[k], (long long)sym[k], "
            "(long long)af_symbol_min_[k],"
        )
        w.append("               (long long)af_symbol_max_[k]);")
        w.append("      return AF_ERR_ARGUMENT;")
        w.append("    }")
        w.append("  (void)sym;")
        w.append("  af_error[0] = 0;")
        w.append("  afrt_nomem_clear();")
        w.append("  af_nomem_call_ = -1;")
        faulting = "main" in self.faulting
        if faulting:
            sites = ", ".join(c_string(s_) for s_ in self.guard_sites)
            n = len(self.guard_sites)
            w.append(f"  static const char *const af_guard_sites[{n}] = {{{sites}}};")
            w.append("  af_fault f = {0, 0, 0, 0, 0};")
            w.append(f"  af_graph(m, {sym}inputs, outputs, &f);")
        else:
            w.append(f"  af_graph(m, {sym}inputs, outputs);")
        w.append("  if (afrt_nomem_kernel()) return af_nomem_error_();")
        if not faulting:
            w.append("  return 0;")
            w.append("}")
        else:
            w.append("  if (!f.bad) return 0;")
            w.append("  if (f.kind != AF_FAULT_INDEX) {")
            w.append(
                '    snprintf(af_error, sizeof af_error, "%s: integer %s by zero",'
                ' af_guard_sites[f.site], f.kind == AF_FAULT_MODZERO ? "modulo" : "division");'
            )
            w.append("    return AF_ERR_DIVZERO;")
            w.append("  }")
            w.append(
                '  snprintf(af_error, sizeof af_error, "%s: index %lld is out of range '
                '[%lld, %lld]",'
            )
            w.append("           af_guard_sites[f.site], (long long)f.value, -(long long)f.dim,")
            w.append("           (long long)f.dim - 1);")
            w.append("  return AF_ERR_INDEX;")
            w.append("}")
        w.append(
            "int af_run_sym(af_model *m, const int64_t *symbols, const void *const *inputs, "
            "void *const *outputs) {"
        )
        w.append('  return af_run_impl_("af_run_sym", m, symbols, inputs, outputs);')
        w.append("}")
        w.append("int af_run(af_model *m, const void *const *inputs, void *const *outputs) {")
        if self.symbols:
            names = ", ".join(self.symbols)
            w.append(
                '  snprintf(af_error, sizeof af_error, "af_run: this library takes run-time '
                f'sizes ({c_comment(names)}): call af_run_sym with their values");'
            )
            w.append("  (void)m;")
            w.append("  (void)inputs;")
            w.append("  (void)outputs;")
            w.append("  return AF_ERR_ARGUMENT;")
        else:
            w.append('  return af_run_impl_("af_run", m, NULL, inputs, outputs);')
        w.append("}")

    def _run_batch(self, ins: list[_Arg], outs: list[_Arg]) -> None:
        """``af_run_batch``: the graph once per sample (docs/dynamic.md, "Run-time batch").
        The module's ``c.batch`` (a batch-separable model compiled at batch 1) names the
        symbol, its range and the inputs/outputs that carry it in dim 0; without it the
        library has a fixed batch, and ``af_run_batch`` takes batch 1 only."""
        plan = module_batch(self.module)
        sym, lo, hi, bin_, bout = "", 1, 1, set[str](), set[str]()
        if plan is not None:
            sym, lo, hi = plan.symbol, plan.lo, plan.hi
            bin_, bout = set(plan.inputs), set(plan.outputs)
        w = self.lines
        w.append("")
        w.append(f"const char *af_batch_symbol(void) {{ return {c_string(sym)}; }}")
        w.append(f"int64_t af_batch_min(void) {{ return INT64_C({lo}); }}")
        w.append(f"int64_t af_batch_max(void) {{ return INT64_C({hi}); }}")
        for kind, items, marked in (("input", ins, bin_), ("output", outs, bout)):
            n = len(items)
            flags = ", ".join("1" if a.name in marked else "0" for a in items) or "0"
            step = ", ".join(str(_bytes(a.type) if a.name in marked else 0) for a in items) or "0"
            w.append(f"static const int af_{kind}_batched_[{max(1, n)}] = {{{flags}}};")
            w.append(f"static const size_t af_{kind}_step_[{max(1, n)}] = {{{step}}};")
            w.append(
                f"int af_{kind}_batched(int i) {{ return i >= 0 && i < {n} ? "
                f"af_{kind}_batched_[i] : 0; }}"
            )
        ni, no = max(1, len(ins)), max(1, len(outs))
        w.extend(
            f"""\
int af_run_batch(af_model *m, int64_t batch, const void *const *inputs, void *const *outputs) {{
  if (!m || !inputs || !outputs) {{
    snprintf(af_error, sizeof af_error, "af_run_batch: NULL argument");
    return AF_ERR_ARGUMENT;
  }}
  if (batch < af_batch_min() || batch > af_batch_max()) {{
    snprintf(af_error, sizeof af_error,
             "af_run_batch: batch %lld is outside the range %lld..%lld%s%s", (long long)batch,
             (long long)af_batch_min(), (long long)af_batch_max(),
             af_batch_symbol()[0] ? " of symbol " : " (this library has a fixed batch)",
             af_batch_symbol());
    return AF_ERR_ARGUMENT;
  }}
  const void *in_[{ni}] = {{0}};
  void *out_[{no}] = {{0}};
  for (int64_t b = 0; b < batch; ++b) {{
    for (int i = 0; i < {len(ins)}; ++i)
      in_[i] = (const unsigned char *)inputs[i] + (size_t)b * af_input_step_[i];
    for (int i = 0; i < {len(outs)}; ++i)
      out_[i] = (unsigned char *)outputs[i] + (size_t)b * af_output_step_[i];
    const int rc = af_run(m, in_, out_);
    if (rc) {{
      char why[sizeof af_error];
      memcpy(why, af_error, sizeof why);
      snprintf(af_error, sizeof af_error, "sample %lld of %lld: %.400s", (long long)b,
               (long long)batch, why);
      return rc;
    }}
  }}
  return 0;
}}""".splitlines()
        )


def _elem(t: Attribute) -> Attribute:
    assert isinstance(t, MemRefType)
    return t.element_type


def _bytes(t: Attribute) -> int:
    """The bytes of a static buffer type. A ``?`` dim has no size the printer knows: the
    lowering gives every allocation and copy a static type (storage at the upper bounds)."""
    assert isinstance(t, MemRefType)
    n = 1
    for d in t.get_shape():
        if d < 0:
            raise CPrintError(
                f"c target: the byte size of {t} is needed, but it has a run-time ('?') dim "
                "(allocations and copies must have static types)"
            )
        n *= d
    elem_t = t.element_type
    size = (
        1
        if isinstance(elem_t, IntegerType) and elem_t.width.data <= 8
        else (dtypes.to_numpy_dtype(elem_t).itemsize)
    )
    return n * size


_HELPERS = r"""
/* Float sums are vectorised with an OpenMP SIMD reduction (a fixed, deterministic order). */
#ifdef _OPENMP
#define AF_PRAGMA_(x) _Pragma(#x)
#define AF_SIMD_SUM(v) AF_PRAGMA_(omp simd reduction(+ : v))
#define AF_SIMD AF_PRAGMA_(omp simd)
#else
#define AF_SIMD_SUM(v)
#define AF_SIMD
#endif
static inline void *af_alloc_tmp(size_t bytes) {
  return aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
}

/* Copies out of constants go through a call the compiler cannot look into: gcc 12 at -O3
   -march=native expands memcpy of a small static const array into wrong vector stores
   ({1, 1, 0, 0, 0, 0} stored as {1, 1, 1, 1, 0, 0}; found by the differential fuzzer). */
#if defined(__GNUC__) && !defined(__clang__)
#define AF_OPAQUE_ __attribute__((noipa, unused))
#else
#define AF_OPAQUE_ __attribute__((noinline, unused))
#endif
AF_OPAQUE_ static void af_copy_const_(void *restrict dst, const void *restrict src, size_t n) {
  memcpy(dst, src, n);
}

static inline int64_t af_ipow(int64_t base, int64_t exp) {
  int64_t r = 1;
  if (exp < 0) return base == 1 ? 1 : (base == -1 ? (exp % 2 ? -1 : 1) : 0);
  while (exp) {
    if (exp & 1) r *= base;
    base *= base;
    exp >>= 1;
  }
  return r;
}"""

# Per-kernel profiling (af_profile_* in model.h): off unless af_profile_enable(1) (wall
# time) or af_profile_enable(2) (the calling thread's on-CPU time, Linux); the counters belong
# to the library, shared by every model created from it.
_PROFILE = r"""static double af_prof_seconds_[{n}];
static long long af_prof_calls_[{n}];
static int af_prof_on_;
#if defined(__linux__)
/* <time.h> hides clock_gettime in strict ISO C modes; Linux's declaration and clock id */
int clock_gettime(int clock_id, struct timespec *tp);
#define AF_THREAD_CPUTIME_ 3 /* CLOCK_THREAD_CPUTIME_ID */
#endif
static inline double af_now_(void) {{
#if defined(__linux__)
  if (af_prof_on_ == 2) {{ /* the calling thread's on-CPU time */
    struct timespec ts;
    clock_gettime(AF_THREAD_CPUTIME_, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
  }}
#endif
#ifdef _OPENMP
  return omp_get_wtime();
#else
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#endif
}}
#define AF_PROF_CALL(i, call)                         \
  do {{                                                \
    if (af_prof_on_) {{                                \
      const double t0_ = af_now_();                   \
      call;                                           \
      af_prof_seconds_[i] += af_now_() - t0_;         \
      ++af_prof_calls_[i];                            \
    }} else {{                                          \
      call;                                           \
    }}                                                 \
    if (af_nomem_call_ < 0 && afrt_nomem_kernel())    \
      af_nomem_call_ = (i);                           \
  }} while (0)

/* The first kernel call of this thread's run that ran out of memory (-1: none); af_run
 * names it, with its ONNX origins, in af_last_error(). */
static _Thread_local int af_nomem_call_ = -1;"""

_API_TAIL = r"""
/* per thread: af_last_error() reports the last failure of a call on the calling thread */
static _Thread_local char af_error[512];

/* 0: off, 1: wall time, 2: the calling thread's on-CPU time (Linux; elsewhere wall time) */
void af_profile_enable(int on) {
#if defined(__linux__)
  af_prof_on_ = on == 2 ? 2 : on != 0;
#else
  af_prof_on_ = on != 0;
#endif
}
void af_profile_reset(void) {
  memset(af_prof_seconds_, 0, sizeof af_prof_seconds_);
  memset(af_prof_calls_, 0, sizeof af_prof_calls_);
}
int af_profile_count(void) { return AF_NPROF; }
const char *af_profile_kernel(int i) { return i >= 0 && i < AF_NPROF ? af_prof_kernel[i] : NULL; }
const char *af_profile_pattern(int i) { return i >= 0 && i < AF_NPROF ? af_prof_pattern[i] : NULL; }
const char *af_profile_origins(int i) { return i >= 0 && i < AF_NPROF ? af_prof_origins[i] : NULL; }
double af_profile_seconds(int i) { return i >= 0 && i < AF_NPROF ? af_prof_seconds_[i] : 0.0; }
long long af_profile_calls(int i) { return i >= 0 && i < AF_NPROF ? af_prof_calls_[i] : 0; }

const char *af_last_error(void) { return af_error; }

/* AF_ERR_NOMEM with a message naming the afrt kernel that ran short and the generated kernel
 * (and its ONNX nodes) that called it. */
__attribute__((cold, noinline)) static int af_nomem_error_(void) {
  const int i = af_nomem_call_;
  if (i >= 0 && i < AF_NPROF)
    snprintf(af_error, sizeof af_error, "out of memory in %s (kernel %s: %s)", afrt_nomem_kernel(),
             af_prof_kernel[i], af_prof_origins[i][0] ? af_prof_origins[i] : "no ONNX node");
  else
    snprintf(af_error, sizeof af_error, "out of memory in %s", afrt_nomem_kernel());
  return AF_ERR_NOMEM;
}

/* zeroed; big buffers (weights, arena) in huge pages where the OS offers them */
static void *af_aligned_alloc(size_t bytes) {
  size_t n = (bytes + 63) / 64 * 64;
  void *p = afrt_alloc_big_(n ? n : 64);
  if (p) memset(p, 0, n ? n : 64);
  return p;
}

void af_destroy(af_model *m) {
  if (!m) return;
  for (size_t i = 0; i < sizeof(m->bufs) / sizeof(m->bufs[0]); ++i) free(m->bufs[i]);
  free(m->scratch);
  if (m->weights) afrt_unregister_constant_region(m->weights);
  free(m->weights);
  free(m);
}

/* autofusion-compile --threads N bakes N in by defining AF_DEFAULT_THREADS first; 0: all cores */
#ifndef AF_DEFAULT_THREADS
#define AF_DEFAULT_THREADS 0
#endif
int af_default_threads(void) { return AF_DEFAULT_THREADS; }
int af_num_threads(void) { return afrt_get_num_threads(); }
int af_threads_active(void) { return afrt_threads_active(); }
void af_set_thread_lag_us(double microseconds) { afrt_set_thread_lag_us(microseconds); }

af_model *af_create(const char *weights_path, int num_threads) {
  af_error[0] = 0;
  afrt_set_num_threads(num_threads > 0 ? num_threads : AF_DEFAULT_THREADS);
  af_model *m = (af_model *)calloc(1, sizeof(af_model));
  if (!m) { snprintf(af_error, sizeof af_error, "out of memory"); return NULL; }
  m->weights = (unsigned char *)af_aligned_alloc(AF_WEIGHTS_BYTES);
  if (!m->weights) { snprintf(af_error, sizeof af_error, "out of memory"); af_destroy(m); return NULL; }
  FILE *f = weights_path ? fopen(weights_path, "rb") : NULL;
  if (!f) {
    snprintf(af_error, sizeof af_error, "weights.bin: cannot open %s", weights_path ? weights_path : "(null)");
    af_destroy(m);
    return NULL;
  }
  size_t got = AF_WEIGHTS_BYTES ? fread(m->weights, 1, AF_WEIGHTS_BYTES, f) : 0;
  int extra = fgetc(f) != EOF;
  fclose(f);
  if (got != AF_WEIGHTS_BYTES || extra) {
    snprintf(af_error, sizeof af_error, "weights.bin: expected %zu bytes, got %s%zu", AF_WEIGHTS_BYTES, extra ? "more than " : "", got);
    af_destroy(m);
    return NULL;
  }
  for (size_t i = 0; i < sizeof(m->bufs) / sizeof(m->bufs[0]); ++i) {
    m->bufs[i] = af_aligned_alloc(afrt_huge_round_(af_buf_bytes[i]));
    if (!m->bufs[i]) { snprintf(af_error, sizeof af_error, "out of memory"); af_destroy(m); return NULL; }
  }
  /* weights never change: afrt may cache GEMM-packed copies of them */
  afrt_register_constant_region(m->weights, AF_WEIGHTS_BYTES);
  /* Sized for this thread count; a conv that finds it too small (another af_create changed
   * the count) falls back to its own allocation. */
  m->scratch_bytes = af_scratch_bytes();
  if (m->scratch_bytes) {
    m->scratch = af_aligned_alloc(m->scratch_bytes);
    if (!m->scratch) { snprintf(af_error, sizeof af_error, "out of memory"); af_destroy(m); return NULL; }
  }
  return m;
}
"""  # noqa: E501 - the printed source keeps its own lines

# Run-time index checks (clib.guard_index), emitted when a model has any. A fault is recorded
# once per run (the first thread to fail wins; threads of a parallel loop may race) and the
# bad element reads index 0 meanwhile, so nothing leaves the buffer before af_run returns.
_GUARD = r"""
#define AF_FAULT_INDEX 0
#define AF_FAULT_DIVZERO 1
#define AF_FAULT_MODZERO 2
typedef struct af_fault {
  int bad; /* set once per run, atomically */
  int site;
  int kind; /* AF_FAULT_INDEX: value outside [-dim, dim-1]; AF_FAULT_DIV/MODZERO */
  int64_t value;
  int64_t dim;
} af_fault;

__attribute__((cold, noinline)) static void af_fault_index_(af_fault *f, int site, int64_t k,
                                                            int64_t n) {
  int expected = 0;
  if (__atomic_compare_exchange_n(&f->bad, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
    f->site = site;
    f->kind = AF_FAULT_INDEX;
    f->value = k;
    f->dim = n;
  }
}

__attribute__((cold, noinline)) static void af_fault_divzero_(af_fault *f, int site, int kind) {
  int expected = 0;
  if (__atomic_compare_exchange_n(&f->bad, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
    f->site = site;
    f->kind = kind;
  }
}

/* Integer a / b (truncating) and a % b (sign of a) that never trap (x86 raises SIGFPE for
 * b == 0 and for MIN / -1): b == 0 is a fault and yields 0; MIN / -1 wraps to MIN and
 * MIN % -1 is 0, as onnxruntime computes them for int32. Narrower types are widened by the
 * caller and their results narrowed back (wrapping). */
static inline int64_t af_sdiv_(int64_t a, int64_t b, int site, af_fault *f) {
  if (__builtin_expect(b == 0, 0)) {
    af_fault_divzero_(f, site, AF_FAULT_DIVZERO);
    return 0;
  }
  return b == -1 ? (int64_t)(UINT64_C(0) - (uint64_t)a) : a / b;
}
static inline int64_t af_srem_(int64_t a, int64_t b, int site, af_fault *f) {
  if (__builtin_expect(b == 0, 0)) {
    af_fault_divzero_(f, site, AF_FAULT_MODZERO);
    return 0;
  }
  return b == -1 ? 0 : a % b;
}
static inline uint64_t af_udiv_(uint64_t a, uint64_t b, int site, af_fault *f) {
  if (__builtin_expect(b == 0, 0)) {
    af_fault_divzero_(f, site, AF_FAULT_DIVZERO);
    return 0;
  }
  return a / b;
}
static inline uint64_t af_urem_(uint64_t a, uint64_t b, int site, af_fault *f) {
  if (__builtin_expect(b == 0, 0)) {
    af_fault_divzero_(f, site, AF_FAULT_MODZERO);
    return 0;
  }
  return a % b;
}

/* k as an index into a dim of n >= 1: negative wraps (ONNX); outside [-n, n-1] is a fault */
static inline int64_t af_guard_(int64_t k, int64_t n, int site, af_fault *f) {
  const int64_t w = k < 0 ? k + n : k;
  if (__builtin_expect((uint64_t)w >= (uint64_t)n, 0)) {
    af_fault_index_(f, site, k, n);
    return 0;
  }
  return w;
}"""


_BIN = {
    arith.AddfOp: "+",
    arith.AddiOp: "+",
    arith.SubfOp: "-",
    arith.SubiOp: "-",
    arith.MulfOp: "*",
    arith.MuliOp: "*",
    arith.DivfOp: "/",
    arith.DivSIOp: "/",
    arith.DivUIOp: "/",
    arith.RemSIOp: "%",
    arith.RemUIOp: "%",
    arith.AndIOp: "&",
    arith.OrIOp: "|",
    arith.XOrIOp: "^",
}
_CMPF = {0: "false", 1: "==", 2: ">", 3: ">=", 4: "<", 5: "<=", 13: "!=", 15: "true"}
_CMPI = {0: "==", 1: "!=", 2: "<", 3: "<=", 4: ">", 5: ">=", 6: "<", 7: "<=", 8: ">", 9: ">="}
_MATH1 = {
    math.ExpOp: "exp",
    math.LogOp: "log",
    math.TanhOp: "tanh",
    math.ErfOp: "erf",
    math.SqrtOp: "sqrt",
    math.SinOp: "sin",
    math.CosOp: "cos",
    math.FloorOp: "floor",
    math.CeilOp: "ceil",
    math.RoundEvenOp: "nearbyint",
    math.AbsFOp: "fabs",
    math.TruncOp: "trunc",
    math.ExpM1Op: "expm1",
    math.Log1pOp: "log1p",
}
_CASTS = (
    arith.IndexCastOp,
    arith.SIToFPOp,
    arith.FPToSIOp,
    arith.ExtFOp,
    arith.TruncFOp,
    arith.ExtSIOp,
    arith.TruncIOp,
    arith.ExtUIOp,
    arith.UIToFPOp,
    arith.FPToUIOp,
    arith.BitcastOp,  # only between integers of one width (C conversion keeps the bits)
)


def _not_nan_constant(v: SSAValue) -> bool:
    """Whether v is a float ``arith.constant`` other than NaN."""
    owner = v.owner
    return (
        isinstance(owner, arith.ConstantOp)
        and isinstance(owner.value, FloatAttr)
        and not pymath.isnan(float(owner.value.value.data))
    )


def _is_float_sum(op: scf.ForOp) -> bool:
    """A loop carrying one float that it only accumulates with ``+``."""
    body = op.body.block
    if len(body.args) != 2 or not dtypes.is_float(body.args[1].type):
        return False
    y = body.last_op
    if not isinstance(y, scf.YieldOp) or len(y.arguments) != 1:
        return False
    add = y.arguments[0].owner
    acc = body.args[1]
    return (
        isinstance(add, arith.AddfOp)
        and acc in add.operands
        and all(u.operation is add for u in acc.uses)
    )


class _FuncPrinter:
    def __init__(self, top: CPrinter, f: func.FuncOp, in_main: bool = False) -> None:
        self.top = top
        self.f = f
        self.in_main = in_main
        self.local = NameTable()
        # fusion.fast_math (the ``fast_math`` config key): approximate exp/tanh/erf, afrt.h
        self.fast = "af_fast_" if FAST_MATH_ATTR in f.attributes else "af_"
        # set when the body calls af_expf / af_erff / af_tanhf: arithmetic-bound loops, which
        # the function's AFRT_WIDE_VEC vectorises with 64-byte vectors where it can (afrt.h)
        self.transcendental = False
        for r in ("af_w", "af_s", "af_sb", "m", "in", "out", "s_", "af_sym"):
            self.local.reserve(r)
        self.names: dict[SSAValue, str] = {}
        self.const_ptr: set[SSAValue] = set()
        self.alloc_index: dict[SSAValue, int] = {}
        self.return_on_fault = False
        self.heap: set[SSAValue] = set()
        # Side-effect-free ops whose results nobody uses print nothing (no unused variables).
        self.dead: set[Operation] = set()
        for op in reversed(list(f.walk())):
            pure = op.dialect_name() in ("arith", "math") or isinstance(
                op, memref.LoadOp | clib.ViewOp | memref.GetGlobalOp | clib.UnpackOp
            )
            if (
                pure
                and op.results
                and all(u.operation in self.dead for r in op.results for u in r.uses)
            ):
                self.dead.add(op)

    def bind(self, v: SSAValue, const: bool = False) -> str:
        nm = self.local.ident(f"v{len(self.names)}")
        self.names[v] = nm
        if const:
            self.const_ptr.add(v)
        return nm

    def ref(self, v: SSAValue) -> str:
        owner = v.owner
        if isinstance(owner, arith.ConstantOp):
            return self._const(owner)
        if isinstance(owner, clib.FuncRefOp):
            return self.top.sym[owner.callee.string_value()]
        if isinstance(owner, clib.ClampEpilogueOp) and v is owner.fn:
            return "afrt_epi_bias_clamp_fn" if owner.col_bias is not None else "afrt_epi_clamp_fn"
        if isinstance(owner, clib.SiluEpilogueOp) and v is owner.fn:
            return "afrt_epi_silu_fn"
        if isinstance(owner, clib.GeluEpilogueOp) and v is owner.fn:
            return "afrt_epi_gelu_fn"
        if v not in self.names:
            raise CPrintError(f"c target: value used before definition in {self.f.sym_name.data}")
        return self.names[v]

    def _const(self, op: arith.ConstantOp) -> str:
        val = op.value
        t = op.result.type
        if isinstance(val, FloatAttr):
            return float_literal(float(val.value.data), t)
        if isinstance(val, IntegerAttr):
            return int_literal(int(val.value.data), t)
        raise CPrintError("c target: arith.constant must be a scalar")

    def emit(self, depth: int, text: str) -> None:
        self.top.lines.append("  " * depth + text)

    def block(self, blk, depth: int) -> None:
        for op in blk.ops:
            self.op(op, depth)

    def _index(self, mem: SSAValue, idx: list[SSAValue]) -> str:
        t = mem.type
        assert isinstance(t, MemRefType)
        shape = list(t.get_shape())
        if any(d < 0 for d in shape[1:]):  # a stride would need a run-time size
            raise CPrintError(
                f"c target: a load/store in {self.f.sym_name.data} indexes {t}, whose strides "
                "are not static: index a flat view (clib.view to memref<?xT>) instead"
            )
        st = strides_of(shape)
        terms = []
        for i, s in zip(idx, st):
            r = self.ref(i)
            if r == "0":
                continue
            terms.append(r if s == 1 else f"{r} * {s}")
        return " + ".join(terms) or "0"

    def _ptr_decl(self, v: SSAValue, const: bool) -> tuple[str, str]:
        t = v.type
        assert isinstance(t, MemRefType)
        c = ctype(t.element_type)
        q = "const " if const else ""
        return f"{q}{c} *", f"{q}{c}"

    def op(self, op: Operation, d: int) -> None:
        if isinstance(op, arith.ConstantOp | clib.FuncRefOp) or op in self.dead:
            return
        r = self.ref
        expr = self._expr(op)
        if expr is not None:
            res = op.results[0]
            nm = self.bind(res)
            self.emit(d, f"const {ctype(res.type)} {nm} = {expr};")
            return
        match op:
            case memref.LoadOp():
                nm = self.bind(op.res)
                self.emit(
                    d,
                    f"const {ctype(op.res.type)} {nm} = "
                    f"{r(op.memref)}[{self._index(op.memref, list(op.indices))}];",
                )
            case memref.StoreOp():
                self.emit(
                    d,
                    f"{r(op.memref)}[{self._index(op.memref, list(op.indices))}] = {r(op.value)};",
                )
            case scf.ForOp():
                self._for(op, d)
            case scf.YieldOp():
                pass
            case func.ReturnOp():
                pass
            case func.CallOp():
                base = (
                    ["m->weights", "m->scratch", "m->scratch_bytes"]
                    if self.in_main
                    else ["af_w", "af_s", "af_sb"]
                )
                callee = op.callee.string_value()
                faults = callee in self.top.faulting
                args = base + [r(a) for a in op.arguments] + (["af_f"] if faults else [])
                call = f"{self.top.sym[callee]}({', '.join(args)})"
                if self.in_main and op in self.top.prof_slot:
                    self.emit(d, f"AF_PROF_CALL({self.top.prof_slot[op]}, {call});")
                else:
                    self.emit(d, f"{call};")
                if faults and self.in_main and self.return_on_fault:
                    self.emit(d, "if (__atomic_load_n(&af_f->bad, __ATOMIC_ACQUIRE)) return;")
            case clib.GuardIndexOp():
                sites = self.top.guard_sites
                site = sites.setdefault(op.site.data, len(sites))
                nm = self.bind(op.res)
                (dim,) = self._params(op, [op.dim.value.data], op.dyn)  # a run-time size: dyn
                self.emit(
                    d,
                    f"const int64_t {nm} = af_guard_((int64_t){r(op.value)}, {dim}, {site}, af_f);",
                )
            case clib.IntDivOp():
                sites = self.top.guard_sites
                site = sites.setdefault(op.site.data, len(sites))
                t = op.res.type
                assert isinstance(t, IntegerType)
                u = t.signedness.data == Signedness.UNSIGNED
                fn = ("af_u" if u else "af_s") + ("rem_" if op.rem.value.data else "div_")
                wide = "uint64_t" if u else "int64_t"
                ct = ctype(t)
                nm = self.bind(op.res)
                self.emit(
                    d,
                    f"const {ct} {nm} = ({ct}){fn}(({wide}){r(op.lhs)}, ({wide}){r(op.rhs)}, "
                    f"{site}, af_f);",
                )
            case memref.AllocOp():
                decl, _ = self._ptr_decl(op.memref, False)
                nm = self.bind(op.memref)
                if op.memref in self.alloc_index:
                    self.emit(d, f"{decl}{nm} = ({decl})m->bufs[{self.alloc_index[op.memref]}];")
                else:
                    self.emit(d, f"{decl}{nm} = ({decl})af_alloc_tmp({_bytes(op.memref.type)});")
                    self.heap.add(op.memref)
            case memref.DeallocOp():
                self.emit(d, f"free({r(op.memref)});")
            case memref.GetGlobalOp():
                sym = self.top.sym[op.name_.string_value()]
                decl, _ = self._ptr_decl(op.memref, True)
                nm = self.bind(op.memref, const=True)
                base = "m->weights" if self.in_main else "af_w"
                if sym in self.top.literal_globals:
                    self.emit(d, f"{decl}{nm} = {sym};")
                else:
                    self.emit(d, f"{decl}{nm} = ({decl})({base} + {self.top.global_off[sym]});")
            case clib.ViewOp():
                const = op.source in self.const_ptr
                decl, _ = self._ptr_decl(op.res, const)
                nm = self.bind(op.res, const=const)
                off = op.offset.value.data
                cq = "const " if const else ""
                src = r(op.source) if off == 0 else f"({cq}unsigned char *){r(op.source)} + {off}"
                self.emit(d, f"{decl}{nm} = ({decl})({src});")
            case memref.CopyOp():
                # a constant source is copied opaquely (see af_copy_const_ in the prelude)
                fn = "af_copy_const_" if op.source in self.const_ptr else "memcpy"
                self.emit(
                    d, f"{fn}({r(op.destination)}, {r(op.source)}, {_bytes(op.source.type)});"
                )
            case clib.PackOp():
                nm = self.bind(op.res)
                # an index value (a run-time size an epilogue needs) travels as an integer
                vals = ", ".join(
                    f"(void *)(intptr_t){r(v)}"
                    if isinstance(v.type, IndexType)
                    else f"(void *){r(v)}"
                    for v in op.values
                )
                self.emit(d, f"void *const {nm}[] = {{{vals}}};")
            case clib.ClampEpilogueOp():
                nm = self.bind(op.ctx)
                res = r(op.residual) if op.residual is not None else "NULL"
                lo, hi = (_clamp_literal(a.value.data) for a in (op.lo, op.hi))
                stride, ld = self._params(
                    op, [op.res_stride.value.data, op.res_ld.value.data], op.dyn
                )
                fields = f"{res}, {stride}, {ld}, {lo}, {hi}"
                if op.col_bias is None:
                    self.emit(d, f"afrt_epi_clamp {nm}[1] = {{{{{fields}}}}};")
                else:
                    cb = r(op.col_bias)
                    self.emit(d, f"afrt_epi_bias_clamp {nm}[1] = {{{{{{{fields}}}, {cb}}}}};")
            case clib.SiluEpilogueOp():
                nm = self.bind(op.ctx)
                self.emit(d, f"afrt_epi_silu {nm}[1] = {{{{{int(op.gate.value.data != 0)}}}}};")
            case clib.GeluEpilogueOp():
                nm = self.bind(op.ctx)
                cb = r(op.col_bias) if op.col_bias is not None else "NULL"
                self.emit(d, f"afrt_epi_gelu {nm}[1] = {{{{{cb}}}}};")
            case clib.UnpackOp() if isinstance(op.res.type, IndexType):
                nm = self.bind(op.res)
                self.emit(
                    d,
                    f"const int64_t {nm} = (int64_t)(intptr_t)((void *const *){r(op.ctx)})"
                    f"[{op.index.value.data}];",
                )
            case clib.UnpackOp():
                decl, _ = self._ptr_decl(op.res, False)
                nm = self.bind(op.res)
                # Context buffers never overlap the output block being written.
                self.emit(
                    d,
                    f"{decl}restrict {nm} = ({decl})((void *const "
                    f"*){r(op.ctx)})[{op.index.value.data}];",
                )
            case clib.Conv2DOp():
                p = ", ".join(self._params(op, op.param_values(), op.dyn))
                # af_scratch_bytes sizes the shared scratch from the params at their upper
                # bounds (a call it is too small for passes NULL: its thread's own scratch)
                pb = ", ".join(f"INT64_C({v})" for v in op.bound_values())
                bias = r(op.bias) if op.bias is not None else "NULL"
                epi = self._epi(op.epilogue, op.ctx)
                args = f"{r(op.x)}, {r(op.w)}, {bias}, {r(op.y)}, &p_"
                self.emit(d, f"{{ const afrt_conv_params p_ = {{{p}}};")
                direct = {
                    "direct_dw": "afrt_dwconv2d_f32",
                    "direct_dw_lanes": "afrt_dwconv2d_f32",  # the same rule inside
                    "direct_smallc": "afrt_dconv_smallc_f32",
                    "winograd": "afrt_winograd_f32",
                    "direct_nchwc": "afrt_nchwc_f32",
                    "direct_1x1": "afrt_conv1x1d_f32",
                }
                if (lp := op.lp()) is not None:  # 16-bit core: w stored 16-bit or cast
                    self.top.conv_params.setdefault(pb, None)
                    self.emit(
                        d, "  void *s_ = afrt_conv2d_scratch_bytes(&p_) <= af_sb ? af_s : NULL;"
                    )
                    w16 = int(op.is_stored("w"))
                    self.emit(
                        d,
                        f"  afrt_conv2d_lp({clib.LP_KINDS[lp]}, {r(op.x)}, {r(op.w)}, {w16}, "
                        f"{bias}, {r(op.y)}, &p_, s_, {epi}); }}",
                    )
                elif op.algo.data == "gemm_1x1_b":
                    # assign-layout's expand conv writing NCHW16c for a blocked conv chain
                    self.emit(d, f"  if (!afrt_conv1x1b_f32({args}, {epi}))")
                    self.emit(d, f"    afrt_nchwc_naive_f32({args}, {epi}, 2); }}")
                elif op.algo.data == "gemm_1x1_xb":
                    # assign-layout's 1x1 conv reading NCHW16c x into NCHW y
                    self.emit(d, f"  if (!afrt_conv1x1xb_f32({args}, {epi}))")
                    self.emit(d, f"    afrt_nchwc_naive_f32({args}, {epi}, 1); }}")
                elif (q := op.pool_values()) is not None:
                    # fuse-conv-pool's stem and max pool: y is the pool's output
                    self.emit(d, f"  const afrt_pool_params q_ = {{{', '.join(map(str, q))}}};")
                    self.emit(d, f"  afrt_convpool_nc_f32({args}, &q_, {epi}); }}")
                elif op.algo.data == "direct_smallc_b":
                    # assign-layout's stem writing NCHW16c from the NCHW image
                    self.emit(d, f"  if (!afrt_dconv_smallcb_f32({args}, {epi}))")
                    self.emit(d, f"    afrt_nchwc_naive_f32({args}, {epi}, 2); }}")
                elif op.algo.data == "direct_1x1_b":
                    # assign-layout's 1x1 conv into NCHW16c from either layout
                    flags = op.blocked_flags()
                    self.emit(d, f"  if (!afrt_conv1x1nb_f32({args}, {epi}, {flags}))")
                    self.emit(d, f"    afrt_nchwc_naive_f32({args}, {epi}, {flags}); }}")
                elif flags := op.blocked_flags():
                    # assign-layout's blocked x and/or y: only the blocked kernels know them
                    self.emit(d, f"  if (!afrt_nchwc_ex_f32({args}, {epi}, {flags}))")
                    self.emit(d, f"    afrt_nchwc_naive_f32({args}, {epi}, {flags}); }}")
                elif op.algo.data in direct:
                    # needs no scratch; afrt_conv2d_f32 only if it is out of memory
                    self.emit(d, f"  if (!{direct[op.algo.data]}({args}, {epi}))")
                    self.emit(d, f"    afrt_conv2d_f32({args}, NULL, {epi}); }}")
                else:
                    self.top.conv_params.setdefault(pb, None)
                    self.emit(
                        d, "  void *s_ = afrt_conv2d_scratch_bytes(&p_) <= af_sb ? af_s : NULL;"
                    )
                    self.emit(d, f"  afrt_conv2d_f32({args}, s_, {epi}); }}")
            case clib.Conv3DOp():
                p = ", ".join(self._params(op, op.param_values(), op.dyn))
                bias = r(op.bias) if op.bias is not None else "NULL"
                epi = self._epi(op.epilogue, op.ctx)
                self.emit(d, f"{{ const afrt_conv3d_params p_ = {{{p}}};")
                self.emit(
                    d, f"  afrt_conv3d_f32({r(op.x)}, {r(op.w)}, {bias}, {r(op.y)}, &p_, {epi}); }}"
                )
            case clib.ConvPairOp():
                # fuse-conv-pair: two 1x1 convs added, one GEMM over both inputs
                bias, bias2 = self._two_conv_params(d, op)
                self.emit(
                    d,
                    f"  afrt_conv1x1_pair_f32({r(op.x)}, {r(op.x2)}, {r(op.w)}, {bias}, "
                    f"{r(op.w2)}, {bias2}, {r(op.y)}, &p_, &p2_, "
                    f"{self._epi(op.epilogue, op.ctx)}); }}",
                )
            case clib.PwChainOp():
                # fuse-pw-chain: two 1x1 convs, the second on the first's output, in column blocks
                bias, bias2 = self._two_conv_params(d, op)
                self.emit(
                    d,
                    f"  afrt_conv1x1_chain_f32({r(op.x)}, {r(op.w)}, {bias}, {r(op.y)}, &p_, "
                    f"{self._epi(op.epilogue, op.ctx)}, {r(op.w2)}, {bias2}, {r(op.y2)}, &p2_, "
                    f"{self._epi(op.epilogue2, op.ctx2)}); }}",
                )
            case clib.DwPwOp():
                both = self._params(op, [*op.param_values(), *op.pw_values()], op.dyn)
                pd = ", ".join(both[: len(clib.CONV_FIELDS)])
                pp = ", ".join(both[len(clib.CONV_FIELDS) :])
                bd = r(op.bd) if op.bd is not None else "NULL"
                bp = r(op.bp) if op.bp is not None else "NULL"
                lo, hi = (_clamp_literal(a.value.data) for a in (op.lo, op.hi))
                self.emit(d, f"{{ const afrt_conv_params pd_ = {{{pd}}};")
                self.emit(d, f"  const afrt_conv_params pp_ = {{{pp}}};")
                ex = op.ex_values()
                if ex is not None and op.we is not None:
                    be = r(op.be) if op.be is not None else "NULL"
                    elo, ehi = (_clamp_literal(v) for v in op.ex_clamp())
                    pe = ", ".join(f"INT64_C({v})" for v in ex)
                    self.emit(d, f"  const afrt_conv_params pe_ = {{{pe}}};")
                    self.emit(
                        d,
                        f"  (void)afrt_edwpw_f32({r(op.x)}, {r(op.we)}, {be}, {elo}, {ehi}, "
                        f"{r(op.wd)}, {bd}, {lo}, {hi}, {r(op.wp)}, {bp}, {r(op.y)}, "
                        f"&pe_, &pd_, &pp_, {self._epi(op.epilogue, op.ctx)}); }}",
                    )
                else:
                    call = "afrt_dwpw_ex_f32" if op.x_blocked() else "afrt_dwpw_f32"
                    flags = ", AFRT_NC_IN_BLOCKED" if op.x_blocked() else ""
                    self.emit(
                        d,
                        f"  (void){call}({r(op.x)}, {r(op.wd)}, {bd}, {lo}, {hi}, "
                        f"{r(op.wp)}, {bp}, {r(op.y)}, &pd_, &pp_, "
                        f"{self._epi(op.epilogue, op.ctx)}{flags}); }}",
                    )
            case clib.MatmulOp():
                f = dict(zip(clib.MATMUL_FIELDS, self._params(op, op.param_values(), op.dyn)))
                alpha = float_literal(op.alpha.value.data, dtypes.f32)
                beta = float_literal(op.beta.value.data, dtypes.f32)
                epi = self._epi(op.epilogue, op.ctx)
                a, b = r(op.a), r(op.b)
                if (lp := op.lp()) is not None:  # 16-bit core: each input stored or cast
                    fn = f"afrt_matmul_lp({clib.LP_KINDS[lp]}, "
                    a, b = f"{a}, {int(op.is_stored('a'))}", f"{b}, {int(op.is_stored('b'))}"
                else:
                    fn = "afrt_matmul_f32("
                trans = {k: str(v) for k, v in zip(clib.MATMUL_FIELDS, op.param_values())}
                self.emit(
                    d,
                    f"{fn}{f['batch']}, {f['M']}, {f['N']}, {f['K']}, {alpha}, {a}, {f['lda']}, "
                    f"{f['stride_a']}, {trans['trans_a']}, {b}, {f['ldb']}, {f['stride_b']}, "
                    f"{trans['trans_b']}, {beta}, {r(op.c)}, {f['ldc']}, {f['stride_c']}, {epi});",
                )
            case clib.Pool2DOp():
                vals = self._params(op, op.param_values(), op.dyn)
                p = ", ".join([*vals[:-1], str(op.param_values()[-1])])  # int count_include_pad
                fn = "afrt_maxpool2d_f32" if op.kind.data == "max" else "afrt_avgpool2d_f32"
                if op.blocked():  # assign-layout's pool between blocked fire modules
                    fn = "afrt_maxpool2d_nc_f32"
                self.emit(d, f"{{ const afrt_pool_params p_ = {{{p}}};")
                self.emit(d, f"  {fn}({r(op.x)}, {r(op.y)}, &p_); }}")
            case clib.AttentionOp():
                vals = self._params(op, op.param_values(), op.dyn)
                n, nb = clib.ATTN_FIELDS.index("bdims0"), clib.ATTN_MAX_BATCH_DIMS
                bdims = "{" + ", ".join(vals[n : n + nb]) + "}"
                mstr = "{" + ", ".join(vals[n + nb : n + 2 * nb]) + "}"
                p = ", ".join([*vals[:n], bdims, mstr, *vals[n + 2 * nb :]])
                mask = r(op.mask) if op.mask is not None else "NULL"
                scale = float_literal(op.scale.value.data, dtypes.f32)
                self.emit(d, f"{{ const afrt_attn_params p_ = {{{p}}};")
                self.emit(
                    d,
                    f"  afrt_attention_f32({r(op.q)}, {r(op.k)}, {r(op.v)}, {mask}, "
                    f"{r(op.out)}, {scale}, &p_); }}",
                )
            case clib.CallOp():
                self.emit(d, f"{op.callee.data}({', '.join(r(a) for a in op.args)});")
            case _:
                raise CPrintError(f"c target: no C form for op {op.name}")

    def _params(self, op: Operation, values: list[int], dyn: Sequence[SSAValue]) -> list[str]:
        """A library call's integer parameters as C: each ``clib.DYNAMIC`` entry takes the
        op's next ``dyn`` operand (a run-time size) in order (``clib.join_params``)."""
        n = sum(v == clib.DYNAMIC for v in values)
        if n != len(dyn):
            raise CPrintError(f"c target: {op.name} has {len(dyn)} dyn operands for {n} "
                              "dynamic params")  # fmt: skip
        return [
            f"(int64_t){self.ref(v)}" if isinstance(v, SSAValue) else f"INT64_C({v})"
            for v in clib.join_params(values, dyn)
        ]

    def _two_conv_params(self, d: int, op: clib.ConvPairOp | clib.PwChainOp) -> tuple[str, str]:
        """Opens a block declaring ``p_`` and ``p2_`` (the two convs' params, static) for a
        two-conv call; returns the two bias arguments (``NULL`` where absent)."""
        p = ", ".join(f"INT64_C({v})" for v in op.param_values())
        p2 = ", ".join(f"INT64_C({v})" for v in op.params2_values())
        self.emit(d, f"{{ const afrt_conv_params p_ = {{{p}}};")
        self.emit(d, f"  const afrt_conv_params p2_ = {{{p2}}};")
        bias = self.ref(op.bias) if op.bias is not None else "NULL"
        return bias, self.ref(op.bias2) if op.bias2 is not None else "NULL"

    def _epi(self, fn: SSAValue | None, ctx: SSAValue | None) -> str:
        if fn is None:
            return "afrt_no_epilogue()"
        return f"(afrt_epilogue){{{self.ref(fn)}, (void *){self.ref(ctx) if ctx else 'NULL'}}}"

    def _for(self, op: scf.ForOp, d: int) -> None:
        if C_PARALLEL not in op.attributes or op.iter_args:  # carried values: sequential
            self._loop(op, d, None)
            return
        # One region whose threads stamp their arrival before sharing the loop: afrt.h's
        # afrt_threads_now() judges from those stamps how many threads the next region gets
        # (docs/runtime.md, "Threads on a busy machine").
        self.emit(d, "AFRT_OMP(parallel num_threads(afrt_threads_now()))")
        self.emit(d, "{")
        self.emit(d + 1, "afrt_arrive_();")
        self._loop(op, d + 1, "AFRT_OMP(for schedule(static))")
        self.emit(d, "}")

    def _loop(self, op: scf.ForOp, d: int, pragma: str | None) -> None:
        r = self.ref
        body = op.body.block
        iv = body.args[0]
        carried = list(body.args[1:])
        res_names = []
        for init, res, barg in zip(op.iter_args, op.res, carried):
            nm = self.local.ident(f"v{len(self.names)}")
            self.names[res] = nm
            self.names[barg] = nm
            res_names.append(nm)
            self.emit(d, f"{ctype(res.type)} {nm} = {r(init)};")
        ivn = self.bind(iv)
        if pragma is not None:
            self.emit(d, pragma)
        elif _is_float_sum(op):
            self.emit(d, f"AF_SIMD_SUM({res_names[0]})")
        elif C_SIMD in op.attributes:
            self.emit(d, "AF_SIMD")
        step = r(op.step)
        inc = f"++{ivn}" if step == "1" else f"{ivn} += {step}"
        self.emit(d, f"for (int64_t {ivn} = {r(op.lb)}; {ivn} < {r(op.ub)}; {inc}) {{")
        self.block(body, d + 1)
        y = body.last_op
        assert isinstance(y, scf.YieldOp)
        vals = [r(v) for v in y.arguments]
        if len(vals) == 1:
            if vals[0] != res_names[0]:
                self.emit(d + 1, f"{res_names[0]} = {vals[0]};")
        elif vals:
            tmps = []
            for k, (v, res) in enumerate(zip(vals, op.res)):
                tn = self.local.ident(f"t{k}")
                tmps.append(tn)
                self.emit(d + 1, f"const {ctype(res.type)} {tn} = {v};")
            for nm, tn in zip(res_names, tmps):
                self.emit(d + 1, f"{nm} = {tn};")
        self.emit(d, "}")

    def _expr(self, op: Operation) -> str | None:
        r = self.ref
        if type(op) in _BIN:
            a = r(op.operands[0])
            t = op.results[0].type
            if (
                isinstance(op, arith.MuliOp)
                and isinstance(t, IntegerType)
                and t.signedness.data == Signedness.UNSIGNED
                and t.width.data < 32
            ):
                # uint16 operands promote to int, where 65535 * 65535 overflows: multiply
                # unsigned (wrapping), the declaration narrows.
                a = f"(uint32_t){a}"
            return f"{a} {_BIN[type(op)]} {r(op.operands[1])}"
        if isinstance(op, arith.ShLIOp | arith.ShRUIOp | arith.ShRSIOp):
            # The shift amount is in [0, width) (scalar.py guards it). A left shift goes
            # through uint64_t (no int promotion to overflow, no negative shifted) and a
            # logical right shift through the unsigned type of the width; the declaration
            # narrows back. An arithmetic right shift is GCC/Clang's ">>" on a signed value.
            a, b = r(op.operands[0]), r(op.operands[1])
            t = op.results[0].type
            assert isinstance(t, IntegerType)
            if isinstance(op, arith.ShLIOp):
                return f"(uint64_t){a} << {b}"
            if isinstance(op, arith.ShRUIOp):
                return f"(uint{t.width.data}_t){a} >> {b}"
            return f"{a} >> {b}"
        if isinstance(op, arith.NegfOp):
            return f"-{r(op.operands[0])}"
        if isinstance(op, arith.MaximumfOp | arith.MinimumfOp):
            a, b = r(op.operands[0]), r(op.operands[1])
            is_max = isinstance(op, arith.MaximumfOp)
            if _not_nan_constant(op.operands[1]):
                # b is never NaN: one unordered compare gives a for a NaN a, as the general
                # form does; GCC vectorised the general form's two compares through
                # general-purpose registers (~28 instructions per 16 floats for HardSwish's
                # clamp, now 14; issue 16)
                return f"!({a} {'<=' if is_max else '>='} {b}) ? {a} : {b}"
            cmp = ">" if is_max else "<"
            return f"({a} {cmp} {b} || {a} != {a}) ? {a} : {b}"
        if isinstance(op, arith.MaxSIOp | arith.MinSIOp):
            a, b = r(op.operands[0]), r(op.operands[1])
            cmp = ">" if isinstance(op, arith.MaxSIOp) else "<"
            return f"{a} {cmp} {b} ? {a} : {b}"
        if isinstance(op, arith.CmpfOp):
            a, b = r(op.operands[0]), r(op.operands[1])
            p = op.predicate.value.data
            if p == 6:
                return f"({a} < {b} || {a} > {b})"
            if p == 7:
                return f"({a} == {a} && {b} == {b})"
            if p == 14:
                return f"({a} != {a} || {b} != {b})"
            if p not in _CMPF:
                raise CPrintError(f"c target: arith.cmpf predicate {p} has no C form")
            if _CMPF[p] in ("true", "false"):
                return _CMPF[p]
            return f"{a} {_CMPF[p]} {b}"
        if isinstance(op, arith.CmpiOp):
            return f"{r(op.operands[0])} {_CMPI[op.predicate.value.data]} {r(op.operands[1])}"
        if isinstance(op, arith.SelectOp):
            return f"{r(op.operands[0])} ? {r(op.operands[1])} : {r(op.operands[2])}"
        if isinstance(op, _CASTS):
            return f"({ctype(op.results[0].type)}){r(op.operands[0])}"
        t = op.results[0].type if op.results else None
        if type(op) in _MATH1:
            return self._math(_MATH1[type(op)], [r(op.operands[0])], t)
        if isinstance(op, math.RsqrtOp):
            one = float_literal(1.0, op.results[0].type)
            return f"{one} / {self._math('sqrt', [r(op.operands[0])], t)}"
        if isinstance(op, math.PowFOp):
            return self._math("pow", [r(op.operands[0]), r(op.operands[1])], t)
        if isinstance(op, clib.FModOp):  # C fmod: exact, and fmod(x, +-inf) is x
            return self._math("fmod", [r(op.operands[0]), r(op.operands[1])], t)
        if isinstance(op, math.AbsIOp):
            a = r(op.operands[0])
            return f"{a} < 0 ? -{a} : {a}"
        if isinstance(op, math.IPowIOp):
            return f"({ctype(op.results[0].type)})af_ipow({r(op.operands[0])}, {r(op.operands[1])})"
        return None

    def _math(self, fn: str, args: list[str], t: Attribute | None) -> str:
        if t == dtypes.f32 and fn in ("exp", "erf", "tanh"):
            self.transcendental = True
            return f"{self.fast}{fn}f({', '.join(args)})"
        if t == dtypes.f32:
            return f"{fn}f({', '.join(args)})"
        if t == dtypes.f64:
            return f"{fn}({', '.join(args)})"
        if t == dtypes.f16:
            return f"(_Float16){fn}f({', '.join(f'(float){a}' for a in args)})"
        raise CPrintError(f"c target: {fn} on {t} has no C form")


def print_c(module: ModuleOp, stream: IO[str] | None = None) -> tuple[str, Weights]:
    """The C text of a lowered module and its weights layout."""
    p = CPrinter(module)
    text = p.print_module()
    if stream is not None:
        stream.write(text)
    return text, p.weights


def _clamp_literal(v: float) -> str:
    """A clamp bound of ``afrt_dwpw_f32`` as C: infinite bounds are ``INFINITY``."""
    if pymath.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    return float_literal(v, dtypes.f32)
