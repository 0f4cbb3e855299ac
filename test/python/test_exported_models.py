"""Real torch.onnx.export output (both exporters) imports, runs and fuses.

The fixtures in ``data/exported/`` were written by ``benchmarks/export_torch_models.py``
(torch 2.13, transformers; not needed here): small ResNet- and MobileNet-style CNNs, BERT,
GPT-2 and ViT encoders, an nn.LSTM and an nn.GRU model, each from the TorchScript exporter
(``*_ts``, opset 17; ``*_tsbn`` without constant folding, so BatchNormalization stays) and
the dynamo exporter
(``*_dynamo``, opset 18, weights in ``.onnx.data``); ``*dyn`` files have a dynamic sequence
axis fixed with ``input_shapes=``. ``unet_tsbn`` (only that variant) is a small U-Net
with ConvTranspose2d upsamplers and kept BatchNormalization. ``roberta_*`` (RobertaModel,
CumSum position ids), ``deeplab_*`` (DeepLabV3-style ASPP, bilinear Resize) and
``lraspp_*`` (LRASPP) and ``yolo_*`` (YOLOv8-style: C2f, SPPF, nearest Upsample, DFL
Softmax and box decode) are checked like the others. ``manifest.json`` gives each
file's inputs.

For every fixture: the imported IR in the interpreter and the generated C (default
pipeline: fusion and memory planning) match onnxruntime at rtol=1e-3,
atol=1e-4*max(1,max|ref|); the compile report shows the fusion each model should get.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import autofusion
from autofusion.errors import AutofusionError
from autofusion.frontend import import_onnx
from autofusion.interpreter import run_module
from autofusion.lowering.c.testing import assert_close, build_and_run

DATA = Path(__file__).resolve().parent / "data" / "exported"
MANIFEST: dict[str, dict[str, Any]] = json.loads((DATA / "manifest.json").read_text())
NAMES = sorted(MANIFEST)


def _feeds(entry: dict[str, Any], seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for spec in entry["inputs"]:
        if "range" in spec:
            lo, hi = spec["range"]
            arr = rng.integers(lo, hi, spec["shape"]).astype(spec["dtype"])
            if spec["name"] == "attention_mask":
                arr[..., :2] = 1  # a padding mask: some tokens always attended
        else:
            arr = rng.standard_normal(spec["shape"]).astype(spec["dtype"])
        feeds[spec["name"]] = arr
    return feeds


def _ort(path: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


def _input_shapes(entry: dict[str, Any]) -> dict[str, list[int]] | None:
    return {s["name"]: s["shape"] for s in entry["inputs"]} if entry["dynamic"] else None


class Built:
    """One fixture compiled to C (the report and a runner for feeds)."""

    def __init__(self, name: str, tmp: Path) -> None:
        entry = MANIFEST[name]
        self.path = DATA / entry["files"][0]
        self.entry = entry
        shapes = _input_shapes(entry)
        if shapes is None:
            self.model = autofusion.compile(self.path)
            self.report = self.model.report
            self.run = self.model.run
        else:
            # autofusion.compile takes no input_shapes: import with them, run the same passes
            from autofusion.pipeline import run_tensor_passes
            from autofusion.policy.report import build_report, count_unfused_ops

            module = import_onnx(self.path, progress=False, input_shapes=shapes)
            before = count_unfused_ops(module)
            run_tensor_passes(module)
            self.report = build_report(module, kernels_before=before)
            self.run = lambda feeds: build_and_run(module, feeds, tmp)


class BuiltCache(dict[str, Built]):
    """Builds each fixture once, on first use."""

    def __init__(self, tmp: pytest.TempPathFactory) -> None:
        super().__init__()
        self.tmp = tmp

    def __missing__(self, name: str) -> Built:
        self[name] = Built(name, self.tmp.mktemp(name))
        return self[name]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> BuiltCache:
    return BuiltCache(tmp_path_factory)


def _patterns(report: dict[str, Any]) -> Counter[str]:
    return Counter(g["pattern"] for g in report["groups"])


def test_fixtures_are_small_and_complete() -> None:
    sizes = {p.name: p.stat().st_size for p in DATA.iterdir()}
    assert max(sizes.values()) < 300 * 1024, sizes
    # 2.5 MB with the dynamic variants (issue 12), 3.9 MB with roberta/deeplab/lraspp/yolo
    assert sum(sizes.values()) < 5 * 1024 * 1024
    for name, entry in MANIFEST.items():
        for f in entry["files"]:
            assert f in sizes, f"{name}: {f} missing"
        if entry["exporter"].startswith("dynamo"):
            assert len(entry["files"]) == 2, f"{name}: the dynamo export keeps external data"
    exporters = {(e["model"], e["exporter"]) for e in MANIFEST.values()}
    for model in ("resnet", "mobilenet", "bert", "gpt2", "vit", "lstm", "gru", "roberta",
                  "deeplab", "lraspp", "yolo"):  # fmt: skip
        assert {(model, "ts"), (model, "dynamo")} <= exporters, model


@pytest.mark.parametrize(
    "name", [n for n in NAMES if MANIFEST[n]["model"] in ("roberta", "deeplab", "lraspp", "yolo")]
)
def test_new_op_fixtures_have_ordinary_outputs(name: str) -> None:
    """Segmentation, detector and RoBERTa outputs are neither constant nor tiny, so a wrong
    Resize, CumSum or DFL cannot pass the tolerance; every output channel group varies."""
    entry = MANIFEST[name]
    for out, r in _ort(DATA / entry["files"][0], _feeds(entry)).items():
        assert 0.05 < float(np.std(r)) < 10, (out, float(np.std(r)))
        assert 0.1 < float(np.max(np.abs(r))) < 100, (out, float(np.max(np.abs(r))))
        if entry["model"] == "yolo":  # boxes (4 rows) and class scores (the rest) both vary
            assert float(np.std(r[0, :4])) > 0.1, out
            assert float(np.std(r[0, 4:])) > 0.1, out


@pytest.mark.parametrize("name", NAMES)
def test_interpreter_and_c_match_onnxruntime(name: str, built: BuiltCache) -> None:
    entry = MANIFEST[name]
    b = built[name]
    feeds = _feeds(entry)
    ref = _ort(b.path, feeds)
    interp = run_module(import_onnx(b.path, progress=False, input_shapes=_input_shapes(entry)),
                        feeds)  # fmt: skip
    got = b.run(feeds)
    assert sorted(ref) == sorted(entry["outputs"])
    for out, r in ref.items():
        assert_close(interp[out], r, f"{name} interpreter: {out}")
        assert_close(got[out], r, f"{name} C: {out}")


@pytest.mark.parametrize("name", ["bert_ts", "bert_dynamo"])
def test_fully_masked_rows_follow_the_nan_guard(name: str, built: BuiltCache) -> None:
    """attention_mask all zeros: every score row is masked, the exporters' Where(IsNaN(p), 0,
    p) guard decides the result; interpreter and C still match onnxruntime."""
    feeds = _feeds(MANIFEST[name], seed=3)
    feeds["attention_mask"][...] = 0
    b = built[name]
    ref = _ort(b.path, feeds)
    interp = run_module(import_onnx(b.path, progress=False), feeds)
    got = b.run(feeds)
    for out, r in ref.items():
        assert_close(interp[out], r, f"{name} interpreter, masked: {out}")
        assert_close(got[out], r, f"{name} C, masked: {out}")


@pytest.mark.parametrize("name", [n for n in NAMES if MANIFEST[n]["model"] == "resnet"])
def test_resnet_conv_bn_relu_and_residual_fuse(name: str, built: BuiltCache) -> None:
    rep = built[name].report
    # stem, block convs and the residual adds (+ReLU) each become one conv kernel
    assert _patterns(rep) == Counter({"conv_relu": 3, "conv_add_relu": 2}), _patterns(rep)
    assert rep["kernels_after"] < rep["kernels_before"]


@pytest.mark.parametrize("name", [n for n in NAMES if MANIFEST[n]["model"] == "unet"])
def test_unet_conv_transpose_is_one_gemm_with_its_bias(name: str, built: BuiltCache) -> None:
    """Each ConvTranspose2d (kernel 2, stride 2) becomes one GEMM with its bias in the
    epilogue; the ten conv+BN+ReLU stages are one conv kernel each."""
    pats = _patterns(built[name].report)
    assert pats == Counter({"conv_relu": 10, "matmul_add": 2}), pats


@pytest.mark.parametrize("name", ["resnet_tsbn", "mobilenet_tsbn", "unet_tsbn"])
def test_batchnorm_nodes_are_folded_into_convs(name: str) -> None:
    """The tsbn exports keep BatchNormalization: after the pipeline none is left, and each
    BN node is among the ONNX origins of the conv it was folded into."""
    from autofusion.api import prepare_module
    from autofusion.pipeline import PipelineOptions

    proto = onnx.load(str(DATA / MANIFEST[name]["files"][0]))
    bns = {n.name for n in proto.graph.node if n.op_type == "BatchNormalization"}
    assert len(bns) >= 6, name
    module, _ = prepare_module(proto, PipelineOptions())
    assert not [op for op in module.walk() if op.name == "nn.batch_norm"]
    conv_origins = {o.data for op in module.walk() if op.name == "nn.conv"
                    for o in op.attributes["onnx.origins"]}  # type: ignore[attr-defined]  # fmt: skip
    assert bns <= conv_origins, f"{name}: BN not folded into a conv: {sorted(bns - conv_origins)}"


@pytest.mark.parametrize("name", [n for n in NAMES if MANIFEST[n]["model"] == "mobilenet"])
def test_mobilenet_depthwise_relu6_fuse(name: str, built: BuiltCache) -> None:
    pats = _patterns(built[name].report)
    # 8 conv(+BN)+ReLU6 (Clip 0..6), the two residual blocks' projection convs take the add
    assert pats == Counter({"conv_relu6": 8, "conv_add": 2}), pats


@pytest.mark.parametrize(
    "name", [n for n in NAMES if MANIFEST[n]["model"] in ("bert", "vit")]
)  # fmt: skip
def test_encoder_gelu_and_bias_epilogues_fuse(name: str, built: BuiltCache) -> None:
    """Both exporters' Erf GELUs are recognised and fused into the FFN MatMul+bias kernel;
    the attention output projection takes bias + residual."""
    pats = _patterns(built[name].report)
    assert pats["matmul_add_gelu"] == 2, pats
    assert pats["matmul_add_add"] == 4, pats
    assert pats["gemm_tanh"] == 1, pats  # the pooler


@pytest.mark.parametrize(
    "name",
    [n for n in NAMES if MANIFEST[n]["model"] in ("bert", "gpt2") and not MANIFEST[n]["dynamic"]],
)
def test_transformer_layernorm_and_gelu_recognised(name: str) -> None:
    """LayerNormalization (the opset-17/18 op, or its opset-14 decomposition) is one
    nn.layer_norm; GELU (Erf form in BERT, tanh form 'gelu_new' in GPT-2) becomes nn.gelu;
    no ReduceMean, Erf or Pow is left, Tanh only in BERT's pooler."""
    from autofusion.api import prepare_module
    from autofusion.pipeline import PipelineOptions

    entry = MANIFEST[name]
    proto = onnx.load(str(DATA / entry["files"][0]))
    module, _ = prepare_module(proto, PipelineOptions())
    ops = Counter(op.name for op in module.walk())  # kernels' bodies included
    if entry["exporter"] == "ts14":  # opset 14 has no LayerNormalization: recognised
        assert "LayerNormalization" not in {n.op_type for n in proto.graph.node}
    assert ops["nn.layer_norm"] == 5, ops  # embeddings (or final) + 2 per layer
    assert ops["nn.reduce_mean"] == 0, ops
    assert ops["nn.gelu"] == 2, ops
    assert ops["nn.erf"] == 0, ops
    assert ops["nn.pow"] == 0, ops
    assert ops["nn.tanh"] == (1 if entry["model"] == "bert" else 0), ops  # BERT's pooler


def test_dynamic_dims_need_input_shapes() -> None:
    """The importer needs pins for a dynamic fixture. autofusion.compile() without pins
    returns, for a fixture with batch and seq free, a shape-specialising model that has
    compiled nothing yet, whose symbols are the file's dim_params (test_dynamic_model.py runs
    them); for a batch-only fixture (the CNNs), one library with a run-time batch
    (test_run_time_batch.py runs them)."""
    from autofusion.api import CompiledModel
    from autofusion.dynamic import DynamicModel

    for name in NAMES:
        if MANIFEST[name]["dynamic"]:
            path = DATA / MANIFEST[name]["files"][0]
            with pytest.raises(AutofusionError, match="dynamic dimension"):
                import_onnx(path, progress=False)
            proto = onnx.load(str(path), load_external_data=False)
            params = {d.dim_param for i in proto.graph.input
                      for d in i.type.tensor_type.shape.dim if d.dim_param}  # fmt: skip
            if params == {"batch"}:
                continue  # compiled eagerly to one library: test_run_time_batch.py
            m = autofusion.compile(path, cache=False)
            try:
                assert isinstance(m, DynamicModel), name
                assert set(m.symbols) == params, name
                assert m.report["shape_cache"]["misses"] == 0
            finally:
                m.close()

    def symbols(n: str) -> set[str]:
        return {sym for axes in MANIFEST[n]["dynamic_axes"].values() for sym in axes.values()}

    batch_only = [n for n in NAMES if MANIFEST[n]["dynamic"] and symbols(n) == {"batch"}]
    assert batch_only
    m = autofusion.compile(DATA / MANIFEST[batch_only[0]]["files"][0], cache=False)
    try:
        assert type(m) is CompiledModel
        assert m.report["batch"]["symbol"] == "batch"
    finally:
        m.close()


@pytest.mark.parametrize("name", [n for n in NAMES if MANIFEST[n]["dynamic"]])
def test_dynamic_fixture_symbolic_and_runs_at_two_shapes(name: str) -> None:
    """Each dynamic fixture keeps its manifest's dynamic axes as dim_params, and onnxruntime
    runs it at the first and last test shapes with outputs of ordinary size."""
    entry = MANIFEST[name]
    path = DATA / entry["files"][0]
    graph = onnx.load(str(path), load_external_data=False).graph
    declared = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
                for i in graph.input}  # fmt: skip
    for spec in entry["inputs"]:
        assert declared[spec["name"]] == spec["symbolic_shape"], spec["name"]
        for axis, sym in entry["dynamic_axes"].get(spec["name"], {}).items():
            assert spec["symbolic_shape"][int(axis)] == sym
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    shapes = [entry["test_shapes"][0], entry["test_shapes"][-1]]
    assert shapes[0] != shapes[1]
    for sym in shapes:
        feeds = {}
        for spec in entry["inputs"]:
            shape = [sym[d] if isinstance(d, str) else d for d in spec["symbolic_shape"]]
            if "range" in spec:
                feeds[spec["name"]] = rng.integers(*spec["range"], shape).astype(spec["dtype"])
            else:
                feeds[spec["name"]] = rng.standard_normal(shape).astype(spec["dtype"])
        outs = sess.run(None, feeds)
        assert outs[0].shape[0] == sym["batch"]
        peak = max(float(np.abs(o).max()) for o in outs)
        assert 0.1 <= peak <= 10, (sym, peak)


@pytest.mark.parametrize("name", [n for n in NAMES if MANIFEST[n]["model"] in ("lstm", "gru")])
def test_recurrent_fixtures_have_ordinary_outputs(name: str) -> None:
    """The LSTM/GRU exports keep their recurrent nodes and give outputs of ordinary size, so
    the match with onnxruntime above is not a tolerance artefact."""
    path = DATA / MANIFEST[name]["files"][0]
    ops = {n.op_type for n in onnx.load(str(path), load_external_data=False).graph.node}
    assert ops & {"LSTM", "GRU"}, ops
    for out, r in _ort(path, _feeds(MANIFEST[name])).items():
        assert 0.1 < float(np.abs(r).max()) < 10, (name, out, float(np.abs(r).max()))
