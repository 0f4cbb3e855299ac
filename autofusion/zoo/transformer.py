"""Transformer zoo models: BERT encoders as the torch exporter writes them at opset 17
(decomposed LayerNorm, Erf-form GELU, run-time attention mask, Shape->Gather->Unsqueeze->
Concat->Reshape head split), a ViT with the tanh-form GELU, and a Swin-like model with window
attention, cyclic shift, relative position bias and the single LayerNormalization op.

Linear weights have std 1/sqrt(fan_in) and LayerNorm scales are near 1, so activations and
attention logits stay O(1).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import onnx

from autofusion.zoo.graph import INT64, GraphBuilder, dotted


@dataclass(frozen=True)
class BertConfig:
    layers: int
    hidden: int
    heads: int
    intermediate: int
    seq: int
    vocab: int
    seed: int
    pooler: bool = True
    dynamic_seq: bool = False


BERT_CONFIGS = {
    "tiny_bert": BertConfig(2, 64, 4, 256, 16, 100, seed=11),
    "bert_base": BertConfig(12, 768, 12, 3072, 128, 30522, seed=12),
    "bert_large": BertConfig(24, 1024, 16, 4096, 128, 30522, seed=13),
}


def _split_heads_dynamic(b: GraphBuilder, x: str, heads: int, d: int, scope: str) -> str:
    """[B, S, H*D] -> [B, S, H, D] with the target shape computed at run time from Shape(x),
    the way the exporter writes ``x.view(x.size(0), x.size(1), heads, d)``."""
    shape = b.node("Shape", [x], scope)
    dims = []
    for i in (0, 1):
        g = b.node("Gather", [shape, b.constant(scope, np.array(i, np.int64))], scope, axis=0)
        dims.append(b.node("Unsqueeze", [g, b.constant(scope, np.array([0], np.int64))], scope))
    rest = [b.constant(scope, np.array([v], np.int64)) for v in (heads, d)]
    target = b.node("Concat", [*dims, *rest], scope, axis=0)
    return b.node("Reshape", [x, target], scope)


def _bert_layer(b: GraphBuilder, h: str, mask: str, cfg: BertConfig, i: int) -> str:
    hid, heads = cfg.hidden, cfg.heads
    d = hid // heads
    sc = f"/encoder/layer.{i}/attention/self"
    q = _split_heads_dynamic(b, b.linear(h, hid, hid, f"{sc}/query"), heads, d, sc)
    k = _split_heads_dynamic(b, b.linear(h, hid, hid, f"{sc}/key"), heads, d, sc)
    v = _split_heads_dynamic(b, b.linear(h, hid, hid, f"{sc}/value"), heads, d, sc)
    q = b.transpose(q, [0, 2, 1, 3], sc)
    k = b.transpose(k, [0, 2, 3, 1], sc)
    v = b.transpose(v, [0, 2, 1, 3], sc)
    s = b.node("MatMul", [q, k], sc)
    s = b.node("Div", [s, b.constant(sc, np.array(math.sqrt(d), np.float32))], sc)
    s = b.node("Add", [s, mask], sc)
    p = b.node("Softmax", [s], sc, axis=-1)
    ctx = b.node("MatMul", [p, v], sc)
    ctx = b.transpose(ctx, [0, 2, 1, 3], sc)
    ctx = b.reshape(ctx, [1, -1 if cfg.dynamic_seq else cfg.seq, hid], sc)
    so = f"/encoder/layer.{i}/attention/output"
    a = b.node("Add", [b.linear(ctx, hid, hid, f"{so}/dense"), h], so)
    a = b.layer_norm_decomposed(a, hid, f"{so}/LayerNorm")
    f = b.linear(a, hid, cfg.intermediate, f"/encoder/layer.{i}/intermediate/dense")
    f = b.gelu_erf(f, f"/encoder/layer.{i}/intermediate/intermediate_act_fn")
    o = f"/encoder/layer.{i}/output"
    f = b.node("Add", [b.linear(f, cfg.intermediate, hid, f"{o}/dense"), a], o)
    return b.layer_norm_decomposed(f, hid, f"{o}/LayerNorm")


MAX_POSITIONS = 512


def bert(name: str, seq: int | None = None, dynamic_seq: bool = False) -> onnx.ModelProto:
    """A Hugging Face ``BertModel`` encoder as exported by ``torch.onnx.export`` at opset 17.

    Inputs ``input_ids`` and ``attention_mask`` (int64 [1, seq]); outputs
    ``last_hidden_state`` [1, seq, hidden] and ``pooler_output`` [1, hidden] (Gather of the
    first token, Gemm, Tanh). Embeddings: word Gather on the ids, position Gather on a
    constant range, token-type Gather on constant zeros, summed, decomposed LayerNorm. The
    additive mask is computed at run time: Unsqueeze, Cast to float, 1 - m, times -10000.

    ``seq`` overrides the config's length (1..512); ``dynamic_seq`` declares the inputs
    ``[1, "seq"]`` as a ``dynamic_axes`` export does, with position ids sliced from a
    [1, 512] constant and token types from ``ConstantOfShape(Shape(input_ids))`` (the same
    weights, so it matches the static model at every length; used by
    ``benchmarks/dynamic_seq.py``).
    """
    cfg = BERT_CONFIGS[name]
    cfg = dataclasses.replace(cfg, seq=seq or cfg.seq, dynamic_seq=dynamic_seq)
    if not 1 <= cfg.seq <= MAX_POSITIONS:
        raise ValueError(f"bert: seq must be 1..{MAX_POSITIONS}, got {cfg.seq}")
    b = GraphBuilder(name, seed=cfg.seed)
    sdim: int | str = "seq" if dynamic_seq else cfg.seq
    ids = b.input("input_ids", [1, sdim], INT64)
    am = b.input("attention_mask", [1, sdim], INT64)
    b.metadata["autofusion.input_range.input_ids"] = f"0,{cfg.vocab}"
    b.metadata["autofusion.input_kind.attention_mask"] = "attention_mask"
    hid = cfg.hidden
    e = "/embeddings"
    word = b.randn("embeddings.word_embeddings.weight", [cfg.vocab, hid], 1.0)
    pos = b.randn("embeddings.position_embeddings.weight", [MAX_POSITIONS, hid], 0.5)
    tok = b.randn("embeddings.token_type_embeddings.weight", [2, hid], 0.5)
    we = b.node("Gather", [word, ids], f"{e}/word_embeddings", axis=0)
    if dynamic_seq:
        shape = b.node("Shape", [ids], e)
        end = b.node("Slice", [shape, b.constant(e, np.array([1], np.int64)),
                               b.constant(e, np.array([2], np.int64))], e)  # fmt: skip
        all_pos = b.constant(e, np.arange(MAX_POSITIONS, dtype=np.int64)[None])
        pos_ids = b.node("Slice", [all_pos, b.constant(e, np.array([0], np.int64)), end,
                                   b.constant(e, np.array([1], np.int64))], e)  # fmt: skip
        zero = onnx.helper.make_tensor("value", onnx.TensorProto.INT64, [1], [0])
        tok_ids = b.node("ConstantOfShape", [shape], e, value=zero)
    pe = b.node(
        "Gather",
        [pos, pos_ids if dynamic_seq else b.constant(e, np.arange(cfg.seq, dtype=np.int64)[None])],
        f"{e}/position_embeddings",
        axis=0,
    )
    te = b.node(
        "Gather",
        [tok, tok_ids if dynamic_seq else b.constant(e, np.zeros((1, cfg.seq), np.int64))],
        f"{e}/token_type_embeddings",
        axis=0,
    )
    h = b.node("Add", [b.node("Add", [we, te], e), pe], e)
    h = b.layer_norm_decomposed(h, hid, f"{e}/LayerNorm")
    m = b.node("Unsqueeze", [am, b.constant("", np.array([1, 2], np.int64))], "")
    m = b.node("Cast", [m], "", to=onnx.TensorProto.FLOAT)
    m = b.node("Sub", [b.constant("", np.array(1.0, np.float32)), m], "")
    mask = b.node("Mul", [m, b.constant("", np.array(-10000.0, np.float32))], "")
    for i in range(cfg.layers):
        h = _bert_layer(b, h, mask, cfg, i)
    h = b.output(h, "last_hidden_state", [1, sdim, hid])
    if cfg.pooler:
        first = b.node(
            "Gather", [h, b.constant("/pooler", np.array(0, np.int64))], "/pooler", axis=1
        )
        pooled = b.node("Tanh", [b.gemm(first, hid, hid, "/pooler/dense")], "/pooler/activation")
        b.output(pooled, "pooler_output", [1, hid])
    doc = f"{bert.__doc__}\nConfig: {cfg}"
    return b.model(doc)


def tiny_bert() -> onnx.ModelProto:
    """BERT encoder: 2 layers, hidden 64, 4 heads, intermediate 256, seq 16, vocab 100."""
    return bert("tiny_bert")


def bert_base() -> onnx.ModelProto:
    """BERT-base encoder: 12 layers, hidden 768, 12 heads, intermediate 3072, seq 128,
    vocab 30522 (110 M parameters)."""
    return bert("bert_base")


def bert_large() -> onnx.ModelProto:
    """BERT-large encoder: 24 layers, hidden 1024, 16 heads, intermediate 4096, seq 128,
    vocab 30522 (335 M parameters, 1.3 GB of float32 weights)."""
    return bert("bert_large")


# ---- ViT ---------------------------------------------------------------------------------


def _attention_qkv(
    b: GraphBuilder,
    x: str,
    tokens: int,
    dim: int,
    heads: int,
    sc: str,
    windows: int = 1,
    bias: str | None = None,
    mask: str | None = None,
) -> str:
    """timm-style attention over ``windows`` independent groups of ``tokens`` tokens:
    one qkv Linear, Reshape [W, N, 3, H, D], Transpose, Gather q/k/v, scaled q @ k^T
    (+ relative position bias, + shift mask), Softmax, @ v, merge heads, proj Linear."""
    d = dim // heads
    qkv = b.linear(x, dim, 3 * dim, f"{sc}/qkv")
    qkv = b.reshape(qkv, [windows, tokens, 3, heads, d], sc)
    qkv = b.transpose(qkv, [2, 0, 3, 1, 4], sc)
    q, k, v = (
        b.node("Gather", [qkv, b.constant(sc, np.array(i, np.int64))], sc, axis=0) for i in range(3)
    )
    q = b.node("Mul", [q, b.scalar(d**-0.5)], sc)
    s = b.node("MatMul", [q, b.transpose(k, [0, 1, 3, 2], sc)], sc)
    if bias is not None:
        s = b.node("Add", [s, bias], sc)
    if mask is not None:
        s = b.node("Add", [s, mask], sc)
    p = b.node("Softmax", [s], sc, axis=-1)
    o = b.transpose(b.node("MatMul", [p, v], sc), [0, 2, 1, 3], sc)
    o = b.reshape(o, [windows, tokens, dim], sc)
    return b.linear(o, dim, dim, f"{sc}/proj")


def vit_tiny() -> onnx.ModelProto:
    """ViT-Tiny/16 (timm ``vit_tiny_patch16_224``): patch-embedding Conv 16x16 stride 16,
    class token Concat, position embedding Add, 12 pre-LN blocks (LayerNormalization op,
    3 heads, dim 192, MLP 768 with the tanh-form GELU), class-token Gather, Gemm head.
    ``input`` [1,3,224,224] -> ``logits`` [1,1000]; 5.7 M parameters."""
    dim, heads, layers, n = 192, 3, 12, 197
    b = GraphBuilder("vit_tiny", seed=21)
    x = b.input("input", [1, 3, 224, 224])
    y = b.conv(x, 3, dim, 16, "/patch_embed/proj", stride=16, pad=0, bias=True)
    y = b.transpose(b.reshape(y, [1, dim, 196], "/patch_embed"), [0, 2, 1], "/patch_embed")
    cls = b.randn("cls_token", [1, 1, dim], 0.5)
    y = b.node("Concat", [cls, y], "", axis=1)
    y = b.node("Add", [y, b.randn("pos_embed", [1, n, dim], 0.5)], "")
    for i in range(layers):
        sc = f"/blocks/blocks.{i}"
        a = _attention_qkv(b, b.layer_norm(y, dim, f"{sc}/norm1"), n, dim, heads, f"{sc}/attn")
        y = b.node("Add", [y, a], sc)
        f = b.linear(b.layer_norm(y, dim, f"{sc}/norm2"), dim, 4 * dim, f"{sc}/mlp/fc1")
        f = b.linear(b.gelu_tanh(f, f"{sc}/mlp/act"), 4 * dim, dim, f"{sc}/mlp/fc2")
        y = b.node("Add", [y, f], sc)
    y = b.layer_norm(y, dim, "/norm")
    y = b.node("Gather", [y, b.constant("", np.array(0, np.int64))], "", axis=1)
    b.output(b.gemm(y, dim, 1000, "/head"), "logits", [1, 1000])
    return b.model(vit_tiny.__doc__ or "")


# ---- Swin ----------------------------------------------------------------------------------

SWIN_WINDOW = 7
SWIN_DEPTHS = (2, 2, 2, 2)
SWIN_HEADS = (3, 6, 12, 24)
SWIN_DIM = 96


def _roll(b: GraphBuilder, x: str, shift: int, size: int, sc: str) -> str:
    """torch.roll(x, (shift, shift), (1, 2)) on [1, H, W, C] as the exporter writes it:
    Slice + Concat along each axis."""
    s = shift % size
    d = dotted(sc)
    for axis in (1, 2):
        tail = b.node(
            "Slice",
            [
                x,
                b.ints(f"{d}.tail{axis}.starts", [size - s]),
                b.ints(f"{d}.tail{axis}.ends", [size]),
                b.ints(f"{d}.tail{axis}.axes", [axis]),
            ],
            sc,
        )
        head = b.node(
            "Slice",
            [
                x,
                b.ints(f"{d}.head{axis}.starts", [0]),
                b.ints(f"{d}.head{axis}.ends", [size - s]),
                b.ints(f"{d}.head{axis}.axes", [axis]),
            ],
            sc,
        )
        x = b.node("Concat", [tail, head], sc, axis=axis)
    return x


def _relative_position_bias(b: GraphBuilder, heads: int, name: str) -> str:
    """The [heads, N, N] bias gathered from the learned (2w-1)^2 table by the fixed relative
    position index; exporters fold this to a constant."""
    w = SWIN_WINDOW
    table = b.rng.standard_normal(((2 * w - 1) ** 2, heads), dtype=np.float32)
    coords = np.stack(np.meshgrid(np.arange(w), np.arange(w), indexing="ij")).reshape(2, -1)
    rel = (coords[:, :, None] - coords[:, None, :]).transpose(1, 2, 0) + (w - 1)
    index = rel[..., 0] * (2 * w - 1) + rel[..., 1]
    bias = table[index.reshape(-1)].reshape(w * w, w * w, heads).transpose(2, 0, 1)
    return b.param(name, np.ascontiguousarray(bias)[None])


def _shift_mask(res: int, shift: int) -> np.ndarray:
    """Swin's additive mask [nW, 1, N, N] (-100 between tokens from different regions)."""
    w = SWIN_WINDOW
    img = np.zeros((res, res), np.float32)
    cnt = 0
    for hs in (slice(0, -w), slice(-w, -shift), slice(-shift, None)):
        for ws in (slice(0, -w), slice(-w, -shift), slice(-shift, None)):
            img[hs, ws] = cnt
            cnt += 1
    win = img.reshape(res // w, w, res // w, w).transpose(0, 2, 1, 3).reshape(-1, w * w)
    diff = win[:, None, :] - win[:, :, None]
    return np.where(diff != 0, -100.0, 0.0).astype(np.float32)[:, None]


def _swin_block(
    b: GraphBuilder, x: str, res: int, dim: int, heads: int, shift: int, sc: str
) -> str:
    w = SWIN_WINDOW
    nw = (res // w) ** 2
    h = b.reshape(b.layer_norm(x, dim, f"{sc}/norm1"), [1, res, res, dim], sc)
    if shift:
        h = _roll(b, h, -shift, res, f"{sc}/roll")
    h = b.reshape(h, [1, res // w, w, res // w, w, dim], sc)
    h = b.reshape(b.transpose(h, [0, 1, 3, 2, 4, 5], sc), [nw, w * w, dim], sc)
    bias = _relative_position_bias(b, heads, f"{dotted(sc)}.attn.relative_position_bias")
    mask = b.param(f"{dotted(sc)}.attn_mask", _shift_mask(res, shift)) if shift else None
    h = _attention_qkv(b, h, w * w, dim, heads, f"{sc}/attn", windows=nw, bias=bias, mask=mask)
    h = b.reshape(h, [1, res // w, res // w, w, w, dim], sc)
    h = b.transpose(h, [0, 1, 3, 2, 4, 5], sc)
    h = b.reshape(h, [1, res, res, dim], sc)
    if shift:
        h = _roll(b, h, shift, res, f"{sc}/roll_back")
    x = b.node("Add", [x, b.reshape(h, [1, res * res, dim], sc)], sc)
    f = b.linear(b.layer_norm(x, dim, f"{sc}/norm2"), dim, 4 * dim, f"{sc}/mlp/fc1")
    f = b.linear(b.gelu_erf(f, f"{sc}/mlp/act"), 4 * dim, dim, f"{sc}/mlp/fc2")
    return b.node("Add", [x, f], sc)


def _patch_merging(b: GraphBuilder, x: str, res: int, dim: int, sc: str) -> str:
    """[1, H*W, C] -> [1, H/2*W/2, 2C]: four strided Slices, Concat, LayerNorm, Linear."""
    g = b.reshape(x, [1, res, res, dim], sc)
    parts = []
    for r0, c0 in ((0, 0), (1, 0), (0, 1), (1, 1)):
        parts.append(
            b.node(
                "Slice",
                [
                    g,
                    b.ints(f"{dotted(sc)}.s{r0}{c0}", [r0, c0]),
                    b.ints(f"{dotted(sc)}.e{r0}{c0}", [res, res]),
                    b.ints(f"{dotted(sc)}.a{r0}{c0}", [1, 2]),
                    b.ints(f"{dotted(sc)}.t{r0}{c0}", [2, 2]),
                ],
                sc,
            )
        )
    y = b.node("Concat", parts, sc, axis=-1)
    y = b.reshape(y, [1, (res // 2) ** 2, 4 * dim], sc)
    y = b.layer_norm(y, 4 * dim, f"{sc}/norm")
    return b.linear(y, 4 * dim, 2 * dim, f"{sc}/reduction", bias=False)


def swin_tiny() -> onnx.ModelProto:
    """Swin-T-like (torchvision ``swin_t`` layout) with reduced depths (2, 2, 2, 2) instead of
    (2, 2, 6, 2): patch embedding Conv 4x4 stride 4 + LayerNorm, window attention (window 7)
    with Reshape/Transpose partition and reverse, relative position bias constant added before
    Softmax, cyclic shift (every second block, via Slice + Concat) with its mask, Erf-GELU MLP,
    LayerNormalization ops, patch merging by strided Slice/Concat + Linear; dims 96..768,
    heads (3, 6, 12, 24). ``input`` [1,3,224,224] -> ``logits`` [1,1000]."""
    b = GraphBuilder("swin_tiny", seed=31)
    x = b.input("input", [1, 3, 224, 224])
    dim, res = SWIN_DIM, 56
    y = b.conv(x, 3, dim, 4, "/features/0/0", stride=4, pad=0, bias=True)
    y = b.transpose(b.reshape(y, [1, dim, res * res], "/features/0"), [0, 2, 1], "/features/0")
    y = b.layer_norm(y, dim, "/features/0/2")
    for stage, (depth, heads) in enumerate(zip(SWIN_DEPTHS, SWIN_HEADS)):
        for i in range(depth):
            shift = SWIN_WINDOW // 2 if i % 2 == 1 and res > SWIN_WINDOW else 0
            y = _swin_block(b, y, res, dim, heads, shift, f"/features/{2 * stage + 1}/{i}")
        if stage < len(SWIN_DEPTHS) - 1:
            y = _patch_merging(b, y, res, dim, f"/features/{2 * stage + 2}")
            dim, res = dim * 2, res // 2
    y = b.layer_norm(y, dim, "/norm")
    y = b.node("ReduceMean", [y], "/avgpool", axes=[1], keepdims=0)
    b.output(b.gemm(y, dim, 1000, "/head"), "logits", [1, 1000])
    return b.model(swin_tiny.__doc__ or "")
