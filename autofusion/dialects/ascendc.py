"""The ``ascendc`` dialect: Ascend C kernels at the level of the Ascend C API.

One ``ascendc.kernel`` is one generated ``extern "C" __global__ __aicore__`` function. Its
block arguments are the ``GM_ADDR`` parameters (kernel inputs, then outputs; the printer adds
``workspace`` and ``tiling``). The body creates global tensors, queues and buffers (the
kernel class's ``Init``) and then either

* a ``ascendc.tile_loop`` (vector kernels): each core walks its block of the flat iteration
  space in UB-sized tiles, with three stages exactly as Ascend C's programming model has them:
  ``copy_in`` (``AllocTensor`` / ``DataCopy`` GM->UB / ``EnQue``), ``compute`` (``DeQue``,
  vector calls, ``EnQue`` of results, ``FreeTensor``) and ``copy_out``; queues have depth
  ``BUFFER_NUM = 2`` so copy-in of tile i+1 overlaps compute of tile i on the NPU; or
* a ``ascendc.work_loop`` (cube kernels): each core takes matmul work units (one batch entry
  and a block of M rows), optionally builds an im2col matrix in its workspace slice, runs the
  high-level ``Matmul`` API (``ascendc.matmul``) and then a ``tile_loop`` over the unit's
  output rows that applies the fused vector epilogue in place.

Example (vector ``y = relu(x + b)``)::

    ascendc.kernel @k0 <{kind = "vector", ...}> {
    ^bb0(%x: !ascendc.gm_addr, %y: !ascendc.gm_addr):
      %xg = ascendc.global_tensor %x <{length = 4096 : i64}> : !ascendc.global<f32>
      %yg = ascendc.global_tensor %y <{length = 4096 : i64}> : !ascendc.global<f32>
      %qx = ascendc.queue <{bytes = 8192 : i64}> : !ascendc.queue<VECIN, 2>
      %qy = ascendc.queue <{bytes = 8192 : i64}> : !ascendc.queue<VECOUT, 2>
      ascendc.tile_loop <{extent = "block", total = 4096 : i64}> ({
        %l = ascendc.alloc_tensor %qx : !ascendc.queue<VECIN, 2> -> !ascendc.local<f32>
        ascendc.copy_in %l, %xg : !ascendc.local<f32>, !ascendc.global<f32>
        ascendc.enque %qx, %l : !ascendc.queue<VECIN, 2>, !ascendc.local<f32>
      }, { ... ascendc.vunary "Relu" %o, %a ... }, { ... ascendc.copy_out %yg, %r ... })
      ascendc.return
    }

Lengths are element counts of the tensor's element type (f32 only for now).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, Region, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

# ---------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------


@irdl_attr_definition
class GmAddrType(ParametrizedAttribute, TypeAttribute):
    """``GM_ADDR``: a kernel parameter pointing into global (HBM) memory."""

    name = "ascendc.gm_addr"


@irdl_attr_definition
class GlobalTensorType(ParametrizedAttribute, TypeAttribute):
    """``AscendC::GlobalTensor<T>`` over a GM buffer."""

    name = "ascendc.global"
    element_type: Attribute


@irdl_attr_definition
class LocalTensorType(ParametrizedAttribute, TypeAttribute):
    """``AscendC::LocalTensor<T>``: one tile in the unified buffer (UB)."""

    name = "ascendc.local"
    element_type: Attribute


POSITIONS = ("VECIN", "VECOUT", "VECCALC")


@irdl_attr_definition
class QueueType(ParametrizedAttribute, TypeAttribute):
    """``AscendC::TQue<TPosition::POS, depth>``; printed ``!ascendc.queue<VECIN, 2>``."""

    name = "ascendc.queue"
    position: StringAttr
    depth: IntAttr

    def __init__(self, position: str, depth: int):
        super().__init__(StringAttr(position), IntAttr(depth))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.position.data}, {self.depth.data}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        parser.parse_punctuation("<")
        pos = parser.parse_identifier()
        parser.parse_punctuation(",")
        depth = parser.parse_integer()
        parser.parse_punctuation(">")
        return (StringAttr(pos), IntAttr(depth))

    def verify(self) -> None:
        if self.position.data not in POSITIONS:
            raise VerifyException(f"!ascendc.queue: unknown position {self.position.data}")
        if self.depth.data < 1:
            raise VerifyException("!ascendc.queue: depth must be >= 1")


@irdl_attr_definition
class TBufType(ParametrizedAttribute, TypeAttribute):
    """``AscendC::TBuf<TPosition::VECCALC>``: scratch UB memory without queue semantics."""

    name = "ascendc.tbuf"


def _i64(v: int) -> IntegerAttr:
    return IntegerAttr(int(v), 64)


TILING_KINDS = ("vector", "rows", "cube", "cube_epilogue", "attention")
CUBE_TILING_KINDS = ("cube", "cube_epilogue", "attention")


def _int_dict(d: DictionaryAttr, what: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for k, v in d.data.items():
        if not isinstance(v, IntegerAttr):
            raise VerifyException(f"#ascendc.tiling: {what} {k} is not an integer")
        out[k] = int(v.value.data)
    return out


@irdl_attr_definition
class TilingAttr(ParametrizedAttribute):
    """The tiling record of one kernel: ``#ascendc.tiling<"kind", {inputs}, {values},
    [runtime]>``.

    ``kind`` (one of ``TILING_KINDS``) names the formula (``lowering/ascendc/tiling.py``, written
    once and both evaluated there and printed as the host tiling function); ``inputs`` are the
    named sizes and configuration it reads; ``values`` the tiling-data struct fields it gives for
    them, in struct order; ``runtime`` the inputs the host tiling function takes as run-time
    arguments (their value in ``inputs`` is the upper bound the ``values`` are computed for).
    """

    name = "ascendc.tiling"
    kind: StringAttr
    inputs: DictionaryAttr
    values: DictionaryAttr
    runtime: ArrayAttr[StringAttr]

    def __init__(
        self,
        kind: str,
        inputs: dict[str, int],
        values: dict[str, int],
        runtime: Sequence[str] = (),
    ):
        super().__init__(
            StringAttr(kind),
            DictionaryAttr({k: _i64(v) for k, v in inputs.items()}),
            DictionaryAttr({k: _i64(v) for k, v in values.items()}),
            ArrayAttr([StringAttr(r) for r in runtime]),
        )

    def input_values(self) -> dict[str, int]:
        return _int_dict(self.inputs, "input")

    def field_values(self) -> dict[str, int]:
        return _int_dict(self.values, "value")

    def runtime_names(self) -> tuple[str, ...]:
        return tuple(r.data for r in self.runtime.data)

    def verify(self) -> None:
        if self.kind.data not in TILING_KINDS:
            raise VerifyException(f"#ascendc.tiling: unknown kind {self.kind.data!r}")
        inputs = self.input_values()
        self.field_values()
        for r in self.runtime_names():
            if r not in inputs:
                raise VerifyException(f"#ascendc.tiling: run-time size {r} is not an input")


# ---------------------------------------------------------------------------------------
# Kernel structure
# ---------------------------------------------------------------------------------------


@irdl_op_definition
class KernelOp(IRDLOperation):
    """One Ascend C kernel. ``kind`` is ``vector`` (AIV only) or ``cube`` (Matmul + epilogue).

    ``arg_names`` names every GM_ADDR block argument (inputs first, ``num_inputs`` of them);
    ``tiling`` is the kernel's tiling record (``#ascendc.tiling``): the host tiling function
    is printed from its kind and inputs, and its values fill the tiling-data struct.
    """

    name = "ascendc.kernel"
    sym_name = prop_def(SymbolNameConstraint())
    kind = prop_def(StringAttr)
    pattern = prop_def(StringAttr)
    origins = prop_def(ArrayAttr[StringAttr])
    arg_names = prop_def(ArrayAttr[StringAttr])
    num_inputs = prop_def(IntegerAttr)
    tiling = prop_def(TilingAttr)
    #: why the kernel keeps compile-time sizes when run-time sizes were asked for
    static_reason = opt_prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(SymbolOpInterface())
    assembly_format = "$sym_name attr-dict-with-keyword $body"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self,
        name: str,
        kind: str,
        pattern: str,
        origins: Sequence[str],
        arg_names: Sequence[str],
        num_inputs: int,
        tiling: TilingAttr,
        body: Region,
    ):
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "kind": StringAttr(kind),
                "pattern": StringAttr(pattern),
                "origins": ArrayAttr([StringAttr(o) for o in origins]),
                "arg_names": ArrayAttr([StringAttr(a) for a in arg_names]),
                "num_inputs": _i64(num_inputs),
                "tiling": tiling,
            },
            regions=[body],
        )

    def tiling_values(self) -> dict[str, int]:
        """The tiling-data struct's fields and their values, in struct order."""
        return self.tiling.field_values()

    def verify_(self) -> None:
        if self.kind.data not in ("vector", "cube"):
            raise VerifyException(f"'ascendc.kernel': unknown kind {self.kind.data!r}")
        if (self.kind.data == "cube") != (self.tiling.kind.data in CUBE_TILING_KINDS):
            raise VerifyException(
                f"'ascendc.kernel': a {self.kind.data} kernel with {self.tiling.kind.data} tiling"
            )
        args = self.body.block.args
        if len(args) != len(self.arg_names.data):
            raise VerifyException(
                f"'ascendc.kernel': {len(args)} block arguments but {len(self.arg_names.data)} "
                "names"
            )
        for a in args:
            if not isinstance(a.type, GmAddrType):
                raise VerifyException("'ascendc.kernel': block arguments must be !ascendc.gm_addr")
        if not isinstance(self.body.block.last_op, ReturnOp):
            raise VerifyException("'ascendc.kernel': body must end in ascendc.return")


@irdl_op_definition
class ReturnOp(IRDLOperation):
    name = "ascendc.return"
    traits = traits_def(IsTerminator())
    assembly_format = "attr-dict"
    irdl_options = (ParsePropInAttrDict(),)


@irdl_op_definition
class GlobalTensorOp(IRDLOperation):
    """``g.SetGlobalBuffer((__gm__ T*)addr, length)``.

    ``runtime_length`` (kernels with run-time tiling) says how the length follows from the
    tiling struct instead: ``total`` (``totalLength``) or ``total_rows`` (``totalLength *
    rowLength``); ``length`` is then the upper bound.
    """

    name = "ascendc.global_tensor"
    addr = operand_def(GmAddrType)
    length = prop_def(IntegerAttr)
    runtime_length = opt_prop_def(StringAttr)
    result = result_def(GlobalTensorType)
    assembly_format = "$addr attr-dict `:` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, addr: SSAValue, length: int, elem: Attribute):
        super().__init__(
            operands=[addr],
            properties={"length": _i64(length)},
            result_types=[GlobalTensorType(elem)],
        )

    def verify_(self) -> None:
        if self.runtime_length is not None and self.runtime_length.data not in RUNTIME_LENGTHS:
            raise VerifyException(
                f"'ascendc.global_tensor': unknown runtime_length {self.runtime_length.data!r}"
            )


RUNTIME_LENGTHS = ("total", "total_rows")


def set_runtime_length(g: SSAValue, how: str) -> None:
    """Size the global tensor ``g`` (an ``ascendc.global_tensor`` result) from the run-time
    tiling: ``how`` is one of ``RUNTIME_LENGTHS``."""
    assert isinstance(g.owner, GlobalTensorOp)
    g.owner.properties["runtime_length"] = StringAttr(how)


@irdl_op_definition
class QueueOp(IRDLOperation):
    """``pipe.InitBuffer(q, depth, bytes)`` for a ``TQue`` member.

    ``size`` says how the host-computed tiling sizes the buffer: ``tile`` (default,
    ``tileLength`` elements), ``tile_rows`` (``tileLength * rowStride``), ``tile_values``
    (``tileLength`` rounded up to 32 bytes), ``row`` (``rowStride``), ``block`` (32 bytes);
    attention kernels: ``score_block`` (``blockQ * blockT``), ``acc_block`` (``blockQ *
    rowStrideE``), ``key_row`` (``blockT``), ``query_stats`` (3 x ``blockQ`` rounded up to 8).
    ``bytes`` is the value for the IR's static tiling.
    """

    name = "ascendc.queue"
    bytes = prop_def(IntegerAttr)
    size = opt_prop_def(StringAttr)
    result = result_def(QueueType)
    assembly_format = "attr-dict `:` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, position: str, depth: int, nbytes: int):
        super().__init__(
            properties={"bytes": _i64(nbytes)}, result_types=[QueueType(position, depth)]
        )

    def verify_(self) -> None:
        if int(self.bytes.value.data) % 32:
            raise VerifyException("'ascendc.queue': buffer bytes must be a multiple of 32")


@irdl_op_definition
class TBufOp(IRDLOperation):
    """``pipe.InitBuffer(buf, bytes)`` for a ``TBuf<VECCALC>`` member (``size`` as for
    ``ascendc.queue``)."""

    name = "ascendc.tbuf"
    bytes = prop_def(IntegerAttr)
    size = opt_prop_def(StringAttr)
    result = result_def(TBufType)
    assembly_format = "attr-dict `:` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, nbytes: int):
        super().__init__(properties={"bytes": _i64(nbytes)}, result_types=[TBufType()])

    def verify_(self) -> None:
        if int(self.bytes.value.data) % 32:
            raise VerifyException("'ascendc.tbuf': buffer bytes must be a multiple of 32")


@irdl_op_definition
class LoadOperandOp(IRDLOperation):
    """Copy a small GM tensor (a broadcast operand) wholly into its own UB buffer at Init."""

    name = "ascendc.load_operand"
    source = operand_def(GlobalTensorType)
    length = prop_def(IntegerAttr)
    result = result_def(LocalTensorType)
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, source: SSAValue, length: int, elem: Attribute):
        super().__init__(
            operands=[source],
            properties={"length": _i64(length)},
            result_types=[LocalTensorType(elem)],
        )


@irdl_op_definition
class TileLoopOp(IRDLOperation):
    """Walk a range of a flat iteration space of ``total`` elements in tiles.

    ``extent = "block"``: this core's block of ``[0, total)`` (vector kernels).
    ``extent = "problem"``: the output rows of the current work unit (cube epilogues).
    ``extent = "rows"``: ``total`` rows of ``row_length`` elements (row-wise reductions); a
    tile is ``tileLength`` whole rows, each padded to ``rowStride`` in UB (2-d DataCopyPad);
    results have ``out_row_length`` elements per row (``row_length``, or 1 for reductions).
    With ``in_row_stride`` (copy loops of concat / split) rows are read from GM
    ``in_row_stride`` elements apart starting at ``in_offset`` and written ``out_row_stride``
    apart from ``out_offset``; every row sits ``rowStride`` apart in UB.
    Each iteration runs ``copy_in``, ``compute``, ``copy_out``; inside them ``copy_in`` /
    ``copy_out`` move the current tile and vector calls process the tile's length.
    """

    name = "ascendc.tile_loop"
    extent = prop_def(StringAttr)
    total = prop_def(IntegerAttr)
    row_length = opt_prop_def(IntegerAttr)
    out_row_length = opt_prop_def(IntegerAttr)
    # copy loops (concat / split): GM row strides and element offsets of source and result
    in_row_stride = opt_prop_def(IntegerAttr)
    out_row_stride = opt_prop_def(IntegerAttr)
    in_offset = opt_prop_def(IntegerAttr)
    out_offset = opt_prop_def(IntegerAttr)
    copy_in_region = region_def("single_block")
    compute_region = region_def("single_block")
    copy_out_region = region_def("single_block")
    assembly_format = "attr-dict-with-keyword $copy_in_region $compute_region $copy_out_region"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, extent: str, total: int, regions: Sequence[Region]):
        super().__init__(
            properties={"extent": StringAttr(extent), "total": _i64(total)}, regions=list(regions)
        )

    def verify_(self) -> None:
        if self.extent.data not in ("block", "problem", "rows"):
            raise VerifyException(f"'ascendc.tile_loop': unknown extent {self.extent.data!r}")


@irdl_op_definition
class WorkLoopOp(IRDLOperation):
    """Loop over cube work units ``u = blockIdx, blockIdx + blockNum, ... < units``."""

    name = "ascendc.work_loop"
    units = prop_def(IntegerAttr)
    body = region_def("single_block")
    assembly_format = "attr-dict-with-keyword $body"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, units: int, body: Region):
        super().__init__(properties={"units": _i64(units)}, regions=[body])


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of tile-loop stages and work loops."""

    name = "ascendc.yield"
    traits = traits_def(IsTerminator())
    assembly_format = "attr-dict"
    irdl_options = (ParsePropInAttrDict(),)


# ---------------------------------------------------------------------------------------
# Queues and buffers
# ---------------------------------------------------------------------------------------


@irdl_op_definition
class AllocTensorOp(IRDLOperation):
    name = "ascendc.alloc_tensor"
    queue = operand_def(QueueType)
    result = result_def(LocalTensorType)
    assembly_format = "$queue attr-dict `:` type($queue) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, queue: SSAValue, elem: Attribute):
        super().__init__(operands=[queue], result_types=[LocalTensorType(elem)])


@irdl_op_definition
class EnQueOp(IRDLOperation):
    name = "ascendc.enque"
    queue = operand_def(QueueType)
    tensor = operand_def(LocalTensorType)
    assembly_format = "$queue `,` $tensor attr-dict `:` type($queue) `,` type($tensor)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, queue: SSAValue, tensor: SSAValue):
        super().__init__(operands=[queue, tensor])


@irdl_op_definition
class DeQueOp(IRDLOperation):
    name = "ascendc.deque"
    queue = operand_def(QueueType)
    result = result_def(LocalTensorType)
    assembly_format = "$queue attr-dict `:` type($queue) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, queue: SSAValue, elem: Attribute):
        super().__init__(operands=[queue], result_types=[LocalTensorType(elem)])


@irdl_op_definition
class FreeTensorOp(IRDLOperation):
    name = "ascendc.free_tensor"
    queue = operand_def(QueueType)
    tensor = operand_def(LocalTensorType)
    assembly_format = "$queue `,` $tensor attr-dict `:` type($queue) `,` type($tensor)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, queue: SSAValue, tensor: SSAValue):
        super().__init__(operands=[queue, tensor])


@irdl_op_definition
class TBufGetOp(IRDLOperation):
    name = "ascendc.tbuf_get"
    buf = operand_def(TBufType)
    result = result_def(LocalTensorType)
    assembly_format = "$buf attr-dict `:` type($buf) `->` type($result)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, buf: SSAValue, elem: Attribute):
        super().__init__(operands=[buf], result_types=[LocalTensorType(elem)])


# ---------------------------------------------------------------------------------------
# Data movement and vector compute (inside tile-loop stages: the current tile)
# ---------------------------------------------------------------------------------------


@irdl_op_definition
class CopyInOp(IRDLOperation):
    """``DataCopy(local, global[tileOffset], len)`` (``DataCopyPad`` for a ragged tail)."""

    name = "ascendc.copy_in"
    dst = operand_def(LocalTensorType)
    src = operand_def(GlobalTensorType)
    assembly_format = "$dst `,` $src attr-dict `:` type($dst) `,` type($src)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, dst: SSAValue, src: SSAValue):
        super().__init__(operands=[dst, src])


@irdl_op_definition
class CopyOutOp(IRDLOperation):
    """``DataCopy(global[tileOffset], local, len)`` (``DataCopyPad`` for a ragged tail)."""

    name = "ascendc.copy_out"
    dst = operand_def(GlobalTensorType)
    src = operand_def(LocalTensorType)
    assembly_format = "$dst `,` $src attr-dict `:` type($dst) `,` type($src)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, dst: SSAValue, src: SSAValue):
        super().__init__(operands=[dst, src])


VEC_BINARY = ("Add", "Sub", "Mul", "Div", "Max", "Min")
VEC_UNARY = ("Exp", "Ln", "Abs", "Sqrt", "Reciprocal", "Relu")
VEC_SCALAR = ("Adds", "Muls", "Maxs", "Mins", "LeakyRelu")


@irdl_op_definition
class VecBinaryOp(IRDLOperation):
    """``Fn(dst, a, b, len)`` for Fn in Add/Sub/Mul/Div/Max/Min."""

    name = "ascendc.vbinary"
    fn = prop_def(StringAttr)
    dst = operand_def(LocalTensorType)
    lhs = operand_def(LocalTensorType)
    rhs = operand_def(LocalTensorType)
    assembly_format = (
        "$fn $dst `,` $lhs `,` $rhs attr-dict `:` type($dst) `,` type($lhs) `,` type($rhs)"
    )
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, fn: str, dst: SSAValue, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[dst, lhs, rhs], properties={"fn": StringAttr(fn)})

    def verify_(self) -> None:
        if self.fn.data not in VEC_BINARY:
            raise VerifyException(f"'ascendc.vbinary': unknown function {self.fn.data}")


@irdl_op_definition
class VecUnaryOp(IRDLOperation):
    """``Fn(dst, src, len)`` for Fn in Exp/Ln/Abs/Sqrt/Reciprocal/Relu (``count``: a fixed
    element count instead of the tile / row length)."""

    name = "ascendc.vunary"
    fn = prop_def(StringAttr)
    count = opt_prop_def(IntegerAttr)
    dst = operand_def(LocalTensorType)
    src = operand_def(LocalTensorType)
    assembly_format = "$fn $dst `,` $src attr-dict `:` type($dst) `,` type($src)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, fn: str, dst: SSAValue, src: SSAValue, count: int | None = None):
        props: dict[str, Attribute] = {"fn": StringAttr(fn)}
        if count is not None:
            props["count"] = _i64(count)
        super().__init__(operands=[dst, src], properties=props)

    def verify_(self) -> None:
        if self.fn.data not in VEC_UNARY:
            raise VerifyException(f"'ascendc.vunary': unknown function {self.fn.data}")


@irdl_op_definition
class VecScalarOp(IRDLOperation):
    """``Fn(dst, src, s, len)`` for Fn in Adds/Muls/Maxs/Mins/LeakyRelu.

    ``s`` is the literal ``scalar``, or element 0 of ``scalar_src`` (a loaded operand),
    negated when ``negate`` is set.
    """

    name = "ascendc.vscalar"
    fn = prop_def(StringAttr)
    count = opt_prop_def(IntegerAttr)
    dst = operand_def(LocalTensorType)
    src = operand_def(LocalTensorType)
    scalar_src = opt_operand_def(LocalTensorType)
    scalar = prop_def(FloatAttr)
    negate = opt_prop_def(BoolAttr)
    assembly_format = (
        "$fn $dst `,` $src (`,` $scalar_src^)? attr-dict `:` type($dst) `,` type($src) (`,` "
        "type($scalar_src)^)?"
    )
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self,
        fn: str,
        dst: SSAValue,
        src: SSAValue,
        scalar: float = 0.0,
        scalar_src: SSAValue | None = None,
        negate: bool = False,
        count: int | None = None,
    ):
        props: dict[str, Attribute] = {"fn": StringAttr(fn), "scalar": FloatAttr(float(scalar), 64)}
        if negate:
            props["negate"] = BoolAttr.from_bool(True)
        if count is not None:
            props["count"] = _i64(count)
        super().__init__(
            operands=[dst, src, [scalar_src] if scalar_src is not None else []], properties=props
        )

    def verify_(self) -> None:
        if self.fn.data not in VEC_SCALAR:
            raise VerifyException(f"'ascendc.vscalar': unknown function {self.fn.data}")


@irdl_op_definition
class DuplicateOp(IRDLOperation):
    """``Duplicate(dst, s, len)``."""

    name = "ascendc.duplicate"
    dst = operand_def(LocalTensorType)
    scalar = prop_def(FloatAttr)
    assembly_format = "$dst attr-dict `:` type($dst)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, dst: SSAValue, scalar: float):
        super().__init__(operands=[dst], properties={"scalar": FloatAttr(float(scalar), 64)})


@irdl_op_definition
class BroadcastOp(IRDLOperation):
    """Expand a loaded operand to the current tile: ``dst[j] = src[map(tileOffset + j)]``.

    ``map`` decomposes a flat index of ``out_shape`` and recombines it with ``src_strides``
    (0 on broadcast dimensions; negative for reversed slices) plus ``src_offset``. Printed as
    a scalar GetValue/SetValue loop. ``src`` is a loaded UB operand, or a global tensor (large
    operands; transpose / expand / slice of a kernel input) read with scalar GM reads.
    """

    name = "ascendc.broadcast"
    dst = operand_def(LocalTensorType)
    src = operand_def(LocalTensorType | GlobalTensorType)
    out_shape = prop_def(DenseArrayBase)
    src_strides = prop_def(DenseArrayBase)
    src_offset = opt_prop_def(IntegerAttr)
    assembly_format = "$dst `,` $src attr-dict `:` type($dst) `,` type($src)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self,
        dst: SSAValue,
        src: SSAValue,
        out_shape: Sequence[int],
        strides: Sequence[int],
        offset: int = 0,
    ):
        from autofusion.dialects.base import i64_array

        props: dict[str, Attribute] = {
            "out_shape": i64_array(out_shape),
            "src_strides": i64_array(strides),
        }
        if offset:
            props["src_offset"] = _i64(offset)
        super().__init__(operands=[dst, src], properties=props)

    def verify_(self) -> None:
        if len(self.out_shape) != len(self.src_strides):
            raise VerifyException("'ascendc.broadcast': out_shape and src_strides ranks differ")


@irdl_op_definition
class RowLoopOp(IRDLOperation):
    """Inside a ``rows`` tile loop's compute stage: run the body once per row of the tile."""

    name = "ascendc.row_loop"
    body = region_def("single_block")
    assembly_format = "attr-dict-with-keyword $body"

    def __init__(self, body: Region):
        super().__init__(regions=[body])


@irdl_op_definition
class RowViewOp(IRDLOperation):
    """The current row of a tile: ``t[r * rowStride]`` (``per_row = 1``: ``t[r]``, unused)."""

    name = "ascendc.row"
    tensor = operand_def(LocalTensorType)
    result = result_def(LocalTensorType)
    assembly_format = "$tensor attr-dict `:` type($tensor) `->` type($result)"

    def __init__(self, tensor: SSAValue):
        super().__init__(operands=[tensor], result_types=[tensor.type])


VEC_REDUCE = ("ReduceSum", "ReduceMax")


@irdl_op_definition
class VecReduceOp(IRDLOperation):
    """``Fn(dst, src, work, rowLength)``: dst[0] = sum / max of the row."""

    name = "ascendc.vreduce"
    fn = prop_def(StringAttr)
    dst = operand_def(LocalTensorType)
    src = operand_def(LocalTensorType)
    work = operand_def(LocalTensorType)
    assembly_format = (
        "$fn $dst `,` $src `,` $work attr-dict `:` type($dst) `,` type($src) `,` type($work)"
    )
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, fn: str, dst: SSAValue, src: SSAValue, work: SSAValue):
        super().__init__(operands=[dst, src, work], properties={"fn": StringAttr(fn)})

    def verify_(self) -> None:
        if self.fn.data not in VEC_REDUCE:
            raise VerifyException(f"'ascendc.vreduce': unknown function {self.fn.data}")


@irdl_op_definition
class StoreRowValueOp(IRDLOperation):
    """``dst.SetValue(r, src.GetValue(0))``: one result per row of a reduction."""

    name = "ascendc.store_row_value"
    dst = operand_def(LocalTensorType)
    src = operand_def(LocalTensorType)
    assembly_format = "$dst `,` $src attr-dict `:` type($dst) `,` type($src)"

    def __init__(self, dst: SSAValue, src: SSAValue):
        super().__init__(operands=[dst, src])


@irdl_op_definition
class PoolWindowOp(IRDLOperation):
    """2-d max / average pooling of a GM tensor (NCHW) into the current tile:
    ``dst[j]`` = the window reduction for output element ``tileOffset + j`` (scalar loop).

    Max: padding never wins. Average: the divisor counts window positions inside the input,
    plus explicit pads when ``count_include_pad`` (never the ceil-mode overhang).
    """

    name = "ascendc.pool_window"
    dst = operand_def(LocalTensorType)
    src = operand_def(GlobalTensorType)
    kind = prop_def(StringAttr)
    input_shape = prop_def(DenseArrayBase)
    out_hw = prop_def(DenseArrayBase)
    kernel = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)
    count_include_pad = prop_def(BoolAttr)
    assembly_format = "$kind $dst `,` $src attr-dict `:` type($dst) `,` type($src)"
    irdl_options = (ParsePropInAttrDict(),)

    def verify_(self) -> None:
        if self.kind.data not in ("max", "avg"):
            raise VerifyException(f"'ascendc.pool_window': unknown kind {self.kind.data!r}")


# ---------------------------------------------------------------------------------------
# Cube work
# ---------------------------------------------------------------------------------------


@irdl_op_definition
class Im2ColOp(IRDLOperation):
    """Build the ``[C/g*kh*kw, OH*OW]`` column matrix of image ``u / groups``, group
    ``u % groups`` of an NCHW input in this core's workspace slice (scalar loop)."""

    name = "ascendc.im2col"
    image = operand_def(GlobalTensorType)
    workspace = operand_def(GlobalTensorType)
    input_shape = prop_def(DenseArrayBase)
    kernel = prop_def(DenseArrayBase)
    out_hw = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    pads = prop_def(DenseArrayBase)
    dilations = prop_def(DenseArrayBase)
    groups = prop_def(IntegerAttr)
    assembly_format = "$image `,` $workspace attr-dict `:` type($image) `,` type($workspace)"
    irdl_options = (ParsePropInAttrDict(),)


@irdl_op_definition
class MatmulOp(IRDLOperation):
    """``Matmul`` high-level API on the current work unit: ``C = op(A) x op(B)``.

    Unit ``u`` covers batch ``b = u / m_blocks`` and rows ``(u % m_blocks) * singleCoreM``...
    Operand offsets: ``(b % period) * stride`` (``period = 0``: no modulo). ``b_from_workspace``
    takes B from this core's workspace slice (im2col).
    """

    name = "ascendc.matmul"
    a = operand_def(GlobalTensorType)
    b = operand_def(GlobalTensorType)
    c = operand_def(GlobalTensorType)
    bias = opt_operand_def(GlobalTensorType)
    m = prop_def(IntegerAttr)
    n = prop_def(IntegerAttr)
    k = prop_def(IntegerAttr)
    trans_a = prop_def(BoolAttr)
    trans_b = prop_def(BoolAttr)
    m_blocks = prop_def(IntegerAttr)
    a_stride = prop_def(IntegerAttr)
    a_period = prop_def(IntegerAttr)
    b_stride = prop_def(IntegerAttr)
    b_period = prop_def(IntegerAttr)
    c_stride = prop_def(IntegerAttr)
    assembly_format = (
        "$a `,` $b `,` $c (`,` $bias^)? attr-dict `:` type($a) `,` type($b) `,` type($c)"
        " (`,` type($bias)^)?"
    )
    irdl_options = (ParsePropInAttrDict(),)


@irdl_op_definition
class AttentionOp(IRDLOperation):
    """One work unit of streaming (flash-style) ``softmax(q k^T * scale + mask) v`` on one
    core: batch entry ``u / qBlocks``, query rows ``[q0, q0 + blockQ)``. The ``[S, T]`` scores
    are never stored: for each block of ``blockT`` keys (the last may be shorter),

    1. ``Matmul`` (transposed B) of the q rows and the key block into this core's workspace
       score block ``[blockQ, blockT]``;
    2. a pass over the block in UB: ``Muls`` by ``scale``, ``Add`` of the mask row
       (``mask_strides`` over ``[*batch, S, T]``), then the online softmax per row: block max
       (``ReduceMax``), new running max ``m``, rescale factor ``alpha = exp(m_old - m)``,
       ``p = exp(s - m)``, running sum ``l = l * alpha + sum(p)``; ``p`` goes back to the
       workspace;
    3. ``Matmul`` of ``p`` and the value block into the unit's output rows (scratch until
       the end), then ``acc = acc * alpha + p v`` in UB;

    and at the end ``out = acc / l``. A row whose every score is ``-inf`` has ``l = 0`` and
    gives NaN (0/0), like the two-pass softmax; with ``nan_to_zero`` (the exporters' IsNaN
    guard) a row with ``l = 0`` or a NaN running max gives 0. Operand offsets per batch entry:
    ``b * stride``, or, when q, k and v batch dims broadcast (k / v shared by heads), from
    ``batch_strides`` (q's, k's and v's element stride per dim of ``batch_shape``, 0 where
    broadcast). Block sizes come from the tiling record (kind ``attention``).
    """

    name = "ascendc.attention"
    q = operand_def(GlobalTensorType)
    k = operand_def(GlobalTensorType)
    v = operand_def(GlobalTensorType)
    out = operand_def(GlobalTensorType)
    workspace = operand_def(GlobalTensorType)
    mask = opt_operand_def(GlobalTensorType)
    sizes = prop_def(DenseArrayBase)  # S, T, D, E
    strides = prop_def(DenseArrayBase)  # q, k, v, out per unit
    scale = prop_def(FloatAttr)
    batch_shape = prop_def(DenseArrayBase)
    mask_strides = opt_prop_def(DenseArrayBase)
    batch_strides = opt_prop_def(DenseArrayBase)  # q, k, v per batch dim, when broadcast
    nan_to_zero = opt_prop_def(IntegerAttr)
    assembly_format = (
        "$q `,` $k `,` $v `,` $out `,` $workspace (`,` $mask^)? attr-dict `:` type($q) `,` "
        "type($k) `,` "
        "type($v) `,` type($out) `,` type($workspace) (`,` type($mask)^)?"
    )
    irdl_options = (ParsePropInAttrDict(),)


# ---------------------------------------------------------------------------------------
# Host side: launch a kernel from @main
# ---------------------------------------------------------------------------------------


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """Run ``@kernel`` on tensors (the host program's ``kernel<<<blockDim, ...>>>``)."""

    name = "ascendc.launch"
    kernel = prop_def(SymbolRefAttr)
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    assembly_format = "$kernel `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs)"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(self, kernel: str, inputs: Sequence[SSAValue], result_types: Sequence[Attribute]):
        super().__init__(
            operands=[list(inputs)],
            result_types=[list(result_types)],
            properties={"kernel": SymbolRefAttr(kernel)},
        )


AscendC = Dialect(
    "ascendc",
    [
        KernelOp,
        ReturnOp,
        GlobalTensorOp,
        QueueOp,
        TBufOp,
        LoadOperandOp,
        TileLoopOp,
        WorkLoopOp,
        YieldOp,
        AllocTensorOp,
        EnQueOp,
        DeQueOp,
        FreeTensorOp,
        TBufGetOp,
        CopyInOp,
        CopyOutOp,
        VecBinaryOp,
        VecUnaryOp,
        VecScalarOp,
        DuplicateOp,
        BroadcastOp,
        Im2ColOp,
        MatmulOp,
        LaunchOp,
        RowLoopOp,
        RowViewOp,
        VecReduceOp,
        StoreRowValueOp,
        PoolWindowOp,
        AttentionOp,
    ],
    [GmAddrType, GlobalTensorType, LocalTensorType, QueueType, TBufType, TilingAttr],
)
