"""LSTM, GRU and RNN (import-time unrolled) against onnxruntime, in the interpreter and in C;
the refusals of unsupported attribute combinations."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from hostile import assert_clean_api_error
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from autofusion.frontend import import_onnx
from autofusion.interpreter import run_module
from autofusion.lowering.c.testing import build_and_run, onnxruntime_outputs
from autofusion.testing import assert_close

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def _weights(rng, op: str, n_dirs: int, n_in: int, hidden: int, tag: str, peep: bool):
    g = GATES[op] * hidden
    s = 1.0 / np.sqrt(hidden)
    ws = {
        f"W{tag}": rng.uniform(-s, s, (n_dirs, g, n_in)),
        f"R{tag}": rng.uniform(-s, s, (n_dirs, g, hidden)),
        f"B{tag}": rng.uniform(-s, s, (n_dirs, 2 * g)),
    }
    if peep:
        ws[f"P{tag}"] = rng.uniform(-s, s, (n_dirs, 3 * hidden))
    return [numpy_helper.from_array(v.astype(np.float32), k) for k, v in ws.items()]


def _model(nodes, inputs, outputs, inits) -> onnx.ModelProto:
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info(n, T.FLOAT, s) for n, s in inputs],
        [h.make_tensor_value_info(n, T.FLOAT, None) for n in outputs],
        initializer=inits,
    )
    return h.make_model(g, opset_imports=[h.make_opsetid("", 21)])


def _single(
    op: str,
    *,
    seq=4,
    batch=3,
    n_in=5,
    hidden=4,
    direction="forward",
    layout=0,
    states=False,
    lens=None,
    peep=False,
    **attrs,
) -> tuple[onnx.ModelProto, dict]:
    rng = np.random.default_rng(7)
    n_dirs = 2 if direction == "bidirectional" else 1
    inits = _weights(rng, op, n_dirs, n_in, hidden, "", peep)
    xs = [seq, batch, n_in] if layout == 0 else [batch, seq, n_in]
    hs = [n_dirs, batch, hidden] if layout == 0 else [batch, n_dirs, hidden]
    feeds = {"X": rng.uniform(-2, 2, xs).astype(np.float32)}
    ins = ["X", "W", "R", "B", "", "", "", ""]
    if lens is not None:
        inits.append(numpy_helper.from_array(np.array(lens, np.int32), "L"))
        ins[4] = "L"
    if states:
        for k, name in ((5, "H0"), (6, "C0")):
            if name == "C0" and op != "LSTM":
                continue
            feeds[name] = rng.uniform(-1, 1, hs).astype(np.float32)
            ins[k] = name
    if peep:
        ins[7] = "P"
    outs = ["Y", "Y_h", "Y_c"] if op == "LSTM" else ["Y", "Y_h"]
    node = h.make_node(op, ins[: 8 if op == "LSTM" else 6], outs, hidden_size=hidden,
                       direction=direction, layout=layout, **attrs)  # fmt: skip
    m = _model([node], [(k, list(v.shape)) for k, v in feeds.items()], outs, inits)
    return m, feeds


def _check(m: onnx.ModelProto, feeds: dict, tmp_path: Path, ref: dict | None = None) -> None:
    ref = onnxruntime_outputs(m, feeds) if ref is None else ref
    got_i = run_module(import_onnx(m, progress=False), feeds)
    got_c = build_and_run(import_onnx(m, progress=False), feeds, tmp_path)
    for name, r in ref.items():
        assert 0.1 < float(np.abs(r).max()) < 10, (name, np.abs(r).max())
        assert_close(got_i[name], r, f"interpreter {name}")
        assert_close(got_c[name], r, f"C {name}")


CASES = {
    "lstm_bidir_layout1_states_peepholes": dict(
        op="LSTM", direction="bidirectional", layout=1, states=True, peep=True
    ),
    "lstm_reverse_clip_input_forget": dict(
        op="LSTM", direction="reverse", clip=0.7, input_forget=1
    ),
    "lstm_forward_short_lengths": dict(op="LSTM", lens=[4, 2, 1], states=True),
    "lstm_activations": dict(
        op="LSTM",
        activations=["HardSigmoid", "LeakyRelu", "Softsign"],
        activation_alpha=[0.3, 0.2],
        activation_beta=[0.45],
    ),
    "gru_bidir_linear_before_reset": dict(
        op="GRU", direction="bidirectional", linear_before_reset=1
    ),
    "gru_reverse_layout1_states": dict(op="GRU", direction="reverse", layout=1, states=True),
    "gru_forward_lbr_states_clip": dict(op="GRU", linear_before_reset=1, states=True, clip=1.5),
    "rnn_bidir_activations": dict(
        op="RNN",
        direction="bidirectional",
        activations=["Relu", "ScaledTanh"],
        activation_alpha=[1.3],
        activation_beta=[0.8],
        states=True,
    ),
    "rnn_layout1_short_lengths": dict(op="RNN", layout=1, lens=[3, 4, 2]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_recurrent_matches_onnxruntime(case: str, tmp_path: Path) -> None:
    kw = dict(CASES[case])
    op = str(kw.pop("op"))
    m, feeds = _single(op, **kw)
    ref = None
    if kw.get("layout") == 1:
        # onnxruntime refuses layout 1: its reference is the layout-0 model on transposed data.
        m0, _ = _single(op, **{**kw, "layout": 0})
        feeds0 = {k: np.ascontiguousarray(np.swapaxes(v, 0, 1)) for k, v in feeds.items()}
        ref0 = onnxruntime_outputs(m0, feeds0)
        ref = {k: np.ascontiguousarray(np.moveaxis(v, 2, 0) if k == "Y" else np.swapaxes(v, 0, 1))
               for k, v in ref0.items()}  # fmt: skip
    _check(m, feeds, tmp_path, ref)


def _stacked_lstm(batch: int) -> tuple[onnx.ModelProto, dict]:
    """Two bidirectional LSTM layers as torch exports them: Y [seq, 2, batch, H] of the first
    becomes [seq, batch, 2H] through Transpose + Reshape, then feeds the second."""
    rng = np.random.default_rng(11)
    seq, n_in, hidden = 5, 3, 4
    inits = _weights(rng, "LSTM", 2, n_in, hidden, "0", False)
    inits += _weights(rng, "LSTM", 2, 2 * hidden, hidden, "1", False)
    inits.append(numpy_helper.from_array(np.array([seq, batch, 2 * hidden], np.int64), "shape"))
    nodes = [
        h.make_node(
            "LSTM",
            ["X", "W0", "R0", "B0"],
            ["Y0", "H0", "C0"],
            hidden_size=hidden,
            direction="bidirectional",
        ),
        h.make_node("Transpose", ["Y0"], ["T0"], perm=[0, 2, 1, 3]),
        h.make_node("Reshape", ["T0", "shape"], ["X1"]),
        h.make_node(
            "LSTM",
            ["X1", "W1", "R1", "B1"],
            ["Y", "Y_h", "Y_c"],
            hidden_size=hidden,
            direction="bidirectional",
        ),
    ]
    x = rng.uniform(-2, 2, (seq, batch, n_in)).astype(np.float32)
    return _model(nodes, [("X", [seq, batch, n_in])], ["Y", "Y_h", "Y_c", "H0"], inits), {"X": x}


def test_stacked_bidirectional_lstm_matches_onnxruntime(tmp_path: Path) -> None:
    m, feeds = _stacked_lstm(batch=2)
    _check(m, feeds, tmp_path)


def test_input_projection_is_one_matmul_over_the_sequence() -> None:
    m, _ = _single("GRU", seq=6, direction="bidirectional")
    module = import_onnx(m, progress=False)
    ops = [op for op in module.walk() if op.name == "nn.matmul"]
    shapes = [tuple(op.operands[0].type.get_shape()) for op in ops]  # pyright: ignore
    # one [seq*batch, input] projection for both directions; the rest are [batch, hidden] steps
    assert shapes.count((18, 5)) == 1, shapes
    assert all(s == (3, 4) for s in shapes if s != (18, 5)), shapes


def _refused(m: onnx.ModelProto, *needles: str) -> None:
    from autofusion.errors import AutofusionError

    with pytest.raises(AutofusionError) as e:
        import_onnx(m, progress=False)
    assert_clean_api_error(e, *needles)


def test_runtime_weights_are_refused() -> None:
    m, _ = _single("RNN")
    w = next(i for i in m.graph.initializer if i.name == "W")
    m.graph.input.append(h.make_tensor_value_info("W", T.FLOAT, list(w.dims)))
    m.graph.initializer.remove(w)
    _refused(m, "(RNN)", "W (input 1) must be a constant")


def test_short_lengths_in_reverse_are_refused() -> None:
    m, _ = _single("GRU", direction="reverse", lens=[4, 2, 4])
    _refused(m, "(GRU)", "sequence_lens [4, 2, 4]", "'forward' only")


def test_long_sequence_is_refused() -> None:
    m, _ = _single("LSTM", seq=513, batch=1, n_in=2, hidden=2)
    _refused(m, "(LSTM)", "sequence length 513", "unroll limit of 512")


def test_unknown_activation_is_refused() -> None:
    m, _ = _single("RNN", activations=["ThresholdedRelu"])
    _refused(m, "(RNN)", "attribute 'activations'", "'ThresholdedRelu' is not supported")


def test_wrong_activation_count_is_refused() -> None:
    m, _ = _single("LSTM", direction="bidirectional", activations=["Sigmoid", "Tanh", "Tanh"])
    _refused(m, "(LSTM)", "'activations' has 3 entries", "needs 6")
