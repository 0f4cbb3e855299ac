"""Random valid ONNX graphs for differential fuzzing of autofusion against onnxruntime.

``cases()`` is a hypothesis strategy of :class:`FuzzCase` (a ``ModelProto`` plus the seed of
its feeds). It is built from ``st.composite`` draws only (every shape, op, attribute and
constant weight is a draw), so hypothesis shrinks a failing graph to a minimal one.
``check_case`` compiles a case with fusion on and off, runs it on seeded inputs and compares
every output with onnxruntime at the project's bar; ``write_reproducer`` turns a failing
case into a folder (``model.onnx``, ``feeds.npz``, ``repro.py``) and a one-line command.

Values stay of ordinary size so a wrong result is visible: inputs are U(-2, 2) (int64 in
[-5, 5]); every value carries a bound on its magnitude and ops that would exceed
``_MAX_BOUND`` are not drawn; Log/Sqrt/Reciprocal/Div/Pow see ``|x| + 0.5`` only.
Discontinuous ops (Floor, Ceil, Round, Sign, comparisons, ArgMax, float Mod, float->int
casts) see only *exact* values: inputs, constants and results of ops that round once or not
at all, so the reference and autofusion agree bit for bit on them.

Used by ``test/python/test_fuzz_differential.py`` (bounded, seeded) and
``benchmarks/fuzz.py --fuzz-minutes N`` (long runs). ``python test/python/fuzz_graphs.py
DIR`` re-runs a written reproducer.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

# ---------------------------------------------------------------------------------------
# Switches that steer the generator away from a pattern while a bug in it is open (set one
# to True to keep the CI fuzz test green until the fix lands). All three bugs below are
# fixed, each with its own regression test, so every switch is off and the patterns fuzzed.
# ---------------------------------------------------------------------------------------
# (a) a graph output that is a Reshape/Flatten/Squeeze/Unsqueeze view and also feeds
#     another node is clobbered.
KNOWN_BUG_VIEW_OUTPUTS = False
# (c) small constant MatMul/Gemm weights (x[2,4] @ W[4,3]) fail to build with
#     -Werror=array-bounds in afrt.h: while True, constant weights get at least
#     ``_SAFE_WEIGHT_DIM`` rows and columns.
KNOWN_BUG_SMALL_CONST_WEIGHTS = False
# (d) zero-sized dimensions fail to compile: while True, every dimension is >= 1.
KNOWN_BUG_ZERO_DIMS = False
# (b) Gather with out-of-range indices is unchecked; the generator only ever makes in-range
#     indices (negative ones included), which must work whether or not that is fixed.

OPSET = 17
_MAX_BOUND = 50.0
_SAFE_WEIGHT_DIM = 8

F, I, B = "f", "i", "b"  # float32, int64, bool  # noqa: E741 - the three dtype tags
_ELEM = {F: TensorProto.FLOAT, I: TensorProto.INT64, B: TensorProto.BOOL}
_NP = {F: np.float32, I: np.int64, B: np.bool_}


@dataclasses.dataclass
class Val:
    """One ONNX value of the graph being built."""

    name: str
    shape: tuple[int, ...]
    kind: str  # F, I or B
    bound: float = 2.0  # |value| <= bound
    exact: bool = True  # computed without rounding-order freedom
    view: bool = False  # the result of a Reshape/Flatten/Squeeze/Unsqueeze
    origin: str = "node"  # "input", "init", "constant" or "node"
    folded: bool = False  # an import-time constant (computed from constants only)


@dataclasses.dataclass
class InputSpec:
    """How ``feeds`` fills one graph input: uniform floats, integers in [lo, hi], bools."""

    name: str
    shape: tuple[int, ...]
    kind: str
    lo: float = -2.0
    hi: float = 2.0


@dataclasses.dataclass
class FuzzCase:
    model: onnx.ModelProto
    inputs: list[InputSpec]
    feed_seed: int
    parts: int = 1  # independent random graphs in the model

    def feeds(self) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(self.feed_seed)
        out: dict[str, np.ndarray] = {}
        for s in self.inputs:
            if s.kind == F:
                out[s.name] = rng.uniform(s.lo, s.hi, s.shape).astype(np.float32)
            elif s.kind == I:
                out[s.name] = rng.integers(int(s.lo), int(s.hi) + 1, s.shape).astype(np.int64)
            else:
                out[s.name] = rng.integers(0, 2, s.shape).astype(np.bool_)
        return out


# ---------------------------------------------------------------------------------------
# The graph builder
# ---------------------------------------------------------------------------------------


class _Builder:
    """Accumulates nodes, initializers and inputs; hands out fresh names."""

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any]) -> None:
        self.draw = draw
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.inputs: list[InputSpec] = []
        self.vals: list[Val] = []
        self.uses: dict[str, int] = {}
        self.n = 0

    def fresh(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def add_input(
        self,
        shape: tuple[int, ...],
        kind: str,
        lo: float = -2.0,
        hi: float = 2.0,
        pool: bool = True,
    ) -> Val:
        name = self.fresh({F: "x", I: "n", B: "m"}[kind])
        self.inputs.append(InputSpec(name, shape, kind, lo, hi))
        bound = max(abs(lo), abs(hi)) if kind != B else 1.0
        v = Val(name, shape, kind, bound=bound, origin="input")
        if pool:
            self.vals.append(v)
        return v

    def const(self, arr: np.ndarray, pool: bool = False, as_node: bool = False) -> Val:
        kind = {np.dtype(np.float32): F, np.dtype(np.int64): I, np.dtype(np.bool_): B}[arr.dtype]
        bound = float(np.abs(arr.astype(np.float64)).max()) if arr.size else 0.0
        if as_node:
            name = self.fresh("k")
            self.nodes.append(
                helper.make_node(
                    "Constant",
                    [],
                    [name],
                    name=f"const_{name}",
                    value=numpy_helper.from_array(arr, name),
                )
            )
            origin = "constant"
        else:
            name = self.fresh("w")
            self.inits.append(numpy_helper.from_array(arr, name))
            origin = "init"
        v = Val(name, tuple(arr.shape), kind, bound=max(bound, 1e-3), origin=origin, folded=True)
        if pool:
            self.vals.append(v)
        return v

    def node(
        self,
        op: str,
        ins: Sequence[Val | str],
        shape: tuple[int, ...],
        kind: str,
        bound: float,
        exact: bool,
        view: bool = False,
        **attrs: Any,
    ) -> Val:
        names = [i if isinstance(i, str) else i.name for i in ins]
        for n in names:
            self.uses[n] = self.uses.get(n, 0) + 1
        out = self.fresh("t")
        self.nodes.append(helper.make_node(op, names, [out], name=f"{op.lower()}_{out}", **attrs))
        folded = all(self._folded(n) for n in names)
        v = Val(out, tuple(shape), kind, bound=bound, exact=exact, view=view, folded=folded)
        self.vals.append(v)
        return v

    def _folded(self, name: str) -> bool:
        if any(t.name == name for t in self.inits):
            return True
        return any(v.name == name and v.folded for v in self.vals)

    def const_input(self, arr: np.ndarray) -> str:
        """A constant operand (shape, axes, indices, ...): an initializer."""
        return self.const(arr).name

    def floats(self, shape: tuple[int, ...], lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
        """Small constant weights drawn element by element (they shrink towards 0)."""
        n = int(np.prod(shape)) if shape else 1
        # quarter steps: exact in float32, and a shrunk weight is a readable number
        steps = self.draw(st.lists(st.integers(int(lo * 4), int(hi * 4)), min_size=n, max_size=n))
        return (np.array(steps, dtype=np.float32) / 4).reshape(shape)

    def pick(self, pred: Callable[[Val], bool]) -> Val | None:
        cands = [v for v in self.vals if pred(v)]
        if not cands:
            return None
        return cands[self.draw(st.integers(0, len(cands) - 1))]


def _dims(min_size: int = 1) -> st.SearchStrategy[int]:
    lo = min_size if KNOWN_BUG_ZERO_DIMS else min(min_size, 0)
    return st.integers(lo, 4)


def _shape(draw: Callable[..., Any], min_rank: int = 1, max_rank: int = 4) -> tuple[int, ...]:
    rank = draw(st.integers(min_rank, max_rank))
    return tuple(draw(st.lists(_dims(), min_size=rank, max_size=rank)))


def _numel(shape: Sequence[int]) -> int:
    return int(np.prod(shape)) if shape else 1


def _bcast_shape(draw: Callable[..., Any], shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape broadcastable to ``shape``: a suffix with some dims set to 1."""
    drop = draw(st.integers(0, len(shape)))
    sub = list(shape[drop:])
    for i in range(len(sub)):
        if draw(st.booleans()):
            sub[i] = 1
    return tuple(sub)


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(a, b))


# ---------------------------------------------------------------------------------------
# Op families. Each takes the builder and returns True if it added something.
# ---------------------------------------------------------------------------------------

_UNARY_SMOOTH = [
    "Relu",
    "Sigmoid",
    "Tanh",
    "Erf",
    "Neg",
    "Abs",
    "Softplus",
    "HardSwish",
    "HardSigmoid",
    "LeakyRelu",
    "Elu",
    "Sin",
    "Cos",
]
_UNARY_EXACT_ONLY = ["Floor", "Ceil", "Round", "Sign"]


def _unary(b: _Builder) -> bool:
    x = b.pick(lambda v: v.kind == F)
    if x is None:
        return False
    ops = [*_UNARY_SMOOTH, "Exp", "Log", "Sqrt", "Reciprocal"]
    if x.exact:
        ops += _UNARY_EXACT_ONLY
    op = b.draw(st.sampled_from(ops))
    exact = x.exact and op in ("Relu", "Neg", "Abs", "Floor", "Ceil", "Round", "Sign")
    if op in ("Log", "Sqrt", "Reciprocal"):
        # keep the domain: op(|x| + 0.5)
        a = b.node("Abs", [x], x.shape, F, x.bound, x.exact)
        half = b.const_input(np.array(0.5, np.float32))
        pos = b.node("Add", [a, half], x.shape, F, x.bound + 0.5, x.exact)
        bound = {
            "Log": max(math.log(x.bound + 0.5), 0.7),
            "Sqrt": math.sqrt(x.bound + 0.5),
            "Reciprocal": 2.0,
        }[op]
        b.node(op, [pos], x.shape, F, bound, False)
        return True
    if op == "Exp" and x.bound > 3.5:
        op = "Tanh"
    bound = {
        "Exp": math.exp(x.bound),
        "Sigmoid": 1.0,
        "Tanh": 1.0,
        "Erf": 1.0,
        "HardSigmoid": 1.0,
        "Sign": 1.0,
        "Sin": 1.0,
        "Cos": 1.0,
        "Round": x.bound + 1,
        "Floor": x.bound + 1,
        "Ceil": x.bound + 1,
    }.get(op, x.bound + 1)
    attrs: dict[str, Any] = {}
    if op in ("LeakyRelu", "Elu") and b.draw(st.booleans()):
        attrs["alpha"] = b.draw(st.sampled_from([0.1, 0.5, 2.0]))
    b.node(op, [x], x.shape, F, bound, exact, **attrs)
    return True


def _binary(b: _Builder) -> bool:
    x = b.pick(lambda v: v.kind in (F, I))
    if x is None:
        return False
    kind = x.kind
    # the other operand: another value whose shape broadcasts with x, or a new one
    choice = b.draw(st.sampled_from(["pool", "const", "input"]))
    y = None
    if choice == "pool":
        y = b.pick(lambda v: v.kind == kind and _broadcastable(v.shape, x.shape))
    if y is None:
        shape = _bcast_shape(b.draw, x.shape)
        if b.draw(st.booleans()):
            shape = shape[::-1] if _broadcastable(shape[::-1], x.shape) else shape
        if choice == "input":
            y = b.add_input(shape, kind, *((-5, 5) if kind == I else (-2, 2)))
        elif kind == F:
            y = b.const(b.floats(shape))
        else:
            y = b.const(
                np.array(
                    b.draw(
                        st.lists(st.integers(-5, 5), min_size=_numel(shape), max_size=_numel(shape))
                    ),
                    np.int64,
                ).reshape(shape)
            )
    if b.draw(st.booleans()):
        x, y = y, x
    shape = _broadcast(x.shape, y.shape)
    ops = ["Add", "Sub", "Mul", "Max", "Min", "Div"]
    if kind == F:
        ops += ["Pow"]
        if x.exact and y.exact:
            ops += ["Mod"]
    else:
        ops += ["Mod"]
    op = b.draw(st.sampled_from(ops))
    if op in ("Div", "Mod", "Pow"):
        # a denominator/base away from 0: |y| + 0.5 (float) or |y| + 1 (int)
        a = b.node("Abs", [y], y.shape, kind, y.bound, y.exact)
        c = b.const_input(np.array(0.5 if kind == F else 1, _NP[kind]))
        y = b.node("Add", [a, c], y.shape, kind, y.bound + 1, y.exact)
    exact = x.exact and y.exact and (kind == I or op in ("Add", "Sub", "Max", "Min", "Mod"))
    attrs: dict[str, Any] = {}
    if op == "Pow":
        # base |x| + 0.5 raised to a small constant power
        a = b.node("Abs", [x], x.shape, F, x.bound, x.exact)
        c = b.const_input(np.array(0.5, np.float32))
        base = b.node("Add", [a, c], x.shape, F, x.bound + 0.5, x.exact)
        e = b.draw(st.sampled_from([2.0, 0.5, 3.0, -1.0]))
        bound = (x.bound + 0.5) ** e if e > 0 else 2.0
        if bound > _MAX_BOUND:
            e, bound = 0.5, math.sqrt(x.bound + 0.5)
        b.node("Pow", [base, b.const_input(np.array(e, np.float32))], x.shape, F, bound, False)
        return True
    if op == "Mod" and kind == F:
        attrs["fmod"] = 1
    elif op == "Mod":
        attrs["fmod"] = b.draw(st.sampled_from([0, 1]))
    if op == "Mul":
        bound = x.bound * y.bound
    elif op == "Div":
        bound = x.bound * (1.0 if kind == I else 2.0)
    elif op == "Mod":
        bound = y.bound
    else:
        bound = x.bound + y.bound
    if bound > _MAX_BOUND:
        op, bound, exact = "Max", max(x.bound, y.bound), x.exact and y.exact
        attrs = {}
    b.node(op, [x, y], shape, kind, bound, exact, **attrs)
    return True


def _broadcastable(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    try:
        return _broadcast(a, b) == tuple(b)
    except ValueError:
        return False


def _compare_where(b: _Builder) -> bool:
    x = b.pick(lambda v: v.kind in (F, I) and v.exact)
    if x is None:
        return False
    y = b.pick(lambda v: v.kind == x.kind and v.exact and _broadcastable(v.shape, x.shape))
    if y is None or y is x or b.draw(st.booleans()):
        shape = _bcast_shape(b.draw, x.shape)
        arr = (
            b.floats(shape)
            if x.kind == F
            else np.array(
                b.draw(
                    st.lists(st.integers(-3, 3), min_size=_numel(shape), max_size=_numel(shape))
                ),
                np.int64,
            ).reshape(shape)
        )
        y = b.const(arr)
    op = b.draw(st.sampled_from(["Greater", "Less", "Equal", "GreaterOrEqual", "LessOrEqual"]))
    cond = b.node(op, [x, y], x.shape, B, 1.0, True)
    other = b.pick(lambda v: v.kind == B and v is not cond and _broadcastable(v.shape, x.shape))
    if other is not None and b.draw(st.booleans()):
        op2 = b.draw(st.sampled_from(["And", "Or", "Xor"]))
        cond = b.node(op2, [cond, other], x.shape, B, 1.0, True)
    if b.draw(st.booleans()):
        cond = b.node("Not", [cond], x.shape, B, 1.0, True)
    what = b.draw(st.sampled_from(["where", "cast", "keep"]))
    if what == "where":
        t = b.pick(lambda v: v.kind in (F, I) and _broadcastable(v.shape, x.shape))
        if t is None:
            return True
        e = b.pick(lambda v: v.kind == t.kind and _broadcastable(v.shape, x.shape))
        assert e is not None  # t itself qualifies
        b.node("Where", [cond, t, e], x.shape, t.kind, max(t.bound, e.bound), t.exact and e.exact)
    elif what == "cast":
        to = b.draw(st.sampled_from([F, I]))
        b.node("Cast", [cond], x.shape, to, 1.0, True, to=_ELEM[to])
    return True


def _cast(b: _Builder) -> bool:
    x = b.pick(lambda v: v.kind in (F, I, B))
    if x is None:
        return False
    if x.kind == F:
        if not x.exact:
            return False
        to = b.draw(st.sampled_from([I, B]))
    elif x.kind == I:
        to = b.draw(st.sampled_from([F, B]))
    else:
        to = b.draw(st.sampled_from([F, I]))
    b.node("Cast", [x], x.shape, to, x.bound if to != B else 1.0, True, to=_ELEM[to])
    return True


def _matmul(b: _Builder) -> bool:
    x = b.pick(lambda v: v.kind == F and len(v.shape) >= 1)
    if x is None:
        return False
    k = x.shape[-1]
    op = b.draw(st.sampled_from(["MatMul", "Gemm"])) if len(x.shape) == 2 else "MatMul"
    weights = b.draw(st.sampled_from(["const", "input", "pool"]))
    n = b.draw(_dims())
    if weights == "const" and KNOWN_BUG_SMALL_CONST_WEIGHTS:
        if k < _SAFE_WEIGHT_DIM:
            return False
        n = max(n, _SAFE_WEIGHT_DIM)
    if op == "Gemm":
        trans_b = b.draw(st.booleans())
        wshape = (n, k) if trans_b else (k, n)
        if weights == "const":
            w = b.const(b.floats(wshape))
        else:
            w = b.add_input(wshape, F)
        attrs: dict[str, Any] = {"transB": int(trans_b)}
        ins: list[Val] = [x, w]
        bound = k * x.bound * w.bound
        if b.draw(st.booleans()):
            cshape = b.draw(st.sampled_from([(n,), (1, n), (x.shape[0], n), (x.shape[0], 1)]))
            c = b.const(b.floats(cshape))
            ins.append(c)
            bound += 1.0
        if b.draw(st.booleans()):
            attrs["alpha"] = 0.5
            bound *= 0.5
        if len(ins) == 3 and b.draw(st.booleans()):
            attrs["beta"] = 2.0
            bound += 1.0
        if bound > _MAX_BOUND:
            return False
        b.node("Gemm", ins, (x.shape[0], n), F, bound, False, **attrs)
        return True
    w = None
    if weights == "pool":
        w = b.pick(
            lambda v: (
                v.kind == F
                and len(v.shape) == 2
                and v.shape[0] == k
                and not (
                    KNOWN_BUG_SMALL_CONST_WEIGHTS and v.folded and min(v.shape) < _SAFE_WEIGHT_DIM
                )
            )
        )
    if w is None:
        wshape = (
            (k, n) if b.draw(st.booleans()) or len(x.shape) == 1 else (*x.shape[:-2][-1:], k, n)
        )
        w = b.const(b.floats(wshape)) if weights == "const" else b.add_input(wshape, F)
    bound = k * x.bound * w.bound
    if bound > _MAX_BOUND:
        return False
    out = tuple(np.broadcast_shapes(x.shape[:-2], w.shape[:-2])) if len(x.shape) >= 2 else ()
    if len(x.shape) >= 2:
        out = (*out, x.shape[-2])
    if len(w.shape) >= 2:
        out = (*out, w.shape[-1])
    b.node("MatMul", [x, w], out, F, bound, False)
    return True


def _conv_pool(b: _Builder) -> bool:
    """Conv or a pool over 2 or 3 spatial dims (NCHW or NCDHW)."""
    x = b.pick(lambda v: v.kind == F and len(v.shape) in (4, 5))
    if x is None:
        # a fresh NCHW or NCDHW input
        rank = b.draw(st.sampled_from([4, 5]))
        shape = (
            b.draw(st.integers(1, 2)),
            b.draw(st.integers(1, 4)),
            *(b.draw(st.integers(1, 6)) for _ in range(rank - 2)),
        )
        x = b.add_input(shape, F)
    nb, c, *sp = x.shape
    if 0 in (c, *sp):  # onnxruntime's pools and convs allow only N to be zero
        return False
    op = b.draw(
        st.sampled_from(["Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"])
    )
    if op.startswith("Global"):
        b.node(op, [x], (nb, c, *(1 for _ in sp)), F, x.bound, op == "GlobalMaxPool" and x.exact)
        return True
    ks = [b.draw(st.integers(1, 3)) for _ in sp]
    ss = [b.draw(st.integers(1, 2)) for _ in sp]
    lo = [b.draw(st.integers(0, k - 1)) for k in ks]
    hi = [b.draw(st.integers(0, k - 1)) for k in ks]
    out = [(d + p + q - k) // s + 1 for d, p, q, k, s in zip(sp, lo, hi, ks, ss, strict=True)]
    if min(out) < 1:
        return False
    attrs: dict[str, Any] = {"kernel_shape": ks, "strides": ss, "pads": [*lo, *hi]}
    if op == "Conv":
        del attrs["kernel_shape"]
        group = b.draw(st.sampled_from([g for g in (1, 2, c) if c % g == 0]))
        oc = group * b.draw(st.integers(1, 3))
        wt = b.const(b.floats((oc, c // group, *ks)))
        ins: list[Val] = [x, wt]
        if b.draw(st.booleans()):
            ins.append(b.const(b.floats((oc,))))
        if group > 1:
            attrs["group"] = group
        bound = (c // group) * _numel(ks) * x.bound + 1
        if bound > _MAX_BOUND:
            return False
        b.node("Conv", ins, (nb, oc, *out), F, bound, False, **attrs)
        return True
    if op == "AveragePool" and b.draw(st.booleans()):
        attrs["count_include_pad"] = 1
    b.node(op, [x], (nb, c, *out), F, x.bound, op == "MaxPool" and x.exact, **attrs)
    return True


def _normalize(b: _Builder) -> bool:
    x = b.pick(lambda v: v.kind == F and len(v.shape) >= 1)
    if x is None:
        return False
    r = len(x.shape)
    op = b.draw(st.sampled_from(["Softmax", "LogSoftmax", "LayerNormalization"]))
    axis = b.draw(st.integers(-r, r - 1))
    if op == "LayerNormalization":
        na = axis % r
        nshape = x.shape[na:]
        if _numel(nshape) == 0:  # onnxruntime refuses an empty normalised slice
            return False
        scale = b.const(b.floats(nshape, 0.25, 2.0))
        ins = [x, scale]
        if b.draw(st.booleans()):
            ins.append(b.const(b.floats(nshape)))
        eps = b.draw(st.sampled_from([1e-5, 1e-2]))
        bound = math.sqrt(_numel(nshape)) * 2 + 1
        b.node(op, ins, x.shape, F, bound, False, axis=axis, epsilon=eps)
        return True
    bound = 1.0 if op == "Softmax" else 2 * x.bound + math.log(max(2, x.shape[axis])) + 1
    b.node(op, [x], x.shape, F, bound, False, axis=axis)
    return True


def _reduce(b: _Builder) -> bool:
    x = b.pick(lambda v: v.kind in (F, I) and len(v.shape) >= 1)
    if x is None:
        return False
    r = len(x.shape)
    ops = ["ReduceSum", "ReduceMax", "ReduceMin"]
    if x.kind == F:
        ops += [
            "ReduceMean",
            "ReduceProd",
            "ReduceL2",
            "ReduceL1",
            "ReduceSumSquare",
            "ReduceLogSumExp",
        ]
        if x.exact:
            ops += ["ArgMax", "ArgMin"]
    op = b.draw(st.sampled_from(ops))
    keep = b.draw(st.booleans())
    if op in ("ArgMax", "ArgMin"):
        axis = b.draw(st.integers(-r, r - 1))
        if x.shape[axis] == 0:  # no index to return: onnxruntime refuses it
            return False
        shape = tuple(
            1 if i == axis % r else d for i, d in enumerate(x.shape) if keep or i != axis % r
        )
        attrs: dict[str, Any] = {"axis": axis, "keepdims": int(keep)}
        if b.draw(st.booleans()):
            attrs["select_last_index"] = 1
        b.node(op, [x], shape, I, float(max(x.shape)), True, **attrs)
        return True
    axes = sorted(set(b.draw(st.lists(st.integers(0, r - 1), min_size=0, max_size=r))))
    red = axes or list(range(r))
    n = _numel([x.shape[a] for a in red])
    if n == 0 and op in ("ReduceMax", "ReduceMin", "ReduceLogSumExp", "ReduceMean"):
        # +-inf / NaN: bounds assume finite values, and onnxruntime's handling of infinities
        # downstream is not uniform (MaxPool of all -inf is -inf or -FLT_MAX by path); the
        # empty reductions themselves are tested in test_c_empty_tensors.py
        return False
    bound = {
        "ReduceSum": n * x.bound,
        "ReduceMean": x.bound,
        "ReduceMax": x.bound,
        "ReduceMin": x.bound,
        "ReduceProd": x.bound**n,
        "ReduceL2": math.sqrt(n) * x.bound,
        "ReduceL1": n * x.bound,
        "ReduceSumSquare": n * x.bound**2,
        "ReduceLogSumExp": x.bound + math.log(max(n, 1)) + 1,
    }[op]
    if bound > _MAX_BOUND:
        return False
    shape = tuple(1 if i in red else d for i, d in enumerate(x.shape) if keep or i not in red)
    neg = [a - r if b.draw(st.booleans()) else a for a in axes]
    attrs = {"keepdims": int(keep)}
    ins: list[Val | str] = [x]
    if op == "ReduceSum":
        if axes:
            ins.append(b.const_input(np.array(neg, np.int64)))
    elif axes:
        attrs["axes"] = neg
    exact = (x.exact and op in ("ReduceMax", "ReduceMin")) or x.kind == I
    b.node(op, ins, shape, x.kind, max(bound, 1e-3), exact, **attrs)
    return True


def _factorizations(n: int) -> list[tuple[int, ...]]:
    """A few shapes with ``n`` elements."""
    out: list[tuple[int, ...]] = [(n,), (1, n), (n, 1)]
    for d in range(2, n):
        if n % d == 0:
            out += [(d, n // d), (1, d, n // d), (n // d, 1, d)]
    return out


def _view(b: _Builder) -> bool:
    x = b.pick(lambda v: True)
    if x is None:
        return False
    r = len(x.shape)
    op = b.draw(st.sampled_from(["Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"]))
    n = _numel(x.shape)
    if op == "Reshape":
        target = b.draw(st.sampled_from(_factorizations(n)))
        spec = list(target)
        if len(spec) > 1 and b.draw(st.booleans()):
            spec[b.draw(st.integers(0, len(spec) - 1))] = -1
        if b.draw(st.booleans()):  # 0 copies the input's dim where it matches
            for i in range(min(len(spec), r)):
                if spec[i] == x.shape[i] and x.shape[i] != 0:
                    spec[i] = 0
                    break
        attrs = {}
        if 0 in target:  # a literal 0 is a zero-sized dim, not "copy the input's"
            spec, attrs = list(target), {"allowzero": 1}
        b.node(
            "Reshape",
            [x, b.const_input(np.array(spec, np.int64))],
            target,
            x.kind,
            x.bound,
            x.exact,
            view=True,
            **attrs,
        )
    elif op == "Flatten":
        if r == 0:
            return False
        axis = b.draw(st.integers(-r, r))
        a = axis + r if axis < 0 else axis
        shape = (_numel(x.shape[:a]), _numel(x.shape[a:]))
        b.node("Flatten", [x], shape, x.kind, x.bound, x.exact, view=True, axis=axis)
    elif op == "Squeeze":
        ones = [i for i, d in enumerate(x.shape) if d == 1]
        if not ones:
            return False
        axes = sorted(set(b.draw(st.lists(st.sampled_from(ones), min_size=1))))
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        ins: list[Val | str] = [x]
        if len(axes) != len(ones) or b.draw(st.booleans()):
            ins.append(
                b.const_input(
                    np.array([a - r if b.draw(st.booleans()) else a for a in axes], np.int64)
                )
            )
        elif not axes:
            return False
        b.node("Squeeze", ins, shape, x.kind, x.bound, x.exact, view=True)
    elif op == "Unsqueeze":
        if r >= 5:
            return False
        a = b.draw(st.integers(0, r))
        shape = (*x.shape[:a], 1, *x.shape[a:])
        spec = a - (r + 1) if b.draw(st.booleans()) else a
        b.node(
            "Unsqueeze",
            [x, b.const_input(np.array([spec], np.int64))],
            shape,
            x.kind,
            x.bound,
            x.exact,
            view=True,
        )
    else:
        b.node("Identity", [x], x.shape, x.kind, x.bound, x.exact, view=x.view)
    return True


def _move(b: _Builder) -> bool:
    """Transpose, Slice, Concat, Gather, Expand."""
    x = b.pick(lambda v: len(v.shape) >= 1)
    if x is None:
        return False
    r = len(x.shape)
    op = b.draw(st.sampled_from(["Transpose", "Slice", "Concat", "Gather", "Gather", "Expand"]))
    if op == "Transpose":
        perm = b.draw(st.permutations(list(range(r))))
        attrs = {"perm": perm} if b.draw(st.booleans()) else {}
        perm = perm if attrs else list(range(r))[::-1]
        # moving only size-1 dims is a reshape (a view) after import and canonicalize-nn
        big = [p for p in perm if x.shape[p] != 1]
        b.node(
            "Transpose",
            [x],
            tuple(x.shape[p] for p in perm),
            x.kind,
            x.bound,
            x.exact,
            view=x.view or big == sorted(big),
            **attrs,
        )
    elif op == "Slice":
        axes = sorted(set(b.draw(st.lists(st.integers(0, r - 1), min_size=1, max_size=r))))
        starts, ends, steps, shape = [], [], [], list(x.shape)
        for a in axes:
            d = x.shape[a]
            step = b.draw(st.sampled_from([1, 1, 2, -1, -2]))
            s = b.draw(st.integers(-d - 1, d + 1))
            e = b.draw(st.integers(-d - 1, d + 1))
            if step < 0 and b.draw(st.booleans()):
                e = -(2**62)  # "through index 0"
            if step > 0 and b.draw(st.booleans()):
                e = 2**62
            starts.append(s), ends.append(e), steps.append(step)
            shape[a] = len(range(d)[slice(*_py_slice(s, e, step, d))])
        if min(shape) < (0 if not KNOWN_BUG_ZERO_DIMS else 1):
            return False
        ins = [
            x,
            b.const_input(np.array(starts, np.int64)),
            b.const_input(np.array(ends, np.int64)),
            b.const_input(
                np.array([a - r if b.draw(st.booleans()) else a for a in axes], np.int64)
            ),
            b.const_input(np.array(steps, np.int64)),
        ]
        # a Slice that takes everything is removed at import: its result is x itself
        b.node(
            "Slice",
            ins,
            tuple(shape),
            x.kind,
            x.bound,
            x.exact,
            view=x.view and tuple(shape) == x.shape and steps == [1] * len(steps),
        )
    elif op == "Concat":
        axis = b.draw(st.integers(-r, r - 1))
        a = axis % r
        parts: list[Val] = [x]
        for _ in range(b.draw(st.integers(1, 2))):
            y = b.pick(
                lambda v: (
                    v.kind == x.kind
                    and len(v.shape) == r
                    and all(v.shape[i] == x.shape[i] for i in range(r) if i != a)
                )
            )
            if y is None or b.draw(st.booleans()):
                shape = list(x.shape)
                shape[a] = b.draw(_dims())
                y = (
                    b.const(b.floats(tuple(shape)))
                    if x.kind == F
                    else b.add_input(tuple(shape), x.kind, -5, 5)
                )
            parts.append(y)
        shape = list(x.shape)
        shape[a] = sum(p.shape[a] for p in parts)
        b.node(
            "Concat",
            parts,
            tuple(shape),
            x.kind,
            max(p.bound for p in parts),
            all(p.exact for p in parts),
            axis=axis,
        )
    elif op == "Gather":
        axis = b.draw(st.integers(-r, r - 1))
        d = x.shape[axis % r]
        if d == 0:
            return False
        ishape = b.draw(st.sampled_from([(), (1,), (2,), (3,), (2, 2)]))
        if b.draw(st.booleans()):
            idx = np.array(
                b.draw(
                    st.lists(
                        st.integers(-d, d - 1), min_size=_numel(ishape), max_size=_numel(ishape)
                    )
                ),
                np.int64,
            ).reshape(ishape)
            ind: Val | str = b.const_input(idx)
        else:  # run-time indices, fed in range
            ind = b.add_input(ishape, I, -d, d - 1, pool=False)
        a = axis % r
        shape = (*x.shape[:a], *ishape, *x.shape[a + 1 :])
        b.node("Gather", [x, ind], shape, x.kind, x.bound, x.exact, axis=axis)
    else:
        target = list(x.shape)
        for i, dd in enumerate(target):
            if dd == 1 and b.draw(st.booleans()):
                target[i] = b.draw(st.integers(1, 3))
        spec = [1 if b.draw(st.booleans()) else t for t in target]
        spec = [
            t if s == 1 and x.shape[i] == 1 else s for i, (s, t) in enumerate(zip(spec, target))
        ]
        if b.draw(st.booleans()):
            spec = [b.draw(st.integers(1, 2)), *spec]
        shape = _broadcast(x.shape, tuple(spec))
        b.node(
            "Expand",
            [x, b.const_input(np.array(spec, np.int64))],
            shape,
            x.kind,
            x.bound,
            x.exact,
            view=x.view and shape == x.shape,
        )  # no-op: removed
    return True


def _py_slice(s: int, e: int, step: int, d: int) -> tuple[int, int, int]:
    """ONNX Slice clamping as a Python slice of ``range(d)``."""
    if s < 0:
        s += d
    if e < 0:
        e += d
    if step > 0:
        s, e = min(max(s, 0), d), min(max(e, 0), d)
        return s, e, step
    if d == 0:
        return 0, 0, 1
    # ONNX clamps a backwards start to [0, d-1] (so a start before index 0 takes index 0)
    s, e = min(max(s, 0), d - 1), min(max(e, -1), d - 1)
    return s, (e if e >= 0 else None), step  # type: ignore[return-value]


_FAMILIES: list[tuple[str, Callable[[_Builder], bool]]] = [
    ("unary", _unary),
    ("binary", _binary),
    ("binary", _binary),
    ("compare", _compare_where),
    ("cast", _cast),
    ("matmul", _matmul),
    ("conv", _conv_pool),
    ("norm", _normalize),
    ("reduce", _reduce),
    ("view", _view),
    ("view", _view),
    ("move", _move),
]


@st.composite
def cases(draw: Callable[..., Any], max_ops: int = 10, max_parts: int = 1) -> FuzzCase:
    """A random valid ONNX model over the ops the frontend supports.

    The model holds 1 to ``max_parts`` independent random graphs (own inputs, own outputs):
    one compile checks them all, which amortises the C compiler's time; a failing case
    shrinks to the one part that fails."""
    b = _Builder(draw)
    pools: list[Val] = []
    parts = draw(st.integers(1, max_parts))
    for _ in range(parts):
        b.vals = []
        for _ in range(draw(st.integers(1, 3))):
            kind = draw(st.sampled_from([F, F, F, I, B]))
            b.add_input(_shape(draw, 0, 4), kind, *((-5, 5) if kind == I else (-2, 2)))
        if draw(st.booleans()):  # a constant that may become an output or feed nodes
            b.const(b.floats(_shape(draw, 0, 2)), pool=True, as_node=draw(st.booleans()))
        n_ops = draw(st.integers(1, max_ops))
        done = 0
        for _ in range(n_ops * 3):
            if done == n_ops:
                break
            _name, fam = draw(st.sampled_from(_FAMILIES))
            done += bool(fam(b))
        pools += b.vals
    b.vals = pools
    case = _finish(b)
    case.parts = parts
    return case


def _finish(b: _Builder) -> FuzzCase:
    draw = b.draw
    produced = [v for v in b.vals if v.origin == "node"]
    sinks = [v for v in produced if b.uses.get(v.name, 0) == 0]
    outs = {v.name: v for v in sinks}
    # some more outputs: views that feed other nodes, inputs, constants, anything
    extra = draw(st.lists(st.integers(0, max(0, len(b.vals) - 1)), max_size=3))
    for i in extra:
        if b.vals:
            v = b.vals[i % len(b.vals)]
            if KNOWN_BUG_VIEW_OUTPUTS and _view_output_hazard(b, v):
                continue
            outs[v.name] = v
    if KNOWN_BUG_VIEW_OUTPUTS:
        for n, v in list(outs.items()):
            if _view_output_hazard(b, v):
                del outs[n]
                if b.uses.get(n, 0) == 0:  # keep it live: output a non-view of it
                    op = {F: "Relu", I: "Abs", B: "Not"}[v.kind]
                    w = b.node(op, [v], v.shape, v.kind, v.bound, v.exact)
                    outs[w.name] = w
    if not outs:
        # nothing safe was produced: output an input through a Relu/Not/Abs
        x = b.vals[0]
        op = {F: "Relu", I: "Abs", B: "Not"}[x.kind]
        v = b.node(op, [x], x.shape, x.kind, x.bound, x.exact)
        outs[v.name] = v
    used = {n for node in b.nodes for n in node.input} | set(outs)
    inputs = [s for s in b.inputs if s.name in used]
    graph = helper.make_graph(
        b.nodes,
        "fuzz",
        [helper.make_tensor_value_info(s.name, _ELEM[s.kind], s.shape) for s in inputs],
        [helper.make_tensor_value_info(v.name, _ELEM[v.kind], v.shape) for v in outs.values()],
        initializer=[t for t in b.inits if t.name in used],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    seed = draw(st.integers(0, 2**16))
    return FuzzCase(model, inputs, seed)


def _view_output_hazard(b: _Builder, v: Val) -> bool:
    """Known bug (a): a graph output that is a view (Reshape/Flatten/Squeeze/Unsqueeze, or an
    Identity of one). Both variants are clobbered: the view also feeding a node, and a view
    of an intermediate whose buffer a later kernel reuses (unfused
    ``Relu(x) -> Squeeze -> output`` next to ``Tanh(Sigmoid(x))``)."""
    return v.view


# ---------------------------------------------------------------------------------------
# The comparison harness
# ---------------------------------------------------------------------------------------


class GeneratorError(Exception):
    """onnxruntime rejected a generated graph: the generator, not autofusion, is wrong."""


@dataclasses.dataclass
class Finding:
    """One disagreement: ``kind`` is "mismatch", "autofusion-error" or "internal-error"."""

    kind: str
    fusion: bool
    detail: str

    def line(self) -> str:
        """One line: the mismatch's first index and values, or the error's last line."""
        lines = [ln.strip() for ln in self.detail.strip().splitlines() if ln.strip()]
        if self.kind == "mismatch":
            at = [ln for ln in lines if "(ACTUAL)" in ln][:1]
            first = f"{lines[0] if lines else ''} {at[0] if at else ' '.join(lines[1:3])}"
        else:  # a C compiler's first "error:" line, else the message's first line
            errs = [ln for ln in lines if "error:" in ln and not ln.startswith("$")]
            first = (errs or lines or [""])[0]
        return f"{self.kind} (fusion={self.fusion}): {first[:300]}"


def reference(case: FuzzCase, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    import onnxruntime as ort

    try:
        onnx.checker.check_model(case.model, full_check=True)
        so = ort.SessionOptions()
        so.log_severity_level = 3
        sess = ort.InferenceSession(
            case.model.SerializeToString(), so, providers=["CPUExecutionProvider"]
        )
        names = [o.name for o in sess.get_outputs()]
        out = dict(zip(names, sess.run(None, feeds)))
    except Exception as e:
        raise GeneratorError(
            f"onnxruntime rejects the generated graph: {e}\n{onnx.printer.to_text(case.model)}"
        ) from e
    for o in case.model.graph.output:
        want = tuple(d.dim_value for d in o.type.tensor_type.shape.dim)
        if out[o.name].shape != want:
            raise GeneratorError(
                f"output {o.name}: declared shape {want}, onnxruntime gives "
                f"{out[o.name].shape}\n{onnx.printer.to_text(case.model)}"
            )
    return out


def check_case(
    case: FuzzCase, fusions: Sequence[bool] = (True, False), cache: bool = False
) -> tuple[list[Finding], int]:
    """Compile and run ``case`` with each fusion setting; compare with onnxruntime.

    Returns the findings and the number of outputs compared."""
    import autofusion
    from autofusion.errors import AutofusionError
    from autofusion.lowering.c.testing import assert_close

    feeds = case.feeds()
    ref = reference(case, feeds)
    findings: list[Finding] = []
    compared = 0
    for fusion in fusions:
        try:
            m = autofusion.compile(case.model, fusion=fusion, threads=1, cache=cache)
        except AutofusionError as e:
            findings.append(Finding("autofusion-error", fusion, str(e)))
            continue
        except Exception:
            findings.append(Finding("internal-error", fusion, traceback.format_exc()))
            continue
        try:
            got = m.run(feeds)
        except Exception:
            findings.append(Finding("internal-error", fusion, traceback.format_exc()))
            m.close()
            continue
        m.close()
        for name, r in ref.items():
            compared += 1
            if name not in got:
                findings.append(Finding("mismatch", fusion, f"output {name} missing"))
                continue
            try:
                assert_close(got[name], r, f"output {name}")
            except AssertionError as e:
                findings.append(Finding("mismatch", fusion, f"output {name}: {e}"))
    return findings, compared


# ---------------------------------------------------------------------------------------
# Reproducers
# ---------------------------------------------------------------------------------------

_REPRO = '''\
"""Fuzz reproducer: compares autofusion with onnxruntime on model.onnx / feeds.npz."""
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

import autofusion
from autofusion.lowering.c.testing import assert_close

here = Path(__file__).resolve().parent
model = onnx.load(here / "model.onnx")
feeds = dict(np.load(here / "feeds.npz"))
print(onnx.printer.to_text(model.graph))
sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
ref = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
bad = 0
for fusion in {fusions}:
    m = autofusion.compile(model, fusion=fusion, threads=1, cache=False)
    got = m.run(feeds)
    for name, r in ref.items():
        try:
            assert_close(got[name], r, f"fusion={{fusion}} output {{name}}")
        except AssertionError as e:
            bad += 1
            print(e)
print("FAIL" if bad else "OK")
sys.exit(1 if bad else 0)
'''


def write_reproducer(
    case: FuzzCase, findings: Sequence[Finding], directory: Path | None = None
) -> tuple[Path, str]:
    """Save the model, feeds and a script; return the folder and the command to run."""
    if directory is None:  # one folder per distinct case: shrinking rewrites, not litters
        digest = hashlib.sha1(case.model.SerializeToString()).hexdigest()[:12]
        directory = Path(tempfile.gettempdir()) / f"autofusion-fuzz-{digest}"
    d = directory
    d.mkdir(parents=True, exist_ok=True)
    onnx.save(case.model, d / "model.onnx")
    np.savez(d / "feeds.npz", **case.feeds())
    fusions = sorted({f.fusion for f in findings}, reverse=True) or [True, False]
    (d / "repro.py").write_text(_REPRO.format(fusions=fusions))
    (d / "findings.txt").write_text(
        "\n\n".join(f"{f.kind} fusion={f.fusion}\n{f.detail}" for f in findings)
    )
    return d, f"{sys.executable} {d / 'repro.py'}"


def describe(case: FuzzCase, findings: Sequence[Finding]) -> str:
    """A failure report: the findings, the graph as ONNX text and the reproducer command."""
    d, cmd = write_reproducer(case, findings)
    lines = [f.line() for f in findings]
    return (
        "\n".join(lines)
        + "\n\n"
        + onnx.printer.to_text(case.model.graph)
        + f"\n\nreproduce: {cmd}\n(model.onnx, feeds.npz, findings.txt in {d})"
    )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: fuzz_graphs.py REPRO_DIR")
    import runpy

    runpy.run_path(str(Path(sys.argv[1]) / "repro.py"), run_name="__main__")
