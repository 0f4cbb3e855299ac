"""Mixed precision (config ``precision.fp16_ops`` / ``bf16_ops``, pass assign-precision):
the listed MatMul/Gemm/Conv compute in the 16-bit GEMM core (weights stored 16-bit in
weights.bin and in memory, activations rounded at the op, fp32 accumulation), the generated C
calls it, and the models still match onnxruntime within the documented looser bar (issue 15).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import autofusion
from autofusion import zoo
from autofusion.api import build_model_dir
from autofusion.errors import AutofusionError
from autofusion.lowering.c.printer import from_storage, to_storage
from autofusion.pipeline import PipelineOptions
from autofusion.policy import config_from_dict
from autofusion.testing import REDUCED_PRECISION_BAR, compare

# Element counts are multiples of 32, so the 64-byte alignment adds no padding either way.
W_SHAPE = (64, 96)
K_SHAPE = (16, 8, 3, 3)


def _model(w: np.ndarray, k: np.ndarray) -> onnx.ModelProto:
    nodes = [
        helper.make_node("Conv", ["x", "K"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Reshape", ["r", "shp"], ["f"], name="flat"),
        helper.make_node("MatMul", ["f", "W"], ["m"], name="mm"),
        helper.make_node("Tanh", ["m"], ["y"], name="tanh"),
    ]
    inits = [
        numpy_helper.from_array(w, "W"),
        numpy_helper.from_array(k, "K"),
        numpy_helper.from_array(np.array([4, 64], np.int64), "shp"),
    ]
    graph = helper.make_graph(
        nodes,
        "mixed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 96])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _weights() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    w = (rng.standard_normal(W_SHAPE) * 0.1).astype(np.float32)
    k = (rng.standard_normal(K_SHAPE) * 0.2).astype(np.float32)
    return w, k


def _x() -> np.ndarray:
    return np.random.default_rng(1).standard_normal((1, 8, 4, 4)).astype(np.float32)


def _ort(model: onnx.ModelProto) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": _x()})[0]


def _config(tmp_path: Path, text: str) -> str:
    p = tmp_path / f"cfg{abs(hash(text))}.yaml"
    p.write_text(text)
    return str(p)


def _build(tmp_path: Path, name: str, config: str | None) -> Path:
    out = tmp_path / name
    build_model_dir(_model(*_weights()), out, PipelineOptions(config=config), build=False)
    return out


def test_storage_rounding() -> None:
    x = np.array([1.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, -2.5, 0.0, np.inf, np.nan], np.float32)
    bf = from_storage(to_storage(x, "bf16"), "bf16")
    # round to nearest even at 8 significant bits; inf and NaN stay what they are
    assert bf[:6].tolist() == [1.0, 1.0, 1.0 + 4 * 2**-8, -2.5, 0.0, np.inf]
    assert np.isnan(bf[6])
    half = from_storage(to_storage(x, "fp16"), "fp16")
    assert half[:6].tolist() == [1.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, -2.5, 0.0, np.inf]


@pytest.mark.parametrize("kind", ["fp16", "bf16"])
def test_weights_shrink_and_code_differs(tmp_path: Path, kind: str) -> None:
    base = _build(tmp_path, "fp32", None)
    # fp32_ops alone changes nothing: everything is fp32 already
    same = _build(tmp_path, "keep", _config(tmp_path, "precision: {fp32_ops: [Softmax]}"))
    assert (same / "model.c").read_bytes() == (base / "model.c").read_bytes()
    assert (same / "weights.bin").read_bytes() == (base / "weights.bin").read_bytes()
    red = _build(tmp_path, kind, _config(tmp_path, f"precision: {{{kind}_ops: [MatMul, Conv]}}"))
    assert (red / "model.c").read_text() != (base / "model.c").read_text()
    saved = 2 * (int(np.prod(W_SHAPE)) + int(np.prod(K_SHAPE)))  # 4 -> 2 bytes per weight
    size = (base / "weights.bin").stat().st_size
    assert size - (red / "weights.bin").stat().st_size == saved
    only_mm = _build(tmp_path, "mm", _config(tmp_path, f"precision: {{{kind}_ops: [MatMul]}}"))
    assert size - (only_mm / "weights.bin").stat().st_size == 2 * int(np.prod(W_SHAPE))


def _cast_activations(model: onnx.ModelProto, kind: str) -> onnx.ModelProto:
    """``model`` with each Conv/MatMul input that is not an initializer rounded to ``kind``
    (a Cast to it and back): onnxruntime computing what the 16-bit core computes."""
    to = TensorProto.BFLOAT16 if kind == "bf16" else TensorProto.FLOAT16
    inits = {t.name for t in model.graph.initializer}
    nodes = []
    for node in model.graph.node:
        if node.op_type in ("Conv", "MatMul") and node.input[0] not in inits:
            src, low, back = node.input[0], f"{node.name}_lp", f"{node.name}_rounded"
            nodes.append(helper.make_node("Cast", [src], [low], to=to))
            nodes.append(helper.make_node("Cast", [low], [back], to=TensorProto.FLOAT))
            node.input[0] = back
        nodes.append(node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return model


@pytest.mark.parametrize("kind", ["fp16", "bf16"])
def test_matches_onnxruntime(tmp_path: Path, kind: str) -> None:
    w, k = _weights()
    cfg = _config(tmp_path, f"precision: {{{kind}_ops: [MatMul, Conv]}}")
    got = autofusion.compile(_model(w, k), config=cfg).run({"x": _x()})["y"]
    ref = _ort(_model(w, k))
    assert compare(got, ref, *REDUCED_PRECISION_BAR[kind]).match

    # exactly the rounded weights and activations, accumulated in fp32: the default bar
    # against onnxruntime on the model whose operands went through the same rounding
    def rounded_(a: np.ndarray) -> np.ndarray:
        return from_storage(to_storage(a, kind), kind)

    rounded = _cast_activations(_model(rounded_(w), rounded_(k)), kind)
    c = compare(got, _ort(rounded))
    assert c.match, c.reason
    if kind == "bf16":  # the rounding is real: the fp32 bar no longer holds
        assert not compare(got, ref).match
        # and it includes the activations: rounding the weights alone is not what ran
        assert not compare(got, _ort(_model(rounded_(w), rounded_(k)))).match


@pytest.mark.parametrize("kind", ["fp16", "bf16"])
def test_generated_c_calls_16bit_core(tmp_path: Path, kind: str) -> None:
    red = _build(tmp_path, kind, _config(tmp_path, f"precision: {{{kind}_ops: [MatMul, Conv]}}"))
    text = (red / "model.c").read_text()
    const = "AFRT_LP_BF16" if kind == "bf16" else "AFRT_LP_F16"
    # conv: x cast (fp32 activation), w stored (1); matmul: a cast (0), b stored (1)
    assert re.search(rf"afrt_conv2d_lp\({const}, \w+, \w+, 1, ", text)
    assert re.search(rf"afrt_matmul_lp\({const}, (INT64_C\(\d+\), ){{4}}[^,]+, \w+, 0, ", text)
    assert "afrt_matmul_f32(" not in text
    assert "afrt_conv2d_f32(" not in text
    only_mm = _build(tmp_path, "mm", _config(tmp_path, f"precision: {{{kind}_ops: [MatMul]}}"))
    text = (only_mm / "model.c").read_text()
    assert "afrt_conv2d_f32(" in text
    assert "afrt_conv2d_lp(" not in text
    assert "afrt_matmul_lp(" in text


@pytest.mark.parametrize("name", ["tiny_cnn", "tiny_bert"])
@pytest.mark.parametrize("kind", ["fp16", "bf16"])
def test_zoo_models(tmp_path: Path, name: str, kind: str) -> None:
    """A small conv net and a small transformer: within the looser bar of onnxruntime, and
    (bf16) measurably different from the fp32 build, so the compute really changed."""
    model = zoo.get_model(name)
    feeds = zoo.sample_inputs(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    refs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    cfg = _config(tmp_path, f"precision: {{{kind}_ops: [MatMul, Gemm, Conv]}}")
    lp = autofusion.compile(model, config=cfg)
    got = lp.run(feeds)
    fp32 = autofusion.compile(model).run(feeds) if kind == "bf16" else {}
    for out, ref in refs.items():
        c = compare(got[out], ref, *REDUCED_PRECISION_BAR[kind])
        assert c.match, f"{name} {out}: {c.reason}"
        assert 0.1 <= float(np.abs(ref).max()) <= 100, "ordinary output size"
        if kind == "bf16":
            assert not np.array_equal(got[out], fp32[out])
            assert not compare(got[out], fp32[out]).match, "bf16 within the fp32 bar"


@pytest.mark.parametrize(
    ("precision", "needle"),
    [
        ({"bf16_ops": ["Relu"]}, "only the weights of Conv, Gemm, MatMul"),
        ({"bf16_ops": ["MatMul"], "fp16_ops": ["MatMul"]}, "both fp16_ops and bf16_ops"),
        ({"bf16_ops": ["MatMull"]}, "'MatMull' is not an ONNX op type"),
        ({"int8_ops": ["MatMul"]}, "unknown config key 'precision.int8_ops'"),
    ],
)
def test_config_errors(precision: dict[str, list[str]], needle: str) -> None:
    with pytest.raises(AutofusionError, match=needle.replace(".", r"\.")):
        config_from_dict({"precision": precision})


def test_ascendc_refuses_reduced_precision(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "precision: {bf16_ops: [MatMul]}")
    with pytest.raises(AutofusionError, match="target ascendc keeps its weights fp32"):
        build_model_dir(
            _model(*_weights()), tmp_path / "a", PipelineOptions(target="ascendc", config=cfg)
        )
