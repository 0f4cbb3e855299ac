"""Ascend C target: generated kernels run on the CPU functional model and match the reference
interpreter / onnxruntime; host code calls exactly the declared AscendCL API, every return
code checked; the CPU model itself rejects misuse of queues, UB and DataCopy.

These check the generated code's logic, not NPU performance (there is no NPU here).
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper
from xdsl.context import Context
from xdsl.dialects import get_all_dialects as xdsl_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from autofusion import testing
from autofusion.dialects import ascendc as ac
from autofusion.dialects import fusion, get_all_dialects
from autofusion.errors import AutofusionError
from autofusion.interpreter import run_module
from autofusion.lowering.ascendc import emit_project, run_ascendc_cpu
from autofusion.lowering.ascendc.cpu_run import CpuModelRunner
from autofusion.lowering.ascendc.lower import LowerFusionToAscendC
from autofusion.lowering.ascendc.project import CPU_MODEL_DIR
from autofusion.lowering.ascendc.target import print_files

GXX = shutil.which("g++")
pytestmark = pytest.mark.skipif(GXX is None, reason="g++ is required to build the CPU model")


def close(got: np.ndarray, ref: np.ndarray) -> bool:
    return testing.close(np.asarray(got), np.asarray(ref))


def ctx() -> Context:
    c = Context()
    for n, f in xdsl_dialects().items():
        c.register_dialect(n, f)
    for n, f in get_all_dialects().items():
        if n not in c.registered_dialect_names:
            c.register_dialect(n, f)
    return c


def parse(text: str) -> ModuleOp:
    return Parser(ctx(), text).parse_module()


def lowered(module: ModuleOp, **opts: int) -> ModuleOp:
    m = module.clone()
    LowerFusionToAscendC(**opts).apply(ctx(), m)
    m.verify()
    return m


# ---------------------------------------------------------------------------------------
# Vector kernels: one module with one fusion.kernel per case, built once.
# ---------------------------------------------------------------------------------------

SHAPE = (3, 7, 50)  # 1050 elements: several tiles per core and a ragged (non-32-byte) tail
T = "tensor<3x7x50xf32>"

# name -> body lines (inputs %a, %b: T; %c: tensor<50xf32>; %s: tensor<7x1xf32>)
CASES: dict[str, list[str]] = {
    "add_relu": [f"%0 = nn.add %a, %b : ({T}, {T}) -> {T}", f"%r = nn.relu %0 : ({T}) -> {T}"],
    "sub_mul_div": [
        f"%0 = nn.sub %a, %b : ({T}, {T}) -> {T}",
        f"%1 = nn.mul %0, %a : ({T}, {T}) -> {T}",
        f"%2 = nn.abs %b : ({T}) -> {T}",
        f"%3 = nn.add %2, %one : ({T}, tensor<f32>) -> {T}",
        f"%r = nn.div %1, %3 : ({T}, {T}) -> {T}",
    ],
    "scalars": [
        f"%0 = nn.sub %one, %a : (tensor<f32>, {T}) -> {T}",
        f"%1 = nn.div %0, %two : ({T}, tensor<f32>) -> {T}",
        f"%2 = nn.max %1, %half : ({T}, tensor<f32>) -> {T}",
        f"%3 = nn.div %two, %b : (tensor<f32>, {T}) -> {T}",
        f"%r = nn.min %2, %3 : ({T}, {T}) -> {T}",
    ],
    "bias_row": [
        f"%0 = nn.add %a, %c : ({T}, tensor<50xf32>) -> {T}",
        f"%r = nn.mul %0, %c : ({T}, tensor<50xf32>) -> {T}",
    ],
    "bias_mid": [
        f"%0 = nn.mul %a, %s : ({T}, tensor<7x1xf32>) -> {T}",
        f"%r = nn.sub %0, %s : ({T}, tensor<7x1xf32>) -> {T}",
    ],
    # fold-batchnorm's BN with nothing to fold into (DenseNet's pre-activation): x*s + t, Relu
    "scale_shift_relu": [
        f"%0 = nn.mul %a, %s : ({T}, tensor<7x1xf32>) -> {T}",
        f"%1 = nn.add %0, %s : ({T}, tensor<7x1xf32>) -> {T}",
        f"%r = nn.relu %1 : ({T}) -> {T}",
    ],
    "sigmoid_tanh": [
        f"%0 = nn.sigmoid %a : ({T}) -> {T}",
        f"%1 = nn.tanh %b : ({T}) -> {T}",
        f"%r = nn.add %0, %1 : ({T}, {T}) -> {T}",
    ],
    "gelu_erf": [f'%r = nn.gelu %a {{approximate = "none"}} : ({T}) -> {T}'],
    "gelu_tanh": [f'%r = nn.gelu %a {{approximate = "tanh"}} : ({T}) -> {T}'],
    "erf": [f"%r = nn.erf %a : ({T}) -> {T}"],
    "exp_log_sqrt": [
        f"%0 = nn.abs %a : ({T}) -> {T}",
        f"%1 = nn.add %0, %one : ({T}, tensor<f32>) -> {T}",
        f"%2 = nn.log %1 : ({T}) -> {T}",
        f"%3 = nn.sqrt %1 : ({T}) -> {T}",
        f"%4 = nn.exp %b : ({T}) -> {T}",
        f"%5 = nn.reciprocal %1 : ({T}) -> {T}",
        f"%6 = nn.add %2, %3 : ({T}, {T}) -> {T}",
        f"%7 = nn.add %6, %4 : ({T}, {T}) -> {T}",
        f"%r = nn.add %7, %5 : ({T}, {T}) -> {T}",
    ],
    "activations": [
        f"%0 = nn.leaky_relu %a {{alpha = 0.1 : f64}} : ({T}) -> {T}",
        f"%1 = nn.clip %0 {{min = -0.5 : f64, max = 6.0 : f64}} : ({T}) -> {T}",
        f"%2 = nn.hard_sigmoid %b {{alpha = 0.2 : f64, beta = 0.5 : f64}} : ({T}) -> {T}",
        f"%3 = nn.hard_swish %a : ({T}) -> {T}",
        f"%4 = nn.neg %3 : ({T}) -> {T}",
        f"%5 = nn.add %1, %2 : ({T}, {T}) -> {T}",
        f"%r = nn.add %5, %4 : ({T}, {T}) -> {T}",
    ],
    "pow_prelu": [
        f"%0 = nn.pow %a, %two : ({T}, tensor<f32>) -> {T}",
        f"%1 = nn.prelu %b, %c : ({T}, tensor<50xf32>) -> {T}",
        f"%r = nn.add %0, %1 : ({T}, {T}) -> {T}",
    ],
}


def vector_module() -> str:
    consts = [
        "%one = nn.constant dense<1.0> : tensor<f32>",
        "%two = nn.constant dense<2.0> : tensor<f32>",
        "%half = nn.constant dense<-0.25> : tensor<f32>",
    ]
    kernels, results = [], []
    for i, (name, body) in enumerate(CASES.items()):
        lines = "\n        ".join([*consts, *body])
        kernels.append(
            f'%y{i} = fusion.kernel "{name}" ["{name}"] (%x, %w, %v, %u)'
            f" : ({T}, {T}, tensor<50xf32>, tensor<7x1xf32>) -> {T} {{\n"
            f"      ^bb0(%a: {T}, %b: {T}, %c: tensor<50xf32>, %s: tensor<7x1xf32>):\n"
            f"        {lines}\n"
            f"        fusion.yield %r : {T}\n    }}"
        )
        results.append(f"%y{i}")
    types = ", ".join([T] * len(results))
    return (
        "builtin.module {\n"
        f"  func.func @main(%x: {T}, %w: {T}, %v: tensor<50xf32>, "
        f"%u: tensor<7x1xf32>) -> ({types}) {{\n    "
        + "\n    ".join(kernels)
        + f"\n    func.return {', '.join(results)} : {types}\n  }}\n}}\n"
    )


def vector_feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    x = rng.standard_normal(SHAPE).astype(np.float32) * 3
    x.reshape(-1)[:6] = [0.0, -0.0, 20.0, -20.0, 1e-8, -60.0]  # saturating and signed-zero lanes
    w = rng.standard_normal(SHAPE).astype(np.float32)
    return {
        "arg0": x,
        "arg1": w,
        "arg2": rng.standard_normal(50).astype(np.float32),
        "arg3": rng.standard_normal((7, 1)).astype(np.float32),
    }


@pytest.fixture(scope="module")
def vector_run() -> tuple[ModuleOp, dict[str, np.ndarray], dict[str, np.ndarray]]:
    module = parse(vector_module())
    feeds = vector_feeds()
    low = lowered(module, cores=4, max_tile=128)
    got = CpuModelRunner(low).run(feeds)
    return module, feeds, got


def test_every_vector_case_is_lowered(vector_run) -> None:
    module, _, _ = vector_run
    low = lowered(module, cores=4, max_tile=128)
    kernels = [o for o in low.body.block.ops if isinstance(o, ac.KernelOp)]
    assert len(kernels) == len(CASES)
    assert all(k.kind.data == "vector" for k in kernels)
    # several tiles per core, and cores that do not divide the work evenly
    t = kernels[0].tiling_values()
    assert t["blockLength"] > t["tileLength"]
    assert t["totalLength"] % t["blockLength"]


@pytest.mark.parametrize("index", range(len(CASES)), ids=list(CASES))
def test_vector_kernel_matches_interpreter(vector_run, index: int) -> None:
    module, feeds, got = vector_run
    ref = run_module(module, feeds)
    name = f"result{index}"
    assert close(got[name], ref[name]), float(np.nanmax(np.abs(got[name] - ref[name])))


def test_gelu_matches_the_exact_erf_form(vector_run) -> None:
    _, feeds, got = vector_run
    x = feeds["arg0"].astype(np.float64)
    ref = 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    assert np.abs(got[f"result{list(CASES).index('gelu_erf')}"] - ref).max() < 1e-5


# ---------------------------------------------------------------------------------------
# Row-wise kernels (LayerNorm, Softmax, reductions): tiles of whole rows, 2-d DataCopyPad
# ---------------------------------------------------------------------------------------

ROWS_IR = """
builtin.module {
  func.func @main(%x: tensor<2x7x36xf32>, %g: tensor<36xf32>, %b: tensor<36xf32>, %i: tensor<2x3x7x7xf32>)
      -> (tensor<2x7x36xf32>, tensor<2x7x36xf32>, tensor<2x7x36xf32>, tensor<2x3x1x1xf32>, tensor<2x7x1xf32>, tensor<2x7xf32>, tensor<2x7x36xf32>) {
    %0 = nn.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x7x36xf32>, tensor<36xf32>, tensor<36xf32>) -> tensor<2x7x36xf32>
    %1 = nn.softmax %x {axis = 2 : i64} : (tensor<2x7x36xf32>) -> tensor<2x7x36xf32>
    %2 = nn.log_softmax %x {axis = 2 : i64} : (tensor<2x7x36xf32>) -> tensor<2x7x36xf32>
    %3 = nn.global_avg_pool %i : (tensor<2x3x7x7xf32>) -> tensor<2x3x1x1xf32>
    %4 = nn.reduce_mean %x {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<2x7x36xf32>) -> tensor<2x7x1xf32>
    %5 = nn.reduce_max %x {axes = array<i64: 2>, keepdims = 0 : i64} : (tensor<2x7x36xf32>) -> tensor<2x7xf32>
    %6 = nn.layer_norm %x, %g {axis = 2 : i64, epsilon = 1.0e-3 : f64} : (tensor<2x7x36xf32>, tensor<36xf32>) -> tensor<2x7x36xf32>
    func.return %0, %1, %2, %3, %4, %5, %6 : tensor<2x7x36xf32>, tensor<2x7x36xf32>, tensor<2x7x36xf32>, tensor<2x3x1x1xf32>, tensor<2x7x1xf32>, tensor<2x7xf32>, tensor<2x7x36xf32>
  }
}
"""  # noqa: E501 - the MLIR keeps one op per line


def test_row_kernels_match_interpreter() -> None:
    module = parse(ROWS_IR)
    # 14 rows of 36 (padded to 40 in UB), 3 cores, 2 rows per tile: ragged blocks and tiles
    low = lowered(module, cores=3, max_tile=100)
    kernels = [o for o in low.body.block.ops if isinstance(o, ac.KernelOp)]
    assert len(kernels) == 7
    t = kernels[0].tiling_values()
    assert (t["rowLength"], t["rowStride"], t["tileLength"], t["blockLength"]) == (36, 40, 2, 5)
    rng = np.random.default_rng(5)
    feeds = {
        "arg0": (rng.standard_normal((2, 7, 36)) * 4).astype(np.float32),
        "arg1": rng.standard_normal(36).astype(np.float32),
        "arg2": rng.standard_normal(36).astype(np.float32),
        "arg3": rng.standard_normal((2, 3, 7, 7)).astype(np.float32),
    }
    got = run_ascendc_cpu(low, feeds)
    ref = run_module(module, feeds)
    for k in ref:
        assert close(got[k], ref[k]), (k, float(np.abs(got[k] - ref[k]).max()))


GATHER_IR = """
builtin.module {
  func.func @main(%x: tensor<2x3x4x5xf32>, %y: tensor<3x1x5xf32>)
      -> (tensor<2x4x3x5xf32>, tensor<2x3x4x5xf32>, tensor<2x3x4x2xf32>, tensor<2x4x3x5xf32>) {
    %0 = nn.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x3x4x5xf32>) -> tensor<2x4x3x5xf32>
    %1 = nn.expand %y : (tensor<3x1x5xf32>) -> tensor<2x3x4x5xf32>
    %2 = nn.slice %x {starts = array<i64: 0, 2, 0, 4>, ends = array<i64: 2, -1, 4, 0>, steps = array<i64: 1, -1, 1, -2>} : (tensor<2x3x4x5xf32>) -> tensor<2x3x4x2xf32>
    %k = fusion.kernel "t_add_relu" ["t", "add", "relu"] (%x, %0) : (tensor<2x3x4x5xf32>, tensor<2x4x3x5xf32>) -> tensor<2x4x3x5xf32> {
    ^bb0(%a: tensor<2x3x4x5xf32>, %b: tensor<2x4x3x5xf32>):
      %t = nn.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x3x4x5xf32>) -> tensor<2x4x3x5xf32>
      %s = nn.add %t, %b : (tensor<2x4x3x5xf32>, tensor<2x4x3x5xf32>) -> tensor<2x4x3x5xf32>
      %r = nn.relu %s : (tensor<2x4x3x5xf32>) -> tensor<2x4x3x5xf32>
      fusion.yield %r : tensor<2x4x3x5xf32>
    }
    func.return %0, %1, %2, %k : tensor<2x4x3x5xf32>, tensor<2x3x4x5xf32>, tensor<2x3x4x2xf32>, tensor<2x4x3x5xf32>
  }
}
"""  # noqa: E501 - the MLIR keeps one op per line


POOL_IR = """
builtin.module {
  func.func @main(%x: tensor<2x3x9x9xf32>) -> (tensor<2x3x5x5xf32>, tensor<2x3x4x4xf32>, tensor<2x3x5x5xf32>, tensor<2x3x1x1xf32>) {
    %0 = nn.max_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = false} : (tensor<2x3x9x9xf32>) -> tensor<2x3x5x5xf32>
    %1 = nn.avg_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = 0 : i64} : (tensor<2x3x9x9xf32>) -> tensor<2x3x4x4xf32>
    %2 = nn.avg_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = 1 : i64} : (tensor<2x3x9x9xf32>) -> tensor<2x3x5x5xf32>
    %3 = nn.global_max_pool %x : (tensor<2x3x9x9xf32>) -> tensor<2x3x1x1xf32>
    func.return %0, %1, %2, %3 : tensor<2x3x5x5xf32>, tensor<2x3x4x4xf32>, tensor<2x3x5x5xf32>, tensor<2x3x1x1xf32>
  }
}
"""  # noqa: E501 - the MLIR keeps one op per line


def test_pooling_kernels_match_interpreter() -> None:
    module = parse(POOL_IR)
    low = lowered(module, cores=3, max_tile=16)
    assert sum(isinstance(o, ac.KernelOp) for o in low.body.block.ops) == 4
    feeds = {"arg0": np.random.default_rng(4).standard_normal((2, 3, 9, 9)).astype(np.float32)}
    got = run_ascendc_cpu(low, feeds)
    ref = run_module(module, feeds)
    for k in ref:
        assert close(got[k], ref[k]), k


ATTN_IR = """
builtin.module {
  func.func @main(%q: tensor<2x3x9x8xf32>, %k: tensor<2x3x11x8xf32>, %v: tensor<2x3x11x6xf32>, %m: tensor<2x1x1x11xf32>)
      -> (tensor<2x3x9x6xf32>, tensor<2x3x9x6xf32>) {
    %0 = nn.attention %q, %k, %v, %m {scale = 0.35355 : f64} : (tensor<2x3x9x8xf32>, tensor<2x3x11x8xf32>, tensor<2x3x11x6xf32>, tensor<2x1x1x11xf32>) -> tensor<2x3x9x6xf32>
    %1 = nn.attention %q, %k, %v {scale = 1.0 : f64} : (tensor<2x3x9x8xf32>, tensor<2x3x11x8xf32>, tensor<2x3x11x6xf32>) -> tensor<2x3x9x6xf32>
    func.return %0, %1 : tensor<2x3x9x6xf32>, tensor<2x3x9x6xf32>
  }
}
"""  # noqa: E501 - the MLIR keeps one op per line


def test_attention_kernel_matches_interpreter() -> None:
    """The streaming kernel with and without a broadcast additive mask: keys in blocks of 8
    (11 = 8 + 3), query blocks of 5 rows (9 = 5 + 4): 12 units (batch x heads x query
    blocks) over 4 cores."""
    module = parse(ATTN_IR)
    low = lowered(module, cores=4, max_tile=40)
    kernels = [o for o in low.body.block.ops if isinstance(o, ac.KernelOp)]
    assert len(kernels) == 2
    t = kernels[0].tiling_values()
    assert (t["blockT"], t["blockQ"], t["units"]) == (8, 5, 12), t
    rng = np.random.default_rng(6)
    feeds = {
        "arg0": rng.standard_normal((2, 3, 9, 8)).astype(np.float32),
        "arg1": rng.standard_normal((2, 3, 11, 8)).astype(np.float32),
        "arg2": rng.standard_normal((2, 3, 11, 6)).astype(np.float32),
        "arg3": ((rng.random((2, 1, 1, 11)) < 0.3) * -10000.0).astype(np.float32),
    }
    got = run_ascendc_cpu(low, feeds)
    ref = run_module(module, feeds)
    for k in ref:
        assert close(got[k], ref[k]), (k, float(np.abs(got[k] - ref[k]).max()))


CONCAT_IR = """
builtin.module {
  func.func @main(%a: tensor<2x3x5xf32>, %b: tensor<2x4x5xf32>, %c: tensor<2x7x5xf32>)
      -> (tensor<2x7x5xf32>, tensor<2x2x5xf32>, tensor<2x5x5xf32>, tensor<4x7x5xf32>, tensor<2x5xf32>) {
    %0 = nn.concat %a, %b {axis = 1 : i64} : (tensor<2x3x5xf32>, tensor<2x4x5xf32>) -> tensor<2x7x5xf32>
    %1, %2 = nn.split %c {axis = 1 : i64} : (tensor<2x7x5xf32>) -> (tensor<2x2x5xf32>, tensor<2x5x5xf32>)
    %3 = nn.concat %c, %0 {axis = 0 : i64} : (tensor<2x7x5xf32>, tensor<2x7x5xf32>) -> tensor<4x7x5xf32>
    %i = nn.constant dense<-1> : tensor<i64>
    %4 = nn.gather %c, %i {axis = 1 : i64} : (tensor<2x7x5xf32>, tensor<i64>) -> tensor<2x5xf32>
    func.return %0, %1, %2, %3, %4 : tensor<2x7x5xf32>, tensor<2x2x5xf32>, tensor<2x5x5xf32>, tensor<4x7x5xf32>, tensor<2x5xf32>
  }
}
"""  # noqa: E501 - the MLIR keeps one op per line


def test_concat_split_gather_kernels_are_exact_copies() -> None:
    module = parse(CONCAT_IR)
    low = lowered(module, cores=3, max_tile=16)
    assert sum(isinstance(o, ac.KernelOp) for o in low.body.block.ops) == 4
    rng = np.random.default_rng(8)
    feeds = {
        "arg0": rng.standard_normal((2, 3, 5)).astype(np.float32),
        "arg1": rng.standard_normal((2, 4, 5)).astype(np.float32),
        "arg2": rng.standard_normal((2, 7, 5)).astype(np.float32),
    }
    feeds["arg0"][0, 0, :2] = [-0.0, np.nan]
    got = run_ascendc_cpu(low, feeds)
    ref = run_module(module, feeds)
    for k in ref:
        np.testing.assert_array_equal(got[k], ref[k])


def test_channel_concat_at_batch_one_is_chunked() -> None:
    """Batch-1 channel concat: one 'row' of 7744 elements is too long for UB, so each piece
    is copied as contiguous chunks (3872 = gcd of the pieces) spread over the cores."""
    text = """
    func.func @main(%a: tensor<1x64x11x11xf32>, %b: tensor<1x96x11x11xf32>) -> tensor<1x160x11x11xf32> {
      %0 = nn.concat %a, %b {axis = 1 : i64} : (tensor<1x64x11x11xf32>, tensor<1x96x11x11xf32>) -> tensor<1x160x11x11xf32>
      func.return %0 : tensor<1x160x11x11xf32>
    }"""  # noqa: E501 - the MLIR keeps one op per line
    module = parse(text)
    low = lowered(module, cores=3)
    k = next(o for o in low.body.block.ops if isinstance(o, ac.KernelOp))
    assert k.tiling_values()["rowLength"] == 3872
    rng = np.random.default_rng(9)
    feeds = {
        "arg0": rng.standard_normal((1, 64, 11, 11)).astype(np.float32),
        "arg1": rng.standard_normal((1, 96, 11, 11)).astype(np.float32),
    }
    np.testing.assert_array_equal(
        run_ascendc_cpu(low, feeds)["result0"], run_module(module, feeds)["result0"]
    )


def test_transpose_expand_slice_kernels_match_interpreter() -> None:
    module = parse(GATHER_IR)
    low = lowered(module, cores=3, max_tile=16)
    assert sum(isinstance(o, ac.KernelOp) for o in low.body.block.ops) == 4
    rng = np.random.default_rng(2)
    feeds = {
        "arg0": rng.standard_normal((2, 3, 4, 5)).astype(np.float32),
        "arg1": rng.standard_normal((3, 1, 5)).astype(np.float32),
    }
    got = run_ascendc_cpu(low, feeds)
    ref = run_module(module, feeds)
    for k in ref:
        assert np.array_equal(got[k], ref[k]), k


# ---------------------------------------------------------------------------------------
# Cube kernels (Matmul API, im2col) with fused epilogues vs onnxruntime
# ---------------------------------------------------------------------------------------

CUBE_IR = """
builtin.module {
  func.func @main(%x: tensor<2x37x24xf32>, %w: tensor<24x40xf32>, %b: tensor<40xf32>,
                  %img: tensor<2x4x9x9xf32>, %k: tensor<6x2x3x3xf32>, %kb: tensor<6xf32>,
                  %res: tensor<2x6x5x5xf32>, %ga: tensor<20x12xf32>, %gb: tensor<16x12xf32>,
                  %gc: tensor<1x16xf32>, %qa: tensor<3x5x8xf32>, %qb: tensor<3x8x6xf32>)
      -> (tensor<2x37x40xf32>, tensor<2x6x5x5xf32>, tensor<20x16xf32>, tensor<3x5x6xf32>) {
    %y = fusion.kernel "matmul_bias_gelu" ["mm", "add", "gelu"] (%x, %w, %b) : (tensor<2x37x24xf32>, tensor<24x40xf32>, tensor<40xf32>) -> tensor<2x37x40xf32> {
    ^bb0(%a: tensor<2x37x24xf32>, %bw: tensor<24x40xf32>, %c: tensor<40xf32>):
      %0 = nn.matmul %a, %bw : (tensor<2x37x24xf32>, tensor<24x40xf32>) -> tensor<2x37x40xf32>
      %1 = nn.add %0, %c : (tensor<2x37x40xf32>, tensor<40xf32>) -> tensor<2x37x40xf32>
      %2 = nn.gelu %1 {approximate = "none"} : (tensor<2x37x40xf32>) -> tensor<2x37x40xf32>
      fusion.yield %2 : tensor<2x37x40xf32>
    }
    %z = fusion.kernel "conv_add_relu" ["conv", "add", "relu"] (%img, %k, %kb, %res) : (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>, tensor<2x6x5x5xf32>) -> tensor<2x6x5x5xf32> {
    ^bb0(%i: tensor<2x4x9x9xf32>, %kk: tensor<6x2x3x3xf32>, %kbb: tensor<6xf32>, %r: tensor<2x6x5x5xf32>):
      %0 = nn.conv %i, %kk, %kbb {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<2x6x5x5xf32>
      %1 = nn.add %0, %r : (tensor<2x6x5x5xf32>, tensor<2x6x5x5xf32>) -> tensor<2x6x5x5xf32>
      %2 = nn.relu %1 : (tensor<2x6x5x5xf32>) -> tensor<2x6x5x5xf32>
      fusion.yield %2 : tensor<2x6x5x5xf32>
    }
    %g = fusion.kernel "gemm" ["gemm"] (%ga, %gb, %gc) : (tensor<20x12xf32>, tensor<16x12xf32>, tensor<1x16xf32>) -> tensor<20x16xf32> {
    ^bb0(%a: tensor<20x12xf32>, %bb: tensor<16x12xf32>, %cc: tensor<1x16xf32>):
      %0 = nn.gemm %a, %bb, %cc {alpha = 0.5 : f64, beta = 2.0 : f64, trans_a = false, trans_b = true} : (tensor<20x12xf32>, tensor<16x12xf32>, tensor<1x16xf32>) -> tensor<20x16xf32>
      fusion.yield %0 : tensor<20x16xf32>
    }
    %q = fusion.kernel "batched_matmul" ["bmm"] (%qa, %qb) : (tensor<3x5x8xf32>, tensor<3x8x6xf32>) -> tensor<3x5x6xf32> {
    ^bb0(%a: tensor<3x5x8xf32>, %bb: tensor<3x8x6xf32>):
      %0 = nn.matmul %a, %bb : (tensor<3x5x8xf32>, tensor<3x8x6xf32>) -> tensor<3x5x6xf32>
      fusion.yield %0 : tensor<3x5x6xf32>
    }
    func.return %y, %z, %g, %q : tensor<2x37x40xf32>, tensor<2x6x5x5xf32>, tensor<20x16xf32>, tensor<3x5x6xf32>
  }
}
"""  # noqa: E501 - the MLIR keeps one op per line

CUBE_SHAPES = [
    (2, 37, 24),
    (24, 40),
    (40,),
    (2, 4, 9, 9),
    (6, 2, 3, 3),
    (6,),
    (2, 6, 5, 5),
    (20, 12),
    (16, 12),
    (1, 16),
    (3, 5, 8),
    (3, 8, 6),
]


def cube_reference(xs: list[np.ndarray]) -> list[np.ndarray]:
    """The same four groups as an ONNX graph, run by onnxruntime."""
    names = [f"i{i}" for i in range(len(xs))]
    nodes = [
        helper.make_node("MatMul", ["i0", "i1"], ["m"]),
        helper.make_node("Add", ["m", "i2"], ["mb"]),
        helper.make_node("Div", ["mb", "sqrt2"], ["md"]),
        helper.make_node("Erf", ["md"], ["me"]),
        helper.make_node("Add", ["me", "one"], ["mf"]),
        helper.make_node("Mul", ["mb", "mf"], ["mg"]),
        helper.make_node("Mul", ["mg", "half"], ["o0"]),
        helper.make_node(
            "Conv", ["i3", "i4", "i5"], ["c"], strides=[2, 2], pads=[1, 1, 1, 1], group=2
        ),
        helper.make_node("Add", ["c", "i6"], ["ca"]),
        helper.make_node("Relu", ["ca"], ["o1"]),
        helper.make_node("Gemm", ["i7", "i8", "i9"], ["o2"], alpha=0.5, beta=2.0, transB=1),
        helper.make_node("MatMul", ["i10", "i11"], ["o3"]),
    ]
    inits = [
        helper.make_tensor(n, onnx.TensorProto.FLOAT, [], [v])
        for n, v in (("sqrt2", math.sqrt(2)), ("one", 1.0), ("half", 0.5))
    ]
    graph = helper.make_graph(
        nodes,
        "cube",
        [
            helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, list(x.shape))
            for n, x in zip(names, xs)
        ],
        [helper.make_tensor_value_info(f"o{i}", onnx.TensorProto.FLOAT, None) for i in range(4)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, dict(zip(names, xs)))


@pytest.fixture(scope="module")
def cube_project(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, list[np.ndarray], ModuleOp]:
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal(s).astype(np.float32) for s in CUBE_SHAPES]
    module = lowered(parse(CUBE_IR))
    out = tmp_path_factory.mktemp("cube")
    emit_project(module, out)
    return out, xs, module


def test_cube_groups_match_onnxruntime(cube_project) -> None:
    _, xs, module = cube_project
    kinds = [k.kind.data for k in module.body.block.ops if isinstance(k, ac.KernelOp)]
    assert kinds == ["cube"] * 4
    got = run_ascendc_cpu(module, {f"arg{i}": x for i, x in enumerate(xs)})
    for i, ref in enumerate(cube_reference(xs)):
        assert close(got[f"result{i}"], ref), (i, float(np.abs(got[f"result{i}"] - ref).max()))


def test_matmul_rows_split_over_cores_and_conv_uses_im2col(cube_project) -> None:
    _, _, module = cube_project
    ks = {k.pattern.data: k for k in module.body.block.ops if isinstance(k, ac.KernelOp)}
    mm = ks["matmul_bias_gelu"].tiling_values()
    assert mm["M"] == 74
    assert mm["mBlocks"] > 1
    assert mm["units"] == mm["mBlocks"]
    conv_ops = [o.name for o in ks["conv_add_relu"].walk()]
    assert "ascendc.im2col" in conv_ops
    assert "ascendc.matmul" in conv_ops
    assert ks["conv_add_relu"].tiling_values()["units"] == 4  # 2 images x 2 groups


def test_cmake_cpu_build_runs_the_whole_host_program(cube_project, tmp_path: Path) -> None:
    """The generated CMakeLists.txt (CPU-model mode) builds host/main.cpp; its output
    files match onnxruntime. This runs the AscendCL host program end to end on the stub."""
    project, xs, _ = cube_project
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.skip("cmake not installed")
    build = tmp_path / "build"
    subprocess.run(
        [
            cmake,
            "-S",
            str(project),
            "-B",
            str(build),
            "-DAUTOFUSION_CPU_MODEL=ON",
            "-DCMAKE_BUILD_TYPE=Release",
        ],
        check=True,
        capture_output=True,
    )
    subprocess.run([cmake, "--build", str(build), "-j", "2"], check=True, capture_output=True)
    files = []
    for i, x in enumerate(xs):
        f = tmp_path / f"in{i}.bin"
        x.tofile(f)
        files.append(str(f))
    outs = [str(tmp_path / f"out{j}.bin") for j in range(4)]
    subprocess.run([str(build / "model"), str(project / "weights.bin"), *files, *outs], check=True)
    for j, ref in enumerate(cube_reference(xs)):
        got = np.fromfile(outs[j], dtype=np.float32).reshape(ref.shape)
        assert close(got, ref), j


# ---------------------------------------------------------------------------------------
# Host code: exactly the declared AscendCL API, every call checked, compiles
# ---------------------------------------------------------------------------------------


def declared_acl() -> set[str]:
    text = (CPU_MODEL_DIR / "acl_decls.h").read_text()
    return set(re.findall(r"^aclError (acl\w+)\(", text, flags=re.M))


def test_host_calls_exactly_the_declared_acl_functions(cube_project) -> None:
    project, _, _ = cube_project
    host = (project / "host" / "model.cpp").read_text()
    called = set(re.findall(r"\b(acl\w+)\s*\(", host))
    required = {
        "aclInit",
        "aclrtSetDevice",
        "aclrtCreateStream",
        "aclrtMalloc",
        "aclrtMemcpy",
        "aclrtSynchronizeStream",
        "aclrtFree",
        "aclrtDestroyStream",
        "aclrtResetDevice",
        "aclFinalize",
    }
    assert required <= called
    assert called == declared_acl()


def test_every_acl_return_code_is_checked(cube_project) -> None:
    project, _, _ = cube_project
    host = (project / "host" / "model.cpp").read_text()
    for line in host.splitlines():
        for call in re.findall(r"\b(acl\w+)\s*\(", line):
            assert f"AF_ACL_CHECK({call}(" in line, line


def test_host_and_kernels_compile_warning_free(cube_project) -> None:
    project, _, _ = cube_project
    srcs = [
        *sorted((project / "kernels").glob("*.asc")),
        *sorted((project / "kernels").glob("*.cpp")),
        project / "host" / "model.cpp",
        project / "host" / "main.cpp",
    ]
    for src in srcs:
        lang = ["-x", "c++"] if src.suffix == ".asc" else []
        proc = subprocess.run(
            [
                GXX,
                "-std=c++17",
                "-fsyntax-only",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-DAUTOFUSION_CPU_MODEL",
                f"-I{project / 'cpu_model'}",
                f"-I{project / 'kernels'}",
                *lang,
                str(src),
            ],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]


def test_kernel_signature_and_launch(cube_project) -> None:
    project, _, _ = cube_project
    src = (project / "kernels" / "af_kernel_1.asc").read_text()
    assert re.search(
        r'extern "C" __global__ __aicore__ void af_kernel_1\(GM_ADDR in0, GM_ADDR in1, '
        r"GM_ADDR in2, "
        r"GM_ADDR in3, GM_ADDR out0, GM_ADDR workspace, GM_ADDR tiling\)",
        src,
    )
    assert "af_kernel_1<<<blockDim, nullptr, stream>>>(" in src
    assert "REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm, &this->td.mm);" in src


def test_printing_is_deterministic() -> None:
    module = lowered(parse(vector_module()))
    assert print_files(module) == print_files(module)


def test_printers_refuse_ir_that_is_not_lowered(tmp_path: Path) -> None:
    """Targets only print: a fusion kernel not through lower-fusion-to-ascendc is named, with
    the pass to run, by the -t printer, the project writer and the CPU runner alike."""
    module = parse(vector_module())
    message = r"op fusion.kernel \(pattern .*\) in @main is not lowered.*lower-fusion-to-ascendc"
    with pytest.raises(AutofusionError, match=message):
        print_files(module)
    with pytest.raises(AutofusionError, match=message):
        emit_project(module, tmp_path)
    with pytest.raises(AutofusionError, match=message):
        CpuModelRunner(module)
    assert not any(tmp_path.iterdir())


# ---------------------------------------------------------------------------------------
# Fallback, hostile names
# ---------------------------------------------------------------------------------------

FALLBACK_IR = """
builtin.module {
  func.func @main(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
    %y = fusion.kernel "softmax_relu" ["*/ evil\\n#include <x>", "relu"] (%x) : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: tensor<4x16xf32>):
      %0 = nn.softmax %a {axis = 0 : i64} : (tensor<4x16xf32>) -> tensor<4x16xf32>
      fusion.yield %0 : tensor<4x16xf32>
    }
    %z = fusion.kernel "relu" ["*/ evil\\n#include <x>"] (%y) : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: tensor<4x16xf32>):
      %0 = nn.relu %a : (tensor<4x16xf32>) -> tensor<4x16xf32>
      fusion.yield %0 : tensor<4x16xf32>
    }
    func.return %z : tensor<4x16xf32>
  }
}
"""  # noqa: E501 - the MLIR keeps one op per line


def test_unsupported_kernel_falls_back_with_reason_and_still_runs(tmp_path: Path) -> None:
    module = parse(FALLBACK_IR)
    low = lowered(module)
    fn = next(o for o in low.body.block.ops if o.name == "func.func")
    left = [o for o in fn.body.block.ops if isinstance(o, fusion.KernelOp)]
    assert len(left) == 1
    assert "nn.softmax" in left[0].attributes["ascendc.fallback"].data
    x = np.random.default_rng(1).standard_normal((4, 16)).astype(np.float32)
    got = run_ascendc_cpu(low, {"arg0": x})["result0"]
    assert close(got, run_module(module, {"arg0": x})["result0"])
    emit_project(low, tmp_path)
    src = (tmp_path / "kernels" / "af_kernel_0.asc").read_text()
    evil = [line for line in src.splitlines() if "evil" in line]
    assert evil
    assert all(line.startswith("// ") for line in evil)  # origins only in // comments
    assert "#include <x>" not in [line.strip() for line in src.splitlines()]
    host = (tmp_path / "host" / "model.cpp").read_text()
    assert "af_run_model: the model has ops without an Ascend C lowering" in host


# ---------------------------------------------------------------------------------------
# The CPU model rejects what an NPU would not do
# ---------------------------------------------------------------------------------------

MISUSE = {
    "deque_empty": (
        "AscendC::TQue<AscendC::TPosition::VECIN, 2> q; pipe.InitBuffer(q, 2, 256);"
        "auto t = q.DeQue<float>(); (void)t;",
        "DeQue on an empty queue",
    ),
    "alloc_past_depth": (
        "AscendC::TQue<AscendC::TPosition::VECIN, 2> q; pipe.InitBuffer(q, 2, "
        "256);"
        "auto a = q.AllocTensor<float>(); auto b = q.AllocTensor<float>();"
        "auto c = q.AllocTensor<float>(); (void)a; (void)b; (void)c;",
        "no free buffer",
    ),
    "ub_overflow": (
        "AscendC::TBuf<AscendC::TPosition::VECCALC> b; pipe.InitBuffer(b, 200 * 1024);",
        "unified buffer budget exceeded",
    ),
    "unaligned_copy": (
        "AscendC::TBuf<AscendC::TPosition::VECCALC> b; pipe.InitBuffer(b, 256);"
        "auto t = b.Get<float>(); std::vector<float> g(64); "
        "AscendC::GlobalTensor<float> gt;"
        "gt.SetGlobalBuffer(g.data(), 64); AscendC::DataCopy(t, gt, 10);",
        "multiple of 32 bytes",
    ),
    "vector_overrun": (
        "AscendC::TBuf<AscendC::TPosition::VECCALC> b; pipe.InitBuffer(b, 256);"
        "auto t = b.Get<float>(); AscendC::Adds(t, t, 1.0f, 65);",
        "count beyond the tensor",
    ),
}


@pytest.mark.parametrize("case", list(MISUSE))
def test_cpu_model_rejects_misuse(case: str, tmp_path: Path) -> None:
    body, message = MISUSE[case]
    src = tmp_path / "m.cpp"
    src.write_text(
        f'#include "ascendc_cpu_model.h"\nint main() {{ AscendC::TPipe pipe; {body} return 0; }}\n'
    )
    exe = tmp_path / "m"
    subprocess.run([GXX, "-std=c++17", f"-I{CPU_MODEL_DIR}", str(src), "-o", str(exe)], check=True)
    proc = subprocess.run([str(exe)], capture_output=True, text=True)
    assert proc.returncode != 0, proc.stderr
    assert message in proc.stderr, proc.stderr


# ---------------------------------------------------------------------------------------
# Zoo models through the real fusion pipeline: per group vs the interpreter, end to end
# vs onnxruntime
# ---------------------------------------------------------------------------------------


def sources_of_launches(fused: ModuleOp, low: ModuleOp) -> list:
    from autofusion.lowering.ascendc.zoo_check import launch_sources

    return launch_sources(fused, low)


def fused_zoo_module(name: str) -> tuple[ModuleOp, onnx.ModelProto]:
    from autofusion import zoo
    from autofusion.frontend.onnx_import import import_onnx
    from autofusion.pipeline import PipelineOptions, run_tensor_passes

    proto = zoo.get_model(name)
    module = import_onnx(proto)
    run_tensor_passes(module, PipelineOptions(target="ascendc"))
    return module, proto


def test_whole_cnn_runs_as_the_generated_host_program() -> None:
    """tiny_cnn is covered op for op (convs, pools, gemm), so the generated af_run_model --
    weights.bin and inputs to the device, every launch, outputs back -- runs the model."""
    from autofusion import zoo

    fused, proto = fused_zoo_module("tiny_cnn")
    low = lowered(fused)
    fn = next(o for o in low.body.block.ops if o.name == "func.func")
    assert {o.name for o in fn.body.block.ops} <= {
        "ascendc.launch",
        "nn.constant",
        "nn.reshape",
        "func.return",
    }
    feeds = zoo.sample_inputs(proto, 0)
    got = CpuModelRunner(low).run_host_program(feeds)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for n, ref in zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)):
        assert close(got[n], ref), n


@pytest.mark.parametrize("name", ["tiny_cnn", "tiny_bert"])
def test_zoo_groups_and_model_match(name: str) -> None:
    from autofusion import zoo
    from autofusion.interpreter import IMPLS

    fused, proto = fused_zoo_module(name)
    low = lowered(fused)
    fn = next(o for o in fused.body.block.ops if o.name == "func.func")
    kernels = {k.sym_name.data: k for k in low.body.block.ops if isinstance(k, ac.KernelOp)}
    groups = [o for o in fn.body.block.ops if isinstance(o, fusion.KernelOp)]
    n_fused = sum(not k.pattern.data.startswith("single_") for k in kernels.values())
    assert n_fused >= len(groups) - 1
    feeds = zoo.sample_inputs(proto, 0)
    runner = CpuModelRunner(low)
    got = runner.run(feeds)
    # Per group: each kernel's outputs vs the interpreter evaluating the op it came from
    # (the fusion.kernel, or the single unfused op) on the same inputs. Lowering replaces
    # ops in place, so non-constant ops of @main correspond one to one.
    sources = sources_of_launches(fused, low)
    assert len(runner.trace) == len(kernels) == len(sources)
    from autofusion.lowering.ascendc.lower import outline_single

    for (kname, args, outs), src in zip(runner.trace, sources):
        if not isinstance(src, fusion.KernelOp):
            src = outline_single(src)  # the kernel's inputs: scalar constants are inside
        ref = IMPLS[fusion.KernelOp](src, args[: len(src.inputs)])
        for g, r in zip(outs, ref):
            assert close(g, np.asarray(r)), (
                kname,
                kernels[kname].pattern.data,
                float(np.abs(g - r).max()),
            )
    # end to end (ops without a lowering ran on the interpreter)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    for n, ref in zip(names, sess.run(None, feeds)):
        assert close(got[n], ref), (n, float(np.abs(got[n] - ref).max()))


def test_1d_conv_kernels_stay_on_the_host_with_a_reason() -> None:
    """Whisper's and wav2vec2's front ends are 1-d convs (+ GELU): the cube lowering takes
    2-d convs only, so such a kernel (fused or alone) keeps ``ascendc.fallback`` saying so
    and the model still runs (an IndexError once, reading the 2-d workspace sizes first)."""
    from autofusion.frontend.onnx_import import import_onnx
    from autofusion.pipeline import PipelineOptions, run_tensor_passes

    rng = np.random.default_rng(3)
    w1 = (rng.standard_normal((6, 3, 3)) / 3).astype(np.float32)
    w2 = (rng.standard_normal((5, 6, 3)) / 4).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1]),
            helper.make_node("Relu", ["c1"], ["r1"]),
            helper.make_node("Conv", ["r1", "w2"], ["y"], strides=[2]),
        ],
        "conv1d",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 17])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 5, 8])],
        [onnx.numpy_helper.from_array(w1, "w1"), onnx.numpy_helper.from_array(w2, "w2")],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    module = import_onnx(proto)
    run_tensor_passes(module, PipelineOptions(target="ascendc"))
    low = lowered(module)
    fn = next(o for o in low.body.block.ops if o.name == "func.func")
    left = [o for o in fn.body.block.ops if o.name in ("fusion.kernel", "nn.conv")]
    assert [o.name for o in left] == ["fusion.kernel", "nn.conv"]  # conv + Relu, the bare conv
    for k in left:
        assert k.attributes["ascendc.fallback"].data == "only 2-d convolution is lowered"
    x = rng.standard_normal((1, 3, 17)).astype(np.float32)
    got = run_ascendc_cpu(low, {"x": x})["y"]
    ref = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    want = ref.run(None, {"x": x})[0]
    assert 0.1 < float(np.abs(want).max()) < 10
    assert close(got, want)
