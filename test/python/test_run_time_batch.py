"""Run-time batch (docs/dynamic.md): one library serves every batch in a symbol's range.

The dynamic-batch exports (CNNs with ``input[batch, 3, 32, 32]``; BERT and GPT-2 from both
torch exporters with ``[batch, seq]``, seq fixed by a one-size range) compile once and match
onnxruntime at several batches; graphs that mix samples are refused with the node named;
out-of-range and disagreeing batches are clear errors; the C entry point runs clean under
ASan/UBSan at several batches.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from exported_feeds import DATA, MANIFEST
from exported_feeds import feeds as make_feeds
from onnx import TensorProto, helper, numpy_helper

import autofusion
from autofusion.api import CompiledModel, ModelSource, build_model_dir, open_model, pin_batch
from autofusion.errors import AutofusionError
from autofusion.pipeline import PipelineOptions
from autofusion.runtime import build
from autofusion.testing import assert_close

CNNS = ["resnet_tsdyn", "resnet_dynamodyn", "mobilenet_tsdyn", "mobilenet_dynamodyn"]
TRANSFORMERS = ["bert_tsdyn", "bert_dynamodyn", "gpt2_tsdyn", "gpt2_dynamodyn"]


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOFUSION_CACHE_DIR", str(tmp_path / "cache"))


def _ort(model: Path | onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    src = str(model) if isinstance(model, Path) else model.SerializeToString()
    sess = ort.InferenceSession(src, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


def _check(m: CompiledModel, name: str, batch: int, seq: int, seed: int) -> None:
    feeds = make_feeds(name, batch, seq, seed)
    got, want = m.run(feeds), _ort(DATA / MANIFEST[name]["files"][0], feeds)
    assert set(got) == set(want)
    for out, ref in want.items():
        assert ref.shape[0] == batch
        assert 0.1 <= float(np.abs(ref).max()) <= 10, out
        assert_close(got[out], ref, f"{name} batch {batch}: {out}")


@pytest.mark.parametrize("name", CNNS)
def test_cnn_compiles_once_and_matches_at_every_batch(name: str) -> None:
    m = autofusion.compile(DATA / MANIFEST[name]["files"][0], threads=1, dynamic={"batch": (1, 8)})
    try:
        assert type(m) is CompiledModel  # one library, not a per-shape model
        assert m.report["batch"] == {"symbol": "batch", "range": [1, 8],
                                     "batched_inputs": ["input"],
                                     "batched_outputs": ["logits"]}  # fmt: skip
        for i, batch in enumerate((1, 2, 8, 3)):
            _check(m, name, batch, 0, seed=i)
        x = make_feeds(name, 9, 0, 0)
        with pytest.raises(AutofusionError, match=r"batch 'batch' is 9, outside .* 1\.\.8"):
            m.run(x)
    finally:
        m.close()


@pytest.mark.parametrize("name", TRANSFORMERS)
def test_transformer_batch_with_a_fixed_sequence(name: str) -> None:
    """seq fixed by a one-size range, the batch free: one library for batch 1..4."""
    path = DATA / MANIFEST[name]["files"][0]
    m = autofusion.compile(path, threads=1, dynamic={"batch": (1, 4), "seq": (16, 16)})
    try:
        assert type(m) is CompiledModel
        assert m.report["batch"]["range"] == [1, 4]
        for i, batch in enumerate((1, 4, 2)):
            _check(m, name, batch, 16, seed=i)
        feeds = make_feeds(name, 2, 16, 0)
        feeds["attention_mask"] = feeds["attention_mask"][:1]
        with pytest.raises(AutofusionError, match="inputs disagree on the batch 'batch'"):
            m.run(feeds)
    finally:
        m.close()


def _graph(nodes, x_shape, y_shape, inits=(), x_type=TensorProto.FLOAT) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", x_type, x_shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)
    g = helper.make_graph(nodes, "g", [x], [y], initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _source(model: onnx.ModelProto) -> ModelSource:
    return open_model(model, "mix.onnx", dynamic={"n": (1, 8)})


W = numpy_helper.from_array(np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4), "w")
MIXING = {
    "softmax over the batch": (
        _graph([helper.make_node("Softmax", ["x"], ["y"], axis=0, name="sm")], ["n", 4], ["n", 4]),
        "node 'sm' (nn.softmax): nn.softmax runs along dim 0",
    ),
    "reduce over the batch": (
        _graph(
            [helper.make_node("ReduceSum", ["x", "ax"], ["y"], keepdims=1, name="rs")],
            ["n", 4],
            [1, 4],
            [numpy_helper.from_array(np.array([0], np.int64), "ax")],
        ),
        "node 'rs'",
    ),
    "transpose moving the batch": (
        _graph(
            [
                helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0], name="tr"),
                helper.make_node("MatMul", ["t", "x"], ["y"], name="mm"),
            ],
            ["n", 4],
            [4, 4],
        ),
        "node 'tr'",
    ),
    "the batch size as a value": (
        _graph(
            [
                helper.make_node("Shape", ["x"], ["s"]),
                helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
                helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
                helper.make_node("Div", ["x", "nf"], ["y"], name="div"),
            ],
            ["n", 4],
            ["n", 4],
            [numpy_helper.from_array(np.array(0, np.int64), "zero")],
        ),
        "a constant's value depends on the batch",
    ),
    "batch folded into features": (
        _graph(
            [helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")],
            ["n", 4],
            [1, "m"],
            [numpy_helper.from_array(np.array([1, -1], np.int64), "s")],
        ),
        "the graph changes with the batch (1 ops at batch 1, 2 at batch 2)",
    ),
}


@pytest.mark.parametrize("case", sorted(MIXING))
def test_graphs_that_mix_samples_are_refused_with_the_node(case: str) -> None:
    model, needle = MIXING[case]
    with pytest.raises(AutofusionError) as e:
        pin_batch(_source(model))
    assert "one library for every 'n' needs a batch-separable graph" in str(e.value)
    assert needle in str(e.value)


def test_compile_falls_back_to_the_shape_specialising_model() -> None:
    """A graph that mixes samples still runs through autofusion.compile(): per shape."""
    from autofusion.dynamic import DynamicModel

    model, _ = MIXING["softmax over the batch"]
    m = autofusion.compile(model, threads=1, dynamic={"n": (1, 8)}, cache=False)
    try:
        assert isinstance(m, DynamicModel)
        x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
        assert_close(m.run({"x": x})["y"], _ort(model, {"x": x})["y"], "softmax axis 0")
    finally:
        m.close()


def test_separable_shapes_pass() -> None:
    """A per-sample reshape through [n*4, 1] rows, a matmul with a weight and a broadcast
    row keep samples apart: accepted, and correct at batch 5."""
    nodes = [
        helper.make_node("Reshape", ["x", "flat"], ["r"], name="flat"),  # [n*4, 1]
        helper.make_node("Reshape", ["r", "back"], ["b"], name="back"),  # [n, 4]
        helper.make_node("MatMul", ["b", "w"], ["mm"], name="mm"),
        helper.make_node("Add", ["mm", "row"], ["y"], name="add"),
    ]
    row = np.linspace(-1, 1, 4, dtype=np.float32)[None]
    inits = [W, numpy_helper.from_array(np.array([-1, 1], np.int64), "flat"),
             numpy_helper.from_array(np.array([-1, 4], np.int64), "back"),
             numpy_helper.from_array(row, "row")]  # fmt: skip
    model = _graph(nodes, ["n", 4], ["n", 4], inits)
    source = pin_batch(_source(model))
    assert source.batch is not None
    assert source.batch.inputs == ("x",)
    m = autofusion.compile(model, threads=1, dynamic={"n": (1, 8)}, cache=False)
    try:
        assert type(m) is CompiledModel
        x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
        assert_close(m.run({"x": x})["y"], _ort(model, {"x": x})["y"], "separable")
    finally:
        m.close()


def test_cli_builds_one_library_and_the_c_api_guards_the_range(tmp_path: Path) -> None:
    name = "resnet_tsdyn"
    out = tmp_path / "lib"
    cmd = [sys.executable, "-m", "autofusion.tools.compile", str(DATA / f"{name}.onnx"),
           "--dynamic", "batch=2..6", "-o", str(out)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "run-time batch: 'batch' 2..6 in one library" in proc.stderr
    assert "int af_run_batch(af_model *m, int64_t batch" in (out / "model.h").read_text()
    lib = ctypes.CDLL(str(out / "libmodel.so"))
    lib.af_batch_symbol.restype = ctypes.c_char_p
    lib.af_batch_min.restype = lib.af_batch_max.restype = ctypes.c_int64
    lib.af_last_error.restype = ctypes.c_char_p
    lib.af_create.restype = ctypes.c_void_p
    lib.af_create.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.af_run_batch.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p,
                                 ctypes.c_void_p]  # fmt: skip
    lib.af_destroy.argtypes = [ctypes.c_void_p]
    assert (lib.af_batch_symbol(), lib.af_batch_min(), lib.af_batch_max()) == (b"batch", 2, 6)
    assert (lib.af_input_batched(0), lib.af_output_batched(0), lib.af_input_batched(1)) == (1, 1, 0)
    m = lib.af_create(str(out / "weights.bin").encode(), 1)
    assert m
    try:
        x = np.zeros((7, 3, 32, 32), np.float32)
        y = np.zeros((7, 10), np.float32)
        ins = (ctypes.c_void_p * 1)(x.ctypes.data)
        outs = (ctypes.c_void_p * 1)(y.ctypes.data)
        for bad in (1, 7):
            assert lib.af_run_batch(m, bad, ins, outs) == 1  # AF_ERR_ARGUMENT
            assert lib.af_last_error().decode() == (
                f"af_run_batch: batch {bad} is outside the range 2..6 of symbol batch"
            )
        assert lib.af_run_batch(m, 3, ins, outs) == 0
    finally:
        lib.af_destroy(m)


def test_cli_names_the_node_when_the_graph_mixes_samples(tmp_path: Path) -> None:
    model, _ = MIXING["softmax over the batch"]
    path = tmp_path / "mix.onnx"
    onnx.save(model, str(path))
    out = tmp_path / "lib"
    cmd = [sys.executable, "-m", "autofusion.tools.compile", str(path), "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "node 'sm' (nn.softmax): nn.softmax runs along dim 0, the batch" in proc.stderr
    assert not out.exists()


def test_fixed_batch_library_takes_batch_one_only(tmp_path: Path) -> None:
    from autofusion.zoo import get_model

    build_model_dir(get_model("tiny_cnn"), tmp_path, PipelineOptions(), "tiny_cnn")
    lib = ctypes.CDLL(str(tmp_path / "libmodel.so"))
    lib.af_batch_symbol.restype = ctypes.c_char_p
    lib.af_batch_max.restype = ctypes.c_int64
    assert (lib.af_batch_symbol(), lib.af_batch_max()) == (b"", 1)


def test_sanitized_run_time_batch(tmp_path: Path) -> None:
    """af_run_batch under ASan/UBSan at batch 1 and 3 matches onnxruntime."""
    name = "mobilenet_tsdyn"
    path = DATA / f"{name}.onnx"
    source = pin_batch(open_model(path, dynamic={"batch": (1, 4)}))
    out = tmp_path / "san"
    out.mkdir()
    build_model_dir(source, out, PipelineOptions(), name, build=False)
    exe = build.build_sanitizer_driver(out)
    for batch in (1, 3):
        feeds = make_feeds(name, batch, 0, batch)
        ref = _ort(path, feeds)["logits"]
        (got,) = build.run_driver(exe, out / "weights.bin", [feeds["input"]],
                                  [(ref.shape, ref.dtype)], tmp_path / f"io{batch}",
                                  batch=batch)  # fmt: skip
        assert_close(got, ref, f"{name} sanitized batch {batch}")


def test_shape_specialising_model_keys_on_seq_and_takes_any_batch() -> None:
    """batch and seq free: one specialisation per sequence length, each serving every batch
    (misses count sequence lengths only), matching onnxruntime."""
    from autofusion.dynamic import DynamicModel

    name = "bert_tsdyn"
    m = autofusion.compile(DATA / f"{name}.onnx", threads=1, dynamic={"batch": (1, 4)})
    try:
        assert isinstance(m, DynamicModel)
        for i, (batch, seq) in enumerate([(1, 8), (4, 8), (2, 12), (3, 8), (1, 12)]):
            feeds = make_feeds(name, batch, seq, seed=i)
            got, want = m.run(feeds), _ort(DATA / f"{name}.onnx", feeds)
            for out, ref in want.items():
                assert_close(got[out], ref, f"batch {batch} seq {seq}: {out}")
        cache = m.report["shape_cache"]
        assert (cache["misses"], cache["hits"]) == (2, 3)
        assert [s["sizes"] for s in m.report["shapes"]] == [{"seq": 8}, {"seq": 12}]
        assert all(s["report"]["batch"]["range"] == [1, 4] for s in m.report["shapes"])
    finally:
        m.close()


def test_shape_specialising_model_without_a_separable_batch() -> None:
    """A graph mixing samples along the batch: specialisations key on every symbol again."""
    from autofusion.dynamic import DynamicModel

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "k"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", "k"])
    model = helper.make_model(
        helper.make_graph([helper.make_node("Softmax", ["x"], ["y"], axis=0, name="sm")],
                          "g", [x], [y]),
        opset_imports=[helper.make_opsetid("", 17)],
    )  # fmt: skip
    m = autofusion.compile(model, threads=1, dynamic={"n": (1, 8), "k": (1, 8)}, cache=False,
                           one_build=False)  # fmt: skip
    try:
        assert isinstance(m, DynamicModel)
        for n, k in [(2, 3), (3, 3), (2, 3)]:
            x_ = np.random.default_rng(n).standard_normal((n, k)).astype(np.float32)
            assert_close(m.run({"x": x_})["y"], _ort(model, {"x": x_})["y"], f"{n}x{k}")
        cache = m.report["shape_cache"]
        assert (cache["misses"], cache["hits"]) == (2, 1)
        assert [s["sizes"] for s in m.report["shapes"]] == [{"n": 3, "k": 3}, {"n": 2, "k": 3}]
    finally:
        m.close()
