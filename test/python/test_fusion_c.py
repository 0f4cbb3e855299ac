"""Kernels built at every aggressiveness hold only what the C backend compiles: the fused
models, lowered to C and run, match onnxruntime."""

from __future__ import annotations

import json
from pathlib import Path

import onnxruntime as ort
import pytest

import autofusion
from autofusion import zoo
from autofusion.testing import assert_close


@pytest.mark.parametrize(("model", "level"), [("tiny_bert", 3), ("mobilenet", 2)])
def test_fused_c_matches_onnxruntime(model: str, level: int, tmp_path: Path) -> None:
    m = zoo.get_model(model)
    feeds = zoo.sample_inputs(m, seed=2)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    cfg = tmp_path / "level.json"
    cfg.write_text(json.dumps({"aggressiveness": level}))
    compiled = autofusion.compile(f"zoo:{model}", config=str(cfg), threads=1)
    assert compiled.report["groups"]
    assert compiled.report["policy"]["aggressiveness"] == level
    out = compiled.run(feeds)
    for k, r in ref.items():
        assert_close(out[k], r, f"{model}: {k}")
