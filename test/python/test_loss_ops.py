"""SoftmaxCrossEntropyLoss / NegativeLogLikelihoodLoss / Trilu decompositions against
onnxruntime (interpreter and generated C); out-of-range targets in the generated C; refusals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from autofusion.errors import AutofusionError
from autofusion.frontend import import_onnx
from autofusion.interpreter import run_module
from autofusion.lowering.c.testing import (
    build_and_run,
    compile_onnx,
    emit_lowered,
    onnxruntime_outputs,
)
from autofusion.testing import assert_close

N, C, D = 3, 5, 4


def _sce_model(reduction: str, ignore_index: int | None, weights: bool = True):
    """scores [N, C, D] -> (Relu(x) + 1) -> SCE (loss and log_prob) with class weights."""
    attrs: dict = {"reduction": reduction}
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
    ins = ["s", "t"] + (["w"] if weights else [])
    nodes = [
        h.make_node("Relu", ["x"], ["r"]),
        h.make_node("Add", ["r", "one"], ["s"]),
        h.make_node("SoftmaxCrossEntropyLoss", ins, ["loss", "logp"], **attrs),
    ]
    inits = [h.make_tensor("one", T.FLOAT, [], [1.0])]
    if weights:
        inits.append(h.make_tensor("w", T.FLOAT, [C], [0.1, 0.2, 0.3, 0.4, 0.16]))
    g = h.make_graph(
        nodes,
        "g",
        [
            h.make_tensor_value_info("x", T.FLOAT, [N, C, D]),
            h.make_tensor_value_info("t", T.INT64, [N, D]),
        ],
        [
            h.make_tensor_value_info("loss", T.FLOAT, None),
            h.make_tensor_value_info("logp", T.FLOAT, None),
        ],
        initializer=inits,
    )
    return h.make_model(g, opset_imports=[h.make_opsetid("", 13)])


def _feeds(ignore_index: int | None) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 2, (N, C, D)).astype(np.float32)
    t = rng.integers(0, C, (N, D)).astype(np.int64)
    if ignore_index is not None:
        t[0, 1] = t[2, 3] = ignore_index
    return {"x": x, "t": t}


@pytest.mark.parametrize(
    ("reduction", "ignore_index"), [("mean", 2), ("mean", -1), ("sum", -7), ("none", 3)]
)
def test_sce_matches_onnxruntime(reduction: str, ignore_index: int, tmp_path: Path) -> None:
    m = _sce_model(reduction, ignore_index)
    feeds = _feeds(ignore_index)
    ref = onnxruntime_outputs(m, feeds)
    interp = run_module(import_onnx(m, progress=False), feeds)
    got = build_and_run(compile_onnx(m), feeds, tmp_path)
    for name in ("loss", "logp"):
        assert 0.1 <= float(np.abs(ref[name]).max()) <= 10, "model outputs of ordinary size"
        assert_close(interp[name], ref[name], f"interpreter {name}")
        assert_close(got[name], ref[name], f"C {name}")


def test_sce_mean_without_weights_matches_onnxruntime(tmp_path: Path) -> None:
    m = _sce_model("mean", None, weights=False)
    feeds = _feeds(None)
    ref = onnxruntime_outputs(m, feeds)
    got = build_and_run(compile_onnx(m), feeds, tmp_path)
    assert_close(got["loss"], ref["loss"], "C loss")


def test_out_of_range_target_is_an_index_error(tmp_path: Path) -> None:
    """A target outside [-C, C) that is not ignore_index reaches the gathers: the generated C
    reports the index fault (no out-of-bounds read), also under ASan/UBSan."""
    from autofusion.runtime.build import build_sanitizer_driver, run_driver

    m = _sce_model("mean", 2)
    feeds = _feeds(2)
    feeds["t"][1, 0] = 1000
    with pytest.raises(AutofusionError, match="index out of range"):
        run_module(import_onnx(m, progress=False), feeds)
    with pytest.raises(AutofusionError, match=r"run: .*index"):
        build_and_run(compile_onnx(m), feeds, tmp_path / "so")
    san = tmp_path / "san"
    san.mkdir()
    emit_lowered(compile_onnx(m), san)
    exe = build_sanitizer_driver(san)
    outs = [((), np.dtype(np.float32)), ((N, C, D), np.dtype(np.float32))]
    with pytest.raises(AutofusionError) as err:
        run_driver(exe, san / "weights.bin", [feeds["x"], feeds["t"]], outs, tmp_path / "io")
    assert "Sanitizer" not in str(err.value)
    assert "runtime error:" not in str(err.value)
    assert "index" in str(err.value)


def test_trilu_matches_onnxruntime(tmp_path: Path) -> None:
    g = h.make_graph(
        [
            h.make_node("Trilu", ["x", "k"], ["u"], upper=1),
            h.make_node("Trilu", ["x", "km"], ["l"], upper=0),
        ],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2, 4, 6])],
        [
            h.make_tensor_value_info("u", T.FLOAT, None),
            h.make_tensor_value_info("l", T.FLOAT, None),
        ],
        initializer=[h.make_tensor("k", T.INT64, [], [2]), h.make_tensor("km", T.INT64, [], [-1])],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 14)])
    feeds = {"x": np.random.default_rng(1).uniform(0.5, 2, (2, 4, 6)).astype(np.float32)}
    ref = onnxruntime_outputs(m, feeds)
    got = build_and_run(compile_onnx(m), feeds, tmp_path)
    for name in ("u", "l"):
        assert_close(got[name], ref[name], f"C {name}")


def test_bad_reduction_is_refused() -> None:
    with pytest.raises(AutofusionError, match=r"\(SoftmaxCrossEntropyLoss\): reduction 'avg'"):
        import_onnx(_sce_model("avg", None), progress=False)


def test_target_shape_mismatch_is_refused() -> None:
    g = h.make_graph(
        [h.make_node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"])],
        "g",
        [
            h.make_tensor_value_info("x", T.FLOAT, [N, C]),
            h.make_tensor_value_info("t", T.INT64, [N + 1]),
        ],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    with pytest.raises(AutofusionError, match=r"\(NegativeLogLikelihoodLoss\): target shape"):
        import_onnx(m, progress=False)
