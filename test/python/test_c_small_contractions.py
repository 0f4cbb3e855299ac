"""MatMul / Gemm with small constant weights (K, N in 1..17) build and match onnxruntime.

Weights of at most 16 elements are printed as ``static const`` arrays; gcc then sees their
bounds through afrt's inlined B packing, whose masked AVX-512 loads used to form a pointer
past the end of a row (``src + 16`` for a row of fewer than 17 columns) and failed the build
with ``-Werror=array-bounds`` (about one random graph in ten). One model per op kind holds
every (K, N) pair, so the test costs three compiles.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from autofusion.lowering.c.testing import assert_close, build, compile_onnx, onnxruntime_outputs
from autofusion.runtime.loader import ModelLibrary

SIZES = range(1, 18)
M = 2


def _grid_model(kind: str, rng: np.random.Generator) -> onnx.ModelProto:
    """x{K}[M, K] times a constant weight for every (K, N): MatMul, or Gemm + bias."""
    nodes, inits, outs = [], [], []
    ins = [helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, [M, k]) for k in SIZES]
    for k in SIZES:
        for n in SIZES:
            trans_b = kind == "gemm_transb"
            w = (rng.standard_normal((n, k) if trans_b else (k, n)) / np.sqrt(k)).astype(np.float32)
            inits.append(numpy_helper.from_array(w, f"w{k}_{n}"))
            y = f"y{k}_{n}"
            if kind == "matmul":
                nodes.append(helper.make_node("MatMul", [f"x{k}", f"w{k}_{n}"], [y]))
            else:
                bias = rng.standard_normal(n).astype(np.float32)
                inits.append(numpy_helper.from_array(bias, f"b{k}_{n}"))
                nodes.append(helper.make_node("Gemm", [f"x{k}", f"w{k}_{n}", f"b{k}_{n}"], [y],
                                              transB=int(trans_b)))  # fmt: skip
            outs.append(helper.make_tensor_value_info(y, TensorProto.FLOAT, None))
    g = helper.make_graph(nodes, kind, ins, outs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("kind", ["matmul", "gemm_transb", "gemm"])
def test_small_constant_weights_build_and_match(kind: str, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    model = _grid_model(kind, rng)
    lib = ModelLibrary(build(compile_onnx(model), tmp_path), tmp_path / "weights.bin", 1)
    feeds = {f"x{k}": rng.standard_normal((M, k)).astype(np.float32) for k in SIZES}
    ref = onnxruntime_outputs(model, feeds)
    got = lib.run(feeds)
    lib.close()
    assert 0.1 <= max(float(np.abs(r).max()) for r in ref.values()) <= 10
    for name, r in ref.items():
        assert_close(got[name], r, name)
