"""``assign-layout``: keep conv activations in 16-channel blocks (NCHW16c) between the convs
that run the blocked direct kernel, so the reorders are paid at region boundaries only.

Level: the fusion IR (after ``fuse-conv-chain``, before ``plan-buffers``). There every
activation is one SSA value between top-level units (a ``fusion.kernel`` or a bare nn op),
so "who reads this tensor, and in which layout" is a use-list question and a reorder pair
is cancelled by marking both ends; at the buffer level the same edge is an arena offset
shared by views and in-place reuse, and the conv kernels' epilogues are already outlined.
The layout is physical: tensor types stay logical (NCHW), marks go on the ``nn.conv``
(``layout.x`` / ``layout.y`` = ``"nchw16c"``), so the interpreter and the other passes read
the graph unchanged and semantics hold by construction; the C lowering turns the marks into
``clib.conv2d {x_layout, y_layout}`` and ``afrt_nchwc_ex_f32``'s flags.

Model. Each conv unit the blocked kernel fits (``clib.nchwc_fits``: group 1, 1x1 or 3x3,
strides 1/2, f32, 4-d) is a candidate: a bare ``nn.conv`` or a kernel whose body is one
conv and elementwise ops on its result (scalar other operands). Conceptually every blocked
conv is wrapped in ``to_nchw16c`` before x and ``to_nchw`` after y. An edge whose producer
and every reader are blocked convs, each reader reading it as its conv's x, cancels those
reorders in pairs (producer's ``to_nchw`` against each reader's ``to_nchw16c``); a reorder
that remains is a region boundary (graph input/output, a reader without a blocked kernel)
and is done inside the conv kernel (a 16-way gather of the input rows / the NCHW store).

Edge conditions (legality): C a multiple of 16 (the blocked buffer then has the NCHW
bytes, so ``plan-buffers`` sizes it unchanged), not a function result, every reader a
blocked conv reading it as its x and/or as a residual of a blocked output, and the
producer's epilogue elementwise on y, single-element constants and residuals of y's shape
that are blocked too (the blocked kernel runs the epilogue in its flat form on the blocked
rows, indexing y and the residual alike). Every candidate output starts blocked and is
demoted when a condition fails (only demotions: the fixed point exists).

Rule (profitability; benchmarks/nchwc_conv.py, docs/c-backend.md): a 3x3 conv runs blocked
where ``clib.nchwc_applies`` says (measured with both reorders inside). 1x1 convs stay on
``gemm_1x1``: with x and y already blocked the blocked kernel measured 0.95-1.54x its time
(11 ResNet/SqueezeNet shapes, cold caches), and putting every fitting 1x1 conv on the
blocked kernel (its edges blocked where legal) made ResNet-50 and SqueezeNet-1.1 1.15x
slower. Option ``pointwise`` (default false) lets a 1x1
conv join where both its edges are blocked -- for measuring a faster 1x1 kernel, and for
tests. Dropping a conv can break its edges, which can drop a neighbour: iterated to a
fixed point.

Expand chains (MobileNet-V2's inverted-residual blocks): a 1x1 unit the rule leaves on
NCHW whose every reader is a ``fuse-conv-chain`` kernel on the blocked band
(``clib.dwpw_algo``) reading it as its depthwise input writes NCHW16c (``layout.y``; the
lowering's ``gemm_1x1_b``) and those depthwise convs read it so (``layout.x``;
``afrt_dwpw_ex_f32``'s blocked input): the expand's output channels go along the vector
lanes (every lane full on a 7x7 map) and the chain copies block rows instead of transposing
16 channel rows. Conditions: K a multiple of 16, an elementwise epilogue without residual,
at most ``EXPAND_MAX_HW`` positions (measured on MobileNet-V2: 7x7 and 14x14 gain, 28x28 is
even, 56x56 loses; docs/c-backend.md, "Expand chains").

Fire modules (SqueezeNet): a 1x1 squeeze (at most ``FIRE_MAX_SQUEEZE`` output channels, a
multiple of 16) read only by expand convs reading it as their x, whose outputs (multiples of
16 channels, elementwise epilogues without residual) only a channel concat reads. A fire's
concat and every 4-d f32 max pool start blocked and are demoted unless every reader is a
fire's squeeze reading it as x or a blocked pool (a pool's input blocked too). A fire whose
concat stays blocked is blocked throughout: squeeze ``layout.y`` (``direct_1x1_b``), expands
both marks, and they write their halves of the concat in place as before (a slice of whole
16-channel blocks is the same byte range in both layouts); the pool gets ``layout.x`` (x and
y, ``afrt_maxpool2d_nc_f32``); a squeeze reading blocks into an NCHW fire is the exit
(``layout.x`` only). Measured on SqueezeNet-1.1 (docs/runtime.md: 0.95 of main's time).
A fire's concat may also be read by a 1x1 unit into NCHW (``_is_gemm_reader``: SqueezeNet's
classifier): it gets ``layout.x`` only and runs ``gemm_1x1_xb`` (gemm_1x1 with its B panels
packed from the blocks, no reorder), so the last fire is blocked too (``gemm_readers``).

Stems (SqueezeNet's 3 -> 64, 3x3/2): a unit ``clib.smallc_b_fits`` takes (at most 4 input
channels, whole 16-channel blocks out) with an elementwise epilogue and no residual starts
blocked with the fire concats and pools and is demoted the same way (every reader a blocked
pool or a fire's squeeze reading it as x); one that stays gets ``layout.y``
(``direct_smallc_b``: the image read as NCHW, the output channels along the lanes), so the
first pool runs on blocks. Measured 0.85 of ``direct_smallc``'s time in SqueezeNet-1.1;
the 7x7/2 stems of ResNet-50, GoogLeNet and DenseNet-121 only even (docs/runtime.md), and
their pools feed NCHW convs anyway.

Decisions: the marks on each conv (and max pool), and on each function ``layout.summary`` =
``{blocked convs, reorders (boundary reorders left), cancelled (reorder pairs cancelled),
expand chains, fires, blocked pools, blocked stems, gemm readers}``, which the compile report copies
(``report["layout"]``; per conv ``conv_algo[i].layout``).

Place: target c, fusion on, and only where the blocked kernel is on (the pipeline's
``blocked_convs``: AVX-512 builds whose config leaves ``conv_layout: auto``) and no memory
limit is set (``tile-fusion`` would cut marked convs into pieces that read NCHW slices). Option:
``pointwise`` (above).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
)
from xdsl.ir import BlockArgument, Operation, SSAValue

from autofusion.analysis.conv_chain import body_chain, conv_fields
from autofusion.dialects import clib, nn
from autofusion.dialects.attrs import BLOCKED_LAYOUT, LAYOUT_SUMMARY, LAYOUT_X, LAYOUT_Y
from autofusion.dialects.fusion import KernelOp, YieldOp
from autofusion.passes.assign_precision import precision_of
from autofusion.passes.options import CheckedPass


def _unblock_illegal(blocked: dict[SSAValue, bool], legal: Callable[[SSAValue], bool]) -> bool:
    """One sweep of a fixed point: every blocked value ``legal`` now refuses is unblocked;
    whether any was (a refusal can make a neighbour illegal, so callers sweep again)."""
    changed = False
    for v, b in blocked.items():
        if b and not legal(v):
            blocked[v] = False
            changed = True
    return changed


@dataclass
class ConvUnit:
    """A top-level op holding one conv the blocked kernel fits."""

    top: Operation
    conv: nn.ConvOp
    fields: dict[str, int]
    x: SSAValue  # the top-level value the conv reads as x
    flat: bool  # the epilogue is elementwise (see _epilogue_reads)
    others: tuple[SSAValue, ...] = ()  # top-level full-shape tensors the epilogue reads
    x_only: bool = True  # the body reads x only as the conv's x
    blocked: bool = True  # runs the blocked kernel

    @property
    def y(self) -> SSAValue:
        return self.top.results[0]

    def rule(self, x_blocked: bool, y_blocked: bool, pointwise: bool) -> bool:
        """Whether this conv is worth the blocked kernel with these edges (module doc)."""
        if not clib.nchwc_fits(self.fields):  # a stem: only _Fires blocks it
            return False
        if (self.fields["R"], self.fields["S"]) == (1, 1):
            return pointwise and x_blocked and y_blocked
        return clib.nchwc_applies(self.fields)


def _numel(v: SSAValue) -> int:
    t = v.type
    return math.prod(t.get_shape()) if isinstance(t, TensorType) else 1


def _epilogue_reads(body: list[Operation], conv: nn.ConvOp) -> list[BlockArgument] | None:
    """The kernel arguments of y's full shape the epilogue reads (a residual), when every
    op after the conv is elementwise on in-body values derived from y, single-element
    tensors and such arguments (the flat form indexes them like y); else None."""
    derived: set[SSAValue] = {conv.y}
    reads: list[BlockArgument] = []
    for op in body:
        if op is conv:
            continue
        if not isinstance(op, nn.ELEMENTWISE):
            return None
        for v in op.operands:
            if v in derived or _numel(v) == 1:
                continue
            if not isinstance(v, BlockArgument) or v.type != conv.y.type:
                return None
            reads.append(v)
        derived.update(op.results)
    return reads


def _fits(conv: nn.ConvOp) -> dict[str, int] | None:
    """The conv's ``CONV_FIELDS`` when a blocked kernel can run it: a 2-d f32 conv that
    ``assign-precision`` left fp32 and ``clib.nchwc_fits`` or (a stem writing blocks)
    ``clib.smallc_b_fits`` takes."""
    f = conv_fields(conv)
    if f is None or precision_of(conv) != "fp32":
        return None
    fields: dict[str, int] = dict(zip(clib.CONV_FIELDS, f, strict=True))
    return fields if clib.nchwc_fits(fields) or clib.smallc_b_fits(fields) else None


def conv_unit(op: Operation) -> ConvUnit | None:
    """``op`` as a candidate (a bare conv or a one-conv kernel the blocked kernel fits)."""
    if isinstance(op, nn.ConvOp):
        fields = _fits(op)
        return ConvUnit(op, op, fields, op.x, True) if fields is not None else None
    if not isinstance(op, KernelOp) or len(op.results) != 1:
        return None
    body = [o for o in op.body.block.ops if not isinstance(o, nn.ConstantOp | YieldOp)]
    convs = [o for o in body if isinstance(o, nn.ConvOp)]
    if len(convs) != 1 or body[0] is not convs[0]:
        return None
    conv = convs[0]
    fields = _fits(conv)
    if fields is None or not isinstance(conv.x, BlockArgument):
        return None
    arg = conv.x
    reads = _epilogue_reads(body, conv)
    # x read by the conv, and maybe as a residual (then in y's layout, see _legal)
    x_only = all((u.operation is conv and u.index == 0) or arg in (reads or ()) for u in arg.uses)
    others = tuple(op.operands[a.index] for a in reads or ())
    return ConvUnit(op, conv, fields, op.operands[arg.index], reads is not None, others, x_only)


class _Layouts:
    """Which conv outputs stay blocked: every candidate output starts blocked and is
    demoted when a constraint fails (only demotions: the fixed point exists)."""

    def __init__(self, fn: func.FuncOp, pointwise: bool) -> None:
        self.units: dict[Operation, ConvUnit] = {}
        for op in fn.body.block.ops:
            if (u := conv_unit(op)) is not None:
                self.units[op] = u
        self.blocked: dict[SSAValue, bool] = {
            u.y: u.flat and u.fields["K"] % clib.NC_BLOCK == 0 for u in self.units.values()
        }
        changed = True
        while changed:
            changed = _unblock_illegal(self.blocked, self._legal)
            for u in self.units.values():
                if u.blocked and not u.rule(self.of(u.x), self.of(u.y), pointwise):
                    u.blocked = False
                    changed = True

    @property
    def convs(self) -> set[nn.ConvOp]:
        return {u.conv for u in self.units.values()}

    def of(self, v: SSAValue) -> bool:
        return self.blocked.get(v, False)

    def _legal(self, v: SSAValue) -> bool:
        """v may stay blocked: its producer runs blocked with every residual it reads
        blocked too, and every reader is a blocked conv reading it as its x and/or as a
        residual of a blocked output (never as weights or bias)."""
        prod = self.units[v.owner]  # type: ignore[index]
        if not prod.blocked or not all(self.of(o) for o in prod.others):
            return False
        if not v.uses:
            return False
        for use in v.uses:
            r = use.operation
            u = self.units.get(r)
            if u is None or not u.blocked or (v is not u.x and v not in u.others):
                return False
            if v is u.x and not u.x_only:
                return False
            if isinstance(r, nn.ConvOp) and (r.w is v or r.bias is v):
                return False
            if v in u.others and not self.of(u.y):
                return False
        return True


#: Expand convs write blocks for their conv chain on maps of at most this many positions
#: (14x14); measured on MobileNet-V2 (module doc, docs/c-backend.md).
EXPAND_MAX_HW = 196


def _chain_dw(op: Operation, v: SSAValue) -> nn.ConvOp | None:
    """The depthwise conv of ``op`` when ``op`` is a conv-chain kernel on the blocked band
    (``clib.dwpw_algo``) that reads ``v`` only as that conv's x."""
    if not isinstance(op, KernelOp):
        return None
    body = [o for o in op.body.block.ops if not isinstance(o, nn.ConstantOp | YieldOp)]
    got = body_chain(body)
    if got is None:
        return None
    dw, _, pw = got
    d, p = conv_fields(dw), conv_fields(pw)
    if d is None or p is None or clib.dwpw_algo(d, p, True) != "dwpw_blocked":
        return None
    if precision_of(dw) != "fp32" or precision_of(pw) != "fp32":
        return None
    arg = dw.x
    if not isinstance(arg, BlockArgument) or op.operands[arg.index] is not v:
        return None
    if any(u.operation is not dw for u in arg.uses):
        return None
    if sum(o is v for o in op.operands) != 1:
        return None
    return dw


def expand_chains(lay: _Layouts) -> list[tuple[ConvUnit, list[nn.ConvOp]]]:
    """The expand convs that write NCHW16c for their conv chains (``gemm_1x1_b`` into
    ``afrt_dwpw_ex_f32``'s blocked input): a 1x1 stride-1 unit left on NCHW by the 3x3 rule,
    its epilogue elementwise with no residual, K a multiple of 16, a map of at most
    ``EXPAND_MAX_HW`` positions, and every reader of y a chain on the blocked band reading
    it as its depthwise input."""
    found: list[tuple[ConvUnit, list[nn.ConvOp]]] = []
    for u in lay.units.values():
        f = u.fields
        if u.blocked or lay.of(u.x) or not u.flat or u.others or not clib.gemm_1x1_b_fits(f):
            continue
        if f["K"] % clib.NC_BLOCK or f["OH"] * f["OW"] > EXPAND_MAX_HW or not u.y.uses:
            continue
        dws = [_chain_dw(use.operation, u.y) for use in u.y.uses]
        if all(dws):
            found.append((u, [d for d in dws if d is not None]))
    return found


#: A fire module's squeeze has at most this many output channels (SqueezeNet's 16-64): the
#: range measured on ``direct_1x1_b`` (docs/runtime.md).
FIRE_MAX_SQUEEZE = 64


@dataclass
class Fire:
    """A fire module: a 1x1 squeeze whose readers are exactly the expand convs, each reading
    it as its x only, whose outputs only a concat along channels reads."""

    squeeze: ConvUnit
    expands: list[ConvUnit]
    concat: nn.ConcatOp


def _is_f32_4d(v: SSAValue) -> bool:
    t = v.type
    return isinstance(t, TensorType) and len(t.get_shape()) == 4 and t.element_type == f32


def _reads_x_only(u: ConvUnit, v: SSAValue) -> bool:
    """``u`` reads ``v`` as its conv's x and nowhere else (one operand, no residual)."""
    return u.x is v and u.x_only and v not in u.others and sum(o is v for o in u.top.operands) == 1


def _fire(lay: _Layouts, cat: nn.ConcatOp) -> Fire | None:
    """``cat`` as a fire module's concat (``Fire``): every part a conv unit with a multiple of
    16 output channels and an elementwise epilogue without residual, all reading one value
    that a 1x1 unit (``gemm_1x1_b_fits``, at most ``FIRE_MAX_SQUEEZE`` output channels, a
    multiple of 16) writes for them alone."""
    if cat.axis != 1 or not _is_f32_4d(cat.y):
        return None
    expands: list[ConvUnit] = []
    for v in cat.inputs:
        u = lay.units.get(v.owner) if isinstance(v.owner, Operation) else None
        if u is None or u.y is not v or not v.has_one_use() or not u.flat or u.others:
            return None
        if u.fields["K"] % clib.NC_BLOCK or any(e.top is u.top for e in expands):
            return None
        expands.append(u)
    s = expands[0].x if expands else None
    if s is None or not all(_reads_x_only(u, s) for u in expands):
        return None
    q = lay.units.get(s.owner) if isinstance(s.owner, Operation) else None
    if q is None or not q.flat or q.others or not clib.gemm_1x1_b_fits(q.fields):
        return None
    if q.fields["K"] % clib.NC_BLOCK or q.fields["K"] > FIRE_MAX_SQUEEZE:
        return None
    if s.uses.get_length() != len(expands):
        return None
    return Fire(q, expands, cat)


def _is_gemm_reader(u: ConvUnit) -> bool:
    """``u`` can read a fire's blocked concat into NCHW y (``gemm_1x1_xb``: gemm_1x1 with its
    B panels packed from the blocks): a 1x1 stride-1 unpadded group-1 unit
    (``clib.gemm_1x1_b_fits``) the rule leaves on NCHW, with an elementwise epilogue and no
    residual (SqueezeNet's classifier)."""
    return not u.blocked and clib.gemm_1x1_b_fits(u.fields) and u.flat and not u.others


def _is_stem(u: ConvUnit) -> bool:
    """``u`` can write blocks from the NCHW image (``direct_smallc_b``): ``clib.smallc_b_fits``
    and an elementwise epilogue without residual."""
    return clib.smallc_b_fits(u.fields) and u.flat and not u.others


class _Fires:
    """Which fire concats, max pools and stems keep NCHW16c: every fire concat, 4-d f32 max
    pool and stem (``_is_stem``) output starts blocked and is demoted unless every reader is a
    fire's squeeze reading it as its x only or a blocked max pool, or (a fire's concat) a
    1x1 unit reading it as its x only into NCHW (``_is_gemm_reader``), and (a pool) its
    input is blocked too."""

    def __init__(self, fn: func.FuncOp, lay: _Layouts) -> None:
        self.fires: dict[SSAValue, Fire] = {}
        self.pools: dict[SSAValue, nn.MaxPoolOp] = {}
        self.stems = {u.y: u for u in lay.units.values() if _is_stem(u)}
        for op in fn.body.block.ops:
            if isinstance(op, nn.ConcatOp) and (f := _fire(lay, op)) is not None:
                self.fires[op.y] = f
            elif isinstance(op, nn.MaxPoolOp) and _is_f32_4d(op.x) and _is_f32_4d(op.y):
                self.pools[op.y] = op
        self.squeezes = {f.squeeze.top: f.squeeze for f in self.fires.values()}
        self.readers = {
            u.top: u
            for u in lay.units.values()
            if _is_gemm_reader(u) and u.top not in self.squeezes
        }
        self.blocked = {v: True for v in (*self.fires, *self.pools, *self.stems)}
        while _unblock_illegal(self.blocked, self._legal):
            pass

    def of(self, v: SSAValue) -> bool:
        return self.blocked.get(v, False)

    def _legal(self, v: SSAValue) -> bool:
        pool = self.pools.get(v)
        if pool is not None and not self.of(pool.x):
            return False
        if not v.uses:
            return False
        for use in v.uses:
            r = use.operation
            q = self.squeezes.get(r)
            if q is not None and _reads_x_only(q, v):
                continue
            if isinstance(r, nn.MaxPoolOp) and r.x is v and self.of(r.y):
                continue
            g = self.readers.get(r)
            if v in self.fires and g is not None and _reads_x_only(g, v):
                continue
            return False
        return True

    def gemm_readers(self) -> list[ConvUnit]:
        """The 1x1 units reading a blocked fire concat (``_is_gemm_reader``)."""
        return [u for u in self.readers.values() if u.x in self.fires and self.of(u.x)]


def fire_layouts(fn: func.FuncOp, lay: _Layouts) -> tuple[int, int, int, int, int, set[nn.ConvOp]]:
    """Mark the fire modules between blocked stems, pools and concats (module doc): the
    number of blocked fires, of blocked pools, of blocked stems, of exits (a squeeze
    reading blocks into an NCHW fire: the region's reorder back) and of 1x1 convs reading
    a blocked concat through the GEMM's packing (no reorder), and the convs marked."""
    fl = _Fires(fn, lay)
    marked: set[nn.ConvOp] = set()
    fires = exits = 0
    stems = [u for v, u in fl.stems.items() if fl.of(v)]
    for u in stems:
        u.conv.attributes[LAYOUT_Y] = StringAttr(BLOCKED_LAYOUT)
        marked.add(u.conv)
    readers = fl.gemm_readers()
    for u in readers:
        u.conv.attributes[LAYOUT_X] = StringAttr(BLOCKED_LAYOUT)
    for v, f in fl.fires.items():
        if fl.of(f.squeeze.x):
            f.squeeze.conv.attributes[LAYOUT_X] = StringAttr(BLOCKED_LAYOUT)
            marked.add(f.squeeze.conv)
        if not fl.of(v):
            exits += fl.of(f.squeeze.x)
            continue
        fires += 1
        f.squeeze.conv.attributes[LAYOUT_Y] = StringAttr(BLOCKED_LAYOUT)
        marked.add(f.squeeze.conv)
        for u in f.expands:
            u.conv.attributes[LAYOUT_X] = StringAttr(BLOCKED_LAYOUT)
            u.conv.attributes[LAYOUT_Y] = StringAttr(BLOCKED_LAYOUT)
            marked.add(u.conv)
    pools = 0
    for v, pool in fl.pools.items():
        pool.attributes.pop(LAYOUT_X, None)
        if fl.of(v):
            pool.attributes[LAYOUT_X] = StringAttr(BLOCKED_LAYOUT)
            pools += 1
    return fires, pools, len(stems), exits, len(readers), marked


def assign(fn: func.FuncOp, pointwise: bool = False) -> dict[str, int]:
    """Mark ``fn``'s convs (see module doc); returns the summary numbers."""
    lay = _Layouts(fn, pointwise)
    blocked_convs = reorders = cancelled = 0
    for op in fn.body.block.ops:  # marks of an earlier run on chain kernels
        if isinstance(op, KernelOp):
            for inner in op.body.block.ops:
                if isinstance(inner, nn.ConvOp) and inner not in lay.convs:
                    inner.attributes.pop(LAYOUT_X, None)
    for u in lay.units.values():
        for key in (LAYOUT_X, LAYOUT_Y):
            u.conv.attributes.pop(key, None)
        if not u.blocked:
            continue
        blocked_convs += 1
        if lay.of(u.x):
            u.conv.attributes[LAYOUT_X] = StringAttr(BLOCKED_LAYOUT)
        else:
            reorders += 1
        if lay.of(u.y):
            u.conv.attributes[LAYOUT_Y] = StringAttr(BLOCKED_LAYOUT)
            cancelled += u.y.uses.get_length()
        else:
            reorders += 1
    expand = 0
    for u, dws in expand_chains(lay):
        expand += 1
        u.conv.attributes[LAYOUT_Y] = StringAttr(BLOCKED_LAYOUT)
        for dw in dws:
            dw.attributes[LAYOUT_X] = StringAttr(BLOCKED_LAYOUT)
        cancelled += len(dws)
    fires, pools, stems, exits, readers, marked = fire_layouts(fn, lay)
    blocked_convs += len(marked - {u.conv for u in lay.units.values() if u.blocked})
    reorders += exits
    return {
        "blocked_convs": blocked_convs,
        "reorders": reorders,
        "cancelled": cancelled,
        "expand_chains": expand,
        "fires": fires,
        "blocked_pools": pools,
        "blocked_stems": stems,
        "gemm_readers": readers,
    }


@dataclass(frozen=True)
class AssignLayout(CheckedPass):
    """Keep activations NCHW16c between blocked convs (module doc)."""

    name: ClassVar[str] = "assign-layout"

    pointwise: bool = False
    """1x1 convs join where both their edges are blocked (off by default: measured at best
    even with ``gemm_1x1``, see the module doc)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.ops:
            if not isinstance(fn, func.FuncOp) or fn.is_declaration:
                continue
            summary = assign(fn, self.pointwise)
            if summary["blocked_convs"] or summary["expand_chains"] or summary["fires"]:
                fn.attributes[LAYOUT_SUMMARY] = DictionaryAttr(
                    {k: IntegerAttr(v, 64) for k, v in summary.items()}
                )
            else:
                fn.attributes.pop(LAYOUT_SUMMARY, None)
