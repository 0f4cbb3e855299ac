"""Precision validation with rollback (issue 15 item 2) and the fast_math kernels it guards.

A two-group model: MatMul+Add+Sigmoid and MatMul+Add+Tanh, both with ``fast_math``. The
fast sigmoid (fast exp, ~1e-4) passes the 1e-3 tolerance; the fast tanh (Pade, ~2e-2) does
not, so validation rolls back exactly that group and the model matches onnxruntime.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import autofusion
from autofusion.api import build_model_dir, open_model
from autofusion.errors import AutofusionError
from autofusion.pipeline import PipelineOptions, pipeline_string
from autofusion.testing import compare


def _model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)

    def w(name: str, *shape: int, scale: float) -> onnx.TensorProto:
        data = (rng.standard_normal(shape) * scale).astype(np.float32)
        return numpy_helper.from_array(data, name)

    nodes = [
        helper.make_node("MatMul", ["x", "W1"], ["m1"], name="mm1"),
        helper.make_node("Add", ["m1", "B1"], ["a1"], name="add1"),
        helper.make_node("Sigmoid", ["a1"], ["s1"], name="sig1"),
        helper.make_node("MatMul", ["s1", "W2"], ["m2"], name="mm2"),
        helper.make_node("Add", ["m2", "B2"], ["a2"], name="add2"),
        helper.make_node("Tanh", ["a2"], ["y"], name="tanh1"),
    ]
    graph = helper.make_graph(
        nodes,
        "two_groups",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
        [w("W1", 16, 16, scale=0.4), w("B1", 16, scale=0.3), w("W2", 16, 8, scale=0.4),
         w("B2", 8, scale=0.3)],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _config(tmp_path: Path, data: object, name: str = "cfg.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(data))
    return p


def _ort(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


X = np.random.default_rng(7).standard_normal((4, 16)).astype(np.float32)
FAST = ["Tanh", "Sigmoid"]


def test_fast_math_alone_is_imprecise(tmp_path: Path) -> None:
    """The fast kernels really are in the C and really miss the bar: what validation guards."""
    model = _model()
    m = autofusion.compile(model, config=_config(tmp_path, {"fast_math": FAST}), cache=False)
    text = (m.directory / "model.c").read_text()
    assert "af_fast_tanhf(" in text
    assert "af_fast_expf(" in text
    assert [g.get("fast_math") for g in m.report["groups"]] == [True, True]
    assert "precision" not in m.report
    assert not compare(m.run({"x": X})["y"], _ort(model, X)).match


def test_validation_rolls_back_exactly_the_imprecise_group(tmp_path: Path) -> None:
    model = _model()
    cfg = _config(tmp_path, {"fast_math": FAST, "precision": {"validate": True}})
    lines: list[str] = []
    m = autofusion.compile(model, config=cfg, cache=False, progress=lines.append)
    rows = {r["pattern"]: r for r in m.report["precision"]["groups"]}
    assert set(rows) == {"matmul_add_sigmoid", "matmul_add_tanh"}
    assert rows["matmul_add_tanh"]["rolled_back"] is True
    assert rows["matmul_add_tanh"]["delta"] > 1e-3
    assert rows["matmul_add_sigmoid"]["rolled_back"] is False
    assert 0 < rows["matmul_add_sigmoid"]["delta"] <= 1e-3  # fast exp: measured, not zero
    refusals = [r for r in m.report["refusals"] if r["code"] == "precision"]
    assert len(refusals) == 1
    assert refusals[0]["nodes"] == ["mm2", "add2", "tanh1", "B2"]
    assert f"measured delta {rows['matmul_add_tanh']['delta']:.3g}" in refusals[0]["reason"]
    # the sigmoid group is still fused with fast math; the tanh ops are separate kernels
    assert [g["pattern"] for g in m.report["groups"]] == ["matmul_add_sigmoid"]
    assert m.report["kernels_after"] == 4
    text = (m.directory / "model.c").read_text()
    assert "af_fast_expf(" in text
    assert "af_fast_tanhf(" not in text
    assert "validate-precision" in m.report["pipeline"]
    got = m.run({"x": X})["y"]
    c = compare(got, _ort(model, X))
    assert c.match, c.reason


def test_no_validate_default_is_byte_identical(tmp_path: Path) -> None:
    """validate: false (and an empty fast_math) change nothing: same passes, same files."""
    model = _model()
    cfg = _config(tmp_path, {"precision": {"validate": False}, "fast_math": []})
    outs = []
    for i, config in enumerate((None, str(cfg))):
        opts = PipelineOptions(config=config)
        assert "validate-precision" not in pipeline_string(opts)
        out = tmp_path / f"out{i}"
        out.mkdir()
        build_model_dir(open_model(model), out, opts, build=False)
        outs.append(out)
    for name in ("model.c", "model.h", "weights.bin"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    assert "validate-precision" in pipeline_string(PipelineOptions(validate_precision=True))
    assert "validate-precision" not in pipeline_string(
        PipelineOptions(validate_precision=True, fusion=False)
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"precision": {"tolerance": 1e-2}}, "need 'precision.validate: true'"),
        ({"precision": {"validate": True, "tolerance": 0}}, "finite number > 0"),
        ({"precision": {"validate": "yes"}}, "must be true or false"),
        ({"precision": {"validate": True, "calibration": "nope.npz"}}, "no such file"),
        ({"fast_math": ["Relu"]}, "has no fast-math variant"),
        ({"fast_math": "Tanh"}, "must be a list of op types"),
    ],
)
def test_config_errors(tmp_path: Path, data: object, message: str) -> None:
    from autofusion.policy.config import load_config

    with pytest.raises(AutofusionError, match=message):
        load_config(_config(tmp_path, data))


def test_calibration_inputs(tmp_path: Path) -> None:
    """The calibration file is read (relative to the config) and must hold every input."""
    np.savez(tmp_path / "calib.npz", z=X)
    precision = {"validate": True, "calibration": "calib.npz"}
    cfg = _config(tmp_path, {"fast_math": FAST, "precision": precision})
    with pytest.raises(AutofusionError, match=r"calib.npz: calibration inputs lack 'x'"):
        autofusion.compile(_model(), config=cfg, cache=False)


def test_cli_flag_validates(tmp_path: Path) -> None:
    """``autofusion-compile --validate-precision`` turns validation on without the config key."""
    from autofusion.tools.compile import main

    onnx.save(_model(), tmp_path / "m.onnx")
    cfg = _config(tmp_path, {"fast_math": FAST})
    report = tmp_path / "report.json"
    argv = [str(tmp_path / "m.onnx"), "-o", str(tmp_path / "out"), "--config", str(cfg),
            "--validate-precision", "--report", str(report)]  # fmt: skip
    assert main(argv) == 0
    data = json.loads(report.read_text())
    assert [r["rolled_back"] for r in data["precision"]["groups"]] == [False, True]
    assert [r["nodes"] for r in data["refusals"] if r["code"] == "precision"] == [
        ["mm2", "add2", "tanh1", "B2"]
    ]
