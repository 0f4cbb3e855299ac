"""Generated C for one CNN and one transformer zoo model, and for a sweep of convs on the
direct blocked kernel (afrt_nchwc.h), built with -fsanitize=address,undefined as an
executable driver (not a dlopen'ed .so), runs clean and matches onnxruntime."""

from __future__ import annotations

from pathlib import Path

import onnxruntime as ort
import pytest

from autofusion.api import build_model_dir
from autofusion.pipeline import PipelineOptions
from autofusion.runtime import build, toolchain
from autofusion.testing import assert_close
from autofusion.zoo import get_model, sample_inputs

# (threads, input seed) runs of one sanitizer build per model: a build is the slow part
# (~10 s of gcc), a run is milliseconds. The (2, 2) runs were test_c_properties.py's own
# sanitizer builds of the same model.c (compile_onnx + emit_lowered writes the same bytes
# as build_model_dir).
RUNS = {"tiny_cnn": [(2, 5), (2, 2)], "tiny_bert": [(1, 5), (2, 2)]}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_sanitized_model_runs_clean(name: str, tmp_path: Path) -> None:
    model = get_model(name)
    out = tmp_path / name
    out.mkdir()
    build_model_dir(model, out, PipelineOptions(), name, build=False)
    exe = build.build_sanitizer_driver(out)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    outs = sess.get_outputs()
    for threads, seed in RUNS[name]:
        feeds = sample_inputs(model, seed=seed)
        ref = sess.run([o.name for o in outs], feeds)
        got = build.run_driver(
            exe, out / "weights.bin", [feeds[i.name] for i in sess.get_inputs()],
            [(r.shape, r.dtype) for r in ref], tmp_path / f"io{threads}_{seed}", threads=threads,
        )  # fmt: skip
        for o, g, r in zip(outs, got, ref):
            assert_close(g, r, f"{name} under ASan/UBSan, {threads} threads, seed {seed}: {o.name}")


@pytest.mark.skipif(
    not toolchain.cpu_has_avx512("native"), reason="the blocked kernel is chosen on AVX-512 only"
)
def test_sanitized_blocked_convs_run_clean(tmp_path: Path) -> None:
    """The direct blocked conv (afrt_nchwc.h: padded blocked input in scratch, tiles of two
    rows, edge column tiles, K past the last 32-channel tile, per-call weights) under
    ASan/UBSan at two threads, against onnxruntime."""
    from conv_epilogues import conv3x3_sweep, sweep_feeds
    from test_c_nchwc import sweep

    from autofusion.lowering.c.testing import compile_onnx, emit_lowered, onnxruntime_outputs

    m = conv3x3_sweep(sweep()[3:], 13, "nchwc_sweep")
    feeds = sweep_feeds(m, 13)
    ref = onnxruntime_outputs(m, feeds)
    emit_lowered(compile_onnx(m, fusion=True), tmp_path)
    assert "afrt_nchwc_f32" in (tmp_path / "model.c").read_text()
    exe = build.build_sanitizer_driver(tmp_path)
    got = build.run_driver(
        exe, tmp_path / "weights.bin", [feeds[i.name] for i in m.graph.input],
        [(r.shape, r.dtype) for r in ref.values()], tmp_path / "io", threads=2,
    )  # fmt: skip
    for (name, r), g in zip(ref.items(), got, strict=True):
        assert_close(g, r, f"{name} under ASan/UBSan")
