"""Each fusion pass preserves semantics (reference interpreter, seeded inputs) on zoo models,
and the fully fused models still match onnxruntime."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

import autofusion
from autofusion import testing, zoo
from autofusion.dialects.fusion import KernelOp
from autofusion.frontend.onnx_import import import_onnx
from autofusion.interpreter import run_module
from autofusion.passes import get_all_passes
from autofusion.pipeline import TENSOR_PASSES
from autofusion.policy.report import build_report

# The tensor-level pipeline up to and including fusion (no memory planning or tiling).
PIPELINE = tuple(name for name, group in TENSOR_PASSES if group in ("cleanup", "fusion"))
FUSING = {"fold-batchnorm", "merge-sibling-convs", "fuse-conv-bn-relu", "fuse", "fuse-conv-chain"}


def apply(module: ModuleOp, name: str, **options: object) -> None:
    cls = get_all_passes()[name]()
    cls(**options).apply(Context(), module)  # type: ignore[call-arg]
    module.verify()


def assert_close(got: Mapping[str, np.ndarray], ref: Mapping[str, np.ndarray], what: str) -> None:
    assert set(got) == set(ref), what
    for k, r in ref.items():
        testing.assert_close(got[k], r, f"{what}: output {k}")


def ort_outputs(model_name: str, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    m = zoo.get_model(model_name)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, dict(feeds))))


def signature(module: ModuleOp) -> tuple[int, ...]:
    ops = list(module.walk())
    return (len(ops), sum(isinstance(o, KernelOp) for o in ops), hash(tuple(o.name for o in ops)))


@pytest.mark.parametrize(
    "model", ["tiny_cnn", "tiny_bert", "mobilenet", "shufflenet", "inception", "zoo_cnn_opset9"]
)
@pytest.mark.parametrize("level", [1, 2])
def test_each_pass_preserves_semantics(model: str, level: int) -> None:
    feeds = zoo.sample_inputs(zoo.get_model(model), seed=3)
    module = import_onnx(zoo.get_model(model))
    prev = run_module(module, feeds)
    assert_close(prev, ort_outputs(model, feeds), f"{model}: imported IR vs onnxruntime")
    for name in PIPELINE:
        before = signature(module)
        apply(module, name, **({"aggressiveness": level} if name in FUSING else {}))
        if signature(module) == before:
            continue
        out = run_module(module, feeds)
        assert_close(out, prev, f"{model}: after {name} (aggressiveness {level})")
        prev = out
    assert_close(
        prev, ort_outputs(model, feeds), f"{model}: fused (aggressiveness {level}) vs onnxruntime"
    )
    assert build_report(module)["groups"], f"{model}: nothing was fused"
    dead = [o for o in module.walk() if o.name == "nn.constant" and not o.results[0].uses]
    assert not dead, (
        f"{model}: passes left {len(dead)} unused constants (the C backend rejects them)"
    )


@pytest.mark.parametrize(("model", "level"), [("vit_tiny", 2), ("swin_tiny", 3), ("resnet50", 1)])
def test_fused_model_matches_onnxruntime(model: str, level: int) -> None:
    feeds = zoo.sample_inputs(zoo.get_model(model), seed=5)
    module = import_onnx(zoo.get_model(model))
    for name in PIPELINE:
        apply(module, name, **({"aggressiveness": level} if name in FUSING else {}))
    report = build_report(module)
    assert report["kernels_after"] < report["kernels_before"]
    assert_close(run_module(module, feeds), ort_outputs(model, feeds), f"{model} fused")


@pytest.mark.slow
def test_bert_base_fused_matches_onnxruntime() -> None:
    feeds = zoo.sample_inputs(zoo.get_model("bert_base"), seed=1)
    module = import_onnx(zoo.get_model("bert_base"))
    for name in PIPELINE:
        apply(module, name, **({"aggressiveness": 2} if name in FUSING else {}))
    kinds = {op.name for op in module.walk()}
    assert {"nn.layer_norm", "nn.gelu", "nn.attention"} <= kinds
    assert_close(run_module(module, feeds), ort_outputs("bert_base", feeds), "bert_base fused")


def test_kernels_hold_only_nn_ops_and_keep_origins() -> None:
    """The C lowering compiles kernels op by op: only nn ops (and the yield) inside, and
    every kernel's origins are the union of its body's."""
    module = import_onnx(zoo.get_model("tiny_bert"))
    for name in PIPELINE:
        apply(module, name, **({"aggressiveness": 3} if name in FUSING else {}))
    kernels = [op for op in module.walk() if isinstance(op, KernelOp)]
    assert kernels
    for k in kernels:
        body = list(k.body.block.ops)
        assert all(o.name.startswith("nn.") for o in body[:-1]), k.pattern_name
        assert body[-1].name == "fusion.yield"
        inner: list[str] = []
        for o in body[:-1]:
            attr = o.attributes.get("onnx.origins")
            if attr is not None:
                inner += [s.data for s in attr.data]  # type: ignore[attr-defined]
        assert set(k.origin_names) == set(inner)
        assert k.origin_names


@pytest.mark.parametrize(
    ("name", "family", "op_name"),
    [
        ("recognize-layernorm", "layernorm", "nn.layer_norm"),
        ("recognize-gelu", "gelu", "nn.gelu"),
        ("recognize-attention", "attention", "nn.attention"),
    ],
)
def test_recognize_pass_obeys_its_pattern_switch(
    name: str, family: str, op_name: str, tmp_path: Path
) -> None:
    """tiny_bert holds each decomposed pattern: recognised by default, left alone when the
    config's ``patterns: {family: false}`` turns it off."""
    cfg = tmp_path / "off.json"
    cfg.write_text(json.dumps({"patterns": {family: False}}))
    for options, found in (({}, True), ({"config": str(cfg)}, False)):
        module = import_onnx(zoo.get_model("tiny_bert"))
        apply(module, "canonicalize-nn")
        apply(module, name, **options)
        assert any(o.name == op_name for o in module.walk()) == found, (name, options)


def _two_mask_attention() -> onnx.ModelProto:
    """Swin's shifted-window attention in small: q @ k^T * scale + position bias [H, S, S] +
    window mask [W, 1, S, S] (0 or -100) -> softmax -> @ v, over W windows and H heads."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    w, h, s, d = 3, 2, 5, 8
    bias = rng.uniform(-1.0, 1.0, (h, s, s)).astype(np.float32)
    win = np.where(rng.uniform(size=(w, 1, s, s)) < 0.3, -100.0, 0.0).astype(np.float32)
    win[..., 0] = 0.0  # every row keeps a key
    x4 = [w, h, s, d]
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("Mul", ["q", "scale"], ["qs"]),
        helper.make_node("MatMul", ["qs", "kt"], ["sc"]),
        helper.make_node("Add", ["sc", "bias"], ["sb"]),
        helper.make_node("Add", ["sb", "win"], ["sm"]),
        helper.make_node("Softmax", ["sm"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["o"]),
    ]
    graph = helper.make_graph(
        nodes,
        "two_masks",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, x4) for n in ("q", "k", "v")],
        [helper.make_tensor_value_info("o", TensorProto.FLOAT, x4)],
        [
            numpy_helper.from_array(np.array(d**-0.5, np.float32), "scale"),
            numpy_helper.from_array(bias, "bias"),
            numpy_helper.from_array(win, "win"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def one_attention_checked(
    model: onnx.ModelProto, feeds: Mapping[str, np.ndarray], what: str
) -> list[str]:
    """``model`` (one attention block, output ``o``) through the pipeline up to fusion: one
    nn.attention and no softmax left, the interpreter and the C build matching onnxruntime
    on ``feeds`` (outputs of ordinary size). Returns the op names left."""
    import autofusion

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = {"o": sess.run(None, dict(feeds))[0]}
    assert 0.1 < float(np.abs(ref["o"]).mean()) < 10.0
    module = import_onnx(model)
    for name in PIPELINE:
        apply(module, name)
    kinds = [op.name for op in module.walk()]
    assert kinds.count("nn.attention") == 1, kinds
    assert "nn.softmax" not in kinds, kinds
    assert_close(run_module(module, feeds), ref, f"{what}, interpreter")
    built = autofusion.compile(model, threads=1)
    try:
        assert_close(built.run(feeds), ref, f"{what}, C")
    finally:
        built.close()
    return kinds


def test_two_constant_masks_become_one_attention() -> None:
    """A position bias and a window mask in a row are folded into one constant mask: one
    nn.attention, no softmax left, and the interpreter and the C build match onnxruntime."""
    rng = np.random.default_rng(4)
    feeds = {n: rng.uniform(-2.0, 2.0, (3, 2, 5, 8)).astype(np.float32) for n in "qkv"}
    one_attention_checked(_two_mask_attention(), feeds, "two masks")


@pytest.mark.parametrize(
    ("x", "mid", "perm", "out", "fires"),
    [
        ((1, 2, 5, 4), (2, 5, 4), (0, 2, 1), (1, 2, 4, 5), True),  # dynamo K^T
        ((1, 1, 2, 5, 4), (2, 5, 4), (0, 2, 1), (1, 2, 4, 5), True),  # timm's squeezed K
        ((2, 3, 4), (6, 4), (1, 0), (4, 3, 2), True),
        ((2, 3, 4, 5), (6, 20), (1, 0), (4, 5, 2, 3), True),
        ((2, 3, 4, 5), (2, 12, 5), (2, 0, 1), (5, 2, 3, 4), True),
        ((2, 3, 4), (6, 4), (1, 0), (8, 3), False),  # no run of dims per moved dim
        ((2, 3, 4), (2, 12), (1, 0), (12, 2), True),  # no split: a 2-d transpose of a view
    ],
)
def test_transpose_through_reshapes_keeps_the_values(
    x: tuple[int, ...],
    mid: tuple[int, ...],
    perm: tuple[int, ...],
    out: tuple[int, ...],
    fires: bool,
) -> None:
    """canonicalize-nn's reshape-transpose-reshape rewrite, run by the interpreter before and
    after on seeded inputs: the same values, and one transpose and no trailing reshape where
    it fires."""
    h = onnx.helper
    f32 = onnx.TensorProto.FLOAT
    graph = h.make_graph(
        [
            h.make_node("Reshape", ["x", "m"], ["a"]),
            h.make_node("Transpose", ["a"], ["b"], perm=list(perm)),
            h.make_node("Reshape", ["b", "o"], ["y"]),
        ],
        "rtr",
        [h.make_tensor_value_info("x", f32, list(x))],
        [h.make_tensor_value_info("y", f32, list(out))],
        [
            onnx.numpy_helper.from_array(np.array(mid, np.int64), "m"),
            onnx.numpy_helper.from_array(np.array(out, np.int64), "o"),
        ],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    feeds = {"x": np.random.default_rng(2).uniform(-2, 2, x).astype(np.float32)}
    want = np.transpose(feeds["x"].reshape(mid), perm).reshape(out)
    module = import_onnx(model)
    apply(module, "canonicalize-nn")
    kinds = [op.name for op in module.walk()]
    last = [op for op in module.walk() if op.name.startswith("nn.")][-1].name
    assert (last == "nn.transpose") == fires, kinds
    assert kinds.count("nn.transpose") == 1, kinds
    testing.assert_close(run_module(module, feeds)["y"], want, f"{x} -> {out}")


def _dynamo_attention() -> onnx.ModelProto:
    """Scaled dot-product attention as torch's dynamo exporter writes it (torch 2.14,
    transformers' BertSelfAttention): sqrt(scale) on Q and on K^T, K^T as reshape [B*H, T,
    D] -> transpose [0, 2, 1] -> reshape [B, H, D, T], an additive mask, Softmax, then the
    IsNaN guard."""
    h = onnx.helper
    b, heads, t, d = 2, 3, 7, 8
    c = np.array((1.0 / np.sqrt(d)) ** 0.5, np.float32)
    nodes = [
        h.make_node("Mul", ["q", "c"], ["qs"]),
        h.make_node("Reshape", ["k", "s3"], ["k3"]),
        h.make_node("Transpose", ["k3"], ["k3t"], perm=[0, 2, 1]),
        h.make_node("Reshape", ["k3t", "s4"], ["kt"]),
        h.make_node("Mul", ["kt", "c"], ["kts"]),
        h.make_node("MatMul", ["qs", "kts"], ["s"]),
        h.make_node("Add", ["s", "mask"], ["sm"]),
        h.make_node("Softmax", ["sm"], ["p"], axis=-1),
        h.make_node("IsNaN", ["p"], ["nan"]),
        h.make_node("Where", ["nan", "zero", "p"], ["pg"]),
        h.make_node("MatMul", ["pg", "v"], ["o"]),
    ]
    x4 = [b, heads, t, d]
    f32 = onnx.TensorProto.FLOAT
    graph = h.make_graph(
        nodes,
        "dynamo_attention",
        [h.make_tensor_value_info(n, f32, x4) for n in ("q", "k", "v")]
        + [h.make_tensor_value_info("mask", f32, [b, 1, t, t])],
        [h.make_tensor_value_info("o", f32, x4)],
        [
            onnx.numpy_helper.from_array(c, "c"),
            onnx.numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
            onnx.numpy_helper.from_array(np.array([b * heads, t, d], np.int64), "s3"),
            onnx.numpy_helper.from_array(np.array([b, heads, d, t], np.int64), "s4"),
        ],
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 20)])


def test_dynamo_exporters_attention_reads_k_without_a_transpose() -> None:
    """The dynamo form becomes one nn.attention reading K as it is: canonicalize-nn turns
    the reshape-transpose-reshape into transpose(k, [0, 1, 3, 2]), which recognize-attention
    takes as K^T (no nn.transpose left; before, two: the exporter's and one put back to
    undo it). The interpreter and the C build match onnxruntime."""
    rng = np.random.default_rng(5)
    feeds = {n: rng.uniform(-2.0, 2.0, (2, 3, 7, 8)).astype(np.float32) for n in "qkv"}
    feeds["mask"] = np.where(rng.random((2, 1, 7, 7)) < 0.3, -1e4, 0.0).astype(np.float32)
    kinds = one_attention_checked(_dynamo_attention(), feeds, "dynamo attention")
    assert "nn.transpose" not in kinds, kinds


def test_batchnorm_without_producer_becomes_scale_shift() -> None:
    """DenseNet's pre-activation (torchvision export): Concat -> BN -> Relu -> 1x1 Conv, and a
    BatchNorm1d after Flatten. No BN here has a Conv to fold into; each becomes x*s + shift,
    in one elementwise kernel with its Relu (``a``), alone (``b``, no Relu), in a kernel that
    still yields the BN value when that is also a graph output (``c``), or alone after the
    Flatten. 20 channels (not a multiple of 16); one compile; the C matches onnxruntime."""
    import autofusion

    rng = np.random.default_rng(3)
    h = onnx.helper
    inits: list[onnx.TensorProto] = []

    def const(name: str, a: np.ndarray) -> str:
        inits.append(onnx.numpy_helper.from_array(a.astype(np.float32), name))
        return name

    def bn(name: str, x: str, c: int) -> onnx.NodeProto:
        stats = [rng.uniform(0.7, 1.3, c), rng.uniform(-0.2, 0.2, c),
                 rng.uniform(-0.5, 0.5, c), rng.uniform(0.5, 1.5, c)]  # fmt: skip
        names = [const(f"{name}.{k}", a) for k, a in zip(("scale", "bias", "mean", "var"), stats)]
        return h.make_node("BatchNormalization", [x, *names], [name], name=name)

    nodes = [h.make_node("Concat", ["x", "y"], ["cat"], name="cat", axis=1)]
    convs: list[str] = []
    for branch in "abc":
        nodes.append(bn(f"norm_{branch}", "cat", 20))
        act = f"norm_{branch}"
        if branch != "b":
            nodes.append(h.make_node("Relu", [act], [f"relu_{branch}"], name=f"relu_{branch}"))
            act = f"relu_{branch}"
        w = const(f"w_{branch}", rng.standard_normal((8, 20, 1, 1)) * 0.3)
        nodes.append(h.make_node("Conv", [act, w], [f"conv_{branch}"], name=f"conv_{branch}"))
        convs.append(f"conv_{branch}")
    nodes += [
        h.make_node("Sum", convs, ["sum"], name="sum"),
        h.make_node("GlobalAveragePool", ["sum"], ["pool"], name="pool"),
        h.make_node("Flatten", ["pool"], ["flat"], name="flat"),
        bn("norm_d", "flat", 8),
    ]
    f32 = onnx.TensorProto.FLOAT
    ins = (("x", 9), ("y", 11))
    outputs = ["norm_d", "norm_c"]
    graph = h.make_graph(
        nodes, "densenet_preact",
        [h.make_tensor_value_info(n, f32, [1, c, 6, 6]) for n, c in ins],
        [h.make_tensor_value_info(n, f32, None) for n in outputs], inits,
    )  # fmt: skip
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    feeds = {n: rng.standard_normal((1, c, 6, 6)).astype(np.float32) for n, c in ins}
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = dict(zip(outputs, sess.run(None, feeds)))
    assert_close(run_module(import_onnx(model), feeds), ref, "BN without producer, interpreter")
    compiled = autofusion.compile(model, threads=1)
    assert_close(compiled.run(feeds), ref, "BN without producer, generated C")
    groups = {tuple(g["origins"]): g["pattern"] for g in compiled.report["groups"]}
    assert {k: v for k, v in groups.items() if k[0].startswith("norm")} == {
        ("norm_a", "relu_a"): "ew_mul_add_relu",
        ("norm_b",): "ew_mul_add",
        ("norm_c", "relu_c"): "ew_mul_add_relu",
        ("norm_d",): "ew_mul_add",
    }, groups
    assert not any("batch_norm" in k for k in compiled.report["kernel_work"])


def test_swin_shifted_window_mask_through_reshape_is_attention() -> None:
    """torchvision swin_t's shifted-window block (TorchScript export): q scaled, scores plus
    the position bias, then Reshape [nW,H,N,N] -> [1,nW,H,N,N], the window mask added,
    Reshape back, Softmax, MatMul. The mask moves through the reshapes and the block becomes
    one nn.attention; the generated C matches onnxruntime."""
    import autofusion

    rng = np.random.default_rng(4)
    nw, heads, n, d = 4, 2, 9, 8
    h = onnx.helper
    f32 = onnx.TensorProto.FLOAT
    mask = np.where(rng.random((1, nw, 1, n, n)) < 0.3, -100.0, 0.0)
    consts = {
        "scale": np.array(d**-0.5),
        "bias": rng.uniform(-0.5, 0.5, (heads, n, n)),
        "mask": mask,
        "s5": np.array([1, nw, heads, n, n], np.int64),
        "s4": np.array([nw, heads, n, n], np.int64),
    }
    inits = [
        onnx.numpy_helper.from_array(v if v.dtype == np.int64 else v.astype(np.float32), k)
        for k, v in consts.items()
    ]
    nodes = [
        h.make_node("Mul", ["q", "scale"], ["qs"], name="attn/Mul"),
        h.make_node("Transpose", ["k"], ["kt"], name="attn/Transpose", perm=[0, 1, 3, 2]),
        h.make_node("MatMul", ["qs", "kt"], ["s"], name="attn/MatMul"),
        h.make_node("Add", ["s", "bias"], ["sb"], name="attn/Add"),
        h.make_node("Reshape", ["sb", "s5"], ["r5"], name="attn/Reshape_16"),
        h.make_node("Add", ["r5", "mask"], ["m5"], name="attn/Add_11"),
        h.make_node("Reshape", ["m5", "s4"], ["r4"], name="attn/Reshape_17"),
        h.make_node("Softmax", ["r4"], ["p"], name="attn/Softmax", axis=-1),
        h.make_node("MatMul", ["p", "v"], ["o"], name="attn/MatMul_2"),
    ]
    shape = [nw, heads, n, d]
    graph = h.make_graph(
        nodes, "swin_shifted",
        [h.make_tensor_value_info(x, f32, shape) for x in ("q", "k", "v")],
        [h.make_tensor_value_info("o", f32, shape)], inits,
    )  # fmt: skip
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    feeds = {x: rng.standard_normal(shape).astype(np.float32) for x in ("q", "k", "v")}
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = {"o": sess.run(None, feeds)[0]}
    compiled = autofusion.compile(model, threads=1)
    assert_close(compiled.run(feeds), ref, "swin shifted-window attention, generated C")
    kernels = list(compiled.report["kernel_work"])
    assert any("attention" in k for k in kernels), kernels
    assert not any("softmax" in k or "reshape" in k for k in kernels), kernels


def _per_layer_mask(layers: int) -> onnx.ModelProto:
    """transformers' BERT mask as each layer writes it again: Where(mask, 0, -inf) with that
    layer's own two constants, added to that layer's scores, then Softmax."""
    h = onnx.helper
    f32 = onnx.TensorProto.FLOAT
    nodes, inits, outs = [], [], []
    for i in range(layers):
        inits += [
            onnx.numpy_helper.from_array(np.array([0.0], np.float32), f"zero{i}"),
            onnx.numpy_helper.from_array(np.array([-np.inf], np.float32), f"ninf{i}"),
        ]
        nodes += [
            h.make_node("Where", ["mask", f"zero{i}", f"ninf{i}"], [f"w{i}"]),
            h.make_node("Add", [f"s{i}", f"w{i}"], [f"a{i}"]),
            h.make_node("Softmax", [f"a{i}"], [f"p{i}"], axis=-1),
        ]
        outs.append(h.make_tensor_value_info(f"p{i}", f32, [2, 6, 6]))
    graph = h.make_graph(
        nodes,
        "per_layer_mask",
        [h.make_tensor_value_info("mask", onnx.TensorProto.BOOL, [1, 6, 6])]
        + [h.make_tensor_value_info(f"s{i}", f32, [2, 6, 6]) for i in range(layers)],
        outs,
        inits,
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])


def test_common_subexpressions_become_one_op() -> None:
    """canonicalize-nn merges the layers' identical Wheres (their constants compared by
    value) into one that carries every layer's origin; interpreted before and after on seeded
    inputs the values are the same, and the compiled C matches onnxruntime."""
    layers = 3
    model = _per_layer_mask(layers)
    rng = np.random.default_rng(5)
    feeds: dict[str, np.ndarray] = {"mask": rng.uniform(size=(1, 6, 6)) < 0.7}
    feeds["mask"][..., 0] = True  # no row wholly masked (a softmax of all -inf is NaN)
    for i in range(layers):
        feeds[f"s{i}"] = rng.uniform(-2, 2, (2, 6, 6)).astype(np.float32)
    module = import_onnx(model)
    before = run_module(module, feeds)
    apply(module, "canonicalize-nn")
    wheres = [op for op in module.walk() if op.name == "nn.where"]
    assert len(wheres) == 1, [op.name for op in module.walk()]
    origins = [s.data for s in wheres[0].attributes["onnx.origins"].data]  # type: ignore[attr-defined]
    assert len(origins) == layers, origins
    assert_close(run_module(module, feeds), before, "after canonicalize-nn")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ref = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    got = autofusion.compile(model).run(feeds)
    assert_close(got, ref, "compiled C")
    assert float(np.std(ref["p0"])) > 0.1  # not a constant output


def test_common_subexpressions_skip_an_unhashable_attribute() -> None:
    """An op carrying an attribute that cannot be hashed is not a CSE candidate: two such
    copies of a softmax pass through canonicalize-nn (which then erases them, unread), where
    hashing their key raised TypeError out of the pass (checked without the guard)."""
    from dataclasses import dataclass as _dataclass

    from xdsl.ir import Data
    from xdsl.irdl import irdl_attr_definition

    @irdl_attr_definition
    @_dataclass(frozen=True, init=False)
    class Unhashable(Data[list[int]]):  # pyright: ignore[reportUnusedClass]
        name = "test.unhashable"

        @classmethod
        def parse_parameter(cls, parser: object) -> list[int]:  # pragma: no cover
            raise NotImplementedError

        def print_parameter(self, printer: object) -> None:  # pragma: no cover
            raise NotImplementedError

    model = _per_layer_mask(1)
    module = import_onnx(model)
    soft = next(op for op in module.walk() if op.name == "nn.softmax")
    twins = [soft.clone() for _ in range(2)]
    for t in twins:
        t.attributes["test.tag"] = Unhashable([1])
        soft.parent.insert_op_after(t, soft)  # type: ignore[union-attr]
    apply(module, "canonicalize-nn")  # no TypeError; the clones are dead and go
    assert sum(op.name == "nn.softmax" for op in module.walk()) == 1
