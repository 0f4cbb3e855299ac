"""Streaming (flash-style) attention on the Ascend C CPU functional model against onnxruntime:
key and query blocks with ragged tails, masks (a fully-masked row with and without the
exporters' IsNaN guard), several heads, and an exported BERT through the whole pipeline.

These check the generated kernel's logic (block walk, online softmax, workspace use), not NPU
performance.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto
from onnx import helper as h
from xdsl.dialects import func

from autofusion.dialects import ascendc as ac
from autofusion.dialects import nn
from autofusion.frontend.onnx_import import import_onnx
from autofusion.lowering.ascendc import run_ascendc_cpu
from autofusion.lowering.ascendc.lower import LowerFusionToAscendC
from autofusion.pipeline import PipelineOptions, make_context, run_tensor_passes
from autofusion.testing import assert_close

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ builds the CPU model")

DATA = Path(__file__).parent / "data" / "exported"
F = TensorProto.FLOAT


def _sdpa(qs, ks, vs, ms, scale: float, guard: bool) -> onnx.ModelProto:
    """q k^T * scale (+ mask) -> Softmax [-> Where(IsNaN(p), 0, p)] -> @ v, as exporters
    write it; recognize-attention makes it one nn.attention."""
    nodes = [
        h.make_node(
            "Transpose", ["k"], ["kt"], perm=[*range(len(ks) - 2), len(ks) - 1, len(ks) - 2]
        ),
        h.make_node("MatMul", ["q", "kt"], ["s0"]),
        h.make_node("Mul", ["s0", "c"], ["s1"]),
    ]
    s = "s1"
    if ms is not None:
        nodes.append(h.make_node("Add", ["s1", "m"], ["s2"]))
        s = "s2"
    nodes.append(h.make_node("Softmax", [s], ["p"], axis=-1))
    p = "p"
    if guard:
        nodes += [
            h.make_node("IsNaN", ["p"], ["nan"]),
            h.make_node("Where", ["nan", "zero", "p"], ["p0"]),
        ]
        p = "p0"
    nodes.append(h.make_node("MatMul", [p, "v"], ["y"]))
    inputs = [("q", qs), ("k", ks), ("v", vs)] + ([("m", ms)] if ms is not None else [])
    graph = h.make_graph(
        nodes,
        "sdpa",
        [h.make_tensor_value_info(n, F, list(sh)) for n, sh in inputs],
        [h.make_tensor_value_info("y", F, None)],
        [
            h.make_tensor("c", F, [], [scale]),
            h.make_tensor("zero", F, [], [0.0]),
        ],
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])


def _lower(proto: onnx.ModelProto | str, cores: int = 8, max_tile: int = 4096):
    module = import_onnx(proto, progress=False)
    run_tensor_passes(module, PipelineOptions(target="ascendc"))
    LowerFusionToAscendC(cores=cores, max_tile=max_tile).apply(make_context(), module)
    module.verify()
    return module


def _attention_kernels(module) -> list[ac.KernelOp]:
    return [
        k
        for k in module.body.block.ops
        if isinstance(k, ac.KernelOp) and any(isinstance(o, ac.AttentionOp) for o in k.walk())
    ]


def _ort(proto: onnx.ModelProto | str, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    data = proto if isinstance(proto, str) else proto.SerializeToString()
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return [np.asarray(r) for r in sess.run(None, feeds)]


RNG = np.random.default_rng(16)

CASES = {
    # 3 heads, S = 37 (query blocks 32 + 5), T = 45 (key blocks of 8, a tail of 5), guard,
    # per-position mask with -inf entries and one fully masked row per batch entry
    "guard_full_mask": ((2, 3, 37, 8), (2, 3, 45, 8), (2, 3, 45, 6), (2, 1, 37, 45), True, 256),
    # BERT-style [B, 1, 1, T] additive mask, no guard, same blocks
    "padding_mask": ((2, 3, 37, 8), (2, 3, 45, 8), (2, 3, 45, 6), (2, 1, 1, 45), False, 256),
    # k and v shared by the 4 heads (multi-query), a [1, 1, S, T] mask
    "shared_kv_heads": ((2, 4, 19, 8), (2, 1, 27, 8), (2, 1, 27, 6), (1, 1, 19, 27), False, 256),
    # q shared by the batch entries, k and v per (batch, head)
    "shared_q_batch": ((1, 3, 21, 8), (2, 3, 27, 8), (2, 3, 27, 6), None, False, 256),
    # default tiling: key blocks of 128, T = 300 (tail 44), no mask
    "default_blocks": ((1, 2, 20, 16), (1, 2, 300, 16), (1, 2, 300, 12), None, False, 4096),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_streaming_attention_matches_onnxruntime(case: str) -> None:
    qs, ks, vs, ms, guard, max_tile = CASES[case]
    scale = 1.0 / float(np.sqrt(qs[-1]))
    proto = _sdpa(qs, ks, vs, ms, scale, guard)
    low = _lower(proto, cores=3, max_tile=max_tile)
    (kernel,) = _attention_kernels(low)
    t = kernel.tiling_values()
    # the blocks really split both sequences, with ragged last blocks
    assert t["blockT"] < ks[-2], t
    assert ks[-2] % t["blockT"] != 0, t
    if qs[-2] == 37:
        assert t["qBlocks"] == 2, t
    # workspace: one score block per core, not S x T
    assert t["wsPerCore"] == t["blockQ"] * t["blockT"] < qs[-2] * ks[-2]
    feeds = {
        "q": RNG.standard_normal(qs).astype(np.float32),
        "k": RNG.standard_normal(ks).astype(np.float32),
        "v": RNG.standard_normal(vs).astype(np.float32),
    }
    if ms is not None:
        m = np.where(RNG.random(ms) > 0.25, 0.0, -np.inf if guard else -1e4).astype(np.float32)
        if guard:
            m[0, 0, 4, :] = -np.inf  # fully masked rows: 0 with the guard
            m[1, 0, 36, :] = -np.inf  # (the last query block's last row)
        feeds["m"] = m
    (ref,) = _ort(proto, feeds)
    assert ref.shape[:-2] == np.broadcast_shapes(qs[:-2], ks[:-2]), ref.shape
    assert 0.05 < float(np.abs(ref).mean()) < 10
    if guard:
        assert np.all(ref[0, :, 4] == 0)
        assert np.all(ref[1, :, 36] == 0)
    got = run_ascendc_cpu(low, feeds)["y"]
    assert not np.isnan(got).any()
    assert_close(got, ref, f"streaming attention ({case})")


def test_fully_masked_row_without_guard_is_nan() -> None:
    """Without the guard a row of -inf scores is NaN (0/0) as in onnxruntime; others match."""
    qs, ks, vs, ms = (1, 2, 9, 8), (1, 2, 21, 8), (1, 2, 21, 4), (1, 1, 9, 21)
    proto = _sdpa(qs, ks, vs, ms, 0.35, guard=False)
    low = _lower(proto, cores=2, max_tile=64)
    assert _attention_kernels(low)
    m = np.zeros(ms, np.float32)
    m[..., 2, :] = -np.inf
    m[..., 6, :10] = -np.inf  # masked through the first key blocks only
    feeds = {
        "q": RNG.standard_normal(qs).astype(np.float32),
        "k": RNG.standard_normal(ks).astype(np.float32),
        "v": RNG.standard_normal(vs).astype(np.float32),
        "m": m,
    }
    (ref,) = _ort(proto, feeds)
    got = run_ascendc_cpu(low, feeds)["y"]
    assert np.isnan(ref[:, :, 2]).all()
    assert np.isnan(got[:, :, 2]).all()
    assert not np.isnan(got[:, :, [0, 1, 3, 4, 5, 6, 7, 8]]).any()
    assert_close(got, ref, "attention with a fully masked row")


@pytest.mark.parametrize(
    ("name", "masked"), [("bert_ts", False), ("bert_ts", True), ("gpt2_ts", False)]
)
def test_exported_attention_lowers_and_matches(name: str, masked: bool) -> None:
    """The TorchScript BERT and GPT-2 exports' attention (IsNaN guard; GPT-2's causal mask)
    becomes Ascend C kernels instead of staying on the host, and the whole model matches
    onnxruntime, also with every token masked (attention_mask all zeros)."""
    path = str(DATA / f"{name}.onnx")
    low = _lower(path)
    fn = next(o for o in low.body.block.ops if isinstance(o, func.FuncOp))
    assert not [o for o in fn.body.block.ops if isinstance(o, nn.AttentionOp)]
    kernels = _attention_kernels(low)
    assert len(kernels) == 2
    assert all(
        next(o for o in k.walk() if isinstance(o, ac.AttentionOp)).nan_to_zero is not None
        for k in kernels
    )
    model = onnx.load(path)
    spec = json.loads((DATA / "manifest.json").read_text())[name]["inputs"]
    rng = np.random.default_rng(3)
    feeds: dict[str, np.ndarray] = {}
    for x in spec:
        lo, hi = (int(b) for b in x["range"])
        feeds[x["name"]] = rng.integers(lo, hi, x["shape"]).astype(x["dtype"])
    feeds["attention_mask"][..., :2] = 1  # a padding mask: some tokens always attended
    if masked:
        feeds["attention_mask"][...] = 0
    refs = _ort(path, feeds)
    got = run_ascendc_cpu(low, feeds)
    names = [o.name for o in model.graph.output]
    for n, r in zip(names, refs):
        assert 0.05 < float(np.abs(r).max()) < 10, n
        assert_close(got[n], r, f"{name} {n}")


def _attention_module(seq: int):
    from xdsl.parser import Parser

    from autofusion.pipeline import make_context

    t = f"tensor<1x12x{seq}x64xf32>"
    text = (
        f"func.func @main(%q: {t}, %k: {t}, %v: {t}, %m: tensor<1x1x1x{seq}xf32>) -> {t} {{\n"
        f"  %0 = nn.attention %q, %k, %v, %m {{scale = 0.125 : f64}} : ({t}, {t}, {t}, "
        f"tensor<1x1x1x{seq}xf32>) -> {t}\n"
        f"  func.return %0 : {t}\n}}\n"
    )
    module = Parser(make_context(), text).parse_module()
    LowerFusionToAscendC(cores=8).apply(make_context(), module)
    return module


def test_workspace_does_not_grow_with_the_sequence(tmp_path: Path) -> None:
    """BERT-base heads (12 x 64) at seq 128, 512 and 2048: the manifest's user workspace is one
    32 x 128 score block per core (8 cores: 128 KiB), the same at every length, where a stored
    [S, T] score matrix per core needs S * T * 4 bytes (1 MiB at seq 512)."""
    from autofusion.lowering.ascendc import emit_project

    sizes = {}
    for seq in (128, 512, 2048):
        out = tmp_path / str(seq)
        emit_project(_attention_module(seq), out)
        manifest = json.loads((out / "manifest.json").read_text())
        (k,) = manifest["kernels"]
        t = k["tiling"]
        assert k["workspace_bytes"] == t["workspaceElems"] * 4 == manifest["workspace_bytes_max"]
        assert t["wsPerCore"] == t["blockQ"] * t["blockT"]
        assert (t["blockQ"], t["blockT"]) == (32, 128)
        assert t["units"] == 12 * -(-seq // 32)  # (head, query block) units
        sizes[seq] = k["workspace_bytes"]
    assert sizes == {128: 131072, 512: 131072, 2048: 131072}
    assert sizes[512] < 512 * 512 * 4
