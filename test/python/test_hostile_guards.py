"""Hostile run-time data for the generated C: out-of-range indices and unusual feeds.

Gather / GatherElements / GatherND read their indices at run time. ONNX allows
``[-dim, dim-1]`` (negative wraps); anything else must make ``run()`` raise one clear
``AutofusionError`` naming the ONNX node, the index and the valid range (onnxruntime refuses
too), never read memory beside the data, and leave the model usable: the next valid run gives
onnxruntime's results. Feeds in non-native byte order, Fortran order, strided views and
read-only arrays are accepted as their values.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hostile import assert_clean_api_error
from onnx import TensorProto, helper, numpy_helper

from autofusion.errors import AutofusionError
from autofusion.lowering.c.testing import assert_close, build, compile_onnx, onnxruntime_outputs
from autofusion.runtime.loader import ModelLibrary

F, I32, I64 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64
RNG = np.random.default_rng(11)


def _graph_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Sequence[tuple[str, list[int], int]],
    outputs: Sequence[str],
    inits: dict[str, np.ndarray],
) -> onnx.ModelProto:
    g = helper.make_graph(
        list(nodes), "guards",
        [helper.make_tensor_value_info(n, t, s) for n, s, t in inputs],
        [helper.make_tensor_value_info(n, F, None) for n in outputs],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()],
    )  # fmt: skip
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _load(model: onnx.ModelProto, work: Path, threads: int = 1,
          fuse: Sequence[str] = ()) -> ModelLibrary:  # fmt: skip
    """Import, run the tensor pipeline (or outline the nodes ``fuse`` into one kernel),
    build and load."""
    module = compile_onnx(model, fusion=not fuse)
    if fuse:
        from autofusion.passes.fuse import main_funcs, outline

        block = main_funcs(module)[0].body.block
        ops = [o for o in block.ops
               if any(a.data in fuse
                      for a in getattr(o.attributes.get("onnx.origins"), "data", ()))]  # fmt: skip
        assert len(ops) == len(fuse), [o.name for o in ops]
        outline(block, [(ops, set(), "gather_add")])
    return ModelLibrary(build(module, work), work / "weights.bin", threads)


def _ort_refuses(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    """onnxruntime also rejects the feed (so refusing it is the reference behaviour)."""
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with pytest.raises(Exception):  # noqa: PT011 - ORT raises its own exception types
        sess.run(None, feeds)


def _check_good_run(lib: ModelLibrary, model: onnx.ModelProto,
                    feeds: dict[str, np.ndarray]) -> None:  # fmt: skip
    ref = onnxruntime_outputs(model, feeds)
    got = lib.run(feeds)
    for name, r in ref.items():
        assert 0.1 <= float(np.abs(r).max()) <= 10, "test output of ordinary size"
        assert_close(got[name], r, name)


# ---- Gather (embedding, axis 0; and axis 1) ------------------------------------------


V, D = 50, 16
TABLE = RNG.standard_normal((V, D)).astype(np.float32)
BIAS = RNG.standard_normal((D,)).astype(np.float32)


def _embedding(idx_type: int) -> onnx.ModelProto:
    nodes = [helper.make_node("Gather", ["table", "ids"], ["g"], name="emb", axis=0),
             helper.make_node("Add", ["g", "bias"], ["y"], name="add_bias")]  # fmt: skip
    return _graph_model(nodes, [("ids", [2, 3], idx_type)], ["y"], {"table": TABLE, "bias": BIAS})


@pytest.fixture(scope="module", params=[I64, I32], ids=["int64", "int32"])
def embedding(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ModelLibrary, onnx.ModelProto, type]]:
    model = _embedding(request.param)
    lib = _load(model, tmp_path_factory.mktemp("emb"))
    yield lib, model, np.int64 if request.param == I64 else np.int32
    lib.close()


@pytest.mark.parametrize("bad", [V, V + 1, -V - 1, 1 << 30, -(1 << 31)])
def test_gather_out_of_range_index_is_refused(embedding, bad: int) -> None:
    lib, model, dt = embedding
    ids = np.array([[1, 2, 3], [4, bad, 6]], dtype=dt)
    _ort_refuses(model, {"ids": ids})
    with pytest.raises(AutofusionError) as ei:
        lib.run({"ids": ids})
    assert_clean_api_error(ei, "Gather node 'emb'", f"index {bad} ", f"[-{V}, {V - 1}]")
    # the model stays usable: a valid run right after gives onnxruntime's result
    _check_good_run(lib, model, {"ids": np.array([[0, V - 1, -1], [-V, 7, -3]], dtype=dt)})


def test_gather_negative_indices_match_onnxruntime(embedding) -> None:
    lib, model, dt = embedding
    _check_good_run(lib, model, {"ids": np.array([[-1, -V, -2], [0, -25, V - 1]], dtype=dt)})


def test_gather_axis1_out_of_range(tmp_path: Path) -> None:
    data = RNG.standard_normal((3, 7, 5)).astype(np.float32)
    node = helper.make_node("Gather", ["data", "idx"], ["y"], name="pick_cols", axis=1)
    model = _graph_model([node], [("idx", [4], I64)], ["y"], {"data": data})
    lib = _load(model, tmp_path)
    for bad in (7, -8):
        with pytest.raises(AutofusionError) as ei:
            lib.run({"idx": np.array([0, bad, 1, 2], dtype=np.int64)})
        assert_clean_api_error(ei, "Gather node 'pick_cols'", "axis 1", f"index {bad} ",
                               "[-7, 6]")  # fmt: skip
    _check_good_run(lib, model, {"idx": np.array([-7, 6, -1, 3], dtype=np.int64)})
    lib.close()


def test_fused_gather_add_out_of_range(tmp_path: Path) -> None:
    """Gather and its Add in one kernel function: the guard sits inside the fused kernel."""
    model = _embedding(I64)
    lib = _load(model, tmp_path, fuse=("emb", "add_bias"))
    text = (tmp_path / "model.c").read_text()
    assert "gather_add" in text
    assert "af_guard_(" in text
    with pytest.raises(AutofusionError) as ei:
        lib.run({"ids": np.array([[0, 1, 2], [3, 4, V]], dtype=np.int64)})
    assert_clean_api_error(ei, "Gather node 'emb'", f"index {V} ", f"[-{V}, {V - 1}]")
    _check_good_run(lib, model, {"ids": np.array([[0, -1, 2], [3, 4, V - 1]], dtype=np.int64)})
    lib.close()


def test_parallel_gather_out_of_range_two_threads(tmp_path: Path) -> None:
    """A gather big enough for an OpenMP loop: the fault is recorded from a worker thread."""
    table = RNG.standard_normal((1000, 64)).astype(np.float32)
    node = helper.make_node("Gather", ["table", "ids"], ["y"], name="big_emb", axis=0)
    model = _graph_model([node], [("ids", [8, 128], I64)], ["y"], {"table": table})
    lib = _load(model, tmp_path, threads=2)
    assert (
        "AFRT_OMP(parallel num_threads(afrt_threads_now()))" in (tmp_path / "model.c").read_text()
    )
    ids = RNG.integers(-1000, 1000, (8, 128)).astype(np.int64)
    bad = ids.copy()
    bad[7, 127] = 1000
    with pytest.raises(AutofusionError) as ei:
        lib.run({"ids": bad})
    assert_clean_api_error(ei, "Gather node 'big_emb'", "index 1000 ", "[-1000, 999]")
    _check_good_run(lib, model, {"ids": ids})
    lib.close()


# ---- GatherElements, GatherND -------------------------------------------------------


def test_gather_elements_out_of_range(tmp_path: Path) -> None:
    data = RNG.standard_normal((4, 6)).astype(np.float32)
    node = helper.make_node("GatherElements", ["data", "idx"], ["y"], name="ge", axis=1)
    model = _graph_model([node], [("idx", [4, 3], I32)], ["y"], {"data": data})
    lib = _load(model, tmp_path)
    good = np.array([[0, -1, 5], [-6, 2, 3], [1, 1, -2], [4, 0, -3]], dtype=np.int32)
    for bad in (6, -7):
        idx = good.copy()
        idx[2, 1] = bad
        _ort_refuses(model, {"idx": idx})
        with pytest.raises(AutofusionError) as ei:
            lib.run({"idx": idx})
        assert_clean_api_error(ei, "GatherElements node 'ge'", f"index {bad} ", "[-6, 5]")
    _check_good_run(lib, model, {"idx": good})
    lib.close()


def test_gather_nd_out_of_range(tmp_path: Path) -> None:
    data = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    node = helper.make_node("GatherND", ["data", "idx"], ["y"], name="gnd")
    model = _graph_model([node], [("idx", [2, 2], I64)], ["y"], {"data": data})
    lib = _load(model, tmp_path)
    # the second component indexes dim 1 (size 4)
    for idx, needle in (([[0, 1], [2, 4]], "[-4, 3]"), ([[-4, 0], [1, 1]], "[-3, 2]")):
        arr = np.array(idx, dtype=np.int64)
        _ort_refuses(model, {"idx": arr})
        with pytest.raises(AutofusionError) as ei:
            lib.run({"idx": arr})
        assert_clean_api_error(ei, "GatherND node 'gnd'", needle)
    _check_good_run(lib, model, {"idx": np.array([[-1, -4], [2, 3]], dtype=np.int64)})
    lib.close()


def test_sanitized_driver_out_of_range_reads_nothing_outside(tmp_path: Path) -> None:
    """Under ASan+UBSan the refused run reports the bad index and no invalid access."""
    from autofusion.lowering.c.testing import emit_lowered
    from autofusion.runtime import build as rbuild

    model = _embedding(I64)
    emit_lowered(compile_onnx(model), tmp_path)
    exe = rbuild.build_sanitizer_driver(tmp_path)
    bad = np.array([[1, 2, 3], [4, 5, 1 << 20]], dtype=np.int64)
    with pytest.raises(AutofusionError) as ei:
        rbuild.run_driver(exe, tmp_path / "weights.bin", [bad], [((2, 3, D), np.float32)],
                          tmp_path / "io")  # fmt: skip
    report = str(ei.value)
    assert "af_run: Gather node 'emb'" in report, report
    assert "index 1048576 " in report, report
    assert "Sanitizer" not in report, report
    assert "runtime error:" not in report, report


# ---- feeds: byte order, layout, read-only --------------------------------------------


@pytest.fixture(scope="module")
def affine(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[ModelLibrary, onnx.ModelProto]]:
    """y = x * w + Gather(table, ids): one float and one int64 input."""
    w = RNG.standard_normal((3, 4)).astype(np.float32)
    table = RNG.standard_normal((10, 4)).astype(np.float32)
    nodes = [helper.make_node("Mul", ["x", "w"], ["xw"], name="mul"),
             helper.make_node("Gather", ["table", "ids"], ["g"], name="emb2", axis=0),
             helper.make_node("Add", ["xw", "g"], ["y"], name="add")]  # fmt: skip
    model = _graph_model(nodes, [("x", [3, 4], F), ("ids", [3], I64)], ["y"],
                         {"w": w, "table": table})  # fmt: skip
    lib = _load(model, tmp_path_factory.mktemp("affine"))
    yield lib, model
    lib.close()


def _feeds() -> dict[str, np.ndarray]:
    return {"x": RNG.standard_normal((3, 4)).astype(np.float32),
            "ids": np.array([9, -1, 3], dtype=np.int64)}  # fmt: skip


def test_big_endian_feeds_are_accepted(affine) -> None:
    lib, model = affine
    feeds = _feeds()
    swapped = {k: v.astype(v.dtype.newbyteorder(">" if np.little_endian else "<"))
               for k, v in feeds.items()}  # fmt: skip
    assert all(not v.dtype.isnative for v in swapped.values())
    before = {k: v.copy() for k, v in swapped.items()}
    ref = onnxruntime_outputs(model, feeds)
    assert_close(lib.run(swapped)["y"], ref["y"], "y")
    for k, v in swapped.items():  # the caller's arrays are left as they were
        assert v.dtype == before[k].dtype
        assert np.array_equal(v, before[k])


def test_fortran_strided_and_readonly_feeds(affine) -> None:
    lib, model = affine
    feeds = _feeds()
    ref = onnxruntime_outputs(model, feeds)["y"]
    fortran = np.asfortranarray(feeds["x"])
    assert not fortran.flags.c_contiguous
    strided_x = np.zeros((6, 8), np.float32)
    strided_x[::2, ::2] = feeds["x"]
    strided_ids = np.zeros(6, np.int64)
    strided_ids[::2] = feeds["ids"]
    readonly = {k: v.copy() for k, v in feeds.items()}
    for v in readonly.values():
        v.setflags(write=False)
    broadcast = np.broadcast_to(feeds["x"][:1], (3, 4))  # read-only, zero stride
    ref_b = onnxruntime_outputs(model, {**feeds, "x": np.ascontiguousarray(broadcast)})["y"]
    assert_close(lib.run({**feeds, "x": fortran})["y"], ref, "fortran x")
    assert_close(lib.run({"x": strided_x[::2, ::2], "ids": strided_ids[::2]})["y"], ref,
                 "strided")  # fmt: skip
    assert_close(lib.run(readonly)["y"], ref, "read-only")
    assert_close(lib.run({**feeds, "x": broadcast})["y"], ref_b, "broadcast view")


def test_dtype_mismatch_names_the_byte_order(affine) -> None:
    lib, _ = affine
    feeds = _feeds()
    other = ">" if np.little_endian else "<"
    with pytest.raises(AutofusionError) as ei:
        lib.run({**feeds, "x": feeds["x"].astype(np.dtype(np.float64).newbyteorder(other))})
    msg = assert_clean_api_error(ei, "input 'x'", "expected dtype float32", "got float64 (")
    assert "-endian)" in msg
    with pytest.raises(AutofusionError) as ei:
        lib.run({**feeds, "ids": feeds["ids"].astype(np.int32)})
    assert_clean_api_error(ei, "input 'ids'", "expected dtype int64, got int32")


# ---- Ascend C: a constant Gather index is a fixed offset, checked at compile time -----


@pytest.mark.parametrize(("k", "lowered_to_npu"), [(7, False), (-8, False), (-7, True), (6, True)])
def test_ascendc_constant_gather_index_out_of_range_is_not_lowered(
    k: int, lowered_to_npu: bool
) -> None:
    from xdsl.context import Context
    from xdsl.dialects import get_all_dialects as xdsl_dialects
    from xdsl.parser import Parser

    from autofusion.dialects import ascendc as ac
    from autofusion.dialects import get_all_dialects
    from autofusion.lowering.ascendc.lower import LowerFusionToAscendC

    ctx = Context()
    for name, factory in [*xdsl_dialects().items(), *get_all_dialects().items()]:
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, factory)
    text = f"""
    func.func @main(%c: tensor<2x7x5xf32>) -> tensor<2x5xf32> {{
      %i = nn.constant dense<{k}> : tensor<i64>
      %0 = nn.gather %c, %i {{axis = 1 : i64}} : (tensor<2x7x5xf32>, tensor<i64>) -> tensor<2x5xf32>
      func.return %0 : tensor<2x5xf32>
    }}"""
    module = Parser(ctx, text).parse_module()
    LowerFusionToAscendC().apply(ctx, module)
    kernels = [o for o in module.walk() if isinstance(o, ac.KernelOp)]
    # out of range: no NPU kernel reading at a fixed offset outside the data; the gather
    # stays on the host path (the C target's run-time guard, or the interpreter)
    assert bool(kernels) == lowered_to_npu
