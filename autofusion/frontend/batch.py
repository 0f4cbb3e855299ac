"""Run-time batch: one library for every batch size in a range (issue 12, item 3 for batch).

A model whose batch is a free symbol (``input[batch, 3, 224, 224]``) can be served by one
library when its graph is **batch-separable**: every sample's outputs depend on that sample's
inputs only, with the batch the leading dim of every tensor that has it. The library is then
the model compiled for batch 1, and ``af_run_batch(m, n, inputs, outputs)`` (model.h) runs
its graph once per sample, stepping each batched input and output by one sample's bytes. The
arena is batch 1's (no larger than a static build's at the upper bound) and nothing is
re-planned per call; the kernels of one sample keep their own threads.

Separability is proved, not assumed. The model is imported at batch 1 and at batch 2 (other
symbols pinned as given), and the two ``nn`` graphs are walked op by op:

- a value is *batched* when its type differs between the imports exactly in dim 0 (1 vs 2);
  any other difference (``[batch * seq, 768]``, batch in dim 1 as GRU/LSTM exports have it)
  is refused, naming the op;
- every op with a batched operand must produce only batched results, must not compute along
  dim 0 (a reduction, softmax, concat, split, slice, pad, resize, gather, transpose or tile
  that touches dim 0 is refused) and must take batched operands only where dim 0 is a
  per-sample axis (matmul/gemm rows or batch dims, conv/pool/norm images, attention batch);
  a weight-side operand of a matmul/gemm, conv or norm must not be batched;
- an op with no batched operand may make batched results only by broadcasting (expand,
  tile of a size-1 dim 0) or as a constant whose every sample equals the batch-1 constant
  (an exporter's folded ``zeros([batch, seq])``).
- nothing else may depend on the batch: unbatched constants and every op's properties must
  be equal in both imports (but dim 0 of a slice or tile): a folded ``Shape(x)[0]`` used as
  a value would be 1 in the batch-1 library.

Anything else is one :class:`~autofusion.errors.AutofusionError` naming the ONNX node, the
op and why, so a user learns why the range cannot be served by one library (the per-shape
model of :mod:`autofusion.dynamic` still serves it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IntAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue

from autofusion.dialects import nn
from autofusion.dialects.attrs import C_BATCH, ONNX_NAME, origin_names
from autofusion.dialects.dtypes import numpy_from_dense
from autofusion.errors import AutofusionError
from autofusion.frontend.symbols import ShapePlan


@dataclass(frozen=True)
class BatchPlan:
    """The batch symbol of a separable model: its range and which inputs/outputs carry it
    (in dim 0); the library is built with the symbol pinned to 1."""

    symbol: str
    lo: int
    hi: int
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]

    def report(self) -> dict[str, object]:
        return {
            "symbol": self.symbol,
            "range": [self.lo, self.hi],
            "batched_inputs": list(self.inputs),
            "batched_outputs": list(self.outputs),
        }


def fixed_sizes(plan: ShapePlan) -> dict[str, int]:
    """The pinned symbols and the free ones whose range has one size (``--dynamic seq=128..128``
    fixes ``seq`` while the batch stays free)."""
    out = dict(plan.pinned)
    for s in plan.free:
        lo, hi = plan.ranges[s]
        if lo == hi:
            out[s] = lo
    return out


def dim0_symbols(plan: ShapePlan, symbols: Sequence[str]) -> list[str]:
    """Those of ``symbols`` that occur only as dim 0 of the inputs that use them."""
    return [s for s in symbols if all(d != s for sig in plan.inputs for d in sig.dims[1:])]


def batch_candidate(plan: ShapePlan) -> str | None:
    """The one free symbol (a one-size range counts as pinned), if it occurs only as dim 0 of
    the inputs that use it; else None (no free symbol, several, or one in another dim)."""
    fixed = fixed_sizes(plan)
    free = [s for s in plan.free if s not in fixed]
    return free[0] if len(free) == 1 and dim0_symbols(plan, free) else None


def why_not_candidate(plan: ShapePlan) -> str:
    fixed = fixed_sizes(plan)
    free = [s for s in plan.free if s not in fixed]
    if len(free) > 1:
        return (f"only one free symbol can be a run-time batch, and {', '.join(free)} are free; "
                "fix the others (--dynamic SYM=N..N, or --input-shape)")  # fmt: skip
    uses = ", ".join(plan.uses(free[0]))
    return f"'{free[0]}' is not only dim 0 of the inputs that use it ({uses})"


def _shape(v: SSAValue) -> tuple[int, ...] | None:
    t = v.type
    return tuple(t.get_shape()) if isinstance(t, TensorType) else None


def _origin(op: Operation) -> str:
    names = origin_names(op)
    return f"node '{names[0]}' ({op.name})" if names else f"op {op.name}"


def _names(attrs: object, n: int, kind: str) -> list[str]:
    data = getattr(attrs, "data", None) or ()
    out = []
    for i in range(n):
        d = data[i] if i < len(data) else None
        name = d.data.get(ONNX_NAME) if isinstance(d, DictionaryAttr) else None
        out.append(name.data if isinstance(name, StringAttr) else f"{kind}{i}")
    return out


class _Refused(Exception):
    pass


def _batched(a: SSAValue, b: SSAValue, where: str) -> bool:
    sa, sb = _shape(a), _shape(b)
    if sa is None or sb is None or sa == sb:
        if a.type != b.type:
            raise _Refused(f"{where}: its type changes with the batch ({a.type} vs {b.type})")
        return False
    if len(sa) == len(sb) and sa and sb[0] == 2 * sa[0] and sa[1:] == sb[1:]:
        return True  # dim 0 holds the samples one after another (k rows each)
    raise _Refused(
        f"{where}: a shape depends on the batch other than as dim 0 "
        f"({list(sa)} at batch 1, {list(sb)} at batch 2)"
    )


def _one_row(v: SSAValue, where: str) -> None:
    """Graph inputs and outputs carry the batch itself in dim 0 (one row per sample)."""
    shp = _shape(v) or ()
    if not shp or shp[0] != 1:
        raise _Refused(f"{where}: dim 0 is {list(shp)[:1]} at batch 1, not the batch itself")


_ELEMENTWISE = (nn.UnaryOp, nn.BinaryOp, nn.WhereOp, nn.CastOp)
_PER_IMAGE = (nn.ConvOp, nn.BatchNormOp, nn.InstanceNormOp, nn.LRNOp, nn.PoolOp, nn.GlobalPoolOp)


def _check_op(op: Operation, bat: Sequence[bool], where: str, offsets: set[SSAValue]) -> None:
    """Raise :class:`_Refused` unless ``op`` (batch-2 import) keeps samples apart, given
    which operands are batched."""
    ins = list(op.operands)
    ranks = [len(_shape(v) or ()) for v in ins]
    out_rank = len(_shape(op.results[0]) or ()) if op.results else 0

    def no_batched(*idx: int, why: str) -> None:
        for i in idx:
            if i < len(bat) and bat[i]:
                raise _Refused(f"{where}: {why}")

    def aligned() -> None:  # batched operands must line up with the result's dim 0
        for i, b in enumerate(bat):
            if b and ranks[i] != out_rank:
                raise _Refused(f"{where}: a batched operand of rank {ranks[i]} broadcasts "
                               f"into rank {out_rank}")  # fmt: skip

    def axis_not_0(axis: int, what: str) -> None:
        if axis == 0:
            raise _Refused(f"{where}: {what} runs along dim 0, the batch")

    if isinstance(op, _ELEMENTWISE):
        aligned()
    elif isinstance(op, _PER_IMAGE):
        if not bat[0]:
            raise _Refused(f"{where}: its parameters are batched but its input is not")
        no_batched(*range(1, len(ins)), why="its weights/parameters depend on the batch")
    elif isinstance(op, nn.LayerNormOp):
        axis_not_0(op.axis, "the normalisation")
        no_batched(1, 2, why="its scale/bias depend on the batch")
    elif isinstance(op, nn.MatMulOp):
        a, b = bat[0], bat[1]
        if b and not (ranks[1] >= 3 and ranks[1] == out_rank):
            raise _Refused(f"{where}: the batch is on the contracted side of the matmul")
        if a and ranks[0] != out_rank:
            raise _Refused(f"{where}: a batched operand broadcasts into a higher rank")
    elif isinstance(op, nn.GemmOp):
        if op.trans_a:
            raise _Refused(f"{where}: gemm with trans_a contracts over the batch rows")
        no_batched(1, why="the batch is on gemm's B operand")
        if len(ins) > 2 and bat[2] and ranks[2] != out_rank:
            raise _Refused(f"{where}: gemm's C broadcasts a batched row")
    elif isinstance(op, nn.AttentionOp):
        for i, b in enumerate(bat):
            if b and ranks[i] != out_rank:
                raise _Refused(f"{where}: a batched operand broadcasts into a higher rank")
        if not (bat[0] and bat[1] and bat[2]):
            raise _Refused(f"{where}: q, k and v must all carry the batch")
    elif isinstance(op, (nn.ReduceOp,)):
        if 0 in op.axes:
            raise _Refused(f"{where}: the reduction includes dim 0, the batch")
    elif isinstance(op, nn.SoftmaxBase | nn.ArgMaxOp):
        axis_not_0(op.axis, op.name)
    elif isinstance(op, nn.ReshapeOp):
        pass  # dim 0 is the batch on both sides (types checked): each sample keeps its block
    elif isinstance(op, nn.TransposeOp):
        if op.perm[0] != 0:
            raise _Refused(f"{where}: the transpose moves the batch out of dim 0")
    elif isinstance(op, nn.ConcatOp):
        axis_not_0(op.axis, "the concat")
        aligned()
    elif isinstance(op, nn.SplitOp):
        axis_not_0(op.axis, "the split")
    elif isinstance(op, nn.SliceOp):
        shp = _shape(ins[0]) or (0,)
        if (op.starts[0], op.ends[0], op.steps[0]) != (0, shp[0], 1):
            raise _Refused(f"{where}: the slice cuts dim 0, the batch")
    elif isinstance(op, nn.PadOp):
        pads = op.pads
        if pads and (pads[0] != 0 or pads[len(pads) // 2] != 0):
            raise _Refused(f"{where}: the pad pads dim 0, the batch")
    elif isinstance(op, nn.ResizeOp):
        if 0 in op.axes:
            raise _Refused(f"{where}: the resize scales dim 0, the batch")
        no_batched(*range(1, len(ins)), why="its index tables depend on the batch")
    elif isinstance(op, nn.GatherOp):
        data, idx = bat[0], bat[1]
        if data and not idx and op.axis != 0:
            pass
        elif idx and not data and op.axis == 0 and ranks[1] >= 1:
            pass  # an embedding lookup: output dim 0 is the indices' dim 0
        elif data and idx and op.axis == 0 and op.indices in offsets:
            pass  # each sample's indices point into its own rows
        else:
            raise _Refused(f"{where}: the gather indexes across samples")
    elif isinstance(op, nn.GatherElementsOp):
        same_rows = (_shape(ins[0]) or (0,))[0] == (_shape(ins[1]) or (1,))[0]
        if not (bat[0] and bat[1]) or op.axis == 0 or not same_rows:
            raise _Refused(f"{where}: the gather indexes across samples")
    elif isinstance(op, nn.GatherNDOp):
        if not (bat[0] and bat[1]) or (op.batch_dims < 1 and op.indices not in offsets):
            raise _Refused(f"{where}: the gather indexes across samples")
    elif isinstance(op, nn.ExpandOp):
        pass  # dim 0 is 1 -> batch or batch -> batch: per sample the same
    elif isinstance(op, nn.TileOp):
        if bat[0] and op.repeats[0] != 1:
            raise _Refused(f"{where}: the tile repeats dim 0, the batch")
    elif isinstance(op, func.ReturnOp):
        pass
    else:
        raise _Refused(f"{where}: {op.name} is not known to keep samples apart")


def _constant_per_sample(op: nn.ConstantOp, twin: nn.ConstantOp, where: str) -> bool:
    """A constant with the batch in dim 0 is fine when each of its samples equals the batch-1
    constant (a folded ``zeros([batch, seq])``: returns False), or, for integer indices used
    only by axis-0 gathers from data holding ``k`` rows per sample, equals it plus ``i * k``
    (the exporters' flat ``batch * seq`` mask indices: returns True, and the gathers read
    their own sample's rows)."""
    if not isinstance(op.value, DenseIntOrFPElementsAttr) or not isinstance(
        twin.value, DenseIntOrFPElementsAttr
    ):
        raise _Refused(f"{where}: a constant depends on the batch")
    two, one = numpy_from_dense(op.value), numpy_from_dense(twin.value)
    per = two.shape[0] // 2
    samples = [two[i * per : (i + 1) * per] for i in range(2)]
    if all(np.array_equal(x, one, equal_nan=True) for x in samples):
        return False
    users = [u.operation for u in op.results[0].uses]
    v = op.results[0]
    gathers = all(isinstance(u, nn.GatherOp) and u.axis == 0 and u.indices is v for u in users)
    nds = all(isinstance(u, nn.GatherNDOp) and u.batch_dims == 0 and u.indices is v
              for u in users)  # fmt: skip
    if np.issubdtype(one.dtype, np.integer) and users and (gathers or nds):
        datas = [u.data for u in users if isinstance(u, nn.GatherOp | nn.GatherNDOp)]
        rows = {(_shape(d) or (0,))[0] // 2 for d in datas}  # batch 2: k rows per sample
        if len(rows) == 1:
            k = rows.pop()
            step = np.zeros(one.shape, one.dtype)
            if gathers:
                step[...] = k
            else:  # gather_nd: the first coordinate of each index tuple is the row
                step[..., 0] = k
            if all(np.array_equal(x, one + i * step) for i, x in enumerate(samples)):
                return True
    raise _Refused(f"{where}: a constant differs between samples")


def _same_constant(one: nn.ConstantOp, two: nn.ConstantOp, where: str) -> None:
    """An unbatched constant must not depend on the batch (a folded ``Shape`` of the input
    would be 1 at batch 1 and 2 at batch 2: the batch-1 library would divide by 1)."""
    if one.value == two.value:
        return
    if isinstance(one.value, DenseIntOrFPElementsAttr) and isinstance(
        two.value, DenseIntOrFPElementsAttr
    ):
        if np.array_equal(numpy_from_dense(one.value), numpy_from_dense(two.value), equal_nan=True):
            return
    raise _Refused(f"{where}: a constant's value depends on the batch")


def _same_properties(one: Operation, two: Operation, where: str) -> None:
    """Properties may differ between the imports only in dim 0 of a slice or a tile (the
    batch's own extent); anything else that depends on the batch is refused."""
    if one.properties == two.properties:
        return
    if isinstance(one, nn.SliceOp) and isinstance(two, nn.SliceOp):
        a, b = (one.starts, one.ends, one.steps), (two.starts, two.ends, two.steps)
        if all(x[1:] == y[1:] for x, y in zip(a, b)):
            return
    if isinstance(one, nn.TileOp) and isinstance(two, nn.TileOp):
        if one.repeats[1:] == two.repeats[1:]:
            return
    keys = sorted(k for k in {*one.properties, *two.properties}
                  if one.properties.get(k) != two.properties.get(k))  # fmt: skip
    raise _Refused(f"{where}: its {', '.join(keys)} depend(s) on the batch")


def _main(module: ModuleOp) -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            return op
    raise AutofusionError("internal: imported module has no func.func @main")


def check_separable(
    one: ModuleOp, two: ModuleOp, symbol: str, plan: ShapePlan, filename: str
) -> BatchPlan:
    """:class:`BatchPlan` of the two imports (batch 1 and 2) of one model, or one
    ``AutofusionError`` saying which node mixes samples."""
    f1, f2 = _main(one), _main(two)
    head = f"{filename}: one library for every '{symbol}' needs a batch-separable graph"
    batched: dict[SSAValue, bool] = {}
    input_names = _names(f2.arg_attrs, len(f2.args), "input")
    output_names = _names(f2.res_attrs, len(f2.function_type.outputs.data), "output")
    try:
        if len(f1.args) != len(f2.args):
            raise _Refused("the imports differ in their inputs")
        ins: list[str] = []
        for name, a1, a2 in zip(input_names, f1.args, f2.args):
            batched[a2] = _batched(a1, a2, f"input '{name}'")
            if batched[a2]:
                ins.append(name)
                _one_row(a1, f"input '{name}'")
        ops1, ops2 = list(f1.body.walk()), list(f2.body.walk())
        if len(ops1) != len(ops2):
            raise _Refused(
                f"the graph changes with the batch ({len(ops1)} ops at batch 1, "
                f"{len(ops2)} at batch 2)"
            )
        outs: list[str] = []
        offsets: set[SSAValue] = set()  # sample-offset gather indices (_constant_per_sample)
        for o1, o2 in zip(ops1, ops2):
            where = _origin(o2)
            if o1.name != o2.name or len(o1.results) != len(o2.results):
                raise _Refused(
                    f"{where}: the graph changes with the batch ({o1.name} vs {o2.name})"
                )
            bat = [batched.get(v, False) for v in o2.operands]
            res = [_batched(r1, r2, where) for r1, r2 in zip(o1.results, o2.results)]
            if isinstance(o2, func.ReturnOp):
                outs = [n for n, b in zip(output_names, bat) if b]
                for n, b, v in zip(output_names, bat, o1.operands):
                    if b:
                        _one_row(v, f"output '{n}'")
                continue
            if isinstance(o2, nn.ConstantOp):
                assert isinstance(o1, nn.ConstantOp)
                if res and res[0]:
                    if _constant_per_sample(o2, o1, where):
                        offsets.add(o2.results[0])
                else:
                    _same_constant(o1, o2, where)
            else:
                _same_properties(o1, o2, where)
                if any(bat):
                    if not all(res):
                        raise _Refused(f"{where}: a result loses the batch (it mixes samples)")
                    _check_op(o2, bat, where, offsets)
                elif any(res) and not isinstance(o2, nn.ExpandOp | nn.TileOp):
                    raise _Refused(f"{where}: makes a batch-sized result from unbatched operands")
            for r2, b in zip(o2.results, res):
                batched[r2] = b
    except _Refused as e:
        raise AutofusionError(f"{head}: {e}") from None
    lo, hi = plan.ranges[symbol]
    return BatchPlan(symbol, lo, hi, tuple(ins), tuple(outs))


def attribute_value(plan: BatchPlan) -> Attribute:
    """The module attribute (``c.batch``) the backends read back with :func:`module_batch`:
    the C printer emits ``af_run_batch`` from it, the Ascend C host ``af_run_model_batch``."""
    return DictionaryAttr(
        {
            "symbol": StringAttr(plan.symbol),
            "lo": IntAttr(plan.lo),
            "hi": IntAttr(plan.hi),
            "inputs": ArrayAttr([StringAttr(n) for n in plan.inputs]),
            "outputs": ArrayAttr([StringAttr(n) for n in plan.outputs]),
        }
    )


def module_batch(module: Operation) -> BatchPlan | None:
    """The run-time batch a module was compiled for (its ``c.batch`` attribute, written by
    :func:`attribute_value`), or None for a fixed-batch module."""
    spec = module.attributes.get(C_BATCH)
    if not isinstance(spec, DictionaryAttr):
        return None
    d = spec.data

    def text(key: str) -> str:
        a = d[key]
        assert isinstance(a, StringAttr)
        return a.data

    def number(key: str) -> int:
        a = d[key]
        assert isinstance(a, IntAttr)
        return a.data

    def names(key: str) -> tuple[str, ...]:
        a = d[key]
        assert isinstance(a, ArrayAttr)
        return tuple(x.data for x in a.data if isinstance(x, StringAttr))

    return BatchPlan(text("symbol"), number("lo"), number("hi"), names("inputs"), names("outputs"))
