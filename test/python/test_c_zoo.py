"""Every zoo model through the full pipeline and the generated C, against onnxruntime.

The default pipeline (fusion, memory planning, C lowering) builds each model with
-Wall -Wextra -Werror; outputs on seeded inputs must match onnxruntime at rtol=1e-3,
atol=1e-4*max(1,max|ref|). The two tiny models also run unfused. Big models are marked
slow (they still run in CI). The fused builds compile the kernels into each model.c, as the
output folder's Makefile does (for the warnings only an inlined kernel shows); the unfused
ones link the prebuilt runtime, as ``autofusion-compile`` does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autofusion import zoo
from autofusion.lowering.c.testing import (
    assert_close,
    build_and_run,
    compile_onnx,
    onnxruntime_outputs,
)

SLOW = {"resnet50", "bert_base", "bert_large", "swin_tiny", "vit_tiny", "densenet121"}


def _param(name: str):
    return pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name


@pytest.mark.parametrize("name", [_param(n) for n in zoo.list_models()])
def test_zoo_model_matches_onnxruntime(name: str, tmp_path: Path) -> None:
    model = zoo.get_model(name)
    feeds = zoo.sample_inputs(model, seed=0)
    ref = onnxruntime_outputs(model, feeds)
    got = build_and_run(compile_onnx(model, fusion=True), feeds, tmp_path, inline_runtime=True)
    for out, r in ref.items():
        assert_close(got[out], r, f"{name}: {out}")


@pytest.mark.parametrize("name", ["tiny_cnn", "tiny_bert"])
def test_unfused_tiny_models(name: str, tmp_path: Path) -> None:
    model = zoo.get_model(name)
    feeds = zoo.sample_inputs(model, seed=1)
    ref = onnxruntime_outputs(model, feeds)
    got = build_and_run(compile_onnx(model, fusion=False), feeds, tmp_path)
    for out, r in ref.items():
        assert_close(got[out], r, f"{name} (no fusion): {out}")
