"""Depthwise -> pointwise chains fused in row bands (``afrt_dwpw_f32``) against the two convs
apart, kernel level.

Builds ``dwpw_chain.c`` against ``afrt.h`` and, for each (C, H, stride, K) -- a 3x3 pad-1
depthwise conv on C x H x H, Relu6, then a 1x1 conv to K channels -- times the fused kernel
and the two calls apart (``afrt_dwconv2d_f32`` with a clamp epilogue writing the whole
intermediate, then ``afrt_conv2d_f32``'s 1x1 path) in one process, rounds interleaved,
constant weights registered as a model's are. One thread: process CPU time; more: wall
time. Prints a markdown table of the medians (us), the median of the per-round ratios
(fused / apart; < 1: fusion wins), the largest difference of the two outputs, and what
``fuse-conv-chain``'s cost model decides for the shape. The default cases are
MobileNet-V2's depthwise -> project pairs at 224 x 224.

    .venv/bin/python benchmarks/dwpw_chain.py [--threads 1] [--reps 15]
        [--cases 32x112x1x16,96x112x2x24,...]    # CxHxstridexK
"""

from __future__ import annotations

import sys
from pathlib import Path

import kbench
import numpy as np

SRC = Path(__file__).with_name("dwpw_chain.c")
MOBILENET_V2 = [(32, 112, 1, 16), (96, 112, 2, 24), (144, 56, 1, 24), (144, 56, 2, 32),
                (192, 28, 1, 32), (192, 28, 2, 64), (384, 14, 1, 64), (576, 14, 1, 96),
                (576, 14, 2, 160), (960, 7, 1, 160), (960, 7, 1, 320)]  # fmt: skip


def decision(c: int, h: int, stride: int, k: int) -> str:
    """``fuse-conv-chain``'s verdict on the pair, from its cost model."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from autofusion.frontend import import_onnx
    from autofusion.passes.fuse_conv_chain import fuse_dwpw_chains
    from autofusion.pipeline import run_tensor_passes
    from autofusion.policy.engine import FusionPolicy

    oh = (h - 1) // stride + 1
    wd = numpy_helper.from_array(np.ones((c, 1, 3, 3), np.float32), "wd")
    wp = numpy_helper.from_array(np.ones((k, c, 1, 1), np.float32), "wp")
    lo = numpy_helper.from_array(np.array(0, np.float32), "lo")
    hi = numpy_helper.from_array(np.array(6, np.float32), "hi")
    nodes = [helper.make_node("Conv", ["x", "wd"], ["d"], group=c, kernel_shape=[3, 3],
                              strides=[stride, stride], pads=[1, 1, 1, 1]),
             helper.make_node("Clip", ["d", "lo", "hi"], ["m"]),
             helper.make_node("Conv", ["m", "wp"], ["y"], kernel_shape=[1, 1])]  # fmt: skip
    graph = helper.make_graph(
        nodes, "pair", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, h])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, k, oh, oh])],
        [wd, wp, lo, hi],
    )  # fmt: skip
    module = import_onnx(helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)]),
                         progress=False)  # fmt: skip
    run_tensor_passes(module, groups=("cleanup",))
    from autofusion.passes.fuse_conv_bn_relu import fuse_conv_chains

    policy = FusionPolicy.resolve()
    fuse_conv_chains(module, policy)
    return "fuse" if fuse_dwpw_chains(module, policy) else "refuse"


def main() -> int:
    ap = kbench.parser(__doc__, "comma-separated CxHxstridexK", reps=15, cold=False)
    args = ap.parse_args()
    out = kbench.run(SRC, [args.threads, args.reps], kbench.cases(args, MOBILENET_V2))
    columns = ["C", "H", "stride", "K", "fused us", "apart us", "ratio", "max diff"]
    kbench.print_heading(args, [*columns, "cost model"])
    for line in out:
        c, h, s, k, tf, ta, ratio, diff = line.split()
        pick = decision(int(c), int(h), int(s), int(k))
        print(f"| {c} | {h} | {s} | {k} | {tf} | {ta} | {ratio} | {diff} | {pick} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
