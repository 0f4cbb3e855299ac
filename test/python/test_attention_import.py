"""ONNX Attention (opset 23/24), decomposed by the frontend, against onnxruntime: through the
interpreter and the generated C, for a GQA 3-D configuration with a KV cache, causal masking
and a float mask, and a 4-D one with a bool mask, softcap and the post-softmax 4th output.
Unsupported forms are refused with an error naming the node."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from autofusion.errors import AutofusionError
from autofusion.frontend import import_onnx
from autofusion.interpreter import run_module
from autofusion.lowering.c.testing import build_and_run, compile_onnx, onnxruntime_outputs
from autofusion.testing import assert_close


def _model(
    inputs: list[tuple[str, int, list[int]]],
    outputs: list[str],
    opset: int = 23,
    **attrs: object,
) -> onnx.ModelProto:
    names = [n for n, _, _ in inputs]
    node = h.make_node("Attention", names, outputs, name="attn", **attrs)
    graph = h.make_graph(
        [node],
        "g",
        [h.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [h.make_tensor_value_info(o, T.FLOAT, None) for o in outputs if o],
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])


def _feeds(model: onnx.ModelProto, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for vi in model.graph.input:
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        if vi.type.tensor_type.elem_type == T.BOOL:
            feeds[vi.name] = rng.random(shape) < 0.7
        else:
            feeds[vi.name] = rng.uniform(-1.0, 1.0, shape).astype(np.float32)
    return feeds


def _gqa_cache() -> onnx.ModelProto:
    # batch 2, 4 q heads sharing 2 kv heads, head size 3; 2 cached + 3 new kv positions.
    return _model(
        [
            ("Q", T.FLOAT, [2, 3, 12]),
            ("K", T.FLOAT, [2, 3, 6]),
            ("V", T.FLOAT, [2, 3, 8]),
            ("mask", T.FLOAT, [3, 5]),
            ("past_k", T.FLOAT, [2, 2, 2, 3]),
            ("past_v", T.FLOAT, [2, 2, 2, 4]),
        ],
        ["Y", "present_k", "present_v"],
        q_num_heads=4,
        kv_num_heads=2,
        is_causal=1,
    )


def _bool_softcap() -> onnx.ModelProto:
    # 4-D, a bool mask broadcast over heads, softcap, an explicit scale.
    return _model(
        [
            ("Q", T.FLOAT, [2, 2, 4, 5]),
            ("K", T.FLOAT, [2, 2, 6, 5]),
            ("V", T.FLOAT, [2, 2, 6, 3]),
            ("mask", T.BOOL, [2, 1, 4, 6]),
        ],
        ["Y", "", "", "qk"],
        opset=24,
        softcap=2.0,
        scale=0.7,
        qk_matmul_output_mode=3,
    )


CONFIGS = {"gqa_cache": _gqa_cache, "bool_softcap": _bool_softcap}


@pytest.mark.parametrize("cfg", sorted(CONFIGS))
def test_attention_matches_onnxruntime(cfg: str, tmp_path) -> None:
    model = CONFIGS[cfg]()
    feeds = _feeds(model, seed=len(cfg))
    if cfg == "bool_softcap":
        feeds["mask"][1, 0, 2, :] = False  # one fully-masked row: zero probabilities
    ref = onnxruntime_outputs(model, feeds)
    assert all(0.05 < float(np.abs(r).max()) < 10 for r in ref.values())
    got = run_module(import_onnx(model, progress=False), feeds)
    got_c = build_and_run(compile_onnx(model), feeds, tmp_path)
    for name, r in ref.items():
        assert_close(got[name], r, f"{cfg} interpreter {name}")
        assert_close(got_c[name], r, f"{cfg} C {name}")
    if cfg == "bool_softcap":
        assert np.all(got["qk"][1, :, 2, :] == 0)


def test_attention_refusals_name_the_node() -> None:
    nonpad = _model(
        [
            ("Q", T.FLOAT, [1, 2, 4, 5]),
            ("K", T.FLOAT, [1, 2, 6, 5]),
            ("V", T.FLOAT, [1, 2, 6, 3]),
            ("", T.FLOAT, [1]),
            ("", T.FLOAT, [1]),
            ("", T.FLOAT, [1]),
            ("lens", T.INT64, [1]),
        ],
        ["Y"],
        opset=24,
    )
    del nonpad.graph.input[3:6]
    with pytest.raises(AutofusionError, match=r"node 'attn' \(Attention\).*nonpad_kv_seqlen"):
        import_onnx(nonpad, progress=False)
    no_heads = _model(
        [("Q", T.FLOAT, [1, 4, 6]), ("K", T.FLOAT, [1, 4, 6]), ("V", T.FLOAT, [1, 4, 6])],
        ["Y"],
    )
    with pytest.raises(AutofusionError, match=r"node 'attn' \(Attention\).*q_num_heads"):
        import_onnx(no_heads, progress=False)
    wide_mask = _model(
        [
            ("Q", T.FLOAT, [1, 2, 4, 5]),
            ("K", T.FLOAT, [1, 2, 6, 5]),
            ("V", T.FLOAT, [1, 2, 6, 3]),
            ("mask", T.BOOL, [3, 1, 4, 6]),
        ],
        ["Y"],
    )
    with pytest.raises(AutofusionError, match=r"node 'attn' \(Attention\).*does not broadcast"):
        import_onnx(wide_mask, progress=False)


# Opset 25's sliding window, against onnx's reference evaluator (onnxruntime may predate it):
# (is_causal, left_window_size, right_window_size, with a 2-position kv cache and a float mask).
WINDOWS = {
    "left1_causal_cache": (1, 1, -1, True),
    "left2_right1_mask": (0, 2, 1, False),
    "right0_only": (0, -1, 0, False),
}


@pytest.mark.parametrize("cfg", sorted(WINDOWS))
def test_attention_sliding_window_matches_reference(cfg: str, tmp_path) -> None:
    from onnx.reference import ReferenceEvaluator

    causal, left, right, cache = WINDOWS[cfg]
    inputs = [
        ("Q", T.FLOAT, [1, 2, 4, 3]),
        ("K", T.FLOAT, [1, 2, 4, 3]),
        ("V", T.FLOAT, [1, 2, 4, 3]),
        ("mask", T.FLOAT, [4, 6 if cache else 4]),
    ]
    outputs = ["Y"]
    if cache:
        inputs += [("past_k", T.FLOAT, [1, 2, 2, 3]), ("past_v", T.FLOAT, [1, 2, 2, 3])]
        outputs += ["pk", "pv"]
    model = _model(
        inputs,
        outputs,
        opset=25,
        is_causal=causal,
        left_window_size=left,
        right_window_size=right,
    )
    feeds = _feeds(model, seed=len(cfg))
    ref = dict(zip(outputs, ReferenceEvaluator(model).run(None, feeds), strict=True))
    assert all(0.1 < float(np.abs(r).max()) < 10 for r in ref.values())
    # The window changes the result: the same model without it differs.
    plain = _model(inputs, outputs, opset=25, is_causal=causal)
    plain_y = ReferenceEvaluator(plain).run(None, feeds)[0]
    assert float(np.abs(plain_y - ref["Y"]).max()) > 1e-2
    got = run_module(import_onnx(model, progress=False), feeds)
    got_c = build_and_run(compile_onnx(model), feeds, tmp_path)
    for name, r in ref.items():
        assert_close(got[name], r, f"{cfg} interpreter {name}")
        assert_close(got_c[name], r, f"{cfg} C {name}")
