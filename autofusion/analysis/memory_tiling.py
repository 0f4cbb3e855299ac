"""Tiling a region of ``@main`` into pieces: slice -> sub-chain -> concat.

A *region* is a run of consecutive top-level ops of ``@main`` with exactly one result
``Y`` used after it. Tiling it along dimension ``d`` of ``Y`` into ``N`` pieces rewrites it
into ``N`` copies of the region, each computing rows ``[lo, hi)`` of ``Y`` along ``d``,
followed by one ``nn.concat`` (axis ``d``) that rebuilds ``Y``:

- the row range each op of a piece needs is propagated backwards from ``Y`` (``Req`` =
  ``(dim, lo, hi)``) by per-op *tile rules*. Elementwise ops need the same rows of each
  operand (none of a broadcast operand); convolutions and pools need a halo: output rows
  ``[lo, hi)`` read input rows ``[lo*s - pb, (hi-1)*s - pb + (k-1)*dil + 1)`` clipped to the
  input, and the clipped part becomes the piece's own padding (so a piece keeps the original
  top pad only if it touches the top border, and the bottom pad only at the bottom);
  matmul/gemm/attention tile their row (or batch) dims; a reshape maps an unchanged dim,
  the outer factor of a split dim, or a merged dim cut at multiples of its inner factor;
  ``fusion.kernel`` applies the rules to its body;
- region inputs produced outside are cut with ``nn.slice``; a value produced inside and read
  by consumers needing different rows (a residual shortcut beside a 3x3 conv, say) is
  computed once over the union of the rows and sliced for each consumer;
- pieces carry ``memory.tile = array<i64: i, N>`` (the concat ``array<i64: -1, N>``).

The result is plain ``nn``/``fusion`` IR: the interpreter and the C lowering run it
unchanged, and ``plan-buffers`` sees small per-piece intermediates instead of whole ones.
Inside a ``fusion.kernel`` no slicing is inserted: a kernel whose body would need it is
not tileable along that dimension.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import VerifyException

from autofusion.dialects import dtypes, nn, shapes
from autofusion.dialects.attrs import MEMORY_TILE, ORIGINS
from autofusion.dialects.base import i64_array, shape_of
from autofusion.dialects.fusion import KernelOp, YieldOp

TILE_ATTR = MEMORY_TILE

Req = tuple[int, int, int]
"""(dim, lo, hi): rows ``[lo, hi)`` of dimension ``dim`` are needed."""

Builder = Callable[[Sequence[SSAValue], Attribute], Operation]


class NotTileable(Exception):
    """Raised by the rules: this op (or region) cannot be tiled as asked."""


@dataclass
class Rule:
    operands: list[Req | None]  # None: the operand is used whole
    build: Builder


def with_dim(t: Attribute, dim: int, size: int) -> TensorType[Attribute]:
    assert isinstance(t, TensorType)
    shape = list(t.get_shape())
    shape[dim] = size
    return dtypes.tensor_type(t.element_type, shape)


def _strip(attrs: dict[str, Attribute]) -> dict[str, Attribute]:
    return {k: v for k, v in attrs.items() if not k.startswith("memory.")}


def _clone_builder(op: Operation, props: Mapping[str, Attribute] | None = None) -> Builder:
    def build(operands: Sequence[SSAValue], rt: Attribute) -> Operation:
        return type(op).create(
            operands=list(operands),
            result_types=[rt],
            properties={**op.properties, **(props or {})},
            attributes=_strip(dict(op.attributes)),
        )

    return build


def _bcast(operand: SSAValue, out_rank: int, d: int, lo: int, hi: int) -> Req | None:
    s = shape_of(operand)
    od = d - (out_rank - len(s))
    if od < 0:
        return None
    if s[od] == 1:
        return (od, 0, 1)
    return (od, lo, hi)


# ---------------------------------------------------------------------------------------
# Tile rules
# ---------------------------------------------------------------------------------------


def _window(
    lo: int, hi: int, size_in: int, k: int, s: int, dil: int, pb: int
) -> tuple[int, int, int, int]:
    """Input rows and new (begin, end) pads for output rows [lo, hi) of a sliding window."""
    lo_in = lo * s - pb
    hi_in = (hi - 1) * s - pb + (k - 1) * dil + 1
    cl, ch = max(0, lo_in), min(size_in, hi_in)
    if ch <= cl:
        raise NotTileable("tile lies entirely in the padding")
    return cl, ch, cl - lo_in, hi_in - ch


def _rule_conv(op: nn.ConvOp, d: int, lo: int, hi: int) -> Rule:
    x = shape_of(op.x)
    if d == 0:
        reqs: list[Req | None] = [(0, lo, hi), *([None] * (len(op.operands) - 1))]
        return Rule(reqs, _clone_builder(op))
    if d < 2:
        raise NotTileable("conv is tiled along batch or spatial dims only")
    i, nsp = d - 2, len(x) - 2
    k = shape_of(op.w)[d]
    cl, ch, pb, pe = _window(lo, hi, x[d], k, op.strides[i], op.dilations[i], op.pads[i])
    pads = list(op.pads)
    pads[i], pads[nsp + i] = pb, pe
    reqs = [(d, cl, ch), *([None] * (len(op.operands) - 1))]
    return Rule(reqs, _clone_builder(op, {"pads": i64_array(pads)}))


def _rule_pool(op: nn.PoolOp, d: int, lo: int, hi: int) -> Rule:
    x, y = shape_of(op.x), shape_of(op.y)
    nsp = len(x) - 2
    kernel, strides, dil = op.kernel, op.strides, op.dilations
    pads = list(op.pads)
    orig_end = list(pads[nsp:])
    # Ceil-mode overhang becomes explicit end padding, so pieces run in floor mode.
    for j in range(nsp):
        kext = dil[j] * (kernel[j] - 1) + 1
        need = (y[2 + j] - 1) * strides[j] - pads[j] + kext - x[2 + j]
        pads[nsp + j] = max(pads[nsp + j], need)
    if 0 < d < 2:
        raise NotTileable("pools are tiled along batch or spatial dims only")
    reqs: list[Req | None] = [(0, lo, hi)]
    tile_in = list(x)
    if d >= 2:
        i = d - 2
        cl, ch, pb, pe = _window(lo, hi, x[d], kernel[i], strides[i], dil[i], pads[i])
        pads[i], pads[nsp + i] = pb, pe
        reqs = [(d, cl, ch)]
        tile_in[d] = ch - cl
    else:
        tile_in[0] = hi - lo
    if (
        isinstance(op, nn.AvgPoolOp)
        and op.count_include_pad
        and any(pads[nsp + j] > orig_end[j] for j in range(nsp))
    ):
        raise NotTileable("ceil-mode overhang would be counted as padding")
    want = list(y)
    want[d] = hi - lo
    if shapes.pool_out(tile_in, kernel, strides, pads, dil, False) != tuple(want):
        raise NotTileable("pool window does not tile")
    props = {"pads": i64_array(pads), "ceil_mode": IntegerAttr(0, op.ceil_mode_attr.type)}
    return Rule(reqs, _clone_builder(op, props))


def _rule_elementwise(op: Operation, d: int, lo: int, hi: int) -> Rule:
    rank = len(shape_of(op.results[0]))
    return Rule([_bcast(v, rank, d, lo, hi) for v in op.operands], _clone_builder(op))


def _rule_same(op: Operation, d: int, lo: int, hi: int) -> Rule:
    """Ops whose first operand maps row for row; others (parameters) used whole."""
    return Rule([(d, lo, hi), *([None] * (len(op.operands) - 1))], _clone_builder(op))


def _rule_matmul(op: nn.MatMulOp, d: int, lo: int, hi: int) -> Rule:
    a, b = shape_of(op.a), shape_of(op.b)
    r = len(shape_of(op.out))
    if len(a) < 2 or len(b) < 2:
        raise NotTileable("1-d matmul")
    if d < r - 2:
        return Rule([_bcast(op.a, r, d, lo, hi), _bcast(op.b, r, d, lo, hi)], _clone_builder(op))
    if d == r - 2:
        return Rule([(len(a) - 2, lo, hi), None], _clone_builder(op))
    return Rule([None, (len(b) - 1, lo, hi)], _clone_builder(op))


def _rule_gemm(op: nn.GemmOp, d: int, lo: int, hi: int) -> Rule:
    c = [_bcast(op.c, 2, d, lo, hi)] if op.c is not None else []
    if d == 0:
        ra: Req = (1 if op.trans_a else 0, lo, hi)
        return Rule([ra, None, *c], _clone_builder(op))
    rb: Req = (0 if op.trans_b else 1, lo, hi)
    return Rule([None, rb, *c], _clone_builder(op))


def _rule_attention(op: nn.AttentionOp, d: int, lo: int, hi: int) -> Rule:
    r = len(shape_of(op.out))
    mask = [_bcast(op.mask, r, d, lo, hi)] if op.mask is not None else []
    if d < r - 2:
        return Rule(
            [_bcast(v, r, d, lo, hi) for v in (op.q, op.k, op.v)] + mask, _clone_builder(op)
        )
    if d == r - 2:
        return Rule([(len(shape_of(op.q)) - 2, lo, hi), None, None, *mask], _clone_builder(op))
    raise NotTileable("attention is tiled along batch or query rows only")


def _rule_reduce(op: nn.ReduceOp, d: int, lo: int, hi: int) -> Rule:
    axes = op.axes
    if op.keepdims:
        if d in axes:
            raise NotTileable("reduced dimension")
        return Rule([(d, lo, hi)], _clone_builder(op))
    kept = [i for i in range(len(shape_of(op.x))) if i not in axes]
    return Rule([(kept[d], lo, hi)], _clone_builder(op))


def _rule_axis_free(axis_ok: Callable[[Operation, int], bool]) -> Callable[..., Rule]:
    def rule(op: Operation, d: int, lo: int, hi: int) -> Rule:
        if not axis_ok(op, d):
            raise NotTileable(f"{op.name} reads whole rows along dim {d}")
        return _rule_same(op, d, lo, hi)

    return rule


def _rule_concat(op: nn.ConcatOp, d: int, lo: int, hi: int) -> Rule:
    if d == op.axis:
        raise NotTileable("concat axis")
    return Rule([(d, lo, hi) for _ in op.operands], _clone_builder(op))


def _rule_transpose(op: nn.TransposeOp, d: int, lo: int, hi: int) -> Rule:
    return Rule([(op.perm[d], lo, hi)], _clone_builder(op))


def _rule_slice(op: nn.SliceOp, d: int, lo: int, hi: int) -> Rule:
    start, step = op.starts[d], op.steps[d]
    if step != 1:
        raise NotTileable("strided slice along the tiled dimension")
    starts, ends = list(op.starts), list(op.ends)
    starts[d], ends[d] = 0, hi - lo
    props = {"starts": i64_array(starts), "ends": i64_array(ends)}
    return Rule([(d, start + lo, start + hi)], _clone_builder(op, props))


def _rule_pad(op: nn.PadOp, d: int, lo: int, hi: int) -> Rule:
    pads = op.pads
    if pads[d] or pads[len(pads) // 2 + d]:
        raise NotTileable("pad along the tiled dimension")
    return _rule_same(op, d, lo, hi)


def _prefix(shape: Sequence[int]) -> list[int]:
    out = [1]
    for d in shape:
        out.append(out[-1] * d)
    return out


def _rule_reshape(op: nn.ReshapeOp, d: int, lo: int, hi: int) -> Rule:
    """Rows of a reshape: an unchanged dim, the outer factor of a split dim, or a merged
    dim cut at multiples of its inner factor all map to one contiguous input range."""
    xs, ys = shape_of(op.x), shape_of(op.y)
    px, py = _prefix(xs), _prefix(ys)
    for dx in range(len(xs)):
        if px[dx] != py[d] or xs[dx] == 1:
            continue
        if xs[dx] == ys[d] and px[dx + 1] == py[d + 1]:
            return Rule([(dx, lo, hi)], _clone_builder(op))
        if xs[dx] % ys[d] == 0 and px[dx + 1] in py[d + 1 :]:
            inner = xs[dx] // ys[d]
            return Rule([(dx, lo * inner, hi * inner)], _clone_builder(op))
        if ys[d] % xs[dx] == 0 and py[d + 1] in px[dx + 1 :]:
            inner = ys[d] // xs[dx]
            if lo % inner or hi % inner:
                raise NotTileable("tile boundary inside a merged dimension")
            return Rule([(dx, lo // inner, hi // inner)], _clone_builder(op))
    raise NotTileable("reshape mixes the tiled dimension with others")


def _rule_expand(op: nn.ExpandOp, d: int, lo: int, hi: int) -> Rule:
    return Rule([_bcast(op.x, len(shape_of(op.y)), d, lo, hi)], _clone_builder(op))


RULES: dict[type[Operation], Callable[..., Rule]] = {
    nn.ConvOp: _rule_conv,
    nn.MaxPoolOp: _rule_pool,
    nn.AvgPoolOp: _rule_pool,
    nn.MatMulOp: _rule_matmul,
    nn.GemmOp: _rule_gemm,
    nn.AttentionOp: _rule_attention,
    nn.ConcatOp: _rule_concat,
    nn.TransposeOp: _rule_transpose,
    nn.SliceOp: _rule_slice,
    nn.PadOp: _rule_pad,
    nn.ExpandOp: _rule_expand,
    nn.ReshapeOp: _rule_reshape,
    nn.BatchNormOp: _rule_axis_free(lambda op, d: d != 1),
    nn.InstanceNormOp: _rule_axis_free(lambda op, d: d == 0),
    nn.LRNOp: _rule_axis_free(lambda op, d: d != 1),
    nn.LayerNormOp: _rule_axis_free(lambda op, d: d < op.axis),  # type: ignore[attr-defined]
    nn.SoftmaxOp: _rule_axis_free(lambda op, d: d != op.axis),  # type: ignore[attr-defined]
    nn.LogSoftmaxOp: _rule_axis_free(lambda op, d: d != op.axis),  # type: ignore[attr-defined]
    nn.GlobalAvgPoolOp: _rule_axis_free(lambda op, d: d == 0),
    nn.GlobalMaxPoolOp: _rule_axis_free(lambda op, d: d == 0),
}
for _cls in (*nn.ELEMENTWISE, nn.ClipOp):
    RULES[_cls] = _rule_elementwise
for _cls in (
    nn.ReduceMeanOp,
    nn.ReduceSumOp,
    nn.ReduceMaxOp,
    nn.ReduceMinOp,
    nn.ReduceProdOp,
    nn.ReduceL2Op,
):
    RULES[_cls] = _rule_reduce


def is_tileable_kind(op: Operation) -> bool:
    if isinstance(op, KernelOp):
        return len(op.results) == 1 and all(
            isinstance(b, YieldOp | nn.ConstantOp) or type(b) in RULES for b in op.body.block.ops
        )
    return type(op) in RULES and len(op.results) == 1


def _rule_kernel(op: KernelOp, d: int, lo: int, hi: int) -> Rule:
    block = op.body.block
    body = [b for b in block.ops if not isinstance(b, YieldOp)]
    term = block.last_op
    assert isinstance(term, YieldOp)
    if len(term.values) != 1:
        raise NotTileable("multi-result kernel")
    req: dict[SSAValue, Req] = {term.values[0]: (d, lo, hi)}
    rules: dict[Operation, Rule] = {}
    consts: dict[SSAValue, Req] = {}
    for b in reversed(body):
        if isinstance(b, nn.ConstantOp):
            continue
        rq = req.get(b.results[0])
        if rq is None:
            raise NotTileable("dead op in kernel")
        rule = rule_for(b, *rq)
        rules[b] = rule
        for u, ru in zip(b.operands, rule.operands):
            owner = u.owner
            if isinstance(owner, nn.ConstantOp):
                if ru is not None and shape_of(u)[ru[0]] != ru[2] - ru[1]:
                    if owner.is_elided or consts.get(u, ru) != ru:
                        raise NotTileable("constant needs different slices")
                    consts[u] = ru
                continue
            if ru is None:
                if isinstance(owner, Block):
                    continue
                raise NotTileable("kernel value needed whole")
            if u in req and req[u] != ru:
                raise NotTileable("kernel value read at different rows")
            req[u] = ru
    arg_reqs: list[Req | None] = [req.get(a) for a in block.args]

    def build(operands: Sequence[SSAValue], rt: Attribute) -> Operation:
        new_block = Block(arg_types=[v.type for v in operands])
        env: dict[SSAValue, SSAValue] = dict(zip(block.args, new_block.args))
        for b in body:
            if isinstance(b, nn.ConstantOp):
                rq = consts.get(b.y)
                if rq is None:
                    nb: Operation = b.clone()
                else:
                    arr = dtypes.numpy_from_dense(b.value)  # type: ignore[arg-type]
                    index = [slice(None)] * arr.ndim
                    index[rq[0]] = slice(rq[1], rq[2])
                    nb = nn.ConstantOp(dtypes.dense_from_numpy(arr[tuple(index)].copy()))
                    nb.attributes.update(b.attributes)
            else:
                rq = req[b.results[0]]
                nb = rules[b].build(
                    [env[u] for u in b.operands], with_dim(b.results[0].type, rq[0], rq[2] - rq[1])
                )
            new_block.add_op(nb)
            env[b.results[0]] = nb.results[0]
        new_block.add_op(YieldOp(env[term.values[0]]))
        return KernelOp(
            list(operands),
            [rt],
            Region([new_block]),
            op.pattern_name,
            op.origin_names,
            _strip(dict(op.attributes)),
        )

    return Rule(arg_reqs, build)


def rule_for(op: Operation, d: int, lo: int, hi: int) -> Rule:
    if isinstance(op, KernelOp):
        return _rule_kernel(op, d, lo, hi)
    rule = RULES.get(type(op))
    if rule is None or len(op.results) != 1:
        raise NotTileable(f"no tile rule for {op.name}")
    return rule(op, d, lo, hi)


# ---------------------------------------------------------------------------------------
# Region rewrite
# ---------------------------------------------------------------------------------------


def tile_bounds(size: int, count: int) -> list[tuple[int, int]]:
    return [(t * size // count, (t + 1) * size // count) for t in range(count)]


@dataclass
class Piece:
    """One tile of a region: the rows each region value must hold, and each op's rule."""

    reqs: dict[SSAValue, Req]
    rules: dict[Operation, Rule]


def propagate(region: Sequence[Operation], y: SSAValue, req_y: Req) -> Piece:
    """Walk ``region`` backwards from ``y``'s rows ``req_y`` (dim, lo, hi) to the rows every
    region value must hold for that tile; ``NotTileable`` if some op cannot be tiled so."""
    inside = {r for op in region for r in op.results}
    req: dict[SSAValue, Req] = {y: req_y}
    rules: dict[Operation, Rule] = {}
    for op in reversed(region):
        if isinstance(op, nn.ConstantOp):
            continue
        if len(op.results) != 1:
            raise NotTileable(f"{op.name} has several results")
        rq = req.get(op.results[0])
        if rq is None:
            raise NotTileable(f"{op.name} result is not used towards the region output")
        rule = rule_for(op, *rq)
        rules[op] = rule
        for u, ru in zip(op.operands, rule.operands):
            if u not in inside or isinstance(u.owner, nn.ConstantOp):
                continue
            if ru is None:
                raise NotTileable(f"{op.name} needs a region value whole")
            old = req.get(u)
            if old is not None:
                if old[0] != ru[0]:
                    raise NotTileable("value tiled along two dimensions")
                ru = (ru[0], min(old[1], ru[1]), max(old[2], ru[2]))
            req[u] = ru
    return Piece(req, rules)


def _slice(value: SSAValue, dim: int, lo: int, hi: int, attrs: dict[str, Attribute]) -> nn.SliceOp:
    shape = shape_of(value)
    starts = [0] * len(shape)
    ends = list(shape)
    starts[dim], ends[dim] = lo, hi
    return nn.SliceOp(
        value,
        starts=starts,
        ends=ends,
        steps=[1] * len(shape),
        result_type=with_dim(value.type, dim, hi - lo),
        attributes=attrs,
    )


def build_tiles(
    region: Sequence[Operation], y: SSAValue, dim: int, count: int, verify: bool = True
) -> list[Operation]:
    """The ops replacing ``region`` (pieces then the concat), detached and verified.

    Raises ``NotTileable`` when some op cannot be tiled this way.
    """
    size = shape_of(y)[dim]
    if count < 2 or count > size:
        raise NotTileable(f"cannot cut {size} rows into {count} tiles")
    pieces = [propagate(region, y, (dim, lo, hi)) for lo, hi in tile_bounds(size, count)]
    inside = {r for op in region for r in op.results if not isinstance(op, nn.ConstantOp)}
    new_ops: list[Operation] = []
    outputs: list[SSAValue] = []
    for t, piece in enumerate(pieces):
        tag = {TILE_ATTR: i64_array([t, count])}
        env: dict[SSAValue, tuple[SSAValue, Req]] = {}
        for op in region:
            if isinstance(op, nn.ConstantOp):
                continue
            rule = piece.rules[op]
            origins = op.attributes.get(ORIGINS)
            sattrs: dict[str, Attribute] = dict(tag)
            if isinstance(origins, ArrayAttr):
                sattrs[ORIGINS] = origins
            operands: list[SSAValue] = []
            for u, ru in zip(op.operands, rule.operands):
                if u in inside:
                    nv, have = env[u]
                    assert ru is not None
                    if (have[1], have[2]) != (ru[1], ru[2]):
                        s = _slice(nv, ru[0], ru[1] - have[1], ru[2] - have[1], sattrs)
                        new_ops.append(s)
                        nv = s.y
                    operands.append(nv)
                elif ru is None or (ru[1], ru[2]) == (0, shape_of(u)[ru[0]]):
                    operands.append(u)
                else:
                    s = _slice(u, *ru, sattrs)
                    new_ops.append(s)
                    operands.append(s.y)
            rq = piece.reqs[op.results[0]]
            new = rule.build(operands, with_dim(op.results[0].type, rq[0], rq[2] - rq[1]))
            new.attributes.update(tag)
            new_ops.append(new)
            env[op.results[0]] = (new.results[0], rq)
        outputs.append(env[y][0])
    concat_attrs: dict[str, Attribute] = {TILE_ATTR: i64_array([-1, count])}
    origins = y.owner.attributes.get(ORIGINS) if isinstance(y.owner, Operation) else None
    if isinstance(origins, ArrayAttr):
        concat_attrs[ORIGINS] = origins
    concat = nn.ConcatOp(outputs, axis=dim, result_type=y.type, attributes=concat_attrs)
    new_ops.append(concat)
    for op in new_ops if verify else ():
        try:
            op.verify()
        except VerifyException as e:
            raise NotTileable(f"tiled op does not verify: {e}") from None
    return new_ops


def trial_schedule(
    steps: Sequence[Operation], start: int, end: int, new_ops: list[Operation]
) -> list[Operation]:
    """The schedule ``steps`` would have with ``steps[start:end+1]`` replaced by ``new_ops``
    (region constants stay where they were)."""
    kept = [op for op in steps[start : end + 1] if isinstance(op, nn.ConstantOp)]
    return [*steps[:start], *kept, *new_ops, *steps[end + 1 :]]


def tile_region(
    region: Sequence[Operation], y: SSAValue, dim: int, count: int, verify: bool = True
) -> None:
    """Replace ``region`` (consecutive top-level ops, ``y`` its only escaping value) by
    ``count`` pieces along ``dim`` of ``y`` and a concat. Raises ``NotTileable``.

    ``verify=False`` skips verifying the new ops (for throw-away trial rewrites)."""
    new_ops = build_tiles(region, y, dim, count, verify)
    last = region[-1]
    Rewriter.insert_op(new_ops, InsertPoint.after(last))
    members = set(region)
    y.replace_uses_with_if(new_ops[-1].results[0], lambda use: use.operation not in members)
    for op in reversed(region):
        if isinstance(op, nn.ConstantOp):
            continue
        Rewriter.erase_op(op)
