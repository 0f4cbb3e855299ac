"""The small-sequence attention path (``afrt_attention_small_f32``: T <= 64, AVX-512 builds)
against onnxruntime, through import, ``recognize-attention`` and the generated C: Swin-style
windows (T = 49 with a bias mask broadcast over the windows, or a per-window one), T not a
multiple of the vector width (7, 1), head sizes with lane tails, the limit T = 64 and T = 65
just past it (the streaming core), whole rows masked with -inf with and without the
exporters' ``Where(IsNaN(p), 0, p)`` guard, a NaN in the mask; one and two threads; native
(AVX-512 on this machine: the small path), x86-64-v3 and x86-64-v2 builds (the portable
loop)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto
from onnx import helper as h

from autofusion.lowering.c.testing import compile_onnx, emit_lowered, onnxruntime_outputs
from autofusion.runtime import toolchain
from autofusion.runtime.build import BuildOptions, build_shared
from autofusion.runtime.loader import ModelLibrary
from autofusion.testing import assert_close


def _attention(
    name: str, w: int, heads: int, t: int, d: int, e: int, mask: str, guard: bool = False
) -> tuple[list[onnx.NodeProto], list[onnx.ValueInfoProto], list[onnx.TensorProto]]:
    """Exporter-style attention ``name`` on q/k [w, heads, t, d], v [w, heads, t, e] (inputs
    and output prefixed with ``name``); ``mask``: "" none, "bias" [1, heads, t, t] (broadcast
    over the windows), "window" [w, heads, t, t]; ``guard``: the NaN guard on the
    probabilities. Its nodes, inputs and initializers."""
    f = TensorProto.FLOAT
    n = f"{name}_"
    inputs = [
        h.make_tensor_value_info(n + "q", f, [w, heads, t, d]),
        h.make_tensor_value_info(n + "k", f, [w, heads, t, d]),
        h.make_tensor_value_info(n + "v", f, [w, heads, t, e]),
    ]
    nodes = [
        h.make_node("Transpose", [n + "k"], [n + "kt"], perm=[0, 1, 3, 2]),
        h.make_node("MatMul", [n + "q", n + "kt"], [n + "qk"]),
        h.make_node("Mul", [n + "qk", n + "scale"], [n + "s0"]),
    ]
    inits = [h.make_tensor(n + "scale", f, [], [float(d) ** -0.5])]
    scores = n + "s0"
    if mask:
        shape = [1 if mask == "bias" else w, heads, t, t]
        inputs.append(h.make_tensor_value_info(n + "m", f, shape))
        nodes.append(h.make_node("Add", [scores, n + "m"], [n + "s1"]))
        scores = n + "s1"
    nodes.append(h.make_node("Softmax", [scores], [n + "p"], axis=-1))
    probs = n + "p"
    if guard:
        inits.append(h.make_tensor(n + "zero", f, [], [0.0]))
        nodes += [
            h.make_node("IsNaN", [probs], [n + "isnan"]),
            h.make_node("Where", [n + "isnan", n + "zero", probs], [n + "pg"]),
        ]
        probs = n + "pg"
    nodes.append(h.make_node("MatMul", [probs, n + "v"], [name]))
    return nodes, inputs, inits


def _model(cases: dict[str, tuple[int, int, int, int, int, str, bool]]) -> onnx.ModelProto:
    """One model holding each case's attention side by side (one build for all); output
    ``name`` per case."""
    nodes, inputs, inits = [], [], []
    for name, shape in cases.items():
        n, i, c = _attention(name, *shape)
        nodes, inputs, inits = nodes + n, inputs + i, inits + c
    outputs = [h.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in cases]
    graph = h.make_graph(nodes, "attn", inputs, outputs, initializer=inits)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])


def _feeds(model: onnx.ModelProto, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for vi in model.graph.input:
        shape = [dim.dim_value for dim in vi.type.tensor_type.shape.dim]
        lo = -2.0 if vi.name.endswith("_m") else -1.0
        feeds[vi.name] = rng.uniform(lo, 1.0, shape).astype(np.float32)
    return feeds


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray], tmp: Path, cpu: str,
         threads: int) -> dict[str, np.ndarray]:  # fmt: skip
    if toolchain.is_cross(cpu):
        pytest.skip(f"{cpu} builds do not run on this machine")
    module = compile_onnx(model)
    found = sum(op.name == "nn.attention" for op in module.walk())
    assert found == len(model.graph.output), "an attention was not recognised"
    emit_lowered(module, tmp)
    lib = ModelLibrary(build_shared(tmp, BuildOptions(cpu=cpu)), tmp / "weights.bin", threads)
    try:
        return lib.run(feeds)
    finally:
        lib.close()


# windows, heads, T (= S), head dim d, value dim e, mask, guard
SHAPES = {
    "swin49_bias": (4, 3, 49, 32, 32, "bias", False),
    "swin49_window": (3, 2, 49, 32, 32, "window", False),
    "t7_tails": (2, 3, 7, 12, 20, "window", False),
    "t1": (2, 2, 1, 8, 40, "", False),
    "t64_limit": (1, 2, 64, 64, 64, "bias", False),
    "t65_streamed": (1, 2, 65, 16, 16, "bias", False),
}


@pytest.mark.parametrize(("cpu", "threads"), [("native", 1), ("native", 2), ("x86-64-v3", 1)])
def test_small_attention_matches_onnxruntime(tmp_path: Path, cpu: str, threads: int) -> None:
    model = _model(SHAPES)
    feeds = _feeds(model, seed=14)
    ref = onnxruntime_outputs(model, feeds)
    got = _run(model, feeds, tmp_path, cpu, threads)
    for name, r in ref.items():
        assert 0.05 < float(np.abs(r).mean()) < 10, name
        assert_close(got[name], r, f"{name} ({cpu}, {threads} thread(s))")


@pytest.mark.parametrize(("cpu", "threads"), [("native", 1), ("native", 2), ("x86-64-v2", 1)])
def test_small_attention_masked_rows(tmp_path: Path, cpu: str, threads: int) -> None:
    """Rows whose every score is -inf, and a row with a NaN in its mask: NaN rows as
    onnxruntime gives them, or, behind the exporters' guard, zero rows; all others close.
    The same at the last key of T = 49 (the small path's one-vector tail): a NaN there, -inf
    there, the only finite score there (the output is that key's value row), the maximum."""
    cases = {f"guard{g}": (3, 2, 49, 32, 32, "window", g) for g in (0, 1)}
    model = _model({k: (*v[:6], bool(v[6])) for k, v in cases.items()})
    feeds = _feeds(model, seed=7)
    for g in (0, 1):
        m = feeds[f"guard{g}_m"]
        m[0, 1, 5, :] = -np.inf  # one whole row
        m[2, :, 48, :] = -np.inf  # the last row (the padded row tile) of every head
        m[1, 0, 10, :40] = -np.inf  # most of a row: still finite
        m[1, 1, 20, 30] = np.nan
        # the last key (T % 16 == 1: its 7 rows' scores are one vector of their own)
        m[0, 0, 3, :48] = -np.inf  # only the last key is finite: its value row
        m[0, 1, 4, 48] = 6.0  # the last key is the row's maximum
        m[2, 1, 7, 48] = np.nan  # a NaN there: a NaN row
        m[1, 0, 13, 48] = -np.inf  # and -inf there: still finite
    ref = onnxruntime_outputs(model, feeds)
    got = _run(model, feeds, tmp_path, cpu, threads)
    for g in (0, 1):
        r, y = ref[f"guard{g}"], got[f"guard{g}"]
        for idx in [(0, 1, 5), (2, 0, 48), (2, 1, 48), (1, 1, 20), (2, 1, 7)]:
            expect = np.zeros_like(r[idx]) if g else np.full_like(r[idx], np.nan)
            np.testing.assert_array_equal(r[idx], expect, err_msg=str(idx))
            np.testing.assert_array_equal(y[idx], expect, err_msg=str(idx))
        assert np.array_equal(np.isnan(y), np.isnan(r))
        assert np.isfinite(y[1, 0, 10]).all()
        assert np.isfinite(y[1, 0, 13]).all()
        np.testing.assert_allclose(y[0, 0, 3], feeds[f"guard{g}_v"][0, 0, 48], rtol=1e-6)
        assert_close(y, r, f"masked rows (guard {g}, {cpu}, {threads} thread(s))")


@pytest.mark.parametrize(("cpu", "want"), [("native", "small"), ("x86-64-v3", "streamed")])
def test_report_names_the_attention_path(tmp_path: Path, cpu: str, want: str) -> None:
    """report.json's ``attention_algo`` rows say which path each call runs: on an AVX-512
    build the small path up to T = 64 and the streaming core past it; elsewhere streamed."""
    from autofusion.api import build_model_dir
    from autofusion.pipeline import PipelineOptions

    if want == "small" and not toolchain.cpu_has_avx512(cpu):
        pytest.skip("this machine's native build has no AVX-512")
    shapes = {k: SHAPES[k] for k in ("swin49_bias", "t65_streamed")}
    report = build_model_dir(_model(shapes), tmp_path, PipelineOptions(cpu=cpu), build=False)
    rows = report["attention_algo"]
    assert [r["attention_algo"] for r in rows] == [want, "streamed"]
    assert rows[0]["shape"] == "batch 12 S 49 T 49 D 32 E 32"


def test_small_limit_matches_the_runtime() -> None:
    """clib.ATTN_SMALL_T (the report's rule) is afrt.h's AFRT_ATTN_SMALL_T."""
    from autofusion.dialects import clib

    text = (toolchain.INCLUDE_DIR / "afrt.h").read_text()
    assert f"#define AFRT_ATTN_SMALL_T {clib.ATTN_SMALL_T}\n" in text


def test_transpose_loop_order() -> None:
    """A short outermost output loop gives way to the dim holding the input's outermost one
    (Swin's qkv split); a long one, or a dim that is the innermost, leaves the order alone."""
    from autofusion.lowering.c.ops import transpose_loop_order

    qkv = transpose_loop_order([3, 64, 3, 49, 32], [64, 49, 3, 3, 32], (2, 0, 3, 1, 4))
    assert qkv == [1, 0, 2, 3, 4]
    last = transpose_loop_order([3, 1, 24, 49, 32], [1, 49, 3, 24, 32], (2, 0, 3, 1, 4))
    assert last == [3, 0, 1, 2, 4]
    assert transpose_loop_order([64, 3, 49, 32], [64, 49, 3, 32], (0, 2, 1, 3)) == [0, 1, 2, 3]
    assert transpose_loop_order([2, 50], [50, 2], (1, 0)) == [0, 1]


@pytest.mark.parametrize("threads", [1, 2])
def test_reordered_transposes_match_onnxruntime(tmp_path: Path, threads: int) -> None:
    """Transposes whose loops the lowering reorders (Swin's qkv split at two window counts)
    and one it leaves alone, through the generated C against onnxruntime."""
    f = TensorProto.FLOAT
    cases = {
        "qkv": ([4, 49, 3, 3, 32], [2, 0, 3, 1, 4]),
        "qkv1": ([1, 49, 3, 5, 8], [2, 0, 3, 1, 4]),
        "swap": ([3, 40], [1, 0]),
    }
    nodes = [h.make_node("Transpose", [n + "_x"], [n], perm=p) for n, (_, p) in cases.items()]
    inputs = [h.make_tensor_value_info(n + "_x", f, s) for n, (s, _) in cases.items()]
    outputs = [h.make_tensor_value_info(n, f, None) for n in cases]
    model = h.make_model(h.make_graph(nodes, "tr", inputs, outputs),
                         opset_imports=[h.make_opsetid("", 17)])  # fmt: skip
    feeds = _feeds(model, seed=3)
    ref = onnxruntime_outputs(model, feeds)
    emit_lowered(compile_onnx(model), tmp_path)
    lib = ModelLibrary(build_shared(tmp_path, BuildOptions()), tmp_path / "weights.bin", threads)
    try:
        got = lib.run(feeds)
    finally:
        lib.close()
    for name, r in ref.items():
        np.testing.assert_array_equal(got[name], r, err_msg=name)
