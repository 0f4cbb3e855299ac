"""A small ONNX graph builder that names nodes and weights the way ``torch.onnx.export`` does.

Node names are ``<scope>/<OpType>`` (``/layer1/0/conv1/Conv``, a ``_1`` suffix on repeats),
outputs ``<node name>_output_<i>``, weights ``<dotted scope>.weight``. Weights come from one
seeded ``numpy.random.Generator`` in the order the layers are built, so a builder with the
same arguments gives byte-identical models. Arrays are generated vectorised in float32 and
turned into ``TensorProto`` with ``numpy_helper.from_array`` (one buffer copy, no per-element
Python work), which is what keeps the 1.3 GB BERT-large builder fast.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOAT = TensorProto.FLOAT
INT64 = TensorProto.INT64


def dotted(scope: str) -> str:
    """``/layer1/0/conv1`` -> ``layer1.0.conv1`` (torch parameter naming)."""
    return scope.strip("/").replace("/", ".")


class GraphBuilder:
    """Accumulates nodes, initializers and graph inputs/outputs; ``model()`` assembles them."""

    def __init__(self, name: str, seed: int, opset: int = 17) -> None:
        self.name = name
        self.opset = opset
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        # Initializers are written straight into the final proto: a 1.3 GB model must not be
        # copied again by make_graph/make_model.
        self._model = onnx.ModelProto()
        self.initializers = self._model.graph.initializer
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self.metadata: dict[str, str] = {}
        self._used: set[str] = set()
        self._scalars: dict[tuple[str, float], str] = {}

    # ---- names, inputs, weights ---------------------------------------------------------
    def _unique(self, name: str) -> str:
        if name not in self._used:
            self._used.add(name)
            return name
        i = 1
        while f"{name}_{i}" in self._used:
            i += 1
        self._used.add(f"{name}_{i}")
        return f"{name}_{i}"

    def input(self, name: str, shape: Sequence[int | str], elem: int = FLOAT) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, elem, list(shape)))
        return name

    def param(self, name: str, array: np.ndarray) -> str:
        """Add an initializer (a weight or a folded constant)."""
        name = self._unique(name)
        array = np.ascontiguousarray(array)
        t = self.initializers.add()
        t.name = name
        t.dims.extend(array.shape)
        t.data_type = helper.np_dtype_to_tensor_dtype(array.dtype)
        t.raw_data = array.tobytes()
        return name

    def randn(self, name: str, shape: Sequence[int], std: float, mean: float = 0.0) -> str:
        """Random float32 weights with the given mean and std. Drawn uniformly (std/sqrt(3)
        wide each side) from raw generator bits: several times faster than normal samples,
        which matters for the 335 M parameters of BERT-large."""
        n = int(np.prod(shape, dtype=np.int64))
        bits = self.rng.integers(0, 2**32, size=n, dtype=np.uint32)
        bits >>= 9
        bits |= np.uint32(0x3F800000)  # mantissa bits under exponent 0: a float in [1, 2)
        a = bits.view(np.float32)
        a -= np.float32(1.5)
        a *= np.float32(2.0 * math.sqrt(3.0) * std)
        if mean:
            a += np.float32(mean)
        return self.param(name, a.reshape(tuple(shape)))

    def uniform(self, name: str, shape: Sequence[int], lo: float, hi: float) -> str:
        a = self.rng.random(tuple(shape), dtype=np.float32)
        a *= np.float32(hi - lo)
        a += np.float32(lo)
        return self.param(name, a)

    def scalar(self, value: float, dtype: type = np.float32) -> str:
        """A shared scalar initializer (``onnx::Mul_12``-style), created once per value."""
        key = (np.dtype(dtype).name, float(value))
        if key not in self._scalars:
            self._scalars[key] = self.param(
                f"onnx::Const_{len(self._scalars)}", np.array(value, dtype=dtype)
            )
        return self._scalars[key]

    def ints(self, name: str, values: Sequence[int]) -> str:
        return self.param(name, np.array(list(values), dtype=np.int64))

    # ---- nodes ------------------------------------------------------------------------
    def node(
        self, op: str, inputs: Sequence[str], scope: str, n_out: int = 1, **attrs: object
    ) -> str:
        outs = self.node_n(op, inputs, scope, n_out, **attrs)
        return outs[0]

    def node_n(
        self, op: str, inputs: Sequence[str], scope: str, n_out: int, **attrs: Any
    ) -> list[str]:
        name = self._unique(f"{scope}/{op}")
        outs = [f"{name}_output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, list(inputs), outs, name=name, **attrs))
        return outs

    def constant(self, scope: str, array: np.ndarray) -> str:
        """A ``Constant`` node (what the exporter emits for small index/shape values)."""
        name = self._unique(f"{scope}/Constant")
        out = f"{name}_output_0"
        self.nodes.append(
            helper.make_node(
                "Constant", [], [out], name=name, value=numpy_helper.from_array(np.asarray(array))
            )
        )
        return out

    # ---- layers (CNN) -----------------------------------------------------------------
    def conv(
        self,
        x: str,
        cin: int,
        cout: int,
        k: int | Sequence[int],
        scope: str,
        stride: int | Sequence[int] = 1,
        pad: int | Sequence[int] | None = None,
        group: int = 1,
        bias: bool = False,
        dilation: int = 1,
    ) -> str:
        """Conv with He-initialised weights (std = sqrt(2 / fan_in)). ``k`` an int: 2-d, k x k;
        a sequence: one size per spatial dim (``(3, 3, 3)``: 3-d). ``stride`` likewise (an int:
        every dim); ``pad`` an int (every side) or the ONNX ``pads`` list, default ``k // 2``
        times the dilation."""
        ks = [k, k] if isinstance(k, int) else list(k)
        n = len(ks)
        if pad is None:
            pads = [(v // 2) * dilation for v in ks] * 2
        else:
            pads = [pad] * 2 * n if isinstance(pad, int) else list(pad)
        fan_in = (cin // group) * math.prod(ks)
        w = self.randn(
            f"{dotted(scope)}.weight", [cout, cin // group, *ks], math.sqrt(2.0 / fan_in)
        )
        ins = [x, w]
        if bias:
            ins.append(self.randn(f"{dotted(scope)}.bias", [cout], 0.05))
        return self.node(
            "Conv",
            ins,
            scope,
            dilations=[dilation] * n,
            group=group,
            kernel_shape=ks,
            pads=pads,
            strides=[stride] * n if isinstance(stride, int) else list(stride),
        )

    def bn(self, x: str, c: int, scope: str, gamma: float = 1.0) -> str:
        """Inference BatchNormalization with realistic running statistics."""
        d = dotted(scope)
        ins = [
            x,
            self.uniform(f"{d}.weight", [c], 0.8 * gamma, 1.2 * gamma),
            self.randn(f"{d}.bias", [c], 0.05),
            self.randn(f"{d}.running_mean", [c], 0.1),
            self.uniform(f"{d}.running_var", [c], 0.7, 1.3),
        ]
        return self.node("BatchNormalization", ins, scope, epsilon=1e-5, momentum=0.9)

    def relu(self, x: str, scope: str) -> str:
        return self.node("Relu", [x], scope)

    def clip(self, x: str, scope: str, lo: float = 0.0, hi: float = 6.0) -> str:
        if self.opset < 11:
            return self.node("Clip", [x], scope, min=lo, max=hi)
        return self.node("Clip", [x, self.scalar(lo), self.scalar(hi)], scope)

    def conv_bn(
        self,
        x: str,
        cin: int,
        cout: int,
        k: int | Sequence[int],
        scope: str,
        act: str | None = "relu",
        gamma: float = 1.0,
        **kw: Any,
    ) -> str:
        """Conv(bias=False) -> BatchNormalization -> activation (relu, relu6 or none)."""
        parent, _, last = scope.rpartition("/")
        bn_scope = f"{parent}/{last.replace('conv', 'bn')}" if "conv" in last else scope + "/bn"
        y = self.bn(self.conv(x, cin, cout, k, scope, **kw), cout, bn_scope, gamma=gamma)
        if act == "relu":
            y = self.relu(y, f"{parent}/relu")
        elif act == "relu6":
            y = self.clip(y, f"{parent}/relu6")
        return y

    def maxpool(self, x: str, k: int, s: int, p: int, scope: str, rank: int = 2, **kw: Any) -> str:
        """MaxPool, ``k`` x ``k`` (``rank`` spatial dims); ``kw``: more attributes."""
        return self.node(
            "MaxPool", [x], scope, kernel_shape=[k] * rank, pads=[p] * 2 * rank,
            strides=[s] * rank, **kw,
        )  # fmt: skip

    def avgpool(
        self, x: str, k: int, s: int, p: int, scope: str, count_include_pad: int = 0
    ) -> str:
        return self.node(
            "AveragePool",
            [x],
            scope,
            kernel_shape=[k, k],
            pads=[p] * 4,
            strides=[s, s],
            count_include_pad=count_include_pad,
        )

    def gemm(self, x: str, cin: int, cout: int, scope: str) -> str:
        """torch ``nn.Linear`` on a 2-D input: Gemm with transB=1."""
        d = dotted(scope)
        w = self.randn(f"{d}.weight", [cout, cin], 1.0 / math.sqrt(cin))
        b = self.randn(f"{d}.bias", [cout], 0.05)
        return self.node("Gemm", [x, w, b], scope, alpha=1.0, beta=1.0, transB=1)

    def classifier_head(self, x: str, cin: int, classes: int, scope: str = "/fc") -> str:
        """GlobalAveragePool -> Flatten -> Gemm."""
        g = self.node("GlobalAveragePool", [x], "")
        f = self.node("Flatten", [g], "", axis=1)
        return self.gemm(f, cin, classes, scope)

    # ---- layers (transformer) -----------------------------------------------------------
    def linear(self, x: str, cin: int, cout: int, scope: str, bias: bool = True) -> str:
        """torch ``nn.Linear`` on a 3-D input: MatMul by the transposed weight, then Add."""
        w = self.randn(f"onnx::MatMul_{dotted(scope)}", [cin, cout], 1.0 / math.sqrt(cin))
        y = self.node("MatMul", [x, w], scope)
        if bias:
            y = self.node("Add", [self.randn(f"{dotted(scope)}.bias", [cout], 0.02), y], scope)
        return y

    def ln_params(self, c: int, scope: str) -> tuple[str, str]:
        d = dotted(scope)
        return (self.randn(f"{d}.weight", [c], 0.05, mean=1.0), self.randn(f"{d}.bias", [c], 0.02))

    def layer_norm_decomposed(self, x: str, c: int, scope: str, eps: float = 1e-12) -> str:
        """LayerNorm as opset < 17 exporters emit it: ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/
        Div/Mul/Add over the last axis (ReduceMean with an ``axes`` attribute: opset <= 17)."""
        g, b = self.ln_params(c, scope)
        mean = self.node("ReduceMean", [x], scope, axes=[-1], keepdims=1)
        d = self.node("Sub", [x, mean], scope)
        p = self.node("Pow", [d, self.scalar(2.0)], scope)
        var = self.node("ReduceMean", [p], scope, axes=[-1], keepdims=1)
        v = self.node("Add", [var, self.scalar(eps)], scope)
        s = self.node("Sqrt", [v], scope)
        n = self.node("Div", [d, s], scope)
        m = self.node("Mul", [n, g], scope)
        return self.node("Add", [m, b], scope)

    def layer_norm(self, x: str, c: int, scope: str, eps: float = 1e-5) -> str:
        """The single LayerNormalization op (opset 17)."""
        g, b = self.ln_params(c, scope)
        return self.node("LayerNormalization", [x, g, b], scope, axis=-1, epsilon=eps)

    def gelu_erf(self, x: str, scope: str) -> str:
        """x * 0.5 * (1 + erf(x / sqrt 2)), as torch exports ``nn.GELU()``."""
        d = self.node("Div", [x, self.scalar(math.sqrt(2.0))], scope)
        e = self.node("Erf", [d], scope)
        a = self.node("Add", [e, self.scalar(1.0)], scope)
        m = self.node("Mul", [x, a], scope)
        return self.node("Mul", [m, self.scalar(0.5)], scope)

    def gelu_tanh(self, x: str, scope: str) -> str:
        """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))."""
        p = self.node("Pow", [x, self.scalar(3.0)], scope)
        c = self.node("Mul", [p, self.scalar(0.044715)], scope)
        s = self.node("Add", [x, c], scope)
        k = self.node("Mul", [s, self.scalar(math.sqrt(2.0 / math.pi))], scope)
        t = self.node("Tanh", [k], scope)
        a = self.node("Add", [t, self.scalar(1.0)], scope)
        h = self.node("Mul", [x, self.scalar(0.5)], scope)
        return self.node("Mul", [h, a], scope)

    def reshape(self, x: str, shape: Sequence[int], scope: str) -> str:
        return self.node("Reshape", [x, self.constant(scope, np.array(shape, np.int64))], scope)

    def transpose(self, x: str, perm: Sequence[int], scope: str) -> str:
        return self.node("Transpose", [x], scope, perm=list(perm))

    # ---- assembly -----------------------------------------------------------------------
    def output(self, value: str, name: str, shape: Sequence[int | str], elem: int = FLOAT) -> str:
        """Make ``value`` a graph output called ``name`` (renaming the producer's output);
        returns ``name``, the value's new name."""
        for n in self.nodes:
            for i, o in enumerate(n.output):
                if o == value:
                    n.output[i] = name
            for i, o in enumerate(n.input):
                if o == value:
                    n.input[i] = name
        self.outputs.append(helper.make_tensor_value_info(name, elem, list(shape)))
        return name

    def model(
        self, doc: str, ir_version: int | None = None, inputs_include_initializers: bool = False
    ) -> onnx.ModelProto:
        """Assemble the ModelProto (call once: the builder's initializers move into it)."""
        model = self._model
        graph = model.graph
        graph.name = self.name
        graph.node.extend(self.nodes)
        graph.input.extend(self.inputs)
        if inputs_include_initializers:
            graph.input.extend(
                helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                for t in self.initializers
            )
        graph.output.extend(self.outputs)
        model.opset_import.append(helper.make_opsetid("", self.opset))
        model.producer_name = "autofusion.zoo"
        model.producer_version = "1"
        model.doc_string = doc
        # Default: the IR version onnx pairs with the opset, not the newest one, so that older
        # runtimes still load the model.
        model.ir_version = ir_version if ir_version is not None else (8 if self.opset <= 17 else 9)
        helper.set_model_props(model, {"autofusion.zoo.name": self.name, **self.metadata})
        return model
