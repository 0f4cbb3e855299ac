"""validate-precision: measure every fused group of the generated C, roll back the imprecise.

After the fusion decisions (``fuse``, and the precision choices once they exist), the module
is built once for validation with the real C backend: a clone whose ``@main`` also returns
every ``fusion.kernel`` result, lowered by the C pipeline (plan-buffers + the c lowering) into
one ``libmodel.so``. It runs on seeded inputs (standard normal floats, zero integers; or the
arrays of a calibration ``.npz``) next to the numpy interpreter of the same clone, which
evaluates each kernel's nn ops one by one in fp32 (the unfused semantics; it ignores
``fusion.fast_math``). A group's delta is ``max|c - ref| / max(1, max|ref|)`` over its results.

The first group (in program order) whose delta exceeds the tolerance is rolled back (when
every group passes but the model's outputs do not, the group with the largest delta): its ops
return to the top level, so each becomes its own kernel again. The same *choice* is then not
made again in this compile: every other group with the same pattern, the same fast-math flag
and the same op types is rolled back with it. Each rollback is a refusal with code
``precision`` citing the measured delta. The module is then measured again, until every
remaining group passes (at most one build per rolled-back choice). Upstream error reaches
downstream groups, which is why only the first failing choice is rolled back per round.

The module attribute ``precision.groups`` lists every group measured (pattern, origins, delta,
fast_math, rolled_back); the report's ``precision`` section is read from it.

Options: ``config`` (its ``precision.tolerance`` / ``calibration``), ``tolerance`` (> 0 wins
over the config), ``calibration`` (an .npz path), ``seed``, and ``inject``
(``"origin=delta,..."``: use these deltas for the groups whose origins include ``origin``,
0 for the others, ``model=delta`` for the outputs, and build nothing; for lit tests).
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    DictionaryAttr,
    FloatAttr,
    FunctionType,
    ModuleOp,
    StringAttr,
    TensorType,
    f64,
)
from xdsl.ir import Attribute
from xdsl.rewriter import InsertPoint, Rewriter

from autofusion.dialects import fusion
from autofusion.dialects.attrs import name_dict
from autofusion.dialects.dtypes import to_numpy_dtype
from autofusion.dialects.fusion import FAST_MATH_ATTR, KernelOp
from autofusion.errors import AutofusionError
from autofusion.passes.fuse import unfuse
from autofusion.passes.options import CheckedPass
from autofusion.policy.base import onnx_op_type
from autofusion.policy.reasons import Refusal, RefusalLog
from autofusion.policy.report import GROUPS_ATTR

#: groups in program order -> one delta per group, and the delta of the model's outputs
Measure = Callable[[ModuleOp, list[KernelOp]], tuple[list[float], float]]


def kernels_of(module: ModuleOp) -> list[KernelOp]:
    from autofusion.passes.fuse import iter_kernels

    return list(iter_kernels(module))


def choice_of(kernel: KernelOp) -> tuple[str, bool, tuple[str, ...]]:
    """What was decided for a group: its pattern, fast-math flag and op types."""
    ops = sorted({onnx_op_type(o) for o in kernel.body.block.ops
                  if not isinstance(o, fusion.YieldOp)})  # fmt: skip
    return kernel.pattern_name, FAST_MATH_ATTR in kernel.attributes, tuple(ops)


def delta(got: np.ndarray, ref: np.ndarray) -> float:
    """``max|got - ref| / max(1, max|ref|)``; NaN in both places counts as equal."""
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if ref.size == 0:
        return 0.0
    both_nan = np.isnan(got) & np.isnan(ref)
    diff = np.where(both_nan, 0.0, np.abs(got - ref))
    if np.isnan(diff).any():
        return math.inf
    finite = np.abs(ref[np.isfinite(ref)])
    scale = max(1.0, float(finite.max()) if finite.size else 1.0)
    same_inf = np.isinf(ref) & (got == ref)
    diff = np.where(same_inf, 0.0, diff)
    return float(diff.max()) / scale


def validate(module: ModuleOp, tolerance: float, measure: Measure,
             say: Callable[[str], None] | None = None) -> list[dict[str, object]]:  # fmt: skip
    """Measure, roll back the first failing choice, repeat; returns (and records in the
    module) one entry per group measured."""
    log = RefusalLog()
    records: dict[tuple[str, ...], dict[str, object]] = {}
    rounds = 0
    while True:
        kernels = kernels_of(module)
        if not kernels:
            break
        rounds += 1
        if say is not None:
            say(f"validate-precision: round {rounds}, measuring {len(kernels)} fused groups")
        deltas, model_delta = measure(module, kernels)
        for k, d in zip(kernels, deltas):
            pattern, fast, _ = choice_of(k)
            records[tuple(k.origin_names)] = {"pattern": pattern, "origins": k.origin_names,
                                              "delta": d, "fast_math": fast,
                                              "rolled_back": False}  # fmt: skip
        failing = [(k, d) for k, d in zip(kernels, deltas) if not d <= tolerance]
        cause = ""
        if not failing and not model_delta <= tolerance:
            # each group passes, their errors add up: the worst group goes first
            worst = max(range(len(kernels)), key=lambda i: deltas[i])
            failing = [(kernels[worst], deltas[worst])]
            cause = f"the model outputs' delta {model_delta:.3g} > tolerance {tolerance:g}; "
        if not failing:
            break
        first, first_delta = failing[0]
        banned = choice_of(first)
        for k, d in zip(kernels, deltas):
            if choice_of(k) != banned:
                continue
            records[tuple(k.origin_names)]["rolled_back"] = True
            why = (
                cause + f"measured delta {d:.3g}" + ("" if cause else f" > tolerance {tolerance:g}")
            )
            if k is not first:
                why = (f"same choice as group {first.origin_names[0]!r} (delta "
                       f"{first_delta:.3g} > {tolerance:g}); its delta {d:.3g}")  # fmt: skip
            fast = " with fast_math" if banned[1] else ""
            log.add_refusal(Refusal("precision", f"{banned[0]}{fast}: {why}; rolled back",
                                    tuple(k.origin_names)))  # fmt: skip
            if say is not None:
                say(f"validate-precision: rolled back {banned[0]} group "
                    f"{', '.join(k.origin_names)} (delta {d:.3g})")  # fmt: skip
            unfuse(k)
    log.flush(module)
    out = list(records.values())
    module.attributes[GROUPS_ATTR] = ArrayAttr([_record_attr(r) for r in out])
    return out


def _record_attr(r: dict[str, object]) -> DictionaryAttr:
    origins = r["origins"]
    assert isinstance(origins, list)
    d = r["delta"]
    assert isinstance(d, float)
    return DictionaryAttr({
        "pattern": StringAttr(str(r["pattern"])),
        "origins": ArrayAttr([StringAttr(str(o)) for o in origins]),
        "delta": FloatAttr(d, f64),
        "fast_math": BoolAttr.from_bool(bool(r["fast_math"])),
        "rolled_back": BoolAttr.from_bool(bool(r["rolled_back"])),
    })  # fmt: skip


def parse_inject(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = part.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            eq = ""
        if not eq or not name.strip():
            raise AutofusionError(
                f"validate-precision: inject entry {part!r} must be ORIGIN=DELTA (e.g. tanh1=0.02)"
            )
    return out


def injected(deltas: dict[str, float]) -> Measure:
    def measure(_: ModuleOp, kernels: list[KernelOp]) -> tuple[list[float], float]:
        return [max((deltas[o] for o in k.origin_names if o in deltas), default=0.0)
                for k in kernels], deltas.get("model", 0.0)  # fmt: skip

    return measure


def feeds_for(module: ModuleOp, calibration: str, seed: int) -> dict[str, np.ndarray]:
    """Seeded inputs for ``@main`` (or the calibration file's arrays, checked)."""
    from autofusion.interpreter.core import input_names, main_function

    main = main_function(module)
    names = input_names(main)
    rng = np.random.default_rng(seed)
    given: dict[str, np.ndarray] = {}
    if calibration:
        try:
            with np.load(calibration) as z:
                given = {k: np.asarray(z[k]) for k in z.files}
        except (OSError, ValueError) as e:
            raise AutofusionError(f"{calibration}: not a readable .npz file: {e}") from None
        missing = [n for n in names if n not in given]
        if missing:
            raise AutofusionError(
                f"{calibration}: calibration inputs lack {', '.join(map(repr, missing))} "
                f"(the model takes {', '.join(map(repr, names))})"
            )
    feeds: dict[str, np.ndarray] = {}
    for name, arg in zip(names, main.body.block.args):
        t = arg.type
        if not isinstance(t, TensorType) or any(d < 0 for d in t.get_shape()):
            raise AutofusionError(
                f"validate-precision: input {name!r} has type {t}; validation needs static shapes"
            )
        dtype, shape = to_numpy_dtype(t.element_type), tuple(t.get_shape())
        if name in given:
            feeds[name] = given[name]
        elif np.issubdtype(dtype, np.floating):
            feeds[name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[name] = np.zeros(shape, dtype)
    return feeds


def c_measure(feeds: dict[str, np.ndarray], say: Callable[[str], None] | None = None) -> Measure:
    """Deltas from one validation build of the real C (every group's results exposed)."""

    def measure(module: ModuleOp, kernels: list[KernelOp]) -> tuple[list[float], float]:
        from autofusion.interpreter.core import main_function, output_names, run_module
        from autofusion.lowering import get_backend
        from autofusion.pipeline import Pipeline, PipelineOptions

        clone = module.clone()
        outputs = output_names(main_function(clone))
        names = _expose(clone)
        ref = run_module(clone, feeds)
        opts = PipelineOptions(target="c", fusion=False)  # built for, and run on, this machine
        Pipeline.from_options(opts).only("memory", "lowering").run(clone)
        backend = get_backend("c")
        with tempfile.TemporaryDirectory(prefix="af-validate-") as tmp:
            out = Path(tmp)
            backend.emit(clone, out)
            backend.build(out, opts, None, say)  # type: ignore[attr-defined]
            lib = backend.load(out, 1)  # type: ignore[attr-defined]
            try:
                got = lib.run(feeds)
            finally:
                lib.close()
        model = max((delta(got[n], ref[n]) for n in outputs), default=0.0)
        return [max((delta(got[n], ref[n]) for n in group), default=0.0) for group in names], model

    return measure


def _expose(module: ModuleOp) -> list[list[str]]:
    """Make ``@main`` also return every kernel result; the output names, per kernel."""
    from autofusion.interpreter.core import main_function

    main = main_function(module)
    ret = main.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    values = list(ret.operands)
    res_attrs: list[Attribute] = list(main.res_attrs.data) if main.res_attrs else [
        DictionaryAttr({}) for _ in values]  # fmt: skip
    names: list[list[str]] = []
    for i, k in enumerate(kernels_of(module)):
        group = []
        for j, r in enumerate(k.results):
            name = f"af_validate_g{i}_{j}"
            values.append(r)
            res_attrs.append(name_dict(name))
            group.append(name)
        names.append(group)
    Rewriter.insert_op(func.ReturnOp(*values), InsertPoint.before(ret))
    ret.detach()
    ret.erase()
    main.function_type = FunctionType.from_lists(
        list(main.function_type.inputs.data), [v.type for v in values]
    )
    main.res_attrs = ArrayAttr(res_attrs)  # type: ignore[assignment]
    return names


@dataclass(frozen=True)
class ValidatePrecision(CheckedPass):
    """Roll back fused groups whose generated C is less exact than the tolerance (module
    docstring). Runs after ``fuse``, before ``plan-buffers``; static shapes only."""

    name: ClassVar[str] = "validate-precision"

    config: str = ""
    tolerance: float = 0.0
    calibration: str = ""
    seed: int = 0
    inject: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from autofusion.policy.config import load_config

        cfg = load_config(self.config or None)
        tolerance = self.tolerance if self.tolerance > 0 else cfg.tolerance
        if self.inject:
            measure = injected(parse_inject(self.inject))
        else:
            feeds = feeds_for(op, self.calibration or cfg.calibration or "", self.seed)
            measure = c_measure(feeds)
        validate(op, tolerance, measure, _stderr)


def _stderr(text: str) -> None:
    """Progress of the rounds (each is a C build), on stderr when it is a terminal or
    ``AUTOFUSION_PROGRESS=1`` (``=0`` silences it), as for big imports."""
    import os
    import sys

    flag = os.environ.get("AUTOFUSION_PROGRESS")
    if flag == "1" or (flag != "0" and sys.stderr.isatty()):
        print(f"autofusion: {text}", file=sys.stderr, flush=True)


__all__: Sequence[str] = ("ValidatePrecision", "delta", "unfuse", "validate")
