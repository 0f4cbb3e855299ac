"""afrt.h's built-in clamp epilogue (``afrt_epi_clamp_fn``): the GEMM core applies it in the
micro-kernel's registers (AVX-512 and AVX2) or per micro-tile, Winograd in its output transform and
the blocked direct conv between its gather and its store, and each must give exactly what the same
epilogue gives when called as an ordinary function (the C driver compares the bits, with NaN, inf
and -0.0 among the inputs, residuals and biases; two NaNs that meet may keep either sign) for 1x1
and im2col convs, batched matmuls with alpha, beta and a broadcast residual, Winograd (cut edge
tiles, several tile blocks) and the blocked direct conv (its tile widths, row pairs, stride 2, 1x1,
a blocked output), on every ISA path, 1 and 2 threads, and under ASan/UBSan.
It also runs afrt_conv2d_f32 and afrt_matmul_f32 in place (the output buffer holding the
residual, plan-buffers' memory.residual_inplace) against a separate residual: the GEMM core's
own in-place path (k-block splits, edge, half and full tiles, im2col, groups, alpha) and the
copy other paths take (Winograd, depthwise, gemm_1x1_t)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from conv_epilogues import check_builtin_epilogue
from onnx import TensorProto, helper, numpy_helper
from runtime_drivers import ISA_FLAGS, RUNTIME_C, build_driver

DRIVER_SRC = RUNTIME_C / "afrt_epi_clamp_driver.c"


@pytest.fixture(scope="module", params=list(ISA_FLAGS))
def driver(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("epi") / f"afrt_epi_clamp_{request.param}"
    return build_driver(DRIVER_SRC, out, request.param)


@pytest.mark.parametrize("threads", [1, 2])
def test_builtin_clamp_epilogue_is_bit_identical(driver: Path, threads: int) -> None:
    got = subprocess.run([str(driver), str(threads)], capture_output=True, text=True)
    assert got.returncode == 0, got.stdout + got.stderr
    assert got.stdout.strip() == "ok 370"


def _residual_block() -> onnx.ModelProto:
    """1x1 conv (gemm_1x1) + residual Add + Relu, then a strided 3x3 conv (im2col) + Clip(0, 6):
    both epilogues become the built-in clamp epilogue."""
    rng = np.random.default_rng(3)

    def w(name: str, shape: tuple[int, ...]) -> onnx.TensorProto:
        fan_in = int(np.prod(shape[1:]))
        return numpy_helper.from_array(
            (rng.uniform(-1.5, 1.5, shape) / np.sqrt(fan_in)).astype(np.float32), name
        )

    inits = [
        w("w1", (40, 40, 1, 1)),
        numpy_helper.from_array(rng.uniform(-0.5, 0.5, 40).astype(np.float32), "b1"),
        w("w2", (24, 40, 3, 3)),
        numpy_helper.from_array(np.array(0, np.float32), "lo"),
        numpy_helper.from_array(np.array(6, np.float32), "hi"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"]),
        helper.make_node("Add", ["c1", "x"], ["s1"]),
        helper.make_node("Relu", ["s1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Clip", ["c2", "lo", "hi"], ["y"]),
    ]
    g = helper.make_graph(
        nodes,
        "residual_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 40, 15, 13])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 24, 8, 7])],
        inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("threads", [1, 2])
def test_clamp_epilogues_match_onnxruntime(threads: int) -> None:
    """The compiled block uses afrt_epi_clamp_fn and matches onnxruntime, NaN and inf
    included (a NaN reaches the residual Add and the Relu; +-inf saturate the Clip)."""
    model = _residual_block()
    check_builtin_epilogue(model, (2, 40, 15, 13), -2.0, "afrt_epi_clamp_fn", 4, threads)
