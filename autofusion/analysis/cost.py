"""The cost layer: bytes moved, FLOPs, working sets and profitability of fusion candidates.

Profitability only — never legality (``structure``) or rules (``autofusion.policy``).
The model, per candidate "fuse ``consumer`` into the group producing value ``v``":

- *bytes saved*: an intermediate that stays inside a kernel is neither written nor read
  back: ``2 * bytes(v)`` when the group was its only reader; ``bytes(v)`` when it must still
  be materialised for other readers (one read saved); for recompute into all ``n`` readers,
  ``n * bytes(v) - (n - 1) * bytes(inputs of the recomputed group)``.
- *working set*: what one output tile of the fused kernel keeps live: ``tile_elems``
  elements of every streamed tensor (inputs, outputs and intermediates of full shape), the
  small broadcast operands whole, and for a Conv/MatMul/Gemm anchor its resident GEMM block
  (``min(weights, gemm_block_bytes)``). Normalisations over the last axis need whole rows.
- *fits*: ``working set <= Hardware.fused_cache_bytes`` (L2 on CPU, UB on Ascend). If it
  does not fit, the intermediate spills and fusion saves nothing: refused with code ``cost``.
- *FLOPs/byte*: FLOPs of the fused group over the bytes it moves from memory (reported;
  a group above the roofline ridge is compute-bound and gains little from saved bytes).

Symbolic sizes (docs/dynamic.md): every size here is taken at the symbols' upper bounds
(:func:`type_shape`), the worst case; the estimates steer speed only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from autofusion import symbolic as sym
from autofusion.analysis.hardware import Hardware
from autofusion.dialects import nn
from autofusion.dialects.base import SymShapeAttr, bound_dims
from autofusion.dialects.fusion import KernelOp, YieldOp

#: Rough FLOPs per output element of elementwise ops (transcendentals cost more).
_ELEMENTWISE_FLOPS: dict[str, int] = {
    "nn.gelu": 12,
    "nn.erf": 10,
    "nn.tanh": 8,
    "nn.sigmoid": 6,
    "nn.exp": 6,
    "nn.log": 6,
    "nn.pow": 8,
    "nn.sqrt": 4,
    "nn.div": 2,
    "nn.softplus": 10,
    "nn.hard_swish": 4,
}
#: Groups whose per-element work is above this are not recomputed.
RECOMPUTE_MAX_FLOPS_PER_ELEM = 16


def value_bytes(v: SSAValue) -> int:
    return type_bytes(v.type)


def numel(v: SSAValue) -> int:
    return type_numel(v.type)


#: ``id(type) -> (type, elements, bytes, ranges)``. Types are immutable and the fusion
#: analysis asks for the same few thousand of them many times; hashing a TensorType (or calling
#: ``get_shape``) costs microseconds, an ``id`` lookup does not. The entry holds the type,
#: so its id cannot be reused while it is cached. A symbolic type's sizes are taken at the
#: symbols' upper bounds (see :func:`type_shape`), so its entry also holds the ranges they
#: came from and is used only under the same ones.
_TYPE_SIZES: dict[int, tuple[Attribute, int, int, object]] = {}
_TYPE_SHAPES: dict[int, tuple[Attribute, tuple[int, ...], object]] = {}


def type_shape(t: Attribute) -> tuple[int, ...]:
    """``t``'s shape as ints (``()`` for a non-tensor); a symbolic dim at its **upper
    bound** (``base.bound_dims``): what every estimate here sizes a symbolic value by, the
    worst case, since an estimate only steers speed, never legality (docs/dynamic.md)."""
    hit = _TYPE_SHAPES.get(id(t))
    if hit is not None and hit[0] is t and (hit[2] is None or hit[2] == sym.scope_ranges()):
        return hit[1]
    ranges: object = None
    if isinstance(t, TensorType):
        if isinstance(t.encoding, SymShapeAttr):
            ranges = sym.scope_ranges()
        shape = bound_dims(t)
    else:
        shape = ()
    if len(_TYPE_SHAPES) > 200_000:
        _TYPE_SHAPES.clear()
    _TYPE_SHAPES[id(t)] = (t, shape, ranges)
    return shape


def _type_sizes(t: Attribute) -> tuple[int, int]:
    hit = _TYPE_SIZES.get(id(t))
    if hit is not None and hit[0] is t and (hit[3] is None or hit[3] == sym.scope_ranges()):
        return hit[1], hit[2]
    n = b = 0
    ranges: object = None
    if isinstance(t, TensorType):
        from autofusion.dialects.dtypes import to_numpy_dtype

        try:
            size = to_numpy_dtype(t.element_type).itemsize
        except ValueError:
            size = 4
        if isinstance(t.encoding, SymShapeAttr):
            ranges = sym.scope_ranges()
        n = nb = 1
        for d in type_shape(t):
            n *= int(d)
            nb *= max(int(d), 0)
        b = nb * size
    else:
        n = 1
    if len(_TYPE_SIZES) > 200_000:
        _TYPE_SIZES.clear()
    _TYPE_SIZES[id(t)] = (t, n, b, ranges)
    return n, b


def type_bytes(t: Attribute) -> int:
    """Bytes of a value of type ``t`` (0 for a non-tensor)."""
    return _type_sizes(t)[1]


def type_numel(t: Attribute) -> int:
    """Elements of a value of type ``t`` (1 for a non-tensor)."""
    return _type_sizes(t)[0]


def _dims(v: SSAValue) -> tuple[int, ...]:
    return type_shape(v.type)


def op_flops(op: Operation) -> int:
    """Approximate floating-point operations of one op (multiply-add = 2)."""
    if isinstance(op, nn.ConvOp):
        w = _dims(op.w)
        k = 1
        for d in w[1:]:
            k *= int(d)
        return 2 * numel(op.y) * k
    if isinstance(op, nn.MatMulOp):
        a = _dims(op.a)
        return 2 * numel(op.out) * int(a[-1] if a else 1)
    if isinstance(op, nn.GemmOp):
        a = _dims(op.a)
        k = a[0] if op.trans_a else a[1]
        return 2 * numel(op.out) * int(k)
    if isinstance(op, nn.AttentionOp):
        q = _dims(op.q)
        kk = _dims(op.k)
        return 4 * numel(op.out) * int(kk[-2]) + 2 * (numel(op.q) // int(q[-1])) * int(
            kk[-2]
        ) * int(q[-1])
    if isinstance(op, nn.LayerNormOp | nn.BatchNormOp | nn.InstanceNormOp):
        return 8 * numel(op.results[0])
    if isinstance(op, nn.SoftmaxOp | nn.LogSoftmaxOp):
        return 10 * numel(op.results[0])
    if isinstance(op, nn.ResizeOp):
        # Axis by axis: each output of a step costs a multiply-add per tap (nearest: none).
        cur, total = list(_dims(op.x)), 0
        for k, a in enumerate(op.axes):
            m, taps = _dims(op.tables[2 * k])
            cur[a] = m
            n = 1
            for d in cur:
                n *= int(d)
            total += 2 * n * int(taps) if taps > 1 else 0
        return total
    if isinstance(op, KernelOp):
        return sum(op_flops(o) for o in op.body.block.ops)
    if op.results:
        return _ELEMENTWISE_FLOPS.get(op.name, 1) * sum(numel(r) for r in op.results)
    return 0


ANCHORS = (nn.ConvOp, nn.MatMulOp, nn.GemmOp, nn.AttentionOp)


def _weight_bytes(op: Operation) -> int:
    if isinstance(op, nn.ConvOp):
        return value_bytes(op.w)
    if isinstance(op, nn.MatMulOp | nn.GemmOp):
        return value_bytes(op.b)
    if isinstance(op, nn.AttentionOp):
        return value_bytes(op.k) + value_bytes(op.v)
    return 0


def working_set(ops: Sequence[Operation], hw: Hardware) -> int:
    """Bytes one output tile of a kernel made of ``ops`` keeps live (see module docstring)."""
    members = set(ops)
    anchor = next((o for o in ops if isinstance(o, ANCHORS)), None)
    out_shape_elems = max((numel(r) for o in ops for r in o.results), default=1)
    tile = min(hw.tile_elems, out_shape_elems)
    for o in ops:  # row-wise normalisations need whole rows in the tile
        if isinstance(o, nn.LayerNormOp | nn.SoftmaxOp | nn.LogSoftmaxOp):
            shape = type_shape(o.results[0].type)
            axis = o.axis
            row = 1
            for d in shape[axis:]:
                row *= int(d)
            tile = max(tile, row)
    total = 0
    if anchor is not None:
        total += min(_weight_bytes(anchor), hw.gemm_block_bytes)
    seen: set[SSAValue] = set()
    for o in ops:
        vals = list(o.results)
        if o is not anchor:
            vals += list(o.operands)
        for v in vals:
            if v in seen:
                continue
            seen.add(v)
            owner = v.owner
            if isinstance(owner, nn.ConstantOp) and owner not in members and numel(v) <= tile:
                total += value_bytes(v)  # small broadcast operand, resident whole
                continue
            n = numel(v)
            per = value_bytes(v) // max(n, 1)
            total += min(n, tile) * per
    return total


@dataclass(frozen=True)
class Estimate:
    """The cost layer's verdict on one candidate."""

    bytes_saved: int
    flops: int
    bytes_moved: int
    working_set: int
    fits_cache: bool
    profitable: bool
    why: str

    @property
    def flops_per_byte(self) -> float:
        return self.flops / max(self.bytes_moved, 1)


def group_traffic(ops: Sequence[Operation]) -> int:
    """Bytes a kernel of ``ops`` reads and writes from memory (values crossing its boundary)."""
    members = set(ops)
    total = 0
    seen: set[SSAValue] = set()
    for o in ops:
        for v in o.operands:
            if v in seen or (isinstance(v.owner, Operation) and v.owner in members):
                continue
            seen.add(v)
            total += value_bytes(v)
        for r in o.results:
            if any(u.operation not in members for u in r.uses):
                total += value_bytes(r)
    return total


def estimate_join(
    group: Sequence[Operation],
    consumer: Operation,
    value: SSAValue,
    hw: Hardware,
    mode: str = "single",
    readers: int = 1,
) -> Estimate:
    """Estimate fusing ``consumer`` into ``group`` through ``value``.

    ``mode``: ``"single"`` (the group is the value's only reader after the join),
    ``"materialize"`` (the value is also written out for other readers) or ``"recompute"``
    (the group is duplicated into each of ``readers`` consumers).
    """
    ops = [*group, consumer]
    group_flops = total_flops(group)
    ws = working_set(ops, hw)
    fits = ws <= hw.fused_cache_bytes
    vb = value_bytes(value)
    if mode == "single":
        saved = 2 * vb
    elif mode == "materialize":
        saved = vb
    else:
        members = set(group)
        inputs = {
            v
            for o in group
            for v in o.operands
            if not (isinstance(v.owner, Operation) and v.owner in members)
        }
        in_bytes = sum(value_bytes(v) for v in inputs)
        saved = readers * vb - (readers - 1) * in_bytes
        per_elem = group_flops / max(numel(value), 1)
        if per_elem > RECOMPUTE_MAX_FLOPS_PER_ELEM:
            return Estimate(
                0,
                0,
                0,
                ws,
                fits,
                False,
                f"recomputing costs {per_elem:.0f} FLOPs per element "
                f"(> {RECOMPUTE_MAX_FLOPS_PER_ELEM})",
            )
    if not fits:
        saved = 0
    flops = group_flops + op_flops(consumer)
    moved = group_traffic(ops)
    if not fits:
        why = (
            f"fused working set {ws} B exceeds the {hw.name} fused-cache bound "
            f"{hw.fused_cache_bytes} B, so the intermediate would spill"
        )
    elif saved <= 0:
        why = f"{mode} saves no memory traffic ({saved} B)"
    else:
        why = f"saves {saved} B of memory traffic"
    return Estimate(saved, flops, moved, ws, fits, fits and saved > 0, why)


def kernel_bytes_saved(kernel: KernelOp) -> int:
    """Bytes of memory traffic a formed kernel avoids: each body value read inside the body
    is not read back from memory, and one that is not yielded is not written either."""
    saved = 0
    for o in kernel.body.block.ops:
        if isinstance(o, YieldOp | nn.ConstantOp):
            continue
        for r in o.results:
            inside = sum(1 for u in r.uses if not isinstance(u.operation, YieldOp))
            yielded = any(isinstance(u.operation, YieldOp) for u in r.uses)
            if inside:
                saved += inside * value_bytes(r) + (0 if yielded else value_bytes(r))
    return saved


def total_flops(ops: Iterable[Operation]) -> int:
    """Summed ``op_flops`` of ``ops``."""
    return sum(op_flops(o) for o in ops)


def kernel_work(op: Operation) -> tuple[int, int]:
    """(FLOPs, bytes moved from memory) of one call of a formed kernel: a top-level
    ``fusion.kernel`` or an unfused ``nn`` op, as the profiler reports it.

    FLOPs are :func:`op_flops` (a kernel's body summed). Bytes are the compulsory traffic:
    each distinct operand read once, each result written once, and constants held inside a
    kernel body read once; values computed and consumed inside the kernel cost nothing.
    Re-reads a real kernel makes (GEMM blocks, im2col) are not counted, so achieved GB/s
    from these bytes is a lower bound."""
    seen: set[SSAValue] = set()
    moved = 0
    for v in op.operands:
        if v not in seen:
            seen.add(v)
            moved += value_bytes(v)
    moved += sum(value_bytes(r) for r in op.results)
    if isinstance(op, KernelOp):
        moved += sum(
            value_bytes(o.results[0]) for o in op.body.block.ops if isinstance(o, nn.ConstantOp)
        )
    return op_flops(op), moved
