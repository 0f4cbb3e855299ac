"""afrt.h's built-in SiLU epilogue (``afrt_epi_silu_fn``, also the sigmoid gate alone): its
own exp (range reduction + polynomial, AVX-512 / AVX2 intrinsics, scalar elsewhere) against
float64 over a dense sweep of [-100, 100] with explicit error bounds, the limits exact (NaN,
+-inf, -0.0, FLT_MAX, denormals; -inf gives NaN, as Mul(x, Sigmoid(x)) does); and every conv
and matmul path with the built-in epilogue bit for bit against the same kernels calling it
as an epilogue they do not know (the AVX-512 GEMM core applies it in registers), on every ISA
path, 1 and 2 threads, under ASan/UBSan.
A compiled conv + SiLU and a conv + sigmoid gate match onnxruntime."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from conv_epilogues import check_builtin_epilogue
from onnx import TensorProto, helper, numpy_helper
from runtime_drivers import ISA_FLAGS, RUNTIME_C, build_driver

DRIVER_SRC = RUNTIME_C / "afrt_silu_driver.c"


@pytest.fixture(scope="module", params=list(ISA_FLAGS))
def driver(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("silu") / f"afrt_silu_{request.param}"
    return build_driver(DRIVER_SRC, out, request.param)


def test_silu_against_float64(driver: Path) -> None:
    got = subprocess.run([str(driver), "sweep"], capture_output=True, text=True)
    assert got.returncode == 0, got.stdout + got.stderr
    words = got.stdout.split()
    assert [words[i] for i in (0, 1, 4)] == ["sweep", "silu", "gate"], got.stdout
    silu_abs, silu_rel, gate_abs, gate_rel = (float(words[i]) for i in (2, 3, 5, 6))
    # about 2 ulp relative; absolute at |x| = 100 (SiLU) and near 0.5 (the gate)
    assert silu_rel < 4e-7, got.stdout
    assert gate_rel < 4e-7, got.stdout
    assert silu_abs < 4e-6, got.stdout
    assert gate_abs < 4e-7, got.stdout


@pytest.mark.parametrize("threads", [1, 2])
def test_builtin_silu_epilogue_is_bit_identical(driver: Path, threads: int) -> None:
    got = subprocess.run([str(driver), str(threads)], capture_output=True, text=True)
    assert got.returncode == 0, got.stdout + got.stderr
    assert got.stdout.strip() == "ok 22"


def _silu_block() -> onnx.ModelProto:
    """1x1 conv + SiLU (Sigmoid then Mul), then a depthwise 3x3 conv + Sigmoid."""
    rng = np.random.default_rng(5)
    inits = [
        numpy_helper.from_array(
            (rng.uniform(-2.0, 2.0, (24, 16, 1, 1)) / 4).astype(np.float32), "w1"
        ),
        numpy_helper.from_array(rng.uniform(-0.5, 0.5, 24).astype(np.float32), "b1"),
        numpy_helper.from_array(rng.uniform(-0.5, 0.5, (24, 1, 3, 3)).astype(np.float32), "w2"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"]),
        helper.make_node("Sigmoid", ["c1"], ["s1"]),
        helper.make_node("Mul", ["c1", "s1"], ["h"]),
        helper.make_node("Conv", ["h", "w2"], ["c2"], pads=[1, 1, 1, 1], group=24),
        helper.make_node("Sigmoid", ["c2"], ["y"]),
    ]
    g = helper.make_graph(
        nodes,
        "silu_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16, 13, 11])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 24, 13, 11]),
        ],
        inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("threads", [1, 2])
def test_silu_epilogues_match_onnxruntime(threads: int) -> None:
    """The compiled block calls afrt_epi_silu_fn for both epilogues (no generated one) and
    matches onnxruntime, NaN and +-inf included."""
    check_builtin_epilogue(_silu_block(), (2, 16, 13, 11), -3.0, "afrt_epi_silu_fn", 6, threads)
