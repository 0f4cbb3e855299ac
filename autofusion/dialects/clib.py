"""The ``clib`` dialect: the few buffer-level ops the C lowering needs beyond
``func``/``memref``/``scf``/``arith``/``math``.

- ``clib.call "afrt_x"(%a, %b, ...)``: a call into the autofusion runtime library (``afrt.h``);
  operands are memrefs (passed as element pointers), scalars, or ``!clib.ptr`` values.
  C: ``afrt_x(a, b, ...);``
- ``clib.func_ref @f``: the address of a generated function (an epilogue). C: ``f``.
- ``clib.clamp_epilogue %res {lo, hi, ...}``: afrt.h's built-in epilogue (Relu, Clip, a
  residual Add) as ``(fn, ctx)``, which the GEMM core applies in registers.
  C: ``afrt_epi_clamp d[1] = {{res, stride, ld, lo, hi}};`` and ``afrt_epi_clamp_fn``.
- ``clib.pack %a, %b``: a small array of buffer pointers (and run-time sizes), passed as an
  epilogue context. C: ``void *const ctxN[] = {a, b, (void *)(intptr_t)n};``
- ``clib.unpack %ctx[i]``: buffer number ``i`` of a context. C: ``T *v = ((void *const *)ctx)[i];``
- ``clib.view %buf {offset = N}``: a typed view at byte ``offset`` of another buffer (arena
  slots, and reshapes, which are views at offset 0). C: ``T *v = (T *)((char *)buf + N);``
- An **epilogue** is a private ``func.func`` marked ``c.epilogue`` (:data:`EPILOGUE_ATTR`)
  whose arguments are :data:`EPILOGUE_PARAMS`, in that order: the one definition of
  ``afrt_epilogue.fn``'s calling convention, from which the lowering builds the function
  (:func:`epilogue_block`, :class:`EpilogueArgs`) and the printer its C signature
  (:func:`epilogue_c_params`); a test checks ``afrt.h``'s typedef against it, and the printer
  checks each epilogue's argument types (:func:`verify_epilogue`).
- ``clib.guard_index %k {dim = N, site = "..."}``: an index read from run-time data, checked:
  ``k < 0`` wraps to ``k + N`` (ONNX), anything outside ``[-N, N-1]`` records a fault for
  ``site`` (the model's run then fails naming it) and yields 0, so the access stays in
  bounds. C: ``const int64_t v = af_guard_(k, N, site_id, af_f);``
- ``clib.int_div %a, %b {rem = 0|1, site = "..."}``: integer ``a / b`` (``rem = 0``,
  truncating) or ``a % b`` (``rem = 1``, C's sign of the dividend) that never traps: ``b == 0``
  records a division fault for ``site`` (the run fails naming it) and yields 0; ``MIN / -1``
  wraps to ``MIN`` and ``MIN % -1`` is 0 (onnxruntime's int32 results). C:
  ``const T v = (T)af_sdiv_((int64_t)a, (int64_t)b, site_id, af_f);`` (``af_udiv_`` for
  unsigned types, ``af_srem_`` / ``af_urem_`` for the remainder).
  (See :mod:`autofusion.lowering.c.lower_nn_to_loops` for its contract.)
- **Run-time sizes** (a symbolic module, docs/dynamic.md): ``clib.matmul``,
  ``clib.attention``, ``clib.conv2d``, ``clib.dwpw``, ``clib.pool2d``,
  ``clib.clamp_epilogue`` and ``clib.guard_index`` take a variadic ``dyn`` list of
  ``index`` operands; an integer parameter equal to :data:`DYNAMIC` is the next ``dyn``
  operand, in order (MLIR's ``kDynamic`` idiom, as in ``memref.subview``'s static sizes).
  The printer passes ``(int64_t)dyn_k`` where it would print the number. A conv with
  run-time params also records ``bounds``, its params at the symbols' upper bounds: the
  algorithm is chosen (and verified) from them, and the shared im2col scratch is sized from
  them (every algorithm's kernel checks at run time that it fits the call's sizes, and a
  call the scratch is too small for takes its thread's own).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import ClassVar, NamedTuple

from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    f32,
    i64,
)
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Dialect,
    Operation,
    ParametrizedAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from autofusion import symbolic
from autofusion.dialects import nn
from autofusion.dialects.attrs import BLOCKED_LAYOUT, C_EPILOGUE
from autofusion.dialects.base import type_dims


def _opt_ints(op: Operation, name: str) -> list[int] | None:
    """``op``'s i64 array property ``name`` as ints, or None where absent."""
    attr = op.properties.get(name)
    if attr is None:
        return None
    assert isinstance(attr, DenseArrayBase)
    return [int(v) for v in attr.get_values()]


def _ints(op: Operation, name: str) -> list[int]:
    """``op``'s required i64 array property ``name`` as ints."""
    values = _opt_ints(op, name)
    assert values is not None, name
    return values


@irdl_attr_definition
class PtrType(ParametrizedAttribute, TypeAttribute):
    """An untyped pointer (``void *``): function addresses and epilogue contexts."""

    name = "clib.ptr"


@irdl_op_definition
class CallOp(IRDLOperation):
    """A call into the runtime library; operands are passed in order. ``writes``: the
    positions of the memref operands the call writes (the printer keeps those arguments of
    the enclosing function non-const)."""

    name = "clib.call"
    callee = prop_def(StringAttr)
    writes = prop_def(DenseArrayBase)
    args = var_operand_def()
    assembly_format = "$callee `(` $args `)` attr-dict `:` type($args)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, callee: str, args: Sequence[SSAValue], writes: Sequence[int]):
        super().__init__(
            operands=[args],
            properties={
                "callee": StringAttr(callee),
                "writes": DenseArrayBase.from_list(i64, list(writes)),
            },
        )

    def write_positions(self) -> list[int]:
        return _ints(self, "writes")

    def written(self) -> list[SSAValue]:
        """The operands the call writes."""
        return [self.args[i] for i in self.write_positions()]

    def verify_(self) -> None:
        if not self.callee.data.replace("_", "a").isalnum():
            raise VerifyException(f"'clib.call': callee {self.callee.data!r} is not a C name")
        for i in self.write_positions():
            if not 0 <= i < len(self.args) or not isinstance(self.args[i].type, MemRefType):
                raise VerifyException(f"'clib.call': writes {i} is not a memref operand")


#: The discardable attribute that marks a ``func.func`` as an epilogue.
EPILOGUE_ATTR = C_EPILOGUE


class EpilogueArgs(NamedTuple):
    """The arguments of an epilogue, by name (afrt.h ``afrt_epilogue``): its context ``ctx``
    (a :class:`PackOp` array), the output matrix ``out`` of batch item ``batch`` (row-major,
    leading dimension ``ld``), and the block ``[r0, r1) x [c0, c1)`` to finish."""

    ctx: BlockArgument
    out: BlockArgument
    batch: BlockArgument
    r0: BlockArgument
    r1: BlockArgument
    c0: BlockArgument
    c1: BlockArgument
    ld: BlockArgument


#: ``afrt_epilogue.fn``'s parameters in order: (name, C type); ``ptr`` ones are
#: ``!clib.ptr`` in the IR, the rest ``i64``.
EPILOGUE_PARAMS: tuple[tuple[str, str], ...] = (
    ("ctx", "void *"),
    ("out", "float *"),
    ("batch", "int64_t"),
    ("r0", "int64_t"),
    ("r1", "int64_t"),
    ("c0", "int64_t"),
    ("c1", "int64_t"),
    ("ld", "int64_t"),
)
assert tuple(n for n, _ in EPILOGUE_PARAMS) == EpilogueArgs._fields


def epilogue_arg_types() -> list[Attribute]:
    return [PtrType() if c.endswith("*") else i64 for _, c in EPILOGUE_PARAMS]


def epilogue_block() -> tuple[Block, EpilogueArgs]:
    """A new epilogue body block and its arguments by name."""
    blk = Block(arg_types=epilogue_arg_types())
    return blk, EpilogueArgs(*blk.args)


def epilogue_c_params(names: Sequence[str]) -> str:
    """The C parameter list of an epilogue whose arguments print as ``names``."""
    return ", ".join(
        f"{c}{n}" if c.endswith("*") else f"{c} {n}"
        for (_, c), n in zip(EPILOGUE_PARAMS, names, strict=True)
    )


def verify_epilogue(name: str, fn_block: Block) -> None:
    """Raise :class:`VerifyException` unless the block's arguments are the epilogue's."""
    got = [a.type for a in fn_block.args]
    if got != epilogue_arg_types():
        want = ", ".join(c for _, c in EPILOGUE_PARAMS)
        raise VerifyException(
            f"epilogue @{name}: arguments {', '.join(str(t) for t in got)} are not ({want})"
        )


@irdl_op_definition
class FuncRefOp(IRDLOperation):
    """The address of a function in this module."""

    name = "clib.func_ref"
    callee = prop_def(SymbolRefAttr)
    res = result_def(PtrType)
    traits = traits_def(Pure())
    assembly_format = "$callee attr-dict"

    def __init__(self, callee: str):
        super().__init__(properties={"callee": SymbolRefAttr(callee)}, result_types=[PtrType()])


@irdl_op_definition
class ClampEpilogueOp(IRDLOperation):
    """afrt.h's built-in epilogue ``out = min(max(out + residual, lo), hi)``, NaN kept
    (residual absent: ``out``; ``lo = -inf`` / ``hi = inf``: no bound), as an epilogue
    function ``fn`` (``afrt_epi_clamp_fn``) and its context ``ctx``. Residual element
    (r, c) of batch item b is ``residual[b * res_stride + r * res_ld + c]``. The GEMM core
    applies it in registers instead of calling ``fn``; every other kernel calls ``fn``.

    ```mlir
    %fn, %ctx = "clib.clamp_epilogue"(%res) <{res_stride = 3136 : i64, res_ld = 3136 : i64,
        lo = 0.0 : f32, hi = 0x7F800000 : f32}> : (memref<1x1x3136xf32>) -> (!clib.ptr, !clib.ptr)
    ```
    C: ``afrt_epi_clamp d[1] = {{res, INT64_C(3136), INT64_C(3136), 0.0f, INFINITY}};``, then
    ``{afrt_epi_clamp_fn, (void *)d}`` as the call's epilogue.

    With ``col_bias`` (a MatMul / Gemm's bias along its output's columns: element c of the
    columns of a row), ``out = min(max(out + col_bias[c] + residual, lo), hi)``: C
    ``afrt_epi_bias_clamp d[1] = {{{res, ...}, cbias}};`` and ``afrt_epi_bias_clamp_fn``, which
    only the GEMM core applies in registers (every other kernel calls it)."""

    name = "clib.clamp_epilogue"
    residual = opt_operand_def(MemRefType)
    col_bias = opt_operand_def(MemRefType)
    dyn = var_operand_def(IndexType)
    res_stride = prop_def(IntegerAttr)
    res_ld = prop_def(IntegerAttr)
    lo = prop_def(FloatAttr)
    hi = prop_def(FloatAttr)
    fn = result_def(PtrType)
    ctx = result_def(PtrType)
    traits = traits_def(Pure())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        residual: SSAValue | None,
        res_stride: Param,
        res_ld: Param,
        lo: float,
        hi: float,
        col_bias: SSAValue | None = None,
    ):
        (stride, ld), dyn = split_params((res_stride, res_ld))
        super().__init__(
            operands=[
                [residual] if residual is not None else [],
                [col_bias] if col_bias is not None else [],
                dyn,
            ],
            properties={
                "res_stride": IntegerAttr(stride, i64),
                "res_ld": IntegerAttr(ld, i64),
                "lo": FloatAttr(lo, f32),
                "hi": FloatAttr(hi, f32),
            },
            result_types=[PtrType(), PtrType()],
        )

    def verify_(self) -> None:
        static = (self.res_stride.value.data, self.res_ld.value.data)
        verify_dynamic(self.name, static, self.dyn)
        lo, hi = self.lo.value.data, self.hi.value.data
        if lo != lo or hi != hi:  # the register path would not give the C form's NaN
            raise VerifyException("'clib.clamp_epilogue': a bound is NaN")
        for what, v in (("residual", self.residual), ("col_bias", self.col_bias)):
            if v is None:
                continue
            t = v.type
            assert isinstance(t, MemRefType)
            if t.element_type != f32:
                raise VerifyException(
                    f"'clib.clamp_epilogue': {what} must be f32, not {t.element_type}"
                )


@irdl_op_definition
class SiluEpilogueOp(IRDLOperation):
    """afrt.h's built-in epilogue ``out = out * sigmoid(out)`` (SiLU / Swish), or
    ``out = sigmoid(out)`` with ``gate`` (an SE block's gate), as an epilogue function ``fn``
    (``afrt_epi_silu_fn``) and its context ``ctx``. Not bit-identical to the generated
    ``v * (1 / (1 + af_expf(-v)))``: its own exp (max relative error ~2e-7 against float64);
    ``-inf`` gives NaN (``-inf * 0``, as ``Mul(v, Sigmoid(v))``; the gate: 0), ``+inf`` gives
    ``+inf`` (the gate: 1), NaN stays NaN. The AVX-512 GEMM
    core applies it in registers; every other kernel calls ``fn``.

    ```mlir
    %fn, %ctx = "clib.silu_epilogue"() <{gate = false}> : () -> (!clib.ptr, !clib.ptr)
    ```
    C: ``afrt_epi_silu d[1] = {{0}};``, then ``{afrt_epi_silu_fn, (void *)d}`` as the call's
    epilogue."""

    name = "clib.silu_epilogue"
    gate = prop_def(BoolAttr)
    fn = result_def(PtrType)
    ctx = result_def(PtrType)
    traits = traits_def(Pure())

    def __init__(self, gate: bool):
        super().__init__(
            properties={"gate": IntegerAttr.from_bool(gate)}, result_types=[PtrType(), PtrType()]
        )


@irdl_op_definition
class GeluEpilogueOp(IRDLOperation):
    """afrt.h's built-in GELU epilogue (erf form): with ``y = out + col_bias[c]`` (``col_bias``
    optional: a MatMul / Gemm's bias along its output's columns, element c of a row's
    columns), ``out = 0.5 y (1 + erf(y / sqrt 2))`` as ``h + |h| r``, ``h = 0.5 y``, ``r =
    erf(|y| / sqrt 2)`` by a piecewise polynomial (``AFRT_GELU_TAB``, within 4e-8 where the
    generated loop's ``af_erff`` for ``nn.gelu``, ``approximate = "none"``, is within
    3.5e-7), in 17 vector operations where that loop takes 23; as an epilogue function
    ``fn`` (``afrt_epi_gelu_fn``) and its context
    ``ctx``. The AVX-512 GEMM core adds the bias in registers and runs the GELU over each
    tile's rows while they are in L1; every other kernel calls ``fn``.

    ```mlir
    %fn, %ctx = "clib.gelu_epilogue"(%b) : (memref<384xf32>) -> (!clib.ptr, !clib.ptr)
    ```
    C: ``afrt_epi_gelu d[1] = {{b}};`` (``{{NULL}}`` without a bias), then
    ``{afrt_epi_gelu_fn, (void *)d}`` as the call's epilogue."""

    name = "clib.gelu_epilogue"
    col_bias = opt_operand_def(MemRefType)
    fn = result_def(PtrType)
    ctx = result_def(PtrType)
    traits = traits_def(Pure())

    def __init__(self, col_bias: SSAValue | None = None):
        super().__init__(
            operands=[[col_bias] if col_bias is not None else []],
            result_types=[PtrType(), PtrType()],
        )

    def verify_(self) -> None:
        if self.col_bias is not None:
            t = self.col_bias.type
            assert isinstance(t, MemRefType)
            if t.element_type != f32:
                raise VerifyException(
                    f"'clib.gelu_epilogue': col_bias must be f32, not {t.element_type}"
                )


@irdl_op_definition
class PackOp(IRDLOperation):
    """An array of buffer pointers (an epilogue's context); an ``index`` value (a run-time
    size the epilogue needs) is stored in a slot as an integer."""

    name = "clib.pack"
    values = var_operand_def(MemRefType | IndexType)
    res = result_def(PtrType)
    traits = traits_def(Pure())
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: list[SSAValue]):
        super().__init__(operands=[values], result_types=[PtrType()])


@irdl_op_definition
class UnpackOp(IRDLOperation):
    """Buffer (or ``index`` value) number ``index`` of a context made by ``clib.pack``."""

    name = "clib.unpack"
    ctx = operand_def(PtrType)
    index = prop_def(IntegerAttr)
    res = result_def(MemRefType | IndexType)
    traits = traits_def(Pure())
    assembly_format = "$ctx `[` $index `]` attr-dict `:` type($res)"

    def __init__(self, ctx: SSAValue, index: int, result_type: Attribute):
        super().__init__(
            operands=[ctx],
            properties={"index": IntegerAttr(index, i64)},
            result_types=[result_type],
        )


@irdl_op_definition
class ViewOp(IRDLOperation):
    """A typed view at a byte offset of a buffer (arena slots, reshapes)."""

    name = "clib.view"
    source = operand_def(MemRefType)
    offset = prop_def(IntegerAttr)
    res = result_def(MemRefType)
    traits = traits_def(Pure())
    assembly_format = "$source `[` $offset `]` attr-dict `:` type($source) `->` type($res)"

    def __init__(self, source: SSAValue, offset: int, result_type: Attribute):
        super().__init__(
            operands=[source],
            properties={"offset": IntegerAttr(offset, i64)},
            result_types=[result_type],
        )

    def verify_(self) -> None:
        if self.offset.value.data < 0:
            raise VerifyException("'clib.view': negative offset")


@irdl_op_definition
class GuardIndexOp(IRDLOperation):
    """A run-time index into a dim of size ``dim``, wrapped (negative) and bounds-checked.

    Not pure: an out-of-range value records a fault that makes ``af_run`` fail. ``site``
    says which op and operand it is, for the error message (e.g. ``Gather 'emb': indices``).
    """

    name = "clib.guard_index"
    value = operand_def(IntegerType | IndexType)
    dyn = var_operand_def(IndexType)
    dim = prop_def(IntegerAttr)
    site = prop_def(StringAttr)
    res = result_def(IndexType)
    assembly_format = "$value `dim` $dim (`[` $dyn^ `]`)? `site` $site attr-dict `:` type($value)"

    def __init__(self, value: SSAValue, dim: Param, site: str):
        (d,), dyn = split_params((dim,))
        super().__init__(
            operands=[value, dyn],
            properties={"dim": IntegerAttr(d, i64), "site": StringAttr(site)},
            result_types=[IndexType()],
        )

    def verify_(self) -> None:
        verify_dynamic(self.name, (self.dim.value.data,), self.dyn)
        if self.dim.value.data < 1 and self.dim.value.data != DYNAMIC:
            raise VerifyException("'clib.guard_index': dim must be >= 1")


@irdl_op_definition
class FModOp(IRDLOperation):
    """C ``fmod`` of two floats (the ``arith.remf`` xDSL lacks): exact, sign of ``lhs``;
    ``fmod(x, +-inf)`` is ``x``, ``fmod(+-inf, y)`` and ``fmod(x, 0)`` are NaN."""

    name = "clib.fmod"
    lhs = operand_def(AnyFloat)
    rhs = operand_def(AnyFloat)
    res = result_def(AnyFloat)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($res)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[lhs.type])

    def verify_(self) -> None:
        if self.lhs.type != self.rhs.type or self.res.type != self.lhs.type:
            raise VerifyException("'clib.fmod': operand and result types must match")


@irdl_op_definition
class IntDivOp(IRDLOperation):
    """Integer division or remainder whose bad operands fault the run instead of trapping.

    Not pure: a zero divisor records a fault that makes ``af_run`` fail (x86 would raise
    SIGFPE and kill the host process). ``site`` names the ONNX node for the message."""

    name = "clib.int_div"
    lhs = operand_def(IntegerType)
    rhs = operand_def(IntegerType)
    rem = prop_def(IntegerAttr)
    site = prop_def(StringAttr)
    res = result_def(IntegerType)
    assembly_format = (
        "$lhs `,` $rhs `rem` $rem `site` $site attr-dict `:` type($lhs) `,` type($rhs) "
        "`->` type($res)"
    )

    def __init__(self, lhs: SSAValue, rhs: SSAValue, rem: bool, site: str):
        super().__init__(
            operands=[lhs, rhs],
            properties={"rem": IntegerAttr(int(rem), i64), "site": StringAttr(site)},
            result_types=[lhs.type],
        )

    def verify_(self) -> None:
        if self.lhs.type != self.rhs.type or self.res.type != self.lhs.type:
            raise VerifyException("'clib.int_div': operand and result types must match")
        if self.rem.value.data not in (0, 1):
            raise VerifyException("'clib.int_div': rem must be 0 or 1")


# Field order of afrt_conv_params / afrt_pool_params (afrt.h); ``params`` lists them in order.
CONV_FIELDS = (
    "N",
    "C",
    "H",
    "W",
    "K",
    "R",
    "S",
    "OH",
    "OW",
    "stride_h",
    "stride_w",
    "pad_top",
    "pad_left",
    "pad_bottom",
    "pad_right",
    "dil_h",
    "dil_w",
    "group",
)


def _dims(v: SSAValue) -> tuple[int, ...]:
    """Symbolic dims as ``symbolic.Size`` (structural equality, never a number by accident:
    ``dwpw_applies`` compares shapes; ``conv_algo`` takes them at their upper bounds; the C
    lowering passes them as run-time params)."""
    return type_dims(v.type)


def conv_params(op: nn.ConvOp) -> list[int]:
    """The ``CONV_FIELDS`` of a 1-d or 2-d ``nn.conv`` (a 1-d conv as 2-d with H = R = OH = 1);
    a 3-d one has ``conv3d_params``."""
    xs, ws, ys = _dims(op.x), _dims(op.w), _dims(op.y)
    if len(xs) not in (3, 4):
        raise ValueError(f"conv_params: a {len(xs) - 2}-d conv has no CONV_FIELDS")
    st, pd, dl = op.strides, op.pads, op.dilations
    if len(xs) == 3:  # 1-d conv as 2-d with H = R = OH = 1
        return [
            xs[0],
            xs[1],
            1,
            xs[2],
            ws[0],
            1,
            ws[2],
            1,
            ys[2],
            1,
            st[0],
            0,
            pd[0],
            0,
            pd[1],
            1,
            dl[0],
            op.group,
        ]
    return [
        xs[0],
        xs[1],
        xs[2],
        xs[3],
        ws[0],
        ws[2],
        ws[3],
        ys[2],
        ys[3],
        st[0],
        st[1],
        pd[0],
        pd[1],
        pd[2],
        pd[3],
        dl[0],
        dl[1],
        op.group,
    ]


#: Field order of afrt_conv3d_params (afrt.h): a 3-d conv's ``params``.
CONV3D_FIELDS = (
    "N",
    "C",
    "D",
    "H",
    "W",
    "K",
    "T",
    "R",
    "S",
    "OD",
    "OH",
    "OW",
    "stride_d",
    "stride_h",
    "stride_w",
    "pad_front",
    "pad_top",
    "pad_left",
    "pad_back",
    "pad_bottom",
    "pad_right",
    "dil_d",
    "dil_h",
    "dil_w",
    "group",
)
#: The algorithm of every 3-d conv (``clib.conv3d``, the report's ``conv_algo``): im2col over
#: D x H x W packed into the GEMM core's B panels.
CONV3D_ALGO = "im2col_gemm_3d"


def conv3d_params(op: nn.ConvOp) -> list[int]:
    """The ``CONV3D_FIELDS`` of a 3-d ``nn.conv`` (NCDHW)."""
    xs, ws, ys = _dims(op.x), _dims(op.w), _dims(op.y)
    st, pd, dl = op.strides, op.pads, op.dilations
    return [xs[0], xs[1], *xs[2:], ws[0], *ws[2:], *ys[2:], *st, *pd, *dl, op.group]


# Convolution algorithms the C runtime has, chosen per conv at lowering (`conv_algo`).
CONV_ALGOS = (
    "direct_dw_lanes",
    "direct_dw",
    "direct_smallc",
    "direct_smallc_b",
    "winograd",
    "direct_nchwc",
    "gemm_1x1_b",
    "gemm_1x1_xb",
    "direct_1x1_b",
    "direct_1x1",
    "gemm_1x1_t",
    "gemm_1x1",
    "im2col_gemm",
)
#: The algorithm of every 16-bit (``precision``) convolution call: the 16-bit GEMM core.
LP_CONV_ALGO = "lp_gemm"
DW_MAX_TAPS = 64  # AFRT_DW_MAX_TAPS in afrt_dwconv.h
SMALLC_MAX_C = 4  # AFRT_DC_MAX_C in afrt_dwconv.h
SMALLC_GROUP_MAX_C = 16  # AFRT_DCG_MAX_C: input channels per group of a grouped direct_smallc
SMALLC_GROUP_MIN_OW = 12  # AFRT_DCG_MIN_OW: its output width at stride 1
# The measured rule of afrt_winograd_applies (afrt_winograd.h; benchmarks/winograd_conv.py
# --cold, docs/runtime.md): Winograd F(4x4, 3x3) beats im2col_gemm on maps of at least
# WG_MIN_TILES 4x4 output tiles per image when WG_CK / C - WG_CK / K <= 1, and on maps of at
# least WG_MIN_TILES_WIDE tiles when K >= WG_WIDE_K and C >= WG_WIDE_C (narrower convs there
# take the blocked direct conv, which beats both; fewer input channels lose to im2col_gemm).
WG_MIN_TILES = 25  # AFRT_WG_MIN_TILES
WG_MIN_TILES_WIDE = 16  # AFRT_WG_MIN_TILES_WIDE
WG_WIDE_K = 192  # AFRT_WG_WIDE_K
WG_WIDE_C = 96  # AFRT_WG_WIDE_C
WG_CK = 64  # AFRT_WG_CK


def dw_lanes_applies(f: dict[str, int]) -> bool:
    """Whether a depthwise conv (``CONV_FIELDS`` by name; ``direct_dw`` fits it) takes
    ``direct_dw_lanes`` (``afrt_dwl_applies``): no channel multiplier and dilation 1, where
    16 channels in the vector lanes beat the phase planes on every depthwise shape of
    MobileNet-V2 and EfficientNet-B0 measured (benchmarks/dw_lanes.py, docs/runtime.md)."""
    return f["K"] == f["C"] and (f["dil_h"], f["dil_w"]) == (1, 1)


def winograd_applies(f: dict[str, int]) -> bool:
    """Whether a conv (``CONV_FIELDS`` by name) takes ``winograd``: 3x3, stride 1, dilation
    1, group 1, non-negative pads, and the measured size rule (``afrt_winograd_applies``)."""
    fits = (
        max(1, f["group"]) == 1
        and (f["R"], f["S"]) == (3, 3)
        and (f["stride_h"], f["stride_w"], f["dil_h"], f["dil_w"]) == (1, 1, 1, 1)
        and min(f["pad_top"], f["pad_left"]) >= 0
        and min(f["OH"], f["OW"]) >= 1
    )
    tiles = ((f["OH"] + 3) // 4) * ((f["OW"] + 3) // 4)
    wins = WG_CK * (f["K"] - f["C"]) <= f["C"] * f["K"]  # WG_CK / C - WG_CK / K <= 1
    wide = f["K"] >= WG_WIDE_K and f["C"] >= WG_WIDE_C
    enough = tiles >= WG_MIN_TILES or (tiles >= WG_MIN_TILES_WIDE and wide)
    return fits and f["C"] >= 1 and wins and enough


NC_BLOCK = 16  # AFRT_NC_L in afrt_nchwc.h: channels per block
NC_KTILE = 32  # AFRT_NC_KT: output channels per register tile
# Stride-1 convs with fewer than NC_NARROW_C input channels on maps of at least NC_NARROW_HW
# positions stay on im2col_gemm (AFRT_NC_NARROW_C / _HW; benchmarks/nchwc_conv.py --cold).
NC_NARROW_C = 32
NC_NARROW_HW = 1024
# So do stride-1 convs with at least NC_WIDE_K output channels on maps of at least NC_WIDE_HW
# positions (AFRT_NC_WIDE_K / _HW; the same benchmark, docs/runtime.md).
NC_WIDE_K = 192
NC_WIDE_HW = 100
# And convs whose output rows fill its 14-column tiles below NC_FILL_PCT percent
# (AFRT_NC_FILL_PCT, :func:`nchwc_row_cols`): Inception-v3's 8x8 maps, 10x10, 12x12, ...
NC_FILL_PCT = 90
NC_MAXW = 14  # AFRT_NC_MAXW: output columns per register tile


def nchwc_row_cols(ow: int) -> int:
    """Output columns per row the blocked kernel's tiles compute on a map ``ow`` wide
    (``afrt_nc_row_cols_``): 7 (two rows a tile) up to 7 wide, else tiles of 14 with the last
    one 13 or 7 wide where it is exactly that, 7 where fewer, else 14."""
    if 2 * ow <= NC_MAXW:
        return NC_MAXW // 2
    rest = ow % NC_MAXW
    last = 0 if not rest else rest if rest in (13, 7) else 7 if rest < 7 else NC_MAXW
    return ow - rest + last


#: Physical layouts of a conv's activations (``assign-layout``): plain NCHW, or NCHW16c --
#: [N][ceil(C/16)][H][W][16], channels past C zero (afrt_nchwc.h).
LAYOUTS = ("nchw", BLOCKED_LAYOUT)


def gemm_1x1_b_fits(f: dict[str, int]) -> bool:
    """Whether ``afrt_conv1x1b_f32`` (``gemm_1x1_b``: NCHW x, NCHW16c y) runs a conv
    (``CONV_FIELDS`` by name; ``afrt_conv1x1b_fits``): 1x1, stride 1, dilation 1, no
    padding, group 1. Only ``assign-layout`` chooses it (an expand conv whose reader, a conv
    chain, takes its input in blocks)."""
    return (
        (f["R"], f["S"], f["stride_h"], f["stride_w"], f["dil_h"], f["dil_w"]) == (1,) * 6
        and (f["pad_top"], f["pad_left"], f["pad_bottom"], f["pad_right"]) == (0, 0, 0, 0)
        and (f["OH"], f["OW"]) == (f["H"], f["W"])
        and max(1, f["group"]) == 1
    )


#: The GEMM's 1x1 convs across a layout boundary (``assign-layout``) and their (x, y)
#: layouts: an expand conv into a blocked chain, a conv reading a blocked fire's concat.
_GEMM_1X1_LAYOUTS = {"gemm_1x1_b": ("nchw", "nchw16c"), "gemm_1x1_xb": ("nchw16c", "nchw")}
_LAYOUT_NAMES = {"nchw": "NCHW", "nchw16c": "NCHW16c"}  # as the messages spell them


def smallc_b_fits(f: dict[str, int]) -> bool:
    """Whether ``afrt_dconv_smallcb_f32`` (``direct_smallc_b``: a stem conv from the NCHW
    image into NCHW16c y) runs a conv (``CONV_FIELDS`` by name; ``afrt_dconv_smallcb_fits``):
    group 1, 1 to ``SMALLC_MAX_C`` input channels, a multiple of 16 output channels, 2 to
    ``DW_MAX_TAPS`` taps, column stride 1 or 2, dilation 1, non-negative pads. Only
    ``assign-layout`` chooses it (a stem whose readers take blocks)."""
    return (
        max(1, f["group"]) == 1
        and 1 <= f["C"] <= SMALLC_MAX_C
        and f["K"] >= NC_BLOCK
        and f["K"] % NC_BLOCK == 0
        and 1 < f["R"] * f["S"] <= DW_MAX_TAPS
        and f["stride_w"] in (1, 2)
        and f["stride_h"] >= 1
        and (f["dil_h"], f["dil_w"]) == (1, 1)
        and min(f["pad_top"], f["pad_left"], f["pad_bottom"], f["pad_right"]) >= 0
    )


#: Rows of conv output ``afrt_scb_maxpool_f32`` keeps per thread at most (AFRT_CP_MAX_ROWS in
#: afrt_convchain.h): the max pool window's height with its dilation.
CONVPOOL_MAX_ROWS = 8


def convpool_fits(f: dict[str, int], q: dict[str, int]) -> bool:
    """Whether ``afrt_scb_maxpool_f32`` runs conv ``f`` (``CONV_FIELDS`` by name) and the max
    pool ``q`` (``POOL_FIELDS`` by name) reading its output as one call
    (``afrt_convpool_fits``): the conv is a ``direct_smallc_b`` stem (:func:`smallc_b_fits`),
    the pool reads exactly its output, and the window spans at most ``CONVPOOL_MAX_ROWS``
    rows (``(R - 1) * dil_h + 1``); any stride, pads, column window and ceil-mode size."""
    return (
        smallc_b_fits(f)
        and (q["N"], q["C"], q["H"], q["W"]) == (f["N"], f["K"], f["OH"], f["OW"])
        and min(q["R"], q["S"], q["stride_h"], q["stride_w"], q["dil_h"], q["dil_w"]) >= 1
        and min(q["pad_top"], q["pad_left"]) >= 0
        and (q["R"] - 1) * q["dil_h"] + 1 <= CONVPOOL_MAX_ROWS
    )


def nchwc_fits(f: dict[str, int]) -> bool:
    """Whether ``afrt_nchwc_ex_f32`` can run a conv (``CONV_FIELDS`` by name) at all
    (``afrt_nchwc_fits``): group 1, 1x1 or 3x3, equal strides 1 or 2, dilation 1, pads in
    [0, R)."""
    return (
        max(1, f["group"]) == 1
        and (f["R"], f["S"]) in ((1, 1), (3, 3))
        and f["stride_h"] == f["stride_w"]
        and f["stride_h"] in (1, 2)
        and (f["dil_h"], f["dil_w"]) == (1, 1)
        and 0 <= f["pad_top"] < f["R"]
        and 0 <= f["pad_left"] < f["S"]
        and min(f["OH"], f["OW"], f["C"], f["K"]) >= 1
    )


# The measured rule of afrt_conv1x1d_applies (afrt_nchwc.h; benchmarks/conv1x1_direct.py,
# docs/runtime.md): a 1x1 stride-1 unpadded group-1 conv with at least D1X1_MIN_C input and
# at most D1X1_MAX_K output channels on a map of at least D1X1_MIN_HW positions reads its
# input in place (8 channels x 48 positions in registers) instead of packing it for the GEMM.
D1X1_MAX_K = 32  # AFRT_1X1D_MAX_K
D1X1_MIN_HW = 512  # AFRT_1X1D_MIN_HW
D1X1_MIN_C = 16  # AFRT_1X1D_MIN_C
# direct_1x1_b (afrt_conv1x1nb_f32): assign-layout's 1x1 convs writing blocks from NCHW x
# take it up to this many output channels (one block: SqueezeNet's first squeeze, where
# gemm_1x1_b's 32-wide panels are half empty and took 2.2x its time); more take gemm_1x1_b
# (measured on MobileNet-V2's expand chains). From blocked x any 1x1 conv takes it.
D1X1B_MAX_K = 16


def direct_1x1_applies(f: dict[str, int]) -> bool:
    """Whether a conv (``CONV_FIELDS`` by name) takes ``direct_1x1`` where the AVX-512
    kernels are available (``afrt_conv1x1d_applies``): 1x1, stride 1, dilation 1, no
    padding, group 1, at least ``D1X1_MIN_C`` input and at most ``D1X1_MAX_K`` output
    channels, at least ``D1X1_MIN_HW`` positions."""
    return (
        (f["R"], f["S"], f["stride_h"], f["stride_w"], f["dil_h"], f["dil_w"]) == (1,) * 6
        and (f["pad_top"], f["pad_left"], f["pad_bottom"], f["pad_right"]) == (0, 0, 0, 0)
        and (f["OH"], f["OW"]) == (f["H"], f["W"])
        and max(1, f["group"]) == 1
        and f["C"] >= D1X1_MIN_C
        and 1 <= f["K"] <= D1X1_MAX_K
        and f["OH"] * f["OW"] >= D1X1_MIN_HW
    )


def nchwc_applies(f: dict[str, int]) -> bool:
    """Whether a conv (``CONV_FIELDS`` by name) takes ``direct_nchwc`` where the blocked
    kernel is available: the measured rule of ``afrt_nchwc_applies`` (afrt_nchwc.h;
    benchmarks/nchwc_conv.py, docs/runtime.md): 3x3, equal strides 1 or 2, dilation 1,
    group 1, pads in [0, 3), not Winograd, C a multiple of 16 and K >= 32, and not a narrow
    stride-1 conv on a large map (C < ``NC_NARROW_C``, at least ``NC_NARROW_HW`` output
    positions) nor a wide one on a map of at least ``NC_WIDE_HW`` positions (K >=
    ``NC_WIDE_K``), and output rows that fill at least ``NC_FILL_PCT`` percent of the
    columns its tiles compute (:func:`nchwc_row_cols`): im2col_gemm measured faster on all
    three."""
    narrow_big = f["stride_h"] == 1 and f["C"] < NC_NARROW_C and f["OH"] * f["OW"] >= NC_NARROW_HW
    wide_big = f["stride_h"] == 1 and f["K"] >= NC_WIDE_K and f["OH"] * f["OW"] >= NC_WIDE_HW
    fills = 100 * f["OW"] >= NC_FILL_PCT * nchwc_row_cols(f["OW"])
    return (
        max(1, f["group"]) == 1
        and (f["R"], f["S"]) == (3, 3)
        and f["stride_h"] == f["stride_w"]
        and f["stride_h"] in (1, 2)
        and (f["dil_h"], f["dil_w"]) == (1, 1)
        and 0 <= f["pad_top"] < 3
        and 0 <= f["pad_left"] < 3
        and min(f["OH"], f["OW"]) >= 1
        and f["C"] >= 1
        and f["C"] % NC_BLOCK == 0
        and f["K"] >= NC_KTILE
        and not narrow_big
        and not wide_big
        and fills
        and not winograd_applies(f)
    )


# The measured rule of afrt_conv1x1t_applies (afrt.h; benchmarks/conv1x1_small.py,
# docs/runtime.md): a 1x1 conv on a map of T1X1_MIN_HW to T1X1_MAX_HW positions with at least
# T1X1_MIN_C input and T1X1_MIN_K output channels per group puts the channels along the
# GEMM core's NR-wide panels when that pads less than putting the positions there (layers
# with fewer input channels measured slower that way in whole models, their weights cold).
T1X1_MIN_HW = 2  # AFRT_1X1T_MIN_HW
T1X1_MAX_HW = 16  # AFRT_1X1T_MAX_HW
T1X1_MIN_C = 512  # AFRT_1X1T_MIN_C
T1X1_MIN_K = 16  # AFRT_1X1T_MIN_K
GEMM_NR = 32  # AFRT_NR


def _round_up(v: int, m: int) -> int:
    return -(-v // m) * m


def gemm_mr(m: int) -> int:
    """The GEMM core's row-tile height for ``m`` rows (``afrt_choose_mr_``): 12 unless 12
    wastes over 5% of the rows and 8 wastes less."""
    p12, p8 = _round_up(m, 12), _round_up(m, 8)
    return 8 if (p12 - m) * 20 > p12 and p8 < p12 else 12


def gemm_1x1_t_applies(f: dict[str, int]) -> bool:
    """Whether a 1x1 stride-1 unpadded conv (``CONV_FIELDS`` by name) takes ``gemm_1x1_t``
    (``afrt_conv1x1t_applies``): output channels along the 32-wide panels, positions along
    the row tiles, where that pads the GEMM less than ``gemm_1x1`` does on a small map."""
    group = max(1, f["group"])
    hw, kg, cg = f["OH"] * f["OW"], f["K"] // group, f["C"] // group
    if not T1X1_MIN_HW <= hw <= T1X1_MAX_HW or cg < T1X1_MIN_C or kg < T1X1_MIN_K:
        return False
    swapped = _round_up(hw, gemm_mr(hw)) * _round_up(kg, GEMM_NR)
    direct = _round_up(kg, gemm_mr(kg)) * _round_up(hw, GEMM_NR)
    return swapped < direct


def smallc_groups_applies(f: dict[str, int]) -> bool:
    """Whether ``afrt_dconv_smallc_f32`` takes a grouped conv (``CONV_FIELDS`` by name;
    ``afrt_dconv_smallc_applies``' rule for group > 1): 2 to ``SMALLC_GROUP_MAX_C`` input
    channels per group, 2 to ``DW_MAX_TAPS`` taps, and a strided output row or one at least
    ``SMALLC_GROUP_MIN_OW`` wide. The direct kernel then runs group by group, where
    ``im2col_gemm`` would multiply each group as a GEMM of a few rows (RegNet-Y-400MF's
    group-8 3x3 convs: 0.25-0.49 of im2col_gemm's time at stride 2, 0.84 at 14x14 stride 1;
    at 7x7 stride 1 the kernel's 16-lane rows are half empty and it does not win)."""
    group = f["group"]
    if group <= 1 or f["C"] % group or f["K"] % group:
        return False
    cg, taps = f["C"] // group, f["R"] * f["S"]
    return (2 <= cg <= SMALLC_GROUP_MAX_C and 1 < taps <= DW_MAX_TAPS
            and (f["stride_w"] > 1 or f["OW"] >= SMALLC_GROUP_MIN_OW))  # fmt: skip


def conv_algo(params: Sequence[int], precision: str | None = None, blocked: bool = False) -> str:
    """The convolution algorithm for ``params`` (``CONV_FIELDS`` order, a run-time size at
    its upper bound) and the call's 16-bit ``precision`` (None: fp32), from the shapes;
    ``blocked``: the build has the blocked direct kernel (AVX-512) and the config's
    ``conv_layout`` is ``auto`` (:func:`blocked_convs`):

    - ``lp_gemm``: any 16-bit call: ``afrt_conv2d_lp`` (the 16-bit GEMM core; it widens
      depthwise weights to fp32 itself);

    - ``direct_dw_lanes``: a depthwise conv ``direct_dw`` takes without channel multiplier,
      dilation 1 (:func:`dw_lanes_applies`): ``afrt_dwconv2d_f32``, 16 channels in the
      vector lanes;
    - ``direct_dw``: one input channel per group (depthwise; a channel multiplier is
      allowed), at most ``DW_MAX_TAPS`` taps: ``afrt_dwconv2d_f32``, phase planes, no im2col;
    - ``direct_smallc``: group 1 with at most ``SMALLC_MAX_C`` input channels and 2 to
      ``DW_MAX_TAPS`` taps (a stem conv): ``afrt_dconv_smallc_f32``, no im2col; and a
      grouped conv (:func:`smallc_groups_applies`, e.g. RegNet's group-8 3x3), group by group;
    - ``winograd``: 3x3, stride 1, dilation 1, group 1 where it wins
      (:func:`winograd_applies`): ``afrt_winograd_f32``, Winograd F(4x4, 3x3);
    - ``direct_nchwc``: only when ``blocked``, where :func:`nchwc_applies`:
      ``afrt_nchwc_f32``, a direct conv on input reordered to 16-channel blocks (NCHW16c)
      per call, 32 output channels x up to 14 columns in registers;
    - ``direct_1x1``: only when ``blocked``, where :func:`direct_1x1_applies`:
      ``afrt_conv1x1d_f32``, a 1x1 conv with few output channels reading its NCHW input in
      place, 8 output channels x 48 positions in registers;
    - ``gemm_1x1_t``: 1x1, stride 1, no padding, on a small map where the transposed GEMM
      pads less (:func:`gemm_1x1_t_applies`): ``afrt_conv1x1t_f32``, output channels along
      the 32-wide panels;
    - ``gemm_1x1``: 1x1, stride 1, no padding: the NCHW input is the GEMM's B operand as is
      (on a one-position map, a squeeze-excite block's convs, ``afrt_conv2d_f32`` computes
      the matrix-vector product instead);
    - ``im2col_gemm``: everything else, im2col fused into the GEMM's B packing.

    The same rules as ``afrt_conv_plan`` / ``afrt_dwconv_applies`` / ``afrt_dwl_applies`` /
    ``afrt_dconv_smallc_applies`` / ``afrt_winograd_applies`` / ``afrt_conv1x1t_applies`` in
    the runtime (a test compiles both and compares them over a sweep of shapes;
    ``afrt_conv2d_f32`` never takes ``direct_nchwc`` or ``direct_1x1`` itself: the lowering
    calls ``afrt_nchwc_f32`` / ``afrt_conv1x1d_f32``)."""
    if precision is not None:
        return LP_CONV_ALGO
    # A run-time size (``symbolic.Size``) counts at its upper bound: every kernel below checks
    # at run time that it fits the call (else the generic path runs), so the choice made at
    # the bound is valid, if perhaps not the fastest, for every smaller value.
    at_bounds = [symbolic.upper_bound(v) for v in params]
    f: dict[str, int] = dict(zip(CONV_FIELDS, at_bounds, strict=True))
    group = max(1, f["group"])
    taps = f["R"] * f["S"]
    if f["C"] == group and f["K"] % group == 0 and taps <= DW_MAX_TAPS:
        return "direct_dw_lanes" if dw_lanes_applies(f) else "direct_dw"
    if group == 1 and 1 <= f["C"] <= SMALLC_MAX_C and 1 < taps <= DW_MAX_TAPS:
        return "direct_smallc"
    if smallc_groups_applies(f):
        return "direct_smallc"
    if winograd_applies(f):
        return "winograd"
    if blocked and nchwc_applies(f):
        return "direct_nchwc"
    if blocked and direct_1x1_applies(f):
        return "direct_1x1"
    if (f["R"] == 1 and f["S"] == 1 and f["stride_h"] == 1 and f["stride_w"] == 1
            and f["pad_top"] == 0 and f["pad_left"] == 0 and f["OH"] == f["H"]
            and f["OW"] == f["W"]):  # fmt: skip
        return "gemm_1x1_t" if gemm_1x1_t_applies(f) else "gemm_1x1"
    return "im2col_gemm"


POOL_FIELDS = (
    "N",
    "C",
    "H",
    "W",
    "R",
    "S",
    "OH",
    "OW",
    "stride_h",
    "stride_w",
    "pad_top",
    "pad_left",
    "pad_bottom",
    "pad_right",
    "dil_h",
    "dil_w",
    "count_include_pad",
)
# Integer arguments of afrt_matmul_f32, in ``params`` order.
MATMUL_FIELDS = (
    "batch",
    "M",
    "N",
    "K",
    "lda",
    "stride_a",
    "trans_a",
    "ldb",
    "stride_b",
    "trans_b",
    "ldc",
    "stride_c",
)


#: A parameter whose value is a run-time ``dyn`` operand (MLIR's ``ShapedType::kDynamic``).
DYNAMIC = -(1 << 63)

Param = int | SSAValue
"""A library parameter as the lowering builds it: a number, or an ``index`` value."""


def split_params(values: Sequence[Param]) -> tuple[list[int], list[SSAValue]]:
    """Numbers with :data:`DYNAMIC` in place of each ``index`` value, and those values in order."""
    static: list[int] = []
    dyn: list[SSAValue] = []
    for v in values:
        if isinstance(v, SSAValue):
            static.append(DYNAMIC)
            dyn.append(v)
        else:
            static.append(int(v))
    return static, dyn


def join_params(static: Sequence[int], dyn: Sequence[SSAValue]) -> list[Param]:
    """The inverse of :func:`split_params`: each :data:`DYNAMIC` entry replaced by its operand."""
    rest = iter(dyn)
    return [next(rest) if v == DYNAMIC else v for v in static]


def verify_dynamic(name: str, static: Sequence[int], dyn: Sequence[SSAValue]) -> None:
    n = sum(v == DYNAMIC for v in static)
    if n != len(dyn):
        raise VerifyException(f"'{name}': {n} dynamic params but {len(dyn)} dyn operands")
    for v in dyn:
        if not isinstance(v.type, IndexType):
            raise VerifyException(f"'{name}': dyn operands must be index, not {v.type}")


def verify_bounds(name: str, static: Sequence[int], got: Sequence[int] | None) -> None:
    """``bounds`` (``got``: a call's params at the symbols' upper bounds) is present exactly
    when some param is :data:`DYNAMIC`, holds numbers, and agrees with every static param."""
    dynamic = [v == DYNAMIC for v in static]
    if got is None:
        if any(dynamic):
            raise VerifyException(f"'{name}': run-time params need bounds (their upper bounds)")
        return
    if not any(dynamic):
        raise VerifyException(f"'{name}': bounds given but no param is a run-time one")
    if len(got) != len(static):
        raise VerifyException(f"'{name}': bounds needs {len(static)} values, not {len(got)}")
    for i, (v, b) in enumerate(zip(static, got, strict=True)):
        if b == DYNAMIC or (v != DYNAMIC and v != b):
            raise VerifyException(
                f"'{name}': bounds[{i}] = {b} is not params[{i}] = {v} or a number"
            )


class _LibOp(IRDLOperation):
    def param_values(self) -> list[int]:
        """The ``params`` numbers (:data:`DYNAMIC` for a run-time one: ``join_params``)."""
        return _ints(self, "params")


#: ``precision`` values of a 16-bit contraction call, and the afrt.h constant of each.
LP_KINDS = {"fp16": "AFRT_LP_F16", "bf16": "AFRT_LP_BF16"}


class _ContractionOp(_LibOp):
    """A conv/matmul call, fp32 or (``precision`` = ``fp16`` | ``bf16``) 16-bit: then it is
    ``afrt_conv2d_lp`` / ``afrt_matmul_lp``, and ``stored`` names the inputs whose buffers
    hold that 16-bit type (stored weights); the other inputs are fp32 and rounded to it in
    the call (the casts ``assign-precision`` placed)."""

    precision = opt_prop_def(StringAttr)
    stored = opt_prop_def(ArrayAttr[StringAttr])
    INPUTS: ClassVar[tuple[str, ...]] = ()

    def lp(self) -> str | None:
        return self.precision.data if self.precision is not None else None

    def is_stored(self, name: str) -> bool:
        return self.stored is not None and any(a.data == name for a in self.stored.data)

    def verify_lp(self) -> None:
        if self.precision is None:
            if self.stored is not None:
                raise VerifyException(f"'{self.name}': stored inputs need a precision")
            return
        if self.precision.data not in LP_KINDS:
            raise VerifyException(
                f"'{self.name}': precision {self.precision.data!r} is not one of "
                f"{', '.join(LP_KINDS)}"
            )
        for a in self.stored.data if self.stored is not None else ():
            if a.data not in self.INPUTS:
                raise VerifyException(
                    f"'{self.name}': stored input {a.data!r} is not one of {self.INPUTS}"
                )


@irdl_op_definition
class Conv2DOp(_ContractionOp):
    """``afrt_conv2d_f32(x, w, bias, y, &params, NULL, {epilogue, ctx})`` (NCHW, f32); with
    ``algo = "direct_dw"`` or ``"direct_dw_lanes"`` ``afrt_dwconv2d_f32(x, w, bias, y,
    &params, {epilogue, ctx})``
    (``direct_smallc``: ``afrt_dconv_smallc_f32``, ``winograd``: ``afrt_winograd_f32``,
    ``direct_nchwc``: ``afrt_nchwc_f32``, ``direct_1x1``: ``afrt_conv1x1d_f32``, same
    arguments; ``direct_smallc_b``: ``afrt_dconv_smallcb_f32``, NCHW16c y); with
    ``precision``
    (``algo = "lp_gemm"``): ``afrt_conv2d_lp(AFRT_LP_BF16, x, w, w_stored, bias, ...)``.
    ``algo`` records the algorithm chosen at lowering and must be :func:`conv_algo` of
    ``params`` and ``precision``, with or without ``blocked`` (the runtime follows the same
    rules)."""

    INPUTS: ClassVar[tuple[str, ...]] = ("x", "w")

    name = "clib.conv2d"
    x = operand_def(MemRefType)
    w = operand_def(MemRefType)
    y = operand_def(MemRefType)
    bias = opt_operand_def(MemRefType)
    epilogue = opt_operand_def(PtrType)
    ctx = opt_operand_def(PtrType)
    dyn = var_operand_def(IndexType)
    params = prop_def(DenseArrayBase)
    #: with ``dyn``: ``params`` at the symbols' upper bounds (numbers only), from which
    #: ``algo`` is chosen and the scratch sized
    bounds = opt_prop_def(DenseArrayBase)
    algo = prop_def(StringAttr)
    #: ``assign-layout``'s layouts of x and y (``LAYOUTS``; absent: ``nchw``); a blocked one
    #: prints ``afrt_nchwc_ex_f32(..., flags)``
    x_layout = opt_prop_def(StringAttr)
    y_layout = opt_prop_def(StringAttr)
    #: ``fuse-conv-pool``'s max pool over the conv's output (``POOL_FIELDS``, numbers only):
    #: then y is the pool's output (NCHW16c) and the call is ``afrt_convpool_nc_f32(x, w,
    #: bias, y, &params, &pool, epilogue)``; the conv's output is never stored whole
    pool = opt_prop_def(DenseArrayBase)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def pool_values(self) -> list[int] | None:
        """The fused max pool's ``POOL_FIELDS``, or None."""
        return _opt_ints(self, "pool")

    def layouts(self) -> tuple[str, str]:
        """The layouts of x and y (``nchw`` where absent)."""
        x = self.x_layout.data if self.x_layout is not None else "nchw"
        y = self.y_layout.data if self.y_layout is not None else "nchw"
        return x, y

    def blocked_flags(self) -> int:
        """``afrt_nchwc_ex_f32``'s flags: 1 x is NCHW16c, 2 y is."""
        x, y = self.layouts()
        return (x == BLOCKED_LAYOUT) | 2 * (y == BLOCKED_LAYOUT)

    def bound_values(self) -> list[int]:
        """``params`` with each run-time one at its upper bound (``bounds``): numbers only."""
        bounds = _opt_ints(self, "bounds")
        return self.param_values() if bounds is None else bounds

    def verify_(self) -> None:
        if len(self.param_values()) != len(CONV_FIELDS):
            raise VerifyException(f"'clib.conv2d': params needs {len(CONV_FIELDS)} values")
        verify_dynamic(self.name, self.param_values(), self.dyn)
        given = self.bound_values() if self.bounds is not None else None
        verify_bounds(self.name, self.param_values(), given)
        values = self.bound_values()
        for role, lay in zip(("x", "y"), self.layouts(), strict=True):
            if lay not in LAYOUTS:
                raise VerifyException(
                    f"'clib.conv2d': {role}_layout {lay!r} is not one of {', '.join(LAYOUTS)}"
                )
        want = conv_algo(values, self.lp())
        f: dict[str, int] = dict(zip(CONV_FIELDS, values, strict=True))
        algo = self.algo.data
        if algo in _GEMM_1X1_LAYOUTS:  # assign-layout's 1x1 convs into / out of blocks
            lx, ly = _GEMM_1X1_LAYOUTS[algo]
            if self.lp() is not None or self.layouts() != (lx, ly):
                raise VerifyException(
                    f"'clib.conv2d': {algo} is an fp32 conv from {_LAYOUT_NAMES[lx]} x into "
                    f"{_LAYOUT_NAMES[ly]} y"
                )
            if not gemm_1x1_b_fits(f):
                raise VerifyException(
                    f"'clib.conv2d': {algo} needs a 1x1 stride-1 unpadded group-1 conv"
                )
            want = algo
        elif algo == "direct_1x1_b":  # assign-layout's 1x1 conv into blocks
            if self.lp() is not None or self.layouts()[1] != "nchw16c":
                raise VerifyException("'clib.conv2d': direct_1x1_b is an fp32 conv into NCHW16c y")
            if not gemm_1x1_b_fits(f):
                raise VerifyException(
                    "'clib.conv2d': direct_1x1_b needs a 1x1 stride-1 unpadded group-1 conv"
                )
            want = "direct_1x1_b"
        elif self.algo.data == "direct_smallc_b":  # assign-layout's stem writing blocks
            if self.lp() is not None or self.layouts() != ("nchw", "nchw16c"):
                raise VerifyException(
                    "'clib.conv2d': direct_smallc_b is an fp32 conv from NCHW x into NCHW16c y"
                )
            if not smallc_b_fits(f):
                raise VerifyException(
                    "'clib.conv2d': direct_smallc_b needs a group-1 conv with at most "
                    f"{SMALLC_MAX_C} input and a multiple of {NC_BLOCK} output channels, "
                    "column stride 1 or 2, dilation 1"
                )
            want = "direct_smallc_b"
        elif self.blocked_flags():  # assign-layout's choice: the blocked kernel, any fitting conv
            if self.lp() is not None or not nchwc_fits(f):
                raise VerifyException(
                    "'clib.conv2d': a blocked x or y needs an fp32 conv the blocked kernel "
                    "fits (group 1, 1x1 or 3x3, strides 1 or 2, dilation 1, pads below R)"
                )
            want = "direct_nchwc"
        elif self.algo.data in ("direct_nchwc", "direct_1x1"):  # chosen when blocked is allowed
            want = conv_algo(values, self.lp(), blocked=True)
        if self.algo.data != want:
            raise VerifyException(
                f'\'clib.conv2d\': algo is "{self.algo.data}" but these params take "{want}"'
            )
        if self.is_stored("x"):
            raise VerifyException("'clib.conv2d': x is an activation; only w may be stored")
        self.verify_lp()
        q = self.pool_values()
        if q is not None:
            if len(q) != len(POOL_FIELDS) or self.dyn or algo != "direct_smallc_b":
                raise VerifyException(
                    "'clib.conv2d': a fused max pool needs a direct_smallc_b conv of static "
                    f"sizes and {len(POOL_FIELDS)} pool params"
                )
            if not convpool_fits(f, dict(zip(POOL_FIELDS, q, strict=True))):
                raise VerifyException(
                    "'clib.conv2d': the fused max pool does not read exactly the conv's "
                    f"output or spans more than {CONVPOOL_MAX_ROWS} rows"
                )


@irdl_op_definition
class Conv3DOp(_LibOp):
    """``afrt_conv3d_f32(x, w, bias, y, &params, {epilogue, ctx})``: an NCDHW 3-d convolution
    (fp32; ``params`` in ``CONV3D_FIELDS`` order) on the GEMM core, im2col over D x H x W
    packed into its B panels (``CONV3D_ALGO``), the epilogue fused as for 2-d convs.

    ```
    clib.conv3d(%x, %w, %y, %b, %fn, %ctx) <{params = array<i64: 1, 3, 8, ...>}>
    ```
    """

    name = "clib.conv3d"
    x = operand_def(MemRefType)
    w = operand_def(MemRefType)
    y = operand_def(MemRefType)
    bias = opt_operand_def(MemRefType)
    epilogue = opt_operand_def(PtrType)
    ctx = opt_operand_def(PtrType)
    dyn = var_operand_def(IndexType)
    params = prop_def(DenseArrayBase)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def verify_(self) -> None:
        if len(self.param_values()) != len(CONV3D_FIELDS):
            raise VerifyException(f"'clib.conv3d': params needs {len(CONV3D_FIELDS)} values")
        verify_dynamic(self.name, self.param_values(), self.dyn)


def dwpw_applies(dw: Sequence[Param], pw: Sequence[Param]) -> bool:
    """Whether ``afrt_dwpw_f32`` takes a depthwise conv (``dw``, ``CONV_FIELDS`` order)
    followed by a conv (``pw``) reading its output: ``dw`` is ``direct_dw`` or
    ``direct_dw_lanes`` with non-negative pads, ``pw`` a 1x1 stride-1 unpadded group-1 conv
    over exactly ``dw``'s output (``afrt_dwpw_applies`` in afrt_convchain.h). A run-time
    size (an ``index`` value: batch, spatial sizes) matches only the same value; the fields
    the depthwise choice depends on (channels, group, kernel, pads) must be numbers."""
    d = dict(zip(CONV_FIELDS, dw, strict=True))
    p = dict(zip(CONV_FIELDS, pw, strict=True))
    spatial = ("N", "H", "W", "OH", "OW")  # no role in the choice of direct_dw
    dn: dict[str, int] = {}  # the depthwise fields, the sizes as 1
    for k, v in d.items():
        if k in spatial:
            dn[k] = 1
        elif isinstance(v, int):
            dn[k] = v
    pn = {k: v for k, v in p.items() if isinstance(v, int)}
    if len(dn) != len(CONV_FIELDS) or "group" not in pn:
        return False
    return (
        conv_algo(list(dn.values())) in ("direct_dw", "direct_dw_lanes")
        and min(dn["pad_top"], dn["pad_left"]) >= 0
        and (p["N"], p["C"], p["H"], p["W"]) == (d["N"], d["K"], d["OH"], d["OW"])
        and (p["R"], p["S"], p["stride_h"], p["stride_w"]) == (1, 1, 1, 1)
        and (p["pad_top"], p["pad_left"], p["pad_bottom"], p["pad_right"]) == (0, 0, 0, 0)
        and (p["OH"], p["OW"]) == (p["H"], p["W"])
        and pn["group"] <= 1
    )


#: ``afrt_dwpw_f32``'s blocked band (AVX-512) takes pointwise convs with at least this many
#: output channels (AFRT_CC_BLOCKED_MIN_K in afrt_convchain.h): K = 16 runs its 16-wide
#: register tile (``afrt_cc_uk16_``), fewer would leave lanes of it empty.
CC_BLOCKED_MIN_K = 16
#: ``fuse-conv-chain`` forms a chain on the blocked band when the pointwise conv has at most
#: this many output channels per depthwise tap (K <= 20 * R * S: 180 for 3x3), i.e. when the
#: depthwise conv is at least 1/20 of the pair's multiply-adds. Measured on MobileNet-V2 at
#: 224 (docs/fusion.md, fuse-conv-chain): K 32-96 took 0.83-1.00x the two kernels apart;
#: on its 7x7 maps, since the band's 7-row tiles (afrt_cc_mr_), K 160 0.87-0.93x and K 320
#: 1.03x (with 12-row tiles: 1.05-1.15x).
CC_BLOCKED_K_PER_TAP = 20


def dwpw_algo(dw: Sequence[Param], pw: Sequence[Param], avx512: bool) -> str:
    """How ``afrt_dwpw_f32`` runs a pair ``dwpw_applies`` takes (``afrt_cc_blocked_applies``):
    ``dwpw_blocked`` -- AVX-512, the depthwise conv on ``direct_dw_lanes`` and at least
    ``CC_BLOCKED_MIN_K`` pointwise output channels: the depthwise output stays in 16-channel
    blocks and the pointwise conv reads it transposed (no transposes of the C channels);
    ``dwpw`` -- the depthwise rows transposed back to a channel-major tile for the GEMM."""
    # the channels and the dilation decide; a run-time spatial size plays no part
    d = {k: v if isinstance(v, int) else 1 for k, v in zip(CONV_FIELDS, dw, strict=True)}
    k = pw[CONV_FIELDS.index("K")]
    blocked = avx512 and dw_lanes_applies(d) and isinstance(k, int) and k >= CC_BLOCKED_MIN_K
    return "dwpw_blocked" if blocked else "dwpw"


def dwpw_blocked_pays(dw: Sequence[Param], pw: Sequence[Param], avx512: bool) -> bool:
    """Whether a pair on the blocked band is worth a chain whatever its memory traffic: the
    measured rule ``CC_BLOCKED_K_PER_TAP`` (``fuse-conv-chain``) for more than
    ``CC_BLOCKED_MIN_K`` pointwise output channels, except where the pointwise conv alone
    takes ``gemm_1x1_t``."""
    if dwpw_algo(dw, pw, avx512) != "dwpw_blocked":
        return False
    r, s, k = dw[CONV_FIELDS.index("R")], dw[CONV_FIELDS.index("S")], pw[CONV_FIELDS.index("K")]
    if not (isinstance(r, int) and isinstance(s, int) and isinstance(k, int)):
        return False
    # K = 16 (the 16-wide tile) runs a chain the memory rule formed but is not joined for
    # its own sake: MobileNet-V3-Large's 16 -> 16 at 112x112 measured even with the two
    # kernels apart (0.179 against 0.122 + 0.060 ms, docs/runtime.md, session 22)
    if k <= CC_BLOCKED_MIN_K:
        return False
    # a pointwise conv that alone runs gemm_1x1_t (maps of <= 16 positions) stays apart: it
    # streams its cold weights in k segments, and the zoo MobileNet-V2's 4x4 pairs with
    # K = 160 measured 1.10-1.15x slower as chains
    f = {n: v for n, v in zip(CONV_FIELDS, pw, strict=True) if isinstance(v, int)}
    if len(f) == len(CONV_FIELDS) and gemm_1x1_t_applies(f):
        return False
    return k <= CC_BLOCKED_K_PER_TAP * r * s


#: ``afrt_edwpw_f32`` computes the expand inside the blocked band for at most this many expand
#: input channels (AFRT_EDWPW_MAX_C in afrt_convchain.h): each 16-channel block of the expand
#: re-reads the band's input rows of all of them.
EDWPW_MAX_C = 32


def edwpw_applies(ex: Sequence[Param], dw: Sequence[Param], pw: Sequence[Param]) -> bool:
    """Whether ``afrt_edwpw_f32`` takes an expand conv (``ex``), then a pair ``dwpw_applies``
    takes over its output: ``ex`` a 1x1 stride-1 unpadded group-1 conv with exactly the
    depthwise conv's input as output (``afrt_edwpw_applies``). Every field of ``ex`` must be
    a number."""
    e = {k: v for k, v in zip(CONV_FIELDS, ex, strict=True) if isinstance(v, int)}
    d = dict(zip(CONV_FIELDS, dw, strict=True))
    if len(e) != len(CONV_FIELDS) or not dwpw_applies(dw, pw):
        return False
    return (
        (e["N"], e["K"], e["OH"], e["OW"]) == (d["N"], d["C"], d["H"], d["W"])
        and (e["H"], e["W"]) == (e["OH"], e["OW"])
        and (e["R"], e["S"], e["stride_h"], e["stride_w"]) == (1, 1, 1, 1)
        and (e["pad_top"], e["pad_left"], e["pad_bottom"], e["pad_right"]) == (0, 0, 0, 0)
        and e["group"] <= 1
        and e["C"] >= 1
    )


def edwpw_algo(ex: Sequence[Param], dw: Sequence[Param], pw: Sequence[Param], avx512: bool) -> str:
    """How ``afrt_edwpw_f32`` runs a triple ``edwpw_applies`` takes (``afrt_edwpw_banded``):
    ``expand_dwpw_blocked`` -- the pair on the blocked band (``dwpw_algo``) and at most
    ``EDWPW_MAX_C`` expand input channels: each band computes the expand's rows into the
    depthwise lane tiles, the expand's output never exists whole; ``expand_dwpw`` -- the
    expand apart into a whole intermediate, then ``afrt_dwpw_f32``."""
    c = ex[CONV_FIELDS.index("C")]
    banded = dwpw_algo(dw, pw, avx512) == "dwpw_blocked"
    return (
        "expand_dwpw_blocked"
        if banded and isinstance(c, int) and c <= EDWPW_MAX_C
        else "expand_dwpw"
    )


@irdl_op_definition
class DwPwOp(_LibOp):
    """A depthwise conv, its output clamped to ``[lo, hi]``, then a 1x1 conv on it, in row
    bands with the intermediate in a per-thread L2 tile (the ``fuse-conv-chain`` kernels):
    ``afrt_dwpw_f32(x, wd, bd, lo, hi, wp, bp, y, &pd, &pp, {epilogue, ctx})``
    (afrt_convchain.h). ``params`` are the depthwise conv's ``CONV_FIELDS``, ``pw_params``
    the pointwise conv's; the epilogue runs on the pointwise output (the conv contract).
    ``lo``/``hi`` may be infinite (no clamp on that side). With ``we`` (an expand conv in
    front, ``fuse-conv-chain``'s three-conv kernels): x is the expand's input and the call is
    ``afrt_edwpw_f32(x, we, be, elo, ehi, wd, bd, lo, hi, wp, bp, y, &pe, &pd, &pp, ...)``,
    ``ex_params`` the expand's ``CONV_FIELDS`` (numbers only), its output clamped to
    ``[elo, ehi]``."""

    name = "clib.dwpw"
    x = operand_def(MemRefType)
    wd = operand_def(MemRefType)
    wp = operand_def(MemRefType)
    y = operand_def(MemRefType)
    bd = opt_operand_def(MemRefType)
    bp = opt_operand_def(MemRefType)
    epilogue = opt_operand_def(PtrType)
    ctx = opt_operand_def(PtrType)
    we = opt_operand_def(MemRefType)
    be = opt_operand_def(MemRefType)
    #: run-time params of ``params``, then of ``pw_params`` (:data:`DYNAMIC` entries)
    dyn = var_operand_def(IndexType)
    params = prop_def(DenseArrayBase)
    pw_params = prop_def(DenseArrayBase)
    lo = prop_def(FloatAttr)
    hi = prop_def(FloatAttr)
    ex_params = opt_prop_def(DenseArrayBase)
    elo = opt_prop_def(FloatAttr)
    ehi = opt_prop_def(FloatAttr)
    #: ``assign-layout``'s layout of x (``LAYOUTS``; absent: ``nchw``); ``nchw16c`` prints
    #: ``afrt_dwpw_ex_f32(..., AFRT_NC_IN_BLOCKED)``
    x_layout = opt_prop_def(StringAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def x_blocked(self) -> bool:
        """Whether x is NCHW16c (``gemm_1x1_b``'s output)."""
        return self.x_layout is not None and self.x_layout.data == BLOCKED_LAYOUT

    def pw_values(self) -> list[int]:
        return _ints(self, "pw_params")

    def ex_values(self) -> list[int] | None:
        """The expand conv's ``CONV_FIELDS`` (``we`` present), else None."""
        return _opt_ints(self, "ex_params")

    def ex_clamp(self) -> tuple[float, float]:
        """The expand output's clamp ``(elo, ehi)`` (absent: unbounded)."""
        lo = self.elo.value.data if self.elo is not None else -math.inf
        hi = self.ehi.value.data if self.ehi is not None else math.inf
        return lo, hi

    def params_pair(self) -> tuple[list[Param], list[Param]]:
        """``params`` and ``pw_params``, each :data:`DYNAMIC` entry its ``dyn`` operand."""
        dw, pw = self.param_values(), self.pw_values()
        both = join_params([*dw, *pw], self.dyn)
        return both[: len(dw)], both[len(dw) :]

    def verify_(self) -> None:
        dw, pw = self.param_values(), self.pw_values()
        if len(dw) != len(CONV_FIELDS) or len(pw) != len(CONV_FIELDS):
            raise VerifyException(f"'clib.dwpw': params need {len(CONV_FIELDS)} values each")
        verify_dynamic(self.name, [*dw, *pw], self.dyn)
        if not dwpw_applies(*self.params_pair()):
            raise VerifyException(
                "'clib.dwpw': params are not a depthwise conv followed by a 1x1 conv over its "
                "output"
            )
        if not self.lo.value.data <= self.hi.value.data:
            raise VerifyException("'clib.dwpw': lo must not exceed hi")
        ex = self.ex_values()
        if (ex is None) != (self.we is None) or (ex is None and self.be is not None):
            raise VerifyException("'clib.dwpw': we and ex_params go together (be needs both)")
        if ex is not None:
            if len(ex) != len(CONV_FIELDS) or DYNAMIC in ex:
                raise VerifyException(
                    f"'clib.dwpw': ex_params need {len(CONV_FIELDS)} numbers (no run-time size)"
                )
            if not edwpw_applies(ex, *self.params_pair()):
                raise VerifyException(
                    "'clib.dwpw': ex_params are not a 1x1 conv producing the depthwise input"
                )
            elo, ehi = self.ex_clamp()
            if not elo <= ehi:
                raise VerifyException("'clib.dwpw': elo must not exceed ehi")
            if self.x_blocked():
                raise VerifyException("'clib.dwpw': with an expand, x is NCHW")
        if self.x_layout is not None and self.x_layout.data not in LAYOUTS:
            raise VerifyException(
                f"'clib.dwpw': x_layout {self.x_layout.data!r} is not one of {', '.join(LAYOUTS)}"
            )


class _TwoConvOp(_LibOp):
    """A call running two convs: ``params2`` holds the second conv's ``CONV_FIELDS``, and the
    pair must satisfy the subclass's rule (``RULE``: what afrt.h's run-time check takes)."""

    RULE: ClassVar[Callable[[Sequence[Param], Sequence[Param]], bool]]
    WHAT: ClassVar[str]  # what RULE asks, for the verifier's message

    def params2_values(self) -> list[int]:
        """The second conv's ``CONV_FIELDS``."""
        return _ints(self, "params2")

    def verify_(self) -> None:
        if not type(self).RULE(self.param_values(), self.params2_values()):
            raise VerifyException(f"'{self.name}': params and params2 are not {self.WHAT}")


def _two_1x1(
    f: Sequence[Param], f2: Sequence[Param]
) -> tuple[dict[str, int], dict[str, int]] | None:
    """Two convs' ``CONV_FIELDS`` (numbers only) by name when both are 1x1, unpadded, group 1
    and dilation 1; else None (the common part of ``conv_pair_applies`` and
    ``pw_chain_applies``)."""
    if len(f) != len(CONV_FIELDS) or len(f2) != len(CONV_FIELDS):
        return None
    if any(not isinstance(v, int) or v == DYNAMIC for v in (*f, *f2)):
        return None
    a: dict[str, int] = dict(zip(CONV_FIELDS, f, strict=True))  # type: ignore[arg-type]
    b: dict[str, int] = dict(zip(CONV_FIELDS, f2, strict=True))  # type: ignore[arg-type]
    for d in (a, b):
        if (d["R"], d["S"], d["group"], d["dil_h"], d["dil_w"]) != (1, 1, 1, 1, 1):
            return None
        if d["pad_top"] or d["pad_left"] or d["pad_bottom"] or d["pad_right"]:
            return None
    return a, b


def conv_pair_applies(f: Sequence[Param], f2: Sequence[Param]) -> bool:
    """Whether ``afrt_conv1x1_pair_f32`` takes the joined conv ``f`` and the second input's
    conv ``f2`` (``CONV_FIELDS`` order, numbers only; ``afrt_conv1x1_pair_applies`` in
    afrt.h): both 1x1, unpadded, group 1, dilation 1, the same N, K and output map; ``f``
    stride 1 on its output map with more channels than ``f2`` (its first ``C - f2.C`` come
    from x); ``f2`` any stride whose last row and column lie inside its input."""
    got = _two_1x1(f, f2)
    if got is None:
        return False
    a, b = got
    if min(a["stride_h"], a["stride_w"], b["stride_h"], b["stride_w"]) < 1:
        return False
    return (
        (a["stride_h"], a["stride_w"]) == (1, 1)
        and (a["H"], a["W"]) == (a["OH"], a["OW"])
        and (b["N"], b["K"], b["OH"], b["OW"]) == (a["N"], a["K"], a["OH"], a["OW"])
        and 1 <= b["C"] < a["C"]
        and (b["OH"] - 1) * b["stride_h"] < b["H"]
        and (b["OW"] - 1) * b["stride_w"] < b["W"]
        and min(a["N"], a["K"], a["OH"] * a["OW"]) >= 1
    )


@irdl_op_definition
class ConvPairOp(_TwoConvOp):
    """Two 1x1 convs whose outputs are added, as one GEMM (``fuse-conv-pair``: ResNet's conv3
    and downsample): ``afrt_conv1x1_pair_f32(x, x2, w, bias, w2, bias2, y, &params,
    &params2, {epilogue, ctx})`` (afrt.h): ``y = epilogue(conv(x; w, bias) + conv2(x2; w2,
    bias2))`` as one GEMM. ``params`` are the joined conv's ``CONV_FIELDS`` (stride 1 on the
    output map, ``C`` both inputs' channels: x has ``C - params2.C``), ``params2`` the second
    conv's (x2's channels and map, its stride). Static sizes only."""

    name = "clib.conv_pair"
    x = operand_def(MemRefType)
    x2 = operand_def(MemRefType)
    w = operand_def(MemRefType)
    w2 = operand_def(MemRefType)
    y = operand_def(MemRefType)
    bias = opt_operand_def(MemRefType)
    bias2 = opt_operand_def(MemRefType)
    epilogue = opt_operand_def(PtrType)
    ctx = opt_operand_def(PtrType)
    params = prop_def(DenseArrayBase)
    params2 = prop_def(DenseArrayBase)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    RULE: ClassVar[Callable[[Sequence[Param], Sequence[Param]], bool]] = staticmethod(
        conv_pair_applies
    )
    WHAT: ClassVar[str] = (
        "two 1x1 convs onto one output map (the first stride 1 with more channels than the second)"
    )


def pw_chain_applies(f: Sequence[Param], f2: Sequence[Param]) -> bool:
    """Whether ``afrt_conv1x1_chain_f32`` runs the conv ``f`` and then ``f2`` on its output as
    a chain (``CONV_FIELDS`` order, numbers only; ``afrt_conv1x1_chain_applies`` in afrt.h):
    both 1x1, stride 1, unpadded, group 1, dilation 1, on one N x H x W map, ``f2`` reading
    ``f``'s K channels."""
    got = _two_1x1(f, f2)
    if got is None:
        return False
    for d in got:
        if (d["stride_h"], d["stride_w"]) != (1, 1) or (d["OH"], d["OW"]) != (d["H"], d["W"]):
            return False
        if min(d["N"], d["C"], d["K"], d["H"] * d["W"]) < 1:
            return False
    a, b = got
    return (b["N"], b["C"], b["H"], b["W"]) == (a["N"], a["K"], a["H"], a["W"])


@irdl_op_definition
class PwChainOp(_TwoConvOp):
    """A 1x1 conv and the 1x1 conv reading its output, column block by column block
    (``fuse-pw-chain``): ``afrt_conv1x1_chain_f32(x, w, bias, y, &params, {epilogue, ctx},
    w2, bias2, y2, &params2, {epilogue2, ctx2})`` (afrt.h): ``y = epilogue(conv(x; w, bias))``
    and ``y2 = epilogue2(conv(y; w2, bias2))``; ``y`` is an output too, and may be the
    first epilogue's residual (written in place). Static sizes only."""

    name = "clib.pw_chain"
    x = operand_def(MemRefType)
    w = operand_def(MemRefType)
    y = operand_def(MemRefType)
    w2 = operand_def(MemRefType)
    y2 = operand_def(MemRefType)
    bias = opt_operand_def(MemRefType)
    bias2 = opt_operand_def(MemRefType)
    epilogue = opt_operand_def(PtrType)
    ctx = opt_operand_def(PtrType)
    epilogue2 = opt_operand_def(PtrType)
    ctx2 = opt_operand_def(PtrType)
    params = prop_def(DenseArrayBase)
    params2 = prop_def(DenseArrayBase)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    RULE: ClassVar[Callable[[Sequence[Param], Sequence[Param]], bool]] = staticmethod(
        pw_chain_applies
    )
    WHAT: ClassVar[str] = "two 1x1 stride-1 convs on one map, the second reading the first's output"


@irdl_op_definition
class MatmulOp(_ContractionOp):
    """``afrt_matmul_f32(batch, M, N, K, alpha, a, lda, stride_a, trans_a, b, ..., beta, c,
    ldc, stride_c, {epilogue, ctx})``; ``c`` is read when ``beta != 0``. With ``precision``:
    ``afrt_matmul_lp(AFRT_LP_BF16, batch, M, N, K, alpha, a, a_stored, ..., b, b_stored,
    ...)``."""

    INPUTS: ClassVar[tuple[str, ...]] = ("a", "b")

    name = "clib.matmul"
    a = operand_def(MemRefType)
    b = operand_def(MemRefType)
    c = operand_def(MemRefType)
    epilogue = opt_operand_def(PtrType)
    ctx = opt_operand_def(PtrType)
    dyn = var_operand_def(IndexType)
    params = prop_def(DenseArrayBase)
    alpha = prop_def(FloatAttr)
    beta = prop_def(FloatAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def verify_(self) -> None:
        if len(self.param_values()) != len(MATMUL_FIELDS):
            raise VerifyException(f"'clib.matmul': params needs {len(MATMUL_FIELDS)} values")
        verify_dynamic(self.name, self.param_values(), self.dyn)
        self.verify_lp()


@irdl_op_definition
class Pool2DOp(_LibOp):
    """``afrt_maxpool2d_f32`` / ``afrt_avgpool2d_f32(x, y, &params)`` (NCHW, f32), or
    ``afrt_maxpool2d_nc_f32`` with ``layout = "nchw16c"`` (``assign-layout``'s blocked pools)."""

    name = "clib.pool2d"
    x = operand_def(MemRefType)
    y = operand_def(MemRefType)
    dyn = var_operand_def(IndexType)
    kind = prop_def(StringAttr)
    params = prop_def(DenseArrayBase)
    #: ``assign-layout``'s layout of x and y (``LAYOUTS``; absent: ``nchw``); ``nchw16c``
    #: (max pools only) prints ``afrt_maxpool2d_nc_f32``
    layout = opt_prop_def(StringAttr)

    def blocked(self) -> bool:
        """Whether x and y are NCHW16c."""
        return self.layout is not None and self.layout.data == BLOCKED_LAYOUT

    def verify_(self) -> None:
        if self.kind.data not in ("max", "avg"):
            raise VerifyException("'clib.pool2d': kind must be max or avg")
        if self.layout is not None and self.layout.data not in LAYOUTS:
            raise VerifyException(
                f"'clib.pool2d': layout {self.layout.data!r} is not one of {', '.join(LAYOUTS)}"
            )
        if self.blocked() and self.kind.data != "max":
            raise VerifyException("'clib.pool2d': only max pools run on NCHW16c")
        values = self.param_values()
        if len(values) != len(POOL_FIELDS):
            raise VerifyException(f"'clib.pool2d': params needs {len(POOL_FIELDS)} values")
        verify_dynamic(self.name, values, self.dyn)
        if values[-1] == DYNAMIC:
            raise VerifyException("'clib.pool2d': count_include_pad cannot be a run-time value")


# Integer fields of afrt_attn_params (afrt.h), in ``params`` order; ``bdims`` and
# ``mask_bstr`` are ATTN_MAX_BATCH_DIMS values each (unused ones 1 and 0).
ATTN_MAX_BATCH_DIMS = 6
ATTN_FIELDS = (
    "batch",
    "S",
    "T",
    "D",
    "E",
    "q_bstride",
    "k_bstride",
    "v_bstride",
    "nbd",
    *(f"bdims{i}" for i in range(ATTN_MAX_BATCH_DIMS)),
    *(f"mask_bstr{i}" for i in range(ATTN_MAX_BATCH_DIMS)),
    "mask_s",
    "mask_t",
    "nan_to_zero",
)


#: T (keys) up to which ``afrt_attention_f32`` takes its small-sequence path on AVX-512 builds
#: (``AFRT_ATTN_SMALL_T``; a test compares the two): measured faster than the streaming core
#: from T = 1 to 64 (docs/c-backend.md, "Attention").
ATTN_SMALL_T = 64
ATTN_ALGOS = ("small", "streamed", "run_time")


def attention_algo(params: Sequence[int], has_mask: bool, avx512: bool) -> str:
    """Which ``afrt_attention_f32`` path a call with ``params`` (``ATTN_FIELDS`` order) runs
    (``afrt_attn_small_applies_``): ``small`` on an AVX-512 build when T <= ``ATTN_SMALL_T``
    and the mask, if any, is contiguous along the keys (``mask_t`` 1); else ``streamed``; a
    run-time T (``DYNAMIC``): ``run_time`` (the C chooses per call)."""
    f = dict(zip(ATTN_FIELDS, params, strict=True))
    if avx512 and DYNAMIC in (f["T"], f["mask_t"]):
        return "run_time"
    if avx512 and 1 <= f["T"] <= ATTN_SMALL_T and (not has_mask or f["mask_t"] == 1):
        return "small"
    return "streamed"


@irdl_op_definition
class AttentionOp(_LibOp):
    """``afrt_attention_f32(q, k, v, mask|NULL, out, scale, &params)``: streamed attention
    (online softmax over key blocks; the [S, T] scores are never stored)."""

    name = "clib.attention"
    q = operand_def(MemRefType)
    k = operand_def(MemRefType)
    v = operand_def(MemRefType)
    out = operand_def(MemRefType)
    mask = opt_operand_def(MemRefType)
    dyn = var_operand_def(IndexType)
    params = prop_def(DenseArrayBase)
    scale = prop_def(FloatAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def verify_(self) -> None:
        if len(self.param_values()) != len(ATTN_FIELDS):
            raise VerifyException(f"'clib.attention': params needs {len(ATTN_FIELDS)} values")
        verify_dynamic(self.name, self.param_values(), self.dyn)


CLib = Dialect(
    "clib",
    [
        CallOp,
        FuncRefOp,
        ClampEpilogueOp,
        SiluEpilogueOp,
        GeluEpilogueOp,
        PackOp,
        UnpackOp,
        ViewOp,
        GuardIndexOp,
        IntDivOp,
        FModOp,
        Conv2DOp,
        Conv3DOp,
        DwPwOp,
        ConvPairOp,
        PwChainOp,
        MatmulOp,
        Pool2DOp,
        AttentionOp,
    ],
    [PtrType],
)
