"""Export small PyTorch models with both torch.onnx exporters, as autofusion test fixtures.

Needs torch (CPU build), transformers, onnx, onnxscript and onnxruntime. The project venv
does not have them and the tests never run this script: they only read its output,
committed under ``test/python/data/exported/`` and checked by
``test/python/test_exported_models.py``. To regenerate (in a separate venv):

    python3 -m venv /work/torchvenv
    /work/torchvenv/bin/pip install torch==2.13.0        # the CPU wheel on local disk
    /work/torchvenv/bin/pip install transformers onnx onnxscript onnxruntime numpy
    /work/torchvenv/bin/pip install -e .
    HF_HUB_OFFLINE=1 /work/torchvenv/bin/python benchmarks/export_torch_models.py \\
        --out test/python/data/exported [--models resnet,bert] [--check]

Models (random init, seeded; transformers models are built from configs, nothing is
downloaded): ``resnet`` (ResNet-style basic blocks: Conv/BatchNorm/ReLU, residual Add,
MaxPool, AdaptiveAvgPool, Linear), ``mobilenet`` (MobileNetV2-style inverted residuals with
depthwise convolutions and ReLU6), ``bert`` (BertModel, int64 ids and a run-time attention
mask), ``gpt2`` (GPT2Model, causal mask), ``vit`` (ViTModel, patch-embedding Conv),
``lstm`` (nn.LSTM: 2 layers, bidirectional, batch_first, Linear head), ``gru`` (nn.GRU:
2 layers, Linear head on the last state),
``unet`` (a small U-Net: MaxPool down, ConvTranspose2d up, skip concats, BatchNorm+ReLU;
``ts`` and ``tsbn`` only: ``--models unet --exporters ts,tsbn``),
``roberta`` (RobertaModel: position ids from CumSum over the non-padding ids, int64 ids and
attention mask; ``--exporters ts,dynamo``), ``deeplab`` (DeepLabV3-style: strided and
dilated conv-bn-relu backbone, ASPP with dilated convs and a global-pool branch, bilinear
Resize to the input size; ``--exporters ts,dynamo``), ``lraspp`` (LRASPP-style:
MobileNetV3-ish Hardswish backbone with squeeze-excite Hardsigmoid gating, the LRASPP head,
bilinear Resize; ``--exporters ts,dynamo``), ``yolo`` (YOLOv8-style detector: Conv-BN-SiLU,
C2f blocks (Split, bottlenecks, Concat), SPPF (three chained MaxPool k5), a neck with nearest
Upsample x2 and Concat, a two-scale head with the DFL (Softmax over 8 bins and a fixed 1x1
Conv of arange weights) and the anchor/stride box decode computed in forward; output
[1, 4 + classes, anchors]; ``--exporters ts,dynamo``).

Each model is written twice: ``NAME_ts.onnx`` from the TorchScript exporter
(``dynamo=False``, opset 17) and ``NAME_dynamo.onnx`` (+ ``NAME_dynamo.onnx.data``, external
weights) from the dynamo exporter (``dynamo=True``, opset 18). Batch 1, fixed sequence length,
no dynamic axes; the dynamo files lose only their per-node stack-trace metadata. Variants:
``NAME_tsbn.onnx`` (CNNs; TorchScript without constant folding, so BatchNormalization
stays), ``bert_ts14.onnx`` (opset 14: LayerNorm decomposed), ``NAME_tsdyn.onnx`` and
``NAME_dynamodyn.onnx`` (bert and gpt2: dynamic ``batch`` and ``seq`` axes on the
[batch, seq] inputs, position tables of 512 so seq 512 is legal; resnet and mobilenet: a
dynamic ``batch`` axis; exported at batch 2, since dynamo specialises a size-1 dim; fixed at
import with ``input_shapes=``; the manifest adds ``symbolic_shape``, ``dynamic_axes`` and
``test_shapes``). GPT-2's and ViT's opset-14 variants and ViT's dynamic ones are written
only with ``--all``, to keep the committed fixtures under 3 MB. ``manifest.json`` records each
file's inputs (name, shape, dtype, integer range) so the tests can build feeds without
torch. ``--check`` also runs each export through autofusion (interpreter and generated C)
against onnxruntime and prints the errors. The output is deterministic (a rerun writes
byte-identical files).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import torch
from torch import nn

SEQ = 16  # the fixed sequence length of the transformer exports
MAX_SEQ = 512  # position-table size of the dynamic transformer variants (seq 512 must be legal)
TEST_SEQS = (16, 64, 128, 384, 512)  # shapes the dynamic transformer fixtures are checked at
TEST_BATCHES_NLP = (1, 4)
TEST_BATCHES_CNN = (1, 2, 8)
DYNAMIC = False  # set by export_one: the builders size position tables for the dyn variants


def _batch() -> int:
    """Example batch: 2 for the dynamic variants (dynamo specialises a size-1 dim to 1)."""
    return 2 if DYNAMIC else 1


class BasicBlock(nn.Module):
    """ResNet basic block: conv-bn-relu-conv-bn + shortcut (1x1 conv-bn when shapes change)."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.down: nn.Module | None = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idt = x if self.down is None else self.down(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + idt)


class TinyResNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1))  # fmt: skip
        self.layer1 = BasicBlock(8, 8, 1)
        self.layer2 = BasicBlock(8, 16, 2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.layer2(self.layer1(self.stem(x)))
        return self.fc(torch.flatten(self.pool(y), 1))


def _conv_bn_relu6(cin: int, cout: int, k: int, stride: int, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6(inplace=True))  # fmt: skip


class InvertedResidual(nn.Module):
    """MobileNetV2 block: 1x1 expand, 3x3 depthwise, 1x1 linear projection, residual if legal."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        mid = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.body = nn.Sequential(
            _conv_bn_relu6(cin, mid, 1, 1),
            _conv_bn_relu6(mid, mid, 3, stride, groups=mid),
            nn.Conv2d(mid, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        return x + y if self.use_res else y


class TinyMobileNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            _conv_bn_relu6(3, 8, 3, 2),
            InvertedResidual(8, 8, 1, 2),
            InvertedResidual(8, 16, 2, 3),
            InvertedResidual(16, 16, 1, 3),
            _conv_bn_relu6(16, 32, 1, 1),
        )
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(32, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


class HFWrap(nn.Module):
    """Calls a transformers model with keyword inputs and returns plain tensors."""

    def __init__(self, model: nn.Module, keys: list[str], outs: list[str]) -> None:
        super().__init__()
        self.model = model
        self.keys = keys
        self.outs = outs

    def forward(self, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
        res = self.model(**dict(zip(self.keys, args)), return_dict=True)
        return tuple(getattr(res, k) for k in self.outs)


def _attention_mask() -> torch.Tensor:
    m = torch.ones(_batch(), SEQ, dtype=torch.int64)
    m[0, SEQ - 4 :] = 0  # padded tail, so the mask matters
    return m


Spec = tuple[nn.Module, tuple[torch.Tensor, ...], list[str], list[str], dict[str, Any]]


def build_resnet() -> Spec:
    x = torch.randn(_batch(), 3, 32, 32)
    return TinyResNet(), (x,), ["input"], ["logits"], {}


def build_mobilenet() -> Spec:
    x = torch.randn(_batch(), 3, 32, 32)
    return TinyMobileNet(), (x,), ["input"], ["logits"], {}


def build_bert() -> Spec:
    from transformers import BertConfig, BertModel

    cfg = BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=64, vocab_size=100,
                     max_position_embeddings=MAX_SEQ if DYNAMIC else 32,
                     type_vocab_size=2)  # fmt: skip
    model = HFWrap(BertModel(cfg), ["input_ids", "attention_mask", "token_type_ids"],
                   ["last_hidden_state", "pooler_output"])  # fmt: skip
    ids = torch.randint(0, 100, (_batch(), SEQ))
    tt = torch.zeros(_batch(), SEQ, dtype=torch.int64)
    tt[:, SEQ // 2 :] = 1
    ranges = {"input_ids": [0, 100], "attention_mask": [0, 2], "token_type_ids": [0, 2]}
    return (model, (ids, _attention_mask(), tt), ["input_ids", "attention_mask", "token_type_ids"],
            ["last_hidden_state", "pooler_output"], ranges)  # fmt: skip


def build_gpt2() -> Spec:
    from transformers import GPT2Config, GPT2Model

    cfg = GPT2Config(n_embd=32, n_layer=2, n_head=4, vocab_size=100,
                     n_positions=MAX_SEQ if DYNAMIC else 32,
                     use_cache=False)  # fmt: skip
    model = HFWrap(GPT2Model(cfg), ["input_ids", "attention_mask"], ["last_hidden_state"])
    ids = torch.randint(0, 100, (_batch(), SEQ))
    ranges = {"input_ids": [0, 100], "attention_mask": [0, 2]}
    return (model, (ids, _attention_mask()), ["input_ids", "attention_mask"],
            ["last_hidden_state"], ranges)  # fmt: skip


def build_vit() -> Spec:
    from transformers import ViTConfig, ViTModel

    cfg = ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=64, image_size=32, patch_size=8, num_channels=3)  # fmt: skip
    model = HFWrap(ViTModel(cfg, add_pooling_layer=True), ["pixel_values"],
                   ["last_hidden_state", "pooler_output"])  # fmt: skip
    x = torch.randn(_batch(), 3, 32, 32)
    return model, (x,), ["pixel_values"], ["last_hidden_state", "pooler_output"], {}


class TinyLSTM(nn.Module):
    """2-layer bidirectional batch-first LSTM with a Linear head on every step."""

    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.LSTM(8, 16, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(32, 4)
        with torch.no_grad():  # default init gives logits ~0.1; scale them to ~1
            self.head.weight.mul_(8.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.rnn(x)[0])


class TinyGRU(nn.Module):
    """2-layer sequence-first GRU; a Linear head on the last step's state."""

    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.GRU(8, 24, num_layers=2)
        self.head = nn.Linear(24, 4)
        with torch.no_grad():
            self.head.weight.mul_(4.0)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y, h = self.rnn(x)
        return y, self.head(h[-1])


def build_lstm() -> Spec:
    x = torch.randn(2, 12, 8)  # [batch, seq, input]
    return TinyLSTM(), (x,), ["input"], ["logits"], {}


def build_gru() -> Spec:
    x = torch.randn(12, 2, 8)  # [seq, batch, input]
    return TinyGRU(), (x,), ["input"], ["sequence", "logits"], {}


CNNS = ("resnet", "mobilenet")


class UNet(nn.Module):
    """A small U-Net: two conv-bn-relu stages down (MaxPool), two up (ConvTranspose2d with
    kernel 2 / stride 2, then the skip concat and conv-bn-relu), a 1x1 head."""

    def __init__(self) -> None:
        super().__init__()

        def stage(cin: int, cout: int) -> nn.Sequential:
            return nn.Sequential(
                nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
            )  # fmt: skip

        self.down1, self.down2, self.mid = stage(3, 8), stage(8, 16), stage(16, 32)
        self.pool = nn.MaxPool2d(2)
        self.up2, self.dec2 = nn.ConvTranspose2d(32, 16, 2, stride=2), stage(32, 16)
        self.up1, self.dec1 = nn.ConvTranspose2d(16, 8, 2, stride=2), stage(16, 8)
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s1 = self.down1(x)
        s2 = self.down2(self.pool(s1))
        m = self.mid(self.pool(s2))
        d2 = self.dec2(torch.cat([self.up2(m), s2], 1))
        d1 = self.dec1(torch.cat([self.up1(d2), s1], 1))
        return self.head(d1)


def build_unet() -> Spec:
    model = UNet()
    with torch.no_grad():  # default init gives ~0.05 logits; bring them to ordinary size
        model.head.weight.mul_(30.0)
    return model, (torch.randn(1, 3, 32, 32),), ["image"], ["mask_logits"], {}


def build_roberta() -> Spec:
    from transformers import RobertaConfig, RobertaModel

    # position ids come from CumSum over the non-padding ids (padding_idx 1)
    cfg = RobertaConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, vocab_size=100, pad_token_id=1,
                        max_position_embeddings=(MAX_SEQ if DYNAMIC else 32) + 2,
                        type_vocab_size=1)  # fmt: skip
    model = HFWrap(RobertaModel(cfg), ["input_ids", "attention_mask"],
                   ["last_hidden_state", "pooler_output"])  # fmt: skip
    ids = torch.randint(3, 100, (_batch(), SEQ))
    mask = _attention_mask()
    ids[mask == 0] = 1  # padded tail holds the padding id, so CumSum skips it
    ranges = {"input_ids": [0, 100], "attention_mask": [0, 2]}
    return (model, (ids, mask), ["input_ids", "attention_mask"],
            ["last_hidden_state", "pooler_output"], ranges)  # fmt: skip


class DeepLab(nn.Module):
    """A small DeepLabV3-style net: strided conv-bn-relu backbone with a dilated stage, an
    ASPP head (1x1, dilated 3x3s, a global-pool branch upsampled bilinearly), concat, 1x1
    projection, classifier, bilinear upsample to the input size."""

    def __init__(self) -> None:
        super().__init__()

        def cbr(cin: int, cout: int, k: int = 3, s: int = 1, d: int = 1) -> nn.Sequential:
            conv = nn.Conv2d(cin, cout, k, s, padding=d * (k // 2), dilation=d, bias=False)
            return nn.Sequential(conv, nn.BatchNorm2d(cout), nn.ReLU())

        self.backbone = nn.Sequential(cbr(3, 8, s=2), cbr(8, 16, s=2), cbr(16, 16, s=2),
                                      cbr(16, 16, d=2))  # fmt: skip
        self.aspp = nn.ModuleList([cbr(16, 8, k=1), cbr(16, 8, d=2), cbr(16, 8, d=3)])
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), cbr(16, 8, k=1))
        self.project = cbr(32, 16, k=1)
        self.classifier = nn.Conv2d(16, 4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = self.backbone(x)
        size = f.shape[-2:]
        branches = [b(f) for b in self.aspp]
        branches.append(nn.functional.interpolate(self.pool(f), size=size, mode="bilinear",
                                                  align_corners=False))  # fmt: skip
        y = self.classifier(self.project(torch.cat(branches, 1)))
        return nn.functional.interpolate(y, size=x.shape[-2:], mode="bilinear",
                                         align_corners=False)  # fmt: skip


def build_deeplab() -> Spec:
    model = DeepLab()
    with torch.no_grad():
        model.classifier.weight.mul_(10.0)
    return model, (torch.randn(1, 3, 64, 64),), ["image"], ["mask_logits"], {}


class LRASPP(nn.Module):
    """LRASPP-style: a MobileNetV3-ish backbone (Hardswish, squeeze-excite with Hardsigmoid
    gating), the LRASPP head (1x1 branch gated by the sigmoid of a pooled branch, bilinear
    upsample, low-level skip classifier, add), bilinear upsample to the input size."""

    def __init__(self) -> None:
        super().__init__()

        def cbh(cin: int, cout: int, s: int = 1, g: int = 1) -> nn.Sequential:
            k = 3 if s > 1 or g > 1 else 1
            conv = nn.Conv2d(cin, cout, k, s, padding=k // 2, groups=g, bias=False)
            return nn.Sequential(conv, nn.BatchNorm2d(cout), nn.Hardswish())

        self.low = nn.Sequential(cbh(3, 8, s=2), cbh(8, 8, s=2, g=8), cbh(8, 8))
        self.high = nn.Sequential(cbh(8, 16), cbh(16, 16, s=2, g=16))
        self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(16, 8, 1), nn.ReLU(),
                                nn.Conv2d(8, 16, 1), nn.Hardsigmoid())  # fmt: skip
        self.cbr = nn.Sequential(nn.Conv2d(16, 8, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
        self.scale = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(16, 8, 1, bias=False),
                                   nn.Sigmoid())  # fmt: skip
        self.low_cls, self.high_cls = nn.Conv2d(8, 3, 1), nn.Conv2d(8, 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        low = self.low(x)
        high = self.high(low)
        high = high * self.se(high)
        y = self.cbr(high) * self.scale(high)
        y = nn.functional.interpolate(y, size=low.shape[-2:], mode="bilinear",
                                      align_corners=False)  # fmt: skip
        y = self.low_cls(low) + self.high_cls(y)
        return nn.functional.interpolate(y, size=x.shape[-2:], mode="bilinear",
                                         align_corners=False)  # fmt: skip


def build_lraspp() -> Spec:
    model = LRASPP()
    with torch.no_grad():
        model.low_cls.weight.mul_(4.0)
        model.high_cls.weight.mul_(4.0)
    return model, (torch.randn(1, 3, 64, 64),), ["image"], ["mask_logits"], {}


class ConvBNSiLU(nn.Module):
    """YOLOv8's ``Conv``: conv, BatchNorm, SiLU."""

    def __init__(self, cin: int, cout: int, k: int = 1, s: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.silu(self.bn(self.conv(x)))


class C2f(nn.Module):
    """YOLOv8's C2f: 1x1 conv, split in two, a chain of residual bottlenecks on one half,
    concat of every intermediate, 1x1 conv."""

    def __init__(self, cin: int, cout: int, n: int = 1, shortcut: bool = True) -> None:
        super().__init__()
        self.c = cout // 2
        self.cv1 = ConvBNSiLU(cin, 2 * self.c)
        self.cv2 = ConvBNSiLU((2 + n) * self.c, cout)
        self.m = nn.ModuleList(
            nn.Sequential(ConvBNSiLU(self.c, self.c, 3), ConvBNSiLU(self.c, self.c, 3))
            for _ in range(n)
        )
        self.shortcut = shortcut

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = list(self.cv1(x).chunk(2, 1))
        for m in self.m:
            y.append(y[-1] + m(y[-1]) if self.shortcut else m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.cv1 = ConvBNSiLU(cin, cin // 2)
        self.cv2 = ConvBNSiLU(cin // 2 * 4, cout)
        self.pool = nn.MaxPool2d(5, 1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = [self.cv1(x)]
        for _ in range(3):
            y.append(self.pool(y[-1]))
        return self.cv2(torch.cat(y, 1))


class YOLO(nn.Module):
    """YOLOv8-style detector at two scales (strides 8 and 16), decode included."""

    REG_MAX = 8
    CLASSES = 3

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(ConvBNSiLU(3, 8, 3, 2), ConvBNSiLU(8, 16, 3, 2), C2f(16, 16))
        self.p3 = nn.Sequential(ConvBNSiLU(16, 16, 3, 2), C2f(16, 16))  # stride 8
        self.p4 = nn.Sequential(ConvBNSiLU(16, 32, 3, 2), C2f(32, 32), SPPF(32, 32))  # 16
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.n3 = C2f(48, 16, shortcut=False)
        self.down = ConvBNSiLU(16, 16, 3, 2)
        self.n4 = C2f(48, 32, shortcut=False)
        r = self.REG_MAX
        self.box = nn.ModuleList(
            nn.Sequential(ConvBNSiLU(c, 16, 3), nn.Conv2d(16, 4 * r, 1)) for c in (16, 32)
        )
        self.cls = nn.ModuleList(
            nn.Sequential(ConvBNSiLU(c, 16, 3), nn.Conv2d(16, self.CLASSES, 1)) for c in (16, 32)
        )
        self.dfl = nn.Conv2d(r, 1, 1, bias=False).requires_grad_(False)
        self.dfl.weight.data[:] = torch.arange(r, dtype=torch.float32).view(1, r, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p3 = self.p3(self.stem(x))
        p4 = self.p4(p3)
        n3 = self.n3(torch.cat([self.up(p4), p3], 1))
        n4 = self.n4(torch.cat([self.down(n3), p4], 1))
        feats = [n3, n4]
        r = self.REG_MAX
        outs, anchors, strides = [], [], []
        for i, (f, stride) in enumerate(zip(feats, (8.0, 16.0))):
            b, _, h, w = f.shape
            outs.append(
                torch.cat([self.box[i](f), self.cls[i](f)], 1).view(b, 4 * r + self.CLASSES, -1)
            )
            sx = torch.arange(w, dtype=torch.float32) + 0.5
            sy = torch.arange(h, dtype=torch.float32) + 0.5
            gy, gx = torch.meshgrid(sy, sx, indexing="ij")
            anchors.append(torch.stack((gx, gy), -1).view(-1, 2))
            strides.append(torch.full((h * w, 1), stride))
        y = torch.cat(outs, 2)
        anchor = torch.cat(anchors).transpose(0, 1).unsqueeze(0)
        stride_t = torch.cat(strides).transpose(0, 1).unsqueeze(0)
        box, cls = y.split((4 * r, self.CLASSES), 1)
        n = box.shape[-1]
        dist = self.dfl(box.view(1, 4, r, n).transpose(2, 1).softmax(1)).view(1, 4, n)
        lt, rb = dist.chunk(2, 1)
        x1y1, x2y2 = anchor - lt, anchor + rb
        xywh = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * stride_t
        return torch.cat((xywh / 64.0, cls.sigmoid()), 1)


def build_yolo() -> Spec:
    model = YOLO()
    with torch.no_grad():  # class logits of a few units, so the scores are not all ~0.5
        for head in model.cls:
            head[-1].weight.mul_(10.0)
    return model, (torch.randn(1, 3, 64, 64),), ["images"], ["detections"], {}


CNNS = ("resnet", "mobilenet", "unet")
BUILDERS: dict[str, Callable[[], Spec]] = {
    "resnet": build_resnet,
    "mobilenet": build_mobilenet,
    "bert": build_bert,
    "gpt2": build_gpt2,
    "vit": build_vit,
    "lstm": build_lstm,
    "gru": build_gru,
    "unet": build_unet,
    "roberta": build_roberta,
    "deeplab": build_deeplab,
    "lraspp": build_lraspp,
    "yolo": build_yolo,
}


def _randomise_bn(model: nn.Module, gen: torch.Generator) -> None:
    """Give BatchNorm non-trivial running statistics (fresh ones are mean 0, var 1)."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.uniform_(-0.5, 0.5, generator=gen)
                m.running_var.uniform_(0.5, 1.5, generator=gen)
                m.weight.uniform_(0.5, 1.5, generator=gen)
                m.bias.uniform_(-0.2, 0.2, generator=gen)


EXPORTERS = ("ts", "dynamo", "tsbn", "ts14", "tsdyn", "dynamodyn")
"""``ts``: TorchScript exporter, opset 17; ``dynamo``: dynamo exporter, opset 18, external
data; ``tsbn``: ``ts`` without constant folding (BatchNormalization stays in the graph);
``ts14``: ``ts`` at opset 14 (transformers; LayerNorm decomposed into ReduceMean/Sub/Pow/...);
``tsdyn`` / ``dynamodyn``: a dynamic sequence axis (``dim_param``) on every 2-d input, so
the importer needs ``input_shapes=`` (the manifest's ``shape``)."""


NOT_COMMITTED = {("gpt2", "ts14"), ("vit", "ts14"), ("vit", "tsdyn"), ("vit", "dynamodyn")}


def _dynamic_axes(name: str, args: tuple[torch.Tensor, ...],
                  in_names: list[str]) -> dict[str, dict[int, str]]:  # fmt: skip
    """Dynamic axes per input: batch and seq on the [batch, seq] inputs of the transformers
    (token ids, masks), batch on a CNN's image input."""
    if name in CNNS:
        return {n: {0: "batch"} for n, a in zip(in_names, args) if a.dim() == 4}
    return {n: {0: "batch", 1: "seq"} for n, a in zip(in_names, args) if a.dim() == 2}


def _strip_stack_traces(path: Path) -> None:
    """Drop the dynamo exporter's per-node ``pkg.torch.onnx.stack_trace`` metadata (local
    file paths, two thirds of a small model's file); the graph and weights stay as written."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    for node in model.graph.node:
        keep = [p for p in node.metadata_props if p.key != "pkg.torch.onnx.stack_trace"]
        del node.metadata_props[:]
        node.metadata_props.extend(keep)
    onnx.save(model, str(path))


def export_one(name: str, out_dir: Path, exporter: str) -> dict[str, Any] | None:
    """Export model ``name`` with ``exporter`` (see EXPORTERS); returns its manifest entry, or
    None when the variant does not apply to the model."""
    global DYNAMIC
    DYNAMIC = exporter.endswith("dyn")
    torch.manual_seed(0)
    model, args, in_names, out_names, ranges = BUILDERS[name]()
    dyn = _dynamic_axes(name, args, in_names) if DYNAMIC else {}
    if (exporter.endswith("dyn") and not dyn) or (exporter == "tsbn" and name not in CNNS):
        return None
    if exporter == "ts14" and name in CNNS:
        return None
    _randomise_bn(model, torch.Generator().manual_seed(1))
    model.eval()
    path = out_dir / f"{name}_{exporter}.onnx"
    for old in (path, path.with_name(path.name + ".data")):
        old.unlink(missing_ok=True)
    t0 = time.perf_counter()
    with torch.no_grad():
        if exporter.startswith("ts"):
            axes = dyn
            torch.onnx.export(model, args, str(path), dynamo=False,
                              opset_version=14 if exporter == "ts14" else 17,
                              input_names=in_names, output_names=out_names,
                              do_constant_folding=exporter != "tsbn",
                              dynamic_axes=axes or None)  # fmt: skip
        else:
            shapes = None
            if dyn:
                dims = {"batch": torch.export.Dim("batch", min=1, max=64),
                        "seq": torch.export.Dim("seq", min=2, max=MAX_SEQ)}  # fmt: skip
                specs = tuple({ax: dims[sym] for ax, sym in dyn[n].items()} if n in dyn else None
                              for n in in_names)  # fmt: skip
                # HFWrap.forward(*args): one spec, the tuple of per-argument specs; a plain
                # module's forward(x) takes the per-argument tuple itself
                shapes = (specs,) if name not in CNNS else specs
            torch.onnx.export(model, args, str(path), dynamo=True, opset_version=18,
                              input_names=in_names, output_names=out_names,
                              external_data=True, dynamic_shapes=shapes)  # fmt: skip
    seconds = time.perf_counter() - t0
    if exporter.startswith("dynamo"):
        _strip_stack_traces(path)
    files = [p.name for p in (path, path.with_name(path.name + ".data")) if p.exists()]
    inputs = [{"name": n, "shape": list(a.shape), "dtype": str(a.dtype).removeprefix("torch."),
               **({"range": ranges[n]} if n in ranges else {})}
              for n, a in zip(in_names, args)]  # fmt: skip
    size = sum((out_dir / f).stat().st_size for f in files)
    print(f"{path.name}: {len(files)} file(s), {size / 1024:.0f} KB, exported in {seconds:.1f} s",
          flush=True)  # fmt: skip
    entry: dict[str, Any] = {
        "model": name,
        "exporter": exporter,
        "files": files,
        "inputs": inputs,
        "outputs": out_names,
        "dynamic": bool(dyn),
    }
    if dyn:
        # ``shape`` stays the concrete export shape (what the tests pin with input_shapes=);
        # ``symbolic_shape`` names the dynamic dims, ``test_shapes`` lists symbol values to run
        for spec in inputs:
            axes = dyn.get(spec["name"], {})
            spec["symbolic_shape"] = [axes.get(i, d) for i, d in enumerate(spec["shape"])]
        entry["dynamic_axes"] = {n: {str(k): v for k, v in ax.items()} for n, ax in dyn.items()}
        entry["test_shapes"] = ([{"batch": b} for b in TEST_BATCHES_CNN] if name in CNNS else
                                [{"batch": b, "seq": q} for b in TEST_BATCHES_NLP
                                 for q in TEST_SEQS])  # fmt: skip
    return entry


def check_one(out_dir: Path, entry: dict[str, Any]) -> None:
    """Import with autofusion, interpret and compile; print max errors vs onnxruntime."""
    import onnxruntime as ort

    import autofusion
    from autofusion.frontend.onnx_import import import_onnx
    from autofusion.interpreter import run_module

    path = out_dir / entry["files"][0]
    rng = np.random.default_rng(0)
    feeds: dict[str, np.ndarray] = {}
    for spec in entry["inputs"]:
        if "range" in spec:
            lo, hi = spec["range"]
            feeds[spec["name"]] = rng.integers(lo, hi, spec["shape"]).astype(spec["dtype"])
        else:
            feeds[spec["name"]] = rng.standard_normal(spec["shape"]).astype(spec["dtype"])
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ref = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    shapes = {k: list(v.shape) for k, v in feeds.items()} if entry["dynamic"] else None
    got_i = run_module(import_onnx(path, progress=False, input_shapes=shapes), feeds)
    if shapes is not None:
        # autofusion.compile takes no input_shapes: import with them, run the passes, build
        import tempfile

        from autofusion.lowering.c.testing import build_and_run
        from autofusion.pipeline import run_tensor_passes

        module = import_onnx(path, progress=False, input_shapes=shapes)
        run_tensor_passes(module)
        with tempfile.TemporaryDirectory() as tmp:
            got_c = build_and_run(module, feeds, Path(tmp))
    else:
        m = autofusion.compile(path)
        got_c = m.run(feeds)
    for k, r in ref.items():
        scale = max(1.0, float(np.abs(r).max()))
        ei = float(np.abs(got_i[k] - r).max()) / scale
        ec = float(np.abs(got_c[k] - r).max()) / scale
        print(f"  {k}: interp err {ei:.2e}, C err {ec:.2e} (scaled by max(1,|ref|))")
    if shapes is not None:
        return
    pats: dict[str, int] = {}
    for g in m.report["groups"]:
        pats[g["pattern"]] = pats.get(g["pattern"], 0) + 1
    print(f"  kernels {m.report['kernels_before']} -> {m.report['kernels_after']}; groups {pats}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("test/python/data/exported"))
    ap.add_argument("--models", default=",".join(BUILDERS))
    ap.add_argument("--exporters", default=",".join(EXPORTERS))
    ap.add_argument("--check", action="store_true", help="also check each export with autofusion")
    ap.add_argument("--all", action="store_true", help="also the variants not committed")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    manifest_path = a.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    for name in a.models.split(","):
        for exporter in a.exporters.split(","):
            if (name, exporter) in NOT_COMMITTED and not a.all:
                continue
            try:
                entry = export_one(name, a.out, exporter)
            except Exception as e:  # report and go on with the next export
                print(f"{name}_{exporter}: EXPORT FAILED: {type(e).__name__}: {str(e)[:300]}",
                      file=sys.stderr, flush=True)  # fmt: skip
                continue
            if entry is None:
                continue
            manifest[f"{name}_{exporter}"] = entry
            manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
            if a.check:
                try:
                    check_one(a.out, entry)
                except Exception as e:  # report and go on with the next model
                    print(f"  FAILED: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
