"""Concat in place: operands written straight into their slice of the concat's output.

Planning decisions (which operands alias, where), the lowering (no concat kernel, copies
only for the operands that cannot alias), numerics of the generated C against
onnxruntime on concat-heavy graphs (fused producers, an operand read elsewhere too, the
same operand twice, a graph input, chained and shared operands, a memory limit), and the
lower bound counting aliased bytes once.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

import autofusion
from autofusion import zoo
from autofusion.analysis.liveness import find_main
from autofusion.analysis.memory_plan import check_plan, plan_memory
from autofusion.frontend import import_onnx
from autofusion.lowering.c.testing import onnxruntime_outputs
from autofusion.pipeline import run_tensor_passes
from autofusion.testing import assert_close


def _fused(model: onnx.ModelProto) -> ModuleOp:
    module = import_onnx(model, progress=False)
    run_tensor_passes(module, groups=("cleanup", "fusion"))
    return module


def _conv(nodes: list, inits: list, x: str, cin: int, cout: int, name: str, k: int = 1) -> str:
    """Conv (He init, seeded by name) + Relu: fused into one kernel by the pipeline."""
    rng = np.random.default_rng(sum(name.encode()))
    w = (rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32)
    b = (rng.standard_normal(cout) * 0.05).astype(np.float32)
    inits += [numpy_helper.from_array(w, f"{name}.w"), numpy_helper.from_array(b, f"{name}.b")]
    p = k // 2
    nodes.append(
        helper.make_node(
            "Conv", [x, f"{name}.w", f"{name}.b"], [f"{name}_c"], name=f"{name}/Conv", pads=[p] * 4
        )
    )
    nodes.append(helper.make_node("Relu", [f"{name}_c"], [name], name=f"{name}/Relu"))
    return name


def _concat(nodes: list, inputs: list[str], name: str, axis: int = 1) -> str:
    nodes.append(helper.make_node("Concat", inputs, [name], name=name, axis=axis))
    return name


def concat_model() -> onnx.ModelProto:
    """Fused conv kernels feeding concats in every legal and illegal way:

    - ``cat1 = Concat(a, b)``: both in place; ``a`` is also read later by ``c`` (used
      elsewhere too);
    - ``cat2 = Concat(cat1, d)``: chained (cat1 sits inside cat2);
    - ``cat3 = Concat(e, e, x)``: the same operand twice and the graph input: no operand
      may alias, the concat keeps its kernel;
    - ``cat4 = Concat(b, f)``: ``b`` already sits in cat1 (feeds two concats), so it is
      copied; ``f`` in place;
    - ``cat5 = Concat(g, h, axis=2)``: dims before the axis are not all 1: a copy kernel.
    """
    nodes: list = []
    inits: list = []
    x = "input"
    a = _conv(nodes, inits, x, 4, 16, "a", 3)
    b = _conv(nodes, inits, x, 4, 16, "b")
    cat1 = _concat(nodes, [a, b], "cat1")
    d = _conv(nodes, inits, cat1, 32, 16, "d", 3)
    cat2 = _concat(nodes, [cat1, d], "cat2")
    c = _conv(nodes, inits, a, 16, 4, "c")  # a read after its concat
    e = _conv(nodes, inits, c, 4, 4, "e")
    cat3 = _concat(nodes, [e, e, x], "cat3")
    f = _conv(nodes, inits, cat3, 12, 16, "f")
    cat4 = _concat(nodes, [b, f], "cat4")
    g = _conv(nodes, inits, cat2, 48, 8, "g")
    h = _conv(nodes, inits, cat4, 32, 8, "h")
    cat5 = _concat(nodes, [g, h], "cat5", axis=2)
    nodes.append(helper.make_node("GlobalAveragePool", [cat5], ["y"], name="gap"))
    nodes.append(helper.make_node("GlobalAveragePool", [cat2], ["y2"], name="gap2"))
    graph = helper.make_graph(
        nodes,
        "concat_cases",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 4, 16, 16])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 1, 1]),
            helper.make_tensor_value_info("y2", TensorProto.FLOAT, [1, 48, 1, 1]),
        ],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    return model


def _flags(module: ModuleOp) -> dict[str, list[int]]:
    """ONNX concat name -> memory.concat_inplace flags ([]: no operand aliases, the concat
    keeps its kernel)."""
    out: dict[str, list[int]] = {}
    for op in find_main(module).body.block.ops:
        if op.name != "nn.concat":
            continue
        attr = op.attributes.get("memory.concat_inplace")
        origin = str(op.attributes["onnx.origins"]).split('"')[1]
        out[origin] = [] if attr is None else [int(v) for v in attr.get_values()]  # type: ignore[attr-defined]
    return out


def test_planning_decisions_per_operand() -> None:
    module = _fused(concat_model())
    main = find_main(module)
    plan = plan_memory(main)
    assert check_plan(plan) == []
    from autofusion.passes.plan_buffers import annotate

    annotate(main, plan)
    assert _flags(module) == {
        "cat1": [1, 1],
        "cat2": [1, 1],
        "cat3": [],  # no operand may alias: it keeps its copy kernel
        "cat4": [0, 1],
        "cat5": [],
    }
    # The aliased operands sit exactly at their slices (a conv kernel writes there).
    assert len(plan.concat_aliases) == 5  # a, b, cat1, d, f


def test_generated_c_matches_onnxruntime_and_has_no_concat_copies(tmp_path: Path) -> None:
    model = concat_model()
    feeds = {"input": np.random.default_rng(0).standard_normal((1, 4, 16, 16), np.float32)}
    ref = onnxruntime_outputs(model, feeds)
    assert all(0.1 < np.abs(r).max() < 10 for r in ref.values())
    compiled = autofusion.compile(model)
    got = compiled.run(feeds)
    for name, r in ref.items():
        assert_close(got[name], r, name)
    assert compiled.report["concat_copies_removed"] == 5
    off = autofusion.compile(model, config=_write_config(tmp_path, False))
    assert off.report["concat_copies_removed"] == 0
    for name, r in ref.items():
        assert_close(off.run(feeds)[name], r, f"{name} (no concat in place)")


def _write_config(tmp_path: Path, concat_inplace: bool) -> str:
    path = tmp_path / "cfg.json"
    path.write_text(f'{{"concat_inplace": {str(concat_inplace).lower()}}}')
    return str(path)


def fire_model() -> onnx.ModelProto:
    """A small SqueezeNet: conv, three fire modules (squeeze, 1x1 and 3x3 expands joined
    by Concat), a max pool between, global average pool. ``input`` [1,4,32,32]."""
    nodes: list = []
    inits: list = []
    y = _conv(nodes, inits, "input", 4, 16, "stem", 3)
    c = 16
    for i, (sq, ex) in enumerate([(8, 16), (8, 16), (16, 32)]):
        if i == 2:
            nodes.append(
                helper.make_node(
                    "MaxPool", [y], ["pool"], name="pool", kernel_shape=[2, 2], strides=[2, 2]
                )
            )
            y = "pool"
        s = _conv(nodes, inits, y, c, sq, f"fire{i}/squeeze")
        e1 = _conv(nodes, inits, s, sq, ex, f"fire{i}/expand1x1")
        e3 = _conv(nodes, inits, s, sq, ex, f"fire{i}/expand3x3", 3)
        y = _concat(nodes, [e1, e3], f"fire{i}")
        c = 2 * ex
    nodes.append(helper.make_node("GlobalAveragePool", [y], ["y"], name="gap"))
    graph = helper.make_graph(
        nodes,
        "fire",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 4, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 1, 1])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    return model


def test_memory_limit_with_concat_in_place_matches_onnxruntime() -> None:
    """tile-fusion cuts fire modules into row tiles (each tile's channel concat is in place;
    the concat of the tiles along H is not contiguous and keeps its copy) and re-plans;
    the C still computes the model."""
    from autofusion.passes.tile_fusion import MIB

    model = fire_model()
    feeds = {"input": np.random.default_rng(1).standard_normal((1, 4, 32, 32), np.float32)}
    ref = onnxruntime_outputs(model, feeds)
    assert all(0.1 < np.abs(r).max() < 10 for r in ref.values())
    untiled = plan_memory(find_main(_fused(model))).arena_bytes
    limit = untiled * 0.5 / MIB
    compiled = autofusion.compile(model, memory_limit_mb=limit)
    assert compiled.report["arena_bytes"] <= limit * MIB
    assert compiled.report["concat_copies_removed"] > 0
    got = compiled.run(feeds)
    for name, r in ref.items():
        assert_close(got[name], r, f"{name} (memory limit {limit:.4f} MB)")


def _root_sizes_per_step(module: ModuleOp) -> int:
    """Independent lower bound: at each step, the bytes of the live tensors with every
    alias (reshape view, split piece, in-place concat operand, in-place elementwise result)
    counted once: a class of aliases (union-find) spans its members' planned bytes, live from
    its first member's definition to its last member's last read."""
    plan = plan_memory(find_main(module))
    parent: dict[object, object] = {}

    def root(v: object) -> object:
        while parent.get(v, v) is not v:
            v = parent[v]
        return v

    pairs = [*plan.views.items(), *((o, r) for o, (r, _) in plan.concat_aliases.items())]
    for a, b in [*pairs, *plan.inplace]:
        ra, rb = root(a), root(b)
        if ra is not rb:
            parent[ra] = rb

    span: dict[object, list[int]] = {}
    lo_hi: dict[object, list[int]] = {}
    for iv in plan.intervals:
        r = root(iv.value)
        lo, hi = span.get(r, [iv.start, iv.end])
        span[r] = [min(lo, iv.start), max(hi, iv.end)]
        at = plan.offsets[iv.value]
        b_lo, b_hi = lo_hi.get(r, [at, at + iv.size])
        lo_hi[r] = [min(b_lo, at), max(b_hi, at + iv.size)]
    size = {r: -(-(hi - lo) // plan.alignment) * plan.alignment for r, (lo, hi) in lo_hi.items()}
    steps = max(hi for _, hi in span.values()) + 1
    peak = max(sum(size[r] for r, (lo, hi) in span.items() if lo <= t <= hi) for t in range(steps))
    assert peak == plan.lower_bound_bytes
    return peak


@pytest.mark.parametrize(
    ("name", "removed", "copied"),
    [("squeezenet", 16, 0), ("inception", 12, 0), ("densenet121", 116, 0)],
)
def test_zoo_concats_in_place_and_lower_bound_counts_aliases_once(
    name: str, removed: int, copied: int
) -> None:
    """Every fire-module, Inception and dense-block concat operand that a conv kernel
    produces is aliased, and the lower bound counts each aliased byte once. Inception's
    1x1-branch pieces are views of ``merge-sibling-convs``' joined conv output, which the
    plan puts so that each lands on its concat slice (the other pieces just before it)."""
    module = _fused(zoo.get_model(name))
    plan = plan_memory(find_main(module))
    assert len(plan.concat_aliases) == removed
    refused = [
        v
        for concat, flags in plan.concat_inplace.items()
        for v, ok in zip(concat.owner.operands, flags, strict=True)  # type: ignore[union-attr]
        if not ok
    ]
    assert len(refused) == copied
    pieces = [v for v in plan.concat_aliases if v.owner.name == "nn.split"]  # type: ignore[union-attr]
    assert len(pieces) == (3 if name == "inception" else 0)
    for v in pieces:  # the joined output starts before its concat's result
        result, start = plan.concat_aliases[v]
        assert start == 0
        assert plan.offsets[v.owner.operands[0]] < plan.offsets[result]  # type: ignore[union-attr]
    assert check_plan(plan) == []
    assert plan.arena_bytes <= 1.05 * plan.lower_bound_bytes
    off = plan_memory(find_main(module), concat_inplace=False)
    assert off.concat_aliases == {}
    _root_sizes_per_step(module)


def test_a_concat_marked_in_place_with_its_operand_elsewhere_is_refused() -> None:
    """convert-nn-to-buffers checks the plan: an operand marked in place must sit at its
    slice, or the C would read garbage; it refuses instead."""
    from xdsl.context import Context

    from autofusion.dialects.base import i64_array
    from autofusion.lowering.c.convert_nn_to_buffers import ConvertNNToBuffers
    from autofusion.passes.plan_buffers import plan_module

    module = _fused(concat_model())
    plan_module(module)
    main = find_main(module)
    first = next(op for op in main.body.block.ops if op.name == "nn.concat")
    producer = first.operands[1].owner
    (offset,) = producer.attributes["memory.offsets"].get_values()  # type: ignore[union-attr]
    producer.attributes["memory.offsets"] = i64_array([int(offset) + 64])
    with pytest.raises(PassFailedException, match="marked in place but is not at its slice"):
        ConvertNNToBuffers().apply(Context(), module)


def test_a_limit_that_only_copies_meet_gives_the_aliasing_back_before_tiling() -> None:
    """Inception's in-place concats reserve each block's output early (arena 8% above the
    plan with copies). A limit between the two is met by copying the concats, not by
    tiling; without a limit, or with one the in-place plan meets, they stay in place."""
    from autofusion.passes.tile_fusion import MIB, apply_memory_limit

    model = zoo.get_model("inception")
    inplace = plan_memory(find_main(_fused(model)))
    copies = plan_memory(find_main(_fused(model)), concat_inplace=False)
    assert copies.arena_bytes < inplace.arena_bytes
    module = _fused(model)
    plan = apply_memory_limit(module, (copies.arena_bytes + inplace.arena_bytes) / 2 / MIB)
    assert plan.arena_bytes == copies.arena_bytes
    assert plan.concat_aliases == {}
    assert "memory.tile" not in str(module)
    module = _fused(model)
    plan = apply_memory_limit(module, inplace.arena_bytes / MIB)
    assert plan.arena_bytes == inplace.arena_bytes
    assert len(plan.concat_aliases) == 12  # 3 of them merge-sibling-convs pieces


def dense_block_model(layers: int = 8, newest_first: bool = False) -> onnx.ModelProto:
    """torchvision's DenseNet block: layer k concatenates *every* earlier feature map again
    (``Concat(f0, ..., f_{k-1})``, not a chain of two-operand concats), then a 1x1 and a
    3x3 conv (with Relu) give its 8 new channels; odd sizes (13x11). ``canonicalize-nn``
    makes each concat the previous one plus the new map (a chain, all in place). With
    ``newest_first`` the maps go in reverse order (``Concat(f_{k-1}, ..., f0)``): no concat
    is a prefix of the next, each map feeds every later concat and is in place only in the
    first, so the in-place plan keeps those big first slots alive and copies anyway.
    ``input`` [1,3,13,11]."""
    nodes: list = []
    inits: list = []
    feats = [_conv(nodes, inits, "input", 3, 8, "stem", 3)]
    for k in range(1, layers + 1):
        cat = _concat(nodes, feats[::-1] if newest_first else list(feats), f"cat{k}")
        mid = _conv(nodes, inits, cat, 8 * k, 16, f"l{k}/conv1")
        feats.append(_conv(nodes, inits, mid, 16, 8, f"l{k}/conv2", 3))
    out = _concat(nodes, feats[::-1] if newest_first else list(feats), "cat_out")
    nodes.append(helper.make_node("GlobalAveragePool", [out], ["y"], name="gap"))
    graph = helper.make_graph(
        nodes,
        "dense_block",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 13, 11])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8 * (layers + 1), 1, 1])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    return model


def test_the_concat_plan_is_chosen_per_model_by_the_arena_ratio() -> None:
    """plan-buffers' default: copies where the in-place arena is over
    CONCAT_COPIES_ARENA_RATIO times theirs (the dense block with its maps newest first), in
    place elsewhere (the same block oldest first, a chain after canonicalize-nn; the
    concat cases; the fire modules), recorded on ``@main``."""
    from autofusion.analysis.memory_plan import (
        CONCAT_COPIES_ARENA_RATIO,
        plan_memory_choosing_concats,
    )
    from autofusion.passes.plan_buffers import plan_module

    for model, expect in [
        (dense_block_model(newest_first=True), "copies"),
        (dense_block_model(), "in-place"),
        (concat_model(), "in-place"),
        (fire_model(), "in-place"),
    ]:
        main = find_main(_fused(model))
        placed = plan_memory(main)
        copies = plan_memory(main, concat_inplace=False)
        ratio = placed.arena_bytes / copies.arena_bytes
        assert (ratio > CONCAT_COPIES_ARENA_RATIO) == (expect == "copies"), ratio
        chosen = plan_memory_choosing_concats(main)
        assert chosen.concat_plan == expect
        assert chosen.arena_bytes == (copies if expect == "copies" else placed).arena_bytes
        assert check_plan(chosen) == []
        module = _fused(model)
        plan_module(module, concat_auto=True)
        assert str(find_main(module).attributes["memory.concat_plan"]) == f'"{expect}"'
        plan_module(module)  # concat_auto off (the function's default): always in place
        assert "memory.concat_plan" not in find_main(module).attributes


def test_a_concat_of_an_earlier_concats_operands_becomes_a_chain() -> None:
    """canonicalize-nn: every layer's concat of the dense block (oldest first) reads the
    previous layer's concat plus one map, so every operand is written in place; newest
    first, no concat is a prefix of another and they stay flat."""
    chain = [op for op in find_main(_fused(dense_block_model())).body.block.ops
             if op.name == "nn.concat"]  # fmt: skip
    assert [len(op.operands) for op in chain] == [2] * 8  # layer 1's one-map concat is no op
    assert all(op.operands[0].owner is prev for prev, op in itertools.pairwise(chain))
    flat = [op for op in find_main(_fused(dense_block_model(newest_first=True))).body.block.ops
            if op.name == "nn.concat"]  # fmt: skip
    assert [len(op.operands) for op in flat] == list(range(2, 10))


@pytest.mark.parametrize(
    ("cpu", "threads", "newest_first"),
    [("native", 1, True), ("native", 2, False), ("x86-64-v2", 3, True), ("x86-64-v2", 2, False)],
)
def test_dense_blocks_match_onnxruntime(cpu: str, threads: int, newest_first: bool) -> None:
    """Newest first, the chosen copies plan; oldest first, the chain with every concat in
    place: both compute the block; the report names the choice."""
    feeds = {"input": np.random.default_rng(2).standard_normal((1, 3, 13, 11), np.float32)}
    plan = "copies" if newest_first else "in-place"
    model = dense_block_model(newest_first=newest_first)
    ref = onnxruntime_outputs(model, feeds)
    assert all(0.1 < np.abs(r).max() < 10 for r in ref.values())
    compiled = autofusion.compile(model, threads=threads, cpu=cpu)
    assert compiled.report["concat_plan"] == plan
    assert (compiled.report["concat_copies_removed"] == 0) == (plan == "copies")
    assert_close(compiled.run(feeds)["y"], ref["y"], f"y ({plan}, {cpu}, {threads} threads)")


@pytest.mark.parametrize("kept_last", [True, False])
def test_a_split_piece_brings_its_sibling_piece_outside_the_concat(kept_last: bool) -> None:
    """ShuffleNet-V2's unit: ``x`` (a conv's output) split in two channel halves; one half
    kept, the other through two convs; the two concatenated. With the kept half (the first
    piece) last in the Concat, the plan moves ``x``'s whole buffer so that half lands on its
    slice and the other half sits just after the Concat's bytes: no copy. With it first
    (ShuffleNet's own order) the other half would sit inside the slice the branch writes,
    so it is copied. onnxruntime's outputs either way."""
    nodes: list = []
    inits: list = []
    x = _conv(nodes, inits, "input", 8, 32, "stem", 3)
    nodes.append(helper.make_node("Split", [x], ["keep", "rest"], name="split", axis=1,
                                  num_outputs=2))  # fmt: skip
    b = _conv(nodes, inits, "rest", 16, 16, "branch_a")
    b = _conv(nodes, inits, b, 16, 16, "branch_b", 3)
    y = _concat(nodes, [b, "keep"] if kept_last else ["keep", b], "cat")
    out = _conv(nodes, inits, y, 32, 8, "head")
    graph = helper.make_graph(
        nodes,
        "shuffle_unit",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 8, 12, 12])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, 8, 12, 12])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(model, full_check=True)
    plan = plan_memory(find_main(_fused(model)))
    assert check_plan(plan) == []
    pieces = [v for v in plan.concat_aliases if v.owner.name == "nn.split"]  # type: ignore[union-attr]
    assert len(pieces) == (1 if kept_last else 0)
    (flags,) = plan.concat_inplace.values()
    assert flags == ([True, True] if kept_last else [False, True])
    feeds = {"input": np.random.default_rng(7).standard_normal((1, 8, 12, 12), np.float32)}
    ref = onnxruntime_outputs(model, feeds)
    assert all(0.1 < np.abs(r).max() < 10 for r in ref.values())
    compiled = autofusion.compile(model, cache=False, threads=1)
    try:
        assert compiled.report["concat_copies_removed"] == (2 if kept_last else 1)
        got = compiled.run(feeds)
        for name, r in ref.items():
            assert_close(got[name], r, name)
    finally:
        compiled.close()
