"""Winograd F(4x4, 3x3) convolution (``afrt_winograd_f32``, algo ``winograd``) against onnxruntime.

A sweep of dense 3x3 stride-1 convs the rule sends to Winograd (channels 5..96 including
non-multiples of the register tiles, odd and even maps 9..45 with edge tiles, pads 0, 1, 2 and
asymmetric, batch 2, weights as a graph input), each with a fused epilogue (none, bias, Relu,
Clip(0, 6), SiLU, bias + residual Add + Relu), is packed into one multi-branch model per
build: this CPU at one thread, and the portable path (``cpu="x86-64-v3"``, no AVX-512 gathers;
its clamp in AVX2) at two, and at one for x86-64-v2 (the clamp's plain C loop).
Every conv must be reported as ``winograd`` and match at the project's fp32 bar. The
residual tiny_cnn zoo model runs end to end with its 3x3 convs on Winograd. A NaN and an
inf input in the sweep must give exactly onnxruntime's outputs, NaN and inf included: a
Winograd tile would spread them to all 16 outputs of its 4x4 block, so such a call takes the
im2col path (docs/c-backend.md).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from conv_epilogues import conv3x3_sweep, sweep_feeds

import autofusion
from autofusion import zoo
from autofusion.lowering.c.testing import onnxruntime_outputs
from autofusion.testing import assert_close

# c, k, h, w, pads (top, left, bottom, right), epilogue
CASES: list[tuple[int, int, int, int, tuple[int, int, int, int], str]] = [
    (16, 16, 20, 20, (1, 1, 1, 1), "relu"),
    (32, 40, 22, 23, (0, 0, 0, 0), "bias"),
    (33, 17, 21, 30, (1, 1, 1, 1), "bias_add_relu"),
    (64, 64, 18, 18, (1, 1, 1, 1), "relu6"),
    (16, 8, 45, 9, (2, 2, 2, 2), "silu"),
    (80, 13, 19, 23, (0, 1, 2, 0), "none"),
    (6, 5, 28, 28, (1, 1, 1, 1), "bias"),
    (48, 96, 15, 29, (1, 0, 0, 1), "bias_add_relu"),
    # Inception's 47x47 map: 144 tiles, at two threads 5 tasks of 32 tiles, the last 16
    (32, 64, 47, 47, (1, 1, 1, 1), "relu"),
]
EPILOGUES = ("none", "bias", "relu", "relu6", "silu", "bias_add_relu")


def _sweep() -> list[dict[str, object]]:
    cases: list[dict[str, object]] = [
        {"c": c, "k": k, "h": h, "w": w, "pads": p, "epi": e} for c, k, h, w, p, e in CASES
    ]
    cases.append({"c": 20, "k": 24, "h": 17, "w": 19, "pads": (1, 1, 1, 1), "epi": "relu",
                  "batch": 2})  # fmt: skip
    cases.append({"c": 16, "k": 16, "h": 18, "w": 18, "pads": (1, 1, 1, 1), "epi": "bias",
                  "w_input": True})  # fmt: skip
    return cases


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray], cpu: str,
         threads: int) -> tuple[dict[str, np.ndarray], dict[str, object]]:  # fmt: skip
    m = autofusion.compile(model, cpu=cpu, threads=threads, cache=False)
    try:
        return m.run(feeds), m.report
    finally:
        m.close()


@pytest.mark.parametrize(("cpu", "threads"), [("native", 1), ("x86-64-v3", 2), ("x86-64-v2", 1)])
def test_winograd_sweep_matches_onnxruntime(cpu: str, threads: int) -> None:
    """The sweep; its first conv also gets a NaN and an inf input, which must give exactly
    onnxruntime's outputs (NaN and inf where ONNX has them and nowhere else)."""
    cases = _sweep()
    model = conv3x3_sweep(cases, 5, "winograd_sweep")
    feeds = sweep_feeds(model, 5)
    # case 0 (20x20, pad 1): padded (7, 10) lies only in tile (1, 2)'s input block (rows
    # 4..9, columns 8..13), whose outputs are rows 4..7, columns 8..11; a Winograd tile
    # would make all 16 of them NaN, where ONNX has NaN only in the 3x3 windows holding it
    feeds["x0"][0, 3, 6, 9] = np.nan
    feeds["x0"][0, 1, 15, 2] = np.inf
    ref = onnxruntime_outputs(model, feeds)
    assert all(0.1 < np.abs(r[np.isfinite(r)]).max() < 10 for r in ref.values())  # ordinary size
    got, report = _run(model, feeds, cpu, threads)
    algos = [r["conv_algo"] for r in report["conv_algo"]]  # type: ignore[index]
    assert algos == ["winograd"] * len(cases), algos
    assert np.isnan(ref["y0"]).any()
    assert not np.isnan(ref["y0"][:, :, 4:8, 8:12]).all()  # a tile-wide NaN would fail below
    assert np.array_equal(np.isnan(got["y0"]), np.isnan(ref["y0"]))
    assert np.array_equal(np.isinf(got["y0"]), np.isinf(ref["y0"]))
    for name, r in ref.items():
        assert_close(got[name], r, f"{name} ({cpu}, {threads} thread(s))")


def test_zoo_residual_cnn_uses_winograd() -> None:
    """tiny_cnn (Conv+BN+Relu, a residual block with Add) end to end, fused, two threads."""
    model = zoo.get_model("tiny_cnn")
    feeds = zoo.sample_inputs(model, seed=3)
    ref = onnxruntime_outputs(model, feeds)
    got, report = _run(model, feeds, "native", 2)
    rows = [r for r in report["conv_algo"] if r["conv_algo"] == "winograd"]  # type: ignore[union-attr]
    assert len(rows) >= 2, report["conv_algo"]
    assert any(len(r["origins"]) > 1 for r in rows)  # an epilogue fused into a Winograd conv
    for name, r in ref.items():
        assert_close(got[name], r, f"tiny_cnn: {name}")
