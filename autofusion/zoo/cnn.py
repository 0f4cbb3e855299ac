"""Convolutional zoo models: what torchvision-style CNNs look like after ``torch.onnx.export``
(Conv without bias followed by BatchNormalization, Relu/Clip, residual Add, pools, Gemm head),
plus a classic opset-9 model-zoo style network.

Weights are He-initialised; BatchNormalization carries realistic running statistics, and the
last BN of every residual branch has a smaller scale (as zero-init-residual training leaves
it) so activations stay O(1) through deep stacks.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import onnx

from autofusion.zoo.graph import GraphBuilder


def tiny_cnn() -> onnx.ModelProto:
    """A small CNN touching the common CNN patterns: Conv(bias=False)+BN+Relu, a residual block
    with Add, MaxPool, a depthwise conv with Clip(0, 6), a biased pointwise conv,
    GlobalAveragePool, Flatten, Gemm. ``input`` [1,3,32,32] -> ``logits`` [1,10]."""
    b = GraphBuilder("tiny_cnn", seed=1)
    x = b.input("input", [1, 3, 32, 32])
    y = b.conv_bn(x, 3, 16, 3, "/stem/conv")
    # residual block
    r = b.conv_bn(y, 16, 16, 3, "/block/conv1")
    r = b.conv_bn(r, 16, 16, 3, "/block/conv2", act=None, gamma=0.5)
    y = b.relu(b.node("Add", [r, y], "/block"), "/block/relu_out")
    y = b.maxpool(y, 2, 2, 0, "/pool")
    # depthwise separable: dw 3x3 + BN + Relu6, then pointwise with bias
    y = b.conv_bn(y, 16, 16, 3, "/dw/conv", act="relu6", group=16)
    y = b.conv(y, 16, 32, 1, "/pw/conv", bias=True)
    y = b.relu(y, "/pw/relu")
    b.output(b.classifier_head(y, 32, 10), "logits", [1, 10])
    return b.model(tiny_cnn.__doc__ or "")


def _bottleneck(b: GraphBuilder, x: str, cin: int, width: int, stride: int, scope: str) -> str:
    out = width * 4
    y = b.conv_bn(x, cin, width, 1, f"{scope}/conv1")
    y = b.conv_bn(y, width, width, 3, f"{scope}/conv2", stride=stride)  # v1.5: stride here
    y = b.conv_bn(y, width, out, 1, f"{scope}/conv3", act=None, gamma=0.3)
    if stride != 1 or cin != out:
        x = b.conv_bn(x, cin, out, 1, f"{scope}/downsample/0", act=None, stride=stride)
    return b.relu(b.node("Add", [y, x], scope), f"{scope}/relu_1")


def resnet50() -> onnx.ModelProto:
    """torchvision ResNet-50 v1.5 (stride in the 3x3 conv), batch 1: ``input`` [1,3,224,224]
    -> ``logits`` [1,1000]; 25.6 M parameters."""
    b = GraphBuilder("resnet50", seed=50)
    x = b.input("input", [1, 3, 224, 224])
    y = b.conv_bn(x, 3, 64, 7, "/conv1", stride=2)
    y = b.maxpool(y, 3, 2, 1, "/maxpool")
    cin = 64
    for li, (width, blocks, stride) in enumerate(
        [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)], start=1
    ):
        for bi in range(blocks):
            y = _bottleneck(b, y, cin, width, stride if bi == 0 else 1, f"/layer{li}/{bi}")
            cin = width * 4
    b.output(b.classifier_head(y, 2048, 1000), "logits", [1, 1000])
    return b.model(resnet50.__doc__ or "")


def _inception_block(
    b: GraphBuilder,
    x: str,
    cin: int,
    c1: int,
    c5r: int,
    c5: int,
    c3r: int,
    c3: int,
    cp: int,
    scope: str,
) -> tuple[str, int]:
    b1 = b.conv_bn(x, cin, c1, 1, f"{scope}/branch1x1/conv")
    b5 = b.conv_bn(x, cin, c5r, 1, f"{scope}/branch5x5_1/conv")
    b5 = b.conv_bn(b5, c5r, c5, 5, f"{scope}/branch5x5_2/conv")
    b3 = b.conv_bn(x, cin, c3r, 1, f"{scope}/branch3x3dbl_1/conv")
    b3 = b.conv_bn(b3, c3r, c3, 3, f"{scope}/branch3x3dbl_2/conv")
    b3 = b.conv_bn(b3, c3, c3, 3, f"{scope}/branch3x3dbl_3/conv")
    bp = b.avgpool(x, 3, 1, 1, f"{scope}/branch_pool")
    bp = b.conv_bn(bp, cin, cp, 1, f"{scope}/branch_pool/conv")
    return b.node("Concat", [b1, b5, b3, bp], scope, axis=1), c1 + c5 + c3 + cp


def inception() -> onnx.ModelProto:
    """Inception-v3-like (torchvision ``InceptionA`` blocks): parallel 1x1, 1x1->5x5,
    1x1->3x3->3x3 and AveragePool->1x1 branches joined by Concat. ``input`` [1,3,96,96] ->
    ``logits`` [1,1000]."""
    b = GraphBuilder("inception", seed=3)
    x = b.input("input", [1, 3, 96, 96])
    y = b.conv_bn(x, 3, 32, 3, "/Conv2d_1a_3x3/conv", stride=2, pad=0)  # 47
    y = b.conv_bn(y, 32, 64, 3, "/Conv2d_2a_3x3/conv")
    y = b.maxpool(y, 3, 2, 0, "/maxpool1")  # 23
    c = 64
    y, c = _inception_block(b, y, c, 64, 48, 64, 64, 96, 32, "/Mixed_5b")
    y, c = _inception_block(b, y, c, 64, 48, 64, 64, 96, 64, "/Mixed_5c")
    y = b.maxpool(y, 3, 2, 1, "/maxpool2")  # 12
    y, c = _inception_block(b, y, c, 96, 64, 96, 96, 128, 64, "/Mixed_6a")
    b.output(b.classifier_head(y, c, 1000), "logits", [1, 1000])
    return b.model(inception.__doc__ or "")


def _shuffle(b: GraphBuilder, x: str, c: int, hw: int, scope: str) -> str:
    """Channel shuffle with 2 groups: Reshape -> Transpose -> Reshape."""
    y = b.reshape(x, [1, 2, c // 2, hw, hw], scope)
    y = b.transpose(y, [0, 2, 1, 3, 4], scope)
    return b.reshape(y, [1, c, hw, hw], scope)


def _shuffle_unit(
    b: GraphBuilder, x: str, cin: int, cout: int, stride: int, hw: int, scope: str
) -> str:
    half = cout // 2
    if stride == 1:
        split = b.ints(f"{scope}/split", [half, half])
        x1, x2 = b.node_n("Split", [x, split], scope, 2, axis=1)
        cin2 = half
    else:
        x1 = b.conv_bn(x, cin, cin, 3, f"{scope}/branch1/0", act=None, stride=2, group=cin)
        x1 = b.conv_bn(x1, cin, half, 1, f"{scope}/branch1/2")
        x2, cin2 = x, cin
    y = b.conv_bn(x2, cin2, half, 1, f"{scope}/branch2/0")
    y = b.conv_bn(y, half, half, 3, f"{scope}/branch2/3", act=None, stride=stride, group=half)
    y = b.conv_bn(y, half, half, 1, f"{scope}/branch2/5")
    y = b.node("Concat", [x1, y], scope, axis=1)
    return _shuffle(b, y, cout, hw // stride, scope)


def shufflenet() -> onnx.ModelProto:
    """ShuffleNet-v2 0.5x: channel Split, depthwise convs (group = C), pointwise convs, Concat
    and channel shuffle as Reshape/Transpose/Reshape. ``input`` [1,3,224,224] -> ``logits``
    [1,1000]."""
    b = GraphBuilder("shufflenet", seed=4)
    x = b.input("input", [1, 3, 224, 224])
    y = b.conv_bn(x, 3, 24, 3, "/conv1/0", stride=2)
    y = b.maxpool(y, 3, 2, 1, "/maxpool")
    hw, cin = 56, 24
    for si, (cout, repeats) in enumerate([(48, 4), (96, 8), (192, 4)], start=2):
        for r in range(repeats):
            stride = 2 if r == 0 else 1
            y = _shuffle_unit(b, y, cin, cout, stride, hw, f"/stage{si}/{r}")
            hw //= stride
            cin = cout
    y = b.conv_bn(y, cin, 1024, 1, "/conv5/0")
    b.output(b.classifier_head(y, 1024, 1000), "logits", [1, 1000])
    return b.model(shufflenet.__doc__ or "")


def mobilenet(size: int = 112) -> onnx.ModelProto:
    """MobileNet-V2 (width 1.0): inverted residuals (1x1 expand, 3x3 depthwise, 1x1 linear
    project) with Clip(0, 6) as ReLU6 and residual Add where shapes match. ``input``
    [1,3,112,112] -> ``logits`` [1,1000] (``size`` 224: the published resolution, for
    benchmarks; the zoo entry keeps 112)."""
    b = GraphBuilder("mobilenet", seed=5)
    x = b.input("input", [1, 3, size, size])
    y = b.conv_bn(x, 3, 32, 3, "/features/0/conv", act="relu6", stride=2)
    cin, idx = 32, 1
    for t, c, n, s in [
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    ]:
        for i in range(n):
            stride = s if i == 0 else 1
            scope = f"/features/{idx}"
            hidden = cin * t
            h = y
            if t != 1:
                h = b.conv_bn(h, cin, hidden, 1, f"{scope}/conv/0", act="relu6")
            h = b.conv_bn(
                h, hidden, hidden, 3, f"{scope}/conv/1", act="relu6", stride=stride, group=hidden
            )
            h = b.conv_bn(h, hidden, c, 1, f"{scope}/conv/2", act=None, gamma=0.5)
            y = b.node("Add", [y, h], scope) if stride == 1 and cin == c else h
            cin, idx = c, idx + 1
    y = b.conv_bn(y, cin, 1280, 1, f"/features/{idx}/conv", act="relu6")
    b.output(b.classifier_head(y, 1280, 1000, "/classifier/1"), "logits", [1, 1000])
    return b.model(mobilenet.__doc__ or "")


def zoo_cnn_opset9() -> onnx.ModelProto:
    """Classic ONNX model-zoo style (Caffe2-converted ResNet/AlexNet era): opset 9, IR version
    3, every initializer (including BN scale/bias/mean/var) also listed as a graph input, Conv
    with bias, LRN, Sum for the residual, Dropout, Reshape with a constant shape input and
    Softmax (opset-9 semantics: flatten to 2-D at axis 1). ``data`` [1,3,64,64] -> ``prob``
    [1,1000]."""
    b = GraphBuilder("zoo_cnn_opset9", seed=9, opset=9)
    x = b.input("data", [1, 3, 64, 64])
    y = b.conv(x, 3, 32, 7, "conv1", stride=2, bias=True)  # 32x32
    y = b.bn(y, 32, "conv1_bn")
    y = b.relu(y, "conv1_relu")
    y = b.node("LRN", [y], "norm1", size=5, alpha=1e-4, beta=0.75, bias=1.0)
    y = b.maxpool(y, 3, 2, 1, "pool1")  # 16x16
    r = b.relu(
        b.bn(b.conv(y, 32, 32, 3, "res2a_branch2a", bias=True), 32, "bn2a_branch2a"),
        "res2a_branch2a_relu",
    )
    r = b.bn(b.conv(r, 32, 32, 3, "res2a_branch2b", bias=True), 32, "bn2a_branch2b", gamma=0.5)
    y = b.relu(b.node("Sum", [y, r], "res2a"), "res2a_relu")
    y = b.clip(b.conv(y, 32, 64, 3, "conv3", stride=2, bias=True), "conv3_relu6")
    y = b.node("GlobalAveragePool", [y], "pool5")
    y = b.node("Reshape", [y, b.param("OC2_DUMMY_1", np.array([1, -1], np.int64))], "flatten")
    y = b.gemm(y, 64, 1000, "fc")
    y = b.node("Dropout", [y], "drop", ratio=0.5)
    b.output(b.node("Softmax", [y], "prob"), "prob", [1, 1000])
    return b.model(zoo_cnn_opset9.__doc__ or "", ir_version=3, inputs_include_initializers=True)


def _fire(b: GraphBuilder, x: str, cin: int, s: int, e: int, scope: str) -> tuple[str, int]:
    """SqueezeNet fire module: 1x1 squeeze, then 1x1 and 3x3 expands joined by Concat."""
    sq = b.relu(b.conv(x, cin, s, 1, f"{scope}/squeeze", bias=True), f"{scope}/squeeze_activation")
    e1 = b.relu(b.conv(sq, s, e, 1, f"{scope}/expand1x1", bias=True), f"{scope}/expand1x1_act")
    e3 = b.relu(b.conv(sq, s, e, 3, f"{scope}/expand3x3", bias=True), f"{scope}/expand3x3_act")
    return b.node("Concat", [e1, e3], scope, axis=1), 2 * e


def squeezenet() -> onnx.ModelProto:
    """SqueezeNet 1.1 (torchvision ``squeezenet1_1``): biased Conv+Relu, ceil-mode MaxPool,
    eight fire modules (1x1 squeeze, 1x1 and 3x3 expands joined by Concat on channels),
    Dropout, a 1x1 Conv classifier with Relu, GlobalAveragePool, Flatten. ``input``
    [1,3,224,224] -> ``logits`` [1,1000]."""
    b = GraphBuilder("squeezenet", seed=11)
    x = b.input("input", [1, 3, 224, 224])
    y = b.relu(b.conv(x, 3, 64, 3, "/features/0", stride=2, pad=0, bias=True), "/features/1")

    def pool(y: str, scope: str) -> str:
        return b.node(
            "MaxPool", [y], scope, kernel_shape=[3, 3], strides=[2, 2], pads=[0] * 4, ceil_mode=1
        )

    y = pool(y, "/features/2")  # 55
    c = 64
    for i, (s, e) in enumerate([(16, 64), (16, 64), (32, 128), (32, 128)], start=3):
        if i == 5:
            y = pool(y, "/features/5")  # 27
        y, c = _fire(b, y, c, s, e, f"/features/{i if i < 5 else i + 1}")
    y = pool(y, "/features/8")  # 13
    for i, (s, e) in enumerate([(48, 192), (48, 192), (64, 256), (64, 256)], start=9):
        y, c = _fire(b, y, c, s, e, f"/features/{i}")
    y = b.node("Dropout", [y], "/classifier/0")
    # The classifier conv is initialised smaller than He (torchvision uses std 0.01) so
    # that the logits stay O(1) after the final Relu and average.
    w = b.randn("classifier.1.weight", [1000, c, 1, 1], 0.5 * math.sqrt(2.0 / c))
    y = b.node("Conv", [y, w, b.randn("classifier.1.bias", [1000], 0.05)], "/classifier/1")
    y = b.relu(y, "/classifier/2")
    y = b.node("GlobalAveragePool", [y], "/classifier/3")
    y = b.node("Flatten", [y], "", axis=1)
    b.output(y, "logits", [1, 1000])
    return b.model(squeezenet.__doc__ or "")


def densenet121() -> onnx.ModelProto:
    """DenseNet-121 (blocks 6, 12, 24, 16; growth 32; bottleneck 4x; compression 0.5) with
    the Keras-style chained concat: each dense layer is BN+Relu -> 1x1 Conv -> BN+Relu -> 3x3
    Conv and ``x = Concat(x, new)`` on channels; transitions BN+Relu -> 1x1 Conv ->
    AveragePool 2x2/2; final BN+Relu, GlobalAveragePool, Flatten, Gemm. All 121 layers, but
    the input is **reduced to [1,3,112,112]** (blocks at 28, 14, 7, 3 pixels) to keep the
    compile and the interpreter tests short. ``input`` [1,3,112,112] -> ``logits`` [1,1000]."""
    growth, bottleneck = 32, 4
    b = GraphBuilder("densenet121", seed=121)
    x = b.input("input", [1, 3, 112, 112])
    y = b.conv_bn(x, 3, 64, 7, "/features/conv0", stride=2)
    y = b.maxpool(y, 3, 2, 1, "/features/pool0")
    c = 64
    for bi, layers in enumerate((6, 12, 24, 16), start=1):
        for li in range(1, layers + 1):
            scope = f"/features/denseblock{bi}/denselayer{li}"
            h = b.relu(b.bn(y, c, f"{scope}/norm1"), f"{scope}/relu1")
            h = b.conv_bn(h, c, bottleneck * growth, 1, f"{scope}/conv1")
            h = b.conv(h, bottleneck * growth, growth, 3, f"{scope}/conv2")
            y = b.node("Concat", [y, h], scope, axis=1)
            c += growth
        scope = f"/features/transition{bi}" if bi < 4 else "/features"
        y = b.relu(b.bn(y, c, f"{scope}/norm" if bi < 4 else "/features/norm5"), f"{scope}/relu")
        if bi < 4:
            y = b.conv(y, c, c // 2, 1, f"{scope}/conv")
            y = b.avgpool(y, 2, 2, 0, f"{scope}/pool")
            c //= 2
    b.output(b.classifier_head(y, c, 1000, "/classifier"), "logits", [1, 1000])
    return b.model(densenet121.__doc__ or "")


def _silu(b: GraphBuilder, x: str, scope: str) -> str:
    """SiLU / Swish as the exporter writes it before opset 22: ``x * Sigmoid(x)``."""
    return b.node("Mul", [x, b.node("Sigmoid", [x], scope)], scope)


def efficientnet_b0() -> onnx.ModelProto:
    """EfficientNet-B0 (torchvision ``efficientnet_b0`` layout): stem 3x3/2 Conv+BN+SiLU,
    16 MBConv blocks (1x1 expand + BN + SiLU, depthwise 3x3/5x5 + BN + SiLU,
    squeeze-and-excitation GlobalAveragePool -> 1x1 Conv -> SiLU -> 1x1 Conv -> Sigmoid -> Mul,
    1x1 project + BN, residual Add where shapes match), head 1x1 Conv to 1280 + BN + SiLU,
    GlobalAveragePool, Flatten, Gemm. SiLU is Sigmoid + Mul. ``input`` [1,3,224,224] ->
    ``logits`` [1,1000]."""
    b = GraphBuilder("efficientnet_b0", seed=7)
    x = b.input("input", [1, 3, 224, 224])

    def conv_bn_silu(x: str, cin: int, cout: int, k: int, scope: str, **kw: Any) -> str:
        return _silu(b, b.conv_bn(x, cin, cout, k, f"{scope}/0", act=None, **kw), f"{scope}/2")

    y = conv_bn_silu(x, 3, 32, 3, "/features/0/0", stride=2)
    cin, stage = 32, 1
    for t, c, n, s, k in [
        (1, 16, 1, 1, 3),
        (6, 24, 2, 2, 3),
        (6, 40, 2, 2, 5),
        (6, 80, 3, 2, 3),
        (6, 112, 3, 1, 5),
        (6, 192, 4, 2, 5),
        (6, 320, 1, 1, 3),
    ]:
        for i in range(n):
            stride = s if i == 0 else 1
            scope = f"/features/{stage}/{i}/block"
            hidden, j = cin * t, 0
            h = y
            if t != 1:
                h = conv_bn_silu(h, cin, hidden, 1, f"{scope}/{j}")
                j += 1
            h = conv_bn_silu(h, hidden, hidden, k, f"{scope}/{j}", stride=stride, group=hidden)
            se = f"{scope}/{j + 1}"
            squeeze = max(1, cin // 4)
            g = b.node("GlobalAveragePool", [h], f"{se}/avgpool")
            g = _silu(b, b.conv(g, hidden, squeeze, 1, f"{se}/fc1", bias=True), f"{se}/activation")
            g = b.node("Sigmoid", [b.conv(g, squeeze, hidden, 1, f"{se}/fc2", bias=True)], se)
            h = b.node("Mul", [g, h], se)
            h = b.conv_bn(h, hidden, c, 1, f"{scope}/{j + 2}/0", act=None, gamma=0.5)
            y = b.node("Add", [h, y], scope) if stride == 1 and cin == c else h
            cin = c
        stage += 1
    y = conv_bn_silu(y, cin, 1280, 1, "/features/8")
    b.output(b.classifier_head(y, 1280, 1000, "/classifier/1"), "logits", [1, 1000])
    return b.model(efficientnet_b0.__doc__ or "")


def video_resnet() -> onnx.ModelProto:
    """A small video ResNet (torchvision ``r3d_18`` / ``r2plus1d_18`` / X3D / C3D shapes,
    Conv+BN without bias as exported before folding): stem 3x7x7 Conv+BN+Relu with stride
    (1, 2, 2) and pads (1, 3, 3), a 3x3x3 MaxPool of stride 2 with ceil_mode, a basic residual
    block 3x3x3, a downsampling block with stride 2 in time and space (1x1x1 stride-2
    downsample conv), a (2+1)-d block (1x3x3 then 3x1x1), an X3D-style depthwise 3x3x3
    (groups = channels) with asymmetric pads (0, 1, 1, 1, 1, 0) then 1x1x1, a dilated 3x3x3
    conv, GlobalAveragePool, Flatten, Gemm. Odd sizes everywhere: ``input`` [1,3,7,19,23]
    -> ``logits`` [1,10]."""
    b = GraphBuilder("video_resnet", seed=18)
    x = b.input("input", [1, 3, 7, 19, 23])
    y = b.conv_bn(x, 3, 16, (3, 7, 7), "/stem/conv", stride=(1, 2, 2), pad=[1, 3, 3] * 2)
    y = b.maxpool(y, 3, 2, 1, "/pool", rank=3, ceil_mode=1)
    r = b.conv_bn(y, 16, 16, (3, 3, 3), "/layer1/conv1")
    r = b.conv_bn(r, 16, 16, (3, 3, 3), "/layer1/conv2", act=None, gamma=0.5)
    y = b.relu(b.node("Add", [r, y], "/layer1"), "/layer1/relu_out")
    r = b.conv_bn(y, 16, 24, (3, 3, 3), "/layer2/conv1", stride=2)
    r = b.conv_bn(r, 24, 24, (3, 3, 3), "/layer2/conv2", act=None, gamma=0.5)
    d = b.conv_bn(y, 16, 24, (1, 1, 1), "/layer2/downsample/conv", act=None, stride=2)
    y = b.relu(b.node("Add", [r, d], "/layer2"), "/layer2/relu_out")
    r = b.conv_bn(y, 24, 24, (1, 3, 3), "/layer3/conv_s")  # (2+1)-d: space, then time
    r = b.conv_bn(r, 24, 24, (3, 1, 1), "/layer3/conv_t", act=None, gamma=0.5)
    y = b.relu(b.node("Add", [r, y], "/layer3"), "/layer3/relu_out")
    y = b.conv_bn(y, 24, 24, (3, 3, 3), "/layer4/dw/conv", act="relu6", group=24,
                  pad=[0, 1, 1, 1, 1, 0])  # fmt: skip
    y = b.conv_bn(y, 24, 32, (1, 1, 1), "/layer4/pw/conv")
    y = b.conv_bn(y, 32, 32, (3, 3, 3), "/layer5/conv", dilation=2)
    b.output(b.classifier_head(y, 32, 10), "logits", [1, 10])
    return b.model(video_resnet.__doc__ or "")
