"""How threads share a Winograd conv (``afrt_wg_split_k_`` and the shared V, afrt_winograd.h).

Where the tile blocks do not share out evenly between the threads (fewer blocks than threads,
or a short last block: 49 tiles as 32 + 17), the output channels are split as well and the
transformed input V that those tasks all read is made once, its (tile block, input-channel
chunk) pieces spread over the threads, instead of by every task. One build loaded at 1, 2 and
3 threads must give the same bits (each output is still one task's, the same sums) and match
onnxruntime. The convs: a 13x13 map (16 tiles, one block of 32 with an empty 16-tile group,
200 output channels: 96 + 104 rows at two threads, 72 + 72 + 56 at three, 128 input channels in
chunks of 64 and of 43, 43, 42) and a 27x27 map (49 tiles: 32 + 17; 112 channels, 56 + 56),
each with bias and Relu. A conv with fewer channels than ``AFRT_WG_SPLIT_MIN_ROWS`` per
thread keeps the uneven split at two threads and must match as well (48 -> 40 at 27x27; at
three threads its two tile blocks are split, a thread would have none). A 35x35 map (81 tiles:
32 + 32 + 17) at two threads deals its first two blocks whole and splits the third's 112
channels, 56 + 56 (the last round's block). Two images of the 13x13 map: one block each, dealt
whole at two threads, split with a shared V of both images at three.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from runtime_drivers import same_bits_at_thread_counts


def _model(hw: int, cin: int, cout: int, seed: int, batch: int) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    w = rng.uniform(-1.0, 1.0, (cout, cin, 3, 3)) * (1.5 / np.sqrt(9 * cin))
    b = rng.uniform(-0.2, 0.2, cout)
    inits = [
        numpy_helper.from_array(w.astype(np.float32), "w"),
        numpy_helper.from_array(b.astype(np.float32), "b"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"]),
    ]
    g = helper.make_graph(
        nodes,
        "winograd_split",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, cin, hw, hw])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, cout, hw, hw])],
        inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("cpu", ["native", "x86-64-v2"])
@pytest.mark.parametrize(
    ("hw", "cin", "cout", "batch"),
    [(13, 128, 200, 1), (27, 48, 112, 1), (27, 48, 40, 1), (35, 48, 112, 1), (13, 128, 200, 2)],
)
def test_winograd_split_at_one_to_three_threads(
    cpu: str, hw: int, cin: int, cout: int, batch: int
) -> None:
    model = _model(hw, cin, cout, seed=hw, batch=batch)
    shape = (batch, cin, hw, hw)
    x = np.random.default_rng(hw + 1).uniform(-1.0, 1.0, shape).astype(np.float32)
    # the second run: the cached weights, the scratch reused
    report = same_bits_at_thread_counts(model, {"x": x}, cpu, runs=2)
    algos = [c["conv_algo"] for c in report["conv_algo"]]
    assert algos == ["winograd"], algos
