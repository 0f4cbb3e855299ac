"""Depthwise convolution with channels in vector lanes (``afrt_dwl_f32_``, what
``afrt_dwconv2d_f32`` runs for K == C and dilation 1): the C driver compares it with a naive
conv in double over a sweep (channel counts off the 16-lane blocks, 1x1 to 40x37 maps in
several row bands, strides 1-3, 3x3 / 5x5 / generic kernels, asymmetric pads, batch 2, NaN and
inf inputs) with no epilogue, Relu6 in registers, the same clamp through an unknown callback
(bit-identical) and a residual clamp, on every ISA path, 1 and 2 threads, and under
ASan/UBSan; and with every allocation failing, the lanes path refuses and
``afrt_conv2d_f32``'s fallback is still right (docs/runtime.md, "Out of memory"). The
models around it are checked against onnxruntime in test_c_dwconv.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from runtime_drivers import ISA_FLAGS, RUNTIME_C, build_driver

DRIVER_SRC = RUNTIME_C / "afrt_dwl_driver.c"


@pytest.fixture(scope="module", params=list(ISA_FLAGS))
def driver(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dwl") / f"afrt_dwl_{request.param}"
    return build_driver(DRIVER_SRC, out, request.param, defines=["AFRT_TEST_FAIL_ALLOC"])


# 2 threads on every 4th case: each tiny call is a parallel region here, and on a loaded
# machine every region can wait milliseconds for the second core
@pytest.mark.parametrize(("threads", "every", "cases"), [(1, 1, 368), (2, 4, 90)])
def test_lanes_match_the_naive_conv(driver: Path, threads: int, every: int, cases: int) -> None:
    got = subprocess.run([str(driver), str(threads), str(every)], capture_output=True, text=True)
    assert got.returncode == 0, got.stdout + got.stderr
    assert got.stdout.strip() == f"ok {cases}"
