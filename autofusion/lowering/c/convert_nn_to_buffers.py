"""``convert-nn-to-buffers``: tensors to buffers, one function per kernel, destination passing.

Effect on ``@main`` (tensor level, possibly fused and memory-planned):

- ``@main`` takes one ``memref`` per model input followed by one per model output and returns
  nothing (destination-passing style). Argument attributes keep ``onnx.name`` and gain
  ``c.role = "input" | "output"``.
- Each top-level ``fusion.kernel`` and each unfused ``nn`` op becomes its own private
  ``func.func`` taking its input buffers then its output buffers; the body reads the inputs with
  ``bufferization.to_tensor``, holds the original ``nn`` ops on tensors and writes each result
  with ``bufferization.materialize_in_destination``. The function carries ``onnx.origins`` and
  ``c.pattern``, ``c.work`` (``array<i64: FLOPs, bytes>`` of one call, from
  :func:`autofusion.analysis.cost.kernel_work`; the profiler's roofline reads it) and
  ``fusion.fast_math`` when the kernel has it. ``@main`` calls it.
- ``nn.constant`` becomes a ``memref.global`` (the weights) read with ``memref.get_global``.
- A top-level ``nn.reshape`` without a planned offset is a view of its input (``clib.view`` at
  offset 0): no copy. So is a slice, split piece or one-index gather that is one contiguous
  run of its input (``liveness.view_offset``), a ``clib.view`` at the run's byte offset.
- A top-level ``nn.concat`` with ``memory.concat_inplace`` (``plan-buffers``) becomes no call:
  its result is a ``clib.view`` of its arena slot, the operands marked 1 were written into
  their slices by their producers (checked: their slots must be exactly those slices), and
  each operand marked 0 is copied into its slice with ``memref.copy``.
- Intermediates get ``memref.alloc`` unless the op carries ``memory.offsets``; then they are
  ``clib.view`` slots of one arena of ``memory.arena_bytes`` allocated once.
- A model output that is not written directly by a call (an input, a constant, a view, or a
  value returned twice) is copied with ``memref.copy``, after the last call; the memory plan
  keeps the bytes of a view output reserved until then.
- A step whose results are all zero-sized (a dimension of 0) gets a kernel with an empty
  body: there is nothing to compute, and empty tensors still flow to their readers.
- A dynamic dimension or a tensor over the byte limit (``autofusion.analysis.static_shapes``)
  is refused with an ``AutofusionError`` naming the op and its type.
- A call whose output slot overlaps one of its input slots in the arena is refused
  (``PassFailedException``) unless it is the plan's in-place case (an elementwise step over
  exactly the same bytes, or a kernel's ``memory.residual_inplace`` operand): the kernels take
  ``restrict`` pointers, and an overlap means the plan is wrong, which would otherwise give
  silently wrong outputs. A kernel written over its residual gets ``c.alias_args = array<i64:
  I, O>`` on its function (the residual and output arguments, printed without ``restrict``).

Run it after fusion and ``plan-buffers``, before ``lower-nn-to-loops``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import bufferization, func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    i8,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import PassFailedException

from autofusion import symbolic
from autofusion.analysis.cost import kernel_work
from autofusion.analysis.liveness import element_bytes, tensor_bytes
from autofusion.analysis.memory_plan import (
    concat_slices,
    is_inplace_capable,
    planned_offset,
    planned_view_offsets,
)
from autofusion.analysis.static_shapes import check_static_shapes
from autofusion.dialects import fusion, nn
from autofusion.dialects.attrs import (
    C_ALIAS_ARGS,
    C_PATTERN,
    C_ROLE,
    C_SHAPE,
    C_SYMBOL,
    C_WORK,
    MEMORY_ARENA_BYTES,
    MEMORY_CONCAT_INPLACE,
    MEMORY_OFFSETS,
    MEMORY_RESIDUAL_INPLACE,
    ORIGINS,
    PRECISION_STORAGE,
    origin_names,
)
from autofusion.dialects.base import sym_shape_attr, symbol_ranges, type_dims
from autofusion.dialects.clib import CallOp, ViewOp
from autofusion.dialects.fusion import FAST_MATH_ATTR
from autofusion.dialects.shapes import numel
from autofusion.lowering.c.names import NameTable
from autofusion.passes.options import CheckedPass

#: (FLOPs, bytes moved) of one call of the kernel function, for the profiler
WORK_ATTR = C_WORK


def memref_of(t: Attribute) -> MemRefType[Attribute]:
    """The buffer type of a tensor type. A symbolic dim is ``?`` and the memref carries no
    sizes (the tensor types inside the kernel do; the lowering flattens such buffers and
    computes offsets from those sizes: docs/dynamic.md)."""
    assert isinstance(t, TensorType)
    return MemRefType(t.element_type, t.get_shape())


def _to_tensor(buf: SSAValue, t: Attribute) -> bufferization.ToTensorOp:
    """``bufferization.to_tensor`` of ``buf`` as the tensor type ``t`` (which keeps its
    symbolic sizes; ``ToTensorOp(buf)`` would infer a type without them)."""
    return bufferization.ToTensorOp.build(
        operands=[buf], result_types=[t], properties={"restrict": UnitAttr()}
    )


def origins_of(op: Operation) -> list[str]:
    if isinstance(op, fusion.KernelOp):
        return op.origin_names
    return origin_names(op)


def find_main(module: ModuleOp, pass_name: str) -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            return op
    raise PassFailedException(f"{pass_name}: module has no func.func @main")


def _only_view_index(op: nn.ConstantOp) -> bool:
    """A constant read only as the index of gathers that are views: no weights for it."""
    uses = list(op.y.uses)
    return bool(uses) and all(
        u.index != 0 and planned_view_offsets(u.operation) is not None for u in uses
    )


@dataclass(frozen=True)
class ConvertNNToBuffers(CheckedPass):
    """Tensor-level ``@main`` to buffer-level ``@main`` plus one private function per kernel."""

    name: ClassVar[str] = "convert-nn-to-buffers"

    #: symbolic sizes: kernels take the symbols as ``index`` arguments, buffers are ``?``
    symbolic: ClassVar[bool] = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with symbolic.scope(symbol_ranges(op)):
            _Converter(op, find_main(op, self.name), self.name).run()


class _Converter:
    def __init__(self, module: ModuleOp, main: func.FuncOp, pass_name: str) -> None:
        self.module = module
        self.main = main
        self.pass_name = pass_name
        self.names = NameTable()
        self.names.reserve("main")
        self.buf: dict[SSAValue, SSAValue] = {}
        self.new_funcs: list[Operation] = []
        self.globals: list[Operation] = []
        self.arena_range: dict[SSAValue, tuple[int, int]] = {}
        """Buffer -> (byte offset, byte size) of an arena slot, views included."""
        self.symbols = list(symbol_ranges(module))
        """The module's size symbols (``nn.symbols``), in order: @main's last arguments."""
        self.sym_args: list[SSAValue] = []

    def run(self) -> None:
        main = self.main
        check_static_shapes(main, self.pass_name, symbolic=bool(self.symbols))
        old_block = main.body.block
        ret = old_block.last_op
        if not isinstance(ret, func.ReturnOp):
            raise PassFailedException(f"{self.pass_name}: @main does not end in func.return")
        in_types = [memref_of(a.type) for a in old_block.args]
        out_types = [memref_of(v.type) for v in ret.arguments]
        sym_types = [IndexType()] * len(self.symbols)
        block = Block(arg_types=[*in_types, *out_types, *sym_types])
        self.block = block
        nin = len(in_types)
        for old, new in zip(old_block.args, block.args[:nin]):
            self.buf[old] = new
        out_args = list(block.args[nin : nin + len(out_types)])
        self.sym_args = list(block.args[nin + len(out_types) :])

        # Which op result writes straight into which output buffer.
        direct: dict[SSAValue, SSAValue] = {}
        for val, out in zip(ret.arguments, out_args):
            owner = val.owner
            if (
                isinstance(owner, Operation)
                and not isinstance(owner, nn.ConstantOp)
                and planned_view_offsets(owner) is None
                and val not in direct
            ):
                direct[val] = out

        arena: SSAValue | None = None
        arena_attr = main.attributes.get(MEMORY_ARENA_BYTES)
        if isinstance(arena_attr, IntegerAttr) and arena_attr.value.data > 0:
            alloc = memref.AllocOp.get(i8, 64, [arena_attr.value.data])
            block.add_op(alloc)
            arena = alloc.memref

        for index, op in enumerate(list(old_block.ops)):
            if op is ret:
                continue
            if isinstance(op, nn.ConstantOp):
                if not _only_view_index(op):
                    self._constant(op, index)
            elif (offsets := planned_view_offsets(op)) is not None:
                self._views(op, offsets)
            elif isinstance(op, nn.ConcatOp) and MEMORY_CONCAT_INPLACE in op.attributes:
                self._concat_in_place(op, index, direct, arena)
            elif isinstance(op, fusion.KernelOp | nn.TensorOp):
                self._kernel(op, index, direct, arena)
            else:
                raise PassFailedException(
                    f"{self.pass_name}: unexpected op {op.name} at the top level of @main"
                )

        for val, out in zip(ret.arguments, out_args):
            if direct.get(val) is not out:
                self._copy(block, self.buf[val], out, val.type)
        block.add_op(func.ReturnOp())

        arg_attrs = []
        old_args = main.arg_attrs.data if main.arg_attrs is not None else [DictionaryAttr({})] * nin
        old_res = (
            main.res_attrs.data
            if main.res_attrs is not None
            else [DictionaryAttr({})] * len(out_args)
        )
        io_types = [a.type for a in old_block.args] + [v.type for v in ret.arguments]
        for k, (d, t) in enumerate(zip([*old_args, *old_res], io_types)):
            role = "input" if k < nin else "output"
            extra: dict[str, Attribute] = {C_ROLE: StringAttr(role)}
            if not symbolic.is_static(dims := type_dims(t)):  # the C API's shape queries
                extra[C_SHAPE] = sym_shape_attr(dims)
            arg_attrs.append(DictionaryAttr({**d.data, **extra}))
        for name in self.symbols:
            arg_attrs.append(
                DictionaryAttr({C_ROLE: StringAttr("symbol"), C_SYMBOL: StringAttr(name)})
            )
        new_main = func.FuncOp(
            "main",
            FunctionType.from_lists([*in_types, *out_types, *sym_types], []),
            Region(block),
            arg_attrs=ArrayAttr(arg_attrs),
        )
        for k, v in main.attributes.items():
            if k not in ("sym_name", "function_type", "arg_attrs", "res_attrs"):
                new_main.attributes[k] = v
        parent = main.parent_block()
        assert parent is not None
        for g in self.globals:
            parent.insert_op_before(g, main)
        for f in self.new_funcs:
            parent.insert_op_before(f, main)
        parent.insert_op_before(new_main, main)
        main.detach()
        main.erase()

    def _copy(self, block: Block, src: SSAValue, dst: SSAValue, t: Attribute) -> None:
        _copy_op(block, src, dst, t, dict(zip(self.symbols, self.sym_args)))

    def _constant(self, op: nn.ConstantOp, index: int) -> None:
        value = op.value
        if not isinstance(value, DenseIntOrFPElementsAttr):
            origin = ", ".join(origins_of(op)) or f"#{index}"
            raise PassFailedException(
                f"{self.pass_name}: constant {origin} is elided (dense_resource); "
                "the C backend needs the weights (import the model again with its data)"
            )
        hint = (origins_of(op) or ["const"])[0]
        sym = self.names.ident(hint, "w")
        mtype = memref_of(op.y.type)
        g = memref.GlobalOp.get(StringAttr(sym), mtype, value, constant=UnitAttr(), alignment=64)
        if (storage := op.attributes.get(PRECISION_STORAGE)) is not None:
            # 16-bit in weights.bin and in memory: only 16-bit contractions may read it
            from autofusion.passes.assign_precision import check_stored_readers

            kind = storage.data if isinstance(storage, StringAttr) else str(storage)
            if (why := check_stored_readers(op.y, kind)) is not None:
                origin = ", ".join(origins_of(op)) or f"#{index}"
                raise PassFailedException(
                    f"{self.pass_name}: constant {origin} is stored {kind} but {why} "
                    "(run assign-precision again after passes that change its readers)"
                )
            g.attributes[PRECISION_STORAGE] = storage
        self.globals.append(g)
        get = memref.GetGlobalOp(sym, mtype)
        self.block.add_op(get)
        self.buf[op.y] = get.memref

    def _kernel(
        self,
        op: Operation,
        index: int,
        direct: dict[SSAValue, SSAValue],
        arena: SSAValue | None,
    ) -> None:
        offsets: list[int] | None = None
        off_attr = op.attributes.get(MEMORY_OFFSETS)
        if isinstance(off_attr, DenseArrayBase):
            offsets = [int(v) for v in off_attr.get_values()]
            if arena is None:
                raise PassFailedException(
                    f"{self.pass_name}: {op.name} has {MEMORY_OFFSETS} but @main has no "
                    f"{MEMORY_ARENA_BYTES}"
                )
        outs: list[SSAValue] = []
        for i, res in enumerate(op.results):
            if res in direct:
                outs.append(direct[res])
            elif offsets is not None and arena is not None:
                view = ViewOp(arena, offsets[i], memref_of(res.type))
                self.block.add_op(view)
                outs.append(view.res)
                self.arena_range[view.res] = (offsets[i], tensor_bytes(res.type))
            elif not symbolic.is_static(type_dims(res.type)):
                # storage for the upper bounds, viewed as the symbolic buffer
                alloc = memref.AllocOp.get(i8, 64, [max(tensor_bytes(res.type), 1)])
                view = ViewOp(alloc.memref, 0, memref_of(res.type))
                self.block.add_op(alloc)
                self.block.add_op(view)
                outs.append(view.res)
            else:
                alloc = memref.AllocOp.get(
                    memref_of(res.type).element_type, 64, memref_of(res.type).get_shape()
                )
                self.block.add_op(alloc)
                outs.append(alloc.memref)
            self.buf[res] = outs[-1]
        ins = [self.buf[v] for v in op.operands]
        residual = _residual_indices(op)
        self._check_no_overlap(op, index, ins, outs, residual)
        fn = self._make_func(op, index, [v.type for v in ins], [v.type for v in outs])
        shared = [
            (r, len(ins) + j)
            for j, r in enumerate(residual)
            if r is not None and self.arena_range.get(ins[r]) == self.arena_range.get(outs[j])
        ]
        if shared:
            fn.attributes[C_ALIAS_ARGS] = DenseArrayBase.from_list(
                i64, [a for pair in shared for a in pair]
            )
        syms = self.sym_args if _is_symbolic_op(op) else []
        self.block.add_op(func.CallOp(fn.sym_name.data, [*ins, *outs, *syms], []))

    def _views(self, op: Operation, offsets: list[int]) -> None:
        """``op``'s results as views of its operand's buffer at ``offsets`` (bytes): no
        kernel, no copy."""
        src = self.buf[op.operands[0]]
        for r, at in zip(op.results, offsets, strict=True):
            view = ViewOp(src, at, memref_of(r.type))
            self.block.add_op(view)
            self.buf[r] = view.res
            if src in self.arena_range:
                base, size = self.arena_range[src]
                if not isinstance(op, nn.ReshapeOp):  # a part of the operand's bytes
                    base, size = base + at, tensor_bytes(r.type)
                self.arena_range[view.res] = (base, size)

    def _concat_in_place(
        self,
        op: nn.ConcatOp,
        index: int,
        direct: dict[SSAValue, SSAValue],
        arena: SSAValue | None,
    ) -> None:
        """A concat planned in place: no kernel. Its result is a view of its arena slot;
        the operands marked 1 already sit in their slices (their producers wrote there),
        the others are copied in with ``memref.copy``."""
        origin = ", ".join(origins_of(op)) or f"#{index}"
        attr = op.attributes[MEMORY_CONCAT_INPLACE]
        flags = [int(v) for v in attr.get_values()] if isinstance(attr, DenseArrayBase) else []
        offset = planned_offset(op.y)
        starts = concat_slices(op, list(op.inputs))
        if (
            arena is None
            or offset is None
            or offset < 0
            or op.y in direct
            or starts is None
            or len(flags) != len(op.inputs)
        ):
            raise PassFailedException(
                f"{self.pass_name}: nn.concat ({origin}) has {MEMORY_CONCAT_INPLACE} but no "
                "arena slot with contiguous operand slices (re-run plan-buffers)"
            )
        view = ViewOp(arena, offset, memref_of(op.y.type))
        self.block.add_op(view)
        self.buf[op.y] = view.res
        self.arena_range[view.res] = (offset, tensor_bytes(op.y.type))
        for i, (v, start, flag) in enumerate(zip(op.inputs, starts, flags)):
            size = tensor_bytes(v.type)
            slot = (offset + start, size)
            if flag:
                if self.arena_range.get(self.buf[v]) != slot:
                    raise PassFailedException(
                        f"{self.pass_name}: nn.concat ({origin}): operand {i} is marked in "
                        f"place but is not at its slice (arena bytes {slot[0]}+{size}); "
                        "the memory plan is unsound (re-run plan-buffers)"
                    )
            elif size > 0:
                dst = ViewOp(arena, offset + start, memref_of(v.type))
                self.block.add_op(dst)
                self._copy(self.block, self.buf[v], dst.res, v.type)

    def _check_no_overlap(
        self,
        op: Operation,
        index: int,
        ins: list[SSAValue],
        outs: list[SSAValue],
        residual: Sequence[int | None] = (),
    ) -> None:
        """Refuse a call whose output bytes overlap an input's (see the module docstring);
        ``residual``: per output, the input it is written over in place, or None."""
        for j, out in enumerate(outs):
            if out not in self.arena_range:
                continue
            o_lo, o_size = self.arena_range[out]
            for i, inp in enumerate(ins):
                if inp not in self.arena_range:
                    continue
                lo, size = self.arena_range[inp]
                if not (o_lo < lo + size and lo < o_lo + o_size):
                    continue
                written_over = j < len(residual) and residual[j] == i
                if (is_inplace_capable(op) or written_over) and (lo, size) == (
                    o_lo,
                    o_size,
                ):
                    continue
                origin = ", ".join(origins_of(op)) or f"#{index}"
                raise PassFailedException(
                    f"{self.pass_name}: {op.name} ({origin}): output {j} (arena bytes "
                    f"{o_lo}+{o_size}) overlaps input {i} (arena bytes {lo}+{size}); "
                    "the memory plan is unsound (re-run plan-buffers)"
                )

    def _make_func(
        self, op: Operation, index: int, in_types: list[Attribute], out_types: list[Attribute]
    ) -> func.FuncOp:
        if isinstance(op, fusion.KernelOp):
            pattern = op.pattern_name
            hint = f"k{index}_{pattern}"
        else:
            pattern = op.name.removeprefix("nn.")
            hint = f"op{index}_{pattern}"
        sym = self.names.ident(hint)
        sym_types = [IndexType()] * len(self.symbols) if _is_symbolic_op(op) else []
        block = Block(arg_types=[*in_types, *out_types, *sym_types])
        nin = len(in_types)
        mapping: dict[SSAValue, SSAValue] = {}
        tensors = []
        empty = all(0 in memref_of(r.type).get_shape() for r in op.results)
        for arg, v in zip(block.args[:nin], op.operands) if not empty else ():
            t = _to_tensor(arg, v.type)
            block.add_op(t)
            tensors.append(t.tensor)
        if empty:
            results = []  # every result is zero-sized: nothing to compute or write
        elif isinstance(op, fusion.KernelOp):
            body = op.body.block
            for barg, t in zip(body.args, tensors):
                mapping[barg] = t
            results: list[SSAValue] = []
            for inner in body.ops:
                if isinstance(inner, fusion.YieldOp):
                    results = [mapping[v] for v in inner.values]
                    break
                block.add_op(inner.clone(value_mapper=mapping))
        else:
            for old, t in zip(op.operands, tensors):
                mapping[old] = t
            clone = op.clone(value_mapper=mapping)
            for k in (MEMORY_OFFSETS,):
                clone.attributes.pop(k, None)
            block.add_op(clone)
            results = list(clone.results)
        for res, out in zip(results, block.args[nin : nin + len(out_types)]):
            block.add_op(
                bufferization.MaterializeInDestinationOp(
                    operands=[res, out],
                    result_types=[[]],
                    properties={"restrict": UnitAttr(), "writable": UnitAttr()},
                )
            )
        block.add_op(func.ReturnOp())
        fn = func.FuncOp(
            sym,
            FunctionType.from_lists([*in_types, *out_types, *sym_types], []),
            Region(block),
            visibility="private",
        )
        if sym_types:  # the symbols, named as @main's
            fn.arg_attrs = ArrayAttr(
                [DictionaryAttr({}) for _ in [*in_types, *out_types]]
                + [DictionaryAttr({C_SYMBOL: StringAttr(n)}) for n in self.symbols]
            )
        fn.attributes[ORIGINS] = ArrayAttr([StringAttr(o) for o in origins_of(op)])
        fn.attributes[C_PATTERN] = StringAttr(pattern)
        flops, moved = kernel_work(op)  # of a symbolic kernel: at the upper bounds
        fn.attributes[WORK_ATTR] = DenseArrayBase.from_list(
            i64, [symbolic.upper_bound(flops), symbolic.upper_bound(moved)]
        )
        if FAST_MATH_ATTR in op.attributes:
            fn.attributes[FAST_MATH_ATTR] = UnitAttr()
        self.new_funcs.append(fn)
        return fn


def _residual_indices(op: Operation) -> list[int | None]:
    """Per result, the operand ``plan-buffers`` wrote it over (``memory.residual_inplace``),
    or None."""
    attr = op.attributes.get(MEMORY_RESIDUAL_INPLACE)
    none: list[int | None] = [None] * len(op.results)
    if not isinstance(attr, DenseArrayBase):
        return none
    values = [int(v) for v in attr.get_values()]
    if len(values) != len(op.results):
        return none
    return [v if 0 <= v < len(op.operands) else None for v in values]


def _copy_op(
    block: Block, src: SSAValue, dst: SSAValue, t: Attribute, symbols: dict[str, SSAValue]
) -> None:
    """``dst = src`` for a value of tensor type ``t``: ``memref.copy``; for a symbolic type
    (whose byte count is a run-time value) ``memcpy`` of that count, computed from the symbol
    arguments; nothing for an empty tensor."""
    from autofusion.lowering.c.builder import Emitter, Frame

    dims = type_dims(t)
    if symbolic.is_static(dims):
        block.add_op(memref.CopyOp(src, dst))
        return
    n = numel(dims)
    if isinstance(n, int):  # a static dim is 0
        return
    assert isinstance(t, TensorType)
    e = Emitter(block, Frame(symbols=symbols))
    e.add(CallOp("memcpy", [dst, src, e.index(n * element_bytes(t.element_type))], writes=[0]))


def _is_symbolic_op(op: Operation) -> bool:
    """Whether a kernel's operand or result types (or, of a fusion.kernel, its body's) have
    symbolic sizes: then its function takes the module's symbols as arguments."""
    values = [*op.operands, *op.results]
    inner_ops = list(op.body.block.ops) if isinstance(op, fusion.KernelOp) else [op]
    if isinstance(op, fusion.KernelOp):
        values += [r for inner in inner_ops for r in inner.results]
    if any(isinstance(o, nn.SizesOp) and not symbolic.is_static(o.sizes) for o in inner_ops):
        return True  # sizes as data: computed from the symbols
    return any(
        isinstance(v.type, TensorType) and not symbolic.is_static(type_dims(v.type)) for v in values
    )


def work_table(module: ModuleOp) -> dict[str, dict[str, int]]:
    """``{kernel function: {"flops": F, "bytes": B}}`` from the ``c.work`` of every kernel
    function in ``module`` (after this pass; empty before it). The C printer keeps these
    names, so the profiler joins its per-kernel times on them."""
    table: dict[str, dict[str, int]] = {}
    for op in module.walk():
        if isinstance(op, func.FuncOp):
            attr = op.attributes.get(WORK_ATTR)
            if isinstance(attr, DenseArrayBase):
                flops, moved = (int(v) for v in attr.get_values())
                table[op.sym_name.data] = {"flops": flops, "bytes": moved}
    return table
