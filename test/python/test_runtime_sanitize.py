"""Generated C for one CNN and one transformer zoo model, built with
-fsanitize=address,undefined as an executable driver (not a dlopen'ed .so), runs clean and
matches onnxruntime."""

from __future__ import annotations

from pathlib import Path

import onnxruntime as ort
import pytest

from autofusion.api import build_model_dir
from autofusion.pipeline import PipelineOptions
from autofusion.runtime import build
from autofusion.testing import assert_close
from autofusion.zoo import get_model, sample_inputs


@pytest.mark.parametrize(("name", "threads"), [("tiny_cnn", 2), ("tiny_bert", 1)])
def test_sanitized_model_runs_clean(name: str, threads: int, tmp_path: Path) -> None:
    model = get_model(name)
    out = tmp_path / name
    out.mkdir()
    build_model_dir(model, out, PipelineOptions(), name, build=False)
    exe = build.build_sanitizer_driver(out)
    feeds = sample_inputs(model, seed=5)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    outs = sess.get_outputs()
    ref = sess.run([o.name for o in outs], feeds)
    got = build.run_driver(
        exe, out / "weights.bin", [feeds[i.name] for i in sess.get_inputs()],
        [(r.shape, r.dtype) for r in ref], tmp_path / "io", threads=threads,
    )  # fmt: skip
    for o, g, r in zip(outs, got, ref):
        assert_close(g, r, o.name)
