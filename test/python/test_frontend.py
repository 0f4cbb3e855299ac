"""ONNX importer: numerics against onnxruntime (through the reference interpreter), shape
folding, IR-version-3 initializer inputs, external data, progress and the zoo models."""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr

from autofusion.dialects import dtypes
from autofusion.dialects.nn import ConstantOp
from autofusion.frontend import import_onnx, import_onnx_bytes
from autofusion.interpreter import run_module
from autofusion.testing import assert_close

INPUTS = Path(__file__).resolve().parents[1] / "filecheck" / "frontend" / "inputs"
sys.path.insert(0, str(INPUTS))
from make_model import MODELS  # noqa: E402

RUNNABLE = [
    "conv_bn_relu_v3",
    "auto_pad",
    "shape_subgraph",
    "reduce_axes",
    "slices",
    "softmax_v11",
    "attention_mask",
    "ops_opset9",
    "ops_opset11",
    "ops_opset18",
    "ops_extra",
    "folding",
]


def _feeds(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    inits = {t.name for t in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value for d in tt.shape.dim]
        if tt.elem_type == onnx.TensorProto.INT64:
            lo, hi = (1, 7) if vi.name in ("iy",) else (-5, 7) if vi.name == "ix" else (0, 2)
            if vi.name == "ids":
                lo, hi = 0, 50
            feeds[vi.name] = rng.integers(lo, hi, size=shape).astype(np.int64)
        elif vi.name == "pos":
            feeds[vi.name] = rng.uniform(0.1, 3.0, size=shape).astype(np.float32)
        else:
            feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def _ops(module: ModuleOp) -> Counter[str]:
    main = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    return Counter(op.name for op in main.body.block.ops)


@pytest.mark.parametrize("name", RUNNABLE)
def test_small_model_matches_onnxruntime(name: str) -> None:
    model = MODELS[name]()
    module = import_onnx(model, progress=False)
    feeds = _feeds(model)
    ref = _ort(model, feeds)
    got = run_module(module, feeds)
    assert set(got) == set(ref)
    for out, r in ref.items():
        assert_close(np.asarray(got[out]), r, f"{name}:{out}")


def test_every_op_has_origins_and_io_names() -> None:
    model = MODELS["ops_opset11"]()
    module = import_onnx(model, progress=False)
    main = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    for op in main.body.block.ops:
        if isinstance(op, func.ReturnOp):
            continue
        origins = op.attributes.get("onnx.origins")
        assert isinstance(origins, ArrayAttr), op.name
        assert origins.data, op.name
    assert main.arg_attrs is not None
    assert main.res_attrs is not None
    arg_names = [d.data["onnx.name"] for d in main.arg_attrs.data]
    res_names = [d.data["onnx.name"] for d in main.res_attrs.data]
    assert arg_names == [StringAttr("x"), StringAttr("pos")]
    assert res_names == [StringAttr(o.name) for o in model.graph.output]


def test_shape_subgraph_folds_away() -> None:
    module = import_onnx(MODELS["shape_subgraph"](), progress=False)
    assert _ops(module) == Counter(
        {"nn.reshape": 1, "nn.constant": 1, "nn.add": 1, "func.return": 1}
    )


def test_folding_leaves_only_constants() -> None:
    """Every node of the model folds; the folded values match onnxruntime (checked by
    test_small_model_matches_onnxruntime[folding]), and CumSum (no converter) folds through
    onnx.reference."""
    module = import_onnx(MODELS["folding"](), progress=False)
    ops = _ops(module)
    assert set(ops) == {"nn.constant", "func.return"}
    origins = {
        op.attributes["onnx.origins"].data[0].data
        for op in module.walk()
        if isinstance(op, ConstantOp)
    }
    assert "cumsum_reference" in origins


def test_identity_dropout_noop_cast_disappear() -> None:
    module = import_onnx(MODELS["ops_opset11"](), progress=False)
    origins = {
        op.attributes["onnx.origins"].data[0].data
        for op in module.walk()
        if "onnx.origins" in op.attributes
    }
    assert not origins & {"dropout", "identity", "cast_noop"}


def test_ir_version3_initializer_inputs_are_constants() -> None:
    model = MODELS["conv_bn_relu_v3"]()
    assert model.ir_version == 3
    assert len(model.graph.input) == 8
    module = import_onnx(model, progress=False)
    main = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    assert len(main.body.block.args) == 1
    assert main.arg_attrs is not None
    assert main.arg_attrs.data[0].data["onnx.name"] == StringAttr("data")


def test_run_time_mask_is_not_folded() -> None:
    ops = _ops(import_onnx(MODELS["attention_mask"](), progress=False))
    for name in ("nn.cast", "nn.not", "nn.equal", "nn.or", "nn.expand", "nn.where", "nn.gather"):
        assert ops[name] == 1, name


def test_model_proto_is_not_mutated() -> None:
    model = MODELS["conv_bn_relu_v3"]()
    before = model.SerializeToString()
    import_onnx(model, progress=False)
    assert model.SerializeToString() == before


def _constant_values(module: ModuleOp) -> dict[str, np.ndarray]:
    return {
        op.attributes["onnx.origins"].data[0].data: dtypes.numpy_from_dense(op.value)
        for op in module.walk()
        if isinstance(op, ConstantOp)
    }


def test_external_data(tmp_path: Path) -> None:
    model = MODELS["conv_bn_relu_v3"]()
    model.ir_version = 8  # external data needs IR >= 4
    weights = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    path = tmp_path / "model.onnx"
    onnx.save(
        model,
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="model.onnx.data",
        size_threshold=0,
    )
    assert (tmp_path / "model.onnx.data").stat().st_size > 0
    stored = onnx.load(str(path), load_external_data=False)
    assert all(t.data_location == onnx.TensorProto.EXTERNAL for t in stored.graph.initializer)

    for module in (
        import_onnx(path, progress=False),
        import_onnx_bytes(path.read_bytes(), str(path), progress=False),
    ):
        values = _constant_values(module)
        for name in ("w", "w2", "scale", "var"):
            np.testing.assert_array_equal(values[name], weights[name])
        feeds = _feeds(model)
        ref = _ort(MODELS["conv_bn_relu_v3"](), feeds)
        assert_close(run_module(module, feeds)["prob"], ref["prob"], "prob")


def test_external_data_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    from autofusion.errors import AutofusionError

    model = MODELS["conv_bn_relu_v3"]()
    model.ir_version = 8
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path), save_as_external_data=True, location="w.data", size_threshold=0)
    (tmp_path / "w.data").unlink()
    with pytest.raises(AutofusionError, match=r"model\.onnx: cannot load external weight"):
        import_onnx(path, progress=False)


def test_progress_lines(capsys: pytest.CaptureFixture[str]) -> None:
    model = MODELS["ops_opset11"]()
    import_onnx(model, progress=True)
    err = capsys.readouterr().err
    n = len(model.graph.node)
    assert f"importing: {n}/{n} nodes" in err
    assert "importing: done in" in err
    import_onnx(model, progress=False)
    import_onnx(model)  # small model, stderr is not a terminal: silent
    assert capsys.readouterr().err == ""


def _zoo_names() -> list[str]:
    from autofusion import zoo

    return [n for n in zoo.list_models() if n != "bert_large"]


@pytest.mark.parametrize("name", _zoo_names())
def test_zoo_model_imports(name: str) -> None:
    from autofusion import zoo

    model = zoo.get_model(name)
    module = import_onnx(model, progress=False)
    module.verify()
    main = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    inits = {t.name for t in model.graph.initializer}
    assert main.arg_attrs is not None
    assert [d.data["onnx.name"].data for d in main.arg_attrs.data] == [
        i.name for i in model.graph.input if i.name not in inits
    ]
    assert len(main.function_type.outputs.data) == len(model.graph.output)


@pytest.mark.slow
def test_bert_large_import_time() -> None:
    """Imports the 1.3 GB BERT-large-like zoo model (figure printed, never asserted)."""
    from autofusion import zoo

    model = zoo.build_model("bert_large")
    weight_mb = sum(t.ByteSize() for t in model.graph.initializer) / 2**20
    start = time.perf_counter()
    module = import_onnx(model, progress=False)
    seconds = time.perf_counter() - start
    print(
        f"\nbert_large: {weight_mb:.0f} MB of weights, {len(model.graph.node)} nodes, "
        f"imported in {seconds:.1f} s"
    )
    main = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    assert len(main.function_type.outputs.data) == len(model.graph.output)
    const_bytes = sum(len(op.value.data.data) for op in module.walk() if isinstance(op, ConstantOp))
    assert const_bytes >= 0.99 * weight_mb * 2**20


def test_input_shapes_fix_dynamic_dims() -> None:
    from autofusion.errors import AutofusionError

    model = MODELS["dynamic_input"]()
    module = import_onnx(model, progress=False, input_shapes={"x": [3, 4]})
    main = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    assert str(main.function_type) == "(tensor<3x4xf32>) -> tensor<3x4xf32>"
    with pytest.raises(
        AutofusionError,
        match=r"input_shapes gives \[3, 5\] for graph input "
        r"'x', which is declared \['batch', 4\]",
    ):
        import_onnx(model, progress=False, input_shapes={"x": [3, 5]})
    with pytest.raises(AutofusionError, match="input_shapes names y, which are not graph"):
        import_onnx(model, progress=False, input_shapes={"y": [1]})


def test_progress_on_big_models_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """More than 500 nodes: silent by default off a terminal, shown with
    AUTOFUSION_PROGRESS=1 (what the CLI honours too)."""
    from onnx import helper as h

    nodes = [h.make_node("Relu", [f"v{i}"], [f"v{i + 1}"], name=f"r{i}") for i in range(600)]
    g = h.make_graph(
        nodes,
        "chain",
        [h.make_tensor_value_info("v0", onnx.TensorProto.FLOAT, [4])],
        [h.make_tensor_value_info("v600", onnx.TensorProto.FLOAT, None)],
    )
    path = tmp_path / "chain.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), str(path))
    monkeypatch.delenv("AUTOFUSION_PROGRESS", raising=False)
    import_onnx(path)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("AUTOFUSION_PROGRESS", "1")
    import_onnx(path)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("importing: 0.0 MB of weights, 600 nodes")
    assert "importing: 60/600 nodes" in err
    assert "importing: 600/600 nodes" in err
    assert err[-1].startswith("importing: done in")


@pytest.mark.parametrize("mb", [0.3, 17])
def test_weights_cut_out_before_parsing_match(tmp_path: Path, mb: float) -> None:
    """Large raw_data fields are cut out of the buffer (and, for files of 16 MB or more,
    read from a memory map) before protobuf parsing; the constants are byte-identical to
    an import of the parsed ModelProto, for paths and for bytes."""
    from onnx import helper as h
    from onnx import numpy_helper as nh

    rng = np.random.default_rng(1)
    n = int(mb * 2**20 / 4)
    big = nh.from_array(rng.standard_normal(n).astype(np.float32), "big")
    small = nh.from_array(np.arange(6, dtype=np.int64), "small")
    half = nh.from_array(rng.standard_normal(70000).astype(np.float16), "half")
    nodes = [
        h.make_node("Mul", ["x", "big"], ["y"], name="mul"),
        h.make_node("Add", ["i", "small"], ["z"], name="add"),
        h.make_node("Add", ["hx", "half"], ["w"], name="add_half"),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [
            h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [n]),
            h.make_tensor_value_info("i", onnx.TensorProto.INT64, [6]),
            h.make_tensor_value_info("hx", onnx.TensorProto.FLOAT16, [70000]),
        ],
        [h.make_tensor_value_info(o, 0, None) for o in "yzw"],
        [big, small, half],
    )
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    from autofusion.frontend.wire import split_weights

    cut = split_weights(path.read_bytes())
    assert cut is not None
    assert cut[1][0] is not None
    assert cut[1][1] is None
    ref = _constant_values(import_onnx(model, progress=False))
    for module in (
        import_onnx(path, progress=False),
        import_onnx_bytes(path.read_bytes(), str(path), progress=False),
    ):
        got = _constant_values(module)
        assert set(got) == set(ref) == {"big", "small", "half"}
        for k in ref:
            assert got[k].dtype == ref[k].dtype, k
            assert got[k].tobytes() == ref[k].tobytes(), k


LIGHT_ZOO = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


@pytest.mark.parametrize("path", sorted(LIGHT_ZOO.glob("light_*.onnx")), ids=lambda p: p.stem)
def test_onnx_model_zoo_light_cnns(path: Path) -> None:
    """The classic model-zoo CNNs shipped with onnx (opset 9, IR version 3, initializers
    as inputs, weights made by ConstantOfShape, which become splat constants) import; the
    three cheapest to interpret are compared with onnxruntime."""
    model = onnx.load(str(path))
    module = import_onnx(model, progress=False)
    stored = sum(len(op.value.data.data) for op in module.walk() if isinstance(op, ConstantOp))
    assert stored < 4 * 2**20  # splats, not e.g. VGG-19's 548 MB of filled weights
    if path.stem not in ("light_shufflenet", "light_squeezenet", "light_bvlc_alexnet"):
        return
    feeds = _feeds(model)
    ref = _ort(model, feeds)
    got = run_module(module, feeds)
    for name, r in ref.items():
        assert_close(np.asarray(got[name]), r, f"{path.stem}:{name}")


def test_sparse_initializer_and_sparse_constant() -> None:
    from onnx import helper as h

    values = onnx.numpy_helper.from_array(np.array([1.5, -2.0], np.float32), "sw")
    indices = onnx.numpy_helper.from_array(np.array([1, 5], np.int64), "sw_idx")
    sparse = h.make_sparse_tensor(values, indices, [2, 3])
    cvals = onnx.numpy_helper.from_array(np.array([4.0], np.float32), "cv")
    cidx = onnx.numpy_helper.from_array(np.array([[0, 2]], np.int64), "ci")
    nodes = [
        h.make_node(
            "Constant",
            [],
            ["c"],
            name="sparse_const",
            sparse_value=h.make_sparse_tensor(cvals, cidx, [2, 3]),
        ),
        h.make_node("Add", ["x", "sw"], ["t"], name="add"),
        h.make_node("Mul", ["t", "c"], ["y"], name="mul"),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3])],
        [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        sparse_initializer=[sparse],
    )
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    module = import_onnx(model, progress=False)
    values = _constant_values(module)
    np.testing.assert_array_equal(values["sw"], [[0, 1.5, 0], [0, 0, -2.0]])
    np.testing.assert_array_equal(values["sparse_const"], [[0, 0, 4.0], [0, 0, 0]])
    feeds = _feeds(model)
    assert_close(run_module(module, feeds)["y"], _ort(model, feeds)["y"], "y")
