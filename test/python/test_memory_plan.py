"""plan-buffers and tile-fusion: soundness on random graphs, interpreter equivalence."""

# ruff: noqa: E501 - the MLIR test input keeps one op per line

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from autofusion.analysis.liveness import find_main, view_offset
from autofusion.analysis.memory_plan import (
    Buffer,
    check_plan,
    conflicts,
    lower_bound,
    place,
    plan_memory,
    promote,
)
from autofusion.errors import AutofusionError
from autofusion.pipeline import make_context
from autofusion.testing import assert_close


def parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


# ---------------------------------------------------------------------------------------
# Placement on random lifetimes
# ---------------------------------------------------------------------------------------


@st.composite
def buffers(draw: st.DrawFn) -> list[Buffer]:
    n = draw(st.integers(1, 40))
    out = []
    for _ in range(n):
        start = draw(st.integers(0, 30))
        end = start + draw(st.integers(0, 10))
        size = 64 * draw(st.integers(1, 64))
        out.append(Buffer([], start, end, size))
    return out


@settings(max_examples=150, deadline=None)
@given(buffers(), st.booleans(), st.randoms(use_true_random=False))
def test_placement_never_overlaps_live_buffers(bufs: list[Buffer], best_fit: bool, rnd) -> None:
    order = list(range(len(bufs)))
    rnd.shuffle(order)
    offsets = place(bufs, order, best_fit)
    arena = max(o + b.size for o, b in zip(offsets, bufs))
    assert arena >= lower_bound(bufs)
    for i, a in enumerate(bufs):
        assert offsets[i] >= 0
        assert offsets[i] % 64 == 0
        for j in range(i + 1, len(bufs)):
            b = bufs[j]
            if a.overlaps(b):
                assert offsets[i] + a.size <= offsets[j] or offsets[j] + b.size <= offsets[i]


@settings(max_examples=100, deadline=None)
@given(buffers(), st.booleans(), st.randoms(use_true_random=False))
def test_promote_never_worsens_and_never_overlaps(bufs: list[Buffer], best_fit: bool, rnd) -> None:
    """Iterated greedy from any order: sound offsets, between the bound and the arena of the
    order it started from."""
    order = list(range(len(bufs)))
    rnd.shuffle(order)
    conflict = conflicts(bufs)
    start = max(o + b.size for o, b in zip(place(bufs, order, best_fit, conflict), bufs))
    bound = lower_bound(bufs)
    offsets, arena, used = promote(bufs, order, best_fit, conflict, bound, 64)
    assert bound <= arena <= start
    assert 1 <= used <= 64
    assert arena == max(o + b.size for o, b in zip(offsets, bufs))
    for i, a in enumerate(bufs):
        for j in range(i + 1, len(bufs)):
            b = bufs[j]
            if a.overlaps(b):
                assert offsets[i] + a.size <= offsets[j] or offsets[j] + b.size <= offsets[i]


# ---------------------------------------------------------------------------------------
# Whole plans on random DAGs of nn ops
# ---------------------------------------------------------------------------------------


def _ty(shape: tuple[int, int]) -> str:
    return f"tensor<{shape[0]}x{shape[1]}xf32>"


@st.composite
def dags(draw: st.DrawFn) -> str:
    """A random @main: elementwise ops, reshapes and splits (views), concat, reductions on
    2-d tensors."""
    vals: list[tuple[str, tuple[int, int]]] = [("%x", (4, 8)), ("%y", (4, 8))]
    lines: list[str] = []
    for i in range(draw(st.integers(1, 25))):
        kinds = ["unary", "binary", "concat", "concat0", "reduce", "reshape", "split0"]
        kind = draw(st.sampled_from(kinds))
        name = f"%v{i}"
        a, sa = vals[draw(st.integers(0, len(vals) - 1))]
        if kind == "unary":
            op = draw(st.sampled_from(["nn.relu", "nn.sigmoid", "nn.neg"]))
            lines.append(f"{name} = {op} {a} : ({_ty(sa)}) -> {_ty(sa)}")
            vals.append((name, sa))
        elif kind == "binary":
            same = [v for v in vals if v[1] == sa]
            b, _ = same[draw(st.integers(0, len(same) - 1))]
            op = draw(st.sampled_from(["nn.add", "nn.mul"]))
            lines.append(f"{name} = {op} {a}, {b} : ({_ty(sa)}, {_ty(sa)}) -> {_ty(sa)}")
            vals.append((name, sa))
        elif kind == "reshape":
            out = (sa[1], sa[0])
            lines.append(f"{name} = nn.reshape {a} : ({_ty(sa)}) -> {_ty(out)}")
            vals.append((name, out))
        elif kind == "split0" and sa[0] % 2 == 0:
            # Along axis 0: each piece is a view of its source, so a piece a concat takes
            # first (or last) brings the other piece along, just before (after) the concat.
            out = (sa[0] // 2, sa[1])
            lines.append(
                f"{name}:2 = nn.split {a} {{axis = 0 : i64}} : ({_ty(sa)}) -> "
                f"({_ty(out)}, {_ty(out)})"
            )
            vals += [(f"{name}#0", out), (f"{name}#1", out)]
        elif kind == "concat" and sa[1] <= 32:
            out = (sa[0], 2 * sa[1])
            lines.append(
                f"{name} = nn.concat {a}, {a} {{axis = 1 : i64}} : ({_ty(sa)}, {_ty(sa)}) "
                f"-> {_ty(out)}"
            )
            vals.append((name, out))
        elif kind == "concat0" and sa[0] <= 16:
            # Along axis 0: the slices are contiguous, so operands may be written in place
            # (unless repeated, arguments, already a slice, or misaligned: 4x1 is 16 bytes).
            same = [v for v in vals if v[1] == sa]
            b, _ = same[draw(st.integers(0, len(same) - 1))]
            out = (2 * sa[0], sa[1])
            lines.append(
                f"{name} = nn.concat {a}, {b} {{axis = 0 : i64}} : ({_ty(sa)}, {_ty(sa)}) "
                f"-> {_ty(out)}"
            )
            vals.append((name, out))
        else:
            out = (sa[0], 1)
            lines.append(
                f"{name} = nn.reduce_sum {a} {{axes = array<i64: 1>, keepdims = 1 : i64}} : "
                f"({_ty(sa)}) -> {_ty(out)}"
            )
            vals.append((name, out))
    made = vals[2:]
    picks = draw(st.lists(st.integers(0, len(made) - 1), max_size=3, unique=True))
    ret = sorted({len(made) - 1, *picks})
    rets = [made[i] for i in ret]
    body = "\n  ".join(lines)
    return (
        f"func.func @main(%x: {_ty((4, 8))}, %y: {_ty((4, 8))}) -> "
        f"({', '.join(_ty(s) for _, s in rets)}) {{\n  {body}\n"
        f"  func.return {', '.join(n for n, _ in rets)} : {', '.join(_ty(s) for _, s in rets)}\n}}"
    )


# Found by the search below: a reshape view of a relu is an in-place concat operand, so the
# relu itself sits at the concat's slice (the checker once followed only one of the relations).
_VIEW_INTO_CONCAT = """func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %v0 = nn.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %v1 = nn.reshape %x : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %v2 = nn.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %v3 = nn.reshape %v0 : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %v4 = nn.concat %v3, %v1 {axis = 0 : i64} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
  %v5 = nn.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %v5 : tensor<4x8xf32>
}"""


# %v3 sits in %v9 (first slice, %v7 after it); %v14 takes %v3 last: one slice per operand
_OPERAND_IN_TWO_CONCATS = """func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %v0 = nn.concat %x, %x {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  %v3 = nn.concat %v0, %v0 {axis = 1 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x32xf32>
  %v7 = nn.relu %v3 : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %v9 = nn.concat %v3, %v7 {axis = 0 : i64} : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<8x32xf32>
  %v12 = nn.concat %v0, %v0 {axis = 1 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x32xf32>
  %v14 = nn.concat %v12, %v3 {axis = 0 : i64} : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<8x32xf32>
  %v15 = nn.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %v15 : tensor<4x8xf32>
}"""

# the pieces of one split as first and last slices of one concat, around another value
_SPLIT_AROUND_CONCAT = """func.func @main(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>) {
  %a = nn.relu %x : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %p:2 = nn.split %a {axis = 0 : i64} : (tensor<8x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>)
  %b = nn.neg %p#0 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %c = nn.concat %p#1, %b {axis = 0 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %d = nn.concat %b, %p#0 {axis = 0 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %e = nn.add %c, %d : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  func.return %e : tensor<8x16xf32>
}"""


@settings(max_examples=60, deadline=None)
@given(dags())
@example(_VIEW_INTO_CONCAT)
@example(_OPERAND_IN_TWO_CONCATS)
@example(_SPLIT_AROUND_CONCAT)
def test_random_dag_plans_are_sound(text: str) -> None:
    plan = plan_memory(find_main(parse(text)))
    assert check_plan(plan) == []
    assert plan.lower_bound_bytes <= plan.arena_bytes <= plan.naive_bytes
    outputs = set(find_main(parse(text)).body.block.last_op.operands)  # type: ignore[union-attr]
    assert not outputs & set(plan.offsets)
    for src, dst in plan.inplace:
        assert plan.offsets[src] == plan.offsets[dst]
    for view, src in plan.views.items():  # a reshape at 0, a split piece at its offset
        assert plan.offsets[view] == plan.offsets[src] + view_offset(view.owner, view)  # type: ignore[arg-type]
    for operand, (result, start) in plan.concat_aliases.items():
        assert plan.offsets[operand] == plan.offsets[result] + start


def test_must_not_alias_input_live_later() -> None:
    text = """
    func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
      %a = nn.relu %x : (tensor<64xf32>) -> tensor<64xf32>
      %b = nn.neg %a : (tensor<64xf32>) -> tensor<64xf32>
      %c = nn.neg %b : (tensor<64xf32>) -> tensor<64xf32>
      %d = nn.add %c, %a : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
      func.return %d : tensor<64xf32>
    }"""
    main = find_main(parse(text))
    plan = plan_memory(main)
    a, b, c = (op.results[0] for op in list(main.body.block.ops)[:3])
    assert plan.offsets[b] != plan.offsets[a]  # %a is read again by the add
    assert plan.offsets[c] == plan.offsets[b]  # %b dies at %c: in place
    assert plan.arena_bytes == plan.lower_bound_bytes == 512
    assert check_plan(plan) == []


# ---------------------------------------------------------------------------------------
# tile-fusion keeps semantics
# ---------------------------------------------------------------------------------------

CONV = (
    "{{strides = array<i64: {s}, {s}>, pads = array<i64: {p}, {p}, {p}, {p}>, "
    "dilations = array<i64: {d}, {d}>, group = 1 : i64}}"
)
TILED = f"""
func.func @main(%x: tensor<1x3x40x24xf32>, %w1: tensor<8x3x3x3xf32>, %w2: tensor<8x8x3x3xf32>,
                %b: tensor<8xf32>) -> tensor<1x8x1x1xf32> {{
  %c1 = nn.conv %x, %w1, %b {CONV.format(s=1, p=1, d=1)} : (tensor<1x3x40x24xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x8x40x24xf32>
  %k = fusion.kernel "conv_relu" ["c2", "r2"] (%c1, %w2) : (tensor<1x8x40x24xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x36x20xf32> {{
  ^bb0(%a: tensor<1x8x40x24xf32>, %ww: tensor<8x8x3x3xf32>):
    %0 = nn.conv %a, %ww {CONV.format(s=1, p=0, d=2)} : (tensor<1x8x40x24xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x36x20xf32>
    %1 = nn.relu %0 : (tensor<1x8x36x20xf32>) -> tensor<1x8x36x20xf32>
    fusion.yield %1 : tensor<1x8x36x20xf32>
  }}
  %s = nn.slice %c1 {{starts = array<i64: 0, 0, 2, 2>, ends = array<i64: 1, 8, 38, 22>, steps = array<i64: 1, 1, 1, 1>}} : (tensor<1x8x40x24xf32>) -> tensor<1x8x36x20xf32>
  %r = nn.add %k, %s : (tensor<1x8x36x20xf32>, tensor<1x8x36x20xf32>) -> tensor<1x8x36x20xf32>
  %m = nn.max_pool %r {{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = 1 : i64}} : (tensor<1x8x36x20xf32>) -> tensor<1x8x19x11xf32>
  %q = nn.conv %m, %w2 {CONV.format(s=2, p=1, d=1)} : (tensor<1x8x19x11xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x10x6xf32>
  %g = nn.global_avg_pool %q : (tensor<1x8x10x6xf32>) -> tensor<1x8x1x1xf32>
  func.return %g : tensor<1x8x1x1xf32>
}}
"""


def _feeds(module: ModuleOp, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    main = find_main(module)
    return [
        rng.standard_normal(tuple(a.type.get_shape())).astype(np.float32)  # type: ignore[attr-defined]
        for a in main.body.block.args
    ]


def _allclose(got: np.ndarray, ref: np.ndarray) -> None:
    assert_close(got, ref)


@pytest.mark.parametrize("fraction", [0.6, 0.35])
def test_tile_fusion_fits_limit_and_matches_interpreter(fraction: float) -> None:
    from autofusion.interpreter import evaluate
    from autofusion.passes.tile_fusion import MIB, apply_memory_limit

    module = parse(TILED)
    feeds = _feeds(module)
    ref = evaluate(find_main(module), feeds)
    untiled = plan_memory(find_main(module)).arena_bytes
    limit_mb = untiled * fraction / MIB
    plan = apply_memory_limit(module, limit_mb)
    module.verify()
    assert plan.arena_bytes <= limit_mb * MIB < untiled
    assert check_plan(plan) == []
    text = str(module)
    assert "memory.tile" in text
    assert "nn.concat" in text
    for got, want in zip(evaluate(find_main(module), feeds), ref):
        _allclose(got, want)


def test_tile_fusion_infeasible_names_smallest_limit() -> None:
    from autofusion.passes.tile_fusion import apply_memory_limit

    module = parse(TILED)
    with pytest.raises(AutofusionError, match=r"smallest memory limit .* is [0-9.]+ MB"):
        apply_memory_limit(module, 0.0001)


@pytest.mark.parametrize(
    ("src", "dst"),
    [
        ((1, 8, 12), (1, 8, 3, 4)),
        ((1, 8, 3, 4), (1, 8, 12)),
        ((12, 4), (2, 6, 4)),
        ((2, 6, 4), (12, 4)),
        ((2, 3, 4), (2, 12)),
    ],
)
def test_reshape_tile_rule_maps_rows_exactly(src: tuple[int, ...], dst: tuple[int, ...]) -> None:
    from autofusion.analysis.memory_tiling import NotTileable, rule_for

    t = lambda s: "tensor<" + "x".join(map(str, s)) + "xf32>"  # noqa: E731
    main = find_main(
        parse(
            f"func.func @main(%x: {t(src)}) -> {t(dst)} {{\n"
            f"  %y = nn.reshape %x : ({t(src)}) -> {t(dst)}\n  func.return %y : {t(dst)}\n}}"
        )
    )
    op = main.body.block.first_op
    assert op is not None
    x = np.arange(np.prod(src)).reshape(src)
    y = x.reshape(dst)
    mapped = 0
    for d, size in enumerate(dst):
        for lo in range(size):
            for hi in range(lo + 1, size + 1):
                try:
                    rule = rule_for(op, d, lo, hi)
                except NotTileable:
                    continue
                req = rule.operands[0]
                assert req is not None
                index = [slice(None)] * len(src)
                index[req[0]] = slice(req[1], req[2])
                want = [slice(None)] * len(dst)
                want[d] = slice(lo, hi)
                tile = list(dst)
                tile[d] = hi - lo
                np.testing.assert_array_equal(x[tuple(index)].reshape(tile), y[tuple(want)])
                mapped += 1
    assert mapped > 0


@st.composite
def window_chains(draw: st.DrawFn) -> tuple[str, int, int]:
    """A random chain of convs/pools/relus (random kernel, stride, pads, dilation, ceil
    mode), weights as arguments; plus a tiled dim and a tile count."""
    from autofusion.dialects import shapes

    c = 2
    shape = (1, c, draw(st.integers(6, 18)), draw(st.integers(6, 18)))
    args = [f"%x: {_t4(shape)}"]
    lines: list[str] = []
    cur = "%x"
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["conv", "max_pool", "avg_pool", "relu"]))
        k = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
        s = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
        dil = (draw(st.integers(1, 2)), draw(st.integers(1, 2))) if kind == "conv" else (1, 1)
        p = [draw(st.integers(0, k[j % 2] - 1)) for j in range(4)]
        ceil = draw(st.integers(0, 1)) if kind != "conv" else 0
        arr = lambda v: "array<i64: " + ", ".join(map(str, v)) + ">"  # noqa: E731
        try:
            if kind == "conv":
                out = shapes.conv_out(shape, (c, c, *k), s, p, dil, 1)
            elif kind == "relu":
                out = shape
            else:
                out = shapes.pool_out(shape, k, s, p, dil, bool(ceil))
        except ValueError:
            continue
        name = f"%v{i}"
        if kind == "conv":
            args.append(f"%w{i}: {_t4((c, c, *k))}")
            lines.append(
                f"{name} = nn.conv {cur}, %w{i} {{strides = {arr(s)}, pads = {arr(p)}, "
                f"dilations = {arr(dil)}, group = 1 : i64}} : ({_t4(shape)}, {_t4((c, c, *k))})"
                f" -> {_t4(out)}"
            )
        elif kind == "relu":
            lines.append(f"{name} = nn.relu {cur} : ({_t4(shape)}) -> {_t4(out)}")
        else:
            extra = ", count_include_pad = " + str(draw(st.integers(0, 1))) + " : i64" \
                if kind == "avg_pool" else ""  # fmt: skip
            lines.append(
                f"{name} = nn.{kind} {cur} {{kernel = {arr(k)}, strides = {arr(s)}, "
                f"pads = {arr(p)}, dilations = {arr(dil)}, ceil_mode = {ceil} : i64{extra}}} "
                f": ({_t4(shape)}) -> {_t4(out)}"
            )
        cur, shape = name, out
    if cur == "%x":
        lines.append(f"%v = nn.relu %x : ({_t4(shape)}) -> {_t4(shape)}")
        cur = "%v"
    dim = draw(st.sampled_from([2, 3]))
    count = draw(st.integers(2, max(2, min(5, shape[dim]))))
    body = "\n  ".join(lines)
    text = (
        f"func.func @main({', '.join(args)}) -> {_t4(shape)} {{\n  {body}\n"
        f"  func.return {cur} : {_t4(shape)}\n}}"
    )
    return text, dim, count


def _t4(shape: tuple[int, ...]) -> str:
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


@settings(max_examples=40, deadline=None)
@given(window_chains())
def test_tiling_any_window_chain_preserves_values(case: tuple[str, int, int]) -> None:
    """Halos and per-tile pads are exact: tiled chain == untiled chain, elementwise."""
    from autofusion.analysis.liveness import schedule
    from autofusion.analysis.memory_tiling import NotTileable, tile_region
    from autofusion.interpreter import evaluate

    text, dim, count = case
    module = parse(text)
    main = find_main(module)
    feeds = _feeds(module, seed=1)
    ref = evaluate(main, feeds)[0]
    steps = schedule(main)
    if count > ref.shape[dim]:
        return
    try:
        tile_region(steps, steps[-1].results[0], dim, count)
    except NotTileable as e:
        # Only a tile lying wholly in padding, or avg-pool overhang counted as padding.
        refusal = str(e)
        if "padding" not in refusal:
            pytest.fail(f"unexpected refusal: {refusal}")
        return
    module.verify()
    assert str(module).count("nn.concat") == 1
    np.testing.assert_allclose(evaluate(main, feeds)[0], ref, rtol=1e-5, atol=1e-5)
