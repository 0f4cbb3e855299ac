"""Importer errors: each malformed or unsupported input gives one AutofusionError naming the
file (and node, op type) and what is wrong; autofusion-opt exits 1 without a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from autofusion.errors import AutofusionError
from autofusion.frontend import import_onnx, import_onnx_bytes

INPUTS = Path(__file__).resolve().parents[1] / "filecheck" / "frontend" / "inputs"
sys.path.insert(0, str(INPUTS))
from make_model import MODELS  # noqa: E402


def _error(data: bytes, name: str = "m.onnx") -> str:
    with pytest.raises(AutofusionError) as info:
        import_onnx_bytes(data, name, progress=False)
    msg = str(info.value)
    assert "\n" not in msg, msg
    assert msg.startswith(f"{name}: "), msg
    return msg


def _bytes(name: str) -> bytes:
    return MODELS[name]().SerializeToString()


def test_truncated_protobuf() -> None:
    data = _bytes("conv_bn_relu_v3")
    for cut in (200, len(data) // 2, len(data) - 3):
        msg = _error(data[:cut])
        assert "not a valid ONNX model" in msg or "holds" in msg or "never produced" in msg


def test_garbage_and_empty_files() -> None:
    assert "truncated or corrupt protobuf" in _error(b"\xff\xfe garbage \x00\x01" * 10)
    assert "not a valid ONNX model" in _error(b"just some text that is not a model\n")
    assert "no graph" in _error(b"\x08\x07")  # a valid protobuf: ir_version=7 and nothing else
    assert "empty file" in _error(b"")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(AutofusionError, match=r"nope\.onnx: no such file"):
        import_onnx(tmp_path / "nope.onnx")


def test_every_unsupported_op_is_listed() -> None:
    assert _error(_bytes("unsupported")) == (
        "m.onnx: unsupported ONNX ops: FooBar (nodes: foo1, foo2); NonMaxSuppression (nodes: nms)"
    )


def test_custom_domain_ops_are_listed() -> None:
    nodes = [h.make_node("FusedMatMul", ["x", "x"], ["y"], name="fm", domain="com.microsoft")]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2, 2])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13), h.make_opsetid("com.microsoft", 1)])
    assert "com.microsoft.FusedMatMul (nodes: fm)" in _error(m.SerializeToString())


def test_dangling_input() -> None:
    assert "node 'add_ghost' (Add) input 'ghost'" in _error(_bytes("dangling"))


def test_cycle() -> None:
    msg = _error(_bytes("cycle"))
    assert msg.endswith("cycle through nodes 'first' (Add), 'second' (Relu)")


def test_dynamic_shape() -> None:
    assert "graph input 'x' has a dynamic dimension 'batch' (dim 0)" in _error(
        _bytes("dynamic_input")
    )


def test_opset_out_of_range() -> None:
    assert "opset 7 is not supported (autofusion imports opsets 9 to 28)" in _error(
        _bytes("old_opset")
    )


def test_unsupported_dtypes() -> None:
    assert "node 'to_bf16' (Cast): cast to unsupported element type BFLOAT16" in _error(
        _bytes("bad_dtype")
    )
    init = h.make_tensor("w", T.BFLOAT16, [2], [1.0, 2.0])
    nodes = [h.make_node("Add", ["x", "w"], ["y"], name="add")]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", T.BFLOAT16, [2])],
        [h.make_tensor_value_info("y", T.BFLOAT16, None)],
        [init],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    assert "graph input 'x' has unsupported element type BFLOAT16" in _error(m.SerializeToString())


def test_used_extra_output() -> None:
    assert "node 'pool_with_idx' (MaxPool): output(s) idx are not supported" in _error(
        _bytes("maxpool_indices")
    )


def test_run_time_value_where_a_constant_is_needed() -> None:
    nodes = [h.make_node("Reshape", ["x", "shape"], ["y"], name="dyn_reshape")]
    g = h.make_graph(
        nodes,
        "g",
        [
            h.make_tensor_value_info("x", T.FLOAT, [2, 3]),
            h.make_tensor_value_info("shape", T.INT64, [2]),
        ],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    assert (
        "node 'dyn_reshape' (Reshape): shape (input 1) must be a constant computable at import time"
    ) in _error(m.SerializeToString())


def test_bad_shapes_name_the_node() -> None:
    w = nh.from_array(np.zeros((4, 5), np.float32), "w")
    nodes = [h.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2, 3])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        [w],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    assert "node 'mm' (MatMul): contraction sizes differ" in _error(m.SerializeToString())


def test_wrong_raw_data_size() -> None:
    t = onnx.TensorProto(name="w", data_type=T.FLOAT, dims=[4], raw_data=b"\x00" * 8)
    nodes = [h.make_node("Add", ["x", "w"], ["y"], name="add")]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [4])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        [t],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    assert "tensor 'w' holds 8 bytes, its shape [4] needs 16" in _error(m.SerializeToString())


def _opt() -> list[str]:
    exe = Path(sys.executable).parent / "autofusion-opt"
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-m", "autofusion.tools.opt"]


def test_cli_exit_status_and_no_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(_bytes("unsupported"))
    trunc = tmp_path / "trunc.onnx"
    trunc.write_bytes(_bytes("conv_bn_relu_v3")[:300])
    env = {k: v for k, v in os.environ.items() if k != "AUTOFUSION_DEBUG"}
    for path, expected in (
        (bad, "unsupported ONNX ops: FooBar (nodes: foo1, foo2)"),
        (trunc, "not a valid ONNX model"),
    ):
        proc = subprocess.run(
            [*_opt(), str(path)], capture_output=True, text=True, env=env, timeout=120
        )
        assert proc.returncode == 1, proc.stderr
        assert "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1, proc.stderr
        assert lines[0].startswith(f"autofusion-opt: error: {path}: ")
        assert expected in lines[0]
        assert proc.stdout == ""


def test_random_ops_are_not_folded() -> None:
    nodes = [
        h.make_node("RandomNormal", [], ["r"], name="noise", shape=[4]),
        h.make_node("Add", ["x", "r"], ["y"], name="add"),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [4])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    assert _error(m.SerializeToString()) == (
        "m.onnx: unsupported ONNX ops: RandomNormal (nodes: noise)"
    )
