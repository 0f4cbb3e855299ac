"""Depthwise -> pointwise conv chains (the ``fuse-conv-chain`` pattern) as small ONNX models:
each case is one branch ``x{i} -> Conv (depthwise) [-> Relu | Clip(0, 6)] -> Conv 1x1
[-> epilogue] -> y{i}``, several branches per model so one build covers many shapes."""

from __future__ import annotations

import numpy as np
import onnx
from conv_epilogues import branches_model, epilogue_nodes
from onnx import TensorProto, helper, numpy_helper


def chain_case(rng: np.random.Generator, i: int, c: int, h: int, w: int, k: int = 3,
               stride: int = 1, pads: tuple[int, int, int, int] = (1, 1, 1, 1), mult: int = 1,
               kout: int = 16, act: str = "relu6", epi: str = "none", bias: bool = True,
               n: int = 1, dil: int = 1) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto],
                          onnx.ValueInfoProto, onnx.ValueInfoProto]:  # fmt: skip
    """One branch of batch ``n``; ``act`` is the depthwise conv's epilogue (``none``,
    ``relu``, ``relu6``), ``epi`` the pointwise conv's (:data:`conv_epilogues.EPILOGUES`)."""
    x, y = f"x{i}", f"y{i}"
    cm = c * mult
    wd = (rng.uniform(-1, 1, (cm, 1, k, k)) / k).astype(np.float32)
    wp = (rng.uniform(-1, 1, (kout, cm, 1, 1)) / np.sqrt(cm)).astype(np.float32)
    inits = [numpy_helper.from_array(wd, f"wd{i}"), numpy_helper.from_array(wp, f"wp{i}")]
    dw_in, pw_in = [x, f"wd{i}"], [f"m{i}", f"wp{i}"]
    if bias:
        inits += [numpy_helper.from_array(rng.uniform(-0.5, 0.5, cm).astype(np.float32), f"bd{i}"),
                  numpy_helper.from_array(rng.uniform(-0.5, 0.5, kout).astype(np.float32),
                                          f"bp{i}")]  # fmt: skip
        dw_in.append(f"bd{i}")
        pw_in.append(f"bp{i}")
    d_out = f"d{i}" if act != "none" else f"m{i}"
    dw = helper.make_node("Conv", dw_in, [d_out], name=f"dw{i}", group=c, kernel_shape=[k, k],
                          strides=[stride, stride], pads=list(pads),
                          dilations=[dil, dil])  # fmt: skip
    nodes = [dw]
    if act == "relu":
        nodes.append(helper.make_node("Relu", [d_out], [f"m{i}"], name=f"act{i}"))
    elif act == "relu6":
        inits += [numpy_helper.from_array(np.array(0, np.float32), f"dlo{i}"),
                  numpy_helper.from_array(np.array(6, np.float32), f"dhi{i}")]  # fmt: skip
        nodes.append(helper.make_node("Clip", [d_out, f"dlo{i}", f"dhi{i}"], [f"m{i}"],
                                      name=f"act{i}"))  # fmt: skip
    oh = (h + pads[0] + pads[2] - dil * (k - 1) - 1) // stride + 1
    ow = (w + pads[1] + pads[3] - dil * (k - 1) - 1) // stride + 1
    p_out = y if epi in ("none", "bias") else f"p{i}"
    nodes.append(helper.make_node("Conv", pw_in, [p_out], name=f"pw{i}", kernel_shape=[1, 1]))
    epi_nodes, epi_inits = epilogue_nodes(rng, i, epi, p_out, y, (n, kout, oh, ow))
    vi_x = helper.make_tensor_value_info(x, TensorProto.FLOAT, [n, c, h, w])
    vi_y = helper.make_tensor_value_info(y, TensorProto.FLOAT, [n, kout, oh, ow])
    return nodes + epi_nodes, inits + epi_inits, vi_x, vi_y


def chain_model(cases: list[dict[str, object]], seed: int = 0) -> onnx.ModelProto:
    return branches_model(chain_case, cases, seed, "dwpw_chains")
