"""``lower-nn-to-loops``: the tensor bodies made by ``convert-nn-to-buffers`` to loops on buffers.

For every function holding ``nn`` ops (between ``bufferization.to_tensor`` and
``bufferization.materialize_in_destination``):

- Elementwise ops (``nn.ELEMENTWISE``, and ``nn.expand``) are fused into loop nests: an
  elementwise op whose users are all elementwise ops of the same shape is computed inline
  at their index (never stored), so a chain of elementwise ops is one loop nest — one pass
  over memory. Broadcast operands are read through views whose size-1 dims are indexed by 0;
  adjacent dims that broadcast alike are merged, so a bias per channel is a 3-d nest
  ``[N, C, H*W]`` and same-shape operands make one flat, vectorisable loop. Big nests get
  ``c.parallel`` (``#pragma omp parallel for``) on the outermost loop.
- A Conv/MatMul/Gemm the library cannot run in its element type (f16; f64 Conv/Gemm) must
  have been rebuilt in f32 by ``legalize-contractions`` first; one that was not is an error
  naming it. (The cast-back result is not f32, so its elementwise tail is not fused.)
- A function whose body is one Conv/MatMul/Gemm followed by elementwise ops on its result
  (bias, residual add, activations) becomes one library call with a fused epilogue: a
  generated function (attribute ``c.epilogue``) that applies the chain in place to each
  finished ``[rows, cols]`` block of the output (``afrt_epilogue`` in ``afrt.h``), while it is
  hot in cache.
- A function whose output was planned over its residual (``c.alias_args``, from
  ``plan-buffers``' ``memory.residual_inplace``) passes the same buffer as output and as the
  built-in clamp epilogue's residual when the call is one the GEMM core computes in place
  (``afrt_conv2d_f32`` / ``afrt_matmul_f32``, which copy the residual themselves on any other
  path); otherwise (another kernel, another epilogue) it first copies the residual into a
  temporary buffer, so the result is right whatever the plan.
- Other ops lower one by one (``autofusion.lowering.c.ops``): reductions, softmax and
  layer_norm as row loops, pooling/conv/matmul/gemm as ``clib`` library calls, data movement
  as index loops, reshape as a view.

Afterwards no ``nn``, ``fusion`` or ``bufferization`` op may remain: the pass fails naming the
op. Run after ``convert-nn-to-buffers,legalize-contractions``; the result is printed by the
``c`` target.
"""

from __future__ import annotations

import math as pymath
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, bufferization, func, memref
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    FunctionType,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    f64,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import PassFailedException

from autofusion.analysis.conv_chain import ConvPool, ExpandChain
from autofusion.analysis.conv_pair import ConvPair
from autofusion.analysis.pw_chain import Half
from autofusion.dialects import clib, dtypes, fusion, nn
from autofusion.dialects.attrs import BLOCKED_LAYOUT, C_ALIAS_ARGS, C_SYMBOL, LAYOUT_X, is_blocked
from autofusion.dialects.fusion import FAST_MATH_ATTR
from autofusion.lowering.c.builder import INDEX, Emitter, Frame, Index, frame, shape, unravel
from autofusion.lowering.c.convert_nn_to_buffers import memref_of
from autofusion.lowering.c.legalize_contractions import CONTRACTIONS, needs_f32_compute
from autofusion.lowering.c.names import NameTable
from autofusion.lowering.c.ops import contraction_call, lower_op, matmul_rows_fold
from autofusion.lowering.c.scalar import emit_scalar
from autofusion.passes.options import CheckedPass

PASS = "lower-nn-to-loops"
FUSIBLE = (*nn.ELEMENTWISE, nn.ExpandOp)


def elem(v: SSAValue) -> Attribute:
    t = v.type
    assert isinstance(t, TensorType | MemRefType)
    return t.element_type


@dataclass(frozen=True)
class LowerNNToLoops(CheckedPass):
    """Lower the nn bodies of kernel functions to scf/arith/math/memref (+ clib calls)."""

    name: ClassVar[str] = "lower-nn-to-loops"
    #: symbolic sizes: loops, offsets and library parameters at run-time sizes (builder.py)
    symbolic: ClassVar[bool] = True

    fuse_epilogues: bool = True
    """Apply a kernel's elementwise tail inside the Conv/MatMul/Gemm call (else separate loops)."""

    blocked_convs: bool = False
    """Convs the measured rules pick (``clib.nchwc_applies``, ``clib.direct_1x1_applies``)
    call the blocked direct kernel ``afrt_nchwc_f32`` (algo ``direct_nchwc``) or the direct
    1x1 kernel ``afrt_conv1x1d_f32`` (``direct_1x1``); the pipeline sets it for AVX-512 builds
    whose config leaves ``conv_layout`` at ``auto``."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        names = NameTable()
        for o in op.ops:
            if isinstance(o, func.FuncOp | memref.GlobalOp):
                names.reserve(o.sym_name.data)
        for fn in list(op.ops):
            if isinstance(fn, func.FuncOp) and any(
                isinstance(o, nn.TensorOp | bufferization.ToTensorOp) for o in fn.walk()
            ):
                FunctionLowering(
                    op,
                    fn,
                    names,
                    fuse_epilogues=self.fuse_epilogues,
                    blocked_convs=self.blocked_convs,
                ).run()
        for o in op.walk():
            if isinstance(o, nn.TensorOp | fusion.KernelOp | fusion.YieldOp) or o.name.startswith(
                "bufferization."
            ):
                raise PassFailedException(f"{self.name}: {o.name} remains after lowering")


def symbol_args(fn: func.FuncOp, block: Block) -> dict[str, SSAValue]:
    """The symbol arguments of a kernel function (``c.symbol``, from convert-nn-to-buffers)
    by name, as arguments of ``block`` (the function's new body)."""
    out: dict[str, SSAValue] = {}
    attrs = fn.arg_attrs.data if fn.arg_attrs is not None else ()
    for arg, d in zip(block.args, attrs):
        sym = d.data.get(C_SYMBOL) if isinstance(d, DictionaryAttr) else None
        if isinstance(sym, StringAttr):
            out[sym.data] = arg
    return out


@dataclass
class FunctionLowering:
    module: ModuleOp
    fn: func.FuncOp
    names: NameTable
    fuse_epilogues: bool = True
    blocked_convs: bool = False
    buf: dict[SSAValue, SSAValue] = field(default_factory=dict)
    scalars: dict[SSAValue, float | int | bool] = field(default_factory=dict)
    dests: dict[SSAValue, list[SSAValue]] = field(default_factory=dict)
    inline: set[Operation] = field(default_factory=set)
    allocs: list[SSAValue] = field(default_factory=list)
    alias_res: SSAValue | None = None
    """The residual tensor whose buffer is the output's (computed in place), if any."""

    # ---- driver ------------------------------------------------------------------------
    def run(self) -> None:
        old = self.fn.body.block
        for op in old.ops:
            if needs_f32_compute(op):
                raise PassFailedException(
                    f"{PASS}: {op.name} on {elem(op.results[0])} has no library kernel; "
                    "run legalize-contractions first (it computes it in f32)"
                )
        new = Block(arg_types=[a.type for a in old.args])
        argmap: dict[SSAValue, SSAValue] = dict(zip(old.args, new.args))
        f = Frame(symbols=symbol_args(self.fn, new))
        with frame(f):
            self._run(old, new, argmap, f)

    def _run(self, old: Block, new: Block, argmap: dict[SSAValue, SSAValue], f: Frame) -> None:
        self.e = Emitter(new, f)
        ops = list(old.ops)
        for op in ops:
            if isinstance(op, bufferization.ToTensorOp):
                self.buf[op.tensor] = self.e.declare(argmap[op.memref], shape(op.tensor))
            elif isinstance(op, bufferization.MaterializeInDestinationOp):
                dest = self.e.declare(argmap[op.dest], shape(op.source))
                self.dests.setdefault(op.source, []).append(dest)
        self._classify(ops)
        chain = self._chain_plan(ops)
        skip: set[Operation] = set() if chain is None else {o for o in chain[:4] if o}
        cp = self._conv_pool_plan(ops) if chain is None else None
        if cp is not None:
            skip = {o for o in cp[:2] if o}
        pair = self._conv_pair_plan(ops) if chain is None and cp is None else None
        if pair is not None:
            skip = set(pair[:3])
        pwc = self._pw_chain_plan(ops) if chain is None and cp is None and pair is None else None
        if pwc is not None:
            skip = {*pwc[0].ops, *pwc[1].ops[:-1]}
        plan_ops = [o for o in ops if o not in skip]
        epi = (
            self._epilogue_plan(plan_ops)
            if self.fuse_epilogues and cp is None and pair is None and pwc is None
            else None
        )
        if pwc is not None:
            first = (pwc[0].conv, set[Operation](), pwc[0].last)
            self._detach_aliased(ops, new, first, pwc[0].conv.x)
        else:
            self._detach_aliased(ops, new, epi if chain is None else None)
        for op in ops:
            if isinstance(op, bufferization.ToTensorOp | bufferization.MaterializeInDestinationOp):
                continue
            if isinstance(op, func.ReturnOp):
                break
            if op in self.inline or op in skip:
                continue
            if epi is not None and op in epi[1]:
                continue
            if chain is not None and op is chain[4]:
                self._dwpw(chain, epi)
            elif cp is not None and op is cp[2]:
                self._conv_pool(*cp)
            elif pair is not None and op is pair[3]:
                self._conv_pair(pair)
            elif pwc is not None and op is pwc[1].last:
                self._pw_chain(*pwc)
            elif epi is not None and op is epi[0]:
                self._fused_contraction(epi[0], epi[1], epi[2])
            elif isinstance(op, nn.ConstantOp):
                self._constant(op)
            elif isinstance(op, nn.ReshapeOp):
                self.buf[op.y] = self.e.view(self.buffer_of(op.x), shape(op.y))
            elif isinstance(op, FUSIBLE):
                self._elementwise_root(op, self.out_buffer(op.results[0]))
            elif isinstance(op, nn.TensorOp):
                outs = [self.out_buffer(r) for r in op.results]
                lower_op(self, op, outs)
            else:
                raise PassFailedException(f"{PASS}: cannot lower {op.name}")
        # Results not written in place (inputs, views, values yielded twice) are copied.
        for val, ds in self.dests.items():
            src = self.buffer_of(val)
            for d in ds:
                if d is not src:
                    self.e.copy(src, d)
        for a in self.allocs:
            self.e.add(memref.DeallocOp.get(a))
        self.e.add(func.ReturnOp())
        self.fn.body.detach_block(old)
        self.fn.body.add_block(new)
        old.erase(safe_erase=False)

    def _detach_aliased(
        self,
        ops: list[Operation],
        block: Block,
        epi: tuple[Operation, set[Operation], Operation] | None,
        chain_x: SSAValue | None = None,
    ) -> None:
        """Inputs that share bytes with an output (``c.alias_args``: (input, output) argument
        pairs): kept when the call computes in place (``_in_place_call``; ``chain_x``, the
        input of a ``clib.pw_chain`` that its second output overwrites block by block), else
        read from a copy made first."""
        attr = self.fn.attributes.get(C_ALIAS_ARGS)
        if not isinstance(attr, DenseArrayBase):
            return
        values = [int(v) for v in attr.get_values()]
        for index in values[0::2]:
            tensors = [
                op.tensor
                for op in ops
                if isinstance(op, bufferization.ToTensorOp) and op.memref is self.fn.args[index]
            ]
            if not tensors:
                continue
            res = tensors[0]
            if chain_x is not None and res is chain_x:
                continue
            if epi is not None and self._in_place_call(epi[0], epi[2], res):
                self.alias_res = res
                continue
            copy = self.e.alloc(elem(res), shape(res))
            self.allocs.append(copy)
            self.e.copy(block.args[index], copy)
            for t in tensors:
                self.buf[t] = copy

    def _in_place_call(self, head: Operation, final: Operation, res: SSAValue) -> bool:
        """Whether the library call for ``head`` with the epilogue ending in ``final`` is the
        built-in clamp with residual ``res`` on a path that computes in place."""
        from autofusion.lowering.c.ops import _lp_props, conv_layouts, conv_params

        v = final.x if isinstance(final, nn.ReluOp | nn.ClipOp) else final.results[0]
        add = v.owner
        if not isinstance(add, nn.AddOp) or {add.lhs, add.rhs} != {head.results[0], res}:
            return False
        if isinstance(final, nn.ClipOp) and (pymath.isnan(final.min) or pymath.isnan(final.max)):
            return False
        if _lp_props(head):
            return False
        if isinstance(head, nn.ConvOp):
            if conv_layouts(head) or len(shape(head.x)) == 5:  # 3-d: y holds partial sums
                return False
            algo = clib.conv_algo(conv_params(head), None, self.blocked_convs)
            return algo in ("gemm_1x1", "gemm_1x1_t", "im2col_gemm", "direct_1x1")
        if isinstance(head, nn.GemmOp):
            return head.c is None or head.beta == 0.0
        return isinstance(head, nn.MatMulOp)

    def _classify(self, ops: list[Operation]) -> None:
        for op in ops:
            if not isinstance(op, nn.ELEMENTWISE) or not op.results:
                continue
            r = op.results[0]
            if r in self.dests or not r.uses:
                continue
            if all(
                isinstance(u.operation, nn.ELEMENTWISE)
                and shape(u.operation.results[0]) == shape(r)
                for u in r.uses
            ):
                self.inline.add(op)

    # ---- buffers -----------------------------------------------------------------------
    def out_buffer(self, r: SSAValue) -> SSAValue:
        if r in self.dests:
            b = self.dests[r][0]
        else:
            b = self.e.alloc(elem(r), shape(r))
            self.allocs.append(b)
        self.buf[r] = b
        return b

    def buffer_of(self, v: SSAValue) -> SSAValue:
        if v in self.buf:
            return self.buf[v]
        owner = v.owner
        if isinstance(owner, nn.ConstantOp):
            return self._global(owner)
        if isinstance(owner, Operation) and owner in self.inline:
            # An inline value needed as a buffer (should not happen: inline users are
            # elementwise); materialise it.
            b = self.e.alloc(elem(v), shape(v))
            self.allocs.append(b)
            self.buf[v] = b
            self._elementwise_root(owner, b)
            return b
        raise PassFailedException(
            f"{PASS}: no buffer for a value of {getattr(owner, 'name', owner)}"
        )

    def _constant(self, op: nn.ConstantOp) -> None:
        value = op.value
        if not isinstance(value, DenseIntOrFPElementsAttr):
            raise PassFailedException(f"{PASS}: elided constant inside {self.fn.sym_name.data}")
        arr = dtypes.numpy_from_dense(value)
        if arr.size >= 1 and (arr.size == 1 or bool(np.all(arr == arr.flat[0]))):
            self.scalars[op.y] = arr.flat[0].item()
        if (
            op.y in self.dests
            or any(not isinstance(u.operation, FUSIBLE) for u in op.y.uses)
            or op.y not in self.scalars
        ):
            self._global(op)

    def _global(self, op: nn.ConstantOp) -> SSAValue:
        if op.y in self.buf:
            return self.buf[op.y]
        sym = self.names.ident(f"{self.fn.sym_name.data}_c", "w")
        mtype = memref_of(op.y.type)
        g = memref.GlobalOp.get(StringAttr(sym), mtype, op.value, constant=UnitAttr(), alignment=64)
        self.module.body.block.insert_op_before(g, self.fn)
        v = self.e.add(memref.GetGlobalOp(sym, mtype))
        self.buf[op.y] = v
        return v

    # ---- elementwise -------------------------------------------------------------------
    def _leaves(self, root: Operation) -> list[SSAValue]:
        seen: list[SSAValue] = []

        def rec(op: Operation) -> None:
            for o in op.operands:
                d = o.owner
                if isinstance(d, Operation) and d in self.inline:
                    rec(d)
                elif o not in seen:
                    seen.append(o)

        rec(root)
        return seen

    def _elementwise_root(self, root: Operation, out: SSAValue) -> None:
        out_shape = shape(root.results[0])
        leaves = [v for v in self._leaves(root) if v not in self.scalars or v in self.buf]
        leaf_shapes = [shape(v) for v in leaves]
        groups = coalesce(out_shape, leaf_shapes)
        new_shape = [g[1] for g in groups]
        views = {
            v: self.e.view(self.buffer_of(v), view_shape(ls, out_shape, groups))
            for v, ls in zip(leaves, leaf_shapes)
        }
        out_view = self.e.view(out, new_shape)

        def body(e: Emitter, idx: list[Index]) -> None:
            memo: dict[SSAValue, SSAValue] = {}

            def leaf(v: SSAValue) -> SSAValue:
                if v in views:
                    vv = views[v]
                    return e.load(vv, [i if d != 1 else 0 for i, d in zip(idx, shape(vv))])
                return e.const(self.scalars[v], elem(v))

            value = self._eval(e, root, memo, leaf)
            e.store(value, out_view, idx)

        self.e.nest(new_shape, body, simd_short=True)

    def _eval(self, e: Emitter, op: Operation, memo: dict[SSAValue, SSAValue], leaf) -> SSAValue:
        args = []
        for o in op.operands:
            if o in memo:
                args.append(memo[o])
                continue
            d = o.owner
            if isinstance(d, Operation) and d in self.inline:
                v = self._eval(e, d, memo, leaf)
            else:
                v = leaf(o)
            memo[o] = v
            args.append(v)
        if isinstance(op, nn.ExpandOp):
            return args[0]
        return emit_scalar(e, op, args)

    # ---- depthwise -> pointwise chain (fuse-conv-chain kernels) -------------------------
    def _chain_plan(self, ops: list[Operation]) -> ExpandChain | None:
        """(expand conv, its clamp, depthwise conv, clamp, pointwise conv) when the function
        starts with a chain kernel's convs (the expand None for a pair) and its
        intermediates are private to it."""
        from autofusion.analysis.conv_chain import body_expand_chain

        body = [o for o in ops if isinstance(o, nn.TensorOp) and not isinstance(o, nn.ConstantOp)]
        got = body_expand_chain(body)
        if got is None:
            return None
        mids = [o.results[0] for o in got[:4] if o is not None]
        if any(v in self.dests for v in mids):
            return None
        return got

    def _conv_pool_plan(self, ops: list[Operation]) -> ConvPool | None:
        """(conv, clamp, max pool) when the function is ``fuse-conv-pool``'s stem and pool
        (``body_conv_pool``) and only the pool's output leaves it."""
        from autofusion.analysis.conv_chain import body_conv_pool

        body = [o for o in ops if isinstance(o, nn.TensorOp) and not isinstance(o, nn.ConstantOp)]
        got = body_conv_pool(body)
        if got is None or any(o is not None and o.results[0] in self.dests for o in got[:2]):
            return None
        return got

    def _conv_pool(self, conv: nn.ConvOp, act: Operation | None, pool: nn.MaxPoolOp) -> None:
        """One ``clib.conv2d`` with ``pool`` (``afrt_convpool_nc_f32``): the conv's rows are
        pooled as they are computed, its output is never a buffer; the clamp in registers."""
        from autofusion.analysis.conv_chain import clamp_of
        from autofusion.lowering.c.ops import pool_params

        out = self.out_buffer(pool.y)
        ep = ctx = None
        if act is not None:
            lo, hi = clamp_of(act)
            e = self.e.add(clib.ClampEpilogueOp(None, 0, 0, lo, hi, None))
            assert isinstance(e.owner, clib.ClampEpilogueOp)
            ep, ctx = e.owner.fn, e.owner.ctx
        contraction_call(self, conv, out, ep, ctx, pool=pool_params(pool))

    def _conv_pair_plan(self, ops: list[Operation]) -> ConvPair | None:
        """The pair when the function is ``fuse-conv-pair``'s unit (``body_conv_pair``) and
        only the clamp's output leaves it."""
        from autofusion.analysis.conv_pair import body_conv_pair

        body = [o for o in ops if isinstance(o, nn.TensorOp) and not isinstance(o, nn.ConstantOp)]
        got = body_conv_pair(body)
        if got is None or any(o.results[0] in self.dests for o in got[:3]):
            return None
        return got

    def _conv_pair(self, pair: ConvPair) -> None:
        """One ``clib.conv_pair`` (``afrt_conv1x1_pair_f32``), the clamp in registers;
        neither conv's output is a buffer."""
        from autofusion.analysis.conv_chain import clamp_of
        from autofusion.analysis.conv_pair import pair_params

        a, b, _, act = pair
        got = pair_params(a, b)
        assert got is not None
        out = self.out_buffer(act.results[0])
        lo, hi = clamp_of(act)
        e = self.e.add(clib.ClampEpilogueOp(None, 0, 0, lo, hi, None))
        assert isinstance(e.owner, clib.ClampEpilogueOp)
        self.e.add(
            clib.ConvPairOp.build(
                operands=[
                    self.buffer_of(a.x),
                    self.buffer_of(b.x),
                    self.buffer_of(a.w),
                    self.buffer_of(b.w),
                    out,
                    [self.buffer_of(a.bias)] if a.bias is not None else [],
                    [self.buffer_of(b.bias)] if b.bias is not None else [],
                    [e.owner.fn],
                    [e.owner.ctx],
                ],
                properties={
                    "params": DenseArrayBase.from_list(i64, got[0]),
                    "params2": DenseArrayBase.from_list(i64, got[1]),
                },
            )
        )

    def _pw_chain_plan(self, ops: list[Operation]) -> tuple[Half, Half] | None:
        """The two halves when the function is ``fuse-pw-chain``'s kernel
        (``body_pw_chain``), both halves' values its results and nothing else leaving it."""
        from autofusion.analysis.pw_chain import body_pw_chain

        if not self.fuse_epilogues:
            return None
        body = [o for o in ops if isinstance(o, nn.TensorOp) and not isinstance(o, nn.ConstantOp)]
        got = body_pw_chain(body)
        if got is None:
            return None
        first, second = got
        inner = [o.results[0] for h in got for o in h.ops if o is not h.last]
        if any(v in self.dests for v in inner) or not all(h.value in self.dests for h in got):
            return None
        return first, second

    def _half_epilogue(self, h: Half, out: SSAValue) -> tuple[SSAValue | None, SSAValue | None]:
        """The epilogue of a chain half writing ``out`` (``_make_epilogue``: the built-in
        clamp, which a half's ops always are); none for a bare conv."""
        if h.last is h.conv:
            return None, None
        self.buf[h.conv.y] = out
        _, batch_dims, row_dims = contraction_groups(h.conv)
        return self._make_epilogue(h.conv, h.last, out, batch_dims, row_dims)

    def _pw_chain(self, first: Half, second: Half) -> None:
        """One ``clib.pw_chain`` (``afrt_conv1x1_chain_f32``): both convs with their clamp
        epilogues in registers, the first output stored (it is a result) and read by the
        second conv column block by column block."""
        from autofusion.analysis.pw_chain import chain_params

        got = chain_params(first.conv, second.conv)
        assert got is not None
        y = self.out_buffer(first.value)
        ep, ctx = self._half_epilogue(first, y)
        y2 = self.out_buffer(second.value)
        ep2, ctx2 = self._half_epilogue(second, y2)
        a, b = first.conv, second.conv
        self.e.add(
            clib.PwChainOp.build(
                operands=[
                    self.buffer_of(a.x),
                    self.buffer_of(a.w),
                    y,
                    self.buffer_of(b.w),
                    y2,
                    [self.buffer_of(a.bias)] if a.bias is not None else [],
                    [self.buffer_of(b.bias)] if b.bias is not None else [],
                    [ep] if ep is not None else [],
                    [ctx] if ctx is not None else [],
                    [ep2] if ep2 is not None else [],
                    [ctx2] if ctx2 is not None else [],
                ],
                properties={
                    "params": DenseArrayBase.from_list(i64, got[0]),
                    "params2": DenseArrayBase.from_list(i64, got[1]),
                },
            )
        )

    def _dwpw(
        self,
        chain: ExpandChain,
        epi: tuple[Operation, set[Operation], Operation] | None,
    ) -> None:
        from autofusion.analysis.conv_chain import clamp_of
        from autofusion.lowering.c.ops import conv_params, split_sizes

        ex, eact, dw, act, pw = chain
        ep = ctx = None
        if epi is not None and epi[0] is pw:
            out = self.out_buffer(epi[2].results[0])
            self.buf[pw.y] = out
            ep, ctx = self._make_epilogue(pw, epi[2], out, 1, 1)
        else:
            out = self.out_buffer(pw.y)
        lo, hi = clamp_of(act)
        nd = len(clib.CONV_FIELDS)
        params, dyn = split_sizes(self.e, [*conv_params(dw), *conv_params(pw)])
        expand: dict[str, Attribute] = {}
        if ex is not None:
            elo, ehi = clamp_of(eact)
            expand = {
                "ex_params": DenseArrayBase.from_list(i64, [int(v) for v in conv_params(ex)]),
                "elo": FloatAttr(elo, f64),
                "ehi": FloatAttr(ehi, f64),
            }
        self.e.add(
            clib.DwPwOp.build(
                operands=[
                    self.buffer_of(dw.x if ex is None else ex.x),
                    self.buffer_of(dw.w),
                    self.buffer_of(pw.w),
                    out,
                    [self.buffer_of(dw.bias)] if dw.bias is not None else [],
                    [self.buffer_of(pw.bias)] if pw.bias is not None else [],
                    [ep] if ep else [],
                    [ctx] if ctx else [],
                    [self.buffer_of(ex.w)] if ex is not None else [],
                    [self.buffer_of(ex.bias)] if ex is not None and ex.bias is not None else [],
                    dyn,
                ],
                properties={
                    **expand,
                    "params": DenseArrayBase.from_list(i64, params[:nd]),
                    "pw_params": DenseArrayBase.from_list(i64, params[nd:]),
                    "lo": FloatAttr(lo, f64),
                    "hi": FloatAttr(hi, f64),
                    **(
                        {"x_layout": StringAttr(BLOCKED_LAYOUT)} if is_blocked(dw, LAYOUT_X) else {}
                    ),
                },
            )
        )

    # ---- contraction + epilogue --------------------------------------------------------
    def _epilogue_plan(
        self, ops: list[Operation]
    ) -> tuple[Operation, set[Operation], Operation] | None:
        """(contraction, chain ops, final op) when the function is contraction + epilogue."""
        body = [
            o
            for o in ops
            if not isinstance(
                o,
                bufferization.ToTensorOp
                | bufferization.MaterializeInDestinationOp
                | func.ReturnOp
                | nn.ConstantOp,
            )
        ]
        heads = [o for o in body if isinstance(o, CONTRACTIONS)]
        if len(heads) != 1 or len(body) < 2 or elem(heads[0].results[0]) != dtypes.f32:
            return None
        head = heads[0]
        if isinstance(head, nn.ConvOp) and len(shape(head.results[0])) not in (3, 4, 5):
            return None
        out_shape = shape(head.results[0])
        chain = [o for o in body if o is not head]
        if any(
            not isinstance(o, nn.ELEMENTWISE)
            or shape(o.results[0]) != out_shape
            or elem(o.results[0]) != dtypes.f32
            for o in chain
        ):
            return None
        finals = [o for o in chain if o.results[0] in self.dests]
        if len(finals) != 1 or head.results[0] in self.dests:
            return None
        final = finals[0]
        chain_set = set(chain)
        # Every chain value feeds the chain only (the final one goes to the destination);
        # other operands are function inputs or constants, ready before the call.
        for o in chain:
            if o is not final and any(u.operation not in chain_set for u in o.results[0].uses):
                return None
            for v in o.operands:
                d = v.owner
                if d is head or d in chain_set:
                    continue
                if isinstance(d, Operation) and not isinstance(
                    d, nn.ConstantOp | bufferization.ToTensorOp
                ):
                    return None
        if any(u.operation not in chain_set for u in head.results[0].uses):
            return None
        # The head's input operands must not depend on the chain.
        for v in head.operands:
            if v.owner in chain_set:
                return None
        # The chain is evaluated at one index: all of it inline except the final op.
        for o in chain:
            if o is not final:
                self.inline.add(o)
        self.inline.discard(final)
        return head, chain_set, final

    def _fused_contraction(self, head: Operation, chain: set[Operation], final: Operation) -> None:
        out = self.out_buffer(final.results[0])
        self.buf[head.results[0]] = out
        _, batch_dims, row_dims = contraction_groups(head)
        ep, ctx = self._make_epilogue(head, final, out, batch_dims, row_dims)
        contraction_call(self, head, out, ep, ctx)

    def _clamp_epilogue(
        self, head: Operation, final: Operation, batch_dims: int, rc: int, c: int
    ) -> tuple[SSAValue, SSAValue] | None:
        """afrt.h's built-in epilogue when the chain is ``[Add(head, r)]`` then at most one
        Relu or Clip (float bounds), ``r`` a buffer of the output's shape (or broadcast over
        the batch dims only): the GEMM core applies it in registers (docs/runtime.md). A
        MatMul / Gemm head may first add a bias along its columns (``Add(head, b)``, ``b``
        a buffer of the column dims, broadcast over the rows and batch dims: a Linear layer's
        bias), then the rest: ``afrt_epi_bias_clamp``."""
        lo, hi = -pymath.inf, pymath.inf
        ops: list[Operation] = [final]
        v = final.results[0]
        if isinstance(final, nn.ReluOp):
            lo, v = 0.0, final.x
        elif isinstance(final, nn.ClipOp):
            lo, hi, v = final.min, final.max, final.x
        hv = head.results[0]
        res: SSAValue | None = None
        cbias: SSAValue | None = None
        if v is not hv:
            add = v.owner
            if not isinstance(add, nn.AddOp) or (add is not final and add not in self.inline):
                return None
            if add is not final:
                ops.append(add)
            other = add.rhs if add.lhs is hv else add.lhs if add.rhs is hv else None
            if other is not None and self._col_bias(head, other, c):
                cbias = other
            elif other is not None:
                res = other
            else:  # Add(Add(head, b), r): b the column bias, r the residual
                for inner, res in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
                    ia = inner.owner
                    if isinstance(ia, nn.AddOp) and ia in self.inline and hv in (ia.lhs, ia.rhs):
                        b = ia.rhs if ia.lhs is hv else ia.lhs
                        if b is not hv and self._col_bias(head, b, c):
                            ops.append(ia)
                            cbias = b
                            break
                else:
                    return None
            if res is not None and (res is hv or (res in self.scalars and res not in self.buf)):
                return None
        nobound = lo == -hi == -pymath.inf
        if pymath.isnan(lo) or pymath.isnan(hi) or (res is None and cbias is None and nobound):
            return None
        if len(ops) != len(self._chain_ops(head, final)):
            return None
        stride = rc
        if res is not None:
            out_shape, rs = shape(hv), shape(res)
            rs = (1,) * (len(out_shape) - len(rs)) + rs
            if rs[batch_dims:] != out_shape[batch_dims:]:
                return None
            if rs[:batch_dims] != out_shape[:batch_dims]:
                if any(d != 1 for d in rs[:batch_dims]):
                    return None
                stride = 0
        stride_p, ld_p = (v if isinstance(v, int) else self.e.index(v) for v in (stride, c))
        ep = self.e.add(
            clib.ClampEpilogueOp(
                self.buffer_of(res) if res is not None else None,
                stride_p,
                ld_p,
                lo,
                hi,
                self.buffer_of(cbias) if cbias is not None else None,
            )
        )
        assert isinstance(ep.owner, clib.ClampEpilogueOp)
        return ep.owner.fn, ep.owner.ctx

    def _col_bias(self, head: Operation, b: SSAValue, c: int) -> bool:
        """Whether ``b`` is a bias along a MatMul / Gemm output's columns: f32, static, its
        dims (leading 1s dropped) the output's trailing dims and ``c`` elements in all."""
        if not isinstance(head, nn.MatMulOp | nn.GemmOp) or elem(b) != f32:
            return False
        if b in self.scalars and b not in self.buf:
            return False
        bs = shape(b)
        if not all(isinstance(d, int) for d in bs):
            return False
        while bs and bs[0] == 1:
            bs = bs[1:]
        out = shape(head.results[0])
        return bool(bs) and out[len(out) - len(bs) :] == bs and prod(bs) == c

    def _silu_epilogue(self, head: Operation, final: Operation) -> tuple[SSAValue, SSAValue] | None:
        """afrt.h's built-in SiLU epilogue when the chain is ``Mul(Sigmoid(head), head)`` (either
        operand order), or its gate alone when it is ``Sigmoid(head)``: its own exp instead of
        the generated ``af_expf`` loop, in the GEMM core's registers (docs/runtime.md)."""
        hv = head.results[0]
        if isinstance(final, nn.SigmoidOp) and final.x is hv:
            ops: list[Operation] = [final]
            gate = True
        elif isinstance(final, nn.MulOp) and hv in (final.lhs, final.rhs):
            sig = (final.rhs if final.lhs is hv else final.lhs).owner
            if not (isinstance(sig, nn.SigmoidOp) and sig.x is hv and sig in self.inline):
                return None
            ops, gate = [final, sig], False
        else:
            return None
        if len(ops) != len(self._chain_ops(head, final)):
            return None
        ep = self.e.add(clib.SiluEpilogueOp(gate))
        assert isinstance(ep.owner, clib.SiluEpilogueOp)
        return ep.owner.fn, ep.owner.ctx

    def _gelu_epilogue(
        self, head: Operation, final: Operation, c: int
    ) -> tuple[SSAValue, SSAValue] | None:
        """afrt.h's built-in GELU epilogue when the chain is ``Gelu(head)`` or, for a MatMul /
        Gemm head, ``Gelu(Add(head, b))`` with ``b`` a bias along its columns (a transformer
        MLP's fc1): ``erf`` form only, not in a fast-math kernel (whose generated loop uses
        the cheaper ``af_fast_erff``). Within an ulp or two of the generated loop, fewer
        operations; the GEMM core adds the bias in registers and runs the GELU on each tile
        while it is in L1 (docs/runtime.md, "Built-in GELU epilogue")."""
        if not isinstance(final, nn.GeluOp) or final.approximate != "none":
            return None
        if FAST_MATH_ATTR in self.fn.attributes:
            return None
        hv = head.results[0]
        ops: list[Operation] = [final]
        cbias: SSAValue | None = None
        if final.x is not hv:
            add = final.x.owner
            if not isinstance(add, nn.AddOp) or add not in self.inline:
                return None
            b = add.rhs if add.lhs is hv else add.lhs if add.rhs is hv else None
            if b is None or b is hv or not self._col_bias(head, b, c):
                return None
            ops.append(add)
            cbias = b
        if len(ops) != len(self._chain_ops(head, final)):
            return None
        ep = self.e.add(clib.GeluEpilogueOp(self.buffer_of(cbias) if cbias is not None else None))
        assert isinstance(ep.owner, clib.GeluEpilogueOp)
        return ep.owner.fn, ep.owner.ctx

    def _chain_ops(self, head: Operation, final: Operation) -> list[Operation]:
        """The ops between ``head`` and ``final`` (final included) that the epilogue computes."""
        seen: list[Operation] = []

        def rec(op: Operation) -> None:
            if op in seen:
                return
            seen.append(op)
            for o in op.operands:
                d = o.owner
                if isinstance(d, Operation) and d is not head and d in self.inline:
                    rec(d)

        rec(final)
        return seen

    def _make_epilogue(
        self,
        head: Operation,
        final: Operation,
        out: SSAValue,
        batch_dims: int,
        row_dims: int,
    ) -> tuple[SSAValue, SSAValue]:
        out_shape = shape(head.results[0])
        bshape = out_shape[:batch_dims]
        rshape = out_shape[batch_dims : batch_dims + row_dims]
        cshape = out_shape[batch_dims + row_dims :]
        B, R, C = prod(bshape), prod(rshape), prod(cshape)
        clamp = self._clamp_epilogue(head, final, batch_dims, R * C, C)
        if clamp is not None:
            return clamp
        silu = self._silu_epilogue(head, final) if self.alias_res is None else None
        if silu is not None:
            return silu
        gelu = self._gelu_epilogue(head, final, C) if self.alias_res is None else None
        if gelu is not None:
            return gelu
        if self.alias_res is not None:
            raise PassFailedException(
                f"{PASS}: {self.fn.sym_name.data} writes its output over its residual but its "
                "epilogue is not the built-in clamp (re-run plan-buffers)"
            )
        grp = [
            (0, batch_dims),
            (batch_dims, batch_dims + row_dims),
            (batch_dims + row_dims, len(out_shape)),
        ]
        leaves = [v for v in self._leaves(final) if v is not head.results[0]]
        leaves = [v for v in leaves if v not in self.scalars or v in self.buf]
        bufs = [self.e.view(out, [B, R, C])]
        leaf_views: list[tuple[SSAValue, bool, tuple[int, ...]]] = []
        for v in leaves:
            ls = (1,) * (len(out_shape) - len(shape(v))) + shape(v)
            conform = True
            vshape = []
            for lo, hi in grp:
                seg, oseg = ls[lo:hi], out_shape[lo:hi]
                if all(a == b for a, b in zip(seg, oseg)):
                    vshape.append(prod(oseg))
                elif all(a == 1 for a in seg):
                    vshape.append(1)
                else:
                    conform = False
            if conform:
                bufs.append(self.e.view(self.buffer_of(v), vshape))
            else:
                bufs.append(self.e.view(self.buffer_of(v), ls))
            leaf_views.append((v, conform, ls))
        # A symbolic kernel passes its symbols in the context too: the epilogue is another
        # function, and indexes its buffers with the run's sizes.
        kf = self.e.frame
        sym_names = sorted(kf.symbols) if any(b in kf.dims for b in bufs) else []
        ctx = self.e.add(clib.PackOp([*bufs, *(kf.symbols[n] for n in sym_names)]))
        blk, args = clib.epilogue_block()
        ef = Frame()
        ee = Emitter(blk, ef)
        block_dims = (args.batch, args.r0, args.r1, args.c0, args.c1)
        bi, r0, r1, c0, c1 = (ee.add(arith.IndexCastOp(a, INDEX)) for a in block_dims)
        ef.symbols = {
            n: ee.add(clib.UnpackOp(args.ctx, len(bufs) + k, INDEX))
            for k, n in enumerate(sym_names)
        }
        unpacked = [ee.add(clib.UnpackOp(args.ctx, i, b.type)) for i, b in enumerate(bufs)]
        for u, b in zip(unpacked, bufs):
            if b in kf.dims:
                ee.declare(u, kf.dims[b])
        ybuf, lbufs = unpacked[0], unpacked[1:]
        head_val = head.results[0]

        def row(e1: Emitter, r: SSAValue, _: list[SSAValue]) -> None:
            def col(e2: Emitter, c: SSAValue, __: list[SSAValue]) -> None:
                memo: dict[SSAValue, SSAValue] = {head_val: e2.load(ybuf, [bi, r, c])}
                full: list[Index] | None = None

                def leaf(v: SSAValue) -> SSAValue:
                    nonlocal full
                    if v in self.scalars and v not in self.buf:
                        return e2.const(self.scalars[v], elem(v))
                    i = leaves.index(v)
                    _, conform, ls = leaf_views[i]
                    lb = lbufs[i]
                    if conform:
                        s = shape(lb)
                        return e2.load(lb, [x if d != 1 else 0 for x, d in zip([bi, r, c], s)])
                    if full is None:
                        full = (
                            unravel(e2, bi, bshape)
                            + unravel(e2, r, rshape)
                            + unravel(e2, c, cshape)
                        )
                    return e2.load(lb, [x if d != 1 else 0 for x, d in zip(full, ls)])

                value = self._eval(e2, final, memo, leaf)
                e2.store(value, ybuf, [bi, r, c])

            e1.loop(c0, c1, col)

        with frame(ef):
            ee.loop(r0, r1, row)
        ee.add(func.ReturnOp())
        sym = self.names.ident(f"{self.fn.sym_name.data}_epilogue")
        efn = func.FuncOp(
            sym, FunctionType.from_lists(list(blk.arg_types), []), Region(blk), visibility="private"
        )
        efn.attributes[clib.EPILOGUE_ATTR] = UnitAttr()
        if FAST_MATH_ATTR in self.fn.attributes:  # the epilogue is the kernel's own math
            efn.attributes[FAST_MATH_ATTR] = UnitAttr()
        self.module.body.block.insert_op_before(efn, self.fn)
        fref = self.e.add(clib.FuncRefOp(sym))
        return fref, ctx


def contraction_groups(head: Operation) -> tuple[str, int, int]:
    """How the library sees the output: (kind, #batch dims, #row dims); the rest are columns."""
    s = shape(head.results[0])
    if isinstance(head, nn.ConvOp):
        return "conv", 1, 1
    if isinstance(head, nn.GemmOp):
        return "gemm", 0, 1
    assert isinstance(head, nn.MatMulOp)
    a1 = len(shape(head.a)) == 1
    b1 = len(shape(head.b)) == 1
    if a1 and b1:
        return "matmul", 0, 0
    if a1:
        return "matmul", len(s) - 1, 0
    if b1:
        return "matmul", len(s) - 1, 1
    if matmul_rows_fold(shape(head.a), shape(head.b)):
        return "matmul", 0, len(s) - 1
    return "matmul", len(s) - 2, 1


def prod(xs: tuple[int, ...] | list[int]) -> int:
    n = 1
    for x in xs:
        n *= x
    return n


def coalesce(out: tuple[int, ...], leaves: list[tuple[int, ...]]) -> list[tuple[list[int], int]]:
    """Merge adjacent output dims that every operand broadcasts alike.

    Returns groups ``(dims, size)``; dims of size 1 are dropped (a 0-d output gives [])."""
    r = len(out)
    pats = []
    for ls in leaves:
        padded = (1,) * (r - len(ls)) + tuple(ls)
        pats.append(padded)
    groups: list[tuple[list[int], int]] = []
    prev_key: tuple[bool, ...] | None = None
    for d in range(r):
        if out[d] == 1:
            continue
        key = tuple(p[d] == out[d] for p in pats)
        if groups and key == prev_key:
            dims, size = groups[-1]
            groups[-1] = ([*dims, d], size * out[d])
        else:
            groups.append(([d], out[d]))
        prev_key = key
    return groups


def view_shape(
    leaf: tuple[int, ...], out: tuple[int, ...], groups: list[tuple[list[int], int]]
) -> list[int]:
    padded = (1,) * (len(out) - len(leaf)) + tuple(leaf)
    return [size if padded[dims[0]] == out[dims[0]] else 1 for dims, size in groups]


def is_int(t: Attribute) -> bool:
    return isinstance(t, IntegerType)
