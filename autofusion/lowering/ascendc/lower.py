"""``lower-fusion-to-ascendc``: each supported ``fusion.kernel`` becomes an ``ascendc.kernel``.

Effect: for every ``fusion.kernel`` at the top level of ``@main`` that has an Ascend C
lowering, an ``ascendc.kernel`` symbol is added to the module and the fusion kernel is
replaced by ``ascendc.launch @name(...)``. Kernels without a lowering stay as they are and
get ``ascendc.fallback = "<reason>"`` (they run on the host: the C target or the reference
interpreter). Precondition: fusion has run (or kernels were written by hand); f32 tensors.

Two kernel shapes are produced (see ``autofusion/dialects/ascendc.py``):

* vector: every op is elementwise on the result shape; operands are full tensors (VECIN
  queues), compile-time scalars, or small broadcast tensors loaded once into UB;
* cube: the first op is ``nn.matmul``/``nn.gemm``/``nn.conv`` (conv via im2col + Matmul),
  followed by an elementwise epilogue applied in place to each work unit's output rows.

Each kernel carries its tiling record (``#ascendc.tiling``: kind, inputs, values): the
formulas of ``tiling.py`` are evaluated here for the static shapes, so the IR shows the values
the printed host tiling function (the same formulas, printed) will compute.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    BoolAttr,
    DenseArrayBase,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    f32,
)
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from autofusion.dialects import ascendc as ac
from autofusion.dialects import fusion, nn
from autofusion.dialects.attrs import ASCENDC_FALLBACK, origin_names
from autofusion.dialects.base import i64_array, shape_of, tensor_of, value_index
from autofusion.dialects.dtypes import numpy_from_dense
from autofusion.dialects.shapes import numel
from autofusion.lowering.ascendc import tiling as tl
from autofusion.lowering.ascendc.rows import COPY_OPS, ROW_OPS, build_copy, build_rows
from autofusion.lowering.ascendc.vector import (
    VECTOR_OPS,
    Bcast,
    Scalar,
    Tile,
    Unsupported,
    Val,
    VectorBuilder,
    Window,
    bcast_strides,
)
from autofusion.passes.options import CheckedPass

BCAST_LIMIT = 8192  # elements: larger broadcast operands are not loaded into UB


def _i(v: int) -> IntegerAttr:
    return IntegerAttr(int(v), 64)


def _stage() -> tuple[Region, Block]:
    b = Block()
    return Region(b), b


@dataclass
class _Plan:
    """What a kernel body needs: which block args are queued, broadcast, gathered."""

    out_shape: tuple[int, ...]
    queued: list[int]
    bcast: dict[int, tuple[int, ...]]
    #: data-movement ops reading a kernel input: op -> (input index, strides, offset)
    gathers: dict[Operation, tuple[int, tuple[int, ...], int]] | None = None


GATHER_OPS: tuple[type[Operation], ...] = (nn.TransposeOp, nn.ExpandOp, nn.SliceOp, nn.GatherOp)
POOL_OPS: tuple[type[Operation], ...] = (nn.MaxPoolOp, nn.AvgPoolOp)


def _row_major(shape: tuple[int, ...]) -> list[int]:
    st = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        st[i] = st[i + 1] * shape[i + 1]
    return st


def gather_map(op: Operation) -> tuple[tuple[int, ...], int]:
    """Source strides (per result dim) and offset of a transpose / expand / slice."""
    xs = tuple(shape_of(op.operands[0]))
    st = _row_major(xs)
    if isinstance(op, nn.TransposeOp):
        return tuple(st[p] for p in op.perm), 0
    if isinstance(op, nn.ExpandOp):
        strides = bcast_strides(xs, tuple(shape_of(op.results[0])))
        assert strides is not None
        return strides, 0
    if isinstance(op, nn.GatherOp):
        # one constant index (checked by the caller): drop the axis, offset by index * stride
        axis = op.axis
        k = int(numpy_from_dense(op.indices.owner.value).reshape(-1)[0])  # type: ignore[union-attr]
        k = k + xs[axis] if k < 0 else k
        nidx = len(shape_of(op.indices))
        return tuple([*st[:axis], *([0] * nidx), *st[axis + 1 :]]), k * st[axis]
    assert isinstance(op, nn.SliceOp)
    starts, steps = op.starts, op.steps
    return tuple(s * k for s, k in zip(st, steps)), sum(a * s for a, s in zip(starts, st))


class KernelLowering:
    """Builds one ``ascendc.kernel`` from one ``fusion.kernel`` (or raises Unsupported)."""

    def __init__(self, kop: fusion.KernelOp, name: str, opts: LowerFusionToAscendC):
        self.kop = kop
        self.name = name
        self.opts = opts
        #: why the kernel keeps compile-time sizes (when run-time sizes are asked for)
        self.static_reason = (
            "Matmul / convolution tiling (TCubeTiling, work units) is computed for "
            "compile-time M, N, K"
        )
        self.body_ops = [o for o in kop.body.block.ops if not isinstance(o, fusion.YieldOp)]
        term = kop.body.block.last_op
        assert isinstance(term, fusion.YieldOp)
        self.yielded = list(term.values)
        for v in [*kop.inputs, *kop.outputs]:
            if tensor_of(v).element_type != f32:
                raise Unsupported(f"element type {tensor_of(v).element_type} (only f32 is lowered)")

    # -- shared pieces --------------------------------------------------------------------
    def _scalar_consts(self, ops: list[Operation]) -> dict[SSAValue, float]:
        consts: dict[SSAValue, float] = {}
        for o in ops:
            if isinstance(o, nn.ConstantOp):
                if o.is_elided:
                    raise Unsupported("elided constant inside the kernel")
                arr = numpy_from_dense(o.value)  # type: ignore[arg-type]
                if arr.size != 1:
                    raise Unsupported("non-scalar constant inside the kernel")
                consts[o.y] = float(arr.reshape(-1)[0])
        return consts

    def _classify_args(
        self, ops: list[Operation], out_shape: tuple[int, ...], skip: set[int]
    ) -> _Plan:
        block = self.kop.body.block
        gathers = {
            o: (value_index(o.operands[0]), *gather_map(o))
            for o in ops
            if isinstance(o, GATHER_OPS)
        }
        gathers.update(
            {o: (value_index(o.operands[0]), (), 0) for o in ops if isinstance(o, POOL_OPS)}
        )
        used = {a.index for o in ops if o not in gathers for a in o.operands
                if isinstance(a, BlockArgument) and a.owner is block}  # fmt: skip
        queued, bcast = [], {}
        for arg in self.kop.body.block.args:
            i = arg.index
            if i in skip or i not in used:
                continue
            s = tuple(shape_of(arg))
            if s == out_shape:
                queued.append(i)
                continue
            strides = bcast_strides(s, out_shape)
            if strides is None:
                raise Unsupported(f"input {i} of shape {s} does not broadcast to {out_shape}")
            bcast[i] = strides
        return _Plan(out_shape, queued, bcast, gathers)

    def _vector_ops(self, ops: list[Operation], out_shape: tuple[int, ...]) -> None:
        for o in ops:
            if isinstance(o, nn.ConstantOp):
                continue
            if isinstance(o, (*GATHER_OPS, *POOL_OPS)):
                if o.operands[0].owner is not self.kop.body.block:
                    raise Unsupported(f"{o.name} of a computed value (only of kernel inputs)")
                if isinstance(o, nn.GatherOp) and not (
                    isinstance(o.indices.owner, nn.ConstantOp) and numel(shape_of(o.indices)) == 1
                ):
                    raise Unsupported("nn.gather with run-time or several indices")
                if isinstance(o, nn.GatherOp):
                    # the one constant index becomes a fixed offset: never one outside the data
                    n = shape_of(o.data)[o.axis]
                    k = int(numpy_from_dense(o.indices.owner.value).reshape(-1)[0])  # type: ignore[union-attr]
                    if not -n <= k < n:
                        raise Unsupported(f"nn.gather index {k} out of range [{-n}, {n - 1}]")
                if tuple(shape_of(o.results[0])) != out_shape:
                    raise Unsupported(
                        f"{o.name} result of shape {shape_of(o.results[0])}, not {out_shape}"
                    )
                continue
            if not isinstance(o, VECTOR_OPS):
                raise Unsupported(f"{o.name} in the kernel has no Ascend C lowering")
            if tuple(shape_of(o.results[0])) != out_shape:
                # An intermediate on a smaller (broadcast) shape: only constants may be.
                if not all(isinstance(a.owner, nn.ConstantOp) for a in o.operands):
                    raise Unsupported(
                        f"{o.name} computes on shape {shape_of(o.results[0])}, not {out_shape}"
                    )

    def _uses_after(self, ops: list[Operation]) -> dict[SSAValue, int]:
        last: dict[SSAValue, int] = {}
        for i, o in enumerate(ops):
            for a in o.operands:
                last[a] = i
        return last

    def _build_tile_loop(
        self,
        body: Block,
        gms: dict[int, SSAValue],
        ops: list[Operation],
        plan: _Plan,
        outputs: list[tuple[SSAValue, SSAValue]],
        extent: str,
        total: int,
        seed: tuple[SSAValue, SSAValue] | None = None,
    ) -> dict[str, int]:
        """Queues, buffers and the three-stage tile loop computing ``ops``.

        ``outputs``: (nn value, output global tensor). ``seed``: (nn value, global tensor)
        read as an extra queued input (the cube result the epilogue transforms).
        Returns the inputs of the vector tiling formula (``total``, ``nbufs``, ``fixedBytes``).
        """
        consts = self._scalar_consts(ops)
        placeholder = 8  # tile bytes are fixed after counting buffers; patched below
        queues: list[ac.QueueOp] = []
        tbufs: list[ac.TBufOp] = []

        def new_queue(pos: str) -> ac.QueueOp:
            q = ac.QueueOp(pos, tl.BUFFER_NUM, placeholder * 4)
            queues.append(q)
            return q

        in_q: list[tuple[ac.QueueOp, SSAValue, SSAValue]] = []  # queue, global, nn value
        for i in plan.queued:
            in_q.append((new_queue("VECIN"), gms[i], self.kop.body.block.args[i]))
        if seed is not None:
            in_q.append((new_queue("VECIN"), seed[1], seed[0]))
        out_q = [(new_queue("VECOUT"), g, v) for v, g in outputs]
        loaded: dict[int, ac.LoadOperandOp] = {}
        bcast_bytes = 0
        for i, strides in plan.bcast.items():
            n = numel(shape_of(self.kop.body.block.args[i]))
            if n > BCAST_LIMIT:
                continue  # too large for UB: expanded from GM directly
            loaded[i] = ac.LoadOperandOp(gms[i], n, f32)
            bcast_bytes += tl.round_up_int(n, tl.ALIGN) * 4

        # copy-in stage
        cin_r, cin = _stage()
        for q, g, _ in in_q:
            a = ac.AllocTensorOp(q.result, f32)
            cin.add_ops([a, ac.CopyInOp(a.result, g), ac.EnQueOp(q.result, a.result)])
        cin.add_op(ac.YieldOp())

        # compute stage
        comp_r, comp = _stage()

        def new_temp() -> SSAValue:
            t = ac.TBufOp(placeholder * 4)
            tbufs.append(t)
            return t.result

        vb = VectorBuilder(comp, plan.out_shape, new_temp_buf=new_temp)
        env: dict[SSAValue, Val] = {}
        deq: list[tuple[ac.QueueOp, SSAValue]] = []
        for q, _, v in in_q:
            d = ac.DeQueOp(q.result, f32)
            comp.add_op(d)
            env[v] = Tile(d.result)
            deq.append((q, d.result))
        for i, strides in plan.bcast.items():
            src = loaded[i].result if i in loaded else gms[i]
            env[self.kop.body.block.args[i]] = Bcast(src, strides)
        for v, c in consts.items():
            env[v] = Scalar(c)
        for g, (i, strides, offset) in (plan.gathers or {}).items():
            if isinstance(g, POOL_OPS):
                env[g.results[0]] = Window(g, gms[i])
            else:
                env[g.results[0]] = Bcast(gms[i], strides, offset=offset)
        out_tiles: dict[SSAValue, Tile] = {}
        for q, _, v in out_q:
            if v not in out_tiles:
                a = ac.AllocTensorOp(q.result, f32)
                comp.add_op(a)
                out_tiles[v] = Tile(a.result)
        last = self._uses_after(ops)
        yielded = {v for v, _ in outputs}
        compute_ops = [o for o in ops if not isinstance(o, nn.ConstantOp)]
        for idx, o in enumerate(ops):
            if isinstance(o, nn.ConstantOp) or o in (plan.gathers or {}):
                continue
            res = o.results[0]
            args = [env[a] for a in o.operands]

            def dst(res: SSAValue = res) -> Tile:
                return out_tiles[res] if res in out_tiles else vb.temp()

            val = vb.lower(o, args, dst)
            if res in yielded and isinstance(val, Scalar | Bcast):
                t = out_tiles[res]
                src = vb.tile_of(val)
                vb.s("Muls", t, src, 1.0)
                val = t
            env[res] = val
            for a in set(o.operands):
                if last.get(a, -1) <= idx and a not in yielded:
                    vb.release(env[a])
        del compute_ops
        # results not computed into their output tile (a yielded input, a gathered input,
        # the cube result itself) are copied there with Muls(x, 1)
        for v, tile in out_tiles.items():
            if env[v] is not tile:
                vb.s("Muls", tile, vb.tile_of(env[v]), 1.0)
        for q, _, v in out_q:
            comp.add_op(ac.EnQueOp(q.result, out_tiles[v].local))
        for q, loc in deq:
            comp.add_op(ac.FreeTensorOp(q.result, loc))
        comp.add_op(ac.YieldOp())

        # copy-out stage
        cout_r, cout = _stage()
        for q, g, _ in out_q:
            d = ac.DeQueOp(q.result, f32)
            cout.add_ops([d, ac.CopyOutOp(g, d.result), ac.FreeTensorOp(q.result, d.result)])
        cout.add_op(ac.YieldOp())

        sizes = {
            "total": total,
            "nbufs": tl.BUFFER_NUM * len(queues) + len(tbufs),
            "fixedBytes": bcast_bytes,
        }
        tile = self._tiling(tl.TilingKind.VECTOR, sizes).field_values()["tileLength"]
        for q in queues:
            q.properties["bytes"] = _i(tile * 4)
        for t in tbufs:
            t.properties["bytes"] = _i(tile * 4)
        body.add_ops([*queues, *tbufs, *loaded.values()])
        body.add_op(ac.TileLoopOp(extent, total, [cin_r, comp_r, cout_r]))
        return sizes

    def _tiling(
        self, kind: tl.TilingKind, sizes: dict[str, int], runtime: tuple[str, ...] = ()
    ) -> ac.TilingAttr:
        """The tiling record, or ``Unsupported`` when the kernel's buffers do not fit."""
        try:
            return tl.make_tiling(kind, sizes, self.opts, runtime)
        except tl.TilingError as e:
            raise Unsupported(str(e)) from None

    # -- vector kernels -------------------------------------------------------------------
    def vector(self) -> ac.KernelOp:
        out_shapes = {tuple(shape_of(v)) for v in self.kop.outputs}
        if len(out_shapes) != 1:
            raise Unsupported("results of different shapes")
        out_shape = out_shapes.pop()
        self._vector_ops(self.body_ops, out_shape)
        plan = self._classify_args(self.body_ops, out_shape, set())
        block, gms = self._kernel_block()
        outs = [(v, gms[len(self.kop.inputs) + j]) for j, v in enumerate(self.yielded)]
        vt = self._build_tile_loop(block, gms, self.body_ops, plan, outs, "block", numel(out_shape))
        if self.opts.runtime_sizes:
            lead = self._runtime_lead(plan, out_shape)
            if lead is not None:
                n_in = len(self.kop.inputs)
                for i in [*plan.queued, *range(n_in, n_in + len(self.kop.outputs))]:
                    ac.set_runtime_length(gms[i], "total")
                outer = numel(out_shape[:lead])
                del vt["total"]
                sizes = {"outer": outer, "outerMax": outer, "inner": numel(out_shape[lead:]),
                         "lead": lead, **vt}  # fmt: skip
                return self._finish(
                    "vector", block, self._tiling(tl.TilingKind.VECTOR, sizes, ("outer",))
                )
        return self._finish("vector", block, self._tiling(tl.TilingKind.VECTOR, vt))

    def _runtime_lead(self, plan: _Plan, out_shape: tuple[int, ...]) -> int | None:
        """Leading dims of ``out_shape`` whose extent can be a run-time size (``outer``), or
        None with ``self.static_reason`` set: broadcast operands must not vary along them
        (their index maps use the trailing dims only) and a queued input must carry them."""
        if plan.gathers:
            self.static_reason = "gathers and pooling index their source by its compile-time shape"
            return None
        if not plan.queued:
            self.static_reason = "no input has the kernel's shape to carry a run-time size"
            return None
        lead = len(out_shape)
        for i, strides in plan.bcast.items():
            first = next((d for d, st in enumerate(strides) if st), len(strides))
            lead = min(lead, first)
            if first == 0:
                self.static_reason = f"input {i} varies along the leading dimension"
                return None
        if lead == 0:
            self.static_reason = "a scalar result"
            return None
        return lead

    def _kernel_block(self, workspace: int = 0) -> tuple[Block, dict[int, SSAValue]]:
        """Kernel block: one GM_ADDR per input and output (+ ``workspace`` elements of user
        workspace, as a last argument, when > 0) and a global tensor over each."""
        n_args = len(self.kop.inputs) + len(self.kop.outputs)
        block = Block(arg_types=[ac.GmAddrType()] * (n_args + (1 if workspace else 0)))
        gms: dict[int, SSAValue] = {}
        for i, arg in enumerate(block.args):
            if i == n_args:
                g = ac.GlobalTensorOp(arg, workspace, f32)
                g.attributes["workspace"] = StringAttr("user")
            else:
                n_in = len(self.kop.inputs)
                v = self.kop.inputs[i] if i < n_in else self.kop.outputs[i - n_in]
                g = ac.GlobalTensorOp(arg, numel(shape_of(v)), f32)
            block.add_op(g)
            gms[i] = g.result
        self.has_workspace = bool(workspace)
        return block, gms

    def _finish(self, kind: str, block: Block, tiling: ac.TilingAttr) -> ac.KernelOp:
        block.add_op(ac.ReturnOp())
        names = [f"in{i}" for i in range(len(self.kop.inputs))] + [
            f"out{j}" for j in range(len(self.kop.outputs))
        ]
        if getattr(self, "has_workspace", False):
            names.append("workspace")
        return ac.KernelOp(
            self.name,
            kind,
            self.kop.pattern_name,
            self.kop.origin_names,
            names,
            len(self.kop.inputs),
            tiling,
            Region(block),
        )

    # -- cube kernels ---------------------------------------------------------------------
    def cube(self) -> ac.KernelOp:
        ops = [o for o in self.body_ops if not isinstance(o, nn.ConstantOp)]
        head = ops[0]
        if len(self.kop.outputs) != 1:
            raise Unsupported("a cube kernel with more than one result")
        for a in head.operands:
            if a.owner is not self.kop.body.block:
                raise Unsupported(f"{head.name} operand not a kernel input")
        out_shape = tuple(shape_of(head.results[0]))
        epilogue = [o for o in self.body_ops if o is not head]
        pre: list[tuple[str, float | int]] = []  # synthetic epilogue steps (gemm alpha/beta)
        ws_elems = 0
        if isinstance(head, nn.ConvOp):
            if len(shape_of(head.x)) != 4:  # before the workspace, which reads 2-d sizes
                raise Unsupported("only 2-d convolution is lowered")
            ws_elems = self._conv_workspace(head)
        block, gms = self._kernel_block(ws_elems)
        out_g = gms[len(self.kop.inputs)]
        if isinstance(head, nn.ConvOp):
            mm, units, ct = self._conv(head, gms, out_g, gms[len(self.kop.inputs) + 1])
            skip = {value_index(a) for a in (head.x, head.w)}
            bias_arg = head.bias
        elif isinstance(head, nn.MatMulOp | nn.GemmOp):
            mm, units, ct = self._matmul(head, gms, out_g)
            skip = {value_index(a) for a in (head.a, head.b)}
            bias_arg = head.c if isinstance(head, nn.GemmOp) else None
            if isinstance(head, nn.GemmOp):
                if head.alpha != 1.0:
                    pre.append(("alpha", head.alpha))
                if bias_arg is not None and head.beta != 1.0:
                    pre.append(("beta", head.beta))
        else:
            raise Unsupported(f"{head.name} is not a cube op")
        if self.yielded[0] is head.results[0] and bias_arg is None and not pre:
            # no epilogue at all
            body_r, body = _stage()
            body.add_ops([*mm, ac.YieldOp()])
            block.add_op(ac.WorkLoopOp(units, body_r))
            return self._finish("cube", block, self._tiling(tl.TilingKind.CUBE, ct))
        self._vector_ops(epilogue, out_shape)
        # The epilogue reads the cube result from the output buffer (in place).
        if isinstance(head, nn.ConvOp):
            ep_ops, bias_shape = self._epilogue_ops(head, bias_arg, pre, out_shape, conv=True)
        else:
            ep_ops, bias_shape = self._epilogue_ops(head, bias_arg, pre, out_shape, conv=False)
        term = self.kop.body.block.last_op
        assert isinstance(term, fusion.YieldOp)
        self.yielded = list(term.values)  # the synthetic ops may have taken over the result
        plan = self._classify_args(epilogue, out_shape, skip)
        if bias_arg is not None:
            bias_index = value_index(bias_arg)
            plan.bcast[bias_index] = bias_shape
            plan.queued = [i for i in plan.queued if i != bias_index]
        body_r, body = _stage()
        body.add_ops(mm)
        vt = self._build_tile_loop(
            body,
            gms,
            [*ep_ops, *epilogue],
            plan,
            [(self.yielded[0], out_g)],
            "problem",
            numel(out_shape),
            seed=(head.results[0], out_g),
        )
        # Queues/buffers were placed in the work-loop body; Init-level is clearer: hoist them.
        for o in list(body.ops):
            if isinstance(o, ac.QueueOp | ac.TBufOp | ac.LoadOperandOp):
                o.detach()
                block.add_op(o)
        body.add_op(ac.YieldOp())
        block.add_op(ac.WorkLoopOp(units, body_r))
        # launch one core per work unit, up to the cores (the vector blockDim does not apply)
        return self._finish("cube", block, self._tiling(tl.TilingKind.CUBE_EPILOGUE, {**ct, **vt}))

    def _epilogue_ops(self, head, bias_arg, pre, out_shape, conv: bool):
        """Synthetic nn ops applying alpha / bias to the cube result before the body's ops."""
        ops: list[Operation] = []
        bias_strides: tuple[int, ...] = ()
        cur = head.results[0]
        for kind, value in pre:
            if kind == "alpha":
                c = nn.ConstantOp(_scalar_dense(value))
                m = nn.MulOp.build(operands=[cur, c.y], result_types=[cur.type])
                ops += [c, m]
                cur = m.results[0]
        if bias_arg is not None:
            bshape = tuple(shape_of(bias_arg))
            if conv:
                strides = tuple(1 if i == 1 else 0 for i in range(len(out_shape)))
            else:
                st = bcast_strides(bshape, out_shape)
                if st is None:
                    raise Unsupported(f"bias shape {bshape} does not broadcast to {out_shape}")
                strides = st
            bias_strides = strides
            bval: SSAValue = bias_arg
            for kind, value in pre:
                if kind == "beta":
                    c = nn.ConstantOp(_scalar_dense(value))
                    m = nn.MulOp.build(operands=[bias_arg, c.y], result_types=[bias_arg.type])
                    ops += [c, m]
                    bval = m.results[0]
            add = nn.AddOp.build(operands=[cur, bval], result_types=[cur.type])
            ops.append(add)
            cur = add.results[0]
        if ops:
            # Route the body's uses of the cube result through the synthetic ops.
            head.results[0].replace_uses_with_if(cur, lambda use: use.operation not in ops)
        return ops, bias_strides

    def _matmul(self, op: Operation, gms, out_g):
        a, b = op.operands[0], op.operands[1]
        sa, sb = tuple(shape_of(a)), tuple(shape_of(b))
        if isinstance(op, nn.GemmOp):
            ta, tb = op.trans_a, op.trans_b
            m = sa[1] if ta else sa[0]
            k = sa[0] if ta else sa[1]
            n = sb[0] if tb else sb[1]
            batch, a_st, b_st = 1, 0, 0
        else:
            ta = tb = False
            if len(sa) < 2 or len(sb) < 2:
                raise Unsupported("matmul with a 1-d operand")
            k, n = sb[-2], sb[-1]
            ba, bb = sa[:-2], sb[:-2]
            if numel(bb) == 1:
                m, batch, a_st, b_st = numel(sa) // k, 1, 0, 0
            elif ba == bb or (numel(ba) == 1 and len(ba) <= len(bb)):
                m = sa[-2]
                batch = numel(bb)
                a_st = 0 if numel(ba) == 1 else m * k
                b_st = k * n
            else:
                raise Unsupported(f"matmul batch broadcast {sa} x {sb}")
        ct = {"M": m, "N": n, "K": k, "batch": batch, "split": 1, "im2col": 0}
        m_blocks = self._tiling(tl.TilingKind.CUBE, ct).field_values()["mBlocks"]
        units = batch * m_blocks
        ga, gb = gms[value_index(a)], gms[value_index(b)]
        mm = [self._mm_op(ga, gb, out_g, m, n, k, ta, tb, m_blocks, a_st, 0, b_st, 0, m * n)]
        return mm, units, ct

    def _conv_workspace(self, op: nn.ConvOp) -> int:
        """im2col slice elements per core x cores."""
        ws, os_ = shape_of(op.w), shape_of(op.y)
        return ws[1] * ws[2] * ws[3] * os_[2] * os_[3] * self.opts.cores

    def _conv(self, op: nn.ConvOp, gms, out_g, ws_g):
        xs, ws, os_ = shape_of(op.x), shape_of(op.w), shape_of(op.y)
        g = op.group
        cout_g = ws[0] // g
        k = ws[1] * ws[2] * ws[3]
        p = os_[2] * os_[3]
        units = xs[0] * g
        # one work unit per (image, group); one im2col slice per core in the workspace
        ct = {"M": cout_g, "N": p, "K": k, "batch": units, "split": 0, "im2col": 1}
        im = ac.Im2ColOp.build(
            operands=[gms[value_index(op.x)], ws_g],
            properties={
                "input_shape": i64_array(xs),
                "kernel": i64_array(ws[2:]),
                "out_hw": i64_array(os_[2:]),
                "strides": op.strides_attr,
                "pads": op.pads_attr,
                "dilations": op.dilations_attr,
                "groups": _i(g),
            },
        )
        mm = self._mm_op(
            gms[value_index(op.w)],
            ws_g,
            out_g,
            cout_g,
            p,
            k,
            False,
            False,
            1,
            cout_g * k,
            g,
            0,
            0,
            cout_g * p,
        )
        return [im, mm], units, ct

    def _mm_op(self, a, b, c, m, n, k, ta, tb, m_blocks, a_st, a_per, b_st, b_per, c_st):
        return ac.MatmulOp.build(
            operands=[a, b, c, []],
            properties={
                "m": _i(m),
                "n": _i(n),
                "k": _i(k),
                "trans_a": BoolAttr.from_bool(ta),
                "trans_b": BoolAttr.from_bool(tb),
                "m_blocks": _i(m_blocks),
                "a_stride": _i(a_st),
                "a_period": _i(a_per),
                "b_stride": _i(b_st),
                "b_period": _i(b_per),
                "c_stride": _i(c_st),
            },
        )


def _scalar_dense(value: float):
    import numpy as np

    from autofusion.dialects.dtypes import dense_from_numpy

    return dense_from_numpy(np.asarray(value, dtype=np.float32).reshape(()))


def hoist_constants(kop: fusion.KernelOp) -> list[nn.ConstantOp]:
    """Move non-scalar constants of ``kop``'s body out as new kernel inputs (GM tensors).

    ``kop`` must be detached (a clone); the returned detached constants feed its new
    trailing operands and must be inserted before the launch that replaces it.
    """
    block = kop.body.block
    hoisted: list[nn.ConstantOp] = []
    for op in list(block.ops):
        if isinstance(op, nn.ConstantOp) and numel(shape_of(op.y)) > 1:
            arg = block.insert_arg(op.y.type, len(block.args))
            op.y.replace_all_uses_with(arg)
            op.detach()
            hoisted.append(op)
    if hoisted:
        kop.operands = [*kop.operands, *[c.y for c in hoisted]]
    return hoisted


def lower_kernel(
    kop: fusion.KernelOp, name: str, opts: LowerFusionToAscendC
) -> tuple[ac.KernelOp, list[nn.ConstantOp]]:
    """The ``ascendc.kernel`` for ``kop`` and the constants hoisted into extra inputs
    (raises ``Unsupported`` with a reason)."""
    body_ops = [o for o in kop.body.block.ops if not isinstance(o, fusion.YieldOp | nn.ConstantOp)]
    if not body_ops:
        raise Unsupported("empty kernel")
    # Work on a clone: constants are hoisted and synthetic epilogue ops rewire uses.
    clone = kop.clone()
    hoisted = hoist_constants(clone)
    lowering = KernelLowering(clone, name, opts)
    kernel = _lower_body(lowering, clone, body_ops)
    if opts.runtime_sizes and not kernel.tiling.runtime_names():
        kernel.properties["static_reason"] = StringAttr(lowering.static_reason)
    return kernel, hoisted


def _lower_body(
    lowering: KernelLowering, clone: fusion.KernelOp, body_ops: list[Operation]
) -> ac.KernelOp:
    if len(body_ops) == 1 and isinstance(body_ops[0], nn.AttentionOp):
        from autofusion.lowering.ascendc.attention import build_attention

        return build_attention(
            lowering, next(o for o in clone.body.block.ops if isinstance(o, nn.AttentionOp))
        )
    if len(body_ops) == 1 and isinstance(body_ops[0], COPY_OPS):
        return build_copy(
            lowering, next(o for o in clone.body.block.ops if isinstance(o, COPY_OPS))
        )
    if len(body_ops) == 1 and isinstance(body_ops[0], ROW_OPS):
        return build_rows(lowering, next(o for o in clone.body.block.ops if isinstance(o, ROW_OPS)))
    if isinstance(body_ops[0], nn.MatMulOp | nn.GemmOp | nn.ConvOp):
        return lowering.cube()
    return lowering.vector()


SINGLE_OPS: tuple[type[Operation], ...] = (
    nn.ConvOp,
    nn.MatMulOp,
    nn.GemmOp,
    nn.AttentionOp,
    *VECTOR_OPS,
    *ROW_OPS,
    *GATHER_OPS,
    *POOL_OPS,
    *COPY_OPS,
)


def outline_single(op: Operation) -> fusion.KernelOp:
    """A detached one-op ``fusion.kernel`` computing ``op`` (pattern ``single_<op>``).

    One-element constant operands (a scalar, a Gather index) are cloned into the body, so
    they become immediates; the other operands become kernel inputs."""

    def is_scalar_const(v: SSAValue) -> bool:
        return (
            isinstance(v.owner, nn.ConstantOp) and not v.owner.is_elided and numel(shape_of(v)) == 1
        )

    inputs = [v for v in op.operands if not is_scalar_const(v)]
    block = Block(arg_types=[v.type for v in inputs])
    inner = op.clone()
    args = iter(block.args)
    for i, v in enumerate(op.operands):
        if is_scalar_const(v):
            c = v.owner.clone()  # type: ignore[union-attr]
            block.add_op(c)
            inner.operands[i] = c.results[0]
        else:
            inner.operands[i] = next(args)
    block.add_ops([inner, fusion.YieldOp(*inner.results)])
    names = origin_names(op) or [op.name]
    return fusion.KernelOp(
        inputs,
        [r.type for r in op.results],
        Region(block),
        f"single_{op.name.removeprefix('nn.')}",
        names,
    )


class LowerSingleOp(RewritePattern):
    """An unfused cube or elementwise nn op in ``@main`` becomes a one-op kernel launch."""

    def __init__(self, lower: LowerKernel):
        self.lower = lower

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, SINGLE_OPS) or not isinstance(op.parent_op(), func.FuncOp):
            return
        if ASCENDC_FALLBACK in op.attributes:
            return
        if all(isinstance(v.owner, nn.ConstantOp) for v in op.operands):
            return  # constant-folding material, not a kernel
        kop = outline_single(op)
        name = f"af_kernel_{self.lower.count}"
        try:
            kernel, hoisted = lower_kernel(kop, name, self.lower.opts)
        except Unsupported as e:  # stays on the host, saying why (as a kernel does)
            kop.erase()
            op.attributes[ASCENDC_FALLBACK] = StringAttr(str(e))
            return
        self.lower.count += 1
        kernel.verify()
        rewriter.insert(kernel, _module_end(self.lower.module))
        launch = ac.LaunchOp(
            name, [*kop.inputs, *[c.y for c in hoisted]], [r.type for r in op.results]
        )
        rewriter.replace(op, [*hoisted, launch], list(launch.outputs))
        kop.erase()


class LowerKernel(RewritePattern):
    """Replace one supported ``fusion.kernel`` by ``ascendc.launch`` of a new kernel."""

    def __init__(self, module: ModuleOp, opts: LowerFusionToAscendC):
        self.module = module
        self.opts = opts
        self.count = 0

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: fusion.KernelOp, rewriter: PatternRewriter) -> None:
        if not isinstance(op.parent_op(), func.FuncOp) or ASCENDC_FALLBACK in op.attributes:
            return
        name = f"af_kernel_{self.count}"
        try:
            kernel, hoisted = lower_kernel(op, name, self.opts)
        except Unsupported as e:
            op.attributes[ASCENDC_FALLBACK] = StringAttr(str(e))
            return
        self.count += 1
        kernel.verify()
        rewriter.insert(kernel, _module_end(self.module))
        inputs = [*op.inputs, *[c.y for c in hoisted]]
        launch = ac.LaunchOp(name, inputs, [r.type for r in op.outputs])
        rewriter.replace(op, [*hoisted, launch], list(launch.outputs))


def _module_end(module: ModuleOp):
    from xdsl.rewriter import InsertPoint

    return InsertPoint.at_end(module.body.block)


@dataclass(frozen=True)
class LowerFusionToAscendC(CheckedPass):
    """Lower supported ``fusion.kernel`` ops to ``ascendc.kernel`` + ``ascendc.launch``.

    Options: ``single_ops`` (also lower unfused Conv/MatMul/Gemm/elementwise ops of
    ``@main`` as one-op kernels, default true), ``cores`` (vector/cube cores the tiling
    spreads work over, default 8),
    ``max_tile`` (largest tile in elements, default 4096), ``ub_bytes`` (unified-buffer
    budget per core, default 184 KiB of the 192 KiB on Atlas A2), ``runtime_sizes`` (host
    tiling from run-time sizes: elementwise kernels take their leading extent, row-wise
    kernels their row count, in ``1..<the IR's size>``; other kernels keep compile-time
    sizes and record why in ``static_reason``; default false).
    """

    name: ClassVar[str] = "lower-fusion-to-ascendc"
    single_ops: bool = True
    runtime_sizes: bool = False
    cores: int = 8
    max_tile: int = 4096
    ub_bytes: int = 184 * 1024

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        kernels = LowerKernel(op, self)
        patterns: list[RewritePattern] = [kernels]
        if self.single_ops:
            patterns.append(LowerSingleOp(kernels))
        PatternRewriteWalker(
            GreedyRewritePatternApplier(patterns, dce_enabled=False), apply_recursively=False
        ).rewrite_module(op)


__all__ = ["DenseArrayBase", "LowerFusionToAscendC", "lower_kernel"]
