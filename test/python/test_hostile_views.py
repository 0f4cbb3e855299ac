"""Hostile shapes: dynamic dimensions in IR text and tensors too large to address.

Each must give one clear error naming the tensor (exit 1 from the CLI, ``AutofusionError``
from Python), never C that prints ``INT64_MIN`` dimensions or wraps ``size_t``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from hostile import assert_clean_api_error, assert_clean_cli_error, assert_nothing_written, run_tool
from onnx import TensorProto, helper, numpy_helper

import autofusion
from autofusion.errors import AutofusionError
from autofusion.frontend.onnx_import import import_onnx_bytes

F = TensorProto.FLOAT


def _model(
    shape: list[int], nodes: list[onnx.NodeProto], inits: dict[str, np.ndarray] | None = None
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "hostile",
        [helper.make_tensor_value_info("x", F, shape)],
        [helper.make_tensor_value_info("y", F, None)],
        initializer=[numpy_helper.from_array(v, k) for k, v in (inits or {}).items()],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_input_over_byte_limit_is_refused_at_import() -> None:
    model = _model([2**31, 2**31], [helper.make_node("Relu", ["x"], ["y"])])
    with pytest.raises(AutofusionError) as e:
        import_onnx_bytes(model.SerializeToString(), "big.onnx")
    assert_clean_api_error(e, "big.onnx", "input 'x'", "18446744073709551616 bytes", "2^48")


def test_intermediate_over_byte_limit_names_the_node() -> None:
    shape = np.array([2**60, 4], np.int64)
    model = _model(
        [1, 4], [helper.make_node("Expand", ["x", "s"], ["y"], name="grow")], {"s": shape}
    )
    with pytest.raises(AutofusionError) as e:
        autofusion.compile(model, cache=False)
    assert_clean_api_error(e, "grow", "output 'y'", "tensor<1152921504606846976x4xf32>", "2^48")


def test_cli_compile_refuses_oversized_tensor(tmp_path: Path) -> None:
    model = _model([2**40, 2**10], [helper.make_node("Relu", ["x"], ["y"])])
    path = tmp_path / "big.onnx"
    onnx.save(model, path)
    out = tmp_path / "out"
    proc = run_tool("compile", [str(path), "-o", str(out)])
    assert_clean_cli_error(proc, "input 'x'", "4503599627370496 bytes")
    assert_nothing_written(out)


DYNAMIC = """func.func @main(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %a = nn.relu %x : (tensor<?x16xf32>) -> tensor<?x16xf32>
  func.return %a : tensor<?x16xf32>
}
"""


@pytest.mark.parametrize(
    "args",
    [
        ["-p", "fuse,plan-buffers", "-t", "c"],
        ["-t", "c"],
        ["-p", "convert-nn-to-buffers,lower-nn-to-loops"],
        ["-p", "tile-fusion{memory-limit-mb=1}"],
    ],
)
def test_dynamic_dimension_is_refused(args: list[str], tmp_path: Path) -> None:
    src = tmp_path / "dyn.mlir"
    src.write_text(DYNAMIC)
    out = tmp_path / "out.c"
    proc = run_tool("opt", [str(src), *args, "-o", str(out)])
    assert_clean_cli_error(proc, "argument 0", "tensor<?x16xf32>", "dimension 0 is dynamic")
    assert not out.exists() or out.read_text() == ""
