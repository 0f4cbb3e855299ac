"""GridSample, decomposed by the frontend (``convert_gridsample.py``), against onnxruntime in
the interpreter and the generated C: every mode (nearest, linear, cubic) with every padding
mode and both ``align_corners``, in 2-d, and linear/nearest in 3-d, with grids reaching 40%
beyond [-1, 1] so the padding rules matter (one C build for all cases). Hostile grids (huge,
infinite and NaN coordinates) run without reading out of bounds."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from autofusion.errors import AutofusionError
from autofusion.frontend import import_onnx
from autofusion.interpreter import run_module
from autofusion.lowering.c.testing import build_and_run, compile_onnx, onnxruntime_outputs
from autofusion.testing import assert_close

CASES = [
    ([2, 3, 5, 6], [2, 4, 3, 2], mode, pad, align)
    for mode, pad, align in itertools.product(
        ["nearest", "linear", "cubic"], ["zeros", "border", "reflection"], [0, 1]
    )
] + [
    ([1, 2, 3, 4, 5], [1, 2, 3, 2, 3], mode, pad, align)
    for mode, pad, align in [
        ("linear", "zeros", 0),
        ("linear", "reflection", 1),
        ("nearest", "border", 0),
    ]
]


def _model(cases: list) -> onnx.ModelProto:
    nodes, inputs, outputs = [], [], []
    for n, (xs, gs, mode, pad, align) in enumerate(cases):
        inputs += [
            h.make_tensor_value_info(f"x{n}", T.FLOAT, xs),
            h.make_tensor_value_info(f"g{n}", T.FLOAT, gs),
        ]
        outputs.append(h.make_tensor_value_info(f"y{n}", T.FLOAT, None))
        nodes.append(
            h.make_node(
                "GridSample",
                [f"x{n}", f"g{n}"],
                [f"y{n}"],
                name=f"gs{n}",
                mode=mode,
                padding_mode=pad,
                align_corners=align,
            )
        )
    graph = h.make_graph(nodes, "g", inputs, outputs)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 20)])


def _feeds(cases: list, seed: int, spread: float) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds = {}
    for n, (xs, gs, *_) in enumerate(cases):
        feeds[f"x{n}"] = rng.uniform(0.1, 2.0, xs).astype(np.float32)
        feeds[f"g{n}"] = rng.uniform(-spread, spread, gs).astype(np.float32)
    return feeds


def test_gridsample_matches_onnxruntime(tmp_path) -> None:
    model = _model(CASES)
    feeds = _feeds(CASES, seed=2, spread=1.4)
    ref = onnxruntime_outputs(model, feeds)
    got = run_module(import_onnx(model, progress=False), feeds)
    got_c = build_and_run(compile_onnx(model), feeds, tmp_path)
    for n, case in enumerate(CASES):
        r = ref[f"y{n}"]
        assert 0.1 < float(np.abs(r).max()) < 10, case
        assert_close(got[f"y{n}"], r, f"{case} interpreter")
        assert_close(got_c[f"y{n}"], r, f"{case} C")


def test_gridsample_hostile_grid_stays_in_bounds(tmp_path) -> None:
    cases = [
        ([1, 2, 4, 4], [1, 3, 3, 2], m, p, 0)
        for m, p in [("linear", "zeros"), ("cubic", "border"), ("nearest", "reflection")]
    ]
    model = _model(cases)
    feeds = _feeds(cases, seed=4, spread=1.0)
    for n in range(len(cases)):
        g = feeds[f"g{n}"]
        g[0, 0, :, 0] = [1e30, -1e30, np.inf]
        g[0, 1, :, 1] = [np.nan, -np.inf, 3e9]
    got_c = build_and_run(compile_onnx(model), feeds, tmp_path)
    got = run_module(import_onnx(model, progress=False), feeds)
    for n in range(len(cases)):
        assert got_c[f"y{n}"].shape == (1, 2, 3, 3)
        finite = np.isfinite(feeds[f"g{n}"]).all(axis=-1)[:, None]
        finite = np.broadcast_to(finite, got[f"y{n}"].shape)
        np.testing.assert_allclose(got_c[f"y{n}"][finite], got[f"y{n}"][finite], rtol=1e-5)


def test_gridsample_refusals_name_the_node() -> None:
    bad_grid = _model([([1, 2, 4, 4], [1, 3, 3, 3], "linear", "zeros", 0)])
    with pytest.raises(AutofusionError, match=r"node 'gs0' \(GridSample\).*does not fit"):
        import_onnx(bad_grid, progress=False)
    bad_mode = _model([([1, 2, 4, 4], [1, 3, 3, 2], "area", "zeros", 0)])
    with pytest.raises(AutofusionError, match=r"node 'gs0' \(GridSample\).*mode 'area'"):
        import_onnx(bad_mode, progress=False)
