"""One C library for every shape in range (docs/dynamic.md, "One build for every shape"):
the printer's run-time sizes, model.h's symbol API, the loader binding the symbols from the
feeds, and the range / consistency errors, on the hand-lowered module of
``test/filecheck/lowering/c/printer-symbolic.mlir`` (x of [batch, seq, 32], z of [seq];
``y = 4 * x``; ``u = relu(x W + x)`` as [batch*seq, 32] through a matmul with run-time
params, W = 1/16; ``t`` of [2*batch*seq + 1, 32] with ``t[0, i] = z[i]`` checked as an
index into [seq]); then ``compile(one_build=True)`` of a small graph and of the exports."""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from exported_feeds import DATA, MANIFEST
from exported_feeds import feeds as export_feeds
from onnx import TensorProto, helper, numpy_helper
from xdsl.parser import Parser

import autofusion
from autofusion.api import one_build_pipeline
from autofusion.errors import AutofusionError
from autofusion.lowering.c import emit_model
from autofusion.pipeline import Pipeline, PipelineOptions, make_context
from autofusion.runtime import build
from autofusion.runtime.loader import AF_ERR_ARGUMENT, ModelLibrary
from autofusion.testing import assert_close

SOURCE = Path(__file__).parents[1] / "filecheck/lowering/c/printer-symbolic.mlir"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("symbolic_c")
    module = Parser(make_context(), SOURCE.read_text()).parse_module()
    emit_model(module, out)
    return out


@pytest.fixture(scope="module")
def lib(model_dir: Path) -> ModelLibrary:
    build.build_shared(model_dir)
    return ModelLibrary(model_dir / "libmodel.so", model_dir / "weights.bin", 1)


def _feeds(batch: int, seq: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(batch * 100 + seq)
    x = rng.uniform(0.1, 2.0, (batch, seq, 32)).astype(np.float32)
    return {"x": x, "z": rng.permutation(seq).astype(np.int64)}


def _check(out: dict[str, np.ndarray], feeds: dict[str, np.ndarray], what: str) -> None:
    x, z = feeds["x"], feeds["z"]
    assert_close(out["y"], 4 * x, f"{what}: y")
    x2 = x.reshape(-1, 32)
    assert_close(out["u"], np.maximum(x2 @ np.full((32, 32), 1 / 16, np.float32) + x2, 0),
                 f"{what}: u")  # fmt: skip
    assert out["t"].shape == (2 * x.shape[0] * x.shape[1] + 1, 32)
    assert_close(out["t"].reshape(-1)[: len(z)], z.astype(np.float32), f"{what}: t")


def test_one_library_runs_every_shape_in_range(lib: ModelLibrary) -> None:
    assert lib.symbols == {"batch": (1, 4), "seq": (1, 8)}
    assert [s.describe() for s in lib.inputs] == ["float32[batch, seq, 32]", "int64[seq]"]
    assert lib.outputs[1].describe() == "float32[?, 32]"  # 2*batch*seq + 1: no one symbol
    for batch, seq in [(1, 1), (2, 3), (4, 8), (3, 5)]:
        feeds = _feeds(batch, seq)
        _check(lib.run(feeds), feeds, f"batch {batch} seq {seq}")


def test_a_run_time_dim_guards_an_index(lib: ModelLibrary) -> None:
    """clib.guard_index against the run's seq: z[i] = 5 at seq 4 is an index fault."""
    feeds = {**_feeds(1, 4), "z": np.array([0, 1, 5, 2], np.int64)}
    with pytest.raises(AutofusionError) as e:
        lib.run(feeds)
    assert str(e.value) == (
        "run: Gather node 'g' (axis 0 of data [seq]): index 5 is out of range [-4, 3]"
    )
    feeds["z"][2] = -1  # wraps, as in ONNX
    assert lib.run(feeds)["t"].reshape(-1)[2] == 3


@pytest.mark.parametrize(
    ("feeds", "message"),
    [
        (_feeds(2, 9), "input 'x': dim 1 gives seq = 9, outside the library's range 1..8"),
        (_feeds(5, 2), "input 'x': dim 0 gives batch = 5, outside the library's range 1..4"),
        (
            {**_feeds(2, 3), "z": np.arange(4, dtype=np.int64)},
            "input 'z': dim 0 gives seq = 4, but input 'x' dim 1 gives seq = 3",
        ),
        (
            {**_feeds(2, 3), "x": np.ones((2, 3, 31), np.float32)},
            "input 'x': expected shape float32[batch, seq, 32] = [2, 3, 32] with batch = 2, "
            "seq = 3, got [2, 3, 31]",
        ),
        (
            {**_feeds(2, 3), "x": np.ones((6, 32), np.float32)},
            "input 'x': rank 2, expected 3 (float32[batch, seq, 32])",
        ),
    ],
)
def test_shapes_out_of_range_or_inconsistent_are_clear_errors(
    lib: ModelLibrary, feeds: dict[str, np.ndarray], message: str
) -> None:
    with pytest.raises(AutofusionError) as e:
        lib.run(feeds)
    assert str(e.value) == message


def test_c_api_checks_symbols_before_running(model_dir: Path, lib: ModelLibrary) -> None:
    """model.h straight through ctypes: af_run_sym refuses a symbol out of range (the C
    check, not the loader's), af_run refuses a symbolic library, the shape queries."""
    c = ctypes.CDLL(str(model_dir / "libmodel.so"))
    c.af_last_error.restype = ctypes.c_char_p
    c.af_create.restype = ctypes.c_void_p
    c.af_create.argtypes = [ctypes.c_char_p, ctypes.c_int]
    c.af_destroy.argtypes = [ctypes.c_void_p]
    c.af_run_sym.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    c.af_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    m = c.af_create(str(model_dir / "weights.bin").encode(), 1)
    try:
        ptrs = (ctypes.c_void_p * 3)()  # never touched: the checks come first
        syms = (ctypes.c_int64 * 2)(2, 9)
        assert c.af_run_sym(m, syms, ptrs, ptrs) == AF_ERR_ARGUMENT
        assert c.af_last_error() == b"af_run_sym: symbol seq = 9 is outside its range 1..8"
        syms[:] = [0, 3]
        assert c.af_run_sym(m, syms, ptrs, ptrs) == AF_ERR_ARGUMENT
        assert b"symbol batch = 0 is outside its range 1..4" in c.af_last_error()
        assert c.af_run(m, ptrs, ptrs) == AF_ERR_ARGUMENT
        assert b"call af_run_sym" in c.af_last_error()
    finally:
        c.af_destroy(m)
    dims = (ctypes.c_int64 * 2)()
    assert c.af_output_shape_at(1, (ctypes.c_int64 * 2)(3, 7), dims) == 0
    assert list(dims) == [43, 32]
    assert c.af_output_shape_at(3, (ctypes.c_int64 * 2)(3, 7), dims) == -1  # no output 3
    assert [c.af_input_dim_symbol(0, d) for d in range(4)] == [0, 1, -1, -1]


def test_sanitized_across_shapes(model_dir: Path, tmp_path: Path) -> None:
    """ASan/UBSan: the driver's af_run_sym at several shapes reads and writes in bounds."""
    exe = build.build_sanitizer_driver(model_dir)
    for batch, seq in [(1, 1), (4, 8), (2, 5)]:
        feeds = _feeds(batch, seq)
        f32 = np.dtype(np.float32)
        outs = [((batch, seq, 32), f32), ((2 * batch * seq + 1, 32), f32), ((batch * seq, 32), f32)]
        y, t, u = build.run_driver(exe, model_dir / "weights.bin", [feeds["x"], feeds["z"]], outs,
                                   tmp_path / f"io{batch}x{seq}", symbols=(batch, seq))  # fmt: skip
        _check({"y": y, "t": t, "u": u}, feeds, f"sanitized batch {batch} seq {seq}")


def _tiny_model() -> onnx.ModelProto:
    """MatMul, Add and LayerNormalization on x, r of [batch, seq, 32] (dim_params)."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array((rng.standard_normal((32, 32)) * 0.2).astype(np.float32), "W"),
        numpy_helper.from_array(rng.uniform(0.7, 1.3, 32).astype(np.float32), "g"),
        numpy_helper.from_array((rng.standard_normal(32) * 0.1).astype(np.float32), "b"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["mm"], name="mm"),
        helper.make_node("Add", ["mm", "r"], ["s"], name="add"),
        helper.make_node("LayerNormalization", ["s", "g", "b"], ["y"], name="ln", axis=-1),
    ]
    shape = ["batch", "seq", 32]
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in ("x", "r", "y")]
    graph = helper.make_graph(nodes, "tiny", io[:2], io[2:], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_one_build_of_a_dynamic_model_matches_onnxruntime_at_every_shape() -> None:
    """compile(one_build=True): one library for every (batch, seq) in range; out-of-range
    and disagreeing shapes are clear errors."""
    import onnxruntime as ort

    model = _tiny_model()
    ranges = {"batch": (1, 4), "seq": (1, 64)}
    m = autofusion.compile(model, one_build=True, dynamic=ranges, threads=1)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert m.report["one_build"]["symbols"] == {"batch": [1, 4], "seq": [1, 64]}
    for batch, seq in [(1, 1), (4, 64), (2, 17), (3, 5)]:
        rng = np.random.default_rng(batch * 1000 + seq)
        feeds = {n: rng.uniform(-1, 1, (batch, seq, 32)).astype(np.float32) for n in "xr"}
        assert_close(m.run(feeds)["y"], sess.run(None, feeds)[0], f"batch {batch} seq {seq}")
    with pytest.raises(AutofusionError, match="gives seq = 65, outside the library's range"):
        m.run({n: np.ones((1, 65, 32), np.float32) for n in "xr"})
    with pytest.raises(AutofusionError, match="but input 'x' dim 1 gives seq = 3"):
        m.run({"x": np.ones((1, 3, 32), np.float32), "r": np.ones((1, 4, 32), np.float32)})
    # the compile cache: the same ranges load the build, other ranges are another build
    again = autofusion.compile(model, one_build=True, dynamic=ranges, threads=1)
    assert again.report.get("cached") is True
    assert_close(again.run(feeds)["y"], m.run(feeds)["y"], "cached one build")
    other = autofusion.compile(model, one_build=True, dynamic={**ranges, "seq": (1, 65)}, threads=1)
    assert other.report.get("cached") is not True
    assert other.run({n: np.ones((1, 65, 32), np.float32) for n in "xr"})["y"].shape == (1, 65, 32)


def test_one_build_needs_the_c_target_and_keeps_only_symbolic_tensor_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from autofusion.tools.compile import main

    model = tmp_path / "tiny.onnx"
    onnx.save(_tiny_model(), model)
    argv = [str(model), "--one-build", "--target", "ascendc", "-o", str(tmp_path / "out")]
    assert main(argv) == 1
    assert "--one-build: target ascendc takes no run-time sizes (only c)" in capsys.readouterr().err
    pipe, dropped = one_build_pipeline(Pipeline.from_options(PipelineOptions()))
    full = Pipeline.from_options(PipelineOptions())
    assert sorted([*pipe.names, *dropped]) == sorted(full.names)  # nothing else is lost
    symbolic = {s.name: s.pass_.symbolic for s in full.tensor().stages}
    assert dropped == [n for n, ok in symbolic.items() if not ok]
    assert "assign-layout" in dropped
    assert "plan-buffers" in pipe.names
    assert pipe.lowering().names == full.lowering().names


@pytest.mark.parametrize("name", ["bert_tsdyn", "gpt2_tsdyn", "bert_dynamodyn", "gpt2_dynamodyn"])
def test_exports_compile_once_and_match_onnxruntime_at_every_shape(name: str) -> None:
    """BERT and GPT-2 from both torch exporters with [batch, seq]: one library each,
    matched against onnxruntime at the issue's (batch, seq) pairs."""
    import onnxruntime as ort

    path = DATA / MANIFEST[name]["files"][0]
    m = autofusion.compile(path, one_build=True, dynamic={"batch": (1, 4), "seq": (1, 512)},
                           cache=False, threads=1)  # fmt: skip
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    for i, (batch, seq) in enumerate([(1, 16), (4, 64), (1, 128), (4, 384), (1, 512)]):
        f = export_feeds(name, batch, seq, seed=i)
        got = m.run(f)
        for out, ref in zip(names, sess.run(None, f)):
            assert_close(got[out], ref, f"{name} batch {batch} seq {seq}: {out}")


CNNS = sorted(
    n for n, e in MANIFEST.items() if e["dynamic"] and e["model"] in ("resnet", "mobilenet")
)


@pytest.mark.parametrize("name", CNNS)
def test_cnn_exports_compile_once_and_match_onnxruntime_at_every_batch(name: str) -> None:
    """ResNet- and MobileNet-style CNNs from both torch exporters with a dynamic batch: one
    library each for batch 1..8 (convs, pooling and the classifier take the batch at run
    time), matched against onnxruntime at the manifest's batches (1, 2, 8)."""
    import onnxruntime as ort

    path = DATA / MANIFEST[name]["files"][0]
    m = autofusion.compile(path, one_build=True, dynamic={"batch": (1, 8)}, cache=False,
                           threads=1)  # fmt: skip
    assert m.report["one_build"]["symbols"] == {"batch": [1, 8]}
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    batches = [s["batch"] for s in MANIFEST[name]["test_shapes"]]
    assert batches == [1, 2, 8]
    for i, batch in enumerate(batches):
        f = export_feeds(name, batch, 0, seed=i)
        got = m.run(f)
        for out, ref in zip(names, sess.run(None, f)):
            assert_close(got[out], ref, f"{name} batch {batch}: {out}")


def test_conv_of_run_time_spatial_size_takes_its_algorithm_at_the_upper_bound() -> None:
    """Conv (32 -> 32, 3x3, same padding) + Relu + MaxPool on [n, 32, h, h], h in 2..64: the
    conv takes Winograd, chosen at h = 64 (256 tiles), and the one library matches
    onnxruntime down to h = 2 (one tile, where a static build would take im2col): the
    Winograd kernel checks only that the conv fits it."""
    import onnxruntime as ort

    rng = np.random.default_rng(0)
    w = (rng.standard_normal((32, 32, 3, 3)) * 0.1).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node(
            "MaxPool", ["r"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="pool"
        ),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 32, "h", "h"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "conv_hw", [x], [y], [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m = autofusion.compile(model, one_build=True, dynamic={"n": (1, 4), "h": (2, 64)},
                           cache=False, threads=1)  # fmt: skip
    [row] = m.report["conv_algo"]
    assert row["conv_algo"] == "winograd"
    assert row["shape"] == "C32 K32 ?x? -> ?x? k3x3 s1 g1"
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for n, h in [(1, 2), (3, 7), (4, 64)]:
        f = {"x": rng.standard_normal((n, 32, h, h)).astype(np.float32)}
        assert_close(m.run(f)["y"], sess.run(None, f)[0], f"n {n} h {h}")


def test_cnn_one_build_sanitized_across_batches(tmp_path: Path) -> None:
    """ASan/UBSan, two threads: the ResNet export's one build (convs on the shared im2col
    scratch sized at the upper bound, max pooling, the classifier) at batch 1, 3 and 8."""
    import onnxruntime as ort

    name = "resnet_tsdyn"
    path = DATA / MANIFEST[name]["files"][0]
    m = autofusion.compile(path, one_build=True, dynamic={"batch": (1, 8)}, cache=False,
                           threads=2)  # fmt: skip
    exe = build.build_sanitizer_driver(m.directory)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for batch in (1, 3, 8):
        f = export_feeds(name, batch, 0, seed=batch)
        ref = sess.run(None, f)
        got = build.run_driver(exe, Path(m.directory) / "weights.bin", [f["input"]],
                               [(r.shape, r.dtype) for r in ref], tmp_path / f"b{batch}",
                               threads=2, symbols=(batch,))  # fmt: skip
        for r, g in zip(ref, got, strict=True):
            assert_close(g, r, f"{name} batch {batch} under ASan/UBSan")


def test_main_c_takes_the_sizes_from_the_npy_inputs(lib: ModelLibrary, model_dir: Path,
                                                    tmp_path: Path) -> None:  # fmt: skip
    """The package's main.c on a library with run-time sizes: the symbols come from the
    .npy inputs' shapes, a disagreement is one message (exit 1)."""
    del lib  # built libmodel.so
    subprocess.run(["make", "-s", "main"], cwd=model_dir, check=True, capture_output=True)
    feeds = _feeds(3, 5)
    files = []
    for name, arr in feeds.items():
        np.save(tmp_path / f"{name}.npy", arr)
        files.append(str(tmp_path / f"{name}.npy"))
    exe, weights = str(model_dir / "model_main"), str(model_dir / "weights.bin")
    proc = subprocess.run([exe, weights, *files, "-o", str(tmp_path)], capture_output=True,
                          text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = {k: np.load(tmp_path / f"output_{j}.npy") for j, k in enumerate("ytu")}
    _check(out, feeds, "main.c at batch 3 seq 5")
    np.save(tmp_path / "z.npy", np.arange(4, dtype=np.int64))
    proc = subprocess.run([exe, weights, *files], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "input 'z': dim 0 gives seq = 4, but seq = 5 elsewhere" in proc.stderr
    np.save(tmp_path / "x.npy", np.ones((3, 9, 32), np.float32))
    np.save(tmp_path / "z.npy", np.arange(9, dtype=np.int64))
    proc = subprocess.run([exe, weights, *files], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "af_run_sym: symbol seq = 9 is outside its range 1..8" in proc.stderr


def test_a_static_library_has_no_symbols_and_af_run_sym_is_af_run() -> None:
    """Pinned shapes: the ordinary static build; its af_run_sym (NULL symbols) gives af_run's
    results, which match onnxruntime."""
    import onnxruntime as ort

    model = _tiny_model()
    shapes = {"x": [2, 3, 32], "r": [2, 3, 32]}
    m = autofusion.compile(model, input_shapes=shapes, cache=False, threads=1)
    c = ctypes.CDLL(str(m.directory / "libmodel.so"))
    assert c.af_num_symbols() == 0
    assert c.af_input_dim_symbol(0, 0) == -1
    c.af_create.restype = ctypes.c_void_p
    c.af_create.argtypes = [ctypes.c_char_p, ctypes.c_int]
    c.af_destroy.argtypes = [ctypes.c_void_p]
    c.af_run_sym.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    rng = np.random.default_rng(7)
    feeds = {n: rng.uniform(-1, 1, (2, 3, 32)).astype(np.float32) for n in "xr"}
    want = ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    assert_close(m.run(feeds)["y"], want, "af_run")
    y = np.empty_like(want)
    handle = c.af_create(str(m.directory / "weights.bin").encode(), 1)
    try:
        ins = (ctypes.c_void_p * 2)(feeds["x"].ctypes.data, feeds["r"].ctypes.data)
        outs = (ctypes.c_void_p * 1)(y.ctypes.data)
        assert c.af_run_sym(handle, None, ins, outs) == 0
    finally:
        c.af_destroy(handle)
    assert_close(y, want, "af_run_sym of a static library")


def test_sanitized_one_build_of_an_export_across_shapes(tmp_path: Path) -> None:
    """ASan/UBSan: GPT-2 (TorchScript export) built once, run by the sanitizer driver at a
    small and at the largest shape, matches onnxruntime."""
    import onnxruntime as ort

    from autofusion.api import build_model_dir, one_build_source, open_model

    name = "gpt2_tsdyn"
    path = DATA / MANIFEST[name]["files"][0]
    source = one_build_source(open_model(path, dynamic={"batch": (1, 4), "seq": (1, 512)}))
    out = tmp_path / "san"
    out.mkdir()
    build_model_dir(source, out, PipelineOptions(), name, build=False)
    exe = build.build_sanitizer_driver(out)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for batch, seq in [(1, 5), (4, 512)]:
        f = export_feeds(name, batch, seq, seed=seq)
        want = sess.run(None, f)
        got = build.run_driver(exe, out / "weights.bin", list(f.values()),
                               [(w.shape, w.dtype) for w in want], tmp_path / f"io{seq}",
                               symbols=(batch, seq))  # fmt: skip
        for g, w in zip(got, want, strict=True):
            assert_close(g, w, f"{name} sanitized batch {batch} seq {seq}")


def test_one_build_refuses_a_memory_limit_it_cannot_keep() -> None:
    """tile-fusion does not take symbolic sizes: a memory limit is refused, not ignored."""
    with pytest.raises(AutofusionError, match=r"a memory limit .* needs pass 'tile-fusion'"):
        autofusion.compile(_tiny_model(), one_build=True, memory_limit_mb=0.01, cache=False)


def test_an_output_copied_from_an_input_takes_its_run_time_size() -> None:
    """Identity to an output: @main copies the input, as many bytes as this run's sizes."""
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu"),
             helper.make_node("Identity", ["x"], ["z"], name="id")]  # fmt: skip
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", "seq"]) for n in "xyz"]
    graph = helper.make_graph(nodes, "ident", io[:1], io[1:])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m = autofusion.compile(model, one_build=True, dynamic={"batch": (1, 4), "seq": (1, 8)},
                           cache=False, threads=1)  # fmt: skip
    for batch, seq in [(1, 1), (4, 8), (2, 3)]:
        x = np.random.default_rng(seq).uniform(-1, 1, (batch, seq)).astype(np.float32)
        out = m.run({"x": x})
        assert_close(out["z"], x, f"copy at batch {batch} seq {seq}")
        assert_close(out["y"], np.maximum(x, 0), f"relu at batch {batch} seq {seq}")


def test_declared_ranges_make_one_build_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """compile() without one_build: declared ranges for symbols other than a lone batch give
    the one library; without declared ranges (the default 1..4096 would size the arena
    absurdly) the shape-specialising model, as before; where the pipeline cannot keep the
    symbols (a memory limit needs tile-fusion) the specialising model too, saying why. The
    command makes the one build from --dynamic ranges alone."""
    from autofusion.dynamic import DynamicModel
    from autofusion.tools.compile import main

    model = _tiny_model()
    ranges = {"batch": (1, 4), "seq": (1, 16)}
    one = autofusion.compile(model, dynamic=ranges, threads=1, cache=False)
    try:
        assert not isinstance(one, DynamicModel)
        assert one.report["one_build"]["symbols"] == {"batch": [1, 4], "seq": [1, 16]}
        feeds = {n: np.full((3, 5, 32), 0.5, np.float32) for n in "xr"}
        assert one.run(feeds)["y"].shape == (3, 5, 32)
    finally:
        one.close()
    spec = autofusion.compile(model, threads=1, cache=False)
    assert isinstance(spec, DynamicModel)
    assert "one_build_refused" not in spec.report
    said: list[str] = []
    refused = autofusion.compile(
        model, dynamic=ranges, memory_limit_mb=0.01, threads=1, cache=False, progress=said.append
    )
    assert isinstance(refused, DynamicModel)
    assert "tile-fusion" in refused.report["one_build_refused"]
    assert any(s.startswith("no one build for every shape") for s in said)
    src = tmp_path / "tiny.onnx"
    onnx.save(model, src)
    out = tmp_path / "out"
    declared = ["--dynamic", "batch=1..4", "--dynamic", "seq=1..16"]
    assert main([str(src), *declared, "-o", str(out)]) == 0
    assert "one library for every shape: batch 1..4, seq 1..16" in capsys.readouterr().err
    assert "af_run_sym" in (out / "model.h").read_text()
    assert main([str(src), *declared, "--no-one-build", "-o", str(tmp_path / "pin")]) == 1
    assert "--input-shape" in capsys.readouterr().err
